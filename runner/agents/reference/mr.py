"""Reference solver for the MR tasks: decides from the state dump and the hidden anatomy, acts like any agent.

Two layers, as for CT. `MRPlanner` is pure: from the console's state dump and the task's registry entry
(scoring/registry/mr.py: the row, image or order the goal names) it decides the next console operation
(`Op`, named after the MRModel method: open, rename, repeat, skip, delete, move, add_protocol, go,
set_param, activate_viewport, set_graphics_mode, load_entry, select_entry, set_shim_box_visible, wait,
done). Judgement tasks decide with privileged knowledge (the subject oracle's kidney masks, the registry's
answer to a clinical question), as a reference must. `MRReferenceSolver` turns each operation into JSON
actions on the widgets the MR console exports (names listed in `next_action`). The headless driver
(runner/headless/mr.py) performs the same operations on MRModel directly.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from runner.agents.reference.common import Op, PlannerBase, centre, click, replace_text, wait
from runner.agents.reference.mr_mapping import MappingPolicy
from runner.agents.reference.mr_planning import PlanningPolicy
from scoring.registry.mr import INDICATION_PROTOCOL, RENAL_MIN_COVERAGE, MRTask
from tasks.card import TaskCard

WAIT_MARGIN_S = 0.1  # wait this much past a row's end, so its finishing event has run


class MRPlanner(MappingPolicy, PlanningPolicy, PlannerBase):
    """The next operation for one MR task on one subject (pure: state dicts in, Ops out). The geometry
    planning tasks' policy is PlanningPolicy (runner/agents/reference/mr_planning.py), the mapping tasks'
    MappingPolicy (runner/agents/reference/mr_mapping.py)."""

    task: MRTask

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self._adequate: dict[int, bool] = {}

    # ---- reading the dump ---------------------------------------------------------------------------
    @staticmethod
    def _row(st: dict[str, Any], uid: int) -> dict[str, Any] | None:
        return next((r for r in st["queue"] if r["uid"] == uid), None)

    @staticmethod
    def _start_row(st: dict[str, Any], protocol: str) -> dict[str, Any]:
        return next(r for r in st["start"]["queue"] if r["protocol"] == protocol)

    @staticmethod
    def _first_pending_at_start(st: dict[str, Any]) -> dict[str, Any]:
        return next(r for r in st["start"]["queue"] if r["status"] == "pending")

    @staticmethod
    def _wait_running(st: dict[str, Any]) -> Op:
        return Op("wait", {"seconds": st["header"]["scanner"]["remaining_s"] + WAIT_MARGIN_S})

    def _start_row_op(self, st: dict[str, Any], uid: int) -> Op:
        """Start one row: wait while the scanner is busy, open it unless Go would start it anyway, Go."""
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        if st["go"]["target"] != uid:
            return Op("open", {"uid": uid})
        return Op("go")

    @staticmethod
    def _entry_key(st: dict[str, Any], image: str) -> str:
        """The series-list key of a plane of the (last) localizer (its entry shows the plane's middle slice)."""
        from scoring.oracles.mr import localizer_image_index

        uid, k = localizer_image_index(st, image)
        return next(e["key"] for e in st["series_list"] if e["series"] == uid and e["image"] == k)

    @staticmethod
    def _viewports_showing(st: dict[str, Any], image: str, layout: dict[str, Any] | None = None) -> list[int]:
        from scoring.oracles.mr import localizer_viewports

        return localizer_viewports(layout or st["layout"], st["series"], image)

    def renal_adequate(self, st: dict[str, Any], renal_uid: int) -> bool:
        """Whether the acquired renal series covers both kidneys (the oracle's own measure)."""
        from scoring.oracles.mr import kidney_coverage

        series = self._row(st, renal_uid)["series"]
        if series not in self._adequate:  # an acquired series never changes: measure it once
            self._adequate[series] = min(kidney_coverage(st, self.oracle, series).values()) >= RENAL_MIN_COVERAGE
        return self._adequate[series]

    # ---- policy -------------------------------------------------------------------------------------
    def next_op(self, st: dict[str, Any]) -> Op:
        """The next operation towards the task's goal from this state dump."""
        return getattr(self, f"_{self.task.kind}")(st)

    def _trigger(self, st):
        uid = self._start_row(st, self.task.protocol)["uid"]
        if self._row(st, uid)["params"]["trigger"] == self.task.value:
            return Op("done")
        if st["open_row"] != uid:
            return Op("open", {"uid": uid})
        return Op("set_param", {"name": "trigger", "value": self.task.value})

    def _rename(self, st):
        uid = self._start_row(st, self.task.protocol)["uid"]
        if self._row(st, uid)["name"] == self.task.value:
            return Op("done")
        return Op("rename", {"uid": uid, "name": self.task.value})

    def _repeat_open(self, st):
        uid = self._start_row(st, self.task.protocol)["uid"]
        copy = next((r["uid"] for r in st["queue"] if r["copy_of"] == uid), None)
        if copy is None:
            return Op("repeat", {"uid": uid})
        if st["open_row"] != copy:
            return Op("open", {"uid": copy})
        return Op("done")

    def _load_image(self, st):
        vp = self.task.viewport
        if vp in self._viewports_showing(st, self.task.image):
            return Op("done")
        return Op("load_entry", {"viewport": vp - 1, "key": self._entry_key(st, self.task.image)})

    def _activate(self, st):
        showing = self._viewports_showing(st, self.task.image)
        if st["layout"]["active"] in showing:
            return Op("done")
        return Op("activate_viewport", {"viewport": showing[0] - 1})

    def _shim_box(self, st):
        if st["layout"]["shim_box_visible"]:
            return Op("done")
        return Op("set_shim_box_visible", {"visible": True})

    def _graphics(self, st):
        for i in self._viewports_showing(st, self.task.image, st["start"]["layout"]):
            if st["layout"]["viewports"][i - 1]["graphics_mode"] != self.task.value:
                if st["layout"]["active"] != i:
                    return Op("activate_viewport", {"viewport": i - 1})
                return Op("set_graphics_mode", {"mode": self.task.value, "viewport": i - 1})
        return Op("done")

    def _select_image(self, st):
        key = self._entry_key(st, self.task.image)
        if st["selected_entry"] == key:
            return Op("done")
        # by screen position, as a click picks it: a replayed script then picks whatever the seeded order
        # put in that place (an entry key would name the image itself)
        position = [e["key"] for e in st["series_list"]].index(key) + 1
        return Op("select_list_item", {"position": position})

    def _first_acquisition(self, st):
        uid = st["start"]["queue"][0]["uid"]
        row = self._row(st, uid)
        if row["status"] == "done":
            return Op("done")
        if row["status"] == "running":
            return self._wait_running(st)
        return self._start_row_op(st, uid)

    def _skip(self, st):
        rows = st["start"]["queue"]
        target = self._start_row(st, self.task.protocol)
        nxt = rows[rows.index(target) + 1]["uid"]
        if self._row(st, target["uid"])["status"] != "skipped":
            return Op("skip", {"uid": target["uid"]})
        status = self._row(st, nxt)["status"]
        if status == "done":
            return Op("done")
        if status == "running":
            return self._wait_running(st)
        return self._start_row_op(st, nxt)

    def _queue_order(self, st):
        want = list(self.task.order)
        pending = [r for r in st["queue"] if r["status"] == "pending"]
        seen: set[str] = set()
        for r in pending:  # rows the goal does not list (or a second row of one it lists) go
            if r["protocol"] not in want or r["protocol"] in seen:
                return Op("delete", {"uid": r["uid"]})
            seen.add(r["protocol"])
        for pid in want:
            if pid not in seen:
                return Op("add_protocol", {"pid": pid})
        have = [r["protocol"] for r in pending]
        for i, pid in enumerate(want):  # bring the wanted row up to its place, one step at a time
            if have[i] != pid:
                return Op("move", {"uid": pending[have.index(pid)]["uid"], "delta": -1})
        return Op("done")

    def _go_availability(self, st):
        target = self._first_pending_at_start(st)
        uid = target["uid"]
        if self._row(st, uid)["status"] != "pending":
            return Op("done")
        blocked = not st["physio"]["ecg_signal"] and target["params"]["trigger"] == "ecg"
        if blocked and self._row(st, uid)["params"]["trigger"] != self.task.blocked_trigger:
            if st["open_row"] != uid:
                return Op("open", {"uid": uid})
            return Op("set_param", {"name": "trigger", "value": self.task.blocked_trigger})
        return self._start_row_op(st, uid)

    def _idle_or_scanning(self, st):
        uid = self._first_pending_at_start(st)["uid"]
        if self._row(st, uid)["status"] != "pending":
            return Op("done")
        return self._start_row_op(st, uid)

    def _renal_adequacy(self, st):
        renal = next(r for r in st["start"]["queue"] if r["protocol"] == self.task.protocol and r["status"] == "done")
        nxt = self._first_pending_at_start(st)["uid"]
        if self.renal_adequate(st, renal["uid"]):
            if self._row(st, nxt)["status"] == "pending":
                return self._start_row_op(st, nxt)
            return Op("done")
        if not any(r["copy_of"] == renal["uid"] for r in st["queue"]):
            return Op("repeat", {"uid": renal["uid"]})
        return Op("done")

    def _select_sequence(self, st):
        uid = self._start_row(st, INDICATION_PROTOCOL[st["start"]["indication"]])["uid"]
        if self._row(st, uid)["status"] != "pending":
            return Op("done")
        if st["open_row"] != uid:
            return Op("open", {"uid": uid})  # open it even when Go would start it: the goal says open
        return Op("go")


# ---- the GUI layer: one JSON action per step ----------------------------------------------------------
MENU = {"repeat": "repeat", "skip": "skip", "delete": "delete", "rename": "rename"}
TABS = {"trigger": "tab_physio", "main": "tab_geometry", "shim_mode": "tab_geometry", "scheme": "tab_contrast"}
CHOICE_PARAMS = ("trigger", "main", "shim_mode", "scheme")
# GUI planning: residuals a whole-pixel drag cannot resolve are typed into the geometry fields
GUI_DRAG_RESOLUTION = (1.0, 2.0)  # deg, mm
MAX_DRAGS = 16  # drags on one row before the solver types whatever geometry is left
MAX_TURN_PER_DRAG_DEG = 60.0  # a larger turn is split (the grip stays on screen)
# Shim box drags: release points within this many pixels of the ideal one are weighed (a face grip's axis is
# oblique on most displays, so a pixel across it changes the size by a fraction of a pixel along it)
SHIM_SEARCH_PX = 2
SHIM_MIN_GAIN_MM = 0.05  # a drag that leaves less than this less residual is not worth a step
SHIM_SETTLE_CENTRE_MM = 4.5  # a centre residual no drag reduces is accepted up to this (inside 10 mm margins)
SHIM_MAX_DRAGS = 8  # drags on one residual (a row's centre or one size) before it is settled as it is


class MRReferenceSolver(MRPlanner):
    """The planner's operations performed through the MR console's widgets (privileged geometry, X input).

    Widget names (console geometry export): queue rows "queue_row:<uid>" (double click opens; right click
    opens the context menu "queue_menu:<entry>"), "rename_field", "go", "library_item:<protocol>",
    "series_item:<key>", "viewport<N>", "graphics_<mode>", "shim_box_toggle", "tab_<tab>", choices
    "<choice>:<value>" and numeric fields "<parameter>_field".
    """

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self.drag_resolution = GUI_DRAG_RESOLUTION
        self._drags = 0  # drags on the row being planned (`_drag_row`)
        self._drag_row: int | None = None
        self._shim_drags: dict[tuple[int, str], int] = {}  # shim drags per (row uid, centre | size axis)
        self.control = None
        # later steps of one operation: a widget to click (resolved when the step runs, since menus and
        # editors only exist once opened) or a ready JSON action
        self._pending: list[tuple[str, str]] = []

    def _step(self, geo: dict[str, list[int]], item: tuple[str, str]) -> str:
        kind, what = item
        if kind == "click":
            return click(geo[what])
        return what

    def _menu(self, uid: int, entry: str) -> str:
        """Right click the row; the menu entry is clicked on the next step."""
        self._pending = [("click", f"queue_menu:{entry}")]
        return self._right_click_row(uid)

    def _right_click_row(self, uid: int) -> str:
        return click(self._geo[f"queue_row:{uid}"], button="right")

    def next_action(self, obs) -> str:
        """One JSON action for this step."""
        g = self.control.geometry()
        self._geo = geo = g["geometry"]
        if self._pending:
            return self._step(geo, self._pending.pop(0))
        st = self.control.state()
        return self._act(g, st, self.next_op(st))

    def _act(self, g: dict[str, Any], st: dict[str, Any], op: Op) -> str:
        """The first JSON action of operation `op` (later ones queued in `_pending`)."""
        geo = g["geometry"]
        a = op.args
        if op.name == "done":
            return json.dumps({"action": "done"})
        if op.name == "wait":
            return wait(a["seconds"])
        if op.name == "open":
            x, y = centre(geo[f"queue_row:{a['uid']}"])
            return json.dumps({"action": "double_click", "x": x, "y": y})
        if op.name in MENU:
            if op.name == "rename":
                self._pending = [("click", "queue_menu:rename"), *(("json", t) for t in replace_text(a["name"]))]
                return self._right_click_row(a["uid"])
            return self._menu(a["uid"], MENU[op.name])
        if op.name == "move":
            return self._menu(a["uid"], "move_up" if a["delta"] < 0 else "move_down")
        if op.name == "add_protocol":
            x, y = centre(geo[f"library_item:{a['pid']}"])
            return json.dumps({"action": "double_click", "x": x, "y": y})
        if op.name == "go":
            return click(geo["go"])
        if op.name == "set_param":
            name, value = a["name"], a["value"]
            if name in CHOICE_PARAMS:
                self._pending = [("click", f"{name}:{value}")]
                return click(geo[TABS[name]])
            return self._type_field(name, value)
        if op.name in ("move_shim", "drag_grip"):
            return self._shim_drag(g, st, op)
        if op.name in ("rotate_group", "translate_group"):
            return self._drag_on_viewport(g, st, op)
        if op.name == "activate_viewport":
            # near the lower left corner: the centre may hold the open row's planning graphics, which a
            # press could pick up
            x, y, w, h = geo[f"viewport{a['viewport'] + 1}"]
            return json.dumps({"action": "click", "x": x + max(4, w // 10), "y": y + h - max(4, h // 10)})
        if op.name == "set_graphics_mode":
            return click(geo[f"graphics_{a['mode']}"])
        if op.name == "set_shim_box_visible":
            return click(geo["shim_box_toggle"])
        if op.name == "select_entry":
            return click(geo[f"series_item:{a['key']}"])
        if op.name == "select_list_item":
            return click(geo[f"series_item:{st['series_list'][a['position'] - 1]['key']}"])
        if op.name == "load_entry":
            x, y = centre(geo[f"series_item:{a['key']}"])
            tx, ty = centre(geo[f"viewport{a['viewport'] + 1}"])
            lx, ly, lw, lh = geo["series_list"]
            if not ly + 4 <= y <= ly + lh - 4:  # the entry is scrolled out of the list: scroll towards it
                return json.dumps({"action": "scroll", "x": lx + lw // 2, "y": ly + lh // 2,
                                   "clicks": 1 if y > ly + lh - 4 else -1})  # + scrolls down
            return json.dumps({"action": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty})
        if op.name == "measure_roi":
            return self._roi_drag(g, st, a)
        raise ValueError(f"the MR reference solver has no GUI action for operation {op.name!r}")

    def _roi_drag(self, g: dict[str, Any], st: dict[str, Any], a: dict[str, Any]) -> str:
        """The ROI tool on, a drag across the ellipse's bounding box on the map (plane mm -> pixels with the
        viewport's transform, x = ax*u + bx, y = ay*v + by), the tool off again (so later drags on the map
        move planning graphics)."""
        t = g["transforms"][f"viewport{a['viewport'] + 1}"]
        (cu, cv), (ru, rv) = a["centre_mm"], a["radii_mm"]
        x0, y0 = t["ax"] * (cu - ru) + t["bx"], t["ay"] * (cv + rv) + t["by"]
        x1, y1 = t["ax"] * (cu + ru) + t["bx"], t["ay"] * (cv - rv) + t["by"]
        drag = json.dumps({"action": "drag", "x": int(round(x0)), "y": int(round(y0)),
                           "to_x": int(round(x1)), "to_y": int(round(y1))})
        if st.get("roi_tool"):
            self._pending = [("click", "roi_tool")]
            return drag
        self._pending = [("json", drag), ("click", "roi_tool")]
        return click(self._geo["roi_tool"])

    # ---- typed fields and drags on the viewports (geometry planning) --------------------------------------
    def _type_field(self, name: str, value: float) -> str:
        """A numeric field of the parameter card: its tab, the field, select all, type, Enter."""
        from consoles.mr.model import CARD

        tab = next(t for t, names in CARD.items() if name in names)
        text = f"{value:.1f}" if isinstance(value, float) and not float(value).is_integer() else f"{value:g}"
        self._pending = [("click", f"{name}_field"), *(("json", t) for t in replace_text(text))]
        return click(self._geo[f"tab_{tab.lower()}"])

    def _fallback_to_typing(self, g, st) -> str:
        """A handle is not on show (or drags do not converge): type what is left, planned afresh."""
        self.drag_resolution = (180.0, 1.0e4)
        op = self.next_op(st)
        if op.name in ("rotate_group", "translate_group", "move_shim", "drag_grip"):
            raise ValueError(f"the MR reference solver cannot perform {op} without its handle")
        if op.name == "set_param":
            return self._type_field(op.args["name"], op.args["value"]) if op.args["name"] not in CHOICE_PARAMS \
                else self._choice(op.args["name"], op.args["value"])
        raise ValueError(f"the MR reference solver expected a typed correction, the plan says {op}")

    def _choice(self, name: str, value: str) -> str:
        self._pending = [("click", f"{name}:{value}")]
        return click(self._geo[TABS[name]])

    def _drag_on_viewport(self, g: dict[str, Any], st: dict[str, Any], op: Op) -> str:
        """One planning drag on viewport op.args["viewport"] (0-based): the grip's exported screen position,
        the plane mm -> pixel transform (x = ax*u + bx, y = ay*v + by), whole-pixel release point."""
        a = op.args
        vp = f"viewport{a['viewport'] + 1}"
        handles = g["viewports"].get(vp, {}).get("handles", {})
        t = g["transforms"][vp]
        grip = {"rotate_group": "rotate", "translate_group": "centre"}[op.name]
        if st.get("open_row") != self._drag_row:  # a new row to plan: drags first again
            self._drag_row, self._drags, self.drag_resolution = st.get("open_row"), 0, GUI_DRAG_RESOLUTION
        self._drags += 1
        if grip not in handles or (op.name == "rotate_group" and "centre" not in handles) or self._drags > MAX_DRAGS:
            return self._fallback_to_typing(g, st)
        x, y = int(round(handles[grip]["x"])), int(round(handles[grip]["y"]))
        rx0, ry0, rw, rh = g["viewports"][vp]["rect"]  # the release stays on the viewport

        def inside(px: float, py: float) -> bool:
            return rx0 + 2 <= px <= rx0 + rw - 3 and ry0 + 2 <= py <= ry0 + rh - 3

        if op.name == "rotate_group":
            cx, cy = handles["centre"]["x"], handles["centre"]["y"]
            deg = max(-MAX_TURN_PER_DRAG_DEG, min(MAX_TURN_PER_DRAG_DEG, float(a["deg"])))
            r = math.radians(deg)  # counter-clockwise on screen (y down)
            rx, ry = x - cx, y - cy
            dx, dy = rx * math.cos(r) + ry * math.sin(r), -rx * math.sin(r) + ry * math.cos(r)
            # the angle swept about the pivot is what counts: release nearer the pivot on the same ray when
            # the grip's own radius would leave the viewport
            for scale in (1.0, 0.8, 0.6, 0.45, 0.3):
                x2, y2 = cx + scale * dx, cy + scale * dy
                if inside(round(x2), round(y2)):
                    break
        else:  # translate_group
            x2, y2 = x + t["ax"] * a["du"], y + t["ay"] * a["dv"]
        x2 = int(round(min(max(x2, rx0 + 2), rx0 + rw - 3)))
        y2 = int(round(min(max(y2, ry0 + 2), ry0 + rh - 3)))
        if (x2, y2) == (x, y):  # less than a pixel: a drag cannot do it, the fields can
            return self._fallback_to_typing(g, st)
        return json.dumps({"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2})

    # ---- the shim box: drags only (it has no fields) ------------------------------------------------------
    def _shim_drag(self, g: dict[str, Any], st: dict[str, Any], op: Op) -> str:
        """The whole-pixel drag that brings the shim box's centre (move_shim) or one size (drag_grip) nearest
        its target, over every display showing the grip: op's display is the planner's choice, but there a
        pixel may move the box or a face further than the residual (a face grip's step along its on-screen
        axis can exceed SIZE_EPS_MM's window, and a centre residual across the display is not reachable in
        it), so every release point near the ideal one on every display is weighed by the residual it
        leaves. When none leaves less than now, whole pixels cannot do better: the residual is settled (if
        within the margins) and the planner asked again."""
        from runner.agents.reference.mr_planning import SIZE_EPS_MM

        if st.get("open_row") != self._drag_row:  # a new row to plan: drags first again (as _drag_on_viewport)
            self._drag_row, self._drags, self.drag_resolution = st.get("open_row"), 0, GUI_DRAG_RESOLUTION
        self._drags += 1
        row = next(r for r in st["queue"] if r["uid"] == st["open_row"])
        d, dsize = self.shim_residual(row)
        if op.name == "move_shim":
            key, now, cap = "centre", float(np.linalg.norm(d)), SHIM_SETTLE_CENTRE_MM
        else:
            axis = op.args["name"].split("_")[1]
            k = ("read", "phase", "slice").index(axis)
            key, now, cap = axis, abs(float(dsize[k])), SIZE_EPS_MM
        best = None  # (residual left, drag length, planner's display last, press, release)
        for i, _ in self.displays(st):
            for left, length, press, release in self._shim_candidates(g, row, op, i, d, dsize):
                rank = (round(left, 3), length, i != op.args["viewport"])
                if best is None or rank < best[0]:
                    best = (rank, press, release)
        tries = self._shim_drags.get((row["uid"], key), 0)
        if best is None or best[0][0] >= now - SHIM_MIN_GAIN_MM or tries >= SHIM_MAX_DRAGS:
            if now > cap:
                raise ValueError(f"the MR reference solver cannot bring the shim box's {key} nearer than {now:.1f} mm "
                                 f"by whole-pixel drags")
            self.shim_settled = self.shim_settled | {(row["uid"], key)}
            return self._act(g, st, self.next_op(st))
        self._shim_drags[(row["uid"], key)] = tries + 1
        (x, y), (x2, y2) = best[1], best[2]
        return json.dumps({"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2})

    def _shim_candidates(self, g: dict[str, Any], row: dict[str, Any], op: Op, i: int, d: Any, dsize: Any):
        """(residual left, drag length in pixels, press, release) of the whole-pixel drags of op's grip on
        display `i` (0-based) within SHIM_SEARCH_PX of the ideal release point, releases on the viewport."""
        from consoles.mr.model import plan_grips
        from consoles.mr.row_params import RowParams
        from rendering.geometry import PlanePose

        vp = f"viewport{i + 1}"
        if vp not in g["viewports"] or vp not in g["transforms"]:
            return
        name = "shim_centre" if op.name == "move_shim" else op.args["name"]
        handles = g["viewports"][vp].get("handles", {})
        if name not in handles:
            return
        t = g["transforms"][vp]
        pose = PlanePose.from_dict(g["viewports"][vp]["pose"])
        x, y = int(round(handles[name]["x"])), int(round(handles[name]["y"]))
        rx0, ry0, rw, rh = g["viewports"][vp]["rect"]
        u, v = np.asarray(pose.u, float), np.asarray(pose.v, float)
        if op.name == "move_shim":  # the centre moves by the drag in the display's plane
            ex, ey = t["ax"] * float(d @ u), t["ay"] * float(d @ v)

            def left(dx: int, dy: int) -> float:
                return float(np.linalg.norm(d - (dx / t["ax"]) * u - (dy / t["ay"]) * v))
        else:  # a face grip: the size follows the drag's component along the grip's on-screen axis
            gr = next((q for q in plan_grips(RowParams.from_dict(row["params"]), pose, t["ax"]) if q.name == name), None)
            if gr is None:
                return
            k = ("read", "phase", "slice").index(str(gr.group_axis))
            want = float(dsize[k]) / (2.0 * gr.factor)  # display mm along the grip's axis
            ex, ey = t["ax"] * want * gr.axis[0], t["ay"] * want * gr.axis[1]

            def left(dx: int, dy: int) -> float:
                amount = (dx / t["ax"]) * gr.axis[0] + (dy / t["ay"]) * gr.axis[1]
                return abs(float(dsize[k]) - 2.0 * gr.factor * amount)
        cx, cy = int(round(ex)), int(round(ey))
        for dx in range(cx - SHIM_SEARCH_PX, cx + SHIM_SEARCH_PX + 1):
            for dy in range(cy - SHIM_SEARCH_PX, cy + SHIM_SEARCH_PX + 1):
                x2, y2 = x + dx, y + dy
                if (dx, dy) == (0, 0) or not (rx0 + 2 <= x2 <= rx0 + rw - 3 and ry0 + 2 <= y2 <= ry0 + rh - 3):
                    continue
                yield left(dx, dy), abs(dx) + abs(dy), (x, y), (x2, y2)
