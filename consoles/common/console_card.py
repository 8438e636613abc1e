"""What a console reads of its task card, with no Qt and no card schema (pydantic).

Under the runner a console receives the card the runner already validated, as JSON (`--card-json`, and
the `card` argument of `reset`), so the console process never imports tasks.card: pydantic and the card
classes cost a console about 10 MiB (issue 14). Given only a task id or file (a person launching a
console by hand) it validates the card itself, with the same errors as the runner.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping


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
        """From a card's JSON data or text (tasks.card.console_card / console_card_json); an error names
        what is missing."""
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
    from tasks.card import console_card

    return ConsoleCard.from_json(console_card(task))
