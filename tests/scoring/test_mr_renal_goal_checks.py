"""Issue 32 for the MR renal planning cards (mr_planning family: bilateral geometry planning, numeric coverage
correction, coverage recovery): each goal states what the oracle checks and the oracle checks what the goal
states. Plans are typed by hand into the console model's parameter card from the subject's anatomy (the
kidneys' voxel box, the isocentre), never taken from the reference solver: a literal plan passes, the same
just outside each stated bound (4 cm of slab over the kidneys' depth, 3 cm of FOV beyond them) fails, and
issue 32's case flips (the kidneys covered through the other slab parameter than the one spoiled passes).

Nothing here imports runner/agents."""
from __future__ import annotations

import math

import numpy as np
import pytest

from consoles.common.clock import SimClock
from consoles.mr.model import MRModel
from rendering.subjects import load_runtime
from scoring.checks import card_checks
from scoring.oracles import get_oracle
from scoring.registry.mr import KIDNEYS, RENAL_MAX_FOV_MARGIN_MM, RENAL_MAX_SLAB_EXCESS_MM
from scoring.subject_oracle import load_oracle
from scoring.verdict import OracleResult
from tasks.card import load_card

SUBJECTS = ("s07", "s26")
PLAN = "mr_renal_bilateral_geometry_planning_v2"
NUMERIC = "mr_renal_numeric_coverage_correction_v2"
RECOVERY = "mr_renal_bilateral_coverage_recovery_v2"
PROTOCOL = "t2_haste_cor"


@pytest.fixture(scope="module", params=SUBJECTS)
def subject(request, subject_cache):
    return request.param, load_oracle(request.param)


class Episode:
    """One card's episode on the console model, with the simulated clock the console runs."""

    def __init__(self, card_id: str, sid: str, oracle, seed: int = 0) -> None:
        self.card = load_card(card_id)
        self.oracle = oracle
        self.m = MRModel(load_runtime(sid), self.card.id, seed, dict(self.card.initial_state),
                         dict(self.card.perturbations))
        self.clock = SimClock(start=self.m.t)
        self.clock.subscribe(self.m.on_clock)

    def acquire(self) -> "Episode":
        self.m.go()
        self.clock.advance(self.m.remaining_s() + 0.5)
        return self

    def verdict(self) -> OracleResult:
        return get_oracle(self.card.oracle)(self.m.state(), self.oracle, self.card)

    def row(self, status: str):
        return next(r for r in self.m.rows if r.protocol == PROTOCOL and r.status == status)


