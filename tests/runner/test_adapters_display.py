"""Each adapter end to end on a real console: fake-server replies, written by hand in the model's
format, select the 'Routine chest' protocol and press 'Load protocol' on the CT console at
1280x800 and at 1920x1080 (the size every Qwen-style adapter resizes for); one MR episode too.
Consoles are reset in place between episodes (one keeper per display) to keep this fast."""
from __future__ import annotations

import json

import pytest

from runner.agents.api import ApiAgent
from runner.cli import main as cli_main
from runner.console_process import ConsoleKeeper
from runner.display import VirtualDisplay
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card

try:
    from tests.runner.fake_openai_server import fake_openai
except ImportError:
    from fake_openai_server import fake_openai

pytestmark = pytest.mark.display

TASK = "ct_ui_smoke_routine"
# the CT console's left panel is laid out the same at both sizes (geometry: protocol_item:
# chest_routine [18, 72, 280, 24] -> centre (158, 84); load_protocol [17, 199, 282, 30] -> (158, 214))
ITEM, LOAD = (158, 84), (158, 214)


def _tc(args: dict, prefix: str = "") -> str:
    return prefix + "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"


def _oc(code: str) -> str:
    return f"## Thought:\nThe protocol list is on the left.\n## Action:\nNext step.\n## Code:\n```python\n{code}\n```"


# hand-written replies: select the item, press Load protocol, finish (model coordinates worked out
# by hand for each model's space: 1288x812 / 1932x1092 images, the 0-1000 grid, the unit square)
REPLIES = {
    "generic": {
        (1280, 800): ['{"action": "click", "x": 158, "y": 84}', '{"action": "click", "x": 158, "y": 214}',
                      '{"action": "done"}'],
    },
    "ui-tars-1.5": {
        (1280, 800): ["Thought: Select the Routine chest protocol.\nAction: click(start_box='(159,85)')",
                      "Thought: Press Load protocol.\nAction: click(start_box='(159,217)')",
                      "Thought: The protocol is loaded.\nAction: finished(content='loaded')"],
        (1920, 1080): ["Thought: Select the Routine chest protocol.\nAction: click(start_box='(159,85)')",
                       "Thought: Press Load protocol.\nAction: click(start_box='<|box_start|>(159,216)<|box_end|>')",
                       "Thought: The protocol is loaded.\nAction: finished(content='loaded')"],
    },
    "qwen2.5-vl": {
        (1280, 800): [_tc({"action": "left_click", "coordinate": [159, 85]}),
                      _tc({"action": "left_click", "coordinate": [159, 217]}),
                      _tc({"action": "terminate", "status": "success"})],
        (1920, 1080): [_tc({"action": "left_click", "coordinate": [159, 85]}),
                       _tc({"action": "left_click", "coordinate": [159, 216]}),
                       _tc({"action": "terminate", "status": "success"})],
    },
    "qwen3-vl": {
        (1280, 800): [_tc({"action": "left_click", "coordinate": [123, 105]}, "Action: Select Routine chest.\n"),
                      _tc({"action": "left_click", "coordinate": [123, 268]}, "Action: Click Load protocol.\n"),
                      _tc({"action": "terminate", "status": "success"}, "Action: Finish.\n")],
        (1920, 1080): [_tc({"action": "left_click", "coordinate": [82, 78]}, "Action: Select Routine chest.\n"),
                       _tc({"action": "left_click", "coordinate": [82, 198]}, "Action: Click Load protocol.\n"),
                       _tc({"action": "terminate", "status": "success"}, "Action: Finish.\n")],
    },
    "opencua": {
        (1280, 800): [_oc("pyautogui.click(x=0.1234, y=0.105)"), _oc("pyautogui.click(x=0.1234, y=0.2675)"),
                      _oc("computer.terminate(status='success')")],
        (1920, 1080): [_oc("pyautogui.click(x=0.0823, y=0.0778)"), _oc("pyautogui.click(x=0.0823, y=0.1981)"),
                       _oc("computer.terminate(status='success')")],
    },
}
REPLIES["generic"][(1920, 1080)] = REPLIES["generic"][(1280, 800)]


