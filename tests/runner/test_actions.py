"""Tests for runner.actions: parsing, normalization and validation of agent output."""
from __future__ import annotations

import json
import random
import string

import pytest

from runner.actions import (
    MAX_RAW_CHARS,
    MAX_SCROLL_CLICKS,
    NOMINAL_SECONDS,
    Action,
    ParserState,
    key_to_keysyms,
    nominal_duration,
    parse_action,
)
from tasks.card import ACTION_TYPES, ActionProfile

P = ActionProfile()
S = (1280, 800)


def ok(raw, profile=P, screen=S, **kw):
    r = parse_action(raw, profile, screen, **kw)
    assert r.ok, f"expected {raw!r} to parse, got error {r.error!r}"
    assert r.error is None and r.action is not None
    return r


def rej(raw, profile=P, screen=S, **kw):
    r = parse_action(raw, profile, screen, **kw)
    assert not r.ok, f"expected {raw!r} to be rejected, got {r.action}"
    assert r.action is None
    assert isinstance(r.error, str) and r.error
    assert not r.error.startswith("internal error")
    return r.error


def js(**d):
    return json.dumps(d)


def at(x, y):
    return ParserState(pointer=(x, y))


# ---------------------------------------------------------------------------------------------
# Project JSON


def test_click_exact_has_no_repairs():
    r = ok(js(action="click", x=10, y=20, button="left"))
    assert r.action == Action("click", x=10, y=20, button="left")
    assert r.repairs == []
    assert r.source == "json"


@pytest.mark.parametrize("button", ["right", "middle", "Right"])
def test_click_buttons(button):
    assert ok(js(action="click", x=1, y=2, button=button)).action.button == button.lower()


def test_click_bad_button_rejected():
    assert "button" in rej(js(action="click", x=1, y=2, button="back"))


def test_click_default_button_left():
    assert ok(js(action="click", x=1, y=2)).action.button == "left"


def test_double_click_move_type_key_wait_done():
    assert ok(js(action="double_click", x=5, y=6)).action == Action("double_click", x=5, y=6)
    assert ok(js(action="move", x=7, y=8)).action == Action("move", x=7, y=8)
    assert ok(js(action="type", text="120")).action == Action("type", text="120")
    assert ok(js(action="key", key="Enter")).action == Action("key", key="Enter")
    assert ok(js(action="wait", seconds=2.5)).action == Action("wait", seconds=2.5)
    assert ok(js(action="done")).action == Action("done")


def test_double_click_right_button_rejected():
    assert "left" in rej(js(action="double_click", x=5, y=6, button="right"))


def test_drag_to_x_to_y():
    r = ok(js(action="drag", x=10, y=20, to_x=30, to_y=40))
    assert r.action == Action("drag", x=10, y=20, x2=30, y2=40)
    assert r.repairs == []


def test_drag_start_end_is_a_repair():
    r = ok(js(action="drag", start=[10, 20], end=[30, 40]))
    assert r.action == Action("drag", x=10, y=20, x2=30, y2=40)
    assert any("start/end" in n for n in r.repairs)


def test_drag_x2_y2_is_a_repair():
    r = ok(js(action="drag", x=1, y=2, x2=3, y2=4))
    assert r.action == Action("drag", x=1, y=2, x2=3, y2=4)
    assert any("x2" in n for n in r.repairs)


def test_drag_without_end_rejected():
    assert "to_x" in rej(js(action="drag", x=1, y=2))
    assert "start and end" in rej(js(action="drag", start=[1, 2]))


def test_drag_end_off_screen_rejected():
    assert "off screen" in rej(js(action="drag", x=1, y=2, to_x=2000, to_y=4))


def test_scroll_clicks_positive_is_down():
    r = ok(js(action="scroll", x=100, y=200, clicks=3))
    assert r.action == Action("scroll", x=100, y=200, clicks=3)
    assert r.repairs == []


def test_scroll_dy_is_a_repair():
    r = ok(js(action="scroll", x=100, y=200, dy=-2))
    assert r.action.clicks == -2
    assert any("dy" in n for n in r.repairs)


def test_scroll_direction_sets_sign():
    r = ok(js(action="scroll", x=1, y=1, direction="up", amount=4))
    assert r.action.clicks == -4
    assert ok(js(action="scroll", x=1, y=1, direction="down", clicks=-2)).action.clicks == 2
    assert "direction" in rej(js(action="scroll", x=1, y=1, direction="left", clicks=2))


@pytest.mark.parametrize("clicks", [0, MAX_SCROLL_CLICKS + 1, -(MAX_SCROLL_CLICKS + 1), "many",
                                    True, None])
def test_scroll_bad_clicks_rejected(clicks):
    err = rej(js(action="scroll", x=1, y=1, clicks=clicks))
    assert "clicks" in err


def test_scroll_bounds_inclusive():
    assert ok(js(action="scroll", x=1, y=1, clicks=MAX_SCROLL_CLICKS)).action.clicks == 20
    assert ok(js(action="scroll", x=1, y=1, clicks=-MAX_SCROLL_CLICKS)).action.clicks == -20


