"""Task registries: per task id, everything scoring and the reference solver need that a card must not hold.

One module per modality (``scoring/registry/ct.py``, ``mr.py``, ``us.py``) defines a ``REGISTRY``
dict of entries keyed by task id. Each entry names its oracle family and carries the task's anatomy,
thresholds, protocol, isocentre reference and the solver's inputs (margins, targets), and lists its
thresholds with ``checks()`` (the goal-check table, scoring/checks.py). The oracle and the reference solver
both read the entry, so they cannot disagree on what a task is about. The registry is plain data: it imports
no oracle (each oracle family's module owns its stage names: scoring.oracles.stage_names; the episode-answer
hooks are in scoring/answers/), so the arrows run one way (tests/scoring/test_registry_plain_data.py).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scoring.checks import Check


class RegistryError(KeyError):
    """A task has no registry entry (or its entry does not fit its card)."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class TaskEntry(Protocol):
    """What every modality's registry entry provides."""

    id: str
    family: str  # the oracle family (card.oracle must name the same)

    def checks(self) -> list[Check]:
        """Every threshold the oracle holds this task to (the goal-check table, scoring/checks.py)."""
        ...


def registry_file(modality: str) -> Path:
    """Where a modality's registry lives (for messages that tell the author what to edit)."""
    return Path(__file__).with_name(f"{modality}.py")


def registry_for(modality: str) -> dict[str, TaskEntry]:
    """The REGISTRY dict of a modality; a modality without a registry module has no entries."""
    try:
        mod = importlib.import_module(f"scoring.registry.{modality}")
    except ModuleNotFoundError as exc:
        if exc.name != f"scoring.registry.{modality}":
            raise
        return {}
    return mod.REGISTRY


def entry(task_id: str, modality: str) -> TaskEntry:
    """The registry entry of one task; a missing entry raises RegistryError naming the file to edit."""
    reg = registry_for(modality)
    if task_id not in reg:
        raise RegistryError(f"task {task_id!r} ({modality}) has no entry in the task registry "
                            f"{registry_file(modality).relative_to(Path(__file__).parents[2])}: add one "
                            f"(oracle family, anatomy, thresholds, solver inputs); known: {sorted(reg)}")
    return reg[task_id]


def entry_for_card(card: Any) -> TaskEntry:
    """The entry of a task card, checked against the card's oracle family."""
    e = entry(card.id, card.modality)
    if e.family != card.oracle:
        raise RegistryError(f"task {card.id!r}: the card names oracle {card.oracle!r} but its registry entry "
                            f"is of family {e.family!r}")
    return e
