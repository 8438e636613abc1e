"""CT goals against their oracles (issue 32), on cohort subjects, with states built by hand from the anatomy.

Every state here is written from the subject oracle's organ extents and masks and the goal's words, never
from the reference solver (nothing from runner/ is imported: `test_nothing_from_runner_is_imported` checks).
For each CT card: doing literally what the goal says (its landmarks, each stated margin at its edge minus a
little) passes; the same just outside a stated bound fails; and each CT case of issue 32's "Why" is flipped.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from rendering import ct_contrast
from rendering.geometry import helical_time_at
from scoring.oracles import ct as O
from scoring.registry.ct import REGISTRY
from scoring.subject_oracle import load_oracle
from tasks.card import load_card
from tests.scoring.test_ct_oracles import score, series, state, tz, workflow_events

# subjects at the cohort's extremes for the CCTA landmarks (carina 19/17 mm above the heart top in s09/s15,
# 17/11 mm below it in s03/s26) and two ordinary ones; a few seeds for the contrast timing
SUBJECTS = ["s03", "s09", "s15", "s26", "s12"]
LITTLE = 2.0  # "at the stated edge minus a little" (mm)
OUTSIDE = 3.0  # "just outside a stated bound" (mm)

# What each goal states, read as a technologist reads it: (card, protocol, excess per end in mm, isocentre
# tolerance in mm or None). test_stated_numbers_are_the_registry_s ties them to the registry and the goal.
COVERAGE_CARDS = [("ct_lung_coverage_isocenter", "chest_routine", 20.0, 15.0),
                  ("ct_liver_coverage_isocenter", "abdomen_liver", 20.0, 15.0),
                  ("ct_renal_bilateral_coverage", "renal", 20.0, None),
                  ("ccta_heart_coverage_isocenter", "ccta", 30.0, 20.0),
                  ("ct_kub_low_dose_constraint", "kub_low_dose", 20.0, None)]
STATED_KUB_NOISE_HU = 35.0
STATED_CCTA_AORTA_HU = 250.0
STATED_RECOVERY_EXCESS_MM = STATED_RECOVERY_OVERLAP_MM = 20.0
KUB_LIMIT_MGY = 5.0  # a hand-set size-specific limit; 0.07 mGy per mAs at 120 kV, pitch 1 (test_ct_oracles)


@pytest.fixture(scope="module")
def oracles(subject_cache):
    return {s: load_oracle(s) for s in SUBJECTS}


def _cm(mm: float) -> str:
    return f"{mm / 10:g} cm"


@pytest.mark.parametrize("task,protocol,excess,iso_tol", COVERAGE_CARDS + [("ct_ui_smoke_routine", "", 20.0, None)])
def test_stated_numbers_are_the_registry_s(task, protocol, excess, iso_tol):
    """The numbers this file plans with are those the goal states and the oracle uses."""
    goal, entry = load_card(task).goal, REGISTRY[task]
    assert entry.max_excess_mm == excess and f"more than {_cm(excess)} beyond" in goal
    if iso_tol is not None:
        assert entry.isocentre_tol_mm == iso_tol and f"within {_cm(iso_tol)}" in goal
    if entry.dose_limit:
        assert O.KUB_MAX_NOISE_HU == STATED_KUB_NOISE_HU and f"below {STATED_KUB_NOISE_HU:g} HU" in goal
    if entry.bolus_tracking:
        assert O.CCTA_MIN_AORTA_HU == STATED_CCTA_AORTA_HU and f"{STATED_CCTA_AORTA_HU:g} HU or more" in goal
        assert "descending aorta" in goal and O.CCTA_ROI_ORGAN == "aorta_descending"


@pytest.mark.parametrize("task", ["ct_undercoverage_recovery", "ct_renal_undercoverage_recovery"])
def test_recovery_goals_state_their_bounds(task):
    goal, entry = load_card(task).goal, REGISTRY[task]
    assert entry.max_excess_mm == STATED_RECOVERY_EXCESS_MM and O.RECOVERY_MAX_OVERLAP_MM == STATED_RECOVERY_OVERLAP_MM
    assert re.search(r"no more than 2 cm beyond the (end of the lungs|missed pole)", goal)
    assert "no more than 2 cm of overlap" in goal


# ---- states built by hand ----------------------------------------------------------------------------
def _scan(orc, task: str, protocol: str, top: float, bottom: float, y_iso: float, **kw):
    """One scan of subject z [bottom, top] after the goal's workflow, with the card's own extra stages."""
    entry = REGISTRY[task]
    before = ["table_height_changed"] if entry.isocentre else []
    before += ["param_changed"] if entry.dose_limit else []
    after = ["roi_placed", "injection_started"] if entry.bolus_tracking else []
    ev = workflow_events(protocol or entry.protocol, before, after)
    extra = {"subject": orc.id}
    if entry.dose_limit:
        extra["dose"] = {"ctdi_limit_mgy": KUB_LIMIT_MGY}
        kw = {"mas": 70.0, "noise_hu": 20.0, **kw}
    if entry.bolus_tracking:
        kw = {"pitch": 0.25, **kw}
    st = state(task, [series(1, top, bottom, y_iso, protocol=entry.protocol, **kw)], ev, **extra)
    return st


def _iso_target(orc, task: str) -> float:
    t = O.isocentre_target_y(orc, REGISTRY[task])
    return 0.0 if t is None else t


def _monitor_k(orc, z_sub: float) -> int:
    rt = orc.runtime
    return int(np.clip(np.rint((z_sub - rt.origin_mm[2]) / rt.spacing_mm[2]), 0, rt.shape[0] - 1))


def _centroid_xy(orc, organ: str, z_sub: float) -> list[float]:
    """Centre (subject x, y mm) of an organ's section at z: where a click "inside" it lands."""
    rt = orc.runtime
    j, i = np.nonzero(orc.organ_mask(organ)[_monitor_k(orc, z_sub)])
    assert i.size, f"{orc.id}: no {organ} at z {z_sub}"
    return [float(rt.origin_mm[0] + rt.spacing_mm[0] * i.mean()), float(rt.origin_mm[1] + rt.spacing_mm[1] * j.mean())]