def test_scroll_without_clicks_rejected():
    assert "clicks" in rej(js(action="scroll", x=1, y=1))


def test_scroll_without_position_uses_pointer():
    r = ok(js(action="scroll", clicks=2), state=at(50, 60))
    assert (r.action.x, r.action.y) == (50, 60)
    assert any("pointer" in n for n in r.repairs)
    assert "pointer position is unknown" in rej(js(action="scroll", clicks=2))


def test_click_with_only_x_rejected():
    assert "both x and y" in rej(js(action="click", x=5))


def test_type_discriminator_is_a_repair():
    r = ok(js(type="click", x=1, y=2))
    assert r.action == Action("click", x=1, y=2)
    assert any('"type"' in n for n in r.repairs)
    # "type" naming the type action itself
    assert ok(js(type="type", text="abc")).action == Action("type", text="abc")


def test_json_in_prose_is_extracted():
    raw = 'I will click the Scan button. {"action": "click", "x": 100, "y": 200} Then wait.'
    r = ok(raw)
    assert r.action == Action("click", x=100, y=200)
    assert any("surrounding text" in n for n in r.repairs)


def test_json_in_fence_is_extracted():
    raw = 'Here it is:\n```json\n{"action": "double_click", "x": 3, "y": 4}\n```\nDone thinking.'
    r = ok(raw)
    assert r.action == Action("double_click", x=3, y=4)
    assert any("code block" in n for n in r.repairs)


def test_prose_braces_before_json_are_skipped():
    raw = 'The set {a, b} is irrelevant. {"thought": "x"} {"action": "move", "x": 9, "y": 9}'
    assert ok(raw).action == Action("move", x=9, y=9)


def test_first_action_object_wins():
    raw = '{"action": "move", "x": 1, "y": 1} {"action": "move", "x": 2, "y": 2}'
    assert ok(raw).action == Action("move", x=1, y=1)


def test_nested_action_object_unwrapped():
    r = ok(js(thought="scan now", action={"action": "click", "x": 4, "y": 5}))
    assert r.action == Action("click", x=4, y=5)
    assert any("nested" in n and "thought" in n for n in r.repairs)


def test_nested_parameters_merged():
    r = ok(js(action="click", parameters={"x": 4, "y": 5}))
    assert r.action == Action("click", x=4, y=5)
    assert any("parameters" in n for n in r.repairs)


def test_coordinate_pair_field_is_a_repair():
    r = ok(js(action="click", coordinate=[11, 12]))
    assert r.action == Action("click", x=11, y=12)
    assert any("coordinate" in n for n in r.repairs)


def test_float_coordinates_rounded_with_repair():
    r = ok(js(action="click", x=10.6, y=20.4))
    assert (r.action.x, r.action.y) == (11, 20)
    assert any("rounded" in n for n in r.repairs)
    assert isinstance(r.action.x, int) and isinstance(r.action.y, int)


def test_integral_float_coordinates_need_no_rounding_note():
    r = ok(js(action="click", x=10.0, y=20.0))
    assert (r.action.x, r.action.y) == (10, 20) and isinstance(r.action.x, int)
    assert r.repairs == []


def test_string_coordinates_converted_with_repair():
    r = ok(js(action="click", x="10", y=" 20 "))
    assert (r.action.x, r.action.y) == (10, 20)
    assert any("string" in n for n in r.repairs)


@pytest.mark.parametrize("x", [True, [1], {"v": 1}, "ten", "nan", "inf"])
def test_bad_coordinate_values_rejected(x):
    assert "x" in rej(js(action="click", x=x, y=5))


def test_unknown_fields_ignored_with_repair():
    r = ok(js(action="click", x=1, y=2, reasoning="because", confidence=0.9))
    assert r.action == Action("click", x=1, y=2)
    assert any("confidence" in n and "reasoning" in n for n in r.repairs)


@pytest.mark.parametrize("name,kind,button", [
    ("left_click", "click", "left"), ("Click", "click", "left"), ("right_click", "click", "right"),
    ("Double-Click", "double_click", "left"), ("doubleclick", "double_click", "left"),
    ("mouse_move", "move", "left"),
])
def test_action_name_aliases(name, kind, button):
    r = ok(js(action=name, x=3, y=4))
    assert r.action.type == kind and r.action.button == button
    assert any(repr(name) in n for n in r.repairs)


def test_alias_conflicting_button_rejected():
    assert "conflicts" in rej(js(action="right_click", x=1, y=1, button="left"))


def test_unknown_action_rejected_listing_allowed():
    err = rej(js(action="teleport", x=1, y=1))
    assert "teleport" in err and "click" in err and "done" in err


def test_json_without_action_field_rejected():
    assert '"action"' in rej(js(x=1, y=2))


def test_action_not_a_string_rejected():
    assert "action name" in rej(js(action=5))


def test_list_of_several_actions_rejected():
    raw = json.dumps([{"action": "done"}, {"action": "done"}])
    assert "one action per step" in rej(raw)


