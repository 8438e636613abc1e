"""Agent adapters through the real `openai` client against the local fake server (no weights).

Replies are written by hand in each model's published format (UI-TARS-1.5 computer-use prompt,
Qwen2.5-VL / Qwen3-VL computer_use tool calls, OpenCUA pyautogui). Checked here: the screenshot
arrives at the documented size, a request holds the documented number of images, each reply maps
to the right screen pixel at 1280x800 and 1920x1080, malformed replies become rejections with
feedback, and nothing a model writes is executed.
"""
from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from runner.actions import ParserState, scale_point
from runner.agents.adapters import ADAPTERS, get_adapter
from runner.agents.adapters.imaging import png_size, smart_resize
from runner.agents.adapters.provenance import adapters_section
from runner.agents.api import ApiAgent
from runner.agents.base import Observation, StepRecord
from runner.agents.prompt import system_prompt, user_message
from runner.capture import encode_png
from runner.cli import main as cli_main
from tasks.card import TaskCard

try:
    from tests.runner.fake_openai_server import fake_openai
except ImportError:  # tests/ not importable as a package
    from fake_openai_server import fake_openai

GOAL = "Load the 'Routine chest' protocol."
SCREENS = [(1280, 800), (1920, 1080)]
# the image each adapter sends, by screen: published smart_resize values worked out by hand
# (1280/28 = 45.7 -> 46*28 = 1288; 800/28 = 28.6 -> 29*28 = 812; 1920/28 -> 69*28 = 1932;
# 1080/28 -> 39*28 = 1092; Qwen3-VL: 1080/32 = 33.75 -> 34*32 = 1088)
IMAGE_SIZES = {
    "generic": {(1280, 800): (1280, 800), (1920, 1080): (1920, 1080)},
    "ui-tars-1.5": {(1280, 800): (1288, 812), (1920, 1080): (1932, 1092)},
    "qwen2.5-vl": {(1280, 800): (1288, 812), (1920, 1080): (1932, 1092)},
    "qwen3-vl": {(1280, 800): (1280, 800), (1920, 1080): (1920, 1088)},
    "opencua": {(1280, 800): (1288, 812), (1920, 1080): (1932, 1092)},
    # GUI-Owl-1.5: factor 16 (1080/16 = 67.5 -> 68*16 = 1088)
    "gui-owl-1.5": {(1280, 800): (1280, 800), (1920, 1080): (1920, 1088)},
}
MAX_IMAGES = {"generic": 1, "ui-tars-1.5": 5, "qwen2.5-vl": 5, "qwen3-vl": 5, "opencua": 3, "gui-owl-1.5": 5}
CHAT_ADAPTERS = list(IMAGE_SIZES)  # the chat-completions adapters; the vendor tools have their own tests
VENDOR_TOOLS = ["claude-computer", "claude-computer-20251124", "claude-computer-20250124", "openai-computer",
                "openai-computer-preview"]


def make_card(**action_profile) -> TaskCard:
    data = {"id": "t_adapters", "version": "1", "modality": "ct", "level": 0, "title": "adapters",
            "goal": GOAL, "budgets": {"max_steps": 20}, "oracle": "ct_smoke"}
    if action_profile:
        data["action_profile"] = action_profile
    return TaskCard.model_validate(data)


def screen_png(w: int, h: int, shade: int = 0) -> bytes:
    img = np.zeros((h, w, 3), np.uint8)
    img[:, :, 0] = shade
    img[h // 2:, w // 2:, 1] = 200  # not flat, so resampling has something to do
    return encode_png(img)


def make_obs(screen, step=0, history=(), shade=0) -> Observation:
    return Observation(step=step, screenshot_png=screen_png(*screen, shade=shade), width=screen[0],
                       height=screen[1], goal=GOAL, steps_left=20 - step, history=list(history))


def agent_for(server, adapter: str, card: TaskCard | None = None, **kw) -> ApiAgent:
    agent = ApiAgent("fake-model", server.base_url, api_key="sk-test", timeout_s=5.0, adapter=adapter, **kw)
    agent.reset(card or make_card(), "dev", 0)
    return agent


def images_of(request: dict) -> list[bytes]:
    out = []
    for m in request["messages"]:
        if isinstance(m["content"], list):
            for p in m["content"]:
                if p["type"] == "image_url":
                    out.append(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]))
    return out


