"""GUI-Owl-1.5 (mPLUG, built on Qwen3-VL): its `computer_use` tool call after an 'Action:' line.

Published facts this follows (X-PLUG/MobileAgent, Mobile-Agent-v3.5/computer_use: the desktop runner
run_gui_owl_1_5_for_pc.py and its utils.py, and the GUI-Owl 1.5 README):

* system prompt: the function-calling preamble ("# Tools ... <tools></tools> ... return a json object
  with function name and arguments within <tool_call></tool_call> XML tags") around the computer_use
  function, whose description says "The screen's resolution is 1000x1000", then the "# Response format"
  block (one 'Action:' sentence, then one <tool_call>; terminate to finish). No other system text;
* actions: key (keys), type (text), mouse_move, left_click, left_click_drag, right_click, middle_click,
  double_click, triple_click, scroll (pixels, + up), hscroll, wait (time), terminate (status), answer,
  interact;
* coordinates: 0-1000 in both axes ("GUI-Owl 1.5 outputs relative coordinates (0-1000) by default");
* images: resized with smart_resize factor 16, min_pixels 3136, max_pixels 10035200;
* history: the last 4 steps as (screenshot, reply) pairs, the first of them with the instruction text
  before its screenshot, then the current screenshot; older steps as "Step k: <Action sentence>" lines
  under "Previous actions"; the runner's tool calls are read with ast.literal_eval.

Deviations forced by the benchmark: actions the task does not allow, and triple_click, hscroll, answer
and interact (none exists here), are left out of the action list, and rejected with a reason if sent;
Python-literal tool calls are read as the published runner reads them; the runner's own action names
(click, drag, hotkey, done) are accepted as aliases; a rejected step is followed by a user note.
"""
from __future__ import annotations

import ast
import json
from typing import Any

from runner.actions import ParserState
from runner.agents.adapters.base import AdapterReject, Turn, rejected_note
from runner.agents.adapters.qwen import _TOOL_CALL, ACTIONS, Qwen3VLAdapter, summary
from runner.agents.base import Observation
from tasks.card import ActionProfile, TaskCard

HISTORY_N = 4

DESCRIPTION = (
    "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
    "* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. You must "
    "click on desktop icons to start applications.\n"
    "* Some applications may take time to start or process actions, so you may need to wait and take successive "
    "screenshots to see the results of your actions. E.g. if you click on Firefox and a window doesn't open, try "
    "wait and taking another screenshot.\n"
    "* The screen's resolution is 1000x1000.\n"
    "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don't "
    "click boxes on their edges unless asked.")
PREAMBLE = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n"
            "{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>\n\n")
RESPONSE_FORMAT = (
    "# Response format\n\n"
    "Response format for every step:\n"
    "1) Action: a short imperative describing what to do in the UI.\n"
    "2) A single <tool_call>...</tool_call> block containing only the JSON: "
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}.\n\n"
    "Rules:\n"
    "- Output exactly in the order: Action, <tool_call>.\n"
    "- Be brief: one for Action.\n"
    "- Do not output anything else outside those two parts.\n"
    "- If finishing, use action=terminate in the tool call.")
INSTRUCTION = ("Please generate the next move according to the UI screenshot, instruction and previous actions.\n\n"
               "Instruction: {instruction}\n\nPrevious actions:\n{previous}")
# the published action lines for the actions this benchmark has (triple_click, hscroll, answer, interact: none)
LINES = {
    "key": "* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order.",
    "type": "* `type`: Type a string of text on the keyboard.",
    "mouse_move": "* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.",
    "left_click": "* `left_click`: Click the left mouse button at a specified (x, y) pixel coordinate on the screen.",
    "left_click_drag": "* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.",
    "right_click": "* `right_click`: Click the right mouse button at a specified (x, y) pixel coordinate on the screen.",
    "middle_click": "* `middle_click`: Click the middle mouse button at a specified (x, y) pixel coordinate on the screen.",
    "double_click": "* `double_click`: Double-click the left mouse button at a specified (x, y) pixel coordinate on the screen.",
    "scroll": "* `scroll`: Performs a scroll of the mouse scroll wheel.",
    "wait": "* `wait`: Wait specified seconds for the change to happen.",
    "terminate": "* `terminate`: Terminate the current task and report its completion status.",
}
_KIND = {name: kind for name, kind, _ in ACTIONS}
_ALIASES = {"click": "left_click", "right click": "right_click", "computer_double_click": "double_click",
            "hotkey": "key", "drag": "left_click_drag", "stop": "terminate", "done": "terminate"}
_NOT_HERE = {
    "triple_click": "triple_click is not available on this console; use left_click or double_click",
    "hscroll": "horizontal scrolling is not available on this console; use scroll",
    "answer": "there is no question to answer on this console; finish with terminate",
    "interact": "there is no user to interact with; act on the console or finish with terminate",
}