def test_single_element_list_unwrapped():
    r = ok(json.dumps([{"action": "done"}]))
    assert r.action == Action("done") and any("list" in n for n in r.repairs)


def test_numeric_text_converted():
    r = ok(js(action="type", text=120))
    assert r.action.text == "120" and any("string" in n for n in r.repairs)


def test_wait_without_seconds_defaults_with_repair():
    r = ok(js(action="wait"))
    assert r.action.seconds == 1.0 and any("1 s" in n for n in r.repairs)


def test_wait_default_respects_small_bound():
    prof = ActionProfile(max_wait_seconds=0.5)
    assert ok(js(action="wait"), profile=prof).action.seconds == 0.5


def test_key_both_key_and_keys_uses_key():
    r = ok(js(action="key", key="Tab", keys=["ctrl", "a"]))
    assert r.action.key == "Tab" and any("both" in n for n in r.repairs)


def test_key_missing_rejected():
    assert '"key"' in rej(js(action="key"))


# ---------------------------------------------------------------------------------------------
# Round trip: to_dict is the project language, parse(to_dict) is identity without repairs

ROUND_TRIP = [
    Action("click", x=1, y=2, button="right"),
    Action("click", x=0, y=0),
    Action("double_click", x=1279, y=799),
    Action("drag", x=1, y=2, x2=3, y2=4),
    Action("scroll", x=5, y=6, clicks=-3),
    Action("move", x=7, y=8),
    Action("type", text="Héllo 12"),
    Action("key", key="ctrl+a"),
    Action("key", key="Page_Up"),
    Action("wait", seconds=0.25),
    Action("done"),
]


@pytest.mark.parametrize("action", ROUND_TRIP, ids=lambda a: a.type)
def test_round_trip(action):
    d = action.to_dict()
    assert d["action"] == action.type
    assert None not in d.values()
    r = ok(json.dumps(d))
    assert r.action == action
    assert r.repairs == []


def test_to_dict_fields_per_type():
    assert Action("done").to_dict() == {"action": "done"}
    assert Action("drag", x=1, y=2, x2=3, y2=4).to_dict() == {
        "action": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}
    assert Action("key", key="Enter").to_dict() == {"action": "key", "key": "Enter"}
    assert "button" not in Action("double_click", x=1, y=1).to_dict()
    assert Action("click", x=1, y=1).to_dict()["button"] == "left"


def test_action_rejects_unknown_type():
    with pytest.raises(ValueError):
        Action("teleport")


# ---------------------------------------------------------------------------------------------
# Keys


@pytest.mark.parametrize("given,canonical", [
    ("enter", "Enter"), ("Return", "Enter"), ("RETURN", "Enter"), ("esc", "Escape"),
    ("ESCAPE", "Escape"), ("backspace", "BackSpace"), ("Back_Space", "BackSpace"),
    ("del", "Delete"), ("pageup", "Page_Up"), ("page down", "Page_Down"), ("PgDn", "Page_Down"),
    ("arrowup", "Up"), ("LEFT", "Left"), ("tab", "Tab"), ("Ctrl+A", "ctrl+a"),
    ("control+a", "ctrl+a"), ("CTRL + a", "ctrl+a"),
])
def test_key_normalized_to_allowlist_spelling(given, canonical):
    r = ok(js(action="key", key=given))
    assert r.action.key == canonical
    assert any("normalized" in n and canonical in n for n in r.repairs)


@pytest.mark.parametrize("key", ["Enter", "Page_Down", "ctrl+a", "BackSpace"])
def test_exact_key_spelling_has_no_repair(key):
    assert ok(js(action="key", key=key)).repairs == []


def test_keys_list_is_a_combination():
    r = ok(js(action="key", keys=["ctrl", "a"]))
    assert r.action.key == "ctrl+a"
    assert any("combination" in n for n in r.repairs)


@pytest.mark.parametrize("key", ["F5", "ctrl+c", "a", "alt+F4", "", "   ", "Enter+Tab"])
def test_key_not_in_allowlist_rejected(key):
    err = rej(js(action="key", key=key))
    assert "key" in err


def test_key_rejection_lists_allowed_keys():
    err = rej(js(action="key", key="F5"))
    assert "'F5' is not allowed" in err
    for k in P.allowed_keys:
        assert k in err


def test_key_non_string_rejected():
    assert "key" in rej(js(action="key", key=13))
    assert "key" in rej(js(action="key", key=[1, 2]))


def test_modifier_order_and_case_do_not_matter():
    prof = ActionProfile(allowed_keys=["ctrl+shift+z", "plus", "+"])
    r = ok(js(action="key", key="Shift+CTRL+Z"), profile=prof)
    assert r.action.key == "ctrl+shift+z"
    assert ok(js(action="key", key="+"), profile=prof).action.key == "+"


def test_key_to_keysyms():
    assert key_to_keysyms("ctrl+a") == ["Control_L", "a"]
    assert key_to_keysyms("Enter") == ["Return"]
    assert key_to_keysyms("Page_Up") == ["Page_Up"]
    assert key_to_keysyms("BackSpace") == ["BackSpace"]
    assert key_to_keysyms("shift+ctrl+F5") == ["Control_L", "Shift_L", "F5"]


