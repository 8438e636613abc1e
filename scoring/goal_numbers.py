"""Does a goal text state a check's threshold? A tolerant reader of the numbers in a goal (issue 32).

A goal may say a threshold in any usual form: 20 mm or 2 cm, 15 deg, 15 degrees or 15°, 250 HU, 5 %, 15 s,
8x or 8 times, a range as 70-150, 0.5 to 4 cm or between 70 and 150 (the unit after the second number applies
to both), small counts as words (eight times). Each quantity is read with its unit, converted to the check's
unit, and compared; a word threshold (ECG, 4ch) must appear as a word; a check's ``said_as`` wordings count too.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from scoring.checks import Check

# unit word -> (the check unit it converts to, factor); longest first in the pattern, so "ms" is not "s"
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("mm", 1.0), "millimetre": ("mm", 1.0), "millimetres": ("mm", 1.0), "millimeter": ("mm", 1.0),
    "millimeters": ("mm", 1.0), "cm": ("mm", 10.0), "centimetre": ("mm", 10.0), "centimetres": ("mm", 10.0),
    "centimeter": ("mm", 10.0), "centimeters": ("mm", 10.0),
    "deg": ("deg", 1.0), "degree": ("deg", 1.0), "degrees": ("deg", 1.0), "°": ("deg", 1.0),
    "hu": ("HU", 1.0),
    "%": ("%", 1.0), "percent": ("%", 1.0), "per cent": ("%", 1.0),
    "s": ("s", 1.0), "sec": ("s", 1.0), "second": ("s", 1.0), "seconds": ("s", 1.0),
    "min": ("s", 60.0), "minute": ("s", 60.0), "minutes": ("s", 60.0),
    "ms": ("ms", 1.0), "millisecond": ("ms", 1.0), "milliseconds": ("ms", 1.0),
    "x": ("x", 1.0), "×": ("x", 1.0), "times": ("x", 1.0), "fold": ("x", 1.0),
    "mhz": ("MHz", 1.0), "db": ("dB", 1.0), "mgy": ("mGy", 1.0),
}
CHECK_UNITS = frozenset(u for u, _ in UNITS.values()) | {""}  # "" a count, a grey level: a bare number
_WORDS = {w: float(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUM = r"(\d+(?:\.\d+)?|(?:" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")(?![a-z]))"  # not "tend"
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_QTY = re.compile(rf"(?<![\w.]){_NUM}(?:\s*(?:-|–|—|to|and)\s*{_NUM})?"
                  rf"(?:\s*-?\s*(?P<unit>{_UNIT})(?![a-z]))?", re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    """A number or a range read from a goal, in its unit's check unit (None: no unit named)."""

    lo: float
    hi: float  # == lo for a single number
    unit: str | None

    @property
    def is_range(self) -> bool:
        return self.hi != self.lo


def _value(text: str) -> float:
    return _WORDS[text.lower()] if text.lower() in _WORDS else float(text)


def quantities(goal: str) -> list[Quantity]:
    """Every number and range in a goal, converted to its check unit."""
    out = []
    for m in _QTY.finditer(goal):
        unit, factor = UNITS[m["unit"].lower()] if m["unit"] else (None, 1.0)
        lo = _value(m[1]) * factor
        hi = _value(m[2]) * factor if m[2] else lo
        out.append(Quantity(lo, hi, unit))
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def _names_word(goal: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", goal, re.IGNORECASE) is not None


def goal_states(goal: str, check: Check) -> bool:
    """Whether the goal states the check's threshold (its number in some unit form, its word, or one of its
    ``said_as`` wordings). A bare number counts only for a check without a unit (a count, a grey level)."""
    if check.unit not in CHECK_UNITS:
        raise ValueError(f"check {check.name!r}: unit {check.unit!r} is not one the goal reader converts "
                         f"({sorted(CHECK_UNITS)})")
    if any(_names_word(goal, s) for s in check.said_as):
        return True
    if isinstance(check.value, str):
        return _names_word(goal, check.value)
    qs = [q for q in quantities(goal) if q.unit == (check.unit or None)]
    if isinstance(check.value, tuple):
        lo, hi = (float(v) for v in check.value)
        if any(_close(q.lo, lo) and _close(q.hi, hi) for q in qs):
            return True
        ends = [v for q in qs for v in ((q.lo, q.hi) if q.is_range else (q.lo,))]
        return any(_close(v, lo) for v in ends) and any(_close(v, hi) for v in ends)
    v = float(check.value)
    return any(_close(q.lo, v) or _close(q.hi, v) for q in qs)
