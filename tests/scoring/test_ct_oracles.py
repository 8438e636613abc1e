"""CT oracles on synthetic state dumps (no display): right anatomy passes, wrong anatomy does not."""
from __future__ import annotations

import numpy as np
import pytest

from rendering import ct_contrast
from tasks.card import load_card
from scoring.oracles import get_oracle
from scoring.oracles import ct as O
from scoring.subject_oracle import load_oracle

SHIFT = 12.0  # table z = subject z + SHIFT


@pytest.fixture(scope="module")
def orc():
    return load_oracle("dev")


def tz(z: float) -> float:
    return round(z + SHIFT, 1)


def series(uid, start_sub, end_sub, y_iso=-107.0, prior=False, protocol="chest_routine", **kw):
    d = {"uid": uid, "protocol": protocol, "start_mm": tz(start_sub), "end_mm": tz(end_sub),
         "subject_z_top": start_sub, "subject_z_bottom": end_sub, "table_height_mm": y_iso + 270,
         "y_iso_subject": y_iso, "kv": 120.0, "mas": 100.0, "pitch": 1.0, "slice_mm": 5.0, "t_start": 20.0,
         "t_end": 30.0, "ctdi_vol_mgy": 7.0, "dlp_mgycm": 7.0 * (start_sub - end_sub) / 10, "effective_msv": 3.0,
         "n_images": 50, "noise_hu": 10.0, "prior": prior, "t_injection": None}
    d.update(kw)
    return d


def workflow_events(protocol, extra_before_confirm=(), extra_after_confirm=(), scans=(1,), review=True):
    ev = [{"t": 0, "event": "protocol_loaded", "protocol": protocol}, {"t": 1, "event": "scout_acquired"},
          {"t": 2, "event": "range_changed"}]
    ev += [{"t": 3, "event": e} for e in extra_before_confirm]
    ev.append({"t": 4, "event": "plan_confirmed"})
    ev += [{"t": 5, "event": e} for e in extra_after_confirm]
    for uid in scans:
        ev += [{"t": 6, "event": "scan_started"}, {"t": 9, "event": "scan_completed", "series": uid}]
    if review:
        ev.append({"t": 10, "event": "recon_opened", "series": scans[-1] if scans else None})
    return ev


def state(task, series_list, events, **extra):
    s = {"modality": "ct", "task": task, "subject": "dev", "seed": 0,
         "frame": {"laser_z_subject_mm": 0.0, "patient_shift_mm": SHIFT, "iso_height_mm": 270.0},
         "params": {"kv": 120.0, "mas": 100.0, "pitch": 1.0, "rotation_s": 0.5, "collimation_mm": 40.0},
         "dose": {"ctdi_limit_mgy": None}, "bolus": {}, "heart_rate_bpm": 70, "series": series_list,
         "events": events}
    s.update(extra)
    return s


def score(task, st, orc):
    card = load_card(task)
    return get_oracle(card.oracle)(st, orc, card)


def extent(orc, *organs):
    return O.organs_extent(orc, organs)


def body_y(orc, *organs):
    return O.mean_body_centre_y(orc, *extent(orc, *organs))


# ---- coverage + isocentre ----------------------------------------------------------------------
@pytest.mark.parametrize("task,organ,protocol", [("ct_lung_coverage_isocenter", "lungs", "chest_routine"),
                                                 ("ct_liver_coverage_isocenter", "liver", "abdomen_liver")])
def test_good_plan_passes_and_careless_plans_do_not(orc, task, organ, protocol):
    zmin, zmax = extent(orc, organ)
    y = body_y(orc, organ)
    ev = workflow_events(protocol, ["table_height_changed"])
    good = score(task, state(task, [series(1, zmax + 10, zmin - 10, y, protocol=protocol)], ev), orc)
    assert good.outcome == "PASS", good.reason
    assert good.sr == 1.0 and good.pr == 1.0 and good.aq > 90
    assert good.details["isocentre_error_mm"] < 1 and good.details["coverage"][organ] == 1.0

    # misses the inferior 40 mm of the organ: full workflow (PR 1) but poor quality (AQ low)
    short = score(task, state(task, [series(1, zmax + 10, zmin + 40, y, protocol=protocol)], ev), orc)
    assert short.outcome == "PARTIAL" and short.sr == 0.0 and short.pr == 1.0
    assert not short.details["checks"]["ends_covered"] and short.aq < good.aq - 20

    off = score(task, state(task, [series(1, zmax + 10, zmin - 10, y + 30, protocol=protocol)], ev), orc)
    assert off.outcome == "PARTIAL" and not off.details["checks"]["isocentre"]
    assert off.details["isocentre_error_mm"] == pytest.approx(30, abs=0.2)

    long_ = score(task, state(task, [series(1, zmax + 90, zmin - 10, y, protocol=protocol)], ev), orc)
    assert long_.outcome == "PARTIAL" and not long_.details["checks"]["excess"]

    wrong_protocol = score(task, state(task, [series(1, zmax + 10, zmin - 10, y, protocol="renal")], ev), orc)
    assert wrong_protocol.outcome == "FAIL"
    noop = score(task, state(task, [], []), orc)
    assert noop.outcome == "FAIL" and noop.pr == 0.0 and noop.aq == 0.0


