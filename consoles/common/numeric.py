"""How consoles write and read numbers with units (pure: no Qt), shared by fields and tests."""
from __future__ import annotations

import math


def format_number(value: float, decimals: int, unit: str) -> str:
    """The text a numeric field shows: fixed decimals, never '-0', the unit after one space."""
    if abs(value) < 0.5 * 10.0 ** -decimals:
        value = 0.0
    text = f"{value:.{decimals}f}"
    return f"{text} {unit}" if unit else text


def parse_number(text: str, unit: str) -> float | None:
    """A typed number, with or without its unit; None when it is not a finite number."""
    t = text.strip().replace("\u2212", "-")
    if unit and t.lower().endswith(unit.lower()):
        t = t[: -len(unit)].strip()
    try:
        v = float(t)
    except ValueError:
        return None
    return v if math.isfinite(v) else None
