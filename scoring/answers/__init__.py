"""An episode's correct answer as named parts, each with the oracle's tolerance (the per-modality ``answers``
hooks in scoring/answers/<modality>.py return them; runner.headless.shortcut and `medimageos tasks spread`
compare them across episodes)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Answer:
    """One part of an episode's correct answer: a number with the oracle's tolerance for it (same unit),
    or a categorical choice (tolerance None) for judgements."""

    value: float | str
    tolerance: float | None = None
