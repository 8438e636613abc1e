"""python -m consoles.ct --task <id|task.json> --subject <id> --seed <n> [--control <socket>]"""
from __future__ import annotations

import sys

from consoles.common.launch import run_console


def warm_imports() -> None:
    """Import at console start what the first steps would otherwise import inside a step. (The
    CT console no longer uses scipy: its import took 0.2-0.5 s of the first scan step and 28 MiB.)"""
    import consoles.ct.model  # noqa: F401
    import consoles.ct.view  # noqa: F401


def make_model(card, subject, seed: int):
    from consoles.ct.model import CTModel

    return CTModel(subject, card.id, seed, card.initial_state, card.perturbations)


def build(card, subject, seed: int, width: int, height: int):
    from consoles.ct.view import CTConsoleView

    return CTConsoleView(make_model(card, subject, seed), width, height)


if __name__ == "__main__":
    warm_imports()
    sys.exit(run_console("ct", build, make_model=make_model))
