"""Qwen2.5-VL and Qwen3-VL: the `computer_use` function, called in <tool_call> tags.

Published facts this follows (Qwen2.5-VL / Qwen3-VL cookbooks "computer_use" with the qwen-agent
ComputerUse tool and NousFnCallPrompt, and OSWorld's qwen25vl / qwen3vl agents):

* system prompt: the function-calling preamble ("# Tools ... <tools></tools> ... For each function
  call, return a json object with function name and arguments within <tool_call></tool_call> XML
  tags") around the computer_use schema: action (key, type, mouse_move, left_click,
  left_click_drag, right_click, middle_click, double_click, scroll, wait, terminate), keys, text,
  coordinate, pixels (+ scrolls up), time, status; its description states the screen resolution;
* replies: optional text (Qwen3-VL: one "Action: ..." sentence), then
  <tool_call>{"name": "computer_use", "arguments": {...}}</tool_call>;
* history: the instruction with the first screenshot, then for the last 4 steps screenshot +
  reply, then the current screenshot (at most 5 images); older steps as text ("Previous actions");
* coordinates: Qwen2.5-VL answers in absolute pixels of the image it saw, the screenshot after
  smart_resize (factor 28, min 3136, max 12845056 px) whose size the prompt states; Qwen3-VL
  answers on a 0-1000 grid ("The screen's resolution is 1000x1000"), its images resized with
  factor 32 (min 65536, max 16777216 px). left_click_drag drags from the pointer to `coordinate`.

Deviations forced by the benchmark: actions the task does not allow are left out of the enum;
triple_click, hscroll and answer are not offered (no such actions here); a rejected step is
followed by a user note with the feedback.
"""
from __future__ import annotations

import json
import re
from typing import Any

from runner.actions import ParserState
from runner.agents.adapters.base import Adapter, AdapterReject, Turn, rejected_note
from runner.agents.adapters.imaging import smart_resize
from runner.agents.base import Observation
from tasks.card import ActionProfile, TaskCard

HISTORY_N = 4  # earlier steps replayed with their screenshots

FNCALL_PREAMBLE = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""

DESCRIPTION = """Use a mouse and keyboard to interact with a computer, and take screenshots.
* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. You must click on desktop icons to start applications.
* Some applications may take time to start or process actions, so you may need to wait and take successive screenshots to see the results of your actions. E.g. if you click on Firefox and a window doesn't open, try wait and taking another screenshot.
* The screen's resolution is {width}x{height}.
* Whenever you intend to move the cursor to click on an element like an icon, you should consult a screenshot to determine the coordinates of the element before moving the cursor.
* If you tried clicking on a program or link but it failed to load, even after waiting, try adjusting your cursor position so that the tip of the cursor visually falls on the element that you want to click.
* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don't click boxes on their edges unless asked."""

# (action name, our action type it needs, its line in the action description)
ACTIONS = [
    ("key", "key", "* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order."),
    ("type", "type", "* `type`: Type a string of text on the keyboard."),
    ("mouse_move", "move", "* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen."),
    ("left_click", "click", "* `left_click`: Click the left mouse button at a specified (x, y) pixel coordinate on the screen."),
    ("left_click_drag", "drag", "* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen."),
    ("right_click", "click", "* `right_click`: Click the right mouse button at a specified (x, y) pixel coordinate on the screen."),
    ("middle_click", "click", "* `middle_click`: Click the middle mouse button at a specified (x, y) pixel coordinate on the screen."),
    ("double_click", "double_click", "* `double_click`: Double-click the left mouse button at a specified (x, y) pixel coordinate on the screen."),
    ("scroll", "scroll", "* `scroll`: Performs a scroll of the mouse scroll wheel."),
    ("wait", "wait", "* `wait`: Wait specified seconds for the change to happen."),
    ("terminate", "done", "* `terminate`: Terminate the current task and report its completion status."),
]

INSTRUCTION = """
Please generate the next move according to the UI screenshot, instruction and previous actions.

Instruction: {instruction}

Previous actions:
{previous}"""

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_ACTION_LINE = re.compile(r"^\s*Action:\s*(.+)$", re.M)


