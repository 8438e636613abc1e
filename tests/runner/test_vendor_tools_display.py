"""The vendor computer-use tools and GUI-Owl-1.5 end to end on real consoles, through the real clients.

Each new adapter plays the CT console through its vendor's client against the local fake server, whose
replies are written by hand in the documented shapes: a disallowed action first (an error result with
feedback, one step, nothing changes), then select 'Routine chest', press 'Load protocol' and end the turn.
At 1280x800 and at 2560x1440, where Claude's screenshots are scaled to 1429x804 and the preview tool's to
2048x1152 (the newer OpenAI tool's budget, 10.24 MP, is above every screen a card allows). One MR episode
per adapter too. Consoles are reset in place between episodes (one keeper per display).
"""
from __future__ import annotations

import json

import pytest

from runner.agents.adapters import get_adapter
from runner.cli import main as cli_main
from runner.console_process import ConsoleKeeper
from runner.display import VirtualDisplay
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card

try:
    from tests.runner.fake_openai_server import FakeOpenAIServer, fake_openai
    from tests.runner.vendor_replies import CLAUDE_ROUTES, OPENAI_ROUTES, claude, computer_call, openai, tool_use
except ImportError:
    from fake_openai_server import FakeOpenAIServer, fake_openai
    from vendor_replies import CLAUDE_ROUTES, OPENAI_ROUTES, claude, computer_call, openai, tool_use

# each test plays an episode per adapter on the real console: ~25-40 s under 4 display workers
pytestmark = [pytest.mark.display, pytest.mark.timeout(180)]

TASK = "ct_ui_smoke_routine"
# the CT console's left panel is laid out the same at every size: protocol_item chest_routine [18, 72, 280, 24],
# load_protocol [17, 199, 282, 30]
ITEM, LOAD = (158, 84), (158, 214)
ITEM_BOX, LOAD_BOX = (18, 72, 280, 24), (17, 199, 282, 30)
ADAPTERS = ["claude-computer", "claude-computer-20251124", "openai-computer", "openai-computer-preview", "gui-owl-1.5"]


def _img(name: str, screen, xy):
    """A screen pixel in the model's space: screenshot pixels (vendor tools) or the 0-1000 grid (GUI-Owl)."""
    a = get_adapter(name)
    w, h = (1000, 1000) if name == "gui-owl-1.5" else a.image_size(screen)
    return round(xy[0] * w / screen[0]), round(xy[1] * h / screen[1])


def _owl(args: dict) -> str:
    return "Action: Next.\n<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"


def script(name: str, screen) -> tuple[list, tuple[str, ...]]:
    """Bad action, item, Load protocol, end: replies in the adapter's documented shape; and the routes."""
    item, load = _img(name, screen, ITEM), _img(name, screen, LOAD)
    if name.startswith("claude"):
        toolset = name == "claude-computer"
        return [claude(tool_use("triple_click", toolset, coordinate=list(item))),
                claude(tool_use("left_click", toolset, coordinate=list(item)),
                       tool_use("left_click", toolset, coordinate=list(load))),
                claude(text="The Routine chest protocol is loaded.")], CLAUDE_ROUTES
    if name.startswith("openai"):
        batched = name == "openai-computer"
        first = {"type": "click", "x": item[0], "y": item[1], "button": "back"}
        clicks = [{"type": "click", "x": x, "y": y, "button": "left"} for x, y in (item, load)]
        calls = [computer_call(*clicks)] if batched else [computer_call(c, batched=False) for c in clicks]
        return [openai(computer_call(first, batched=batched)), openai(calls[0]),
                *([openai(calls[1])] if not batched else []), openai(text="Loaded.")], OPENAI_ROUTES
    return [_owl({"action": "triple_click", "coordinate": list(item)}),
            _owl({"action": "left_click", "coordinate": list(item)}),
            _owl({"action": "left_click", "coordinate": list(load)}),
            _owl({"action": "terminate", "status": "success"})], ()


def agent_for(name: str, server):
    if name == "gui-owl-1.5":
        from runner.agents.api import ApiAgent

        return ApiAgent("fake-model", server.base_url, api_key="sk-test", timeout_s=10.0, adapter=name)
    base = server.base_url.removesuffix("/v1") if name.startswith("claude") else server.base_url
    return get_adapter(name).make_agent("fake-model", base, api_key="sk-test", timeout_s=10.0)


@pytest.fixture(scope="module")
def display_1440():
    d = VirtualDisplay(2560, 1440).start()
    yield d
    d.stop()


def _sized(card, w, h):
    return card.model_copy(update={"observation": card.observation.model_copy(update={"width": w, "height": h})})


def _inside(xy, box) -> bool:
    x, y, w, h = box
    return x <= xy[0] < x + w and y <= xy[1] < y + h


