"""The vendor computer-use tool adapters (Anthropic, OpenAI) and GUI-Owl-1.5, without a display.

The real `anthropic` and `openai` clients talk to the local fake server, which answers hand-written
replies in the documented shapes (tests/runner/vendor_replies.py). Checked: every action of each tool
maps to the project's action at the right screen pixel or is rejected with a reason; screenshots are
scaled to the vendor's image limits and coordinates mapped back; a turn's calls run one a step, a
rejected one ends the turn with an error result and 'not executed' for the rest; zoom answers with the
region at display resolution; safety checks are acknowledged and recorded.
"""
from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from runner.actions import ParserState
from runner.agents import make_agent
from runner.agents.adapters import get_adapter
from runner.agents.adapters.imaging import fit_size, png_size
from runner.agents.base import Observation, StepRecord
from runner.capture import encode_png
from tasks.card import TaskCard, load_card

try:
    from tests.runner.fake_openai_server import fake_openai
    from tests.runner.vendor_replies import CLAUDE_ROUTES, OPENAI_ROUTES, claude, computer_call, openai, tool_use
except ImportError:
    from fake_openai_server import fake_openai
    from vendor_replies import CLAUDE_ROUTES, OPENAI_ROUTES, claude, computer_call, openai, tool_use

CARD = load_card("ct_ui_smoke_routine")  # keys: Enter, Tab, ..., ctrl+a; waits up to 30 s
PROFILE = CARD.action_profile