class _QwenAdapter(Adapter):
    factor = 28
    min_pixels = 3136
    max_pixels = 12845056
    grid: tuple[int, int] | None = None  # None: absolute pixels of the sent image
    response_format = ""  # extra system text after the tool preamble
    system_preamble = ""  # text before it

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        h, w = smart_resize(screen[1], screen[0], self.factor, self.min_pixels, self.max_pixels)
        return w, h

    def coordinate_space(self, screen: tuple[int, int]) -> tuple[int, int]:
        return self.grid if self.grid is not None else self.image_size(screen)

    def prompt_template(self) -> str:
        return "\n".join([self.system_preamble, FNCALL_PREAMBLE, DESCRIPTION, INSTRUCTION, self.response_format,
                          *(line for _, _, line in ACTIONS)])

    def tool(self, card: TaskCard, screen: tuple[int, int]) -> dict[str, Any]:
        allowed = card.action_profile.allowed_actions
        acts = [(name, line) for name, kind, line in ACTIONS if kind in allowed]
        w, h = self.coordinate_space(screen)
        desc = DESCRIPTION.format(width=w, height=h)
        if "key" in allowed and card.action_profile.allowed_keys:
            desc += "\n* Only these keys can be pressed: " + ", ".join(card.action_profile.allowed_keys) + "."
        return {"type": "function", "function": {
            "name_for_human": "computer_use", "name": "computer_use", "description": desc,
            "parameters": {"properties": {
                "action": {"description": "The action to perform. The available actions are:\n"
                                          + "\n".join(line for _, line in acts),
                           "enum": [name for name, _ in acts], "type": "string"},
                "keys": {"description": "Required only by `action=key`.", "type": "array"},
                "text": {"description": "Required only by `action=type`.", "type": "string"},
                "coordinate": {"description": "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to move the mouse to. Required only by `action=mouse_move`, `action=left_click_drag`, `action=left_click`, `action=right_click`, `action=double_click`.", "type": "array"},
                "pixels": {"description": "The amount of scrolling to perform. Positive values scroll up, negative values scroll down. Required only by `action=scroll`.", "type": "number"},
                "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
                "status": {"description": "The status of the task. Required only by `action=terminate`.", "type": "string", "enum": ["success", "failure"]},
            }, "required": ["action"], "type": "object"},
            "args_format": "Format the arguments as a JSON object."}}

    def system_prompt(self, card: TaskCard, screen: tuple[int, int]) -> str:
        text = FNCALL_PREAMBLE.format(tools=json.dumps(self.tool(card, screen)))
        return self.system_preamble + text + self.response_format

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        screen = (obs.width, obs.height)
        recent = turns[-HISTORY_N:] if HISTORY_N > 0 else []
        older = turns[: len(turns) - len(recent)]
        previous = "\n".join(f"Step {t.step + 1}: {summary(t.reply)}" for t in older) or "None"
        instruction = INSTRUCTION.format(instruction=card.goal, previous=previous)
        messages: list[dict[str, Any]] = [{"role": "system", "content": [{"type": "text",
                                                                          "text": self.system_prompt(card, screen)}]}]
        first = True
        for t in recent:
            content = [self.image_part(t.image_png)] if t.image_png is not None else []
            if first:
                content.append({"type": "text", "text": instruction})
                first = False
            messages.append({"role": "user", "content": content})
            messages.append({"role": "assistant", "content": [{"type": "text", "text": t.reply}]})
            if t.status == "rejected":
                messages.append({"role": "user", "content": [{"type": "text", "text": rejected_note(t)}]})
        current: list[dict[str, Any]] = [self.image_part(image_png)]
        if first:
            current.append({"type": "text", "text": instruction})
        messages.append({"role": "user", "content": current})
        return messages

    # -- replies ------------------------------------------------------------------------------
    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any]:
        calls = _TOOL_CALL.findall(raw)
        if not calls:
            raise AdapterReject('no <tool_call>; answer with <tool_call>{"name": "computer_use", "arguments": '
                                '{"action": "left_click", "coordinate": [x, y]}}</tool_call>')
        if len(calls) > 1:
            raise AdapterReject("one action per step: send a single <tool_call>")
        try:
            call = json.loads(calls[0])
        except ValueError:
            raise AdapterReject("the <tool_call> is not valid JSON") from None
        if not isinstance(call, dict) or call.get("name") != "computer_use":
            raise AdapterReject('call the function "computer_use"')
        args = call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                raise AdapterReject("arguments must be a JSON object") from None
        if not isinstance(args, dict) or not isinstance(args.get("action"), str):
            raise AdapterReject('arguments need an "action", e.g. {"action": "left_click", "coordinate": [x, y]}')
        action = args["action"]
        space = self.coordinate_space(screen)

        def coord(name: str = "coordinate") -> tuple[int, int]:
            c = args.get(name)
            if not (isinstance(c, (list, tuple)) and len(c) == 2):
                raise AdapterReject(f"{action} needs \"{name}\": [x, y]")
            return self.to_screen(c[0], c[1], space, screen)

        if action in ("left_click", "right_click", "middle_click"):
            x, y = coord()
            return {"action": "click", "x": x, "y": y, "button": action.split("_")[0]}
        if action == "double_click":
            x, y = coord()
            return {"action": "double_click", "x": x, "y": y}
        if action == "mouse_move":
            x, y = coord()
            return {"action": "move", "x": x, "y": y}
        if action == "left_click_drag":
            x2, y2 = coord()
            if "start_coordinate" in args:
                x, y = coord("start_coordinate")
            else:
                x, y = self.pointer(state, "left_click_drag")
                repairs.append(f"dragged from the pointer ({x},{y})")
            return {"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2}
        if action == "scroll":
            pixels = args.get("pixels")
            if isinstance(pixels, bool) or not isinstance(pixels, (int, float)) or pixels == 0:
                raise AdapterReject("scroll needs a non-zero \"pixels\" (+ scrolls up, - down)")
            if "coordinate" in args:
                x, y = coord()
            else:
                x, y = self.pointer(state, "scroll")
                repairs.append(f"scrolled at the pointer ({x},{y})")
            return {"action": "scroll", "x": x, "y": y, "clicks": -pixels}
        if action == "type":
            return {"action": "type", "text": args.get("text")}
        if action == "key":
            keys = args.get("keys")
            if isinstance(keys, str):
                keys = [keys]
            if not (isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys)):
                raise AdapterReject('key needs "keys": a list of key names, e.g. ["ctrl", "a"]')
            return {"action": "key", "key": "+".join(keys)}
        if action == "wait":
            return {"action": "wait", "seconds": args.get("time")}
        if action == "terminate":
            if args.get("status") == "failure":
                repairs.append("terminate with status failure ends the episode like success")
            return {"action": "done"}
        raise AdapterReject(f"action {action!r} is not available here; use one of: "
                            + ", ".join(name for name, kind, _ in ACTIONS if kind in profile.allowed_actions))