# ---------------------------------------------------------------------------------------------
# OSWorld computer_13


def c13(action_type, **params):
    return json.dumps({"action_type": action_type, "parameters": params})


def test_c13_click():
    r = ok(c13("CLICK", x=10, y=20, button="left", num_clicks=1))
    assert r.action == Action("click", x=10, y=20)
    assert r.repairs == [] and r.source == "computer_13"


def test_c13_click_right_button():
    assert ok(c13("CLICK", x=10, y=20, button="right")).action.button == "right"


def test_c13_click_two_clicks_is_double_click():
    r = ok(c13("CLICK", x=10, y=20, num_clicks=2))
    assert r.action == Action("double_click", x=10, y=20)
    assert any("double_click" in n for n in r.repairs)


def test_c13_click_three_clicks_rejected():
    assert "num_clicks" in rej(c13("CLICK", x=10, y=20, num_clicks=3))


def test_c13_click_without_coordinates_uses_pointer():
    r = ok(c13("CLICK"), state=at(33, 44))
    assert r.action == Action("click", x=33, y=44)
    assert any("pointer" in n for n in r.repairs)
    assert "unknown" in rej(c13("CLICK"))


def test_c13_move_right_double():
    assert ok(c13("MOVE_TO", x=1, y=2)).action == Action("move", x=1, y=2)
    assert ok(c13("RIGHT_CLICK", x=1, y=2)).action == Action("click", x=1, y=2, button="right")
    assert ok(c13("DOUBLE_CLICK", x=1, y=2)).action == Action("double_click", x=1, y=2)


def test_c13_drag_from_pointer():
    r = ok(c13("DRAG_TO", x=300, y=400), state=at(10, 20))
    assert r.action == Action("drag", x=10, y=20, x2=300, y2=400)
    assert any("pointer" in n for n in r.repairs)


def test_c13_drag_with_start():
    r = ok(c13("DRAG_TO", x=300, y=400, start=[5, 6]))
    assert r.action == Action("drag", x=5, y=6, x2=300, y2=400)


def test_c13_drag_without_known_pointer_rejected():
    err = rej(c13("DRAG_TO", x=300, y=400))
    assert "MOVE_TO" in err and "start" in err
    assert "unknown" in rej(c13("DRAG_TO", x=300, y=400), state=ParserState())


def test_c13_drag_needs_end():
    assert "x and y" in rej(c13("DRAG_TO"), state=at(1, 1))


def test_c13_scroll_sign_converted():
    r = ok(c13("SCROLL", dx=0, dy=3), state=at(100, 100))
    assert r.action == Action("scroll", x=100, y=100, clicks=-3)
    assert any("+ is up" in n for n in r.repairs)
    assert ok(c13("SCROLL", dy=-2, x=5, y=6)).action == Action("scroll", x=5, y=6, clicks=2)


def test_c13_scroll_horizontal():
    assert "horizontal" in rej(c13("SCROLL", dx=3, dy=0), state=at(1, 1))
    r = ok(c13("SCROLL", dx=3, dy=1), state=at(1, 1))
    assert r.action.clicks == -1 and any("dx" in n for n in r.repairs)
    assert "dy" in rej(c13("SCROLL"), state=at(1, 1))


def test_c13_typing_press_hotkey():
    assert ok(c13("TYPING", text="abc")).action == Action("type", text="abc")
    r = ok(c13("PRESS", key="enter"))
    assert r.action == Action("key", key="Enter") and r.repairs
    r = ok(c13("HOTKEY", keys=["ctrl", "a"]))
    assert r.action == Action("key", key="ctrl+a") and r.repairs == []
    assert "keys" in rej(c13("HOTKEY", keys="ctrl+a"))
    assert "key" in rej(c13("PRESS"))


def test_c13_wait_done_fail():
    r = ok(c13("WAIT"))
    assert r.action.type == "wait" and r.action.seconds == 1.0 and r.repairs
    assert ok(c13("WAIT", seconds=3)).action.seconds == 3.0
    r = ok(c13("DONE"))
    assert r.action == Action("done") and r.repairs == []
    r = ok(c13("FAIL"))
    assert r.action == Action("done")
    assert any("agent declared failure" in n for n in r.repairs)


@pytest.mark.parametrize("at_", ["MOUSE_DOWN", "MOUSE_UP", "KEY_DOWN", "KEY_UP"])
def test_c13_held_buttons_and_keys_rejected(at_):
    err = rej(c13(at_, button="left", key="a"))
    assert at_ in err and "not supported" in err
    assert "DRAG_TO" in err and "HOTKEY" in err


def test_c13_unknown_action_type_rejected():
    err = rej(c13("SWIPE", x=1, y=1))
    assert "SWIPE" in err and "CLICK" in err


def test_c13_lowercase_and_top_level_params():
    r = ok(json.dumps({"action_type": "click", "x": 7, "y": 8}))
    assert r.action == Action("click", x=7, y=8)


