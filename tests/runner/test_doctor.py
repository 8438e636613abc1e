"""`medimageos doctor` end to end on a real Xvfb, and the fingerprint an episode records."""
from __future__ import annotations

import io
import json

import pytest

from runner.agents.reference import ReferenceAgent
from runner.doctor import GOLDEN_PATH, REPRODUCED, run_doctor
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card
from scoring.aggregate import score_command
from tests.conftest import require_console

CONSOLE_FIELDS = {"python", "qt", "pyside6", "vtk", "numpy", "gl_vendor", "gl_renderer", "gl_version", "fonts"}
RUNNER_FIELDS = {"xvfb", "imagecodecs", "zlib_ng", "png_level", "mss"}
REGENERATE = ("if the consoles' look changed on purpose, regenerate the golden file: "
              ".venv/bin/medimageos doctor --write-golden")


def _doctor(tmp_path, golden=GOLDEN_PATH) -> tuple[int, str]:
    out = io.StringIO()
    rc = run_doctor(golden_path=golden, keep=tmp_path / "episodes", out=out)
    return rc, out.getvalue()


@pytest.mark.display
def test_doctor_passes_on_this_machine(tmp_path):
    require_console()
    rc, out = _doctor(tmp_path)
    assert rc == 0 and f"verdict: {REPRODUCED}" in out, out + "\n" + REGENERATE
    assert "ok    GL: " in out and "ok    fonts: " in out and "ok    Xvfb: X.Org X Server" in out


@pytest.mark.display
def test_doctor_reports_a_tampered_golden_file(tmp_path):
    require_console()
    golden = json.loads(GOLDEN_PATH.read_text())
    key = "reference/ct_kub_low_dose_constraint/dev/seed0"
    images = golden["episodes"][key]["images"]
    images["step_005.png"]["rgb"] = "0" * 64  # the golden machine drew other pixels here
    images["step_006.png"]["png"] = "0" * 64  # same pixels, other PNG bytes
    golden["fingerprint"]["vtk"] = "9.3.0"
    golden["fingerprint"]["imagecodecs"] = "2024.1.1"
    tampered = tmp_path / "golden.json"
    tampered.write_text(json.dumps(golden))
    rc, out = _doctor(tmp_path, tampered)
    assert rc == 1, out
    assert f"episode {key}: pixels differ in 1 of" in out and "(first: step_005.png)" in out
    assert "PNG bytes differ with identical pixels in 1 of" in out
    assert "vtk '9.3.0' -> " in out and "imagecodecs '2024.1.1' -> " in out
    assert "verdict: this machine does NOT reproduce" in out
    assert "rendering (Qt/VTK/GL/fonts/Xvfb)" in out and "the PNG encoder (imagecodecs/zlib-ng)" in out
    assert "ok    episode reference/ct_ui_smoke_routine/dev/seed0" in out


@pytest.mark.display
def test_episode_provenance_carries_the_fingerprint_and_scores_json_lists_it(display, tmp_path):
    require_console()
    card = load_card("ct_ui_smoke_routine")
    v = run_episode(EpisodeSpec(card, "dev", 0), ReferenceAgent(), tmp_path, display)
    assert v.outcome == "PASS", v.reason
    state = json.loads((episode_dir(tmp_path, "reference", card.id, "dev", 0) / "state.json").read_text())
    env = state["provenance"]["environment"]
    assert CONSOLE_FIELDS | RUNNER_FIELDS <= env.keys()
    assert env["xvfb"].startswith("X.Org X Server ") and not env["gl_renderer"].startswith("unavailable")
    assert all(len(h) == 64 for h in env["fonts"].values()) and env["fonts"]
    assert state["provenance"]["subject"] == "dev"  # the rest of the provenance is kept
    scores = score_command(tmp_path, cards=[card])
    on_disk = json.loads((tmp_path / "scores.json").read_text())["environment"]
    assert on_disk == scores["environment"]
    assert on_disk["homogeneous"] and on_disk["episodes_without_fingerprint"] == 0
    assert on_disk["fingerprints"] == [{"episodes": 1, "fingerprint": env}]
