"""The mr_planning oracle's cardiac checks on end states built by hand from the subject's anatomy (issue 32).

No console, no solver: each state dump is written here from the subject oracle's landmarks, LV long axis,
reference planes and heart voxels, with the few fields the oracle reads (queue, series with their slice
geometry and parameters, the session's events). A PASS state and the FAIL states just beside it, per check.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rendering.geometry import PlanePose
from scoring.oracles import get_oracle
from scoring.registry.mr import PLANE_TOLERANCES, REGISTRY, SAX_MAX_BASAL_ATRIAL_MM, SHIM_MAX_VOLUME_RATIO
from scoring.subject_oracle import load_oracle
from tasks.card import load_card
from tests.scoring.vectors import turned as _turn, unit as _unit

SUBJECT = "s11"
FOV = (340.0, 272.0)  # read, phase (mm) of the cine protocols


@pytest.fixture(scope="module")
def orc(subject_cache):
    return load_oracle(SUBJECT)



def _params(normal: Any, centre: Any, n: int = 1, thickness: float = 8.0, gap: float = 0.0,
            shim: tuple[Any, Any] | None = None) -> dict[str, Any]:
    pose = PlanePose.from_normal(centre, _unit(normal), 0.0)
    size = (FOV[0], FOV[1], n * thickness + (n - 1) * gap)
    return {"normal": list(pose.normal), "centre_mm": [float(x) for x in centre], "inplane_deg": 0.0,
            "n_slices": n, "thickness_mm": thickness, "gap_mm": gap, "fov_read_mm": FOV[0], "fov_phase_mm": FOV[1],
            "shim_box": {"centre": [float(x) for x in (shim[0] if shim else centre)],
                         "size_mm": [float(x) for x in (shim[1] if shim else size)]}}


def _series(uid: int, row: int, protocol: str, p: dict[str, Any], prior: bool = False) -> dict[str, Any]:
    """A slice group as the console dumps it: slice centres spaced thickness + gap about the group centre."""
    pose = PlanePose.from_normal(p["centre_mm"], p["normal"], 0.0)
    step, n = p["thickness_mm"] + p["gap_mm"], p["n_slices"]
    images = [{"index": k + 1, "centre_mm": list(np.asarray(p["centre_mm"]) + (k - (n - 1) / 2.0) * step * pose.normal),
               "u": list(pose.u), "v": list(pose.v), "normal": list(pose.normal), "shape": [int(FOV[1]), int(FOV[0])],
               "pixel_mm": [1.0, 1.0], "thickness_mm": p["thickness_mm"]} for k in range(n)]
    return {"uid": uid, "row": row, "protocol": protocol, "prior": prior, "params": p, "images": images}


class Session:
    """A state dump: rows (uid = 1-based position), their start parameters, the series and the session's events."""

    def __init__(self, orc, rows: dict[str, dict[str, Any]]) -> None:
        self.orc = orc
        self.uid = {proto: k + 1 for k, proto in enumerate(rows)}
        self.start = [{"uid": self.uid[proto], "protocol": proto, "status": "done" if proto == "localizer_3plane" else
                       "pending", "copy_of": None, "params": p} for proto, p in rows.items()]
        self.series: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    def prior(self, protocol: str, p: dict[str, Any]) -> "Session":
        """A series the card supplied (acquired before the session), its row done."""
        self.series.append(_series(len(self.series) + 1, self.uid[protocol], protocol, p, prior=True))
        next(r for r in self.start if r["protocol"] == protocol)["status"] = "done"
        return self

    def acquire(self, protocol: str, p: dict[str, Any], planned: tuple[str, ...] = ("geometry_changed",)) -> "Session":
        row = self.uid[protocol]
        for kind in planned:  # "param_changed:<name>" is a change of that parameter
            event, _, name = kind.partition(":")
            self.events.append({"event": event, "row": row, **({"name": name} if name else {})})
        uid = len(self.series) + 1
        self.series.append(_series(uid, row, protocol, p))
        self.events.append({"event": "row_done", "row": row, "series": uid})
        return self

    def verdict(self, card_id: str):
        queue = [dict(r, status="done" if any(s["row"] == r["uid"] for s in self.series) else r["status"],
                      series=next((s["uid"] for s in reversed(self.series) if s["row"] == r["uid"]), None))
                 for r in self.start]
        state = {"subject": SUBJECT, "isocentre_mm": [0.0, 0.0, 0.0], "queue": queue, "series": self.series,
                 "events": self.events, "start": {"queue": self.start, "n_events": 0, "seeded": {}}}
        return get_oracle("mr_planning")(state, self.orc, load_card(card_id))


