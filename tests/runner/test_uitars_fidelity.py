"""Format fidelity guard: our UI-TARS-1.5 adapter reads replies as ByteDance's own `ui-tars` package does.

The same replies go through runner/agents/adapters/uitars.py and through the package's
`parse_action_to_structure_output` (model_type qwen25vl: absolute pixels on the smart_resize'd image)
and `parsing_response_to_pyautogui_code` (the point it sends pyautogui to, in screen pixels); each action
must name the same screen pixel (ours is the pixel nearest to the package's point), the same keys, text
and scroll direction. The package's smart_resize must give our image size on every screen a card allows.
`ui-tars` is a test-only dependency (pyproject's `test` extra).
"""
from __future__ import annotations

import math
import re

import pytest
import ui_tars.action_parser as ui_tars  # the test extra installs it: without it the guard fails, not skips

from runner.agents.adapters import get_adapter
from runner.agents.adapters.imaging import smart_resize
from tasks.card import load_card

PROFILE = load_card("ct_ui_smoke_routine").action_profile  # keys Enter, ..., ctrl+a
SCREENS = [(1280, 800), (1920, 1080), (2560, 1440), (1024, 768), (3840, 2160), (1366, 768)]
ADAPTER = get_adapter("ui-tars-1.5")


def reference(reply: str, screen: tuple[int, int]) -> tuple[str, dict, list[str]]:
    """(action type, inputs, pyautogui lines) as the ui-tars package reads `reply` on a screen of `screen`."""
    w, h = screen
    (action,) = ui_tars.parse_action_to_structure_output(reply, 1000, h, w, "qwen25vl")
    code = ui_tars.parsing_response_to_pyautogui_code(action, h, w, scale_factor=1)
    return action["action_type"], action["action_inputs"], [ln for ln in code.splitlines() if "pyautogui." in ln]


def nearest(v: float) -> int:
    return int(math.floor(v + 0.5))