class GUIOwl15Adapter(Qwen3VLAdapter):
    name = "gui-owl-1.5"
    version = "1"
    family = "GUI-Owl-1.5 (mPLUG, Qwen3-VL based)"
    source_format = "computer_use tool call in <tool_call> tags, after one 'Action:' line"
    coordinates = "0-1000 grid in both axes (images resized with factor 16)"
    history = "last 4 steps with screenshots (5 images), older as text"
    serve = ("vllm serve mPLUG/GUI-Owl-1.5-8B-Instruct --served-model-name gui-owl-1.5-8b "
             "--limit-mm-per-prompt '{\"image\": 5}'")
    example_model = "gui-owl-1.5-8b"
    factor = 16
    min_pixels = 3136
    max_pixels = 10035200
    grid = (1000, 1000)

    def prompt_template(self) -> str:
        return "\n".join([PREAMBLE, DESCRIPTION, RESPONSE_FORMAT, INSTRUCTION, *LINES.values()])

    def tool(self, card: TaskCard, screen: tuple[int, int]) -> dict[str, Any]:
        allowed = card.action_profile.allowed_actions
        names = [n for n in LINES if _KIND[n] in allowed]
        desc = DESCRIPTION
        if "key" in allowed and card.action_profile.allowed_keys:
            desc += "\n* Only these keys can be pressed: " + ", ".join(card.action_profile.allowed_keys) + "."
        return {"type": "function", "function": {"name": "computer_use", "description": desc, "parameters": {
            "properties": {
                "action": {"description": "The action to perform. The available actions are:\n"
                                          + "\n".join(LINES[n] for n in names), "enum": names, "type": "string"},
                "keys": {"description": "Required only by `action=key`.", "type": "array"},
                "text": {"description": "Required only by `action=type`.", "type": "string"},
                "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top "
                                              "edge) coordinates to move the mouse to. Required only by "
                                              "`action=mouse_move` and `action=left_click_drag`.", "type": "array"},
                "pixels": {"description": "The amount of scrolling to perform. Positive values scroll up, negative "
                                          "values scroll down. Required only by `action=scroll`.", "type": "number"},
                "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
                "status": {"description": "The status of the task. Required only by `action=terminate`.",
                           "type": "string", "enum": ["success", "failure"]},
            }, "required": ["action"], "type": "object"}}}

    def system_prompt(self, card: TaskCard, screen: tuple[int, int]) -> str:
        return PREAMBLE.format(tools=json.dumps(self.tool(card, screen))) + RESPONSE_FORMAT

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        screen = (obs.width, obs.height)
        recent = turns[-HISTORY_N:]
        older = turns[: len(turns) - len(recent)]
        previous = "\n".join(f"Step {t.step + 1}: {summary(t.reply)}" for t in older) or "None"
        instruction = {"type": "text", "text": INSTRUCTION.format(instruction=card.goal, previous=previous)}
        messages: list[dict[str, Any]] = [{"role": "system", "content": [
            {"type": "text", "text": self.system_prompt(card, screen)}]}]
        for i, t in enumerate(recent):
            content = ([instruction] if i == 0 else []) + ([self.image_part(t.image_png)] if t.image_png else [])
            messages.append({"role": "user", "content": content})
            messages.append({"role": "assistant", "content": [{"type": "text", "text": t.reply}]})
            if t.status == "rejected":
                messages.append({"role": "user", "content": [{"type": "text", "text": rejected_note(t)}]})
        messages.append({"role": "user", "content": ([] if recent else [instruction]) + [self.image_part(image_png)]})
        return messages

    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any]:
        calls = _TOOL_CALL.findall(raw)
        if len(calls) == 1:
            call = _literal(calls[0])
            args = call.get("arguments") if isinstance(call, dict) else None
            if isinstance(args, dict) and isinstance(args.get("action"), str):
                name = args["action"]
                if name in _NOT_HERE:
                    raise AdapterReject(_NOT_HERE[name])
                args = dict(args, action=_ALIASES.get(name, name))
                if "coordinate2" in args and "coordinate" not in args:
                    args["coordinate"] = args.pop("coordinate2")
                    if "coordinate1" in args:
                        args["start_coordinate"] = args.pop("coordinate1")
                raw = raw.replace(calls[0], json.dumps({**call, "arguments": args}), 1)
        return super().parse_native(raw, profile, screen, state, repairs)


def _literal(text: str) -> Any:
    """A tool call as JSON, else as a Python literal (as the published runner reads it)."""
    try:
        return json.loads(text)
    except ValueError:
        try:
            return ast.literal_eval(text)
        except Exception:  # noqa: BLE001 - not a literal: left for the JSON reader to reject
            return None

