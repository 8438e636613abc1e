"""Replay agent: finding receipts, what it sends, and (on a real console) exact reproduction."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.agents import make_agent
from runner.agents.base import AgentFault, Observation
from runner.agents.replay import DONE, ReplayAgent, find_receipts, load_receipts, replay_text
from tasks.card import TaskCard
from tests.conftest import require_console

TASK = "ct_ui_smoke_routine"
CLICK = {"action": "click", "x": 10, "y": 20, "button": "left"}


def card(task_id: str = TASK) -> TaskCard:
    return TaskCard.model_validate({"id": task_id, "version": "1", "modality": "ct", "level": 0,
                                    "title": "t", "goal": "Replay test goal text.",
                                    "budgets": {"max_steps": 10}, "oracle": "x"})


def obs(step: int) -> Observation:
    return Observation(step, b"", 1280, 800, "goal", 10 - step, [])


def write_receipts(path: Path, recs: list[dict], torn_tail: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in recs)
    if torn_tail:
        text += '{"step": 99, "raw": "trunc'
    path.write_text(text)
    return path


RECS = [
    {"step": 0, "raw": "pyautogui.click(10, 20)", "action": CLICK, "status": "executed"},
    {"step": 1, "raw": "click the big button", "action": None, "status": "rejected", "feedback": "no"},
    {"step": 2, "raw": '{"action":"wait"}', "action": {"action": "wait", "seconds": 1.0}, "status": "executed"},
]


def test_executed_steps_replay_the_canonical_action_and_rejections_the_raw_text(tmp_path):
    f = write_receipts(tmp_path / "receipts.jsonl", RECS, torn_tail=True)
    agent = ReplayAgent(f)
    agent.reset(card(), "dev", 0)
    assert [agent.act(obs(i)) for i in range(5)] == [
        json.dumps(CLICK), "click the big button", json.dumps({"action": "wait", "seconds": 1.0}), DONE, DONE]
    assert agent.name == "replay"


def test_recorded_agent_fault_is_raised_again(tmp_path):
    f = write_receipts(tmp_path / "r.jsonl", [{"step": 0, "raw": None, "action": None, "status": "rejected",
                                               "feedback": "agent fault: model down"}])
    agent = ReplayAgent(f)
    agent.reset(card(), "dev", 0)
    with pytest.raises(AgentFault, match="model down"):
        agent.act(obs(0))


def test_hand_edited_lines_need_only_action_or_raw():
    assert replay_text({"action": CLICK}) == json.dumps(CLICK)
    assert replay_text({"raw": "pyautogui.press('enter')"}) == "pyautogui.press('enter')"
    assert replay_text({"action": '{"action": "done"}'}) == '{"action": "done"}'


def test_torn_tail_is_skipped_and_steps_sorted(tmp_path):
    f = write_receipts(tmp_path / "r.jsonl", list(reversed(RECS)), torn_tail=True)
    assert [r["step"] for r in load_receipts(f)] == [0, 1, 2]


def test_find_receipts_in_root_agent_folder_episode_folder_and_file(tmp_path):
    root = tmp_path / "results"
    ep = root / "reference" / TASK / "dev" / "seed3"
    f = write_receipts(ep / "receipts.jsonl", RECS)
    # this run's own replay folder under the same root is never a source
    write_receipts(root / "replay" / TASK / "dev" / "seed3" / "receipts.jsonl", RECS)
    assert find_receipts(root, TASK, "dev", 3) == f
    assert find_receipts(root / "reference", TASK, "dev", 3) == f
    assert find_receipts(ep, "other_task", "s01", 7) == f
    assert find_receipts(f, TASK, "dev", 3) == f
    with pytest.raises(FileNotFoundError, match="seed4"):
        find_receipts(root, TASK, "dev", 4)
    write_receipts(root / "noop" / TASK / "dev" / "seed3" / "receipts.jsonl", RECS)
    with pytest.raises(ValueError, match="several runs"):
        find_receipts(root, TASK, "dev", 3)


def test_make_agent_builds_replay(tmp_path):
    assert make_agent("replay", replay_from=str(tmp_path)).name == "replay"
    with pytest.raises(ValueError):
        make_agent("replay")


# ---- on the real console ---------------------------------------------------------------------


def _pngs(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.png"))}


KEYS = ("outcome", "sr", "pr", "aq", "steps", "rejected_steps", "termination", "stages", "details", "sim_seconds")


@pytest.mark.display
def test_replaying_a_reference_run_reproduces_verdict_and_screenshots(tmp_path):
    require_console()
    from runner.agents.reference import ReferenceAgent
    from runner.display import VirtualDisplay
    from runner.episode import EpisodeSpec, run_episode
    from runner.results import episode_dir
    from tasks.card import load_card

    spec = EpisodeSpec(load_card(TASK), "dev", 0)
    w, h = spec.card.observation.width, spec.card.observation.height
    with VirtualDisplay(w, h) as disp:
        ref = run_episode(spec, ReferenceAgent(), tmp_path / "orig", disp)
        rep = run_episode(spec, ReplayAgent(tmp_path / "orig"), tmp_path / "again", disp)
    assert ref.outcome == "PASS", ref.reason
    a, b = ref.model_dump(), rep.model_dump()
    assert {k: a[k] for k in KEYS} == {k: b[k] for k in KEYS}
    d_ref = episode_dir(tmp_path / "orig", "reference", TASK, "dev", 0)
    d_rep = episode_dir(tmp_path / "again", "replay", TASK, "dev", 0)
    p_ref, p_rep = _pngs(d_ref), _pngs(d_rep)
    assert len(p_ref) == ref.steps + 1  # one per step + final.png
    assert p_ref.keys() == p_rep.keys()
    assert [n for n in p_ref if p_ref[n] != p_rep[n]] == []
    assert json.loads((d_ref / "state.json").read_text()) == json.loads((d_rep / "state.json").read_text())
    acts = lambda d: [json.loads(x)["action"] for x in (d / "receipts.jsonl").read_text().splitlines()]  # noqa: E731
    assert acts(d_ref) == acts(d_rep)
