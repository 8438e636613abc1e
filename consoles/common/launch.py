"""Shared `python -m consoles.<modality>` entry: parse args, load the card and subject, run the shell."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from consoles.common.shell import ConsoleShell, console_arg_parser


def run_console(modality: str, build: Callable, argv: list[str] | None = None) -> int:
    """`build(card, subject_runtime, seed, width, height)` returns the ConsoleController."""
    args = console_arg_parser(f"python -m consoles.{modality}").parse_args(argv)
    from rendering.subjects import load_runtime
    from tasks.card import load_card, load_card_file

    card = load_card_file(Path(args.task)) if args.task.endswith(".json") else load_card(args.task)
    if card.modality != modality:
        print(f"task {card.id} is a {card.modality} task, not {modality}", file=sys.stderr)
        return 2
    subject = load_runtime(args.subject)
    w, h = card.observation.width, card.observation.height
    shell = ConsoleShell(args, w, h)
    # Recorded in every state dump so a scorer never judges an episode against other anatomy.
    shell.provenance = {"subject": subject.id, "subject_version": subject.version,
                        "task": card.id, "task_version": card.version, "seed": args.seed}
    shell.attach(build(card, subject, args.seed, w, h))
    return shell.run()
