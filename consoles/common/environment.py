"""The console side of the environment fingerprint: what a console's pixels depend on.

Collected inside the console process, because only it has Qt, VTK and a live GL context; the
runner adds its own fields (Xvfb, imagecodecs/zlib-ng, mss: see runner/fingerprint.py). Computed once per
process, at the first state dump, so it costs nothing at startup and never runs between the
renders of an episode's first screenshots.
"""
from __future__ import annotations

import hashlib
import sys
from typing import Any, Iterable

import numpy
import PySide6
from PySide6 import QtCore
from vtkmodules.vtkCommonCore import vtkVersion

from consoles.common.determinism import (
    BOLD_FONT_FILE_CANDIDATES,
    FONT_FILE_CANDIDATES,
    MONO_FONT_FILE_CANDIDATES,
)

GL_FIELDS = {"OpenGL vendor string:": "gl_vendor", "OpenGL renderer string:": "gl_renderer",
             "OpenGL version string:": "gl_version"}
NO_GL = "unavailable (no realised render window)"


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pinned_font_hashes() -> dict[str, str]:
    """{path: sha256} of the font file each pinned face is loaded from ("missing" if none exists)."""
    out: dict[str, str] = {}
    for candidates in (FONT_FILE_CANDIDATES, BOLD_FONT_FILE_CANDIDATES, MONO_FONT_FILE_CANDIDATES):
        for path in candidates:
            try:
                out[path] = sha256_file(path)
                break
            except OSError:
                continue
        else:
            out[candidates[0]] = "missing"
    return out


def parse_gl_report(report: str) -> dict[str, str]:
    """The GL vendor/renderer/version lines of vtkOpenGLRenderWindow.ReportCapabilities()."""
    out: dict[str, str] = {}
    for line in report.splitlines():
        for prefix, key in GL_FIELDS.items():
            if line.startswith(prefix):
                out[key] = line[len(prefix):].strip()
    return out


def gl_strings(render_windows: Iterable[Any]) -> dict[str, str]:
    """GL strings of the first realised render window (an unrealised one reports only GLX lines)."""
    for rw in render_windows:
        found = parse_gl_report(rw.ReportCapabilities() or "")
        if len(found) == len(GL_FIELDS):
            return found
    return {key: NO_GL for key in GL_FIELDS.values()}


def console_environment(render_windows: Iterable[Any]) -> dict[str, Any]:
    """Python, Qt (runtime and binding), VTK, numpy, GL strings and pinned font hashes."""
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "qt": QtCore.qVersion(),
        "pyside6": PySide6.__version__,
        "vtk": vtkVersion.GetVTKVersion(),
        "numpy": numpy.__version__,
        "fonts": pinned_font_hashes(),
    }
    env.update(gl_strings(render_windows))
    return env
