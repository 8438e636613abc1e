"""Issue 32: the task registry is plain data and the arrows run one way: the oracles read the registry,
the registry (scoring/registry/*.py) imports no oracle, not even inside a function. Each oracle family's
module owns its workflow stage names (scoring.oracles.stage_names asks it); the episode-answer hooks live in
scoring/answers/. The import scan is the layering test's (every import at any depth, relative ones resolved)."""
from __future__ import annotations

from pathlib import Path

import pytest

from scoring.oracles import stage_names
from scoring.registry import entry_for_card
from tasks.card import all_cards
from tests.test_layering import REPO, imports_of, modules_under

REGISTRY_MODULES = {m: p for m, p in modules_under(REPO).items() if m.startswith("scoring.registry")}


def oracle_imports(module: str, path: Path) -> list[str]:
    return sorted({e.target for e in imports_of(module, path)
                   if e.target == "scoring.oracles" or e.target.startswith("scoring.oracles.")})


def test_the_scan_sees_every_registry_module_and_a_nested_oracle_import(tmp_path: Path) -> None:
    assert {"scoring.registry", "scoring.registry.ct", "scoring.registry.mr", "scoring.registry.us"} <= set(REGISTRY_MODULES)
    bad = tmp_path / "ct.py"  # the shape the registry had before issue 32: a lazy import inside a method
    bad.write_text("def stage_names(self):\n    from ..oracles.ct import stage_names\n    return stage_names(self)\n")
    assert oracle_imports("scoring.registry.ct", bad) == ["scoring.oracles.ct", "scoring.oracles.ct.stage_names"]


@pytest.mark.parametrize("module", sorted(REGISTRY_MODULES))
def test_registry_imports_no_oracle(module: str) -> None:
    bad = oracle_imports(module, REGISTRY_MODULES[module])
    assert not bad, f"{module} imports {bad}: the registry holds data; the oracles read it"


@pytest.mark.parametrize("card", sorted(all_cards(), key=lambda c: c.id), ids=lambda c: c.id)
def test_stage_names_come_from_the_oracle_module_of_the_family(card) -> None:
    names = stage_names(entry_for_card(card))
    assert names and len(names) == len(set(names)), names
