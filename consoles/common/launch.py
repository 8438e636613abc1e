"""Shared `python -m consoles.<modality>` entry: parse args, load the card and subject, run the shell.

The same loading serves the control command `reset` (ConsoleShell.cmd_reset): the next episode's
card, subject and seed make a new model in the running process, so what a reset console shows is
made by the very code a fresh launch runs.

A console reads few fields of its task card (ConsoleCard). Under the runner it receives the card the
runner already validated, as JSON (`--card-json`, and the `card` argument of `reset`), and never
imports the card schema: pydantic and the card classes cost a console about 10 MiB (issue 14). Given
only `--task` (a person launching a console by hand) it validates the card itself, with the same
errors as the runner.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from consoles.common.shell import ConsoleShell, console_arg_parser

# (card, subject runtime, seed) -> the modality's model
ModelFactory = Callable[[Any, Any, int], Any]


@dataclass(frozen=True)
class ConsoleCard:
    """The fields of a validated task card that a console reads; `initial_state` and
    `perturbations` are plain JSON (what tasks.card's ConsoleInputs read as)."""

    id: str
    version: str
    modality: str
    width: int
    height: int
    initial_state: dict[str, Any]
    perturbations: dict[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> "ConsoleCard":
        """From a card's JSON (tasks.card.console_card_json); an error names what is missing."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ValueError(f"card JSON is not valid JSON: {exc}") from exc
        if not isinstance(data, Mapping):
            raise ValueError(f"card JSON must be an object, not {type(data).__name__}")
        missing = [k for k in ("id", "version", "modality", "observation") if k not in data]
        if missing:
            raise ValueError(f"card JSON lacks {', '.join(missing)} (hand a console tasks.card.console_card_json)")
        try:
            width, height = int(data["observation"]["width"]), int(data["observation"]["height"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"card JSON observation needs integer width and height, not "
                             f"{data['observation']!r}") from exc
        return cls(id=str(data["id"]), version=str(data["version"]), modality=str(data["modality"]),
                   width=width, height=height, initial_state=dict(data.get("initial_state") or {}),
                   perturbations=dict(data.get("perturbations") or {}))


def load_console_card(task: str, card_json: Mapping[str, Any] | str | None = None) -> ConsoleCard:
    """The card the console runs: `card_json` when the runner handed it over (already validated),
    else `task` (an id or a task.json path) validated here, which imports the card schema."""
    if card_json is not None:
        card = ConsoleCard.from_json(card_json)
        if not task.endswith(".json") and card.id != task:
            raise ValueError(f"card JSON is task {card.id!r}, not {task!r}")
        return card
    from tasks.card import console_card_json

    return ConsoleCard.from_json(console_card_json(task))


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