def test_routine_chest_covers_the_lungs_without_scanning_far_beyond_them(orc):
    """The routine chest task: lung coverage >= 95 % and, as its goal says, at most the lung card's 20 mm
    beyond either end (issue 21: an over-long range typed from memory must not pass)."""
    task = "ct_ui_smoke_routine"
    zmin, zmax = extent(orc, "lungs")
    ev = workflow_events("chest_routine")
    good = score(task, state(task, [series(1, zmax + 10, zmin - 10)], ev), orc)
    assert good.outcome == "PASS", good.reason
    for top, bottom in ((zmax + 30, zmin - 10), (zmax + 10, zmin - 30)):
        long_ = score(task, state(task, [series(1, top, bottom)], ev), orc)
        assert long_.outcome == "PARTIAL" and long_.sr == 0.0 and "beyond the lungs" in long_.reason
        assert long_.details["threshold_max_excess_mm"] == 20.0


def test_renal_needs_both_kidneys(orc):
    task = "ct_renal_bilateral_coverage"
    ev = workflow_events("renal")
    zmin, zmax = extent(orc, "kidney_left", "kidney_right")
    ok = score(task, state(task, [series(1, zmax + 10, zmin - 10, protocol="renal")], ev), orc)
    assert ok.outcome == "PASS", ok.reason
    # stop at the lower pole of the higher kidney: the lower kidney's pole is missed
    lo_l = orc.organ_z_extent("kidney_left")[0]
    lo_r = orc.organ_z_extent("kidney_right")[0]
    bad = score(task, state(task, [series(1, zmax + 10, max(lo_l, lo_r) + 2, protocol="renal")], ev), orc)
    assert bad.outcome == "PARTIAL" and min(bad.details["coverage"].values()) < O.COVERAGE_MIN


# ---- CCTA --------------------------------------------------------------------------------------
def _aorta_roi(orc, z_sub):
    rt = orc.runtime
    k = int(round((z_sub - rt.origin_mm[2]) / rt.spacing_mm[2]))
    j, i = np.nonzero(orc.organ_mask("aorta_descending")[k])
    return [float(rt.origin_mm[0] + 2 * i.mean()), float(rt.origin_mm[1] + 2 * j.mean())]


def _ccta_state(orc, t_since_injection, roi=None, injected=True):
    task = "ccta_heart_coverage_isocenter"
    zmin, zmax = extent(orc, "heart")
    z_mon = zmax - 12
    roi = roi if roi is not None else _aorta_roi(orc, z_mon)
    t_inj = 10.0
    s = series(1, zmax + 10, zmin - 10, float(orc.organ_centroid("heart")[1]), protocol="ccta", pitch=0.25,
               t_start=t_inj + t_since_injection, t_injection=t_inj if injected else None)
    ev = workflow_events("ccta", ["table_height_changed"], ["roi_placed"] + (["injection_started"] if injected else []))
    st = state(task, [s], ev, bolus={"roi": roi, "monitor_z_mm": tz(z_mon), "roi_radius_mm": 5.0})
    st["params"].update(pitch=0.25, rotation_s=0.28)
    return task, st


def test_ccta_at_peak_passes_early_or_unenhanced_or_roi_outside_fails(orc):
    cp = ct_contrast.contrast_params("dev", 0, 70)
    peak = cp.t0_s + 3 * cp.beta_s + ct_contrast.INJECTION_S / 2
    task, st = _ccta_state(orc, peak - 3)
    ok = score(task, st, orc)
    assert ok.outcome == "PASS", ok.reason
    assert ok.details["aorta_hu_at_scan_start"] >= O.CCTA_MIN_AORTA_HU and ok.details["roi_centre_in_aorta"]

    task, st = _ccta_state(orc, 6.0)  # scanned before the bolus arrived
    early = score(task, st, orc)
    assert early.outcome == "PARTIAL" and not early.details["checks"]["bolus_timing"]
    assert early.details["aorta_hu_at_scan_start"] < 150 and early.pr == 1.0 and early.aq < 30

    task, st = _ccta_state(orc, peak - 3, injected=False)
    assert not score(task, st, orc).details["checks"]["bolus_timing"]

    task, st = _ccta_state(orc, peak - 3, roi=[0.0, -30.0])  # anterior mediastinal fat, not the aorta
    r = score(task, st, orc)
    assert r.outcome == "PARTIAL" and not r.details["checks"]["roi_in_aorta"]


