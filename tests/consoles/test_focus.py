"""A field that gets disabled while it has the focus hands the focus to nobody.

Qt would move it to the next field and select that field's text (as if Tab were pressed), so a
field the agent never touched would look selected and take its next keystrokes. It must not
matter whether the window is active: Qt deactivates it on a wall-clock timer, so under load it
sometimes is not, and the screenshots of identical runs differed.
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


def test_disabling_the_focused_field_selects_no_other_field_active_or_not(display):
    require_console()
    r = subprocess.run([sys.executable, "-m", "tests.consoles.focus_probe"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, DISPLAY=display.name))
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["inactive"]["window_active"] is False, "the probe failed to deactivate the window"
    for case in ("active", "inactive"):
        assert not out[case]["b_is_focus_widget"] and not out[case]["b_selected"], (case, out)
