"""CT status lines describe the present (issue 34), from the model alone (no Qt): no "Scanning..." while the scan
reconstructs, the bolus page's advice follows the plan's confirmation, and every plan or parameter edit says what
it set with the same length and dose texts the panel shows."""
from __future__ import annotations

import pytest

from consoles.ct.model import CTModel
from rendering.subjects import load_runtime


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _scouted(rt, protocol="chest_routine", task="ct_lung_coverage_isocenter"):
    m = CTModel(rt, task, 0, {}, {"heart_rate_bpm": [60, 60]})
    m.load_protocol(protocol)
    m.acquire_scout()
    m.on_clock(0.0, 5.0)
    return m


def test_the_scanning_message_ends_with_the_rotation(rt):
    m = _scouted(rt)
    m.confirm()
    m.scan()
    assert m.message == "Scanning series 1..."
    t = 5.0
    while m.scan_status == "scanning":
        m.on_clock(t, t + 0.5)
        t += 0.5
    assert m.scan_status == "reconstructing" and m.scan_progress() == 1.0
    assert "Scanning" not in m.message and m.message == "Acquisition done. Reconstructing series 1..."
    while m.scan_status != "idle":
        m.on_clock(t, t + 0.5)
        t += 0.5
    assert m.message.startswith("Series 1 reconstructed")


def test_edits_leave_a_status_with_the_panels_own_texts(rt):
    m = _scouted(rt)
    m.set_range(10.0, -250.0)
    assert m.message == f"Range 10.0 to -250.0 mm: length {m.length_text()}, {m.dlp_text()}."
    assert m.length_text() == "260.0 mm" and m.dlp_text().startswith("DLP ")
    m.set_param("mas", 150)
    assert m.message == f"Tube current 150 mAs: {m.ctdi_text()}, {m.dlp_text()}."
    m.confirm()
    m.set_table_height(150.0)
    assert m.message == "Table height 150.0 mm. Plan changed: confirm it again before scanning."
    m.confirm()
    m.set_param("pitch", 1.2)
    assert m.message.startswith("Pitch 1.20: CTDIvol ") and m.message.endswith("confirm it again before scanning.")
    before = m.message
    m.set_param("pitch", 1.2)  # no change: nothing to report, the line stays
    assert m.message == before


def test_bolus_status_follows_the_plans_confirmation(rt):
    m = _scouted(rt, "ccta", "ccta_heart_coverage_isocenter")
    m.set_range(-30, -165)
    m.set_monitor_z(-65.0)
    m.acquire_monitor_reference()
    m.set_roi(0.0, 40.0)
    assert m.bolus.status_text() == "ROI placed. Confirm the plan, then start the injection."
    m.confirm()
    assert m.bolus.status_text() == "ROI placed, plan confirmed: start the injection."
    assert m.message == "Plan confirmed. Start the injection (Bolus tracking), or press Scan."
    other = _scouted(rt, "ccta", "ccta_heart_coverage_isocenter")  # a manual scan instead of the injection
    other.set_monitor_z(-65.0)
    other.acquire_monitor_reference()
    other.set_roi(0.0, 40.0)
    other.confirm()
    other.scan()
    assert other.bolus.status_text() == "ROI placed; the scanner is busy."
    m.set_bolus_param("threshold_hu", 160)
    assert m.message == "Trigger at 160 HU."
    m.start_bolus_tracking()
    assert m.message == "Injection started at 5.0 s. Monitoring starts at 13.0 s."
    assert m.bolus.status_text().startswith("Monitoring the ROI") and "Injection started at 5.0 s" in m.bolus.status_text()
