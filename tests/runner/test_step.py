"""The one step engine (runner/step.py) and the card the console runs.

run_episode and the gymnasium env drive episodes through the same StepEngine: the same scripted actions
give identical receipts through both. The console runs the card the runner holds: run_episode writes the
validated card into the episode folder (card.json) and the console reads that file, so a card edited in
memory reaches the console.
"""
from __future__ import annotations

import json

import pytest

from runner.agents.simple import ScriptedAgent
from runner.episode import CARD_FILE, EpisodeSpec, run_episode
from runner.results import episode_dir
from runner.step import RECEIPT_KEYS, make_receipt
from tasks.card import load_card, load_card_file
from tests.conftest import require_console

TASK = "ct_ui_smoke_routine"

# accepted and rejected actions of every kind that moves the clock differently, then done
SCRIPT = [
    '{"action": "move", "x": 300, "y": 200}',
    "click the scan button",  # rejected: not an action
    '{"action": "click", "x": 158, "y": 84}',
    '{"action": "wait", "seconds": 2.5}',
    '{"action": "scroll", "x": 700, "y": 400, "clicks": -2}',
    '{"action": "key", "key": "F13"}',  # rejected: key not allowed
    "pyautogui.doubleClick(640, 400)",
    '{"action": "type", "text": "12"}',
    '{"action": "key", "key": "Escape"}',
    '{"action": "done"}',
]


def _receipts(d) -> list[dict]:
    return [json.loads(x) for x in (d / "receipts.jsonl").read_text().splitlines()]


def test_make_receipt_has_the_contract_keys():
    r = make_receipt(3, 1.5, "x", None, ["r"], "rejected", "why")
    assert tuple(r) == RECEIPT_KEYS and r["screenshot"] == "step_003.png"
    assert make_receipt(0, 0.0, "x", None, [], "executed", "ok", {"tokens": 3})["model_call"] == {"tokens": 3}


@pytest.mark.display
def test_run_episode_and_the_env_give_identical_receipts(display, tmp_path):
    require_console()
    from runner.env import MedImageOSEnv

    card = load_card(TASK)
    v = run_episode(EpisodeSpec(card, "dev", 0), ScriptedAgent(SCRIPT), tmp_path, display)
    from_runner = _receipts(episode_dir(tmp_path, "scripted", TASK, "dev", 0))
    assert v.termination == "done" and len(from_runner) == len(SCRIPT)
    assert [r["status"] for r in from_runner].count("rejected") == 2  # the script exercises both paths
    env = MedImageOSEnv(TASK, "dev")
    try:
        env.reset(seed=0)
        from_env = [env.step(text)[4]["receipt"] for text in SCRIPT]
    finally:
        env.close()
    for a, b in zip(from_runner, from_env):
        assert a.keys() == b.keys() == set(RECEIPT_KEYS), (a, b)
        assert a == b
    assert len(from_env) == len(from_runner)
    assert from_runner[-1]["sim_time"] > 2.5  # the clock moved: equal receipts are not trivially empty


@pytest.mark.display
def test_a_card_edited_in_memory_reaches_the_console(display, tmp_path):
    require_console()
    shipped = load_card(TASK)
    edited = shipped.model_copy(update={
        "goal": "An edited goal: the console must run exactly this card.",
        "initial_state": {"ctdi_limit_mgy": 7.5, "start_page": "bolus"},
        "perturbations": {"patient_shift_mm": [12.5, 12.5], "heart_rate_bpm": [93, 93]},
    })
    done = ['{"action": "done"}']
    run_episode(EpisodeSpec(edited, "dev", 0), ScriptedAgent(done), tmp_path / "edited", display)
    run_episode(EpisodeSpec(shipped, "dev", 0), ScriptedAgent(done), tmp_path / "shipped", display)
    seen = {}
    for name in ("edited", "shipped"):
        d = episode_dir(tmp_path / name, "scripted", TASK, "dev", 0)
        state = json.loads((d / "state.json").read_text())
        seen[name] = (state["dose"]["ctdi_limit_mgy"], state["frame"]["patient_shift_mm"],
                      state["heart_rate_bpm"], state["ui"]["page"])
        ran = load_card_file(d / CARD_FILE)  # the result folder records the card it ran
        assert ran == (edited if name == "edited" else shipped)
    assert seen["edited"] == (7.5, 12.5, 93, "bolus")
    assert seen["shipped"] != seen["edited"]  # negative control: the shipped card starts elsewhere
    assert "edited goal" in (episode_dir(tmp_path / "edited", "scripted", TASK, "dev", 0) / CARD_FILE).read_text()


@pytest.mark.display
def test_an_invalid_card_edited_in_memory_is_an_invalid_episode_naming_the_key(display, tmp_path):
    bad = load_card(TASK).model_copy(update={"perturbations": {"patient_shift_abs_mmm": [25, 50]}})
    v = run_episode(EpisodeSpec(bad, "dev", 0), ScriptedAgent([]), tmp_path, display)
    assert v.outcome == "INVALID" and "patient_shift_abs_mmm" in v.reason
