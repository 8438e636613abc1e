"""Draws balanced over seeds and over the cohort, shared by the consoles (pure: no Qt).

Judgement tasks (L2) and binary causes (L6) draw their hidden truth per episode. A screen-blind agent that
always gives one answer must be right in at most half the slots (issue 21), so the truth is not a coin:

- `balanced_choice`: balanced over the seeds of one subject (every block of len(options) consecutive seeds
  takes each option once, in a seeded order);
- `cohort_balanced_choice`: balanced over the seeds of a subject AND over the cohort's subjects, by a rule
  that depends on nothing but (subject index + seed), so that the shortcut detector's fixed sample
  (runner.headless.shortcut.SAMPLE_PAIRS, chosen to take every residue mod 2 and mod 3 about equally often)
  sees each answer as often as the cohort does. Every console draws its cohort-balanced truths here (MR's
  judgement rows, US's dark-image cause), so one sample balances them all.
"""
from __future__ import annotations

from typing import Any, Sequence

from rendering.seeding import seeded_rng

__all__ = ["balanced_choice", "subject_index", "cohort_balanced_choice"]


def balanced_choice(task_id: str, subject_id: str, seed: int, key: str, options: Sequence[Any]) -> Any:
    """One of `options` for this seed, balanced over the seeds of one subject: every block of len(options)
    consecutive seeds takes each option exactly once, in a seeded order (judgement tasks must not be
    passable by a fixed policy, so the right consequence has to be evenly spread)."""
    n = len(options)
    if n == 0:
        raise ValueError(f"{key}: no options to draw from")
    block, pos = divmod(int(seed), n)
    perm = seeded_rng(task_id, subject_id, "balanced", key, block).permutation(n)
    return options[int(perm[pos])]


def subject_index(subject_id: str) -> int:
    """The cohort index of a subject id ("s07" -> 7, "dev" -> 0; other ids a stable number from their
    characters), for draws balanced over the cohort."""
    digits = "".join(ch for ch in subject_id if ch.isdigit())
    if subject_id == "dev" or not subject_id:
        return 0
    return int(digits) if digits else sum(ord(ch) for ch in subject_id)


def cohort_balanced_choice(task_id: str, subject_id: str, seed: int, key: str, options: Sequence[Any],
                           period: int = 1) -> Any:
    """One of `options` for (subject, seed), balanced over seeds AND subjects (issue 21): option
    (subject index + seed) mod n of the card's list. Every n consecutive seeds of a subject take each option
    once, consecutive subjects are shifted by one, so with two options a subject's seeds 0, 1, 2 want
    a, b, a or b, a, b in turn and the 30-subject cohort wants each exactly 45 times of 90 (a fixed answer
    is right in at most half the slots), and dev (index 0) seed 0 wants the first option, which is no
    majority. The card lists its options in the order this cycles through (task_id and key are unused:
    the balance must not depend on a hash).

    `period` nests a second choice under a first one of `period` options: option ((subject index + seed) //
    period) mod n changes every `period` slots, so within each option of the first choice (taken when the
    residue mod `period` is one value) the second one cycles too (US: the dark cause contact | gain, and under
    contact the fault's kind gel | pressure: a fixed remedy is right in a quarter of the slots)."""
    n = len(options)
    if n == 0:
        raise ValueError(f"{key}: no options to draw from")
    if period < 1:
        raise ValueError(f"{key}: period must be at least 1, not {period}")
    return options[((subject_index(subject_id) + int(seed)) // period) % n]
