"""Oracle families: pure functions (state dump, subject oracle, task card) -> OracleResult.

Thresholds live in scoring/registry (plain data), never in task cards. Each family's module owns its workflow
stage names (a module-level ``stage_names(entry)``), so the arrows run one way: oracles read the registry, the
registry imports no oracle.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from scoring.verdict import OracleResult

OracleFn = Callable[..., OracleResult]
_REGISTRY: dict[str, OracleFn] = {}


def register(name: str) -> Callable[[OracleFn], OracleFn]:
    def deco(fn: OracleFn) -> OracleFn:
        _REGISTRY[name] = fn
        return fn
    return deco


def get_oracle(name: str) -> OracleFn:
    _load_families()
    if name not in _REGISTRY:
        raise KeyError(f"no oracle named {name!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def stage_names(entry: Any) -> list[str]:
    """The workflow stage names a registry entry's oracle reports, in verdict order (the card's
    workflow_stages): asked of the module that registered the entry's family."""
    module = importlib.import_module(get_oracle(entry.family).__module__)
    return module.stage_names(entry)


def _load_families() -> None:
    from scoring.oracles import ct  # noqa: F401  (registers the CT families)
    from scoring.oracles import mr  # noqa: F401  (registers the MR families)
    from scoring.oracles import mr_planning  # noqa: F401  (registers the MR geometry-planning family)
    from scoring.oracles import mr_mapping  # noqa: F401  (registers the MR T1/T2 mapping family)
    from scoring.oracles import us  # noqa: F401  (registers the ultrasound families)
