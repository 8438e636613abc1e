"""python -m consoles.ct --task <id|task.json> --subject <id> --seed <n> [--control <socket>]"""
from __future__ import annotations

import sys

from consoles.common.launch import run_console


def build(card, subject, seed: int, width: int, height: int):
    from consoles.ct.model import CTModel
    from consoles.ct.view import CTConsoleView

    model = CTModel(subject, card.id, seed, card.initial_state, card.perturbations)
    return CTConsoleView(model, width, height)


if __name__ == "__main__":
    sys.exit(run_console("ct", build))
