"""OpenCUA (xlangai/OpenCUA-7B, -32B, -72B): reflective thought, then one pyautogui call.

Published facts this follows (OpenCUA repository README and model cards, OSWorld's opencua agent):

* system prompt: the L2 chain-of-thought prompt ("You are a GUI agent. You are given a task and a
  screenshot of the screen. You need to perform a series of pyautogui actions to complete the
  task. ... Thought: ... Action: ... Finally, output the action as PyAutoGUI code or the following
  functions: computer.triple_click, computer.terminate");
* replies: "## Thought:", "## Action:", "## Code:" with a ```python block holding the pyautogui
  call, or computer.terminate(status='success'|'failure');
* history: 3 images in total by default: the last 2 steps as screenshot + reply, older steps as
  text ("# Step k:\\n## Action:\\n..."), then the current screenshot with the task instruction;
* coordinates: normalized 0-1 ("relative", x = 0.5 is mid-screen); the Qwen2.5-based releases can
  also answer in absolute pixels of the smart_resize'd image (OSWorld --coordinate_type qwen25,
  factor 28, 3136-12845056 px): a point with both values in [0, 1] is read as relative, any other
  as absolute on the image sent, which is why the screenshot is sent at that size.

The code is never executed: the call is read with `ast` (literals only), its coordinates are
mapped to screen pixels, and the rewritten call goes through the project's pyautogui parser.
One call per step (this benchmark's rule); computer.triple_click is not offered.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from runner.actions import ParserState
from runner.agents.adapters.base import Adapter, AdapterReject, Turn, rejected_note
from runner.agents.adapters.imaging import smart_resize
from runner.agents.base import Observation
from tasks.card import ActionProfile, TaskCard

FACTOR, MIN_PIXELS, MAX_PIXELS = 28, 3136, 12845056
MAX_IMAGES = 3  # current screenshot included

SYSTEM = """You are a GUI agent. You are given a task and a screenshot of the screen. You need to perform a series of pyautogui actions to complete the task.

For each step, provide your response in this format:

Thought:
  - Step by Step Progress Assessment:
    - Analyze completed task parts and their contribution to the overall goal
    - Reflect on potential errors, unexpected results, or obstacles
    - If previous action was incorrect, predict a logical recovery step
  - Next Action Analysis:
    - List possible next actions based on current state
    - Evaluate options considering current state and previous actions
    - Propose most logical next action
    - Anticipate consequences of the proposed action
  - For Text Input Actions:
    - Note current cursor position
    - Consolidate repetitive actions (specify count for multiple keypresses)
    - Describe expected final text outcome
  - Use first-person perspective in reasoning

Action:
  Provide clear, concise, and actionable instructions:
  - If the action involves interacting with a specific target:
    - Describe target explicitly without using coordinates
    - Specify element names when possible (use original language if non-English)
    - Describe features (shape, color, position) if name unavailable
    - For window control buttons, identify correctly (minimize "—", maximize "□", close "X")
  - if the action involves keyboard actions like 'press', 'write', 'hotkey':
    - Consolidate repetitive keypresses with count
    - Specify expected text outcome for typing actions