def _peak_scan_start(st: dict, orc, s: dict) -> tuple[float, float]:
    """(first, last) scan start after the injection (s) at which the descending aorta is >= 250 HU at the
    first and the last image: the window a threshold and delay "for peak arterial enhancement" must hit."""
    rt = orc.runtime
    lab = rt.label_id("aorta_descending")
    base, enh = float(rt.ct_hu_lut()[lab]), float(rt.hu_enhancement_lut()[lab])
    cp = ct_contrast.contrast_params(orc.id, int(st["seed"]), float(st["heart_rate_bpm"]))
    dur = helical_time_at(s["end_mm"], s["start_mm"], 0.0, s["pitch"], 40.0, st["params"]["rotation_s"])
    ok = [t for t in np.arange(0.0, 60.0, 0.1)
          if min(ct_contrast.arterial_hu(cp, t, base, enh), ct_contrast.arterial_hu(cp, t + dur, base, enh))
          >= STATED_CCTA_AORTA_HU]
    assert ok, f"{orc.id}: the aorta never stays >= 250 HU over a scan"
    return float(ok[0]), float(ok[-1])


def _ccta(orc, top: float, bottom: float, y_iso: float, roi_organ: str = "aorta_descending", seed: int = 0,
          t_since: float | None = None, roi_z: float | None = None):
    """The CCTA goal's state: monitoring slice about 2.5 cm below the heart top, ROI clicked at the centre of
    the named vessel there, scan started inside the >= 250 HU window (or at t_since)."""
    task = "ccta_heart_coverage_isocenter"
    st = _scan(orc, task, "ccta", top, bottom, y_iso)
    st["seed"] = seed
    st["params"].update(pitch=0.25, rotation_s=0.28)
    hz1 = orc.organ_z_extent("heart")[1]
    z_mon = hz1 - 25.0 if roi_z is None else roi_z
    st["bolus"] = {"roi": _centroid_xy(orc, roi_organ, z_mon), "monitor_z_mm": tz(z_mon), "roi_radius_mm": 5.0}
    s = st["series"][0]
    if t_since is None:
        first, last = _peak_scan_start(st, orc, s)
        t_since = 0.5 * (first + last)
    s.update(t_injection=10.0, t_start=10.0 + t_since)
    return task, st