# ---- KUB ---------------------------------------------------------------------------------------
def test_kub_over_the_dose_limit_or_too_noisy_does_not_pass(orc):
    task = "ct_kub_low_dose_constraint"
    zmin, zmax = extent(orc, "kidney_left", "kidney_right", "bladder")
    ev = workflow_events("kub_low_dose", ["param_changed"])
    mk = lambda mas, noise: state(task, [series(1, zmax + 15, zmin - 10, protocol="kub_low_dose", mas=mas,  # noqa: E731
                                                noise_hu=noise)], ev, dose={"ctdi_limit_mgy": 5.0})
    ok = score(task, mk(70.0, 15.0), orc)  # 0.07 * 70 = 4.9 mGy
    assert ok.outcome == "PASS", ok.reason
    over = score(task, mk(120.0, 11.0), orc)  # 8.4 mGy
    assert over.outcome == "PARTIAL" and not over.details["checks"]["dose_limit"]
    assert over.details["ctdi_vol_mgy"] == pytest.approx(8.4)
    noisy = score(task, mk(10.0, 60.0), orc)
    assert noisy.outcome == "PARTIAL" and not noisy.details["checks"]["noise"]
    no_bladder = score(task, state(task, [series(1, zmax + 15, orc.organ_z_extent("bladder")[1] - 5,
                                                 protocol="kub_low_dose", mas=70.0)], ev,
                                   dose={"ctdi_limit_mgy": 5.0}), orc)
    assert no_bladder.outcome == "PARTIAL" and no_bladder.details["coverage"]["bladder"] < 0.5


# ---- recovery ----------------------------------------------------------------------------------
def _recovery(orc, task, organs, protocol, clip_end, new_ranges, review=True):
    zmin, zmax = extent(orc, *organs)
    prior = (zmax - 45, zmin - 10) if clip_end == "top" else (zmax + 10, zmin + 45)
    ser = [series(1, *prior, prior=True, protocol=protocol)]
    ev = [{"t": -60, "event": "prior_series_loaded", "series": 1}]
    if review:
        ev.append({"t": 1, "event": "recon_opened", "series": 1})
    ev += [{"t": 2, "event": "range_changed"}, {"t": 3, "event": "plan_confirmed"}]
    for n, (a, b) in enumerate(new_ranges, start=2):
        ser.append(series(n, a, b, protocol=protocol))
        ev += [{"t": 4, "event": "scan_started"}, {"t": 8, "event": "scan_completed", "series": n}]
    if new_ranges:
        ev.append({"t": 9, "event": "recon_opened", "series": len(new_ranges) + 1})
    return score(task, state(task, ser, ev), orc), (zmin, zmax, prior)


@pytest.mark.parametrize("task,organs,protocol", [
    ("ct_undercoverage_recovery", ("lungs",), "chest_routine"),
    ("ct_renal_undercoverage_recovery", ("kidney_left", "kidney_right"), "renal")])
@pytest.mark.parametrize("clip_end", ["top", "bottom"])
def test_recovery_extends_the_clipped_end_only(orc, task, organs, protocol, clip_end):
    zmin, zmax = extent(orc, *organs)
    if clip_end == "top":
        right, wrong = (zmax + 10, zmax - 50), (zmin + 5, zmin - 60)
    else:
        right, wrong = (zmin + 50, zmin - 10), (zmax + 60, zmax - 5)
    ok, _ = _recovery(orc, task, organs, protocol, clip_end, [right])
    assert ok.outcome == "PASS", ok.reason
    assert ok.details["clipped_end"] == clip_end and ok.details["extended_ends"] == [clip_end]
    bad, _ = _recovery(orc, task, organs, protocol, clip_end, [wrong])
    assert bad.outcome == "PARTIAL" and not bad.details["checks"]["extended_clipped_end"]
    assert not bad.details["checks"]["ends_covered"]
    full, _ = _recovery(orc, task, organs, protocol, clip_end, [(zmax + 10, zmin - 10)])
    assert full.outcome == "PARTIAL" and not full.details["checks"]["extra_dose_bounded"]
    unreviewed, _ = _recovery(orc, task, organs, protocol, clip_end, [right], review=False)
    assert unreviewed.outcome == "PARTIAL" and not unreviewed.stages["prior_reviewed"]
    nothing, _ = _recovery(orc, task, organs, protocol, clip_end, [])
    assert nothing.outcome == "FAIL"


def test_ordered_stages_order_and_a_confirmed_default_range_counts_as_planned():
    from scoring.oracles.ct import PLAN_CONFIRMED, RANGE_PLANNED, ordered_stages

    scout = ("scout", lambda e: e["event"] == "scout_acquired")
    scan = ("scan", lambda e: e["event"] == "scan_completed")
    accepted = [{"event": "scout_acquired"}, {"event": "plan_confirmed"}, {"event": "scan_completed"}]
    assert ordered_stages(accepted, [scout, RANGE_PLANNED, PLAN_CONFIRMED, scan]) == {
        "scout": True, "range_planned": True, "plan_confirmed": True, "scan": True}
    edited = [{"event": "scout_acquired"}, {"event": "range_changed"}, {"event": "plan_confirmed"},
              {"event": "scan_completed"}]
    assert all(ordered_stages(edited, [scout, RANGE_PLANNED, PLAN_CONFIRMED, scan]).values())
    # confirming before the scout does not plan anything, and later stages fall with it
    early = [{"event": "plan_confirmed"}, {"event": "scout_acquired"}, {"event": "scan_completed"}]
    st = ordered_stages(early, [scout, RANGE_PLANNED, PLAN_CONFIRMED, scan])
    assert st == {"scout": True, "range_planned": False, "plan_confirmed": False, "scan": False}
