"""Numbers with units as fields show them and as agents type them (no display)."""
from __future__ import annotations

import pytest

from consoles.common.numeric import format_number, parse_number


@pytest.mark.parametrize("value,decimals,unit,text", [
    (120.0, 0, "kV", "120 kV"), (-248.25, 1, "mm", "-248.2 mm"), (1.0, 2, "", "1.00"),
    (-0.04, 1, "mm", "0.0 mm"), (-2000.0, 1, "mm", "-2000.0 mm"), (69.0, 0, "mAs", "69 mAs"),
])
def test_format_number(value, decimals, unit, text):
    assert format_number(value, decimals, unit) == text


@pytest.mark.parametrize("text,unit,value", [
    ("69.0", "mAs", 69.0), ("69 mAs", "mAs", 69.0), (" -29.2 MM ", "mm", -29.2), ("\u221212.5", "mm", -12.5),
    ("1.25", "", 1.25), ("abc", "mm", None), ("", "kV", None), ("nan", "mm", None), ("inf", "s", None),
    ("12 kV", "mm", None),
])
def test_parse_number(text, unit, value):
    assert parse_number(text, unit) == value


# ---- issue 24: an entry outside its range is refused or wrapped, and the message says so ----
from consoles.common.numeric import judge_entry, limited_message, not_a_number, range_text, wraps  # noqa: E402


def test_an_in_range_entry_is_applied_rounded_and_silent():
    v = judge_entry("FOV read", 320.4, 100, 500, 0, "mm")
    assert v.value == 320.0 and v.message is None


@pytest.mark.parametrize("label,value,lo,hi,decimals,unit,message", [
    ("Flip angle", 200, 1, 180, 0, "deg", "Flip angle: 200 deg is outside 1-180 deg; not applied"),
    ("Tilt (fan)", 152, -45, 45, 0, "deg", "Tilt (fan): 152 deg is outside -45 to 45 deg; not applied"),
    ("Tube voltage", 200, 70, 150, 0, "kV", "Tube voltage: 200 kV is outside 70-150 kV; not applied"),
    ("Pitch", 0.1, 0.2, 1.5, 2, "", "Pitch: 0.10 is outside 0.20-1.50; not applied"),
])
def test_an_out_of_range_entry_is_refused_naming_field_value_and_range(label, value, lo, hi, decimals, unit,
                                                                        message):
    v = judge_entry(label, value, lo, hi, decimals, unit)
    assert v.value is None and v.message == message


@pytest.mark.parametrize("value,wrapped", [(-20, 340.0), (370, 10.0), (720, 0.0), (-360, 0.0)])
def test_a_full_turn_angle_wraps_and_says_to_what(value, wrapped):
    v = judge_entry("Rotation", value, 0, 360, 0, "deg")
    assert v.value == wrapped
    assert v.message == f"Rotation {value} deg set as {wrapped:.0f} deg"


def test_only_full_turn_angles_wrap():
    assert wraps(0, 360, "deg") and wraps(0, 359, "deg") and wraps(-180, 180, "deg")
    assert not wraps(-45, 45, "deg") and not wraps(0, 360, "mm")
    assert range_text(-135, 135, 1, "deg") == "-135.0 to 135.0 deg"


def test_text_that_is_no_number_and_a_limited_value_are_said():
    assert not_a_number("Rotation", "87 0").message == "Rotation: '87 0' is not a number; not applied"
    assert limited_message("TE", 50, 40, 1, "ms") == "TE 50.0 ms set as 40.0 ms (limited by the other settings)"
    assert limited_message("TE", 40.04, 40, 1, "ms") is None