def test_c13_unknown_params_ignored_with_repair():
    r = ok(c13("MOVE_TO", x=1, y=2, speed="fast"))
    assert any("speed" in n for n in r.repairs)


def test_c13_bad_parameters_type_rejected():
    assert "parameters" in rej(json.dumps({"action_type": "CLICK", "parameters": [1, 2]}))


def test_c13_python_style_dict():
    r = ok("{'action_type': 'CLICK', 'parameters': {'x': 5, 'y': 6, 'button': 'left'}}")
    assert r.action == Action("click", x=5, y=6)
    assert any("Python-style" in n for n in r.repairs)


@pytest.mark.parametrize("word,kind", [("DONE", "done"), ("FAIL", "done"), ("WAIT", "wait"),
                                       ("done.", "done"), ('"DONE"', "done")])
def test_osworld_bare_words(word, kind):
    r = ok(word)
    assert r.action.type == kind and r.source == "word"
    assert any("agent declared failure" in n for n in r.repairs) == (word == "FAIL")


# ---------------------------------------------------------------------------------------------
# pyautogui subset


def test_pya_click():
    r = ok("pyautogui.click(100, 200)")
    assert r.action == Action("click", x=100, y=200)
    assert r.repairs == [] and r.source == "pyautogui"


def test_pya_click_keywords_and_pair():
    assert ok("pyautogui.click(x=100, y=200, button='right')").action == Action(
        "click", x=100, y=200, button="right")
    assert ok("pyautogui.click((100, 200))").action == Action("click", x=100, y=200)


def test_pya_click_two_clicks_is_double():
    r = ok("pyautogui.click(100, 200, clicks=2)")
    assert r.action == Action("double_click", x=100, y=200) and r.repairs


def test_pya_click_at_pointer():
    assert ok("pyautogui.click()", state=at(3, 4)).action == Action("click", x=3, y=4)
    assert "unknown" in rej("pyautogui.click()")


def test_pya_right_double_move():
    assert ok("pyautogui.rightClick(5, 6)").action == Action("click", x=5, y=6, button="right")
    assert ok("pyautogui.doubleClick(5, 6)").action == Action("double_click", x=5, y=6)
    r = ok("pyautogui.moveTo(5, 6, duration=0.5)")
    assert r.action == Action("move", x=5, y=6)
    assert any("duration" in n for n in r.repairs)


def test_pya_drag_to_from_pointer():
    r = ok("pyautogui.dragTo(300, 400, duration=1.0, button='left')", state=at(10, 20))
    assert r.action == Action("drag", x=10, y=20, x2=300, y2=400)


def test_pya_drag_to_needs_pointer_and_left_button():
    assert "moveTo" in rej("pyautogui.dragTo(300, 400)")
    assert "left" in rej("pyautogui.dragTo(300, 400, button='right')", state=at(1, 1))


def test_pya_scroll_sign_converted():
    r = ok("pyautogui.scroll(3)", state=at(100, 100))
    assert r.action == Action("scroll", x=100, y=100, clicks=-3)  # pyautogui + is up
    assert any("pyautogui scroll" in n for n in r.repairs)
    assert ok("pyautogui.scroll(-5, x=10, y=20)").action == Action("scroll", x=10, y=20, clicks=5)
    assert ok("pyautogui.scroll(-1, 10, 20)").action == Action("scroll", x=10, y=20, clicks=1)


def test_pya_write_and_typewrite():
    assert ok("pyautogui.write('hello')").action == Action("type", text="hello")
    r = ok("pyautogui.typewrite('120', interval=0.05)")
    assert r.action == Action("type", text="120") and any("interval" in n for n in r.repairs)
    assert "control character" in rej("pyautogui.write('hello\\n')")
    assert "string" in rej("pyautogui.typewrite(['a', 'b'])")


def test_pya_press_and_hotkey():
    r = ok("pyautogui.press('enter')")
    assert r.action == Action("key", key="Enter")
    assert "one key press" in rej("pyautogui.press('enter', presses=3)")
    assert "one key press" in rej("pyautogui.press(['tab', 'tab'])")
    assert ok("pyautogui.press(['tab'])").action.key == "Tab"
    r = ok("pyautogui.hotkey('ctrl', 'a')")
    assert r.action == Action("key", key="ctrl+a") and r.repairs == []
    assert "not allowed" in rej("pyautogui.hotkey('ctrl', 'c')")


def test_pya_import_line_dropped():
    r = ok("import pyautogui\npyautogui.click(1, 2)")
    assert r.action == Action("click", x=1, y=2)
    assert any("import" in n for n in r.repairs)


def test_pya_fenced_and_in_prose():
    r = ok("Click OK.\n```python\npyautogui.click(10, 20)\n```")
    assert r.action == Action("click", x=10, y=20)
    r = ok("I use pyautogui.click to hit OK:\npyautogui.click(10, 20)")
    assert r.action == Action("click", x=10, y=20)
    assert any("surrounding text" in n for n in r.repairs)


def test_pya_one_action_per_step():
    assert "one action per step" in rej("pyautogui.click(1, 2)\npyautogui.click(3, 4)")
    assert "one action per step" in rej("pyautogui.click(1, 2); pyautogui.press('enter')")
    assert "one action per step" in rej("Step:\npyautogui.click(1, 2)\nthen pyautogui.click(3, 4)")


