"""Display probes (`python -m tests.consoles.<name> --out DIR ...`): `run_probe` runs one on the test
display as its own process (the test process never creates a QApplication); `start_probe` is the
probe's own start-up."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_probe(display, module: str, out: Path, *extra: str, timeout_s: float = 120.0) -> Path:
    """Run tests.consoles.`module` with --out `out` on `display`; `out` once it exited cleanly."""
    env = dict(os.environ, DISPLAY=display.name)
    proc = subprocess.run([sys.executable, "-m", f"tests.consoles.{module}", "--out", str(out), *extra], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def start_probe(name: str, argv: list[str] | None, width: int, height: int):
    """The probe side: parse --out (made), apply the console environment, and make the benchmark-mode
    QApplication and a top-left window of width x height. (out, app, window)."""
    import argparse

    ap = argparse.ArgumentParser(prog=f"python -m tests.consoles.{name}")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from consoles.common.determinism import apply_environment, configure_application

    apply_environment()
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication([name])
    configure_application(app, benchmark_mode=True)
    window = QtWidgets.QWidget()
    window.setFixedSize(width, height)
    window.move(0, 0)
    return args.out, app, window