# ---- coverage / isocentre cards: literal goal passes, just outside fails ----------------------------------
@pytest.mark.parametrize("subject", SUBJECTS)
@pytest.mark.parametrize("task,protocol,excess,iso_tol", COVERAGE_CARDS)
def test_coverage_goal_at_its_stated_edges_passes_and_just_outside_fails(oracles, subject, task, protocol, excess,
                                                                        iso_tol):
    orc = oracles[subject]
    zmin, zmax = O.organs_extent(orc, REGISTRY[task].organs)
    y = _iso_target(orc, task)
    edge, out = excess - LITTLE, excess + OUTSIDE

    def run(top, bottom, dy=0.0):
        if REGISTRY[task].bolus_tracking:
            return score(*_ccta(orc, top, bottom, y + dy), orc)
        return score(task, _scan(orc, task, protocol, top, bottom, y + dy), orc)

    literal = run(zmax + edge, zmin - edge, (iso_tol - LITTLE) if iso_tol else 0.0)
    assert literal.outcome == "PASS", (subject, literal.reason, literal.details)
    assert not run(zmax + out, zmin - 10).details["checks"]["excess"]
    assert not run(zmax + 10, zmin - out).details["checks"]["excess"]
    short = run(zmax - 10, zmin - 10)  # stops 1 cm short of the organ's top
    assert short.outcome == "PARTIAL" and not short.details["checks"]["ends_covered"]
    if iso_tol:
        for sign in (1, -1):
            off = run(zmax + 10, zmin - 10, sign * (iso_tol + OUTSIDE))
            assert off.outcome == "PARTIAL" and not off.details["checks"]["isocentre"], (subject, sign)


def test_liver_margin_of_4_cm_no_longer_passes(oracles):
    """Issue 32: "a small margin but no more" accepted 40 mm per end; the goal now says 2 cm."""
    for subject, orc in oracles.items():
        zmin, zmax = orc.organ_z_extent("liver")
        task = "ct_liver_coverage_isocenter"
        r = score(task, _scan(orc, task, "abdomen_liver", zmax + 38, zmin - 10, _iso_target(orc, task)), orc)
        assert r.outcome == "PARTIAL" and not r.details["checks"]["excess"], subject


# ---- routine chest ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("subject", SUBJECTS)
def test_routine_chest_must_reach_apices_and_bases(oracles, subject):
    """Issue 32: 70 mm of lung base (or 40 mm of apex) missing passed on voxel coverage alone; now it fails,
    and a range at the goal's 2 cm edge passes."""
    task, orc = "ct_ui_smoke_routine", oracles[subject]
    zmin, zmax = orc.organ_z_extent("lungs")
    run = lambda top, bottom: score(task, _scan(orc, task, "chest_routine", top, bottom, -107.0), orc)  # noqa: E731
    literal = run(zmax + 20 - LITTLE, zmin - 20 + LITTLE)
    assert literal.outcome == "PASS", literal.reason
    for top, bottom, what in ((zmax + 10, zmin + 70, "base"), (zmax - 40, zmin - 10, "apex"),
                              (zmax + 10, zmin + 10, "base")):
        r = run(top, bottom)
        assert r.outcome == "PARTIAL" and r.sr == 0.0 and "apices to bases" in r.reason, (what, r.details)
        assert max(r.details["missed_end_mm"].values()) > O.END_TOLERANCE_MM
    assert run(zmax + 20 + OUTSIDE, zmin - 10).outcome == "PARTIAL"
    assert run(zmax + 10, zmin - 20 - OUTSIDE).outcome == "PARTIAL"


# ---- CCTA --------------------------------------------------------------------------------------------
def _ccta_landmark_cases(orc) -> None:
    """A start anywhere from 1 mm to the stated 3 cm above the top of the heart passes; a start just above
    the coronary origins (the old goal's landmark) fails."""
    task = "ccta_heart_coverage_isocenter"
    hz0, hz1 = orc.organ_z_extent("heart")
    y = _iso_target(orc, task)
    for above in (1.0, 30.0 - LITTLE):
        r = score(*_ccta(orc, hz1 + above, hz0 - 10, y), orc)
        assert r.outcome == "PASS", (orc.id, above, r.reason)
    av = float(orc.landmarks["aortic_valve_centre"][2])
    assert score(*_ccta(orc, av + 5, hz0 - 10, y), orc).outcome == "PARTIAL", orc.id