@pytest.mark.parametrize("fn", ["mouseDown", "mouseUp", "keyDown", "keyUp"])
def test_pya_held_rejected(fn):
    err = rej(f"pyautogui.{fn}()")
    assert fn in err and "pyautogui.dragTo" in err


@pytest.mark.parametrize("code", ["pyautogui.hscroll(3)", "pyautogui.screenshot()",
                                  "pyautogui.alert('x')", "time.sleep(2)", "click(1, 2)"])
def test_pya_unsupported_calls_rejected(code):
    assert "pyautogui" in rej(code)


def test_pya_bad_arguments_rejected():
    assert "too many" in rej("pyautogui.moveTo(1, 2, 3, 4)")
    assert "does not take" in rej("pyautogui.click(1, 2, foo=3)")
    assert "twice" in rej("pyautogui.click(1, 2, x=3)")
    assert "both x and y" in rej("pyautogui.click(1)")


INJECTIONS = [
    "__import__('os').system('x')",
    "pyautogui.click(*[1,2])",
    "pyautogui.click(**{'x': 1, 'y': 2})",
    "pyautogui.os.system('ls')",
    "pyautogui.click(x, y)",
    "pyautogui.click(1+1, 2)",
    "pyautogui.click(__import__('os').getpid(), 2)",
    "pyautogui.write(open('/etc/passwd').read())",
    "pyautogui.write(pyautogui.__name__)",
    "pyautogui.__class__",
    "[pyautogui.click(1, 2) for _ in range(3)]",
    "pyautogui.click(1, 2) if True else None",
    "exec('import os')",
    "eval('1')",
    "import os\nos.system('x')",
    "from pyautogui import click\nclick(1, 2)",
    "import pyautogui as p\np.click(1, 2)",
    "lambda: pyautogui.click(1, 2)",
    "pyautogui.click(1, 2); import os",
    "pyautogui.click(1, 2).__class__",
    "getattr(pyautogui, 'click')(1, 2)",
    "pyautogui.click(1, 2, tween=pyautogui.easeInQuad)",
]


@pytest.mark.parametrize("code", INJECTIONS)
def test_injection_attempts_rejected(code):
    rej(code, state=at(1, 1))


def test_injection_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    attempts = [
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"pyautogui.click(__import__('pathlib').Path({str(marker)!r}).touch(), 1)",
        f"pyautogui.write(str(__import__('pathlib').Path({str(marker)!r}).touch()))",
        f'{{"action": "type", "text": __import__("pathlib").Path({str(marker)!r}).touch()}}',
        f"```python\nimport pyautogui\n__import__('pathlib').Path({str(marker)!r}).touch()\n```",
    ]
    for code in attempts:
        rej(code)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Validation against the profile and the screen


RESTRICTED = ActionProfile(allowed_actions=["click", "done"])


@pytest.mark.parametrize("raw", [
    js(action="drag", x=1, y=2, to_x=3, to_y=4),
    c13("DRAG_TO", x=3, y=4, start=[1, 2]),
    "pyautogui.scroll(3, x=1, y=1)",
    c13("CLICK", x=1, y=1, num_clicks=2),
    "pyautogui.hotkey('ctrl', 'a')",
    "WAIT",
    js(action="type", text="x"),
])
def test_action_not_allowed_rejected_naming_allowed(raw):
    err = rej(raw, profile=RESTRICTED, state=at(1, 1))
    assert "not allowed in this task" in err and "allowed: click, done" in err


def test_fail_needs_done_allowed():
    prof = ActionProfile(allowed_actions=["click"])
    assert "not allowed" in rej("FAIL", profile=prof)
    assert "not allowed" in rej(c13("FAIL"), profile=prof)


@pytest.mark.parametrize("x,y", [(-1, 0), (0, -1), (1280, 0), (0, 800), (5000, 5000)])
def test_off_screen_rejected(x, y):
    err = rej(js(action="click", x=x, y=y))
    assert err.startswith(f"coordinates ({x},{y}) are off screen (screen is 1280x800)")


def test_screen_edges_accepted():
    assert ok(js(action="click", x=0, y=0)).ok
    assert ok(js(action="click", x=1279, y=799)).ok


def test_off_screen_uses_given_screen():
    assert "screen is 640x480" in rej(js(action="click", x=700, y=10), screen=(640, 480))


def test_text_length_bound():
    prof = ActionProfile(max_text_length=5)
    assert ok(js(action="type", text="abcde"), profile=prof).action.text == "abcde"
    err = rej(js(action="type", text="abcdef"), profile=prof)
    assert "too long" in err and "6" in err and "5" in err


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "tab\there", "nul\x00", "\x1b[31mred",
                                  "zero\u200bwidth", "bidi\u202e", "del\x7f"])
def test_text_control_characters_rejected(text):
    err = rej(js(action="type", text=text))
    assert "control character" in err and "key action" in err


