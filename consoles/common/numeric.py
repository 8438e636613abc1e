"""How consoles write and read numbers with units (pure: no Qt), shared by fields and tests."""
from __future__ import annotations

import math
from dataclasses import dataclass


def format_number(value: float, decimals: int, unit: str) -> str:
    """The text a numeric field shows: fixed decimals, never '-0', the unit after one space."""
    if abs(value) < 0.5 * 10.0 ** -decimals:
        value = 0.0
    text = f"{value:.{decimals}f}"
    return f"{text} {unit}" if unit else text


def duration_text(seconds: float) -> str:
    """m:ss, as a scanner shows a scan time (queue, Ready line, card, status line): whole seconds, rounded once
    here so every copy of one duration reads the same."""
    s = int(round(max(0.0, float(seconds))))
    return f"{s // 60}:{s % 60:02d}"


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


# ---- an entry outside its range (issue 24): refused, or wrapped for a full-turn angle; never silent ----
FULL_TURN_DEG = 360.0


@dataclass(frozen=True)
class EntryVerdict:
    """What a console does with a typed value: `value` is applied (None: refused, the field keeps
    the typed text), and `message` says why on the status line (None: applied as typed)."""

    value: float | None
    message: str | None


def range_text(lo: float, hi: float, decimals: int, unit: str) -> str:
    """'0-359 deg', '-45 to 45 deg' (a dash between two negatives would read as a minus)."""
    a, b = format_number(lo, decimals, ""), format_number(hi, decimals, "")
    sep = " to " if lo < 0 or hi < 0 else "-"
    return f"{a}{sep}{b}" + (f" {unit}" if unit else "")


def wraps(lo: float, hi: float, unit: str) -> bool:
    """Whether a field is a full-turn angle, which clinical consoles wrap (350 + 20 is 10, not 359)."""
    return unit == "deg" and hi - lo >= FULL_TURN_DEG - 1.0 - 1e-9


def judge_entry(label: str, value: float, lo: float, hi: float, decimals: int, unit: str) -> EntryVerdict:
    """The console's answer to `value` typed into the field `label` of range [lo, hi]: in range it is
    applied (rounded to the shown decimals); out of range a full-turn angle is wrapped into the range
    and the message says to what, anything else is refused and the message names field, value and range."""
    typed = format_number(value, decimals, unit)
    v = round(float(value), decimals)
    if lo <= v <= hi:
        return EntryVerdict(v, None)
    if wraps(lo, hi, unit):
        w = round(lo + (v - lo) % FULL_TURN_DEG, decimals)
        if w > hi:  # 359.6 in a 0-359 field rounds up to the turn: that is lo
            w = lo
        return EntryVerdict(w, f"{label} {typed} set as {format_number(w, decimals, unit)}")
    return EntryVerdict(None, f"{label}: {typed} is outside {range_text(lo, hi, decimals, unit)}; not applied")


def not_a_number(label: str, text: str) -> EntryVerdict:
    """Refusal of text that is no number (the field keeps it, the status line says so)."""
    return EntryVerdict(None, f"{label}: '{text.strip()}' is not a number; not applied")


def limited_message(label: str, wanted: float, got: float, decimals: int, unit: str) -> str | None:
    """What the status line says when the console applied another value than the one entered
    (a limit that depends on other settings); None when it applied that one."""
    a, b = format_number(wanted, decimals, unit), format_number(got, decimals, unit)
    return None if a == b else f"{label} {a} set as {b} (limited by the other settings)"
