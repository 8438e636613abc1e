"""python -m consoles.mr --task <id|task.json> --subject <id> --seed <n> [--control <socket>]"""
from __future__ import annotations

import sys

from consoles.common.launch import run_console


def warm_imports() -> None:
    """Import at console start what the first steps would otherwise import inside a step (image
    formation reslices with scipy: its import would land in the first Go's step)."""
    import consoles.mr.model  # noqa: F401
    import consoles.mr.view  # noqa: F401
    import scipy.ndimage  # noqa: F401


def make_model(card, subject, seed: int):
    from consoles.mr.model import MRModel

    return MRModel(subject, card.id, seed, card.initial_state, card.perturbations)


def build(card, subject, seed: int, width: int, height: int):
    from consoles.mr.view import MRConsoleView

    return MRConsoleView(make_model(card, subject, seed), width, height)


if __name__ == "__main__":
    warm_imports()
    sys.exit(run_console("mr", build, make_model=make_model))
