"""Shared `python -m consoles.<modality>` entry: parse args, load the card and subject, run the shell.

The same loading serves the control command `reset` (ConsoleShell.cmd_reset): the next episode's
card, subject and seed make a new model in the running process, so what a reset console shows is
made by the very code a fresh launch runs.

The card a console runs is a ConsoleCard (consoles.common.console_card): under the runner the card the
runner validated, handed over as JSON; launched by hand, the --task card validated here.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

from consoles.common.console_card import load_console_card
from consoles.common.shell import ConsoleShell, console_arg_parser

# (card, subject runtime, seed) -> the modality's model
ModelFactory = Callable[[Any, Any, int], Any]


def episode_provenance(card, subject, seed: int, console_start: str) -> dict[str, Any]:
    """Recorded in every state dump so a scorer never judges an episode against other anatomy;
    `console_start` says whether this episode's console was launched ("launch") or reset in place
    ("reset")."""
    return {"subject": subject.id, "subject_version": subject.version, "task": card.id,
            "task_version": card.version, "seed": seed, "console_start": console_start}


def run_console(modality: str, build: Callable, argv: list[str] | None = None,
                make_model: ModelFactory | None = None) -> int:
    """`build(card, subject_runtime, seed, width, height)` returns the ConsoleController; with
    `make_model(card, subject_runtime, seed)` the console also accepts `reset` (a new episode in
    this process: the controller's `rebind` shows the new model)."""
    args = console_arg_parser(f"python -m consoles.{modality}").parse_args(argv)
    from rendering.subjects import load_runtime

    card = load_console_card(args.task, args.card_json)
    if card.modality != modality:
        print(f"task {card.id} is a {card.modality} task, not {modality}", file=sys.stderr)
        return 2
    subject = load_runtime(args.subject)
    w, h = card.width, card.height
    shell = ConsoleShell(args, w, h)
    shell.provenance = episode_provenance(card, subject, args.seed, "launch")
    shell.attach(build(card, subject, args.seed, w, h))
    if make_model is not None:
        shell.new_episode = _episode_factory(modality, make_model, (w, h), args.subject)
    return shell.run()


def _episode_factory(modality: str, make_model: ModelFactory, screen: tuple[int, int], subject_id: str):
    """The shell's `new_episode` for `reset`: refuses a card of another modality or screen size."""
    from rendering.subjects import load_runtime
    from rendering.subjects.runtime import clear_memo

    current = {"subject": subject_id}

    def new_episode(task: str, subject_id: str, seed: int,
                    card_json: Mapping[str, Any] | str | None = None) -> tuple[dict[str, Any], Any]:
        card = load_console_card(task, card_json)
        if card.modality != modality:
            raise ValueError(f"task {card.id} is a {card.modality} task; this console is {modality}")
        size = (card.width, card.height)
        if size != screen:
            raise ValueError(f"task {card.id} needs a {size[0]}x{size[1]} screen; this console has "
                             f"{screen[0]}x{screen[1]}")
        # load_runtime keeps every subject it loaded; a worker going through the cohort would hold
        # all of them. Keep only the one in use (the old model still holds its own until dropped).
        if subject_id != current["subject"]:
            clear_memo()
        subject = load_runtime(subject_id)
        current["subject"] = subject_id
        return episode_provenance(card, subject, seed, "reset"), make_model(card, subject, seed)

    return new_episode
