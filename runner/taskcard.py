"""Task cards: the agent-visible definition of one task (tasks/<modality>/<id>/task.json).

A card holds what the agent is told and what the runner needs; never thresholds or answers.
Loading validates the card and names the offending field on error.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Modality = Literal["ct", "mr", "us"]
ACTION_TYPES = ("click", "double_click", "drag", "scroll", "move", "type", "key", "wait", "done")


class TaskCardError(ValueError):
    """A task card that is missing, unreadable or invalid."""


class ObservationProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: int = Field(1280, ge=320, le=3840)
    height: int = Field(800, ge=240, le=2160)
    format: Literal["png"] = "png"


class ActionProfile(BaseModel):
    """Which actions and keys an agent may use, and the bounds on them."""

    model_config = ConfigDict(extra="forbid")
    allowed_actions: list[str] = Field(default_factory=lambda: list(ACTION_TYPES))
    allowed_keys: list[str] = Field(
        default_factory=lambda: ["Enter", "Tab", "Escape", "BackSpace", "Delete", "Up", "Down",
                                 "Left", "Right", "Home", "End", "Page_Up", "Page_Down", "ctrl+a"]
    )
    max_text_length: int = Field(32, ge=1, le=1024)
    max_wait_seconds: float = Field(60.0, gt=0, le=600)

    @field_validator("allowed_actions")
    @classmethod
    def _known_actions(cls, v: list[str]) -> list[str]:
        unknown = [a for a in v if a not in ACTION_TYPES]
        if unknown:
            raise ValueError(f"unknown action types {unknown}; known: {list(ACTION_TYPES)}")
        return v


class Budgets(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_steps: int = Field(..., ge=1, le=1000)


class TaskCard(BaseModel):
    """One task card. `initial_state` and `perturbations` are interpreted by the modality's console."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(..., pattern=r"^[A-Za-z0-9_]+$")
    version: str
    modality: Modality
    level: int = Field(..., ge=0, le=6)
    title: str
    goal: str = Field(..., min_length=10)
    budgets: Budgets
    observation: ObservationProfile = Field(default_factory=ObservationProfile)
    action_profile: ActionProfile = Field(default_factory=ActionProfile)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    perturbations: dict[str, Any] = Field(default_factory=dict)
    oracle: str = Field(..., description="name of the oracle family in scoring.oracles")
    workflow_stages: list[str] = Field(default_factory=list)

    @property
    def path(self) -> Path:
        return tasks_root() / self.modality / self.id / "task.json"


def tasks_root() -> Path:
    """Folder holding the shipped task cards (package data of `tasks`)."""
    return Path(str(resources.files("tasks")))


def load_card_file(path: Path) -> TaskCard:
    """Load and validate one task.json; errors name the file and the field."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise TaskCardError(f"task card not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise TaskCardError(f"task card {path} is not valid JSON: {exc}") from exc
    try:
        card = TaskCard.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise TaskCardError(f"task card {path} is invalid: {problems}") from exc
    if card.id != Path(path).parent.name:
        raise TaskCardError(f"task card {path}: id {card.id!r} does not match its folder name")
    return card


@lru_cache(maxsize=None)
def all_cards() -> tuple[TaskCard, ...]:
    """Every shipped card, sorted by modality then id."""
    root = tasks_root()
    cards = [load_card_file(p) for p in sorted(root.glob("*/*/task.json"))]
    return tuple(sorted(cards, key=lambda c: (c.modality, c.id)))


def load_card(task_id: str) -> TaskCard:
    """The shipped card with this id."""
    for card in all_cards():
        if card.id == task_id:
            return card
    known = ", ".join(c.id for c in all_cards())
    raise TaskCardError(f"unknown task {task_id!r}; known tasks: {known}")


def select_cards(spec: str) -> list[TaskCard]:
    """Resolve a --tasks value: 'all', a modality ('ct', 'mr', 'us') or comma-separated ids."""
    cards = list(all_cards())
    if spec == "all":
        return cards
    if spec in ("ct", "mr", "us"):
        chosen = [c for c in cards if c.modality == spec]
        if not chosen:
            raise TaskCardError(f"no tasks exist yet for modality {spec!r}")
        return chosen
    return [load_card(t.strip()) for t in spec.split(",") if t.strip()]
