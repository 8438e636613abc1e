"""What every modality's reference solver shares: the planner's base, its operation type and the GUI
action helpers."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Op:
    """One console operation, named after the console model's method that performs it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


class PlannerBase:
    """A task's planner: its card, registry entry and subject; the subject's hidden oracle is loaded on
    first use (many tasks never read anatomy)."""

    def __init__(self, card: Any, subject: str, oracle: Any = None) -> None:
        from scoring.registry import entry_for_card

        self.card = card
        self.task = entry_for_card(card)
        self.subject = subject
        self._oracle = oracle

    @property
    def oracle(self) -> Any:
        if self._oracle is None:
            from scoring.subject_oracle import load_oracle

            self._oracle = load_oracle(self.subject)
        return self._oracle


def centre(rect: list[int]) -> tuple[int, int]:
    """Centre of an exported widget rect [x, y, w, h] (screen pixels)."""
    x, y, w, h = rect
    return x + w // 2, y + h // 2


def click(rect: list[int], button: str = "left") -> str:
    x, y = centre(rect)
    d: dict[str, Any] = {"action": "click", "x": x, "y": y}
    if button != "left":
        d["button"] = button
    return json.dumps(d)


def key(name: str) -> str:
    return json.dumps({"action": "key", "key": name})


def type_text(text: str) -> str:
    return json.dumps({"action": "type", "text": text})


def replace_text(text: str) -> list[str]:
    """After a click on a text field: select all, type `text`, Enter (three steps)."""
    return [key("ctrl+a"), type_text(text), key("Enter")]


def wait_seconds(seconds: float) -> float:
    """How long a solver waits for a wanted `seconds`: 0.5 to 30 s, to 10 ms (GUI and headless alike)."""
    return round(min(30.0, max(0.5, seconds)), 2)


def wait(seconds: float) -> str:
    return json.dumps({"action": "wait", "seconds": wait_seconds(seconds)})
