"""Reference solver for the CT tasks: plans from the hidden anatomy, acts like any agent.

Two layers. `CTPlanner` is pure: from the console's state dump and the task's registry entry
(scoring/registry/ct.py: protocol, anatomy, margins, isocentre reference) it decides the next
console operation (`Op`: load a protocol, set a range edge, confirm, scan, ...). `CTReferenceSolver`
turns each operation into one JSON action for the normal parse -> XTEST path, using the widget
geometry the console exports (privileged). The headless driver (runner/headless/ct.py) executes the
same operations on CTModel directly, so the GUI and headless runs follow one plan.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from rendering.geometry import TableFrame
from runner.agents.reference.common import Op, PlannerBase, click, replace_text, wait
from runner.agents.reference.common import centre as _centre
from tasks.card import TaskCard
from scoring.registry.ct import (DOSE_TARGET_FRACTION, HEIGHT_TOLERANCE_MM, POSITION_TOLERANCE_MM,
                                 RECOVERY_OVERLAP_MM, CTTask)


def solver_plan(task: CTTask) -> dict[str, Any]:
    """The solver's inputs for one task, as a plain dict (tests override single keys, e.g. a margin)."""
    return {"protocol": task.protocol, "organs": task.organs, "margin_top": task.margin_top_mm,
            "margin_bottom": task.margin_bottom_mm, "iso": task.isocentre is not None,
            "bolus": task.bolus_tracking, "dose_limit": task.dose_limit, "recovery": task.recovery}


