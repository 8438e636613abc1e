"""Privileged reference solvers: read state, geometry and the subject oracle; act only via X input."""
from __future__ import annotations

from tasks.card import TaskCard


class ReferenceAgent:
    """Dispatches to the modality's solver for each episode."""

    name = "reference"

    def __init__(self) -> None:
        self._solver = None
        self._control = None

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        if card.modality == "ct":
            from runner.agents.reference.ct import CTReferenceSolver

            self._solver = CTReferenceSolver(card, subject)
        elif card.modality == "mr":
            from runner.agents.reference.mr import MRReferenceSolver

            self._solver = MRReferenceSolver(card, subject)
        elif card.modality == "us":
            from runner.agents.reference.us import USReferenceSolver

            self._solver = USReferenceSolver(card, subject)
        else:
            raise NotImplementedError(f"no reference solver for modality {card.modality!r} yet")

    def bind_control(self, control) -> None:
        self._solver.control = control

    def act(self, obs) -> str:
        return self._solver.next_action(obs)
