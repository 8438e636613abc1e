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