@pytest.fixture(scope="module")
def display_1080():
    d = VirtualDisplay(1920, 1080).start()
    yield d
    d.stop()


def _sized(card, w, h):
    return card.model_copy(update={"observation": card.observation.model_copy(update={"width": w, "height": h})})


def _run_all(display, screen, out):
    card = _sized(load_card(TASK), *screen)
    keeper = ConsoleKeeper(None)
    results = {}
    try:
        for name, by_screen in REPLIES.items():
            with fake_openai(list(by_screen[screen])) as server:
                agent = ApiAgent("fake-model", server.base_url, api_key="sk-test", timeout_s=10.0, adapter=name)
                v = run_episode(EpisodeSpec(card, "dev", 0), agent, out, display, keeper=keeper)
            results[name] = (agent, v)
    finally:
        keeper.close()
    return card, results


def _check(card, results, out, screen):
    for name, (agent, v) in results.items():
        d = episode_dir(out, agent.name, TASK, "dev", 0)
        receipts = [json.loads(x) for x in (d / "receipts.jsonl").read_text().splitlines()]
        assert [r["status"] for r in receipts] == ["executed"] * 3, (name, [r["feedback"] for r in receipts])
        assert receipts[0]["action"] == {"action": "click", "x": ITEM[0] - (name == "qwen3-vl"), "y": ITEM[1],
                                         "button": "left"}, name
        assert receipts[1]["action"]["action"] == "click" and abs(receipts[1]["action"]["x"] - LOAD[0]) <= 1
        assert receipts[1]["action"]["y"] == LOAD[1], name
        assert v.termination == "done" and v.stages.get("protocol_loaded") is True, (name, v.stages, v.reason)
        state = json.loads((d / "state.json").read_text())
        assert state["protocol"] == "chest_routine", name
        call = receipts[1]["model_call"]
        assert call["adapter"] == name and call["prompt_hash"] == agent.adapter.prompt_hash()
        assert call["image_size"] == list(agent.adapter.image_size(screen))
    assert cli_main(["score", str(out)]) == 0
    scores = json.loads((out / "scores.json").read_text())
    for name, (agent, _) in results.items():
        entry = scores["adapters"][agent.name]
        assert entry["adapters"][0]["adapter"] == name and entry["adapters"][0]["episodes"] == 1
        assert entry["image_sizes"] == {"%dx%d" % agent.adapter.image_size(screen): 1}


def test_every_adapter_loads_the_protocol_at_1280x800(display, tmp_path):
    card, results = _run_all(display, (1280, 800), tmp_path)
    _check(card, results, tmp_path, (1280, 800))


def test_every_adapter_loads_the_protocol_at_1920x1080(display_1080, tmp_path):
    card, results = _run_all(display_1080, (1920, 1080), tmp_path)
    _check(card, results, tmp_path, (1920, 1080))


def test_mr_card_episode_through_an_adapter(display, tmp_path):
    # layout_2x2 [523, 46, 47, 30] -> centre (546, 61); on Qwen3-VL's grid (427, 76) -> (547, 61)
    card = load_card("mr_select_sequence_v1")
    replies = [_tc({"action": "left_click", "coordinate": [427, 76]}, "Action: Show four viewports.\n"),
               _tc({"action": "terminate", "status": "failure"}, "Action: Stop here.\n")]
    with fake_openai(replies) as server:
        agent = ApiAgent("fake-model", server.base_url, api_key="sk-test", timeout_s=10.0, adapter="qwen3-vl")
        v = run_episode(EpisodeSpec(card, "dev", 0), agent, tmp_path, display)
    d = episode_dir(tmp_path, agent.name, card.id, "dev", 0)
    receipts = [json.loads(x) for x in (d / "receipts.jsonl").read_text().splitlines()]
    assert receipts[0]["action"] == {"action": "click", "x": 547, "y": 61, "button": "left"}
    assert receipts[1]["status"] == "executed" and receipts[1]["repairs"]  # failure ends like done, noted
    assert v.termination == "done" and v.outcome != "PASS"  # started nothing
    state = json.loads((d / "state.json").read_text())
    assert "2x2" in json.dumps(state["layout"]), state["layout"]