def kidney_box(oracle) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of both kidneys' voxels, to the voxels' outer edges (2 mm grid), subject mm."""
    pts = np.concatenate([oracle.organ_voxels_mm(k) for k in KIDNEYS])
    half = 0.5 * np.asarray(oracle.runtime.spacing_mm, float)
    return pts.min(axis=0) - half, pts.max(axis=0) + half


def slab_for(depth_mm: float, gap_mm: float, thickness_mm: float | None = None, n: int | None = None
             ) -> tuple[int, float]:
    """(slices, thickness) of a slab `depth_mm` thick: the thickness for a given count (0.1 mm field), or the
    fewest slices of a given thickness that reach it."""
    if thickness_mm is None:
        return n, math.ceil(10.0 * (depth_mm - (n - 1) * gap_mm) / n) / 10.0
    return int(math.ceil((depth_mm + gap_mm) / (thickness_mm + gap_mm))), thickness_mm


def closest_slab(depth_mm: float, gap_mm: float) -> tuple[int, float]:
    """(slices, thickness) within the fields' ranges (2-64 slices, 1-20 mm at 0.1 mm) whose slab comes closest
    to `depth_mm` (the fewest slices among equals)."""
    best = None
    for n in range(2, 65):
        t = round((depth_mm - (n - 1) * gap_mm) / n, 1)
        if 1.0 <= t <= 20.0:
            err = abs(n * t + (n - 1) * gap_mm - depth_mm)
            if best is None or err < best[0] - 1e-9:
                best = (err, n, t)
    assert best is not None and best[0] < 1.0, (depth_mm, gap_mm, best)
    return best[1], best[2]


def type_coronal_plan(ep: Episode, slab_extra_mm: float, fov_margin_mm: float | None,
                      n_and_t: tuple[int, float] | None = None, ap_shift_mm: float = 0.0) -> tuple[int, float]:
    """Type the plan a radiographer derives from the localizer: a coronal group centred on the kidneys, a slab
    `slab_extra_mm` thicker than their A/P depth (its slice count and thickness, or `n_and_t`), and, with
    `fov_margin_mm`, a FOV reaching that far beyond them on each side. Returns the (slices, thickness)."""
    m, (lo, hi) = ep.m, kidney_box(ep.oracle)
    iso = np.asarray(m.isocentre_mm, float)
    c = (lo + hi) / 2.0 - iso
    p = ep.row("pending").params if m.open_row is None else m.open_row.params
    if fov_margin_mm is not None:
        for name, v in (("main", "C"), ("tilt_a_deg", 0.0), ("tilt_b_deg", 0.0), ("inplane_deg", 0.0),
                        ("pos_lr_mm", round(c[0], 1)), ("pos_fh_mm", round(c[2], 1)),
                        ("fov_read_mm", round(hi[0] - lo[0] + 2 * fov_margin_mm)),
                        ("fov_phase_mm", round(hi[2] - lo[2] + 2 * fov_margin_mm))):
            m.set_param(name, v)
    n, t = n_and_t or closest_slab(hi[1] - lo[1] + slab_extra_mm, p.gap_mm)
    m.set_param("n_slices", n)
    m.set_param("thickness_mm", t)
    m.set_param("pos_ap_mm", round(c[1] + ap_shift_mm, 1))
    return n, t


# ---- the goals carry the oracle's numbers (the goal-check table's reader) -------------------------------------
@pytest.mark.parametrize("card_id", [PLAN, NUMERIC, RECOVERY])
def test_goal_states_the_oracles_numbers(card_id):
    row = card_checks(load_card(card_id))
    assert row.status == "clean" and {c.name for c in row.checks} >= {"slab_excess", "kidney_coverage"}, row.missing


def test_numeric_goal_allows_either_slab_parameter_and_recovery_goal_asks_no_unchecked_review():
    assert "by the number of slices, the slice thickness or both" in load_card(NUMERIC).goal
    assert "Review" not in load_card(RECOVERY).goal


# ---- geometry planning -------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, margin, ok", [(20.0, 15.0, True),
                                               (RENAL_MAX_SLAB_EXCESS_MM - 3, 15.0, True),
                                               (RENAL_MAX_SLAB_EXCESS_MM + 3, 15.0, False),
                                               (20.0, RENAL_MAX_FOV_MARGIN_MM - 2, True),
                                               (20.0, RENAL_MAX_FOV_MARGIN_MM + 2, False)])
def test_geometry_planning_bounds(subject, extra, margin, ok):
    sid, oracle = subject
    ep = Episode(PLAN, sid, oracle, seed=1)
    type_coronal_plan(ep, extra, margin)
    v = ep.acquire().verdict()
    assert (v.outcome == "PASS") == ok, (v.reason, v.details["renal"])
    if not ok:
        assert v.outcome == "PARTIAL"


def test_geometry_planning_a_slab_one_cm_off_the_kidneys_fails(subject):
    sid, oracle = subject
    ep = Episode(PLAN, sid, oracle, seed=0)
    type_coronal_plan(ep, 4.0, 15.0, ap_shift_mm=12.0)  # 2 mm over each side, then 12 mm towards the back
    v = ep.acquire().verdict()
    assert v.outcome == "PARTIAL" and min(v.details["renal"]["kidney_coverage"].values()) < 0.98


# ---- numeric correction ------------------------------------------------------------------------------------
def _numeric(sid: str, oracle, seed: int) -> tuple[Episode, str]:
    ep = Episode(NUMERIC, sid, oracle, seed)
    return ep, ep.m.state()["start"]["seeded"]["coverage_fault"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_numeric_either_parameter_covers_the_kidneys(subject, seed):
    """Issue 32's case: the slab restored through the parameter that was NOT spoiled (thicker slices when the
    count was cut, more slices when the thickness was cut) now passes, as does the spoiled one restored."""
    sid, oracle = subject
    lo, hi = kidney_box(oracle)
    depth = hi[1] - lo[1] + 20.0
    for route in ("other", "spoiled"):
        ep, fault = _numeric(sid, oracle, seed)
        p = ep.m.open_row.params
        by_thickness = (fault == "n_slices") == (route == "other")
        n, t = slab_for(depth, p.gap_mm, n=p.n_slices) if by_thickness else \
            slab_for(depth, p.gap_mm, thickness_mm=p.thickness_mm)
        if t > 20.0 or n > 64:  # this slab cannot be reached through that field alone
            continue
        type_coronal_plan(ep, 20.0, None, n_and_t=(n, t))
        v = ep.acquire().verdict()
        assert v.outcome == "PASS", (route, fault, n, t, v.reason, v.details["renal"])
        assert "responsible_parameter_changed" not in v.details["checks"]


def test_numeric_other_parameter_route_is_exercised(subject):
    """Over seeds 0-3 both faults occur, and each can be fixed through the other field at least once (so the
    test above is not vacuous)."""
    sid, oracle = subject
    lo, hi = kidney_box(oracle)
    reached = set()
    for seed in range(4):
        ep, fault = _numeric(sid, oracle, seed)
        p = ep.m.open_row.params
        if fault == "n_slices":
            ok = slab_for(hi[1] - lo[1] + 20.0, p.gap_mm, n=p.n_slices)[1] <= 20.0
        else:
            ok = slab_for(hi[1] - lo[1] + 20.0, p.gap_mm, thickness_mm=p.thickness_mm)[0] <= 64
        if ok:
            reached.add(fault)
    assert reached == {"n_slices", "thickness_mm"}


@pytest.mark.parametrize("extra, ok", [(RENAL_MAX_SLAB_EXCESS_MM - 3, True), (RENAL_MAX_SLAB_EXCESS_MM + 3, False)])
def test_numeric_slab_excess_bound(subject, extra, ok):
    sid, oracle = subject
    ep, _ = _numeric(sid, oracle, 0)
    type_coronal_plan(ep, extra, None)
    v = ep.acquire().verdict()
    assert (v.outcome == "PASS") == ok, (v.reason, v.details["renal"])


def test_numeric_a_slab_left_at_the_landmark_depth_fails(subject):
    """The slab made thick enough but not moved to the kidneys in A/P, as the goal warns (seed with the
    landmark far enough off)."""
    sid, oracle = subject
    lo, hi = kidney_box(oracle)
    for seed in range(6):
        ep, _ = _numeric(sid, oracle, seed)
        off = ep.m.open_row.params.centre_mm[1] - (lo[1] + hi[1]) / 2.0
        if abs(off) > 15.0:
            break
    else:
        pytest.skip("no seed of this subject puts the landmark 15 mm off the kidneys")
    p = ep.m.open_row.params
    n, t = slab_for(hi[1] - lo[1] + 10.0, p.gap_mm, thickness_mm=p.thickness_mm)
    ep.m.set_param("n_slices", n)
    v = ep.acquire().verdict()
    assert v.outcome == "PARTIAL" and min(v.details["renal"]["kidney_coverage"].values()) < 0.98


# ---- recovery ---------------------------------------------------------------------------------------------
def _recovery(sid: str, oracle, seed: int) -> Episode:
    ep = Episode(RECOVERY, sid, oracle, seed)
    copy = ep.m.repeat(ep.row("done").uid)
    ep.m.open(copy)
    return ep


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("extra, margin, ok", [(20.0, 15.0, True),
                                               (20.0, RENAL_MAX_FOV_MARGIN_MM - 2, True),
                                               (20.0, RENAL_MAX_FOV_MARGIN_MM + 2, False),
                                               (RENAL_MAX_SLAB_EXCESS_MM + 3, 15.0, False)])
def test_recovery_bounds(subject, seed, extra, margin, ok):
    sid, oracle = subject
    ep = _recovery(sid, oracle, seed)
    type_coronal_plan(ep, extra, margin)
    v = ep.acquire().verdict()
    assert (v.outcome == "PASS") == ok, (v.reason, v.details["renal"])
    # the clipped end is always the one the new plan extends (reported): the check it replaced was implied
    assert v.details["clipped_end_extended"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovery_any_fitted_fov_moves_towards_the_clipped_pole(subject, seed):
    """Why `clipped_end_extended` left the checks: a FOV that covers both kidneys and reaches at most 3 cm beyond
    them has its F/H centre within 15 mm (half of 3 cm) of theirs, and the prior's centre lies farther than that
    on the side away from the clipped pole, on every episode."""
    sid, oracle = subject
    ep = Episode(RECOVERY, sid, oracle, seed)
    lo, hi = kidney_box(oracle)
    prior_z = ep.row("done").params.centre_mm[2]
    end = ep.m.state()["start"]["seeded"]["prior_clip_end"]
    toward = 1.0 if end == "upper" else -1.0
    nearest_passing = (lo[2] + hi[2]) / 2.0 - toward * RENAL_MAX_FOV_MARGIN_MM / 2.0
    assert toward * (nearest_passing - prior_z) > 0.0, (end, prior_z, lo[2], hi[2])


def test_recovery_repeat_without_replanning_fails(subject):
    sid, oracle = subject
    ep = _recovery(sid, oracle, 0)
    ep.m.set_param("averages", 2)  # a change, but not of the geometry that clipped
    v = ep.acquire().verdict()
    assert v.outcome == "PARTIAL" and min(v.details["renal"]["kidney_coverage"].values()) < 0.98