def points(line: str) -> list[tuple[float, float]]:
    nums = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", line.split("(", 1)[1])]
    return [(nums[0], nums[1])]


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_smart_resize_is_the_packages(screen):
    w, h = screen
    assert ADAPTER.image_size(screen) == tuple(reversed(ui_tars.smart_resize(h, w)))
    assert smart_resize(h, w, 28, ui_tars.MIN_PIXELS, ui_tars.MAX_PIXELS) == ui_tars.smart_resize(h, w)


def _image_points(screen):
    """Points spread over the model's image, edges included."""
    iw, ih = ADAPTER.image_size(screen)
    return [(0, 0), (iw, ih), (iw // 2, ih // 3), (159, 85), (159, 217), (iw - 1, 1), (37, ih - 5), (iw // 7, ih // 9)]


CLICKS = {"click": ("click", "left", "pyautogui.click"), "left_double": ("double_click", None, "pyautogui.doubleClick"),
          "right_single": ("click", "right", "pyautogui.click")}


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("fn", list(CLICKS))
def test_clicks_land_on_the_packages_pixel(fn, screen):
    kind, button, call = CLICKS[fn]
    for x, y in _image_points(screen):
        # the package reads '(x,y)' and '<point>x y</point>'; servers drop the box tokens before it sees a
        # reply, and ours must read a reply that kept them the same way
        for box in (f"({x},{y})", f"<point>{x} {y}</point>"):
            arg = "point" if box.startswith("<point>") else "start_box"
            reply = f"Thought: Press it.\nAction: {fn}({arg}='{box}')"
            ours = ADAPTER.parse(reply, PROFILE, screen)
            assert ours.ok, (reply, ours.error)
            tokens = ADAPTER.parse(f"Thought: Press it.\nAction: {fn}(start_box='<|box_start|>({x},{y})<|box_end|>')",
                                   PROFILE, screen)
            assert tokens.action == ours.action
            _, _, lines = reference(reply, screen)
            (line,) = lines
            assert line.startswith(call) and (button is None or f"button='{button}'" in line)
            (px, py), = points(line)
            a = ours.action
            assert a.type == kind and (a.x, a.y) == (min(screen[0] - 1, nearest(px)), min(screen[1] - 1, nearest(py))), \
                (reply, screen, line, a)


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_drags_and_scrolls_land_on_the_packages_pixels(screen):
    pts = _image_points(screen)
    for (x1, y1), (x2, y2) in zip(pts, pts[1:]):
        reply = f"Thought: Drag.\nAction: drag(start_box='({x1},{y1})', end_box='({x2},{y2})')"
        ours = ADAPTER.parse(reply, PROFILE, screen).action
        _, _, lines = reference(reply, screen)
        (sx, sy), = points(next(ln for ln in lines if "moveTo" in ln))
        (ex, ey), = points(next(ln for ln in lines if "dragTo" in ln))
        clamp = lambda v, n: min(n - 1, nearest(v))  # noqa: E731
        assert (ours.x, ours.y, ours.x2, ours.y2) == (clamp(sx, screen[0]), clamp(sy, screen[1]),
                                                      clamp(ex, screen[0]), clamp(ey, screen[1]))
    for (x, y), direction in zip(pts, ["down", "up"] * 4):
        reply = f"Thought: Scroll.\nAction: scroll(start_box='({x},{y})', direction='{direction}')"
        ours = ADAPTER.parse(reply, PROFILE, screen).action
        _, inputs, lines = reference(reply, screen)
        # the package scrolls at the box's own corner (a box given as a point: the point itself)
        fx, fy = eval(inputs["start_box"])[:2]  # noqa: S307 - the package's own list literal
        assert (ours.x, ours.y) == (min(screen[0] - 1, nearest(fx * screen[0])), min(screen[1] - 1, nearest(fy * screen[1])))
        assert (ours.clicks > 0) == (direction == "down") and abs(ours.clicks) == 5
        assert lines[-1].startswith("pyautogui.scroll(%d" % (-5 if direction == "down" else 5))


def test_keys_text_wait_and_finish_read_the_same():
    screen = (1280, 800)
    kind, inputs, lines = reference("Thought: Select all.\nAction: hotkey(key='ctrl a')", screen)
    ours = ADAPTER.parse("Thought: Select all.\nAction: hotkey(key='ctrl a')", PROFILE, screen).action
    assert kind == "hotkey" and lines == ["pyautogui.hotkey('ctrl', 'a')"] and ours.key == "ctrl+a"
    kind, inputs, _ = reference("Thought: Confirm.\nAction: hotkey(key='enter')", screen)
    assert ADAPTER.parse("Thought: Confirm.\nAction: hotkey(key='enter')", PROFILE, screen).action.key == "Enter"
    for text in ("4ch", "it's", "a \"b\""):
        escaped = text.replace("'", "\\'").replace('"', '\\"')
        reply = f"Thought: Type.\nAction: type(content='{escaped}')"
        kind, inputs, _ = reference(reply, screen)
        assert kind == "type" and ADAPTER.parse(reply, PROFILE, screen).action.text == text
    kind, _, _ = reference("Thought: Done.\nAction: finished(content='loaded')", screen)
    assert kind == "finished" and ADAPTER.parse("Thought: Done.\nAction: finished(content='loaded')", PROFILE,
                                                screen).action.type == "done"
    kind, _, _ = reference("Thought: Hold on.\nAction: wait()", screen)
    assert kind == "wait" and ADAPTER.parse("Thought: Hold on.\nAction: wait()", PROFILE, screen).action.type == "wait"


def test_box_tokens_added_to_replayed_history_are_the_packages():
    from runner.agents.adapters.uitars import add_box_token

    for reply in ("Thought: a\nAction: click(start_box='(159,85)')",
                  "Thought: b\nAction: drag(start_box='(1,2)', end_box='(30,40)')"):
        assert add_box_token(reply) == ui_tars.add_box_token(reply)