class CTPlanner(PlannerBase):
    """Targets and the next operation for one CT task on one subject (pure: state dicts in, Ops out)."""

    task: CTTask

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self.plan = solver_plan(self.task)

    # ---- targets ----------------------------------------------------------------------
    @property
    def organs(self) -> tuple[str, ...]:
        return tuple(self.plan["organs"])

    def organ_extent(self) -> tuple[float, float]:
        from scoring.oracles.ct import organs_extent

        return organs_extent(self.oracle, self.organs)

    def target_range(self, state: dict[str, Any]) -> tuple[float, float]:
        """(start, end) in table mm covering the organ(s) with the plan's margins (or the missing part)."""
        frame = TableFrame.from_state(state)
        zmin, zmax = self.organ_extent()
        start = round(float(frame.table_z(zmax + self.plan["margin_top"])), 1)
        end = round(float(frame.table_z(zmin - self.plan["margin_bottom"])), 1)
        if self.plan["recovery"]:
            prior = next(s for s in state["series"] if s.get("prior"))
            lo_sub = prior["subject_z_bottom"]
            hi_sub = prior["subject_z_top"]
            if zmax - hi_sub >= lo_sub - zmin:  # the top was clipped: scan from above the organ to the prior top
                end = round(prior["start_mm"] - RECOVERY_OVERLAP_MM, 1)
            else:
                start = round(prior["end_mm"] + RECOVERY_OVERLAP_MM, 1)
        return start, end

    def target_table_height(self, state: dict[str, Any]) -> float | None:
        """Table height putting the isocentre where the oracle's reference is (None: the task does not ask)."""
        if not self.plan["iso"]:
            return None
        from scoring.oracles.ct import isocentre_target_y

        y = isocentre_target_y(self.oracle, self.task)
        return round(TableFrame.from_state(state).table_height_for(y), 1)

    def target_technique(self, state: dict[str, Any]) -> tuple[float, float] | None:
        """(kV, mAs) putting CTDIvol at DOSE_TARGET_FRACTION of the limit at the console's pitch: the
        console's kV if that needs no less than the lowest mAs, else the next lower kV (a small patient's
        size-specific limit is below what the lowest mAs gives at 120 kV)."""
        limit = state["dose"].get("ctdi_limit_mgy")
        if not self.plan["dose_limit"] or limit is None:
            return None
        from consoles.ct.model import PARAMETERS
        from rendering.ct_physics import ctdi_vol

        p = state["params"]
        mas_min = next(q for q in PARAMETERS if q.name == "mas").lo
        kv = p["kv"]
        for kv in [k for k in (p["kv"], 120.0, 100.0, 80.0) if k <= p["kv"]]:
            mas = float(math.floor(DOSE_TARGET_FRACTION * limit / ctdi_vol(kv, 1.0, p["pitch"])))
            if mas >= mas_min:
                return kv, mas
        raise ValueError(f"no kV reaches the CTDIvol limit {limit} mGy at pitch {p['pitch']}")

    def monitor_target(self, state: dict[str, Any]) -> tuple[float, float, float]:
        """(table z of the monitoring slice, ROI x, ROI y): the descending aorta's widest section
        in the upper heart range, and its centroid there in the monitoring image's mm (gantry x,
        posterior of the isocentre: what a click on the image gives)."""
        rt = self.oracle.runtime
        mask = self.oracle.organ_mask("aorta_descending")
        hz0, hz1 = self.oracle.organ_z_extent("heart")
        z = rt.world_z()
        ks = [k for k in np.nonzero((z >= hz1 - 45) & (z <= hz1 - 10))[0] if mask[k].any()]
        k = max(ks, key=lambda k: (int(mask[k].sum()), -k))
        j, i = np.nonzero(mask[k])
        x = rt.origin_mm[0] + rt.spacing_mm[0] * i.mean()
        y = rt.origin_mm[1] + rt.spacing_mm[1] * j.mean()
        frame = TableFrame.from_state(state)
        return (round(float(frame.table_z(float(z[k]))), 1), float(frame.gantry_x(x)),
                float(y) - float(state["plan"]["y_iso_subject_mm"]))

    # ---- policy -----------------------------------------------------------------------
    @staticmethod
    def prior_reviewed(state: dict[str, Any]) -> bool:
        """A series from the exam history has been opened in review."""
        prior = {s["uid"] for s in state["series"] if s.get("prior")}
        return any(e["event"] == "recon_opened" and e.get("series") in prior for e in state["events"])

    def plan_op(self, st: dict[str, Any]) -> Op | None:
        """The next planning edit (range edge, table height, mAs), or None when the plan is on target."""
        start, end = self.target_range(st)
        plan = st["plan"]
        for edge, want in (("start", start), ("end", end)):
            if abs(plan[f"{edge}_mm"] - want) > POSITION_TOLERANCE_MM:
                return Op("set_range", {"edge": edge, "value": want})
        h = self.target_table_height(st)
        if h is not None and abs(plan["table_height_mm"] - h) > HEIGHT_TOLERANCE_MM:
            return Op("set_table_height", {"value": h})
        tech = self.target_technique(st)
        if tech is not None:
            kv, mas = tech
            if st["params"]["kv"] != kv:
                return Op("set_param", {"name": "kv", "value": kv})
            if st["dose"]["limit_exceeded"] or abs(st["params"]["mas"] - mas) > 1.0:
                return Op("set_param", {"name": "mas", "value": mas})
        return None

    def next_op(self, st: dict[str, Any]) -> Op:
        """The next operation towards the task's goal from this state dump."""
        want_protocol = self.plan["protocol"]
        if st["protocol"] != want_protocol:
            if st["selected_protocol"] != want_protocol:
                return Op("select_protocol", {"pid": want_protocol})
            return Op("load_protocol")
        if st["scout"]["status"] == "none":
            return Op("acquire_scout")
        if st["scout"]["status"] == "acquiring":
            return Op("wait", {"seconds": st["scout_remaining_s"] + 0.1})
        if st["scan"]["status"] != "idle":
            return Op("wait", {"seconds": st["scan"]["remaining_s"] + 0.1})
        if st["bolus"]["status"] in ("monitoring", "triggered"):
            return Op("wait", {"seconds": 3.0})
        if self.plan["recovery"] and not self.prior_reviewed(st):
            return Op("review_prior", {"series_index": 0})
        n_series = sum(1 for s in st["series"] if s["protocol"] == want_protocol and not s.get("prior"))
        if n_series == 0:
            bolus, confirmed = st["bolus"], st["plan"]["confirmed"]
            if self.plan["bolus"] and bolus["status"] == "ready" and confirmed:
                # planning is done and confirmed: place the ROI, then inject
                if bolus["roi"] is None:
                    _, x, y = self.monitor_target(st)
                    return Op("set_roi", {"x_mm": x, "y_mm": y})
                return Op("start_bolus_tracking")
            if not confirmed:
                return self.plan_op(st) or Op("confirm")
            if self.plan["bolus"]:
                mz, _, _ = self.monitor_target(st)
                if bolus["monitor_z_mm"] is None or abs(bolus["monitor_z_mm"] - mz) > 1.0:
                    return Op("set_monitor_z", {"value": mz})
                return Op("acquire_monitor_reference")
            return Op("scan")
        if st["recon"]["open_series"] is None or any(
                s["uid"] == st["recon"]["open_series"] and s.get("prior") for s in st["series"]):
            return Op("open_recon")
        return Op("done")


