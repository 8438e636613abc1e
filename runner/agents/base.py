"""What every agent implements. Agents see screenshots and feedback text only.

The privileged reference solver additionally receives a `ControlView` (state and widget geometry
from the control socket), but its actions go through the same parse -> X input path as any agent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tasks.card import TaskCard


@dataclass(frozen=True)
class StepRecord:
    """One past step as the agent may see it: what it sent and what came back."""

    step: int
    raw: str
    action: dict[str, Any] | None
    status: str  # "executed" | "rejected"
    feedback: str


@dataclass
class Observation:
    """What the agent gets before each step."""

    step: int  # 0-based index of the step about to be taken
    screenshot_png: bytes
    width: int
    height: int
    goal: str
    steps_left: int
    history: list[StepRecord] = field(default_factory=list)


class AgentFault(RuntimeError):
    """The agent itself failed (e.g. the model endpoint keeps erroring): the episode is INVALID."""


class Agent(Protocol):
    """An agent returns action text (JSON, computer_13 dict or pyautogui call) for each observation."""

    name: str

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        """Start a new episode."""

    def act(self, obs: Observation) -> str:
        """Return the raw action text for this step. Raise AgentFault if the agent cannot answer."""


class ControlView(Protocol):
    """Read-only privileged access for reference solvers (state + widget geometry)."""

    def state(self) -> dict[str, Any]: ...

    def geometry(self) -> dict[str, list[int]]: ...
