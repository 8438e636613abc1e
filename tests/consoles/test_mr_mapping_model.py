"""T1 (MOLLI) and T2 (T2-prep) mapping on the MR console model, without a display: acquisition of a mapping
row planned on the subject's short axis, the map's myocardial values, the recorded artefact causes of a
shim box off the heart and of a trigger window longer than the RR interval, the ROI tool, scan time,
conflicts vs warnings, the dump, determinism."""
from __future__ import annotations

import json

import numpy as np
import pytest

from consoles.common.model_base import ConsoleActionError
from consoles.mr import mapping
from consoles.mr.model import MRModel
from rendering import mr_mapping as mm
from rendering.geometry import PlanePose
from scoring.subject_oracle import load_oracle

TASK = "mr_mapping_test"


@pytest.fixture(scope="module")
def orc(subject_cache):
    return load_oracle("dev")


def _sax(orc) -> PlanePose:
    p = orc.reference_planes["sax"]
    return PlanePose.from_axes(p["centre"], p["row"], -p["col"])


def _model(orc, protocol: str = "t1_map_molli", seed: int = 0, params: dict | None = None) -> MRModel:
    """A localizer acquired before the session and one mapping row, open and planned on the short axis."""
    queue = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
             {"protocol": protocol, "params": dict(params or {})}]
    m = MRModel(orc.runtime, TASK, seed, {"queue": queue, "open": 2})
    m.set_pose(_sax(orc))
    return m


def _acquire(m: MRModel):
    uid = m.go()
    m.on_clock(m.t, m.t + m.duration_s(m.row(uid)) + 1.0)
    assert m.row(uid).status == "done"
    return m.series_by_uid(m.row(uid).series)


def _myo(orc, s) -> np.ndarray:
    base, apex = orc.lv_long_axis
    return mm.myocardial_roi(orc.runtime, s.data.result.grid, base, apex)


def _stats(orc, s) -> mm.RoiStats:
    r = s.data.result
    return mm.roi_stats(r.map_ms, _myo(orc, s), r.fit_ok)


def _table(orc) -> tuple[float, float]:
    rt = orc.runtime
    k = rt.label_id("lv_myocardium")
    return float(rt.tissues.mr_t1(1.5)[k]), float(rt.tissues.mr_t2(1.5)[k])


@pytest.fixture(scope="module")
def ideal(orc):
    out = {}
    for proto in ("t1_map_molli", "t2_map_t2prep"):
        m = _model(orc, proto)
        out[proto] = (m, _acquire(m))
    return out


def test_mapping_rows_acquire_map_and_labelled_sources_with_tissue_values(orc, ideal):
    t1_true, t2_true = _table(orc)
    m, s = ideal["t1_map_molli"]
    d = s.data
    assert isinstance(d, mapping.MapSeriesData) and d.kind == "t1"
    assert s.n_images == 1 + 8  # the map, then 5(3)3's eight sources
    assert d[0].name == "T1 map MOLLI" and d[1].name.startswith("T1 source TI ")
    assert [float(x) for x in d.record["times_ms"]] == sorted(d.record["times_ms"])
    st = _stats(orc, s)
    assert st.n > 50 and abs(st.mean_ms / t1_true - 1.0) < 0.05, (st, t1_true)
    assert d.record["causes"] == [] and d.record["shim_heart_coverage"] == 1.0
    m2, s2 = ideal["t2_map_t2prep"]
    assert s2.n_images == 1 + 3 and s2.data[0].name == "T2 map T2-prep"
    assert [im.name for im in s2.data.images[1:]] == ["T2 source prep 0 ms", "T2 source prep 25 ms",
                                                       "T2 source prep 55 ms"]
    st2 = _stats(orc, s2)
    assert abs(st2.mean_ms / t2_true - 1.0) < 0.05, (st2, t2_true)
    # series list: the map and its sources; captions name the map type and unit
    titles = {e.key: (e.title, e.image) for e in m.series_entries()}
    assert titles[f"{s.uid}.1"] == (f"{s.uid}  T1 map MOLLI", 0)
    assert titles[f"{s.uid}.2"] == (f"{s.uid}  T1 sources MOLLI", 1)
    m.load_entry(0, f"{s.uid}.1")
    assert m.viewport_caption(0)[1] == "T1 map (ms)  5(3)3"
    m.page(0, 1)
    assert m.viewport_caption(0)[1].startswith("T1 source TI ")


