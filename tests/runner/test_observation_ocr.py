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
from tasks.card import load_card
from tests.conftest import require_console
from tests.ocr import field_readings, first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
TASK = "ct_kub_low_dose_constraint"


class GeometryRecordingReference(ReferenceAgent):
    """The reference solver, also keeping the geometry and state behind every screen it saw
    (step k's entry describes step_k.png)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[dict[str, list[int]], dict]] = []

    @property
    def geometry(self) -> dict[str, list[int]]:
        return self.seen[-1][0]

    def act(self, obs) -> str:
        c = self._solver.control
        self.seen.append((c.geometry()["geometry"], c.state()))
        return super().act(obs)


@pytest.fixture(scope="module")
def kub_episode(display, tmp_path_factory):
    """One reference episode of the KUB task, with the geometry and state behind every screen."""
    require_console()
    require_tesseract()
    out = tmp_path_factory.mktemp("kub")
    agent = GeometryRecordingReference()
    v = run_episode(EpisodeSpec(load_card(TASK), "dev", 0), agent, out, display)
    assert v.outcome == "PASS", v.reason
    return agent, episode_dir(out, "reference", TASK, "dev", 0)


def test_kub_plan_and_technique_read_back_from_final_png(kub_episode):
    agent, d = kub_episode
    state = json.loads((d / "state.json").read_text())
    final = Image.open(d / "final.png")
    expected = {
        "start_field": format_number(state["plan"]["start_mm"], 1, ""),
        "end_field": format_number(state["plan"]["end_mm"], 1, ""),
        "table_height_field": format_number(state["plan"]["table_height_mm"], 1, ""),
        "kv_field": format_number(state["params"]["kv"], 0, ""),
        "mas_field": format_number(state["params"]["mas"], 0, ""),
        "pitch_field": format_number(state["params"]["pitch"], 2, ""),
    }
    # the units stand beside the fields (issue 24): plain labels, read with a margin
    units = {"kv_field_unit": "kV", "mas_field_unit": "mAs", "start_field_unit": "mm"}
    assert state["params"]["mas"] != 120.0, "the reference lowered the tube current: the value read must be its own"
    wrong = {}
    for name, text in expected.items():
        x, y, w, h = agent.geometry[name]
        crop = final.crop((x, y, x + w, y + h))
        ok, got = first_reading(field_readings(crop), lambda r, want="".join(text.split()): r == want)
        if not ok:
            wrong[name] = (text, got)
    for name, text in units.items():
        x, y, w, h = agent.geometry[name]
        ok, got = first_reading(readings(final.crop((x - 3, y - 3, x + w + 3, y + h + 3))), lambda r, t=text: r == t)
        if not ok:
            wrong[name] = (text, got)
    assert not wrong, f"values on final.png differ from state.json: {wrong}"


def _overlay_expectations(state: dict) -> dict[str, list[str]]:
    """The numbers each overlay label must show, from the model state of the same screen."""
    plan = state["plan"]
    out = {"scout_ap.label:start_label": [f"{plan['start_mm']:.1f}"],
           "scout_ap.label:end_label": [f"{plan['end_mm']:.1f}"],
           "scout_lateral.label:iso_label": [f"{plan['table_height_mm']:.1f}"]}
    rc = state["recon"]
    if rc["open_series"] is not None:
        s = next(x for x in state["series"] if x["uid"] == rc["open_series"])
        out["recon_view.label:info"] = [str(s["uid"]), str(rc["image_index"] + 1), str(s["n_images"])]
    return out


def test_overlay_labels_on_the_scouts_and_recon_read_back_as_the_model_holds(kub_episode):
    """Range, isocentre and image labels drawn by VTK over the images, on every screen that shows them."""
    agent, d = kub_episode
    checked, wrong = set(), []
    for k, (geo, state) in enumerate(agent.seen):
        shot = Image.open(d / f"step_{k:03d}.png")
        for name, want in _overlay_expectations(state).items():
            if name not in geo:
                continue
            x, y, w, h = geo[name]
            crop = shot.crop((x - 2, y - 2, x + w + 2, y + h + 2))
            ok, got = first_reading(readings(crop), lambda r, want=want: numbers(r) == want)
            if not ok:
                wrong.append(f"step {k} {name}: read {got}, model holds {want}")
            checked.add(name)
    assert checked == {"scout_ap.label:start_label", "scout_ap.label:end_label", "scout_lateral.label:iso_label",
                       "recon_view.label:info"}, checked
    assert not wrong, "\n".join(wrong)
