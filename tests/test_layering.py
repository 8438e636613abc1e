"""Models, physics, oracles, metrics and action parsing never import Qt or VTK (napari-style contract).

Each module is imported in a fresh interpreter in which importing PySide6 or vtk raises.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

PURE_MODULES = [
    "rendering.ct_physics", "rendering.ct_contrast", "rendering.seeding", "rendering.subjects",
    "scoring.verdict", "scoring.score", "scoring.oracles.ct", "scoring.oracles.coverage", "scoring.aggregate",
    "scoring.report", "scoring.subject_oracle",
    "runner.actions", "runner.taskcard", "runner.results", "runner.agents.api", "runner.agents.simple",
    "runner.agents.reference.ct", "runner.model_cache", "runner.fingerprint", "runner.doctor",
    "consoles.ct.model", "consoles.ct.protocols", "consoles.ct.bolus", "consoles.common.model_base",
    "consoles.common.params", "consoles.common.clock", "consoles.common.protocol",
    "consoles.common.overlays", "consoles.common.colormaps", "consoles.common.layout_state", "rendering.geometry",
    "consoles.ct.graphics",
]

BLOCKER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'vtk', 'vtkmodules'):
            raise ImportError('layering violation: ' + name)
sys.meta_path.insert(0, Block())
import importlib
importlib.import_module(sys.argv[1])
"""


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_imports_without_qt_or_vtk(module):
    r = subprocess.run([sys.executable, "-c", BLOCKER, module], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-800:]


def test_the_blocker_itself_blocks():
    r = subprocess.run([sys.executable, "-c", BLOCKER, "consoles.common.viewport"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "layering violation" in r.stderr