def summary(reply: str) -> str:
    """One line for an older step: its 'Action:' sentence, else its tool call."""
    m = _ACTION_LINE.search(reply)
    if m:
        return m.group(1).strip()
    calls = _TOOL_CALL.findall(reply)
    return " ".join(calls[0].split()) if calls else " ".join(reply.split())[:200]


class Qwen25VLAdapter(_QwenAdapter):
    name = "qwen2.5-vl"
    version = "1"
    family = "Qwen2.5-VL (Qwen)"
    source_format = "computer_use tool call in <tool_call> tags"
    coordinates = "absolute pixels on the smart_resize'd image (factor 28, 3136-12845056 px)"
    history = "last 4 steps with screenshots (5 images), older as text"
    history_images = HISTORY_N + 1
    serve = ("vllm serve Qwen/Qwen2.5-VL-7B-Instruct --served-model-name qwen2.5-vl-7b "
             "--limit-mm-per-prompt '{\"image\": 5}'")
    example_model = "qwen2.5-vl-7b"
    system_preamble = "You are a helpful assistant.\n\n"  # qwen-agent's default system message


class Qwen3VLAdapter(_QwenAdapter):
    name = "qwen3-vl"
    version = "1"
    family = "Qwen3-VL (Qwen)"
    source_format = "computer_use tool call in <tool_call> tags, after one 'Action:' sentence"
    coordinates = "0-1000 grid in both axes (images resized with factor 32)"
    history = "last 4 steps with screenshots (5 images), older as text"
    history_images = HISTORY_N + 1
    serve = ("vllm serve Qwen/Qwen3-VL-8B-Instruct --served-model-name qwen3-vl-8b "
             "--limit-mm-per-prompt '{\"image\": 5}'")
    example_model = "qwen3-vl-8b"
    factor = 32
    min_pixels = 65536
    max_pixels = 16777216
    grid = (1000, 1000)
    response_format = """

# Response format

Response format for every step:
1) Action: a short imperative describing what to do in the UI.
2) A single <tool_call>...</tool_call> block containing only the JSON: {"name": <function-name>, "arguments": <args-json-object>}.

Rules:
- Output exactly in the order: Action, <tool_call>.
- Be brief: one sentence for Action.
- Do not output anything else outside those parts.
- If finishing, use action=terminate in the tool call."""
