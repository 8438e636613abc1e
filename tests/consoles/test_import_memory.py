"""PySide6's per-import source check must not leave every imported module's source in linecache."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = """
import linecache, sys
from PySide6 import QtCore  # installs shiboken's per-import check
if sys.argv[1] == "wrapped":
    from consoles.common.import_memory import forget_checked_sources
    assert forget_checked_sources() and forget_checked_sources()  # found, and idempotent
import colorsys  # a module nobody imported yet
print(any(k.endswith("colorsys.py") for k in linecache.cache))
"""


@pytest.mark.parametrize("mode,kept", [("plain", "True"), ("wrapped", "False")])
def test_checked_sources_are_forgotten(mode, kept):
    r = subprocess.run([sys.executable, "-c", CODE, mode], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == kept  # plain: the control shows PySide6 does fill the cache
