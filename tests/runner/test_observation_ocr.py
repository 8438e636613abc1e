"""The agent's observation carries the values it needs: OCR of a real episode's final.png.

A reference episode of ct_kub_low_dose_constraint runs end to end (real console, Xvfb, XTEST
input, mss capture, PNG). The plan and acquisition values are then read back from final.png with
Tesseract, at the field rectangles the console exports, and must equal state.json.
"""
from __future__ import annotations

import json

import pytest
from PIL import Image

from consoles.common.numeric import format_number
from runner.agents.reference import ReferenceAgent
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from runner.taskcard import load_card
from tests.conftest import require_console
from tests.ocr import field_readings, require_tesseract

pytestmark = pytest.mark.display
TASK = "ct_kub_low_dose_constraint"


class GeometryRecordingReference(ReferenceAgent):
    """The reference solver, also keeping the widget rectangles of the last screen it acted on."""

    geometry: dict[str, list[int]] = {}

    def act(self, obs) -> str:
        action = super().act(obs)
        self.geometry = self._solver.control.geometry()["geometry"]
        return action


def test_kub_plan_and_technique_read_back_from_final_png(display, tmp_path):
    require_console()
    require_tesseract()
    agent = GeometryRecordingReference()
    v = run_episode(EpisodeSpec(load_card(TASK), "dev", 0), agent, tmp_path, display)
    assert v.outcome == "PASS", v.reason
    d = episode_dir(tmp_path, "reference", TASK, "dev", 0)
    state = json.loads((d / "state.json").read_text())
    final = Image.open(d / "final.png")
    expected = {
        "start_field": format_number(state["plan"]["start_mm"], 1, "mm"),
        "end_field": format_number(state["plan"]["end_mm"], 1, "mm"),
        "table_height_field": format_number(state["plan"]["table_height_mm"], 1, "mm"),
        "kv_field": format_number(state["params"]["kv"], 0, "kV"),
        "mas_field": format_number(state["params"]["mas"], 0, "mAs"),
        "pitch_field": format_number(state["params"]["pitch"], 2, ""),
    }
    assert state["params"]["mas"] != 120.0, "the reference lowered the tube current: the value read must be its own"
    wrong = {}
    for name, text in expected.items():
        x, y, w, h = agent.geometry[name]
        crop = final.crop((x, y, x + w, y + h))
        got = list(field_readings(crop))
        if "".join(text.split()) not in got:
            wrong[name] = (text, got)
    assert not wrong, f"values on final.png differ from state.json: {wrong}"