def test_text_empty_or_missing_rejected():
    assert "empty" in rej(js(action="type", text=""))
    assert "text" in rej(js(action="type"))
    assert "text" in rej(js(action="type", text=None))


def test_text_unicode_and_spaces_allowed():
    assert ok(js(action="type", text="Ré 5 mm")).action.text == "Ré 5 mm"


@pytest.mark.parametrize("secs", [0, -1, 60.01, 1000])
def test_wait_out_of_bounds_rejected(secs):
    err = rej(js(action="wait", seconds=secs))
    assert "> 0" in err and "<= 60" in err


@pytest.mark.parametrize("secs", [True, "soon", [1]])
def test_wait_non_number_rejected(secs):
    assert "seconds" in rej(js(action="wait", seconds=secs))


def test_wait_bound_inclusive_and_string():
    assert ok(js(action="wait", seconds=60)).action.seconds == 60.0
    r = ok(js(action="wait", seconds="2"))
    assert r.action.seconds == 2.0 and r.repairs


@pytest.mark.parametrize("raw", ["", "   ", "\n\t\n"])
def test_empty_response_rejected(raw):
    assert rej(raw).startswith("empty response")


def test_none_response_rejected():
    assert rej(None).startswith("empty response")


@pytest.mark.parametrize("raw", ["hello", "I would click the Scan button now.", "42", "null",
                                 "click at (10, 20)", "{not json}", "[1, 2, 3]", '"click"'])
def test_unparseable_rejected_with_example(raw):
    err = rej(raw)
    assert err.startswith("could not parse an action from the response; expected JSON like {")


def test_too_long_response_rejected():
    assert "too long" in rej("x" * (MAX_RAW_CHARS + 1))


def test_bad_coord_scale_is_a_caller_error():
    with pytest.raises(ValueError):
        parse_action("DONE", P, S, coord_scale="percent")
    with pytest.raises(ValueError):
        parse_action("DONE", P, (0, 800))


# ---------------------------------------------------------------------------------------------
# norm1000 scaling


@pytest.mark.parametrize("gx,gy,px,py", [(500, 500, 640, 400), (0, 0, 0, 0), (1000, 1000, 1279, 799),
                                         (250, 750, 320, 600), (333.3, 100, 427, 80)])
def test_norm1000_scaling(gx, gy, px, py):
    r = ok(js(action="click", x=gx, y=gy), coord_scale="norm1000")
    assert (r.action.x, r.action.y) == (px, py)
    assert any("0-1000 grid" in n for n in r.repairs)


def test_norm1000_out_of_grid_rejected():
    assert "0-1000 grid" in rej(js(action="click", x=1001, y=5), coord_scale="norm1000")
    assert "0-1000 grid" in rej(js(action="click", x=5, y=-1), coord_scale="norm1000")


def test_norm1000_all_formats_and_drag_ends():
    r = ok(js(action="drag", x=0, y=0, to_x=500, to_y=500), coord_scale="norm1000")
    assert r.action == Action("drag", x=0, y=0, x2=640, y2=400)
    r = ok("pyautogui.click(500, 500)", coord_scale="norm1000")
    assert (r.action.x, r.action.y) == (640, 400)
    r = ok(c13("MOVE_TO", x=100, y=100), coord_scale="norm1000", screen=(1000, 2000))
    assert (r.action.x, r.action.y) == (100, 200)


def test_norm1000_does_not_rescale_pointer():
    r = ok(c13("DRAG_TO", x=500, y=500), coord_scale="norm1000", state=at(900, 700))
    assert r.action == Action("drag", x=900, y=700, x2=640, y2=400)


def test_pixels_mode_does_not_scale():
    r = ok(js(action="click", x=500, y=500))
    assert (r.action.x, r.action.y) == (500, 500) and r.repairs == []


# ---------------------------------------------------------------------------------------------
# ParserState and durations


def test_parser_state_observe():
    st = ParserState()
    st.observe(Action("click", x=1, y=2))
    assert st.pointer == (1, 2)
    st.observe(Action("drag", x=3, y=4, x2=5, y2=6))
    assert st.pointer == (5, 6)
    st.observe(Action("key", key="Enter"))
    st.observe(Action("wait", seconds=1))
    assert st.pointer == (5, 6)
    st.observe(Action("scroll", x=7, y=8, clicks=1))
    assert st.pointer == (7, 8)


def test_parse_does_not_move_pointer():
    st = at(1, 1)
    ok(js(action="click", x=100, y=100), state=st)
    assert st.pointer == (1, 1)


def test_move_then_drag_to_sequence():
    st = ParserState()
    r = ok(c13("MOVE_TO", x=10, y=10), state=st)
    st.observe(r.action)
    r = ok(c13("DRAG_TO", x=50, y=60), state=st)
    assert r.action == Action("drag", x=10, y=10, x2=50, y2=60)


def test_nominal_seconds_cover_every_action_type():
    assert set(NOMINAL_SECONDS) == set(ACTION_TYPES)
    assert all(v >= 0 for v in NOMINAL_SECONDS.values())


