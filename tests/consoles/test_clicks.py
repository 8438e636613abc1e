"""Clicks and drags reach widgets the same way in every run, through real XTEST input.

A double click is exactly two presses of one runner step; clicks of different steps never pair,
however close in time and place; a short drag followed by another starting where it ended is two
drags (Qt used to turn the second press into a double click, so that drag never started).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_console

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parents[2]


def _probe(display) -> dict:
    r = subprocess.run([sys.executable, "-m", "tests.consoles.click_probe"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, DISPLAY=display.name))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_double_clicks_pair_within_one_step_only_and_every_drag_starts(display):
    require_console()
    runs = [_probe(display) for _ in range(2)]
    assert runs[0] == runs[1], "the same input gave different events in two runs"
    out = runs[0]
    assert out["double_click"] == [["press", "press", "double"]]
    assert out["two_clicks_in_two_steps"] == [["press"], ["press"]]
    assert out["short_drags"] == [["press"], ["press"], ["press"]]