def screen_png(w: int, h: int, shade: int = 0) -> bytes:
    img = np.zeros((h, w, 3), np.uint8)
    img[:, :, 0] = shade
    img[: h // 2, : w // 2, 1] = 255  # the top-left quarter green: a zoom there is all green
    return encode_png(img)


def parse(name: str, call: dict, screen=(1280, 800), pointer=(4, 4)):
    return get_adapter(name).parse(json.dumps(call), PROFILE, screen, state=ParserState(pointer=pointer))


# -- image limits ---------------------------------------------------------------------------------

def test_screenshots_are_scaled_to_each_vendors_documented_limits():
    claude_ = get_adapter("claude-computer")
    assert claude_.image_size((1280, 800)) == (1280, 800)  # 1.02 MP, 1280 px: inside 1568 px / 1.15 MP
    w, h = claude_.image_size((1920, 1080))
    assert (w, h) == (1429, 804) and w * h <= 1_150_000 and max(w, h) <= 1568
    assert claude_.image_size((2560, 1440)) == (1429, 804)
    assert get_adapter("openai-computer-preview").image_size((2560, 1440)) == (2048, 1152)
    assert get_adapter("openai-computer-preview").image_size((1920, 1080)) == (1920, 1080)
    assert get_adapter("openai-computer").image_size((3840, 2160)) == (3840, 2160)  # 8.3 MP: inside 10.24 MP
    assert fit_size((100, 50), 1568, 1_150_000, upscale=True) == (1516, 758)  # a zoomed region fills the budget
    # the tool's display size is the screenshot sent
    assert claude_.tool((1920, 1080)) == {"type": "computer_toolset_20260801"}
    assert get_adapter("claude-computer-20251124").tool((1920, 1080)) == {
        "type": "computer_20251124", "name": "computer", "display_width_px": 1429, "display_height_px": 804,
        "enable_zoom": True}
    assert get_adapter("claude-computer-20250124").tool((1280, 800)) == {
        "type": "computer_20250124", "name": "computer", "display_width_px": 1280, "display_height_px": 800}
    assert get_adapter("openai-computer-preview").tool((2560, 1440)) == {
        "type": "computer_use_preview", "display_width": 2048, "display_height": 1152, "environment": "linux"}
    assert get_adapter("openai-computer").tool((2560, 1440)) == {"type": "computer"}


# -- Anthropic: every action mapped or rejected ----------------------------------------------------

def _claude(action: str, **inp) -> dict:
    return tool_use(action, **inp)


CLAUDE_MAPPED = [
    (_claude("left_click", coordinate=[100, 50]), {"action": "click", "x": 100, "y": 50, "button": "left"}),
    (_claude("right_click", coordinate=[100, 50]), {"action": "click", "x": 100, "y": 50, "button": "right"}),
    (_claude("middle_click", coordinate=[100, 50]), {"action": "click", "x": 100, "y": 50, "button": "middle"}),
    (_claude("left_click"), {"action": "click", "x": 4, "y": 4, "button": "left"}),  # at the cursor
    (_claude("double_click", coordinate=[7, 9]), {"action": "double_click", "x": 7, "y": 9}),
    (_claude("left_click_drag", start_coordinate=[10, 20], coordinate=[30, 40]),
     {"action": "drag", "x": 10, "y": 20, "to_x": 30, "to_y": 40}),
    (_claude("mouse_move", coordinate=[640, 400]), {"action": "move", "x": 640, "y": 400}),
    (_claude("scroll", coordinate=[5, 6], scroll_direction="down", scroll_amount=3),
     {"action": "scroll", "x": 5, "y": 6, "clicks": 3}),
    (_claude("scroll", coordinate=[5, 6], scroll_direction="up", scroll_amount=2),
     {"action": "scroll", "x": 5, "y": 6, "clicks": -2}),
    (_claude("key", text="Return"), {"action": "key", "key": "Enter"}),  # xdotool names
    (_claude("key", text="ctrl+a"), {"action": "key", "key": "ctrl+a"}),
    (_claude("key", text="BackSpace"), {"action": "key", "key": "BackSpace"}),
    (_claude("type", text="42"), {"action": "type", "text": "42"}),
    (_claude("wait", duration=2), {"action": "wait", "seconds": 2.0}),
    (_claude("wait", duration=90), {"action": "wait", "seconds": 30.0}),  # capped by the card
]


@pytest.mark.parametrize("call,want", CLAUDE_MAPPED, ids=[c["name"] + str(i) for i, (c, _) in enumerate(CLAUDE_MAPPED)])
def test_claude_toolset_actions_map_to_ours(call, want):
    res = parse("claude-computer", call)
    assert res.ok and res.action.to_dict() == want, res.error


CLAUDE_REJECTED = [
    (_claude("triple_click", coordinate=[1, 1]), "triple_click is not available"),
    (_claude("hold_key", text="shift", duration=1), "no held keys"),
    (_claude("left_mouse_down"), "no held buttons"),
    (_claude("left_mouse_up"), "no held buttons"),
    (_claude("left_click", coordinate=[1, 1], text="shift"), "cannot hold keys"),
    (_claude("scroll", coordinate=[1, 1], scroll_direction="left", scroll_amount=1), "horizontal scrolling"),
    (_claude("scroll", coordinate=[1, 1], scroll_direction="down", scroll_amount=0), "scroll_amount"),
    (_claude("key", text="Return Return"), "one key or combination per call"),
    (_claude("key", text="Return", repeat=3), "one key press per call"),
    (_claude("key", text="F5"), "is not allowed in this task"),  # the card's allowlist
    (_claude("wait", duration=0), "positive duration"),
    (_claude("left_click", coordinate=[1280.5, 10]), "outside the 1280x800"),
    (_claude("zoom", region=[10, 10, 5, 20]), "0 <= x0 < x1"),
    ({"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "ls"}}, "unknown tool"),
]


@pytest.mark.parametrize("call,feedback", CLAUDE_REJECTED, ids=[c["name"] + str(i) for i, (c, _) in enumerate(CLAUDE_REJECTED)])
def test_claude_actions_without_a_counterpart_are_rejected_with_a_reason(call, feedback):
    res = parse("claude-computer", call)
    assert not res.ok and res.display is None and feedback in res.error, res.error


def test_claude_single_tool_versions_read_the_action_from_the_input():
    click = tool_use("left_click", toolset=False, coordinate=[200, 100])
    assert click["name"] == "computer" and click["input"]["action"] == "left_click"
    for name in ("claude-computer-20251124", "claude-computer-20250124"):
        res = parse(name, click, screen=(1920, 1080))
        # 1429x804 screenshot -> 1920x1080 screen
        assert res.ok and res.action.to_dict() == {"action": "click", "x": 269, "y": 134, "button": "left"}
    zoom = tool_use("zoom", toolset=False, region=[0, 0, 100, 100])
    assert parse("claude-computer-20251124", zoom).display is not None
    assert "unknown action 'zoom'" in parse("claude-computer-20250124", zoom).error  # no zoom in 20250124
    assert "unknown tool" in parse("claude-computer", click).error  # the toolset names its members


def test_claude_display_only_steps():
    shot = parse("claude-computer", _claude("screenshot"))
    assert shot.action is None and shot.error is None and shot.display == "screenshot"
    zoom = parse("claude-computer", _claude("zoom", region=[0, 0, 100, 60]), screen=(1920, 1080))
    assert zoom.display == "zoom on screen pixels (0,0)-(135,81)"
    cur = parse("claude-computer", _claude("cursor_position"), screen=(1920, 1080), pointer=(960, 540))
    assert cur.display == "X=714,Y=402"  # in screenshot pixels


# -- Anthropic: the loop through the real client ----------------------------------------------------

def _run(agent, replies_done: int, screen=(1280, 800), statuses=None, steps=None):
    """Drive the agent like the episode does, parsing each raw reply with the adapter; returns the results."""
    history: list[StepRecord] = []
    state = ParserState(pointer=(4, 4))
    out = []
    for step in range(steps):
        raw = agent.act(Observation(step, screen_png(*screen, shade=step), screen[0], screen[1], CARD.goal,
                                    30 - step, list(history)))
        res = agent.parse_reply(raw, PROFILE, screen, state=state)
        status = "executed" if res.ok or res.display is not None else "rejected"
        feedback = "executed" if res.ok else (res.display or res.error)
        if res.ok:
            state.observe(res.action)
        history.append(StepRecord(step, raw, res.action.to_dict() if res.ok else None, status, feedback))
        out.append((raw, res, dict(agent.last_call_info)))
        if res.ok and res.action.type == "done":
            break
    return out


def claude_agent(server, name="claude-computer"):
    agent = get_adapter(name).make_agent("claude-test", server.base_url.removesuffix("/v1"), api_key="sk-test",
                                         timeout_s=10.0)
    agent.reset(CARD, "dev", 0)
    return agent


def _images(content) -> list[tuple[int, int]]:
    return [png_size(base64.b64decode(p["source"]["data"])) for p in content if p.get("type") == "image"]


def test_claude_turn_runs_one_call_a_step_and_answers_every_tool_use():
    script = [claude(tool_use("left_click", coordinate=[100, 50]), tool_use("triple_click", coordinate=[1, 1]),
                     tool_use("type", text="never run")),
              claude(tool_use("zoom", region=[0, 0, 100, 60])),
              claude(tool_use("screenshot")),
              claude(text="The protocol is loaded.")]
    with fake_openai(script, routes=CLAUDE_ROUTES) as server:
        agent = claude_agent(server)
        steps = _run(agent, 4, screen=(1920, 1080), steps=10)
        reqs, headers = server.requests, server.request_headers
    assert [r.action.type if r.ok else ("display" if r.display else "rejected") for _, r, _ in steps] == [
        "click", "rejected", "display", "display", "done"]
    assert steps[0][1].action.to_dict() == {"action": "click", "x": 134, "y": 67, "button": "left"}
    assert len(reqs) == 4  # the rejected call's turn ends there: 'type' never ran
    first = reqs[0]
    assert first["tools"] == [{"type": "computer_toolset_20260801"}] and "anthropic-beta" not in headers[0]
    assert "1429x804 pixels" in first["system"] and "30 actions" in first["system"]
    assert _images(first["messages"][0]["content"]) == [(1429, 804)]
    results = reqs[1]["messages"][-1]["content"]
    assert [r["type"] for r in results] == ["tool_result"] * 3
    assert [r.get("is_error", False) for r in results] == [False, True, True]
    assert all(r["toolset_name"] == "computer" for r in results)
    assert results[0]["content"][0] == {"type": "text", "text": "executed"} and _images(results[0]["content"]) == [(1429, 804)]
    assert "triple_click is not available" in results[1]["content"]
    assert results[2]["content"] == "Not executed: an earlier computer action in this turn failed."
    zoom_result = reqs[2]["messages"][-1]["content"][0]
    # the region (0,0)-(135,81) of the screen at display resolution, scaled up to fill the image budget
    assert _images(zoom_result["content"]) == [fit_size((135, 81), 1568, 1_150_000, upscale=True)]
    data = base64.b64decode(zoom_result["content"][1]["source"]["data"])
    with Image.open(io.BytesIO(data)) as im:
        assert im.convert("RGB").getpixel((10, 10))[1] == 255  # all of it from the green quarter
    # the assistant turns go back verbatim, and only the last KEEP_IMAGES results keep their screenshots
    assert reqs[3]["messages"][1]["content"][1]["name"] == "left_click"
    kept = [len(_images(b["content"])) for m in reqs[3]["messages"] if m["role"] == "user"
            for b in m["content"] if b.get("type") == "tool_result" and isinstance(b["content"], list)]
    assert kept == [1, 1, 1]
    info = steps[0][2]
    assert info["adapter"] == "claude-computer" and info["tokens"] == {"prompt": 1000, "completion": 50}
    assert info["image_size"] == [1429, 804] and info["batch"] == [1, 3] and steps[1][2]["batch"] == [2, 3]


def test_claude_single_tool_versions_send_their_beta_header_and_display_size():
    with fake_openai([claude(tool_use("left_click", toolset=False, coordinate=[10, 10])), claude(text="done")],
                     routes=CLAUDE_ROUTES) as server:
        agent = claude_agent(server, "claude-computer-20251124")
        steps = _run(agent, 2, steps=5)
        reqs, headers = server.requests, server.request_headers
    assert headers[0]["anthropic-beta"] == "computer-use-2025-11-24"
    assert reqs[0]["tools"] == [{"type": "computer_20251124", "name": "computer", "display_width_px": 1280,
                                 "display_height_px": 800, "enable_zoom": True}]
    result = reqs[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "toolset_name" not in result
    assert steps[-1][1].action.type == "done"


def test_claude_end_of_turn_that_is_not_allowed_is_told_back():
    card = CARD.model_copy(update={"action_profile": PROFILE.model_copy(update={
        "allowed_actions": [a for a in PROFILE.allowed_actions if a != "done"]})})
    with fake_openai([claude(text="finished"), claude(tool_use("left_click", coordinate=[1, 1]))],
                     routes=CLAUDE_ROUTES) as server:
        agent = claude_agent(server)
        agent.reset(card, "dev", 0)
        r0 = agent.act(Observation(0, screen_png(1280, 800), 1280, 800, card.goal, 30, []))
        res = agent.parse_reply(r0, card.action_profile, (1280, 800), state=ParserState((4, 4)))
        assert not res.ok and "not allowed" in res.error
        agent.act(Observation(1, screen_png(1280, 800), 1280, 800, card.goal, 29,
                              [StepRecord(0, r0, None, "rejected", res.error)]))
        note = server.requests[1]["messages"][-1]["content"]
    assert note[0]["type"] == "text" and "ends the episode, but" in note[0]["text"]


# -- OpenAI ----------------------------------------------------------------------------------------

def _oa(**a) -> dict:
    return {"type": "computer_call", "call_id": "c", "action": a}


OPENAI_MAPPED = [
    (_oa(type="click", x=100, y=50, button="left"), {"action": "click", "x": 100, "y": 50, "button": "left"}),
    (_oa(type="click", x=100, y=50, button="right"), {"action": "click", "x": 100, "y": 50, "button": "right"}),
    (_oa(type="click", x=100, y=50, button="wheel"), {"action": "click", "x": 100, "y": 50, "button": "middle"}),
    (_oa(type="double_click", x=3, y=4), {"action": "double_click", "x": 3, "y": 4}),
    (_oa(type="drag", path=[{"x": 1, "y": 2}, {"x": 5, "y": 5}, {"x": 30, "y": 40}]),
     {"action": "drag", "x": 1, "y": 2, "to_x": 30, "to_y": 40}),
    (_oa(type="move", x=640, y=400), {"action": "move", "x": 640, "y": 400}),
    (_oa(type="scroll", x=5, y=6, scroll_x=0, scroll_y=300), {"action": "scroll", "x": 5, "y": 6, "clicks": 3}),
    (_oa(type="scroll", x=5, y=6, scroll_x=0, scroll_y=-40), {"action": "scroll", "x": 5, "y": 6, "clicks": -1}),
    (_oa(type="scroll", x=5, y=6, scroll_x=0, scroll_y=9000), {"action": "scroll", "x": 5, "y": 6, "clicks": 20}),
    (_oa(type="keypress", keys=["CTRL", "A"]), {"action": "key", "key": "ctrl+a"}),
    (_oa(type="keypress", keys=["ENTER"]), {"action": "key", "key": "Enter"}),
    (_oa(type="type", text="4ch"), {"action": "type", "text": "4ch"}),
    (_oa(type="wait"), {"action": "wait", "seconds": 2.0}),
]


@pytest.mark.parametrize("call,want", OPENAI_MAPPED, ids=[c["action"]["type"] + str(i) for i, (c, _) in enumerate(OPENAI_MAPPED)])
def test_openai_actions_map_to_ours(call, want):
    res = parse("openai-computer", call)
    assert res.ok and res.action.to_dict() == want, res.error


OPENAI_REJECTED = [
    (_oa(type="click", x=1, y=1, button="back"), "'back' button is not available"),
    (_oa(type="click", x=1, y=1, button="left", keys=["SHIFT"]), "cannot hold keys"),
    (_oa(type="scroll", x=1, y=1, scroll_x=200, scroll_y=0), "horizontal scrolling"),
    (_oa(type="drag", path=[{"x": 1, "y": 2}]), "at least two"),
    (_oa(type="keypress", keys=["F5"]), "is not allowed in this task"),
    (_oa(type="click", x=5000, y=1, button="left"), "outside the 1280x800"),
    (_oa(type="zoom"), "unknown computer action"),
]


@pytest.mark.parametrize("call,feedback", OPENAI_REJECTED, ids=[c["action"]["type"] + str(i) for i, (c, _) in enumerate(OPENAI_REJECTED)])
def test_openai_actions_without_a_counterpart_are_rejected_with_a_reason(call, feedback):
    res = parse("openai-computer", call)
    assert not res.ok and feedback in res.error, res.error


def openai_agent(server, name="openai-computer"):
    agent = get_adapter(name).make_agent("gpt-test", server.base_url, api_key="sk-test", timeout_s=10.0)
    agent.reset(CARD, "dev", 0)
    return agent


def test_openai_batched_actions_run_one_a_step_and_safety_checks_are_acknowledged():
    check = {"id": "sc_1", "code": "malicious_instructions", "message": "The screen asks for something odd."}
    script = [openai(computer_call({"type": "click", "x": 100, "y": 50, "button": "left"},
                                   {"type": "type", "text": "4ch"}, checks=[check])),
              openai(computer_call({"type": "click", "x": 1, "y": 1, "button": "forward"},
                                   {"type": "wait"})),
              openai(computer_call({"type": "screenshot"}, batched=False)),
              openai(text="Done.")]
    with fake_openai(script, routes=OPENAI_ROUTES) as server:
        agent = openai_agent(server, "openai-computer-preview")
        steps = _run(agent, 4, screen=(2560, 1440), steps=10)
        reqs = server.requests
    kinds = [r.action.type if r.ok else ("display" if r.display else "rejected") for _, r, _ in steps]
    assert kinds == ["click", "type", "rejected", "display", "done"]
    assert steps[0][1].action.to_dict() == {"action": "click", "x": 125, "y": 63, "button": "left"}  # 2048 -> 2560
    assert reqs[0]["tools"] == [{"type": "computer_use_preview", "display_width": 2048, "display_height": 1152,
                                 "environment": "linux"}]
    assert reqs[0]["truncation"] == "auto" and "previous_response_id" not in reqs[0]
    # one output per call, after its last action, acknowledging its checks; chained to the last response
    out = reqs[1]["input"]
    assert [i["type"] for i in out] == ["computer_call_output"] and out[0]["acknowledged_safety_checks"] == [check]
    assert png_size(base64.b64decode(out[0]["output"]["image_url"].split(",", 1)[1])) == (2048, 1152)
    assert reqs[1]["previous_response_id"].startswith("resp_")
    # the rejected action: the call's output, then why (its later wait never ran)
    out = reqs[2]["input"]
    assert out[0]["type"] == "computer_call_output" and "acknowledged_safety_checks" not in out[0]
    assert "'forward' button is not available" in out[1]["content"][0]["text"]
    assert "later actions were not run" in out[1]["content"][0]["text"]
    info = steps[0][2]
    assert info["safety_checks"] == [check] and info["safety_checks_acknowledged"] is True
    assert info["adapter"] == "openai-computer-preview" and info["batch"] == [1, 2]


def test_openai_newer_tool_sends_no_display_size():
    with fake_openai([openai(computer_call({"type": "click", "x": 10, "y": 10, "button": "left"})),
                      openai(text="ok")], routes=OPENAI_ROUTES) as server:
        agent = openai_agent(server)
        steps = _run(agent, 2, steps=5)
        reqs = server.requests
    assert reqs[0]["tools"] == [{"type": "computer"}] and steps[-1][1].action.type == "done"
    assert reqs[0]["input"][0]["content"][1]["type"] == "input_image"


# -- agent construction and faults -------------------------------------------------------------------

def test_make_agent_builds_the_vendor_agents(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_agent("api", adapter="claude-computer", model="claude-x")  # the vendor's own endpoint needs a key
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-x")
    agent = make_agent("api", adapter="claude-computer", model="claude-x")
    assert agent.name == "api:claude-computer:claude-x" and agent.base_url == "https://api.anthropic.com"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-y")
    agent = make_agent("api", adapter="openai-computer", model="gpt-x")
    assert agent.base_url == "https://api.openai.com/v1" and agent.name == "api:openai-computer:gpt-x"
    with pytest.raises(ValueError, match="needs --model"):
        make_agent("api", adapter="openai-computer")


def test_endpoint_errors_are_retried_then_fault_the_episode():
    from runner.agents.base import AgentFault
    try:
        from tests.runner.fake_openai_server import error, server_error
    except ImportError:
        from fake_openai_server import error, server_error

    with fake_openai([server_error(), claude(tool_use("screenshot"))], routes=CLAUDE_ROUTES) as server:
        agent = claude_agent(server)
        agent.backoff_base_s = 0.0
        agent.act(Observation(0, screen_png(1280, 800), 1280, 800, CARD.goal, 30, []))
        assert agent.last_call_info["attempts"] == 2
    with fake_openai([error(401, "bad key")], routes=OPENAI_ROUTES) as server:
        agent = openai_agent(server)
        with pytest.raises(AgentFault, match="non-retryable"):
            agent.act(Observation(0, screen_png(1280, 800), 1280, 800, CARD.goal, 30, []))


# -- GUI-Owl-1.5 -----------------------------------------------------------------------------------

def _owl(args: dict, literal: bool = False) -> str:
    body = repr({"name": "computer_use", "arguments": args}) if literal else json.dumps(
        {"name": "computer_use", "arguments": args})
    return f"Action: Do it.\n<tool_call>\n{body}\n</tool_call>"


def test_gui_owl_prompt_follows_the_published_desktop_runner():
    a = get_adapter("gui-owl-1.5")
    card = TaskCard.model_validate({"id": "t", "version": "1", "modality": "ct", "level": 0, "title": "t",
                                    "goal": "Load the protocol.", "budgets": {"max_steps": 9}, "oracle": "ct_smoke",
                                    "action_profile": {"allowed_actions": ["click", "done"]}})
    sys_ = a.system_prompt(card, (1280, 800))
    assert sys_.startswith("# Tools\n\nYou may call one or more functions")
    assert "The screen's resolution is 1000x1000." in sys_ and sys_.endswith("use action=terminate in the tool call.")
    tool = json.loads(sys_.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0])
    assert tool["function"]["parameters"]["properties"]["action"]["enum"] == [
        "left_click", "right_click", "middle_click", "terminate"]
    assert a.image_size((1920, 1080)) == (1920, 1088)  # factor 16
    obs = Observation(0, screen_png(1280, 800), 1280, 800, card.goal, 9, [])
    msgs = a.build_messages(card, obs, obs.screenshot_png, [])
    user = msgs[1]["content"]
    assert user[0]["type"] == "text" and user[0]["text"].startswith("Please generate the next move")
    assert "Instruction: Load the protocol.\n\nPrevious actions:\nNone" in user[0]["text"] and user[1]["type"] == "image_url"


@pytest.mark.parametrize("reply,want", [
    (_owl({"action": "left_click", "coordinate": [500, 500]}), {"action": "click", "x": 640, "y": 400, "button": "left"}),
    (_owl({"action": "left_click", "coordinate": [500, 500]}, literal=True),
     {"action": "click", "x": 640, "y": 400, "button": "left"}),  # read as the published runner reads it
    (_owl({"action": "click", "coordinate": [0, 1000]}), {"action": "click", "x": 0, "y": 799, "button": "left"}),
    (_owl({"action": "left_click_drag", "coordinate": [100, 100]}),
     {"action": "drag", "x": 4, "y": 4, "to_x": 128, "to_y": 80}),
    (_owl({"action": "scroll", "pixels": -3, "coordinate": [500, 500]}),
     {"action": "scroll", "x": 640, "y": 400, "clicks": 3}),
    (_owl({"action": "key", "keys": ["ctrl", "a"]}), {"action": "key", "key": "ctrl+a"}),
    (_owl({"action": "terminate", "status": "success"}), {"action": "done"}),
])
def test_gui_owl_replies_map_to_screen_pixels(reply, want):
    res = get_adapter("gui-owl-1.5").parse(reply, PROFILE, (1280, 800), state=ParserState(pointer=(4, 4)))
    assert res.ok and res.action.to_dict() == want, res.error


@pytest.mark.parametrize("action,feedback", [("triple_click", "triple_click is not available"),
                                             ("hscroll", "horizontal scrolling"), ("answer", "no question"),
                                             ("interact", "no user")])
def test_gui_owl_actions_without_a_counterpart_are_rejected(action, feedback):
    res = get_adapter("gui-owl-1.5").parse(_owl({"action": action, "coordinate": [1, 1]}), PROFILE, (1280, 800))
    assert not res.ok and feedback in res.error
