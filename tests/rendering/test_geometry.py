"""Acquisition geometry: the CT table frame and helical timing (no display)."""
from __future__ import annotations

import numpy as np
import pytest

from rendering.geometry import TableFrame, helical_duration_s, helical_time_at, table_feed_mm_s


def test_table_frame_round_trips_and_matches_the_documented_formulas():
    f = TableFrame(laser_z_subject_mm=3.0, patient_shift_mm=-27.5, iso_height_mm=270.0)
    z = np.array([-400.0, 0.0, 55.5])
    assert np.allclose(f.table_z(z), z - 3.0 - 27.5)
    assert np.allclose(f.subject_z(f.table_z(z)), z)
    assert f.y_iso_subject(160.0) == pytest.approx(-110.0)
    assert f.table_height_for(f.y_iso_subject(142.3)) == pytest.approx(142.3)


def test_table_frame_from_a_state_dump():
    state = {"frame": {"laser_z_subject_mm": 0.0, "patient_shift_mm": 31.2, "iso_height_mm": 270.0,
                       "table_height_offset_mm": 4.0}}
    f = TableFrame.from_state(state)
    assert f.patient_shift_mm == 31.2 and f.table_z(0.0) == pytest.approx(31.2)
    assert TableFrame.from_state({"frame": f.to_dict()}) == f


def test_helical_timing():
    assert table_feed_mm_s(1.0, 40.0, 0.5) == pytest.approx(80.0)
    assert helical_duration_s(400.0, 1.0, 40.0, 0.5) == pytest.approx(5.0)
    assert helical_duration_s(1.0, 1.5, 40.0, 0.25) == pytest.approx(0.5)  # never shorter than the minimum
    assert helical_time_at(-100.0, 100.0, 10.0, 1.0, 40.0, 0.5) == pytest.approx(12.5)
