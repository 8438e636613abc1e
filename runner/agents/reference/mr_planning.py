"""Reference policy of the MR geometry-planning tasks (pure: state dumps in, operations out).

Targets come from the hidden anatomy (the subject oracle's reference planes, LV long axis, organ voxels);
the plan is staged as a radiographer works: localizer, then each view planned on images already acquired
(2ch on the localizers, 4ch with the acquired 2ch on screen, the short-axis stack with both), acquired, and
the next one planned. Each geometric step is one graphical operation on a viewport, named after the MRModel
method the headless driver calls and the GUI solver performs as a handle drag:

- rotate_group {viewport, deg}: the rotate grip turned about the displayed plane's normal. Two such turns
  on two displays bring any normal onto the target (`two_turns`), the double oblique of a clinical chain;
- translate_group {viewport, du, dv}: the centre grip dragged in the displayed plane; two displays move the
  centre anywhere in 3D;
- move_shim {viewport, du, dv}, drag_grip {viewport, name, amount_mm}: the shim box's centre and faces;
- set_param: numeric fields (slice count, thickness, FOV, and -- when `drag_resolution` says a drag cannot
  resolve what is left -- the final typed fine adjustment of position and tilts).

The policy re-reads the state before every step, so an inexact drag (whole pixels) is corrected by the
next one; it is done with a view when its residual is below ANGLE_EPS_DEG and POS_EPS_MM.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from rendering.geometry import cross3
from runner.agents.reference.common import Op
from scoring.registry.mr import KIDNEYS, VIEW_PROTOCOL

ANGLE_EPS_DEG = 0.1  # residual tilt of a plan the reference accepts (the fields show 0.1 deg; a residual
# up to 0.3 deg was left on some seeded starts, e.g. L4_fine_4ch s01 seed 0 with the positioning offsets)
POS_EPS_MM = 0.6  # residual centre distance it accepts (the fields show 0.1 mm)
SIZE_EPS_MM = 3.0  # shim box: residual size/centre error it accepts (inside its 10 mm margins)
SAX_BASE_MARGIN_MM = 3.0  # the stack starts this far on the atrial side of the mitral plane (slab edge)
SAX_APEX_MARGIN_MM = 4.0  # and ends this far beyond the epicardial apex
RENAL_MARGIN_MM = 6.0  # slab and FOV margin around the kidneys (about one slice)
SHIM_MARGIN_MM = 10.0  # adjust volume margin around the heart on every face
LOCALIZER = "localizer_3plane"


# ---- geometry helpers (pure) ----------------------------------------------------------------------------
def _unit(a: Any) -> np.ndarray:
    a = np.asarray(a, float)
    return a / np.linalg.norm(a)


def rot(vec: np.ndarray, axis: np.ndarray, deg: float) -> np.ndarray:
    """Rodrigues: `vec` turned right-handed about unit `axis` by `deg`."""
    t = math.radians(deg)
    return vec * math.cos(t) + cross3(axis, vec) * math.sin(t) + axis * (axis @ vec) * (1.0 - math.cos(t))


def angle_between(a: Any, b: Any) -> float:
    c = abs(float(_unit(a) @ _unit(b)))
    return math.degrees(math.acos(min(1.0, c)))


def two_turns(n: np.ndarray, t: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> tuple[float, float] | None:
    """Angles (deg, right-handed about unit axes k1 then k2) that turn normal n onto t (or -t, the same
    plane), smallest total; None when these two axes cannot do it."""
    best = None
    for tt in (t, -t):
        a_ = n @ k2 - (k1 @ n) * (k1 @ k2)
        b_ = cross3(k1, n) @ k2
        c_ = tt @ k2 - (k1 @ n) * (k1 @ k2)
        r = math.hypot(a_, b_)
        if r < 1e-9:
            if abs(c_) > 1e-6:
                continue
            thetas = [0.0]
        else:
            if abs(c_) > r + 1e-9:
                continue
            base, spread = math.atan2(b_, a_), math.acos(max(-1.0, min(1.0, c_ / r)))
            thetas = [math.degrees(base + spread), math.degrees(base - spread)]
        for th1 in thetas:
            th1 = (th1 + 180.0) % 360.0 - 180.0
            n1 = rot(n, k1, th1)
            p, q = n1 - (n1 @ k2) * k2, tt - (tt @ k2) * k2
            if np.linalg.norm(p) < 1e-9 or np.linalg.norm(q) < 1e-9:
                th2 = 0.0
            else:
                th2 = math.degrees(math.atan2(cross3(p, q) @ k2, p @ q))
            if angle_between(rot(n1, k2, th2), tt) > 1e-3:
                continue
            cost = abs(th1) + abs(th2)
            if best is None or cost < best[0]:
                best = (cost, th1, th2)
    return None if best is None else (best[1], best[2])


def tilt_fields(normal: Any) -> tuple[str, float, float]:
    """(main, tilt a, tilt b) of a normal, as the geometry fields show them (consoles.mr.row_params)."""
    from consoles.mr.row_params import tilts_from_normal

    return tilts_from_normal(normal)


# ---- the policy ---------------------------------------------------------------------------------------
class PlanningPolicy:
    """Mixed into MRPlanner (runner/agents/reference/mr.py): one `_<kind>` method per planning kind.

    `drag_resolution` = (deg, mm): residuals below this are left to typed fields (the GUI's drags land on
    whole pixels); (0, 0) plans drags only (headless). `target_tilt_deg` / `target_shift_mm` perturb the
    cardiac targets (tests: a plane rotated or shifted on purpose; the short axis is only tilted)."""

    drag_resolution: tuple[float, float] = (0.0, 0.0)
    # (row uid, "centre" | "read" | "phase" | "slice") of shim-box residuals the GUI solver found no whole-pixel
    # drag could reduce (they are within SIZE_EPS_MM's margins; headless plans never fill it)
    shim_settled: frozenset[tuple[int, str]] = frozenset()
    target_tilt_deg: float = 0.0
    target_shift_mm: float = 0.0

    # ---- displays ---------------------------------------------------------------------------------
    @staticmethod
    def displays(st: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        """(0-based viewport, image dict) of every shown viewport with an image, in viewport order."""
        series = {s["uid"]: s for s in st["series"]}
        out = []
        for vp in st["layout"]["viewports"]:
            if vp["visible"] and vp.get("series") in series:
                out.append((vp["index"] - 1, series[vp["series"]]["images"][vp["image"] - 1]))
        return out

    # ---- targets ----------------------------------------------------------------------------------
    def view_target(self, view: str, st: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(normal, centre) of a cardiac view: the reference 2ch; the 4ch perpendicular to the last 2ch image
        in `st` through mitral valve and apex, as the goals prescribe (scoring.oracles.mr_planning.lax_target;
        the reference 4ch without one); for sax the LV long axis with the stack centre placed over the
        mitral plane .. apex span (see sax_span)."""
        orc = self.oracle
        if view == "sax":
            base, apex = orc.lv_long_axis
            axis = _unit(apex - base)
            lo, hi = self.sax_span(st)
            if self.target_tilt_deg:  # perturbed on purpose (tests)
                axis = rot(axis, _unit(orc.reference_planes["sax"]["row"]), self.target_tilt_deg)
            return axis, base + _unit(apex - base) * (lo + hi) / 2.0
        from scoring.oracles.mr_planning import answer_2ch, lax_target

        n, c = lax_target(orc, view, answer_2ch(st) if view == "4ch" and st is not None else None)
        n, c = _unit(n), np.asarray(c, float)
        base, apex = orc.lv_long_axis
        if self.target_tilt_deg:  # perturbed on purpose (tests): turned about the long axis the plane holds
            n = rot(n, _unit(apex - base), self.target_tilt_deg)
        if self.target_shift_mm:
            c = c + self.target_shift_mm * n
        return n, c

    def sax_span(self, st: dict[str, Any] | None = None) -> tuple[float, float]:
        """(start, end) of the short-axis slab along the long axis from the mitral valve centre (mm): from
        SAX_BASE_MARGIN_MM atrial of the mitral plane to SAX_APEX_MARGIN_MM beyond the apex; with the state, the
        end is where the whole slices of the row's thickness and gap (kept, as the goal says) reach it, so the
        first slice stays at the base."""
        base, apex = self.oracle.lv_long_axis
        lo, hi = -SAX_BASE_MARGIN_MM, float(np.linalg.norm(apex - base)) + SAX_APEX_MARGIN_MM
        if st is None:
            return lo, hi
        p = self._target_row(st, VIEW_PROTOCOL["sax"])["params"]
        n = self.sax_slices(p, lo, hi)
        return lo, lo + n * p["thickness_mm"] + (n - 1) * p["gap_mm"]

    @staticmethod
    def sax_slices(p: dict[str, Any], lo: float, hi: float) -> int:
        """The fewest slices of the row's thickness and gap whose slab spans lo .. hi."""
        return max(1, math.ceil((hi - lo + p["gap_mm"]) / (p["thickness_mm"] + p["gap_mm"])))

    # ---- one plane ----------------------------------------------------------------------------------
    def plane_op(self, st: dict[str, Any], row: dict[str, Any], normal: np.ndarray, centre: np.ndarray) -> Op | None:
        """The next operation bringing the open row's group onto (normal, centre); None when it is there."""
        p = row["params"]
        n = _unit(p["normal"])
        c = np.asarray(p["centre_mm"], float)
        err = angle_between(n, normal)
        shows = self.displays(st)
        deg_res, mm_res = self.drag_resolution
        if err > ANGLE_EPS_DEG:
            if err <= deg_res:
                return self.typed_tilt(p, normal)
            best = None
            for i, im1 in shows:
                for j, im2 in shows:
                    if i == j:
                        continue
                    k1, k2 = -_unit(im1["normal"]), -_unit(im2["normal"])  # rotate_group turns about -normal
                    sol = two_turns(n, _unit(normal), k1, k2)
                    if sol is not None and (best is None or abs(sol[0]) + abs(sol[1]) < best[0]):
                        best = (abs(sol[0]) + abs(sol[1]), i, j, sol)
            if best is not None:
                _, i, j, (a1, a2) = best
                least = max(0.05, deg_res)  # a smaller turn is left to the fields (a drag cannot resolve it)
                if abs(a1) > least:
                    return Op("rotate_group", {"viewport": i, "deg": round(a1, 3)})
                if abs(a2) > least:
                    return Op("rotate_group", {"viewport": j, "deg": round(a2, 3)})
            return self.typed_tilt(p, normal)
        d = np.asarray(centre, float) - c
        if np.linalg.norm(d) > POS_EPS_MM:
            if np.linalg.norm(d) <= mm_res:
                return self.typed_position(p, centre, st["isocentre_mm"])
            return self.translate_op(shows, d, "translate_group")
        return None

    @staticmethod
    def translate_op(shows: list[tuple[int, dict[str, Any]]], d: np.ndarray, name: str) -> Op:
        """Move by 3D `d` on the display that carries most of it (the next step takes what is left)."""
        best = max(shows, key=lambda s: np.linalg.norm([d @ np.asarray(s[1]["u"]), d @ np.asarray(s[1]["v"])]))
        i, im = best
        return Op(name, {"viewport": i, "du": round(float(d @ np.asarray(im["u"], float)), 3),
                         "dv": round(float(d @ np.asarray(im["v"], float)), 3)})

    @staticmethod
    def typed_tilt(p: dict[str, Any], normal: np.ndarray) -> Op:
        main, a, b = tilt_fields(normal)
        if p["main"] != main:
            return Op("set_param", {"name": "main", "value": main})
        if round(p["tilt_a_deg"], 1) != round(a, 1):  # the field's precision: 0.1 deg
            return Op("set_param", {"name": "tilt_a_deg", "value": round(a, 1)})
        return Op("set_param", {"name": "tilt_b_deg", "value": round(b, 1)})

    @staticmethod
    def typed_position(p: dict[str, Any], centre: np.ndarray, isocentre: Any) -> Op:
        """Type the next Position field that is off: the fields show mm from the isocentre (scanner frame)."""
        want = np.asarray(centre, float) - np.asarray(isocentre, float)
        for k, name in enumerate(("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")):
            if round(p["centre_mm"][k], 1) != round(float(centre[k]), 1):  # the field's precision: 0.1 mm
                return Op("set_param", {"name": name, "value": round(float(want[k]), 1)})
        return Op("set_param", {"name": "pos_fh_mm", "value": round(float(want[2]), 1)})

    # ---- rows ---------------------------------------------------------------------------------------
    def _rows_of(self, st: dict[str, Any], protocol: str) -> list[dict[str, Any]]:
        return [r for r in st["queue"] if r["protocol"] == protocol]

    def _session_done(self, st: dict[str, Any], protocol: str) -> bool:
        """A row of this protocol was acquired in this session."""
        n0 = st["start"]["n_events"]
        uids = {r["uid"] for r in self._rows_of(st, protocol)}
        return any(e["event"] == "row_done" and e.get("row") in uids for e in st["events"][n0:])

    def _target_row(self, st: dict[str, Any], protocol: str) -> dict[str, Any]:
        """The row to plan: the open pending row of the protocol, else its first pending (or stopped) one."""
        rows = [r for r in self._rows_of(st, protocol) if r["status"] in ("pending", "stopped")]
        return next((r for r in rows if r["uid"] == st["open_row"]), rows[0])

    def _acquire(self, st: dict[str, Any], uid: int) -> Op:
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        if st["open_row"] != uid:
            return Op("open", {"uid": uid})
        return Op("go")

    def _localizer_first(self, st: dict[str, Any]) -> Op | None:
        if any(s["localizer"] for s in st["series"]):
            return None
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        row = next(r for r in st["queue"] if r["protocol"] == LOCALIZER)
        return self._start_row_op(st, row["uid"])

    def _view_op(self, st: dict[str, Any], view: str) -> Op | None:
        """Plan and acquire one cardiac view; None once it was acquired in this session."""
        protocol = VIEW_PROTOCOL[view]
        if self._session_done(st, protocol):
            return None
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        row = self._target_row(st, protocol)
        if st["open_row"] != row["uid"]:
            return Op("open", {"uid": row["uid"]})
        normal, centre = self.view_target(view, st)
        op = self.plane_op(st, row, normal, centre)
        if op is not None:
            return op
        if view == "sax":
            lo, hi = self.sax_span()
            p = row["params"]
            n = self.sax_slices(p, lo, hi)
            if p["n_slices"] != n:
                return Op("set_param", {"name": "n_slices", "value": n})
        return Op("go")

    def _show_last_series(self, st: dict[str, Any], protocol: str) -> Op | None:
        """Put the last acquired series of a protocol into the last viewport (planning on it next, or the
        result on screen at the end)."""
        uids = {r["uid"] for r in self._rows_of(st, protocol)}
        series = [s for s in st["series"] if s["row"] in uids]
        if not series:
            return None
        s = series[-1]
        vps = [v for v in st["layout"]["viewports"] if v["visible"]]
        if any(v.get("series") == s["uid"] for v in vps):
            return None
        return Op("load_entry", {"viewport": vps[-1]["index"] - 1, "key": str(s["uid"])})

    def _chain(self, st: dict[str, Any], views: tuple[str, ...]) -> Op:
        op = self._localizer_first(st)
        if op is not None:
            return op
        for k, view in enumerate(views):
            if k > 0:
                shown = self._show_last_series(st, VIEW_PROTOCOL[views[k - 1]])
                if shown is not None and not self._session_done(st, VIEW_PROTOCOL[view]):
                    return shown
            op = self._view_op(st, view)
            if op is not None:
                return op
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        # the result on screen before saying done, as a radiographer checks the acquired plane
        return self._show_last_series(st, VIEW_PROTOCOL[views[-1]]) or Op("done")

    # ---- kinds ------------------------------------------------------------------------------------
    def _long_axis(self, st):
        return self._chain(st, self.task.views)

    _long_axis_pair = _long_axis
    _lax_from_scratch = _long_axis
    _sax_stack = _long_axis

    # renal
    def organ_points(self, name: str) -> np.ndarray:
        """An organ's voxel centres (subject mm), read once per planner (the anatomy never changes)."""
        from scoring.oracles.mr_planning import organ_points

        return organ_points(self.oracle, name)

    def kidney_box(self) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) voxel-edge corners of both kidneys (subject mm)."""
        pts = np.concatenate([self.organ_points(k) for k in KIDNEYS])
        return pts.min(axis=0) - 1.0, pts.max(axis=0) + 1.0

    def renal_numbers(self, p: dict[str, Any]) -> dict[str, float]:
        """Slice count, thickness and FOV that cover the kidneys with RENAL_MARGIN_MM around them, for the
        row's current orientation (coronal: slab along A/P, phase F/H, read L/R)."""
        lo, hi = self.kidney_box()
        n_axis = _unit(p["normal"])
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        c = np.asarray(p["centre_mm"], float)
        s = (corners - c) @ n_axis
        need = 2.0 * float(np.max(np.abs(s))) + 2.0 * RENAL_MARGIN_MM
        t, g = p["thickness_mm"], p["gap_mm"]
        return {"n_slices": max(1, math.ceil((need + g) / (t + g))),
                "thickness_mm": math.ceil(2.0 * (need - (p["n_slices"] - 1) * g) / p["n_slices"]) / 2.0,
                "fov_phase_mm": 10.0 * math.ceil((hi[2] - lo[2] + 2.0 * abs(c[2] - (lo[2] + hi[2]) / 2.0)
                                                  + 2.0 * RENAL_MARGIN_MM) / 10.0),
                "fov_read_mm": 10.0 * math.ceil((hi[0] - lo[0] + 2.0 * abs(c[0] - (lo[0] + hi[0]) / 2.0)
                                                 + 2.0 * RENAL_MARGIN_MM) / 10.0)}

    def _renal_plan(self, st, row, geometry: bool, fault: str | None = None) -> Op:
        if st["open_row"] != row["uid"]:
            return Op("open", {"uid": row["uid"]})
        p = row["params"]
        if geometry:
            lo, hi = self.kidney_box()
            op = self.plane_op(st, row, np.array([0.0, 1.0, 0.0]), (lo + hi) / 2.0)
            if op is not None:
                return op
        if fault is not None:
            # a slab left where the landmark put it in A/P is first centred on the kidneys (typed Position
            # A/P, scanner frame), so the fixed parameter need only hold their depth (issue 21)
            lo, hi = self.kidney_box()
            c_ap = float(lo[1] + hi[1]) / 2.0
            if abs(float(p["centre_mm"][1]) - c_ap) > POS_EPS_MM:
                return Op("set_param", {"name": "pos_ap_mm", "value": round(c_ap - float(st["isocentre_mm"][1]), 1)})
        want = self.renal_numbers(p)
        if fault is not None:  # fix the parameter that was set wrong
            if fault == "thickness_mm" and p["thickness_mm"] < want["thickness_mm"]:
                return Op("set_param", {"name": "thickness_mm", "value": want["thickness_mm"]})
            if fault == "n_slices" and p["n_slices"] < want["n_slices"]:
                return Op("set_param", {"name": "n_slices", "value": want["n_slices"]})
            if fault == "fov_phase_mm" and p["fov_phase_mm"] < want["fov_phase_mm"]:
                return Op("set_param", {"name": "fov_phase_mm", "value": want["fov_phase_mm"]})
        elif p["n_slices"] != want["n_slices"]:
            return Op("set_param", {"name": "n_slices", "value": want["n_slices"]})
        for k in ("fov_phase_mm", "fov_read_mm"):
            # a planned slab gets its FOV fitted to the kidneys (RENAL_MAX_FOV_MARGIN_MM); a numeric fix
            # only opens a FOV that is too small
            if p[k] < want[k] or (geometry and p[k] != want[k]):
                return Op("set_param", {"name": k, "value": want[k]})
        return Op("go")

    def _renal_task(self, st, geometry: bool, fault: str | None = None, repeat: bool = False) -> Op:
        protocol = self.task.protocol
        if self._session_done(st, protocol):
            if st["header"]["scanner"]["status"] == "scanning":
                return self._wait_running(st)
            return self._show_last_series(st, protocol) or Op("done")  # the acquired slab on screen
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        rows = [r for r in self._rows_of(st, protocol) if r["status"] in ("pending", "stopped")]
        if not rows and repeat:
            done = [r for r in self._rows_of(st, protocol) if r["status"] == "done"]
            return Op("repeat", {"uid": done[-1]["uid"]})
        return self._renal_plan(st, self._target_row(st, protocol), geometry, fault)

    def _renal_slab(self, st):
        return self._renal_task(st, geometry=True)

    def _renal_numeric(self, st):
        return self._renal_task(st, geometry=False, fault=st["start"]["seeded"].get("coverage_fault"))

    def _renal_recovery(self, st):
        return self._renal_task(st, geometry=True, repeat=True)

    # shim box
    def shim_target(self, p: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(centre, size along read/phase/slice) of a box around the heart on the row's axes."""
        from consoles.mr.row_params import RowParams

        pose = RowParams.from_dict(p).pose()
        axes = np.stack([pose.u, pose.v, pose.normal])
        pts = self.organ_points("heart") @ axes.T
        lo, hi = pts.min(axis=0) - 1.0, pts.max(axis=0) + 1.0
        return ((lo + hi) / 2.0) @ axes, hi - lo + 2.0 * SHIM_MARGIN_MM

    def _shim_box_fit(self, st):
        protocol = self.task.protocol
        if self._session_done(st, protocol):
            return self._wait_running(st) if st["header"]["scanner"]["status"] == "scanning" else Op("done")
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        row = self._target_row(st, protocol)
        if st["open_row"] != row["uid"]:
            return Op("open", {"uid": row["uid"]})
        if not st["layout"]["shim_box_visible"]:
            return Op("set_shim_box_visible", {"visible": True})
        op = self.shim_op(st, row)
        return op if op is not None else Op("go")

    def shim_residual(self, row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(centre, size) the open row's shim box still has to move and grow by (subject mm; read/phase/slice)."""
        p = row["params"]
        centre, size = self.shim_target(p)
        return (centre - np.asarray(p["shim_box"]["centre"], float),
                size - np.asarray(p["shim_box"]["size_mm"], float))

    def shim_op(self, st: dict[str, Any], row: dict[str, Any]) -> Op | None:
        """Move, then size, the open row's shim box onto the heart; None when it fits (residuals in
        `shim_settled` count as fitting)."""
        d, _ = self.shim_residual(row)
        if np.linalg.norm(d) > SIZE_EPS_MM and (row["uid"], "centre") not in self.shim_settled:
            return self.translate_op(self.displays(st), d, "move_shim")
        settled = {a for uid, a in self.shim_settled if uid == row["uid"]}
        return self.shim_size_op(st, row["params"], self.shim_target(row["params"])[1], settled)

    def shim_size_op(self, st, p: dict[str, Any], size: np.ndarray, settled: Any = ()) -> Op | None:
        """Drag the face grip of the axis whose size is furthest off (of those not `settled`), on the display
        showing it best."""
        from consoles.mr.model import plan_grips
        from consoles.mr.row_params import RowParams
        from rendering.geometry import PlanePose

        cur = np.asarray(p["shim_box"]["size_mm"], float)
        diff = np.where([a in settled for a in ("read", "phase", "slice")], 0.0, size - cur)
        k = int(np.argmax(np.abs(diff)))
        if abs(diff[k]) <= SIZE_EPS_MM / 2.0:
            return None
        rp = RowParams.from_dict(p)
        axis = ("read", "phase", "slice")[k]
        best = None
        for i, im in self.displays(st):
            pose = PlanePose.from_axes(im["centre_mm"], im["u"], im["v"])
            for g in plan_grips(rp, pose, 1.0, with_group=False):
                if g.name == f"shim_{axis}_hi" and (best is None or g.factor > best[1]):
                    best = (i, g.factor)
        if best is None:
            return None
        return Op("drag_grip", {"viewport": best[0], "name": f"shim_{axis}_hi",
                                "amount_mm": round(float(diff[k] / (2.0 * best[1])), 3)})