# ---- anatomy ------------------------------------------------------------------------------------------
def _axis(orc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mv, apex = orc.lv_long_axis
    return mv, apex, _unit(apex - mv)


def _two_ch(orc, turn_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The vertical long axis: the plane through MV and apex at right angles to the reference 4ch (the
    subject's two reference long-axis planes), turned about the long axis by `turn_deg`."""
    mv, apex, ax = _axis(orc)
    n = _unit(np.cross(ax, orc.reference_planes["4ch"]["normal"]))
    return _turn(n, ax, turn_deg), (mv + apex) / 2.0


def _four_ch_on(orc, n2: np.ndarray) -> np.ndarray:
    mv, apex, ax = _axis(orc)
    return _unit(np.cross(ax, n2))


def _lax_rows(orc) -> dict[str, dict[str, Any]]:
    n2, c = _two_ch(orc, 40.0)  # the rows' start: far off
    return {"localizer_3plane": _params([0, 0, 1], c), "cine_2ch": _params(n2, c), "cine_4ch": _params(n2, c),
            "cine_sax": _params(_axis(orc)[2], c, n=10, gap=2.0)}


# ---- long-axis planes -------------------------------------------------------------------------------
def test_the_true_2ch_passes_and_the_2ch_turned_past_each_tolerance_fails(orc):
    for card_id in ("L3_coarse_2ch", "L4_2ch", "L4_fine_2ch"):
        deg, mm = PLANE_TOLERANCES[REGISTRY[card_id].tolerance]
        n, c = _two_ch(orc)
        assert Session(orc, _lax_rows(orc)).acquire("cine_2ch", _params(n, c)).verdict(card_id).outcome == "PASS"
        v = Session(orc, _lax_rows(orc)).acquire("cine_2ch", _params(_two_ch(orc, deg + 0.5)[0], c)).verdict(card_id)
        assert v.outcome == "PARTIAL" and v.details["checks"]["2ch_angle"] is False, (card_id, v.details)
        v = Session(orc, _lax_rows(orc)).acquire("cine_2ch", _params(n, c + (mm + 0.5) * n)).verdict(card_id)
        assert v.outcome == "PARTIAL" and v.details["checks"]["2ch_offset"] is False, (card_id, v.details)


@pytest.mark.parametrize("card_id", ("L3_coarse_4ch", "L4_4ch", "L4_fine_4ch"))
def test_a_4ch_is_judged_at_right_angles_to_the_supplied_2ch(card_id, orc):
    """The supplied 2ch 30 deg off the true one about the long axis: the 4ch at right angles to it passes,
    the subject's true 4ch (30 deg from that) does not, and the right plane turned or shifted just past the
    card's tolerance fails."""
    deg, mm = PLANE_TOLERANCES[REGISTRY[card_id].tolerance]
    n2, c = _two_ch(orc, 30.0)
    n4 = _four_ch_on(orc, n2)
    ax = _axis(orc)[2]

    def run(normal, centre):
        return Session(orc, _lax_rows(orc)).prior("cine_2ch", _params(n2, c)).acquire(
            "cine_4ch", _params(normal, centre)).verdict(card_id)

    v = run(n4, c)
    assert v.outcome == "PASS" and v.details["4ch"]["angle_deg"] < 1e-3, v.details
    v = run(orc.reference_planes["4ch"]["normal"], c)
    assert v.outcome == "PARTIAL" and abs(v.details["4ch"]["angle_deg"] - 30.0) < 1e-3
    assert v.details["checks"]["4ch_angle"] is False
    for turn in (deg + 0.5, -(deg + 0.5)):
        assert run(_turn(n4, ax, turn), c).details["checks"]["4ch_angle"] is False
    assert run(_turn(n4, ax, deg - 0.5), c).outcome == "PASS"
    assert run(n4, c + (mm + 0.5) * n4).details["checks"]["4ch_offset"] is False
    assert run(n4, c + (mm - 0.5) * n4).outcome == "PASS"


@pytest.mark.parametrize("card_id", ("L4_long_axis_pair", "L5_fine_lax_from_scratch"))
def test_the_pairs_4ch_is_judged_on_the_acquired_2ch_and_only_after_it(card_id, orc):
    deg = PLANE_TOLERANCES[REGISTRY[card_id].tolerance][0]
    n2, c = _two_ch(orc, 0.8 * deg)  # inside the 2ch tolerance
    n4 = _turn(_four_ch_on(orc, n2), _axis(orc)[2], 0.8 * deg)  # turned further the same way: 1.6 x off the true 4ch

    def session():
        s = Session(orc, _lax_rows(orc))
        if card_id == "L5_fine_lax_from_scratch":
            s.acquire("localizer_3plane", _params([0, 0, 1], c), planned=())
        return s

    v = session().acquire("cine_2ch", _params(n2, c)).acquire("cine_4ch", _params(n4, c)).verdict(card_id)
    assert v.outcome == "PASS", (v.reason, v.details)
    v = session().acquire("cine_4ch", _params(n4, c)).acquire("cine_2ch", _params(n2, c)).verdict(card_id)
    assert v.outcome == "PARTIAL" and v.details["checks"]["4ch_planned_on_acquired_2ch"] is False, v.details
    # on the reference 2ch, the 4ch turned past the tolerance fails
    n2t, _ = _two_ch(orc)
    v = session().acquire("cine_2ch", _params(n2t, c)).acquire(
        "cine_4ch", _params(_turn(_four_ch_on(orc, n2t), _axis(orc)[2], deg + 0.5), c)).verdict(card_id)
    assert v.details["checks"]["4ch_angle"] is False


# ---- short-axis stack -------------------------------------------------------------------------------
def _stack(orc, first_mm: float, thickness: float = 8.0, gap: float = 2.0) -> dict[str, Any]:
    """Slices perpendicular to the long axis, the first centred `first_mm` from the mitral valve centre
    (negative: atrial), enough of them to pass the epicardial apex by 4 mm."""
    mv, apex, ax = _axis(orc)
    length = float(np.linalg.norm(apex - mv))
    n = int(math.ceil((length + 4.0 - first_mm + thickness / 2.0 + gap) / (thickness + gap)))
    return _params(ax, mv + ax * (first_mm + (n - 1) * (thickness + gap) / 2.0), n=n, thickness=thickness, gap=gap)


@pytest.mark.parametrize("first_mm, passes", [(0.0, True), (3.0, True), (-(SAX_MAX_BASAL_ATRIAL_MM - 0.3), True),
                                              (-(SAX_MAX_BASAL_ATRIAL_MM + 0.3), False), (-9.5, False)])
def test_sax_first_slice_at_the_base_and_not_in_the_atrium(first_mm, passes, orc):
    v = Session(orc, _lax_rows(orc)).acquire("cine_sax", _stack(orc, first_mm)).verdict("L5_sax_stack")
    assert (v.outcome == "PASS") is passes, (v.reason, v.details["sax"])
    assert v.details["checks"]["lv_coverage"], v.details["sax"]


def test_sax_with_other_thickness_or_gap_fails_and_changing_them_is_no_planning(orc):
    v = Session(orc, _lax_rows(orc)).acquire("cine_sax", _stack(orc, 0.0, thickness=10.0),
                                             planned=("geometry_changed", "param_changed:thickness_mm")
                                             ).verdict("L5_sax_stack")
    assert v.outcome == "PARTIAL" and v.details["checks"]["thickness_and_gap_kept"] is False
    v = Session(orc, _lax_rows(orc)).acquire("cine_sax", _stack(orc, 0.0, gap=0.0)).verdict("L5_sax_stack")
    assert v.details["checks"]["thickness_and_gap_kept"] is False
    v = Session(orc, _lax_rows(orc)).acquire("cine_sax", _stack(orc, 0.0, thickness=10.0),
                                             planned=("param_changed:thickness_mm",)).verdict("L5_sax_stack")
    assert v.stages["stack_planned"] is False
    v = Session(orc, _lax_rows(orc)).acquire("cine_sax", _stack(orc, 0.0), planned=("param_changed:n_slices",)
                                             ).verdict("L5_sax_stack")
    assert v.stages["stack_planned"] is True and v.outcome == "PASS", (v.reason, v.details)


# ---- shim box ---------------------------------------------------------------------------------------
def _shim_rows(orc, slab: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = _lax_rows(orc)
    rows["cine_sax"] = slab
    return rows


def _box(orc, slab: dict[str, Any], margin: float, cut_mm: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(centre, size) of a box on the slab's axes around the heart's voxel edges, `margin` on every face,
    its read-low face moved `cut_mm` into the heart."""
    pose = PlanePose.from_normal(slab["centre_mm"], slab["normal"], 0.0)
    axes = np.stack([pose.u, pose.v, pose.normal])
    pts = orc.organ_voxels_mm("heart") @ axes.T
    lo, hi = pts.min(axis=0) - 1.0 - margin, pts.max(axis=0) + 1.0 + margin
    lo[0] += cut_mm
    return (lo + hi) / 2.0 @ axes, hi - lo


def test_shim_box_around_the_heart_with_the_slices_kept(orc):
    slab = _stack(orc, 0.0)
    rows = _shim_rows(orc, slab)
    box = ("shim_box_changed", "shim_box_moved")

    def run(margin, cut=0.0, acquired=None):
        p = dict(acquired or slab, shim_box=None)
        c, size = _box(orc, p, margin, cut)
        p["shim_box"] = {"centre": list(c), "size_mm": list(size)}
        return Session(orc, rows).acquire("cine_sax", p, planned=box).verdict("L4_heart_shim_box")

    v = run(10.0)
    assert v.outcome == "PASS", (v.reason, v.details)
    v = run(10.0, cut=25.0)  # the box's face 15 mm inside the heart
    assert v.details["checks"]["heart_inside_box"] is False
    # the margin where the box reaches 1.05 x the stated volume ratio
    heart = orc.organ_volume_ml("heart")
    c, size0 = _box(orc, slab, 0.0)
    m = next(m for m in np.arange(0.0, 60.0, 0.1) if np.prod(size0 + 2 * m) / 1000.0 > 1.05 * SHIM_MAX_VOLUME_RATIO * heart)
    assert run(float(m)).details["checks"]["box_not_excessive"] is False
    moved = dict(slab, centre_mm=list(np.asarray(slab["centre_mm"]) + [0.0, 0.0, 3.0]))
    v = run(10.0, acquired=moved)
    assert v.outcome == "PARTIAL" and v.details["checks"]["slices_unchanged"] is False
    assert v.details["slices_moved"] == ["centre"]
    v = run(10.0, acquired=dict(slab, n_slices=slab["n_slices"] + 1))
    assert v.details["slices_moved"] == ["n_slices"]
    v = run(10.0, acquired=dict(slab, normal=list(_turn(_unit(slab["normal"]), PlanePose.from_normal(
        slab["centre_mm"], slab["normal"], 0.0).u, 1.0))))
    assert v.details["slices_moved"] == ["orientation"]
