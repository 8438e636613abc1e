"""Import contracts of the package graph, over every module of consoles/, rendering/, runner/, scoring/, tasks/.

The rules hold for every module from its first commit: modules are found by walking the packages, never
listed by hand.

1. Layers (no upward edges). A module may import, of our packages, only its own package and packages of
   a strictly lower layer:

       tasks (0)  <  rendering (1)  <  scoring (2), consoles (2)  <  runner (3)

   so tasks imports nothing of ours; rendering imports only tasks; scoring and consoles import rendering
   and tasks but never each other and never runner; runner may import everything. Every top-level package
   of the repository (a folder with __init__.py, other than tests/) must have a layer.
2. No Qt or VTK in pure modules (PySide6, shiboken6, vtk, vtkmodules). Every module of rendering/,
   scoring/, tasks/ and runner/ is pure; a module of consoles/ is pure unless its own name is a Qt one:
   view* (view, view_base, viewport, ...), shell, widgets, layout, launch, determinism, environment,
   __main__. A pure module must not import a Qt module of ours either.

Both are checked statically (every import statement anywhere in a module, including imports inside
functions), and rule 2 also at runtime: every pure module (except __main__ entry points) is imported in a
fresh interpreter in which importing PySide6 or vtk raises, which catches what the static scan cannot see
(e.g. a third-party module that pulls in Qt). Negative controls write a violating module into a temporary
copy of the tree and check that the contract reports it.
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = {"tasks": 0, "rendering": 1, "scoring": 2, "consoles": 2, "runner": 3}
NOT_PACKAGES = {"tests"}  # top-level folders with __init__.py that are not part of the product
QT_TOP = ("PySide6", "shiboken6", "vtk", "vtkmodules")
QT_MODULE_NAME = re.compile(r"^(view\w*|viewport|shell|widgets|layout|launch|determinism|environment|__main__)$")


@dataclass(frozen=True)
class Edge:
    """One import statement: `module` imports `target` (a dotted name) at `line`."""

    module: str
    target: str
    line: int


def modules_under(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the layered packages under `root`."""
    found: dict[str, Path] = {}
    for pkg in LAYERS:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports_of(module: str, path: Path) -> list[Edge]:
    """Every import in the module (any depth), relative imports resolved to absolute names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    edges: list[Edge] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [Edge(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from pkg import sub` may import the submodule pkg.sub: record both candidates
            edges.append(Edge(module, prefix, node.lineno))
            edges += [Edge(module, f"{prefix}.{alias.name}", node.lineno) for alias in node.names
                      if alias.name != "*"]
    return edges


def is_pure(module: str) -> bool:
    """Rule 2: may this module use Qt/VTK? (decided by its package and its own name only)."""
    parts = module.split(".")
    return not (parts[0] == "consoles" and QT_MODULE_NAME.match(parts[-1]))


def violations(root: Path) -> list[str]:
    """Every broken contract under `root`, one readable line each (empty when the graph is clean)."""
    mods = modules_under(root)
    problems: list[str] = []
    for d in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
        if d.name not in LAYERS and d.name not in NOT_PACKAGES:
            problems.append(f"package {d.name}/ has no layer in tests/test_layering.py LAYERS")
    for module, path in mods.items():
        own = module.split(".")[0]
        rel = path.relative_to(root)
        for e in imports_of(module, path):
            top = e.target.split(".")[0]
            if top in LAYERS and top != own and LAYERS[top] >= LAYERS[own]:
                problems.append(f"{rel}:{e.line}: {module} imports {e.target}: {own} (layer {LAYERS[own]}) "
                                f"must not import {top} (layer {LAYERS[top]})")
            if not is_pure(module):
                continue
            if top in QT_TOP:
                problems.append(f"{rel}:{e.line}: pure module {module} imports {e.target} (Qt/VTK)")
            elif e.target in mods and not is_pure(e.target):
                problems.append(f"{rel}:{e.line}: pure module {module} imports {e.target}, a Qt module")
    return sorted(set(problems))


# ---- the contracts on the real tree ------------------------------------------------------------
def test_the_package_graph_keeps_its_layers_and_pure_modules_stay_pure():
    problems = violations(REPO)
    assert not problems, "import contracts broken:\n" + "\n".join(problems)


def test_the_scan_sees_every_package_and_the_known_qt_modules():
    mods = modules_under(REPO)
    assert {m.split(".")[0] for m in mods} == set(LAYERS)
    assert not is_pure("consoles.common.viewport") and not is_pure("consoles.ct.view")
    assert is_pure("consoles.common.layout_state") and is_pure("consoles.ct.model") and is_pure("runner.env")
    # the scan reads imports inside functions too (a console validates a hand-given card lazily)
    assert is_pure("consoles.common.console_card")
    assert any(e.target.startswith("tasks.card") for e in imports_of("consoles.common.console_card",
                                                                     mods["consoles.common.console_card"]))


BLOCKER = """
import sys, importlib, importlib.abc, traceback
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'vtk', 'vtkmodules'):
            raise ImportError('layering violation: ' + name)
