"""Simulated clock: time moves only when the runner (or a person's explicit wait) advances it.

No simulation logic may read the wall clock. Listeners receive (t_old, t_new) so a model can
integrate processes (scan progress, contrast arrival) over the interval deterministically.
"""
from __future__ import annotations

from typing import Callable

Listener = Callable[[float, float], None]


class SimClock:
    """A monotonically advancing simulated clock in seconds."""

    def __init__(self, start: float = 0.0, max_step: float = 600.0) -> None:
        self._t = float(start)
        self._max_step = max_step
        self._listeners: list[Listener] = []

    @property
    def now(self) -> float:
        return self._t

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def advance(self, seconds: float) -> float:
        """Advance by `seconds` (0 <= seconds <= max_step) and notify listeners; returns the new time."""
        seconds = float(seconds)
        if not (seconds >= 0.0):  # also rejects NaN
            raise ValueError(f"cannot advance the clock by {seconds!r} s: must be >= 0")
        if seconds > self._max_step:
            raise ValueError(f"cannot advance the clock by {seconds} s: at most {self._max_step} s per call")
        if seconds == 0.0:
            return self._t
        old, self._t = self._t, round(self._t + seconds, 6)
        for listener in self._listeners:
            listener(old, self._t)
        return self._t