def test_nominal_duration():
    assert nominal_duration(Action("click", x=1, y=1)) == 0.5
    assert nominal_duration(Action("double_click", x=1, y=1)) == 0.6
    assert nominal_duration(Action("drag", x=1, y=1, x2=2, y2=2)) == 1.0
    assert nominal_duration(Action("scroll", x=1, y=1, clicks=1)) == 0.3
    assert nominal_duration(Action("move", x=1, y=1)) == 0.2
    assert nominal_duration(Action("key", key="Enter")) == 0.3
    assert nominal_duration(Action("done")) == 0.0
    assert nominal_duration(Action("type", text="abc")) == 0.5  # floor
    assert nominal_duration(Action("type", text="a" * 12)) == 1.2
    assert nominal_duration(Action("type", text="a" * 7)) == 0.7  # no float noise
    assert nominal_duration(Action("wait", seconds=2.75)) == 2.75


# ---------------------------------------------------------------------------------------------
# Property-style: junk never raises, and whatever is accepted satisfies every bound

SEEDS = [
    js(action="click", x=10, y=20), js(action="drag", x=1, y=2, to_x=3, to_y=4),
    js(action="type", text="abc"), js(action="key", keys=["ctrl", "a"]),
    js(action="scroll", x=1, y=1, clicks=-3), js(action="wait", seconds=1),
    c13("CLICK", x=5, y=5, num_clicks=2), c13("SCROLL", dx=0, dy=2), c13("HOTKEY", keys=["ctrl", "a"]),
    "pyautogui.click(100, 200, button='right')", "pyautogui.scroll(-3, x=5, y=5)",
    "pyautogui.hotkey('ctrl', 'a')", "DONE", "```json\n{\"action\": \"done\"}\n```",
]
JUNK_ALPHABET = string.printable + "{}[]():,'\"\\` \u00e9\u200b\x00\x1b" + "pyautogui.click" + "action"


def _mutate(rng: random.Random, s: str) -> str:
    chars = list(s)
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        pos = rng.randint(0, len(chars))
        if op < 0.4 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op < 0.8:
            chars.insert(pos, rng.choice(JUNK_ALPHABET))
        else:
            chars[pos:pos] = list(rng.choice(SEEDS))
    return "".join(chars)


def _check_invariants(r, profile, screen, raw):
    assert isinstance(r.repairs, list) and all(isinstance(n, str) for n in r.repairs)
    if not r.ok:
        assert r.action is None
        assert isinstance(r.error, str) and r.error, raw
        assert not r.error.startswith("internal error"), (raw, r.error)
        return
    a = r.action
    w, h = screen
    assert a.type in profile.allowed_actions
    for vx, vy in ((a.x, a.y), (a.x2, a.y2)):
        if vx is not None:
            assert isinstance(vx, int) and isinstance(vy, int)
            assert 0 <= vx < w and 0 <= vy < h, raw
    if a.type in ("click", "double_click", "move", "scroll", "drag"):
        assert a.x is not None and a.y is not None
    if a.type == "drag":
        assert a.x2 is not None and a.y2 is not None
    if a.type == "scroll":
        assert isinstance(a.clicks, int) and 0 < abs(a.clicks) <= MAX_SCROLL_CLICKS
    if a.type == "key":
        assert a.key in profile.allowed_keys
    if a.type == "type":
        assert 0 < len(a.text) <= profile.max_text_length and a.text.isprintable()
    if a.type == "wait":
        assert 0 < a.seconds <= profile.max_wait_seconds
    assert a.button in ("left", "right", "middle")
    json.dumps(a.to_dict())


@pytest.mark.parametrize("scale", ["pixels", "norm1000"])
def test_random_junk_never_raises(scale):
    rng = random.Random(1234)
    prof = ActionProfile(max_text_length=8, max_wait_seconds=5)
    accepted = 0
    for i in range(3000):
        if i % 3 == 0:
            raw = "".join(rng.choice(JUNK_ALPHABET) for _ in range(rng.randint(0, 60)))
        else:
            raw = _mutate(rng, rng.choice(SEEDS))
        state = at(rng.randint(0, 1279), rng.randint(0, 799)) if rng.random() < 0.5 else None
        r = parse_action(raw, prof, S, coord_scale=scale, state=state)
        _check_invariants(r, prof, S, raw)
        accepted += r.ok
    assert accepted > 100  # the mutations keep some valid actions, so both branches are exercised


def test_pathological_inputs_do_not_raise():
    nasty = [
        "{" * 5000, "[" * 5000, "(" * 5000, "pyautogui.click(" + "(" * 500 + ")" * 500 + ")",
        '{"action": "click", "x": ' + "9" * 5000 + ', "y": 1}',
        "pyautogui.click(" + "9" * 5000 + ", 1)",
        '{"action": "type", "text": "' + "a" * 60000 + '"}',
        "{'a': " * 300 + "1" + "}" * 300,
        "\x00" * 100, "```" * 100, "pyautogui." * 1000, '{"' * 3000,
    ]
    for raw in nasty:
        r = parse_action(raw, P, S)
        _check_invariants(r, P, S, raw[:80])