def test_scan_time_in_heartbeats_scheme_choice_and_t2_has_none(orc):
    m = _model(orc)
    row = m.open_row
    hr = m.heart_rate_bpm
    assert m.duration_s(row) == pytest.approx(3.0 + mm.acquisition_duration_ms("t1", "5(3)3", hr) / 1000.0, abs=0.06)
    m.set_param("scheme", "4(1)3(1)2")
    assert row.params.scheme == "4(1)3(1)2"
    assert m.duration_s(row) == pytest.approx(3.0 + mm.acquisition_duration_ms("t1", "4(1)3(1)2", hr) / 1000.0,
                                              abs=0.06)
    t2 = _model(orc, "t2_map_t2prep")
    with pytest.raises(ConsoleActionError, match="MOLLI"):
        t2.set_param("scheme", "5(3)3")


def test_rr_overrun_is_a_warning_not_a_blocker_but_a_short_window_and_slices_block(orc):
    m = _model(orc)
    row = m.open_row
    rr = 60000.0 / m.heart_rate_bpm
    m.set_param("trigger_delay_ms", round(rr) - 200)
    m.set_param("acq_window_ms", 400)
    assert m.row_conflicts(row) == [] and m.can_go()
    warned = m.state()["queue"][1]["warnings"]
    assert len(warned) == 1 and "exceed the RR interval" in warned[0]
    m.set_param("acq_window_ms", 100)  # shorter than one single-shot image (~196 ms)
    assert "shorter than one single-shot image" in m.go_blocker()
    m.set_param("acq_window_ms", 250)
    m.set_param("n_slices", 3)
    assert "single slice" in m.go_blocker()


def test_shim_box_off_the_heart_is_recorded_and_scatters_t1(orc, ideal):
    m = _model(orc)
    pose = _sax(orc)
    m.set_shim_size((100.0, 100.0, 60.0))
    m.set_shim_centre(pose.centre + 110.0 * pose.u)
    s = _acquire(m)
    rec = s.data.record
    assert "shim_off_heart" in rec["causes"] and rec["shim_heart_coverage"] < 0.5
    assert rec["offres_heart_hz_max"] > ideal["t1_map_molli"][1].data.record["offres_heart_hz_max"]
    base = _stats(orc, ideal["t1_map_molli"][1])
    bad = _stats(orc, s)
    assert bad.sd_ms > 2.0 * base.sd_ms or abs(bad.mean_ms - base.mean_ms) > 0.05 * base.mean_ms, (base, bad)


def test_trigger_window_longer_than_rr_is_recorded_and_scatters_t1(orc, ideal):
    m = _model(orc)
    rr = 60000.0 / m.heart_rate_bpm
    m.set_param("trigger_delay_ms", round(rr) - 300)
    m.set_param("acq_window_ms", 500)  # the shot ends 200 ms into the next beat: systole
    s = _acquire(m)
    rec = s.data.record
    assert rec["window_fits_rr"] is False and {"window_exceeds_rr", "motion"} <= set(rec["causes"])
    assert rec["motion_range_mm"] > 2.0
    base, bad = _stats(orc, ideal["t1_map_molli"][1]), _stats(orc, s)
    assert bad.sd_ms > 1.5 * base.sd_ms, (base, bad)


def test_roi_tool_stats_events_and_refusals(orc, ideal):
    m, s = ideal["t1_map_molli"]
    m.load_entry(1, f"{s.uid}.1")
    centre, radii = (3.0, -12.0), (14.0, 9.0)
    r = m.measure_roi(1, centre, radii)
    g = s.data.result.grid
    uu, vv = g.uv()
    mask = ((uu - centre[0]) / radii[0]) ** 2 + ((vv - centre[1]) / radii[1]) ** 2 <= 1.0
    want = mm.roi_stats(s.data.result.map_ms, mask, s.data.result.fit_ok)
    assert r.n == want.n > 20 and r.mean_ms == pytest.approx(want.mean_ms) and r.sd_ms == pytest.approx(want.sd_ms)
    assert r.text() == f"ROI mean {want.mean_ms:.0f} ms  SD {want.sd_ms:.0f} ms  n {want.n}"
    assert m.viewport_roi(1) == r
    ev = [e for e in m.events if e["event"] == "roi_measured"][-1]
    assert ev["series"] == s.uid and ev["viewport"] == 2 and ev["n"] == want.n
    dumped = m.state()["rois"][-1]
    assert dumped["mean_ms"] == round(want.mean_ms, 2) and dumped["radii_mm"] == [14.0, 9.0]
    m.page(1, 2)  # a source image: no ROI there
    assert m.viewport_roi(1) is None
    with pytest.raises(ConsoleActionError, match="map"):
        m.measure_roi(1, centre, radii)
    m.page(1, -2)
    with pytest.raises(ConsoleActionError, match="radii"):
        m.measure_roi(1, centre, (0.2, 5.0))