def text_of(request: dict) -> str:
    parts = []
    for m in request["messages"]:
        c = m["content"]
        parts.extend([c] if isinstance(c, str) else [p["text"] for p in c if p["type"] == "text"])
    return "\n".join(parts)


# -- listing and sizes -------------------------------------------------------------------------

def test_agents_list_shows_every_adapter_with_its_format(capsys):
    assert cli_main(["agents", "list"]) == 0
    out = capsys.readouterr().out
    for name in CHAT_ADAPTERS + VENDOR_TOOLS:
        assert name in out
    assert "model family" in out and "source format" in out and "coordinates" in out and "history" in out
    assert cli_main(["agents", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == CHAT_ADAPTERS + VENDOR_TOOLS
    assert all(r["serve"].startswith("vllm serve") for r in rows[:len(CHAT_ADAPTERS)])
    assert all(f"medimageos run --agent api --adapter {r['name']} " in r["serve"] for r in rows[len(CHAT_ADAPTERS):])


def test_smart_resize_matches_the_published_rule_on_worked_examples():
    # (height, width) as the processors return them
    assert smart_resize(800, 1280, 28, 3136, 12845056) == (812, 1288)
    assert smart_resize(1080, 1920, 28, 3136, 12845056) == (1092, 1932)
    assert smart_resize(1080, 1920, 32, 65536, 16777216) == (1088, 1920)
    assert smart_resize(800, 1280, 32, 65536, 16777216) == (800, 1280)
    # too large: scaled down to fit max_pixels (3840^2 > 12845056 = 3584^2)
    assert smart_resize(3840, 3840, 28, 3136, 12845056) == (3584, 3584)
    # too small for UI-TARS's min_pixels 100*28*28: scaled up (beta = 1.98 -> 8*28, 15*28)
    assert smart_resize(100, 200, 28, 100 * 28 * 28, 16384 * 28 * 28) == (224, 420)
    with pytest.raises(ValueError):
        smart_resize(10, 5000, 28, 3136, 12845056)


def test_scale_point_maps_model_space_to_screen_pixels():
    assert scale_point(159, 85, (1288, 812), (1280, 800)) == (158, 84)
    assert scale_point(1000, 1000, (1000, 1000), (1280, 800)) == (1279, 799)  # right edge: last pixel
    assert scale_point(0.5, 0.5, (1, 1), (1920, 1080)) == (960, 540)
    for bad in ((-1, 5), (5, 1001), (float("nan"), 3), (True, 3)):
        with pytest.raises(ValueError):
            scale_point(bad[0], bad[1], (1000, 1000), (1280, 800))


# -- requests: image size and history ---------------------------------------------------------

REPLY_FOR = {  # a valid reply per adapter, to build history with
    "generic": '{"action": "wait", "seconds": 1}',
    "ui-tars-1.5": "Thought: Wait for the console.\nAction: wait()",
    "qwen2.5-vl": '<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", "time": 1}}\n</tool_call>',
    "qwen3-vl": 'Action: Wait.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", "time": 1}}\n</tool_call>',
    "opencua": "## Thought:\nI wait.\n## Action:\nWait a second.\n## Code:\n```python\npyautogui.moveTo(0.5, 0.5)\n```",
    "gui-owl-1.5": 'Action: Wait.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", "time": 1}}\n</tool_call>',
}


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", CHAT_ADAPTERS)
def test_screenshot_size_and_number_of_history_images(name, screen):
    steps = 7
    with fake_openai(default=REPLY_FOR[name]) as server:
        agent = agent_for(server, name)
        history: list[StepRecord] = []
        for step in range(steps):
            raw = agent.act(make_obs(screen, step, history, shade=step))
            status = "rejected" if step == 2 else "executed"  # one rejection to replay
            history.append(StepRecord(step, raw, None, status, "feedback-%d" % step))
        requests = list(server.requests)
    want = IMAGE_SIZES[name][screen]
    for i, req in enumerate(requests):
        imgs = images_of(req)
        assert len(imgs) == min(MAX_IMAGES[name], i + 1), (name, i)
        assert all(png_size(p) == want for p in imgs)
    last = requests[-1]
    imgs = images_of(last)
    # the current screenshot comes last and is this step's (shade 6 in the red channel)
    with Image.open(io.BytesIO(imgs[-1])) as im:
        assert im.size == want and im.convert("RGB").getpixel((2, 2))[0] == 6
    info = agent.last_call_info
    assert info["adapter"] == name and info["image_size"] == list(want) and info["images"] == len(imgs)
    assert len(info["prompt_hash"]) == 16 and info["adapter_version"]
    text = text_of(last)
    assert GOAL in text
    if name != "generic":
        assert "feedback-2" in text  # the rejected step's feedback reaches the model
    if name == "ui-tars-1.5":  # every earlier reply replayed as an assistant message
        assert sum(m["role"] == "assistant" for m in last["messages"]) == steps - 1
    if name in ("qwen2.5-vl", "qwen3-vl", "gui-owl-1.5"):  # 4 replayed with images, the 2 older ones as text
        assert sum(m["role"] == "assistant" for m in last["messages"]) == 4
        assert "Step 1: " in text and "Step 2: " in text and "Previous actions:" in text
    if name == "opencua":
        assert "# Step 1:\n## Action:\nWait a second." in text


def test_generic_adapter_sends_exactly_the_project_prompt():
    card = make_card()
    obs = make_obs((1280, 800), 1, [StepRecord(0, "x", None, "rejected", "bad")])
    with fake_openai(default='{"action": "done"}') as server:
        agent = agent_for(server, "generic", card, history_k=3)
        agent.act(obs)
    assert agent.name == "api:fake-model"
    assert server.requests[0]["messages"] == [{"role": "system", "content": system_prompt(card, 1280, 800)},
                                              {"role": "user", "content": user_message(obs, 3)}]


def test_native_prompts_follow_the_published_text_and_the_task_profile():
    card = make_card(allowed_actions=["click", "done"])
    a = get_adapter("ui-tars-1.5").user_prompt(card)
    assert a.startswith("You are a GUI agent. You are given a task and your action history, with screenshots.")
    assert "click(start_box='<|box_start|>(x1,y1)<|box_end|>')" in a and "## User Instruction\n" + GOAL in a
    assert "drag(" not in a and "left_double" not in a and "finished(content=" in a
    q = get_adapter("qwen2.5-vl").system_prompt(card, (1280, 800))
    assert "<tools>" in q and "<tool_call>" in q and "The screen's resolution is 1288x812." in q
    tool = json.loads(q.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0])
    assert tool["function"]["name"] == "computer_use"
    assert tool["function"]["parameters"]["properties"]["action"]["enum"] == [
        "left_click", "right_click", "middle_click", "terminate"]
    q3 = get_adapter("qwen3-vl").system_prompt(card, (1920, 1080))
    assert "The screen's resolution is 1000x1000." in q3 and "Action: a short imperative" in q3
    o = get_adapter("opencua").system_prompt(card)
    assert o.startswith("You are a GUI agent. You are given a task and a screenshot of the screen.")
    assert "computer.terminate" in o and "pyautogui.dragTo" not in o
    assert len({get_adapter(n).prompt_hash() for n in ADAPTERS}) == len(ADAPTERS) == 11


# -- replies -> screen pixels ------------------------------------------------------------------

def _tc(args: dict, prefix: str = "") -> str:
    return prefix + "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"


def _oc(code: str) -> str:
    return f"## Thought:\nI see the target.\n## Action:\nDo it.\n## Code:\n```python\n{code}\n```"


# (adapter, screen, hand-written reply, expected action in screen pixels). Model coordinates were
# worked out by hand from the published conventions: Qwen2.5-VL / UI-TARS / OpenCUA-qwen25 on the
# 1288x812 (1932x1092) image, Qwen3-VL on 0-1000, OpenCUA relative on 0-1.
MAPPING = [
    ("generic", (1280, 800), '{"action": "click", "x": 158, "y": 214}', {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("generic", (1920, 1080), '{"action": "click", "x": 1800, "y": 1000}', {"action": "click", "x": 1800, "y": 1000, "button": "left"}),
    ("ui-tars-1.5", (1280, 800), "Thought: Load it.\nAction: click(start_box='(159,217)')", {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("ui-tars-1.5", (1280, 800), "Thought: far corner\nAction: click(start_box='<|box_start|>(1207,710)<|box_end|>')", {"action": "click", "x": 1200, "y": 700, "button": "left"}),
    ("ui-tars-1.5", (1920, 1080), "Thought: Load it.\nAction: click(start_box='(159,216)')", {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("ui-tars-1.5", (1920, 1080), "Thought: box centre\nAction: right_single(start_box='(1801,1001,1821,1021)')", {"action": "click", "x": 1800, "y": 1000, "button": "right"}),
    ("ui-tars-1.5", (1280, 800), "Thought: drag\nAction: drag(start_box='(159,85)', end_box='(1207,710)')", {"action": "drag", "x": 158, "y": 84, "to_x": 1200, "to_y": 700}),
    ("ui-tars-1.5", (1280, 800), "Thought: point format\nAction: left_double(point='<point>159 217</point>')", {"action": "double_click", "x": 158, "y": 214}),
    ("ui-tars-1.5", (1280, 800), "Thought: select\nAction: hotkey(key='ctrl a')", {"action": "key", "key": "ctrl+a"}),
    ("ui-tars-1.5", (1280, 800), "Thought: down\nAction: scroll(start_box='(159,217)', direction='down')", {"action": "scroll", "x": 158, "y": 214, "clicks": 5}),
    ("ui-tars-1.5", (1280, 800), "Thought: type\nAction: type(content='120')", {"action": "type", "text": "120"}),
    ("ui-tars-1.5", (1280, 800), "Thought: wait\nAction: wait()", {"action": "wait", "seconds": 5.0}),
    ("ui-tars-1.5", (1280, 800), "Thought: done\nAction: finished(content='Protocol loaded.')", {"action": "done"}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "left_click", "coordinate": [159, 217]}), {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "double_click", "coordinate": [1207, 710]}), {"action": "double_click", "x": 1200, "y": 700}),
    ("qwen2.5-vl", (1920, 1080), _tc({"action": "left_click", "coordinate": [159, 216]}), {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("qwen2.5-vl", (1920, 1080), _tc({"action": "mouse_move", "coordinate": [1811, 1011]}), {"action": "move", "x": 1800, "y": 1000}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "left_click_drag", "coordinate": [1207, 710]}), {"action": "drag", "x": 4, "y": 4, "to_x": 1200, "to_y": 700}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "scroll", "coordinate": [159, 217], "pixels": -3}), {"action": "scroll", "x": 158, "y": 214, "clicks": 3}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "key", "keys": ["ctrl", "a"]}), {"action": "key", "key": "ctrl+a"}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "type", "text": "120"}), {"action": "type", "text": "120"}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "wait", "time": 2}), {"action": "wait", "seconds": 2.0}),
    ("qwen2.5-vl", (1280, 800), _tc({"action": "terminate", "status": "success"}), {"action": "done"}),
    ("qwen3-vl", (1280, 800), _tc({"action": "left_click", "coordinate": [123, 268]}, "Action: Click Load protocol.\n"), {"action": "click", "x": 157, "y": 214, "button": "left"}),
    ("qwen3-vl", (1280, 800), _tc({"action": "right_click", "coordinate": [937, 875]}, "Action: Corner.\n"), {"action": "click", "x": 1199, "y": 700, "button": "right"}),
    ("qwen3-vl", (1920, 1080), _tc({"action": "left_click", "coordinate": [82, 198]}, "Action: Click Load protocol.\n"), {"action": "click", "x": 157, "y": 214, "button": "left"}),
    ("qwen3-vl", (1920, 1080), _tc({"action": "left_click", "coordinate": [937, 926]}), {"action": "click", "x": 1799, "y": 1000, "button": "left"}),
    ("qwen3-vl", (1920, 1080), _tc({"action": "left_click", "coordinate": [1000, 1000]}), {"action": "click", "x": 1919, "y": 1079, "button": "left"}),
    ("opencua", (1280, 800), _oc("pyautogui.click(x=0.1234, y=0.2675)"), {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("opencua", (1280, 800), _oc("pyautogui.doubleClick(0.9375, 0.875)"), {"action": "double_click", "x": 1200, "y": 700}),
    ("opencua", (1920, 1080), _oc("pyautogui.click(x=0.0823, y=0.1981)"), {"action": "click", "x": 158, "y": 214, "button": "left"}),
    ("opencua", (1920, 1080), _oc("pyautogui.rightClick(x=0.9375, y=0.9259)"), {"action": "click", "x": 1800, "y": 1000, "button": "right"}),
    ("opencua", (1280, 800), _oc("pyautogui.click(x=1207, y=710)"), {"action": "click", "x": 1200, "y": 700, "button": "left"}),  # qwen25 absolute
    ("opencua", (1920, 1080), _oc("pyautogui.click(1811, 1011)"), {"action": "click", "x": 1800, "y": 1000, "button": "left"}),
    ("opencua", (1280, 800), _oc("pyautogui.dragTo(0.9375, 0.875, duration=0.5)"), {"action": "drag", "x": 4, "y": 4, "to_x": 1200, "to_y": 700}),
    ("opencua", (1280, 800), _oc("pyautogui.scroll(-3, x=0.1234, y=0.2675)"), {"action": "scroll", "x": 158, "y": 214, "clicks": 3}),
    ("opencua", (1280, 800), _oc("pyautogui.write(message='120')"), {"action": "type", "text": "120"}),
    ("opencua", (1280, 800), _oc("pyautogui.hotkey('ctrl', 'a')"), {"action": "key", "key": "ctrl+a"}),
    ("opencua", (1280, 800), _oc("pyautogui.press('enter')"), {"action": "key", "key": "Enter"}),
    ("opencua", (1280, 800), "## Thought:\nAll set.\n## Action:\nFinish.\n## Code:\n```code\ncomputer.terminate(status='success')\n```", {"action": "done"}),
]


@pytest.mark.parametrize("name,screen,reply,expected", MAPPING,
                         ids=[f"{m[0]}-{m[1][0]}x{m[1][1]}-{i}" for i, m in enumerate(MAPPING)])
def test_reply_maps_to_the_screen_pixel(name, screen, reply, expected):
    card = make_card()
    with fake_openai([reply]) as server:
        agent = agent_for(server, name, card)
        raw = agent.act(make_obs(screen))
    assert raw == reply  # the model's text comes back unparsed: the receipt keeps it
    res = agent.parse_reply(raw, card.action_profile, screen, state=ParserState(pointer=(4, 4)))
    assert res.ok, res.error
    assert res.action.to_dict() == expected
    assert res.source == name or name == "generic"


# -- malformed replies -------------------------------------------------------------------------

MALFORMED = [
    ("ui-tars-1.5", "I would click the button.", "Action:"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box='(159)')", "(x,y)"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box='(5000,10)')", "outside the 1288x812"),
    ("ui-tars-1.5", "Thought: x\nAction: scroll(start_box='(10,10)', direction='left')", "horizontal"),
    ("ui-tars-1.5", "Thought: x\nAction: launch_rockets()", "not in the action space"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box='(1,1)')\n\nclick(start_box='(2,2)')", "one action"),
    ("ui-tars-1.5", "Thought: x\nAction: hotkey(key='f13')", "not allowed"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box=", "could not read"),
    ("qwen2.5-vl", "I will click Load protocol.", "no <tool_call>"),
    ("qwen2.5-vl", "<tool_call>{not json}</tool_call>", "not valid JSON"),
    ("qwen2.5-vl", _tc({"action": "left_click"}), "coordinate"),
    ("qwen2.5-vl", _tc({"action": "left_click", "coordinate": [2000, 10]}), "outside the 1288x812"),
    ("qwen2.5-vl", _tc({"action": "triple_click", "coordinate": [10, 10]}), "not available"),
    ("qwen2.5-vl", _tc({"action": "scroll", "coordinate": [10, 10], "pixels": 0}), "non-zero"),
    ("qwen2.5-vl", '<tool_call>{"name": "browser", "arguments": {}}</tool_call>', "computer_use"),
    ("qwen2.5-vl", _tc({"action": "wait", "time": 500}), "wait seconds"),
    ("qwen3-vl", _tc({"action": "left_click", "coordinate": [1001, 5]}), "outside the 1000x1000"),
    ("qwen3-vl", _tc({"action": "left_click", "coordinate": [1, 1]}) + _tc({"action": "wait", "time": 1}), "one action"),
    ("qwen3-vl", _tc({"action": "type", "text": "a\nb"}), "newline"),
    ("opencua", "## Thought:\nHmm.\n## Action:\nClick it.", "no code block"),
    ("opencua", _oc("pyautogui.click(x=0.5, y=0.5)\npyautogui.write('a')"), "one action"),
    ("opencua", _oc("pyautogui.click(x=0.5)"), "both x and y"),
    ("opencua", _oc("pyautogui.tripleClick(x=0.5, y=0.5)"), "not available"),
    ("opencua", _oc("computer.triple_click(x=0.5, y=0.5)"), "not available"),
    ("opencua", _oc("pyautogui.click(x=5000, y=10)"), "outside the 1288x812"),
    ("opencua", _oc("os.system('ls')"), "pyautogui"),
    ("generic", "I think I should click.", "could not parse"),
]


@pytest.mark.parametrize("name,reply,feedback", MALFORMED, ids=[f"{m[0]}-{i}" for i, m in enumerate(MALFORMED)])
def test_malformed_reply_is_rejected_with_feedback(name, reply, feedback):
    card = make_card()
    with fake_openai([reply]) as server:
        agent = agent_for(server, name, card)
        raw = agent.act(make_obs((1280, 800)))
    res = agent.parse_reply(raw, card.action_profile, (1280, 800), state=ParserState(pointer=(4, 4)))
    assert not res.ok and res.action is None
    assert feedback in res.error, res.error


def test_actions_outside_the_task_profile_are_rejected():
    card = make_card(allowed_actions=["click", "done"])
    cases = {
        "ui-tars-1.5": "Thought: x\nAction: drag(start_box='(1,1)', end_box='(9,9)')",
        "qwen2.5-vl": _tc({"action": "type", "text": "abc"}),
        "qwen3-vl": _tc({"action": "key", "keys": ["enter"]}),
        "opencua": _oc("pyautogui.scroll(3)"),
    }
    for name, reply in cases.items():
        res = get_adapter(name).parse(reply, card.action_profile, (1280, 800), state=ParserState(pointer=(4, 4)))
        assert not res.ok and "not allowed in this task" in res.error, (name, res.error)


def test_nothing_a_model_writes_is_executed(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {marker}')"
    replies = {
        "ui-tars-1.5": [f"Thought: x\nAction: click(start_box={evil})", f"Thought: x\nAction: {evil}",
                        f"Thought: x\nAction: type(content='{evil}')"],
        "qwen2.5-vl": [_tc({"action": "type", "text": evil}), f"<tool_call>{evil}</tool_call>"],
        "qwen3-vl": [_tc({"action": "left_click", "coordinate": [evil, 1]})],
        "opencua": [_oc(f"pyautogui.click(x={evil}, y=0.5)"), _oc(evil), _oc(f"import os\n{evil}"),
                    _oc(f"pyautogui.write({evil})")],
        "generic": [f"pyautogui.click({evil}, 1)", evil],
    }
    card = make_card(max_text_length=200)
    for name, rs in replies.items():
        for r in rs:
            res = get_adapter(name).parse(r, card.action_profile, (1280, 800), state=ParserState(pointer=(4, 4)))
            # typing the text of the code is fine (it is only typed); anything else is rejected
            assert (not res.ok) or res.action.type == "type", (name, r, res)
    assert not marker.exists()


# -- reproducibility ---------------------------------------------------------------------------

def test_receipt_fields_name_the_adapter_and_the_cache_key_includes_it(tmp_path):
    from runner.agents.adapters.uitars import UITarsAdapter
    from runner.model_cache import ModelCache

    class UITarsV2(UITarsAdapter):
        version = "2"

    reply = "Thought: x\nAction: wait()"
    with fake_openai(default=reply) as server:
        a = agent_for(server, "ui-tars-1.5", cache=ModelCache(tmp_path / "c.jsonl"))
        a.act(make_obs((1920, 1080)))
        info1 = dict(a.last_call_info)
        b = agent_for(server, UITarsV2(), cache=ModelCache(tmp_path / "c.jsonl"))
        b.act(make_obs((1920, 1080)))
        info2 = dict(b.last_call_info)
        c = agent_for(server, "ui-tars-1.5", cache=ModelCache(tmp_path / "c.jsonl"))
        c.act(make_obs((1920, 1080)))
    assert a.name == "api:ui-tars-1.5:fake-model"
    assert info1["adapter"] == "ui-tars-1.5" and info1["image_size"] == [1932, 1092]
    assert info1["prompt_version"] == "1" and info2["adapter_version"] == "2"
    assert info1["cache_key"] != info2["cache_key"], "same request, other adapter version: other key"
    assert c.last_call_info["cache_hit"] and c.last_call_info["cache_key"] == info1["cache_key"]
    assert len(server.requests) == 2
    json.dumps(info1)


def test_scores_adapters_section_groups_episodes_by_agent(tmp_path):
    def episode(agent_dir, agent, seed, call):
        d = tmp_path / agent_dir / "t" / "dev" / f"seed{seed}"
        d.mkdir(parents=True)
        (d / "verdict.json").write_text(json.dumps({"agent": agent}))
        lines = [{"step": 0, "model_call": None}, {"step": 1, "model_call": call}]
        (d / "receipts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")

    call = {"adapter": "qwen3-vl", "adapter_version": "1", "prompt_hash": "abcd", "image_size": [1920, 1088]}
    episode("api_qwen3-vl_m", "api:qwen3-vl:m", 0, call)
    episode("api_qwen3-vl_m", "api:qwen3-vl:m", 1, {**call, "image_size": [1280, 800]})
    episode("reference", "reference", 0, None)
    sec = adapters_section(tmp_path)
    assert list(sec) == ["api:qwen3-vl:m"]
    assert sec["api:qwen3-vl:m"]["adapters"] == [{"adapter": "qwen3-vl", "adapter_version": "1",
                                                 "prompt_hash": "abcd", "episodes": 2}]
    assert sec["api:qwen3-vl:m"]["image_sizes"] == {"1280x800": 1, "1920x1088": 1}


def test_adapter_option_is_checked():
    from runner.agents import make_agent

    with pytest.raises(ValueError, match="--agent api only"):
        make_agent("noop", adapter="qwen3-vl")
    with pytest.raises(ValueError, match="unknown adapter"):
        get_adapter("gpt-99")
    assert make_agent("api", model="m", base_url="http://127.0.0.1:9/v1", adapter="opencua").name == "api:opencua:m"