@pytest.mark.parametrize("subject", SUBJECTS)
def test_ccta_start_at_the_goal_s_landmark_passes(oracles, subject):
    """Issue 32: the old landmark failed (a start at the carina in 13/31 subjects, just above the coronary
    origins in all). Here s03 and s26 have the carina 17 and 11 mm below the heart top, s09 and s15 19 and
    17 mm above it: the goal's "about 1 cm above the top of the heart" passes on each, the carina does not
    where it lies below the heart top; nor does an end 1 cm below the apex where the heart reaches lower."""
    orc = oracles[subject]
    _ccta_landmark_cases(orc)
    hz0, hz1 = orc.organ_z_extent("heart")
    carina = float(orc.landmarks["carina"][2])
    y = _iso_target(orc, "ccta_heart_coverage_isocenter")
    r = score(*_ccta(orc, hz1 + 10, hz0 - 10, y), orc)
    assert r.outcome == "PASS", r.reason
    if carina < hz1 - O.END_TOLERANCE_MM:
        assert score(*_ccta(orc, carina, hz0 - 10, y), orc).outcome == "PARTIAL"
    # the old goal's end "just below the cardiac apex": the apex lies 7-31 mm above the heart's lowest slice
    apex = float(orc.landmarks["heart_apex"][2])
    if apex - 10 > hz0 + O.END_TOLERANCE_MM:
        assert score(*_ccta(orc, hz1 + 10, apex - 10, y), orc).outcome == "PARTIAL"


@pytest.mark.cohort_sweep
@pytest.mark.parametrize("subject", [f"s{i:02d}" for i in range(1, 31)])
def test_ccta_start_at_the_goal_s_landmark_passes_on_every_cohort_subject(subject_cache, subject):
    """The same on the whole cohort (the release lane: 30 subjects' masks)."""
    _ccta_landmark_cases(load_oracle(subject))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_ccta_roi_must_be_in_the_descending_aorta(oracles, subject):
    """Issue 32: a click inside the ascending aorta (or the arch) passed on the whole-aorta label."""
    orc = oracles[subject]
    hz0, hz1 = orc.organ_z_extent("heart")
    y = _iso_target(orc, "ccta_heart_coverage_isocenter")
    good = score(*_ccta(orc, hz1 + 10, hz0 - 10, y), orc)
    assert good.outcome == "PASS" and good.details["roi_centre_in_aorta"], good.reason
    asc = score(*_ccta(orc, hz1 + 10, hz0 - 10, y, roi_organ="aorta_ascending"), orc)
    assert asc.outcome == "PARTIAL" and not asc.details["checks"]["roi_in_aorta"]
    z_arch = orc.organ_z_extent("aorta_arch")[1] - 4.0  # near the arch's top: no descending aorta beside it
    arch = score(*_ccta(orc, hz1 + 10, hz0 - 10, y, roi_organ="aorta_arch", roi_z=z_arch), orc)
    assert arch.outcome == "PARTIAL" and not arch.details["checks"]["roi_in_aorta"]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("subject", SUBJECTS[:3])
def test_ccta_scan_inside_the_250_hu_window_passes_just_before_it_fails(oracles, subject, seed):
    orc = oracles[subject]
    hz0, hz1 = orc.organ_z_extent("heart")
    y = _iso_target(orc, "ccta_heart_coverage_isocenter")
    task, st = _ccta(orc, hz1 + 10, hz0 - 10, y, seed=seed)
    first, last = _peak_scan_start(st, orc, st["series"][0])
    inside = score(*_ccta(orc, hz1 + 10, hz0 - 10, y, seed=seed, t_since=first + 0.3), orc)
    assert inside.outcome == "PASS", inside.reason
    assert min(inside.details["aorta_hu_at_scan_start"], inside.details["aorta_hu_at_scan_end"]) >= 250
    for t in (first - 0.5, last + 0.5):
        r = score(*_ccta(orc, hz1 + 10, hz0 - 10, y, seed=seed, t_since=t), orc)
        assert r.outcome == "PARTIAL" and not r.details["checks"]["bolus_timing"], t


