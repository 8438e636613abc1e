"""Headless drivers: a reference solver's plan executed on a modality's pure model, scored by its oracle.

No display, no Qt: solver targets -> model methods -> state dump -> oracle -> verdict. Tests use them to
check that the reference passes on every subject and seed in seconds; the GUI run stays the acceptance
test of the consoles themselves.
"""
from __future__ import annotations

from typing import Any


def run_reference(card: Any, subject: str, seed: int, **kw: Any):
    """Run the reference plan of any card headless (dispatch on the card's modality)."""
    if card.modality == "ct":
        from runner.headless.ct import run_ct

        return run_ct(card, subject, seed, **kw)
    if card.modality == "mr":
        from runner.headless.mr import run_mr

        return run_mr(card, subject, seed, **kw)
    if card.modality == "us":
        from runner.headless.us import run_us

        return run_us(card, subject, seed, **kw)
    raise NotImplementedError(f"no headless driver for modality {card.modality!r} yet")


def score_initial(card: Any, subject: str, seed: int):
    """The verdict of the untouched start state (what a no-op agent leaves behind)."""
    from runner.headless.drive import score_initial as score

    return score(card, subject, seed)
