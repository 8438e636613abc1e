"""What every modality's reference solver shares: the planner's operation type and the GUI action helpers."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Op:
    """One console operation, named after the console model's method that performs it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


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


def wait_seconds(seconds: float) -> float:
    """How long a solver waits for a wanted `seconds`: 0.5 to 30 s, to 10 ms (GUI and headless alike)."""
    return round(min(30.0, max(0.5, seconds)), 2)


def wait(seconds: float) -> str:
    return json.dumps({"action": "wait", "seconds": wait_seconds(seconds)})