def _run_all(display, screen, out):
    card = _sized(load_card(TASK), *screen)
    keeper = ConsoleKeeper(None)
    runs = {}
    try:
        for name in ADAPTERS:
            replies, routes = script(name, screen)
            with fake_openai(replies, routes=routes or FakeOpenAIServer.CHAT_ROUTES) as server:
                agent = agent_for(name, server)
                v = run_episode(EpisodeSpec(card, "dev", 0), agent, out, display, keeper=keeper)
                runs[name] = (agent, v, list(server.requests))
    finally:
        keeper.close()
    return runs


def _check(runs, out, screen):
    for name, (agent, v, requests) in runs.items():
        d = episode_dir(out, agent.name, TASK, "dev", 0)
        receipts = [json.loads(x) for x in (d / "receipts.jsonl").read_text().splitlines()]
        assert [r["status"] for r in receipts] == ["rejected", "executed", "executed", "executed"], (
            name, [r["feedback"] for r in receipts])
        assert "not available" in receipts[0]["feedback"] and receipts[0]["sim_time"] == receipts[1]["sim_time"] - 0.5
        a1, a2 = receipts[1]["action"], receipts[2]["action"]
        assert a1["action"] == "click" and _inside((a1["x"], a1["y"]), ITEM_BOX), (name, a1)
        assert a2["action"] == "click" and _inside((a2["x"], a2["y"]), LOAD_BOX), (name, a2)
        assert receipts[3]["action"] == {"action": "done"}
        assert v.termination == "done" and v.steps == 4 and v.rejected_steps == 1
        assert v.stages.get("protocol_loaded") is True, (name, v.stages, v.reason)
        assert json.loads((d / "state.json").read_text())["protocol"] == "chest_routine", name
        call = receipts[0]["model_call"]
        assert call["adapter"] == name and call["prompt_hash"] == agent.adapter.prompt_hash()
        assert call["image_size"] == list(agent.adapter.image_size(screen))
        # the rejection reached the model with its feedback
        assert "not available" in json.dumps(requests[1]), name
    assert cli_main(["score", str(out)]) == 0
    scores = json.loads((out / "scores.json").read_text())
    for name, (agent, _, _) in runs.items():
        entry = scores["adapters"][agent.name]
        assert entry["adapters"][0]["adapter"] == name and entry["adapters"][0]["episodes"] == 1


def test_new_adapters_load_the_protocol_at_1280x800(display, tmp_path):
    runs = _run_all(display, (1280, 800), tmp_path)
    _check(runs, tmp_path, (1280, 800))
    assert runs["claude-computer"][0].adapter.image_size((1280, 800)) == (1280, 800)


def test_new_adapters_load_the_protocol_at_2560x1440_with_scaled_screenshots(display_1440, tmp_path):
    runs = _run_all(display_1440, (2560, 1440), tmp_path)
    _check(runs, tmp_path, (2560, 1440))
    assert runs["claude-computer"][0].adapter.image_size((2560, 1440)) == (1429, 804)
    assert runs["openai-computer-preview"][0].adapter.image_size((2560, 1440)) == (2048, 1152)


def test_mr_episode_through_each_new_adapter(display, tmp_path):
    # layout_2x2 [523, 46, 47, 30] -> centre (546, 61): show four viewports, then end
    card = load_card("mr_select_sequence_v1")
    screen = (card.observation.width, card.observation.height)
    keeper = ConsoleKeeper(None)
    try:
        for name in ("claude-computer", "openai-computer", "gui-owl-1.5"):
            x, y = _img(name, screen, (546, 61))
            if name == "claude-computer":
                replies, routes = [claude(tool_use("left_click", coordinate=[x, y])), claude(text="Done.")], CLAUDE_ROUTES
            elif name == "openai-computer":
                replies = [openai(computer_call({"type": "click", "x": x, "y": y, "button": "left"})), openai(text="Done.")]
                routes = OPENAI_ROUTES
            else:
                replies = [_owl({"action": "left_click", "coordinate": [x, y]}),
                           _owl({"action": "terminate", "status": "failure"})]
                routes = FakeOpenAIServer.CHAT_ROUTES
            with fake_openai(replies, routes=routes) as server:
                agent = agent_for(name, server)
                v = run_episode(EpisodeSpec(card, "dev", 0), agent, tmp_path, display, keeper=keeper)
            d = episode_dir(tmp_path, agent.name, card.id, "dev", 0)
            receipts = [json.loads(r) for r in (d / "receipts.jsonl").read_text().splitlines()]
            assert receipts[0]["action"]["action"] == "click" and _inside(
                (receipts[0]["action"]["x"], receipts[0]["action"]["y"]), (523, 46, 47, 30)), (name, receipts[0])
            assert v.termination == "done" and v.outcome in ("FAIL", "PARTIAL"), (name, v.outcome)  # started nothing
            assert "2x2" in json.dumps(json.loads((d / "state.json").read_text())["layout"]), name
    finally:
        keeper.close()
