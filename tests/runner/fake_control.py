"""A console stand-in for testing a reference solver's GUI layer without a display."""
from __future__ import annotations

from typing import Any


class FakeControl:
    """The model's state, a geometry with one fixed rect for every widget name a solver asks for (the
    names asked are recorded in `asked`), and the given viewport transforms."""

    RECT = [100, 200, 40, 20]

    def __init__(self, model: Any, transforms: dict[str, dict[str, float]] | None = None) -> None:
        self.model = model
        self.transforms = transforms or {}
        self.asked: list[str] = []

    def state(self) -> dict[str, Any]:
        return self.model.state()

    def geometry(self) -> dict[str, Any]:
        control = self

        class Geo(dict):
            def __getitem__(self, name: str) -> list[int]:
                control.asked.append(name)
                return list(FakeControl.RECT)

            def __contains__(self, name: object) -> bool:
                return True

        return {"geometry": Geo(), "transforms": self.transforms}
