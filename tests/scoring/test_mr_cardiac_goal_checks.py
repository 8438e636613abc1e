"""Goal-boundary tests of the MR cardiac planning cards (issue 32): a technologist who does literally what the
goal says passes; the same just outside each bound the goal states fails; each case of the issue's "Why" flips.

Episodes run on the real console model (runner.headless.drive.make_model), planes typed into the row's fields
from the dumped 2ch geometry and the subject's landmarks (tests/scoring/mr_cardiac_literal.py), never from
the reference solver. A few cohort subjects and seeds per test; the full-cohort figure of the literal 4ch is
in the issue's report.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring.registry.mr import (PLANE_TOLERANCES, REGISTRY, SAX_MAX_BASAL_ATRIAL_MM, SHIM_MAX_VOLUME_RATIO,
                                 SHIM_MIN_HEART_INSIDE)
from scoring.subject_oracle import load_oracle
from tasks.card import load_card
from tests.scoring.mr_cardiac_literal import (Console, last_series, plan_literal_4ch, true_2ch, turned,
                                              unit)

FOUR_CH = ("L3_coarse_4ch", "L4_4ch", "L4_fine_4ch")
TWO_CH = ("L3_coarse_2ch", "L4_2ch", "L4_fine_2ch")
PAIRS = ("L4_long_axis_pair", "L5_fine_lax_from_scratch")
# (subject, seed) samples: s06 seed 0 is the played episode (its 2ch 36 deg off the true 4ch's partner)
SAMPLE = (("s06", 0), ("s17", 1), ("s28", 2))


@pytest.fixture(scope="module")
def oracles(subject_cache):
    return {s: load_oracle(s) for s, _ in SAMPLE}


def _tol(card_id: str) -> tuple[float, float]:
    return PLANE_TOLERANCES[REGISTRY[card_id].tolerance]


def _goal(card_id: str) -> str:
    return load_card(card_id).goal


# ---- the stated numbers are in the goals ---------------------------------------------------------------
@pytest.mark.parametrize("card_id", FOUR_CH + TWO_CH + PAIRS)
def test_long_axis_goals_state_their_plane_tolerances(card_id):
    deg, mm = _tol(card_id)
    goal = _goal(card_id)
    assert f"within {deg:g} degrees" in goal and f"within {mm:g} mm" in goal, goal


def test_sax_and_shim_goals_state_their_numbers():
    sax, shim = _goal("L5_sax_stack"), _goal("L4_heart_shim_box")
    for text in ("within 10 degrees", "95 %", f"{SAX_MAX_BASAL_ATRIAL_MM:g} mm towards the atrium", "8 mm", "2 mm"):
        assert text in sax, text
    assert f"{SHIM_MIN_HEART_INSIDE:.0%}".replace("%", " %") in shim and f"{SHIM_MAX_VOLUME_RATIO:g} times" in shim
    assert "Do not change the slices" in shim


# ---- 4ch on the supplied 2ch: the literal plan passes, just outside the stated bound fails ----------------
@pytest.mark.parametrize("card_id", FOUR_CH)
def test_the_literal_4ch_on_the_supplied_2ch_passes(card_id, oracles):
    """The issue's contradiction: the supplied 2ch is off the true one (up to ~50 deg), and a 4ch planned at
    right angles to it through MV and apex failed against the true 4ch; judged as the goal says, it passes."""
    off = []
    for subject, seed in SAMPLE:
        con = Console(card_id, subject, seed)
        s2 = last_series(con.state(), "cine_2ch")
        off.append(np.degrees(np.arccos(min(1.0, abs(unit(s2["images"][0]["normal"])
                                                     @ true_2ch(oracles[subject])[0])))))
        plan_literal_4ch(con, oracles[subject])
        con.acquire("cine_4ch")
        v = con.verdict(oracles[subject])
        assert v.outcome == "PASS", (subject, seed, v.reason, v.details["4ch"])
        assert v.details["4ch"]["judged_against"].startswith("perpendicular_to_2ch")
    assert max(off) > _tol(card_id)[0], off  # the supplied 2ch really is off beyond the tolerance somewhere


@pytest.mark.cohort_sweep
@pytest.mark.parametrize("subject", [f"s{i:02d}" for i in range(1, 31)])
def test_the_literal_4ch_passes_on_every_cohort_episode(subject, subject_cache):
    """`make sweep`: the literal 4ch on every cohort episode of the three cards (measured 270/270 PASS; before
    the goal and oracle agreed, 47, 35 and 25 of 90)."""
    orc = load_oracle(subject)
    failed = []
    for card_id in FOUR_CH:
        for seed in (0, 1, 2):
            con = Console(card_id, subject, seed)
            plan_literal_4ch(con, orc)
            con.acquire("cine_4ch")
            v = con.verdict(orc)
            if v.outcome != "PASS":
                failed.append((card_id, seed, v.reason))
    assert failed == []


@pytest.mark.parametrize("card_id", FOUR_CH)
@pytest.mark.parametrize("inside", (True, False))
def test_the_4ch_turned_about_its_line_passes_inside_and_fails_outside_the_stated_angle(card_id, inside, oracles):
    deg, _ = _tol(card_id)
    subject, seed = SAMPLE[1]
    con = Console(card_id, subject, seed)
    plan_literal_4ch(con, oracles[subject], turn_deg=deg - 1.0 if inside else deg + 1.0)
    con.acquire("cine_4ch")
    v = con.verdict(oracles[subject])
    assert (v.outcome == "PASS") is inside, (v.reason, v.details["4ch"])
    assert v.details["checks"]["4ch_angle"] is inside


@pytest.mark.parametrize("card_id", FOUR_CH)
@pytest.mark.parametrize("inside", (True, False))
def test_the_4ch_shifted_passes_inside_and_fails_outside_the_stated_offset(card_id, inside, oracles):
    _, mm = _tol(card_id)
    subject, seed = SAMPLE[2]
    con = Console(card_id, subject, seed)
    plan_literal_4ch(con, oracles[subject], shift_mm=mm - 1.0 if inside else mm + 1.0)
    con.acquire("cine_4ch")
    v = con.verdict(oracles[subject])
    assert (v.outcome == "PASS") is inside, (v.reason, v.details["4ch"])
    assert v.details["checks"]["4ch_offset"] is inside


def test_the_true_4ch_no_longer_passes_on_a_supplied_2ch_far_off(oracles):
    """The other side of the flip: the subject's true 4ch, which the old oracle wanted, is not at right angles
    to a 2ch that is 36 deg off it (s06 seed 0 of L4_fine_4ch, the issue's played episode)."""
    con = Console("L4_fine_4ch", "s06", 0)
    orc = oracles["s06"]
    con.type_plane("cine_4ch", orc.reference_planes["4ch"]["normal"], true_2ch(orc)[1])
    con.acquire("cine_4ch")
    v = con.verdict(orc)
    assert v.outcome != "PASS" and not v.details["checks"]["4ch_angle"], v.details["4ch"]


# ---- 2ch cards: the stated tolerance around the true vertical long axis ----------------------------------
@pytest.mark.parametrize("card_id", TWO_CH)
@pytest.mark.parametrize("inside", (True, False))
def test_the_2ch_passes_inside_and_fails_outside_the_stated_angle(card_id, inside, oracles):
    deg, _ = _tol(card_id)
    subject, seed = SAMPLE[0]
    orc = oracles[subject]
    n, c = true_2ch(orc)
    line = unit(orc.landmarks["lv_apex_epicardial"] - orc.landmarks["mitral_valve_centre"])
    con = Console(card_id, subject, seed)
    con.type_plane("cine_2ch", turned(n, line, deg - 1.0 if inside else deg + 1.0), c)
    con.acquire("cine_2ch")
    v = con.verdict(orc)
    assert (v.outcome == "PASS") is inside, (v.reason, v.details["2ch"])


@pytest.mark.parametrize("card_id", TWO_CH)
@pytest.mark.parametrize("inside", (True, False))
def test_the_2ch_passes_inside_and_fails_outside_the_stated_offset(card_id, inside, oracles):
    _, mm = _tol(card_id)
    subject, seed = SAMPLE[1]
    orc = oracles[subject]
    n, c = true_2ch(orc)
    con = Console(card_id, subject, seed)
    con.type_plane("cine_2ch", n, c + (mm - 1.0 if inside else mm + 1.0) * n)
    con.acquire("cine_2ch")
    v = con.verdict(orc)
    assert (v.outcome == "PASS") is inside, (v.reason, v.details["2ch"])


# ---- the pair: the 4ch is judged on the agent's own acquired 2ch, and only after it ----------------------
def _pair_start(card_id: str, subject: str, seed: int) -> Console:
    con = Console(card_id, subject, seed)
    if REGISTRY[card_id].kind == "lax_from_scratch":
        con.acquire("localizer_3plane")
    return con


@pytest.mark.parametrize("card_id", PAIRS)
def test_a_4ch_on_an_imperfect_own_2ch_is_judged_on_that_2ch(card_id, oracles):
    """A 2ch off by 70 % of the tolerance about the long axis, then a 4ch at right angles to it, itself turned
    60 % of the tolerance the same way: 1.3 tolerances off the true 4ch (the old judgement failed it), within
    the goal's bound of the plane perpendicular to the acquired 2ch."""
    deg, _ = _tol(card_id)
    subject, seed = SAMPLE[2]
    orc = oracles[subject]
    n, c = true_2ch(orc)
    line = unit(orc.landmarks["lv_apex_epicardial"] - orc.landmarks["mitral_valve_centre"])
    con = _pair_start(card_id, subject, seed)
    con.type_plane("cine_2ch", turned(n, line, 0.7 * deg), c)
    con.acquire("cine_2ch")
    plan_literal_4ch(con, orc, turn_deg=0.6 * deg)
    con.acquire("cine_4ch")
    v = con.verdict(orc)
    assert v.outcome == "PASS", (v.reason, v.details)
    s4 = last_series(con.state(), "cine_4ch")
    true_err = np.degrees(np.arccos(min(1.0, abs(unit(s4["images"][0]["normal"])
                                                 @ unit(orc.reference_planes["4ch"]["normal"])))))
    assert true_err > deg, true_err  # what the old oracle measured: beyond the tolerance


@pytest.mark.parametrize("card_id", PAIRS)
def test_a_4ch_acquired_before_the_2ch_fails_the_goals_order(card_id, oracles):
    subject, seed = SAMPLE[0]
    orc = oracles[subject]
    n2, c = true_2ch(orc)
    con = _pair_start(card_id, subject, seed)
    con.type_plane("cine_4ch", orc.reference_planes["4ch"]["normal"], c)
    con.acquire("cine_4ch")
    con.type_plane("cine_2ch", n2, c)
    con.acquire("cine_2ch")
    v = con.verdict(orc)
    assert v.outcome != "PASS" and v.details["checks"]["4ch_planned_on_acquired_2ch"] is False, v.details["checks"]


# ---- short-axis stack -------------------------------------------------------------------------------------
def _sax(subject: str, seed: int, first_slice_mm: float, thickness: float | None = None,
         gap: float | None = None) -> tuple[Console, dict]:
    """The stack perpendicular to the long axis, its first slice centred `first_slice_mm` from the mitral valve
    centre (negative: atrial), enough slices of the row's thickness and gap to pass the apex."""
    orc = load_oracle(subject)
    con = Console("L5_sax_stack", subject, seed)
    base, apex = orc.lv_long_axis
    axis, length = unit(apex - base), float(np.linalg.norm(apex - base))
    if thickness is not None:
        con.set("cine_sax", "thickness_mm", thickness)
    if gap is not None:
        con.set("cine_sax", "gap_mm", gap)
    p = con.row("cine_sax")["params"]
    t, g = p["thickness_mm"], p["gap_mm"]
    n = int(np.ceil((length + 4.0 - first_slice_mm + t / 2.0 + g) / (t + g)))
    con.set("cine_sax", "n_slices", n)
    centre = base + axis * (first_slice_mm + (n - 1) * (t + g) / 2.0)
    con.type_plane("cine_sax", axis, centre)
    con.acquire("cine_sax")
    return con, con.verdict(orc)


@pytest.mark.parametrize("first_mm, passes", [(0.0, True), (-(SAX_MAX_BASAL_ATRIAL_MM - 0.5), True),
                                              (-(SAX_MAX_BASAL_ATRIAL_MM + 0.5), False), (-9.5, False)])
def test_sax_first_slice_at_the_base_passes_and_in_the_atrium_fails(first_mm, passes, subject_cache):
    """-9.5 mm: the issue's first slice spanning -13.5..-5.5 mm, wholly atrial, which passed before."""
    _, v = _sax("s17", 1, first_mm)
    assert (v.outcome == "PASS") is passes, (v.reason, v.details["sax"])
    assert v.details["checks"]["basal_slice_not_in_atrium"] is passes
    assert v.details["checks"]["lv_coverage"]  # coverage is not what decides


@pytest.mark.parametrize("change", ({"thickness": 10.0}, {"gap": 0.0}))
def test_sax_with_the_thickness_or_gap_changed_fails(change, subject_cache):
    _, v = _sax("s06", 0, 0.0, **change)
    assert v.outcome != "PASS" and v.details["checks"]["thickness_and_gap_kept"] is False, v.details


def test_changing_only_the_thickness_is_no_sax_planning(subject_cache):
    con = Console("L5_sax_stack", "s28", 2)
    con.set("cine_sax", "thickness_mm", 10.0)
    con.acquire("cine_sax")
    v = con.verdict(load_oracle("s28"))
    assert v.stages["stack_planned"] is False and v.outcome != "PASS", (v.stages, v.details)


# ---- shim box ---------------------------------------------------------------------------------------------
def _shim(subject: str, seed: int, margin_mm: float, move_slices: dict | None = None):
    """The box on the row's axes around the heart's voxels (voxel edges) with `margin_mm` on every face."""
    orc = load_oracle(subject)
    con = Console("L4_heart_shim_box", subject, seed)
    con.row("cine_sax")
    for name, value in (move_slices or {}).items():
        con.set("cine_sax", name, value)
    pose = con.m.open_row.params.pose()
    axes = np.stack([pose.u, pose.v, pose.normal])
    pts = orc.organ_voxels_mm("heart") @ axes.T
    lo, hi = pts.min(axis=0) - 1.0 - margin_mm, pts.max(axis=0) + 1.0 + margin_mm
    con.m.set_shim_centre((lo + hi) / 2.0 @ axes)
    con.m.set_shim_size(tuple(hi - lo))
    con.acquire("cine_sax")
    return con.verdict(orc)


def test_a_shim_box_with_a_centimetre_around_the_heart_passes(subject_cache):
    v = _shim("s17", 1, 10.0)
    assert v.outcome == "PASS", (v.reason, v.details)


# (field, how its value moves from the start's): the group shifted 5 mm F/H, two more slices, thinner slices,
# the group tilted 5 deg
MOVES = (("pos_fh_mm", lambda p, iso: p["centre_mm"][2] - iso[2] + 5.0), ("n_slices", lambda p, iso: p["n_slices"] + 2),
         ("thickness_mm", lambda p, iso: p["thickness_mm"] - 2.0), ("tilt_b_deg", lambda p, iso: p["tilt_b_deg"] + 5.0))


@pytest.mark.parametrize("name, value", MOVES, ids=[m[0] for m in MOVES])
def test_a_shim_box_with_the_slices_changed_fails(name, value, subject_cache):
    """"Do not change the slices": before, any of these passed (nothing compared the slices with the start)."""
    con = Console("L4_heart_shim_box", "s06", 0)
    v = _shim("s06", 0, 10.0, {name: value(con.row("cine_sax")["params"], con.state()["isocentre_mm"])})
    assert v.outcome != "PASS" and v.details["checks"]["slices_unchanged"] is False, (v.reason, v.details)


def test_a_shim_box_just_over_the_stated_volume_fails(subject_cache):
    """The margin at which the box holds 8.2 x the heart's volume: too much lung and liver, by the goal's number."""
    orc = load_oracle("s28")
    heart_ml = orc.organ_volume_ml("heart")
    con = Console("L4_heart_shim_box", "s28", 2)
    con.row("cine_sax")
    pose = con.m.open_row.params.pose()
    axes = np.stack([pose.u, pose.v, pose.normal])
    pts = orc.organ_voxels_mm("heart") @ axes.T
    ext = pts.max(axis=0) - pts.min(axis=0) + 2.0
    margins = np.linspace(0.0, 40.0, 4001)
    ratios = np.array([np.prod(ext + 2 * m) / 1000.0 / heart_ml for m in margins])
    over = float(margins[np.argmax(ratios > SHIM_MAX_VOLUME_RATIO * 1.025)])
    under = float(margins[np.argmax(ratios > SHIM_MAX_VOLUME_RATIO * 0.975)])
    assert _shim("s28", 2, under).outcome == "PASS"
    v = _shim("s28", 2, over)
    assert v.outcome != "PASS" and v.details["checks"]["box_not_excessive"] is False, v.details["shim"]
