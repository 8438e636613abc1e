"""python -m consoles.us --task <id|task.json> --subject <id> --seed <n> [--control <socket>]"""
from __future__ import annotations

import sys

from consoles.common.launch import run_console


def warm_imports() -> None:
    """Import at console start what the first steps would otherwise import inside a step (image
    formation samples the body surface and filters the echo field with scipy.ndimage)."""
    import consoles.us.model  # noqa: F401
    import consoles.us.view  # noqa: F401
    import scipy.ndimage  # noqa: F401


def make_model(card, subject, seed: int):
    from consoles.us.model import USModel

    return USModel(subject, card.id, seed, card.initial_state, card.perturbations)


def build(card, subject, seed: int, width: int, height: int):
    from consoles.us.view import USConsoleView

    return USConsoleView(make_model(card, subject, seed), width, height)


if __name__ == "__main__":
    warm_imports()
    sys.exit(run_console("us", build, make_model=make_model))
