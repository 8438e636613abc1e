"""End to end on a real Xvfb: the real CT console, real XTEST input, real screenshots."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner.agents.reference import ReferenceAgent
from runner.agents.simple import NoopAgent, RandomAgent, ScriptedAgent
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card
from tests.runner.baselines import with_budget
from tests.conftest import SOAK_ACTIONS, descendants_alive

TASK = "ct_ui_smoke_routine"


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.suffix in (".png",) or p.name == "state.json"}


def test_reference_passes_noop_fails_and_runs_are_byte_identical(display, tmp_path):
    card = load_card(TASK)
    v1 = run_episode(EpisodeSpec(card, "dev", 0), ReferenceAgent(), tmp_path / "a", display)
    v2 = run_episode(EpisodeSpec(card, "dev", 0), ReferenceAgent(), tmp_path / "b", display)
    assert v1.outcome == "PASS" and v2.outcome == "PASS", (v1.reason, v2.reason)
    assert v1.sr == 1.0 and v1.pr == 1.0 and v1.termination == "done"
    d1 = episode_dir(tmp_path / "a", "reference", TASK, "dev", 0)
    d2 = episode_dir(tmp_path / "b", "reference", TASK, "dev", 0)
    f1, f2 = _files(d1), _files(d2)
    assert len([n for n in f1 if n.startswith("step_")]) == v1.steps
    assert f1.keys() == f2.keys()
    for name in f1:
        assert f1[name] == f2[name], f"{name} differs between identical runs"
    # every receipt carries the contract fields
    for line in (d1 / "receipts.jsonl").read_text().splitlines():
        r = json.loads(line)
        assert {"step", "sim_time", "raw", "action", "repairs", "status", "feedback", "screenshot"} <= r.keys()
        assert r["status"] == "executed"
    noop = run_episode(EpisodeSpec(card, "dev", 0), NoopAgent(), tmp_path / "a", display)
    assert noop.outcome == "FAIL" and noop.sr == 0.0 and noop.termination == "budget"
    assert noop.steps == card.budgets.max_steps


BAD_OUTPUTS = {
    "not json at all": "could not parse",
    '{"action": "teleport", "x": 1, "y": 1}': "teleport",
    '{"action": "click", "x": 5000, "y": 10}': "off screen",
    '{"action": "key", "key": "F13"}': "allowed",
    '{"action": "type", "text": "' + "9" * 40 + '"}': "too long",
}


def test_bad_agent_output_is_rejected_with_feedback_and_the_episode_goes_on(display, tmp_path):
    card = load_card(TASK)
    outputs = list(BAD_OUTPUTS) + ['{"action": "wait", "seconds": 1}', '{"action": "done"}']
    v = run_episode(EpisodeSpec(card, "dev", 0), ScriptedAgent(outputs), tmp_path, display)
    assert v.termination == "done"
    assert v.steps == len(outputs) and v.rejected_steps == len(BAD_OUTPUTS)
    receipts = [json.loads(x) for x in (episode_dir(tmp_path, "scripted", TASK, "dev", 0)
                                         / "receipts.jsonl").read_text().splitlines()]
    for r, (raw, why) in zip(receipts, BAD_OUTPUTS.items()):
        assert r["status"] == "rejected" and r["action"] is None and r["raw"] == raw
        assert why in r["feedback"].lower(), (raw, r["feedback"])
    assert receipts[len(BAD_OUTPUTS)]["status"] == "executed"
    assert receipts[len(BAD_OUTPUTS)]["sim_time"] == pytest.approx(1.0)


class SaboteurAgent:
    """Kills or hangs the real console process mid-episode, then behaves like noop."""

    name = "saboteur"

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.pids: list[int] = []

    def reset(self, card, subject, seed) -> None:
        self.step = 0

    def bind_control(self, view) -> None:
        self.console = view._console
        self.pids = [self.console.proc.pid]

    def act(self, obs) -> str:
        self.step += 1
        if self.step == 3:
            if self.mode == "crash":
                os.kill(self.console.proc.pid, 9)
            else:  # a handler that never returns: the console stops answering
                self.console.client.sock.sendall(b'{"cmd": "_hang"}\n')
        return '{"action": "wait", "seconds": 1}'


@pytest.mark.timeout(60)  # bounded time: the 5 s control timeout notices the hang; the limit turns a hang into red
@pytest.mark.parametrize("mode", ["crash", "hang"])
def test_console_crash_or_hang_ends_the_episode_invalid_in_bounded_time(display, tmp_path, mode):
    card = load_card(TASK)
    agent = SaboteurAgent(mode)
    v = run_episode(EpisodeSpec(card, "dev", 0), agent, tmp_path, display,
                    console_env={"MEDIMAGEOS_FAULT_INJECTION": "1"}, control_timeout_s=5.0)
    assert v.outcome == "INVALID" and v.termination == "fault"
    assert "console" in v.reason
    assert descendants_alive(agent.pids) == [], "console process left behind"
    assert display.alive()


@pytest.mark.soak
def test_many_random_actions_do_not_crash_or_hang(display, tmp_path):
    card = with_budget(load_card(TASK), SOAK_ACTIONS)
    v = run_episode(EpisodeSpec(card, "dev", 0), RandomAgent(base_seed=7), tmp_path, display)
    assert v.termination == "budget", v.reason
    assert v.outcome != "INVALID", v.reason
    assert v.steps == SOAK_ACTIONS


def test_short_drags_in_a_row_each_move_the_range(display, tmp_path):
    """Five 4 px drags of the range move it as far as one 20 px drag (each press within Qt's
    double-click distance of the one before used to be taken as a double click and lost)."""
    card = load_card("ct_kub_low_dose_constraint")
    start = [{"action": "click", "x": 158, "y": 180}, {"action": "click", "x": 158, "y": 214},
             {"action": "click", "x": 158, "y": 284}, {"action": "wait", "seconds": 4}]
    plans = {"one": [{"action": "drag", "x": 616, "y": 411, "to_x": 616, "to_y": 431}],
             "five": [{"action": "drag", "x": 616, "y": 411 + 4 * i, "to_x": 616, "to_y": 415 + 4 * i}
                      for i in range(5)]}
    plan = {}
    for name, drags in plans.items():
        agent = ScriptedAgent([json.dumps(a) for a in start + drags])
        run_episode(EpisodeSpec(card, "dev", 0), agent, tmp_path / name, display)
        d = episode_dir(tmp_path / name, "scripted", card.id, "dev", 0)
        plan[name] = json.loads((d / "state.json").read_text())["plan"]
    moved = plan["one"]["start_mm"] - plan["five"]["start_mm"]
    assert abs(moved) <= 0.3, (plan["one"], plan["five"])  # rounding of five pixel->mm conversions
    assert plan["five"]["start_mm"] < -245.0, plan["five"]  # the range moved down about 20 mm