Finally, output the action as PyAutoGUI code or the following functions:
- {"name": "computer.terminate", "description": "Terminate the current task and report its completion status", "parameters": {"type": "object", "properties": {"status": {"type": "string", "enum": ["success", "failure"], "description": "The status of the task"}}, "required": ["status"]}}"""
NOTES = "\n\nOne pyautogui call per step. Allowed here: {calls}."
INSTRUCTION = ("# Task Instruction:\n{instruction}\n\nPlease generate the next move according to the screenshot, "
               "task instruction and previous steps (if provided).\n")
STEP = "# Step {n}:\n"
ACTION_HISTORY = "## Action:\n{action}\n"

_CALLS = {  # pyautogui function -> our action type it needs
    "click": "click", "rightClick": "click", "doubleClick": "double_click", "moveTo": "move",
    "dragTo": "drag", "scroll": "scroll", "write": "type", "typewrite": "type", "press": "key", "hotkey": "key",
}
_POINT_FUNCS = ("click", "rightClick", "doubleClick", "moveTo", "dragTo")
_CODE = re.compile(r"```(?:python|code)?[ \t]*\n?(.*?)```", re.S)
_SECTION = re.compile(r"^##\s*Action\s*:?\s*\n(.*?)(?=^##|\Z)", re.S | re.M)
# OpenCUA's own corrections of argument names it sometimes writes
_RENAMES = {"write": {"text": "message", "content": "message"}, "typewrite": {"text": "message"},
            "press": {"key": None, "button": None}, "hotkey": {"key1": None, "key2": None, "keys": None}}


class OpenCUAAdapter(Adapter):
    name = "opencua"
    version = "1"
    family = "OpenCUA (xlangai; 7B/32B/72B on Qwen2.5-VL)"
    source_format = "## Thought / ## Action / ## Code: one pyautogui call (computer.terminate to finish)"
    coordinates = "normalized 0-1 (absolute on the smart_resize'd image also read, as --coordinate_type qwen25)"
    history = "last 2 steps with screenshots (3 images), older steps as text"
    history_images = MAX_IMAGES
    serve = "vllm serve xlangai/OpenCUA-7B --trust-remote-code --served-model-name opencua-7b"
    example_model = "opencua-7b"

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        h, w = smart_resize(screen[1], screen[0], FACTOR, MIN_PIXELS, MAX_PIXELS)
        return w, h

    def prompt_template(self) -> str:
        return "\n".join([SYSTEM, NOTES, INSTRUCTION, STEP, ACTION_HISTORY])

    def system_prompt(self, card: TaskCard) -> str:
        allowed = card.action_profile.allowed_actions
        calls = [f"pyautogui.{f}" for f, kind in _CALLS.items() if kind in allowed]
        if "done" in allowed:
            calls.append("computer.terminate")
        text = SYSTEM + NOTES.format(calls=", ".join(calls))
        if "key" in allowed and card.action_profile.allowed_keys:
            text += " Keys that can be pressed: " + ", ".join(card.action_profile.allowed_keys) + "."
        return text

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt(card)}]
        recent = turns[-(MAX_IMAGES - 1):] if MAX_IMAGES > 1 else []
        older = turns[: len(turns) - len(recent)]
        if older:
            text = "".join(STEP.format(n=t.step + 1) + ACTION_HISTORY.format(action=action_text(t.reply))
                           + (rejected_note(t) + "\n" if t.status == "rejected" else "") for t in older)
            messages.append({"role": "assistant", "content": text})
        for t in recent:
            if t.image_png is not None:
                messages.append({"role": "user", "content": [self.image_part(t.image_png)]})
            messages.append({"role": "assistant", "content": STEP.format(n=t.step + 1) + t.reply})
            if t.status == "rejected":
                messages.append({"role": "user", "content": [{"type": "text", "text": rejected_note(t)}]})
        messages.append({"role": "user", "content": [self.image_part(image_png),
                                                     {"type": "text", "text": INSTRUCTION.format(instruction=card.goal)}]})
        return messages

    # -- replies ------------------------------------------------------------------------------
    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any] | str:
        blocks = _CODE.findall(raw)
        if not blocks:
            raise AdapterReject("no code block; end the reply with '## Code:' and a ```python block holding "
                                "one pyautogui call (or computer.terminate(status='success'))")
        code = blocks[-1].strip()
        if len(blocks) > 1:
            repairs.append("used the last of several code blocks")
        try:
            tree = ast.parse(code, mode="exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise AdapterReject(f"could not read the code {code[:80]!r}") from None
        body = [s for s in tree.body if not (isinstance(s, ast.Import) and all(a.name == "pyautogui" for a in s.names))]
        if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
            raise AdapterReject("one action per step: the code block must hold a single call")
        call = body[0].value
        fn = call.func
        if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)):
            raise AdapterReject("call pyautogui.<function>(...) or computer.terminate(...)")
        owner, attr = fn.value.id, fn.attr
        if owner == "computer":
            if attr != "terminate":
                raise AdapterReject(f"computer.{attr} is not available here; use pyautogui calls or computer.terminate")
            status = next((_literal(k.value) for k in call.keywords if k.arg == "status"), None)
            if status is None and call.args:
                status = _literal(call.args[0])
            if status == "failure":
                repairs.append("terminate with status failure ends the episode like success")
            return {"action": "done"}
        if owner != "pyautogui":
            raise AdapterReject("call pyautogui.<function>(...) or computer.terminate(...)")
        if attr not in _CALLS:
            raise AdapterReject(f"pyautogui.{attr} is not available here; use one of: "
                                + ", ".join(f"pyautogui.{f}" for f in _CALLS))
        # OpenCUA's own argument-name corrections (write(text=) -> message=, press(key=) -> positional)
        renames = _RENAMES.get(attr, {})
        new_kw = []
        for k in call.keywords:
            if k.arg in renames:
                target = renames[k.arg]
                repairs.append(f"read {attr}({k.arg}=...) as " + (f"{target}=" if target else "a positional argument"))
                if target is None:
                    value = _literal(k.value)
                    if isinstance(value, (list, tuple)):
                        call.args.extend(ast.Constant(v) for v in value)
                    else:
                        call.args.append(k.value)
                    continue
                k.arg = target
            new_kw.append(k)
        call.keywords = new_kw
        self._map_coordinates(call, attr, screen, repairs)
        return ast.unparse(call)

    def _map_coordinates(self, call: ast.Call, attr: str, screen: tuple[int, int], repairs: list[str]) -> None:
        """Rewrite the call's x/y literals into screen pixels, in place."""
        if attr in _POINT_FUNCS:
            xi, yi = 0, 1
        elif attr == "scroll":
            xi, yi = 1, 2
        else:
            return
        nodes: dict[str, tuple[Any, int | str]] = {}
        for name, idx in (("x", xi), ("y", yi)):
            if idx < len(call.args):
                nodes[name] = (call.args[idx], idx)
        for k in call.keywords:
            if k.arg in ("x", "y"):
                nodes[k.arg] = (k.value, k.arg)
        if not nodes:
            return  # no coordinates: the pyautogui parser acts at the pointer
        if len(nodes) != 2:
            raise AdapterReject(f"pyautogui.{attr} needs both x and y")
        x, y = _literal(nodes["x"][0]), _literal(nodes["y"][0])
        if isinstance(x, bool) or isinstance(y, bool) or not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
            raise AdapterReject("x and y must be numbers")
        if 0 <= x <= 1 and 0 <= y <= 1:
            px, py = self.to_screen(x, y, (1, 1), screen)
        else:
            px, py = self.to_screen(x, y, self.image_size(screen), screen)
            repairs.append("read absolute coordinates on the resized screenshot (qwen25)")
        for name, value in (("x", px), ("y", py)):
            node, where = nodes[name]
            if isinstance(where, int):
                call.args[where] = ast.Constant(value)
            else:
                for k in call.keywords:
                    if k.arg == where:
                        k.value = ast.Constant(value)


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except Exception:  # noqa: BLE001 - only literals are read
        raise AdapterReject("arguments must be literal values (numbers, strings, lists)") from None


def action_text(reply: str) -> str:
    """The '## Action:' section of a reply (its one-line summary for older steps)."""
    m = _SECTION.search(reply)
    if m:
        return m.group(1).strip()
    return " ".join(reply.split())[:200]