# ---- the GUI layer: one JSON action per step ----------------------------------------------------
PLANNING_OPS = ("set_range", "set_table_height", "set_param", "confirm", "scan")
BOLUS_OPS = ("set_monitor_z", "acquire_monitor_reference", "set_roi", "start_bolus_tracking")
FIELDS = {"set_table_height": "table_height_field", "set_param": "mas_field", "set_monitor_z": "monitor_z_field"}
BUTTONS = {"load_protocol": "load_protocol", "acquire_scout": "acquire_scout", "confirm": "confirm_plan",
           "scan": "scan", "acquire_monitor_reference": "monitor_reference", "start_bolus_tracking": "start_bolus"}


class CTReferenceSolver(CTPlanner):
    """The planner's operations performed through the console's widgets (privileged geometry, X input)."""

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self.control = None
        self._typing: list[str] = []
        self._selected_prior = False

    def _type_value(self, field_rect: list[int], value: float) -> str:
        """Queue: click field, select all, type, Enter (one action per step)."""
        x, y = _centre(field_rect)
        self._typing = replace_text(f"{value:.1f}")
        return json.dumps({"action": "click", "x": x, "y": y})

    def _set_range_edge(self, st, geo, tf, obs, edge: str, want: float) -> str:
        """Drag the edge on the AP scout when it is far off and on screen, else type the value."""
        have = st["plan"][f"{edge}_mm"]
        handle = geo.get(f"scout_ap.range_{edge}_edge")
        t = tf.get("scout_ap")
        on_screen = handle is not None and 0 <= _centre(handle)[1] < obs.height
        if on_screen and t and abs(have - want) > 15:  # an edge beyond the screen is typed instead
            x, y = _centre(handle)
            ty = int(round(t["ay"] * want + t["by"]))
            ty = min(max(ty, 0), obs.height - 1)
            return json.dumps({"action": "drag", "x": x, "y": y, "to_x": x, "to_y": ty})
        return self._type_value(geo[f"{edge}_field"], want)

    def next_action(self, obs) -> str:
        """One JSON action for this step."""
        if self._typing:
            return self._typing.pop(0)
        st = self.control.state()
        g = self.control.geometry()
        geo, tf = g["geometry"], g["transforms"]
        page = st["ui"]["page"]
        op = self.next_op(st)
        a = op.args
        if op.name == "select_protocol":
            return click(geo[f"protocol_item:{a['pid']}"])
        if op.name == "wait":
            return wait(a["seconds"])
        if op.name == "review_prior":
            if page != "review":
                return click(geo["tab_review"])
            if not self._selected_prior:
                self._selected_prior = True
                return click(geo[f"series_item:{a['series_index']}"])
            return click(geo["open_recon"])
        if op.name in PLANNING_OPS and page != "planning":
            return click(geo["tab_plan"])
        if op.name in BOLUS_OPS and page != "bolus":
            return click(geo["tab_bolus"])
        if op.name == "set_range":
            return self._set_range_edge(st, geo, tf, obs, a["edge"], a["value"])
        if op.name == "set_param":
            return self._type_value(geo[f"{a['name']}_field"], a["value"])
        if op.name in FIELDS:
            return self._type_value(geo[FIELDS[op.name]], a["value"])
        if op.name == "set_roi":
            t = tf["monitor_view"]
            return json.dumps({"action": "click", "x": int(round(t["ax"] * a["x_mm"] + t["bx"])),
                               "y": int(round(t["ay"] * (-a["y_mm"]) + t["by"]))})
        if op.name == "open_recon":
            if "open_recon" not in geo or page != "review":
                return click(geo["tab_review"])
            return click(geo["open_recon"])
        if op.name == "done":
            return json.dumps({"action": "done"})
        return click(geo[BUTTONS[op.name]])