# ---- KUB ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("subject", SUBJECTS[:3])
def test_kub_noise_just_below_the_stated_ceiling_passes_just_above_fails(oracles, subject):
    task, orc = "ct_kub_low_dose_constraint", oracles[subject]
    zmin, zmax = O.organs_extent(orc, REGISTRY[task].organs)
    run = lambda mas, noise: score(task, _scan(orc, task, "", zmax + 15, zmin - 10, 0.0, mas=mas,  # noqa: E731
                                               noise_hu=noise), orc)
    assert run(40.0, STATED_KUB_NOISE_HU - 0.5).outcome == "PASS"  # 2.8 mGy, well under the 5 mGy limit
    noisy = run(30.0, STATED_KUB_NOISE_HU + 0.5)
    assert noisy.outcome == "PARTIAL" and not noisy.details["checks"]["noise"]
    over = run(KUB_LIMIT_MGY / 0.07 + 2, 15.0)
    assert over.outcome == "PARTIAL" and not over.details["checks"]["dose_limit"]


# ---- recovery ----------------------------------------------------------------------------------------
def _recovery_state(orc, task: str, clip_end: str, clip_mm: float, new: tuple[float, float] | None):
    """A first series with `clip_mm` of one organ end missed (1 cm margin elsewhere, as the card's prior),
    reviewed, then one new range (subject z top, bottom)."""
    entry = REGISTRY[task]
    zmin, zmax = O.organs_extent(orc, entry.organs)
    prior = (zmax - clip_mm, zmin - 10) if clip_end == "top" else (zmax + 10, zmin + clip_mm)
    ser = [series(1, *prior, prior=True, protocol=entry.protocol)]
    ev = [{"t": -60, "event": "prior_series_loaded", "series": 1}, {"t": 1, "event": "recon_opened", "series": 1},
          {"t": 2, "event": "range_changed"}, {"t": 3, "event": "plan_confirmed"}]
    if new is not None:
        ser.append(series(2, *new, protocol=entry.protocol))
        ev += [{"t": 4, "event": "scan_started"}, {"t": 8, "event": "scan_completed", "series": 2},
               {"t": 9, "event": "recon_opened", "series": 2}]
    return score(task, state(task, ser, ev, subject=orc.id), orc), prior


@pytest.mark.parametrize("subject", SUBJECTS[1:4])
@pytest.mark.parametrize("clip_end", ["top", "bottom"])
@pytest.mark.parametrize("task,clip_mm", [("ct_undercoverage_recovery", 50.0),
                                          ("ct_renal_undercoverage_recovery", 35.0)])
def test_recovery_goal_at_its_stated_edges_passes_and_just_outside_fails(oracles, subject, clip_end, task, clip_mm):
    """From no more than 2 cm beyond the missed end to no more than 2 cm of overlap: at each edge minus a
    little it passes; 3 mm beyond either, or a 1 cm gap ("no gap"), fails; so does the 6 cm overlap that
    passed before issue 32."""
    orc = oracles[subject]
    zmin, zmax = O.organs_extent(orc, REGISTRY[task].organs)
    _, prior = _recovery_state(orc, task, clip_end, clip_mm, None)

    def new(excess: float, overlap: float) -> tuple[float, float]:  # (top, bottom) of the new range
        if clip_end == "top":
            return zmax + excess, prior[0] - overlap
        return prior[1] + overlap, zmin - excess

    ok, _ = _recovery_state(orc, task, clip_end, clip_mm, new(20 - LITTLE, 20 - LITTLE))
    assert ok.outcome == "PASS", ok.reason
    assert ok.details["overlap_mm"] == pytest.approx(20 - LITTLE, abs=0.05)
    small, _ = _recovery_state(orc, task, clip_end, clip_mm, new(10, 5))
    assert small.outcome == "PASS", small.reason
    for excess, overlap, check in ((20 + OUTSIDE, 5, "excess"), (10, 20 + OUTSIDE, "overlap"),
                                   (10, 60, "overlap"), (10, -10, "no_gap")):
        r, _ = _recovery_state(orc, task, clip_end, clip_mm, new(excess, overlap))
        assert r.outcome == "PARTIAL" and not r.details["checks"][check], (excess, overlap, check, r.details)


def test_nothing_from_runner_is_imported():
    """These states are built from the anatomy, not from the reference solver's episodes."""
    text = Path(__file__).read_text()
    assert not re.search(r"^\s*(from|import)\s+runner\b", text, re.M)
    assert not re.search(r"^\s*(from|import)\s+runner\b", (Path(__file__).parent / "test_ct_oracles.py").read_text(),
                         re.M)
