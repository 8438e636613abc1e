"""CTModel without Qt: bolus tracking in simulated time, prior exam, dose limit, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from consoles.ct.model import MONITOR_DELAY_S, ConsoleActionError, CTModel
from rendering import ct_contrast
from rendering.subjects import load_runtime


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _aorta_centre(rt, m: CTModel):
    zs = m.subject_from_table_z(m.bolus["monitor_z_mm"])
    k = int(round((zs - rt.origin_mm[2]) / rt.spacing_mm[2]))
    j, i = np.nonzero(rt.labels[k] == rt.label_id("aorta_descending"))
    x, y = rt.origin_mm[0] + rt.spacing_mm[0] * i.mean(), rt.origin_mm[1] + rt.spacing_mm[1] * j.mean()
    return float(m.frame.gantry_x(x)), y - m.y_iso_subject()  # monitoring-image mm, what set_roi takes


def _ccta_ready(rt, seed=0):
    m = CTModel(rt, "ccta_heart_coverage_isocenter", seed, {}, {"heart_rate_bpm": [60, 60]})
    m.load_protocol("ccta")
    m.acquire_scout()
    m.on_clock(0, 5)
    m.set_range(-30, -165)
    m.confirm()
    m.set_monitor_z(-65.0)  # below the arch: the descending aorta is in the slice
    m.acquire_monitor_reference()
    return m


def _run(m, t, until, step):
    while t < until:
        m.on_clock(t, t + step)
        t += step
    return t


def test_bolus_tracking_triggers_and_scans_at_arterial_peak(rt):
    m = _ccta_ready(rt)
    with pytest.raises(ConsoleActionError):
        m.start_bolus_tracking()  # no ROI yet
    m.set_roi(*_aorta_centre(rt, m))
    m.start_bolus_tracking()
    t = _run(m, 5, 5 + MONITOR_DELAY_S - 0.5, 0.5)
    assert m.bolus["samples"] == []  # nothing before the monitoring delay
    t = _run(m, t, 90, 0.5)
    b = m.bolus
    assert b["status"] == "done" and b["t_trigger"] is not None
    hus = [h for _, h in b["samples"]]
    assert hus[-1] >= b["threshold_hu"] > max(hus[:-1])
    s = m.series[-1]
    assert s.t_start == pytest.approx(b["t_trigger"] + b["delay_s"])
    assert s.arterial_hu_start >= 250 and s.arterial_hu_end >= 250
    # the aorta is bright in the images (enhancement follows the scan time), unlike an unenhanced scan
    k = s.n_images // 3
    zc = s.subject_z_top - (k + 0.5) * (s.subject_z_top - s.subject_z_bottom) / s.n_images
    kk = int(round((zc - rt.origin_mm[2]) / rt.spacing_mm[2]))
    aorta = np.isin(rt.labels[kk], [rt.label_id("aorta_descending"), rt.label_id("aorta_ascending")])
    assert s.images[k][aorta].mean() > 220


def test_one_long_wait_equals_many_short_ones(rt):
    a, b = _ccta_ready(rt), _ccta_ready(rt)
    for m in (a, b):
        m.set_roi(*_aorta_centre(rt, m))
        m.start_bolus_tracking()
    _run(a, 5, 65, 30.0)
    _run(b, 5, 65, 0.5)
    assert a.bolus["samples"] == b.bolus["samples"]
    assert a.series[-1].to_dict() == b.series[-1].to_dict()
    assert np.array_equal(a.series[-1].images, b.series[-1].images)


def test_roi_outside_the_aorta_never_triggers(rt):
    m = _ccta_ready(rt)
    m.set_roi(-184.0, -234.0 - m.y_iso_subject())  # grid corner, outside the body: air
    m.start_bolus_tracking()
    _run(m, 5, 80, 5.0)
    assert m.bolus["status"] == "done" and m.bolus["t_trigger"] is None and not m.series
    assert "not reached" in m.message


def test_manual_scan_during_monitoring_starts_immediately_and_early(rt):
    m = _ccta_ready(rt)
    m.set_roi(*_aorta_centre(rt, m))
    m.start_bolus_tracking()
    _run(m, 5, 12, 1.0)
    m.scan()
    _run(m, 12, 30, 1.0)
    assert m.series[-1].arterial_hu_start < 150


def test_contrast_curves_are_seeded_and_peak_in_the_physiological_range():
    p0, p1 = ct_contrast.contrast_params("dev", 0), ct_contrast.contrast_params("dev", 1)
    assert p0 == ct_contrast.contrast_params("dev", 0) and p0 != p1
    ts = np.arange(0, 80, 0.5)
    hu = np.array([ct_contrast.arterial_hu(p0, t) for t in ts])
    assert hu[0] == pytest.approx(40.0) and 280 <= hu.max() <= 420
    assert 12 <= ts[np.argmax(hu > 100)] <= 25
    g = np.array([ct_contrast.enhancement(p0, t) for t in ts])
    from rendering.subjects.tissues import COMPARTMENTS
    assert ts[g[:, COMPARTMENTS.index("portal_organ")].argmax()] > ts[g[:, COMPARTMENTS.index("arterial")].argmax()] + 10


def test_prior_exam_clips_the_seeded_end_and_is_in_the_history(rt):
    labels = ["lung_left", "lung_right"]
    ends = set()
    for seed in range(6):
        m = CTModel(rt, "ct_undercoverage_recovery", seed,
                    {"prior_exam": {"protocol": "chest_routine", "labels": labels, "margin_mm": 10}},
                    {"prior_clip_end": ["top", "bottom"], "prior_clip_mm": [35, 70]})
        assert m.scout_status == "done" and len(m.series) == 1 and m.series[0].prior
        zmin, zmax = m._label_z_extent(labels)
        s = m.series[0]
        end, clip = m.prior_clip["end"], m.prior_clip["clip_mm"]
        if end == "top":
            assert s.subject_z_top == pytest.approx(zmax - clip, abs=0.1)
        else:
            assert s.subject_z_bottom == pytest.approx(zmin + clip, abs=0.1)
        ends.add(end)
        assert [e["event"] for e in m.events] == ["prior_series_loaded"] and m.t == 0.0
    assert ends == {"top", "bottom"}


def test_size_specific_dose_limit_scales_with_the_patients_water_equivalent_diameter(rt):
    labels = ["kidney_left_cortex", "kidney_right_cortex", "bladder"]
    m = CTModel(rt, "ct_kub_low_dose_constraint", 0, {"ctdi_limit_labels": labels}, {"ctdi_limit_ref_mgy": [1.5, 1.5]})
    assert m.ctdi_limit_dw_mm is not None and 150 < m.ctdi_limit_dw_mm < 450
    want = 1.5 * np.exp(0.0192 * (m.ctdi_limit_dw_mm - 300.0))
    assert m.ctdi_limit_mgy == pytest.approx(want, abs=0.006)
    with pytest.raises(ValueError, match="ctdi_limit_labels"):
        CTModel(rt, "ct_kub_low_dose_constraint", 0, {}, {"ctdi_limit_ref_mgy": [1.5, 1.5]})


def test_scout_pixels_are_fixed_table_mm_and_the_anatomy_moves_with_the_patient(rt):
    """The scout spans its protocol's table window whatever the patient's position: a shift of the patient
    moves the body on the image by the same millimetres (the rows are table z, the AP columns gantry x,
    the lateral columns height against the couch), air beyond the phantom."""
    def scouts(shift, lateral, pad):
        m = CTModel(rt, "t", 0, {"protocol": "chest_routine"}, {"patient_shift_mm": [shift, shift],
                    "patient_lateral_offset_mm": [lateral, lateral], "table_pad_mm": [pad, pad]})
        m.acquire_scout()
        m.on_clock(0, 5)
        return m
    a, b = scouts(0.0, 0.0, 20.0), scouts(40.0, 10.0, 60.0)
    for view in ("ap", "lateral"):
        sa, sb = a.scouts[view], b.scouts[view]
        assert (sa.u0, sa.du, sa.v_top, sa.dv, sa.pixels.shape) == (sb.u0, sb.du, sb.v_top, sb.dv, sb.pixels.shape)
    assert a.table_limits() == b.table_limits() == (350.0, -620.0)
    pa, pb = a._scout_grid("ap", 350.0, -620.0)[0], b._scout_grid("ap", 350.0, -620.0)[0]
    np.testing.assert_array_equal(pa[125:365, 10:-10], pb[105:345, 15:-5])  # 40 mm up = 20 rows, 10 mm = 5 columns
    la, lb = a._scout_grid("lateral", 350.0, -620.0)[0], b._scout_grid("lateral", 350.0, -620.0)[0]
    np.testing.assert_array_equal(la[125:365, 30:-30], lb[105:345, 10:-50])  # 40 mm more pad: 20 columns anterior
    assert pa[0].max() == 0.0  # table z 350 lies above the phantom's top at this position: air
    assert a.iso_couch_y() == pytest.approx(a.table_height_mm - 270.0)
    assert b.y_iso_subject() == pytest.approx(b.table_height_mm - 270.0 + 60.0)


def test_dose_limit_notice_follows_parameters(rt):
    m = CTModel(rt, "ct_kub_low_dose_constraint", 0, {}, {"ctdi_limit_mgy": [4.0, 6.5]})
    assert 4.0 <= m.ctdi_limit_mgy <= 6.5 and (m.ctdi_limit_mgy * 2) % 1 == 0
    m.load_protocol("kub_low_dose")
    assert m.dose_limit_exceeded() and m.state()["dose"]["limit_exceeded"]
    m.set_param("mas", 40)
    assert not m.dose_limit_exceeded()
    noisy = m.expected_noise_hu()
    m.set_param("mas", 80)
    assert m.expected_noise_hu() < noisy


def test_table_height_offset_abs_is_always_clearly_off(rt):
    offs = [CTModel(rt, "t", s, {}, {"table_height_offset_abs_mm": [18, 40]}).table_height_offset_mm for s in range(20)]
    assert all(18 <= abs(o) <= 40 for o in offs) and min(offs) < 0 < max(offs)
