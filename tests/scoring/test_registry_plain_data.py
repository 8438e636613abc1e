"""Issue 32: the task registry is plain data and the arrows run one way: the oracles read the registry,
the registry (scoring/registry/*.py) imports no oracle, not even inside a function. Each oracle family's
module owns its workflow stage names (scoring.oracles.stage_names asks it); the episode-answer hooks live in
scoring/answers/."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from scoring.oracles import stage_names
from scoring.registry import entry_for_card
from tasks.card import all_cards

REGISTRY_DIR = Path(__file__).resolve().parents[2] / "scoring" / "registry"
FILES = sorted(REGISTRY_DIR.glob("*.py"))


def imported_modules(source: str, package: str) -> set[str]:
    """Every module an ast imports, anywhere in it (relative imports resolved against `package`)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return out


def test_import_reader_sees_nested_and_relative_imports() -> None:
    src = ("from __future__ import annotations\ndef f():\n    from scoring.oracles.ct import stage_names\n"
           "def g():\n    from ..oracles import mr\n    import scoring.oracles.us\n")
    mods = imported_modules(src, "scoring.registry")
    assert {"scoring.oracles.ct", "scoring.oracles.mr", "scoring.oracles.us"} <= mods


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_registry_imports_no_oracle(path: Path) -> None:
    mods = imported_modules(path.read_text(encoding="utf-8"), "scoring.registry")
    bad = sorted(m for m in mods if m == "scoring.oracles" or m.startswith("scoring.oracles."))
    assert not bad, f"{path.name} imports oracle modules {bad}: the registry holds data; oracles read it"


@pytest.mark.parametrize("card", sorted(all_cards(), key=lambda c: c.id), ids=lambda c: c.id)
def test_stage_names_come_from_the_oracle_module_of_the_family(card) -> None:
    names = stage_names(entry_for_card(card))
    assert names and len(names) == len(set(names)), names