def test_dump_is_json_and_records_the_acquisition_never_pixels(orc, ideal):
    m, s = ideal["t1_map_molli"]
    st = json.loads(json.dumps(m.state()))
    rec = next(x for x in st["series"] if x["uid"] == s.uid)["mapping"]
    for key in ("kind", "scheme", "times_ms", "heart_rate_bpm", "rr_ms", "trigger", "trigger_delay_ms",
                "acq_window_ms", "window_fits_rr", "motion_range_mm", "shim_box", "shim_heart_coverage",
                "offres_heart_hz_max", "banding_heart_fraction", "causes", "thickness_mm", "fit_fraction"):
        assert key in rec, key
    assert rec["kind"] == "t1" and rec["scheme"] == "5(3)3" and rec["unit"] == "ms"
    assert "pixels" not in json.dumps(st)
    assert st["queue"][1]["params"]["scheme"] == "5(3)3"


def test_same_seed_same_map_and_dump(orc):
    a, b = _model(orc, seed=3), _model(orc, seed=3)
    sa, sb = _acquire(a), _acquire(b)
    assert np.array_equal(sa.data.result.map_ms, sb.data.result.map_ms)
    assert json.dumps(a.state(), sort_keys=True) == json.dumps(b.state(), sort_keys=True)
    a.open(a.repeat(a.rows[1].uid))  # a repeated row (a new series) gets new noise
    sc = _acquire(a)
    assert not np.array_equal(sa.data.result.map_ms, sc.data.result.map_ms)


def test_offset_shim_stages_the_box_along_the_group_axes(orc):
    m = _model(orc)
    p = m.open_row.params
    mapping.offset_shim(p, (110.0, -20.0, 0.0), (100.0, 100.0, 60.0))
    pose = p.pose()
    box = p.shim_box()
    assert box["centre"] == pytest.approx(list(pose.centre + 110.0 * pose.u - 20.0 * pose.v), abs=1e-3)
    assert box["size_mm"] == [100.0, 100.0, 60.0] and box["follows_slab"] is False


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_recommended_timing_fits_the_rr_and_leaves_no_motion(orc, seed):
    m = _model(orc, seed=seed)
    row = m.open_row
    delay, window = mapping.recommended_timing(row.params, row.proto, m.heart_rate_bpm)
    m.set_param("trigger_delay_ms", delay)
    m.set_param("acq_window_ms", window)
    assert m.can_go() and m.state()["queue"][1]["warnings"] == []
    rec = _acquire(m).data.record
    assert rec["causes"] == [] and rec["motion_range_mm"] < 1.0 and rec["window_fits_rr"]


# ---- issue 21: draws balanced over the cohort -------------------------------------------------------------
def test_cohort_balanced_choice_balances_subjects_and_seeds():
    from collections import Counter

    from consoles.mr.model import cohort_balanced_choice

    cohort = [f"s{i:02d}" for i in range(1, 31)]
    two = {s: [cohort_balanced_choice("t", s, k, "k", [True, False]) for k in (0, 1, 2)] for s in cohort}
    assert all(len(set(v)) == 2 for v in two.values())  # every subject sees both answers over seeds 0-2
    counts = Counter(x for v in two.values() for x in v)
    assert counts[True] == counts[False] == 45  # a fixed answer is right in exactly half the cohort's slots
    assert cohort_balanced_choice("t", "dev", 0, "k", ["a", "b"]) == "a"  # dev seed 0: the card's first option
    four = Counter(cohort_balanced_choice("t", s, k, "k", list("abcd")) for s in cohort for k in (0, 1, 2))
    assert max(four.values()) <= 23 and set(four) == set("abcd")
    for s in cohort:  # consecutive seeds take every option once per block
        assert sorted(cohort_balanced_choice("t", s, k, "k", list("abcd")) for k in range(4)) == list("abcd")


def test_copied_parameter_sets_differ_in_what_is_wrong():
    """L4: which of trigger, thickness and timing the copied set gets wrong varies with the seed, so a script
    that fixes one episode's leaves another's standing."""
    from rendering.subjects import load_runtime
    from tasks.card import load_card



    card = load_card("mr_t1t2_mapping_parameters")
    seen = set()
    for seed in range(4):
        m = MRModel(load_runtime("s01"), card.id, seed, dict(card.initial_state), dict(card.perturbations))
        p = next(r for r in m.rows if r.protocol == "t1_map_molli").params
        seen.add((p.trigger, p.thickness_mm, p.trigger_delay_ms, p.acq_window_ms))
    assert len(seen) == 4
    assert {t for t, *_ in seen} == {"ecg", "pulse"}