sys.meta_path.insert(0, Block())
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed.append(name + ': ' + ''.join(traceback.format_exception_only(type(exc), exc)).strip())
print('\\n'.join(failed), file=sys.stderr)
sys.exit(1 if failed else 0)
"""


def pure_runtime_modules(package: str) -> list[str]:
    """The pure modules of `package` to import under the blocker (entry points are not imported: they run)."""
    return [m for m in modules_under(REPO) if m.split(".")[0] == package and is_pure(m)
            and not m.endswith("__main__")]


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_pure_modules_import_without_qt_or_vtk(package):
    mods = pure_runtime_modules(package)
    assert mods
    r = subprocess.run([sys.executable, "-c", BLOCKER, *mods], capture_output=True, text=True, timeout=100,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_blocker_itself_blocks():
    r = subprocess.run([sys.executable, "-c", BLOCKER, "consoles.ct.model", "consoles.common.viewport"],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode != 0 and "layering violation" in r.stderr
    assert "consoles.common.viewport" in r.stderr and "consoles.ct.model:" not in r.stderr


# ---- negative controls: a temporary copy of the tree with one violation added ----------------------
@pytest.fixture()
def tree(tmp_path) -> Path:
    """A copy of the layered packages' sources (no data files), clean to start with."""
    for pkg in LAYERS:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.png",
                                                                                 "*.gif", "*.json"))
    assert violations(tmp_path) == []
    return tmp_path


@pytest.mark.parametrize("module, source, needle", [
    ("scoring/upward.py", "from runner.episode import run_episode\n",
     "scoring.upward imports runner.episode: scoring (layer 2) must not import runner"),
    ("scoring/oracles/lazy.py", "def f():\n    from ..score import x\n    import runner.results\n",
     "scoring.oracles.lazy imports runner.results"),
    ("consoles/ct/sideways.py", "from scoring.oracles import ct\n", "consoles (layer 2) must not import scoring"),
    ("tasks/helper.py", "from . import card\nimport rendering.geometry\n", "tasks (layer 0) must not import rendering"),
    ("rendering/relative.py", "from ..runner import cli\n", "rendering (layer 1) must not import runner"),
    ("consoles/ct/planner.py", "import PySide6.QtCore\n", "pure module consoles.ct.planner imports PySide6.QtCore"),
    ("runner/headless/draw.py", "from vtkmodules import vtkCommonCore\n", "imports vtkmodules (Qt/VTK)"),
    ("scoring/snap.py", "from consoles.common.viewport import Viewport\n",
     "scoring (layer 2) must not import consoles"),
    ("consoles/common/math2.py", "from consoles.common.shell import ConsoleShell\n",
     "pure module consoles.common.math2 imports consoles.common.shell, a Qt module"),
])
def test_a_violation_added_to_a_copy_of_the_tree_is_reported(tree, module, source, needle):
    (tree / module).write_text(source)
    problems = violations(tree)
    assert any(needle in p for p in problems), problems


def test_allowed_imports_in_a_copy_of_the_tree_pass(tree):
    (tree / "consoles/ct/view_extra.py").write_text("import PySide6.QtWidgets\nfrom tasks.card import TaskCard\n")
    (tree / "scoring/uses_lower.py").write_text("import rendering.geometry\nfrom tasks.card import load_card\n")
    (tree / "runner/uses_all.py").write_text("import consoles.ct.model, scoring.score, rendering, tasks.card\n")
    assert violations(tree) == []


def test_a_new_top_level_package_needs_a_layer(tree):
    (tree / "plugins").mkdir()
    (tree / "plugins/__init__.py").write_text("")
    assert any("package plugins/ has no layer" in p for p in violations(tree))
