"""UI-TARS-1.5 (ByteDance-Seed/UI-TARS-1.5-7B): its computer-use prompt, thought + action replies.

Published facts this follows (UI-TARS repository README / codes/ui_tars, and OSWorld's
uitars15_v1 agent):

* prompt: the COMPUTER_USE template ("You are a GUI agent. ... ## Output Format ... Thought: ...
  Action: ... ## Action Space ... ## Note ... ## User Instruction"), sent as the first user message
  after the system message "You are a helpful assistant.";
* history: every earlier reply as an assistant message, the screenshots of the last 4 of them
  before their replies, then the current screenshot: at most 5 images per request (history_n 5);
* actions: click / left_double / right_single(start_box='(x,y)'), drag(start_box, end_box),
  hotkey(key='ctrl c'), type(content='...'), scroll(start_box, direction), wait() (5 s),
  finished(content='...'); boxes may be '(x,y)', '(x1,y1,x2,y2)' (centre used), with or without
  <|box_start|>/<|box_end|>, or '<point>x y</point>';
* coordinates: absolute pixels of the image the model saw, which is the screenshot after Qwen2.5-VL
  smart_resize (factor 28, min_pixels 100*28*28, max_pixels 16384*28*28); mapped back by
  x * W / w_resized.

Deviations, all forced by this benchmark: action lines the task does not allow are left out of the
action space; a trailing "\\n" in type(content) (the model's way to submit) is typed without it,
with a repair noted, because Enter is its own action here; a rejected step is followed by a user
note with the feedback.
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

FACTOR = 28
MIN_PIXELS = 100 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
HISTORY_N = 5
WAIT_SECONDS = 5.0  # wait() sleeps 5 s in the published action space
SCROLL_CLICKS = 5  # the published pyautogui translation scrolls 5 clicks per scroll()

SYSTEM = "You are a helpful assistant."
TEMPLATE = """You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space

{action_space}

## Note
- Use {language} in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.
{notes}
## User Instruction
{instruction}
"""
# (our action type it needs, the published line)
ACTION_LINES = [
    ("click", "click(start_box='<|box_start|>(x1,y1)<|box_end|>')"),
    ("double_click", "left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')"),
    ("click", "right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')"),
    ("drag", "drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')"),
    ("key", "hotkey(key='ctrl c') # Split keys with a space and use lowercase. Also, do not use more than 3 keys in one hotkey action."),
    ("type", "type(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format. Press enter with hotkey(key='enter') as the next action to submit your input."),
    ("scroll", "scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up') # Show more information on the `direction` side."),
    ("wait", "wait() #Sleep for 5s and take a screenshot to check for any changes."),
    ("done", "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format."),
]

_POINT = re.compile(r"<point>\s*(-?[\d.]+)[\s,]+(-?[\d.]+)\s*</point>")
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|<bbox>|</bbox>")
_TYPE = re.compile(r"^type\(\s*content\s*=\s*(['\"])(.*)\1\s*\)$", re.S)


def add_box_token(reply: str) -> str:
    """start_box='(x,y)' -> start_box='<|box_start|>(x,y)<|box_end|>' in replayed history, as the
    published client does (servers drop the special tokens from the text they return)."""
    return re.sub(r"((?:start|end)_box=)'\((\s*[\d.]+\s*,\s*[\d.]+\s*(?:,\s*[\d.]+\s*,\s*[\d.]+\s*)?)\)'",
                  r"\1'<|box_start|>(\2)<|box_end|>'", reply)


class UITarsAdapter(Adapter):
    name = "ui-tars-1.5"
    version = "1"
    family = "UI-TARS-1.5 (ByteDance-Seed, Qwen2.5-VL based)"
    source_format = "Thought: ... Action: click(start_box='(x,y)')"
    coordinates = "absolute pixels on the smart_resize'd image (factor 28, 100-16384 x 28^2 px)"
    history = "all earlier replies; last 5 screenshots (current included)"
    history_images = HISTORY_N
    serve = "vllm serve ByteDance-Seed/UI-TARS-1.5-7B --served-model-name ui-tars-1.5-7b --limit-mm-per-prompt '{\"image\": 5}'"
    example_model = "ui-tars-1.5-7b"

    def __init__(self, language: str = "English") -> None:
        self.language = language

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        h, w = smart_resize(screen[1], screen[0], FACTOR, MIN_PIXELS, MAX_PIXELS)
        return w, h

    def prompt_template(self) -> str:
        return "\n".join([SYSTEM, TEMPLATE, *(line for _, line in ACTION_LINES)])

    def user_prompt(self, card: TaskCard) -> str:
        prof = card.action_profile
        lines = [line for kind, line in ACTION_LINES if kind in prof.allowed_actions]
        notes = ""
        if "key" in prof.allowed_actions and prof.allowed_keys:
            notes = "- Only these keys can be pressed: " + ", ".join(k.lower().replace("+", " ") for k in prof.allowed_keys) + ".\n"
        return TEMPLATE.format(action_space="\n".join(lines), language=self.language, notes=notes,
                               instruction=card.goal)

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
            {"role": "user", "content": [{"type": "text", "text": self.user_prompt(card)}]},
        ]
        with_image = turns[-(HISTORY_N - 1):] if HISTORY_N > 1 else []
        for t in turns:
            if t in with_image and t.image_png is not None:
                messages.append({"role": "user", "content": [self.image_part(t.image_png)]})
            messages.append({"role": "assistant", "content": [{"type": "text", "text": add_box_token(t.reply)}]})
            if t.status == "rejected":
                messages.append({"role": "user", "content": [{"type": "text", "text": rejected_note(t)}]})
        messages.append({"role": "user", "content": [self.image_part(image_png)]})
        return messages

    # -- replies ------------------------------------------------------------------------------
    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any]:
        text = raw.strip().replace("[EOS]", "")
        if "Action:" not in text:
            raise AdapterReject("no 'Action:' line; reply as 'Thought: ...' then 'Action: click(start_box=...)'")
        action = text.split("Action:")[-1].strip()
        action = action.strip("`").strip()
        parts = [p for p in re.split(r"\)\s*\n\s*\n", action) if p.strip()]
        if len(parts) > 1:
            raise AdapterReject("one action per step: send a single call after 'Action:'")
        call = action
        image = self.image_size(screen)
        m = _TYPE.match(call)
        if m:
            content = m.group(2)
            content = content.replace("\\'", "'").replace('\\"', '"').replace("\\n", "\n")
            if content.endswith("\n"):
                content = content.rstrip("\n")
                repairs.append("typed the text without its trailing \\n: press enter with hotkey(key='enter')")
            return {"action": "type", "text": content}
        call = _POINT.sub(lambda mm: f"({mm.group(1)},{mm.group(2)})", call)
        call = _BOX_TOKENS.sub("", call)
        call = re.sub(r"\bstart_point=", "start_box=", call)
        call = re.sub(r"\bend_point=", "end_box=", call)
        call = re.sub(r"\bpoint=", "start_box=", call)
        try:
            node = ast.parse(call, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise AdapterReject(f"could not read the action {call[:80]!r}; write e.g. "
                                "click(start_box='(100,200)')") from None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise AdapterReject("the action must be one call such as click(start_box='(100,200)')")
        fn = node.func.id
        if node.args:
            raise AdapterReject(f"{fn}() takes keyword arguments only, e.g. {fn}(start_box='(100,200)')")
        kw: dict[str, Any] = {}
        for k in node.keywords:
            try:
                kw[k.arg] = ast.literal_eval(k.value)
            except Exception:  # noqa: BLE001 - only literals are read
                raise AdapterReject(f"{fn}() arguments must be quoted strings") from None

        def point(name: str) -> tuple[int, int]:
            box = kw.get(name)
            if not isinstance(box, str):
                raise AdapterReject(f"{fn}() needs {name}='(x,y)'")
            nums = re.findall(r"-?\d+(?:\.\d+)?", box)
            if len(nums) not in (2, 4):
                raise AdapterReject(f"{name} must be '(x,y)' or '(x1,y1,x2,y2)', got {box!r}")
            v = [float(n) for n in nums]
            if len(v) == 4:
                v = [(v[0] + v[2]) / 2, (v[1] + v[3]) / 2]
            return self.to_screen(v[0], v[1], image, screen)

        if fn == "click":
            x, y = point("start_box")
            return {"action": "click", "x": x, "y": y, "button": "left"}
        if fn == "left_double":
            x, y = point("start_box")
            return {"action": "double_click", "x": x, "y": y}
        if fn == "right_single":
            x, y = point("start_box")
            return {"action": "click", "x": x, "y": y, "button": "right"}
        if fn in ("drag", "select"):
            x, y = point("start_box")
            x2, y2 = point("end_box")
            return {"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2}
        if fn in ("hotkey", "press"):
            key = kw.get("key", kw.get("hotkey", kw.get("press")))
            if not isinstance(key, str) or not key.strip():
                raise AdapterReject(f"{fn}() needs key='...', e.g. hotkey(key='enter')")
            keys = key.split()
            return {"action": "key", "key": "+".join(keys)}
        if fn == "scroll":
            direction = str(kw.get("direction", "")).strip().lower()
            if direction not in ("up", "down"):
                raise AdapterReject("scroll direction must be 'up' or 'down' (no horizontal scrolling here)")
            if "start_box" in kw:
                x, y = point("start_box")
            else:
                x, y = self.pointer(state, "scroll")
                repairs.append("scrolled at the pointer (no start_box)")
            return {"action": "scroll", "x": x, "y": y,
                    "clicks": SCROLL_CLICKS if direction == "down" else -SCROLL_CLICKS}
        if fn == "wait":
            secs = min(WAIT_SECONDS, profile.max_wait_seconds)
            if secs != WAIT_SECONDS:
                repairs.append(f"wait() waited {secs:g} s, the task's longest wait")
            return {"action": "wait", "seconds": secs}
        if fn == "finished":
            return {"action": "done"}
        if fn == "type":
            raise AdapterReject("type needs content='...'")
        raise AdapterReject(f"{fn}() is not in the action space; use one of: click, left_double, right_single, "
                            "drag, hotkey, type, scroll, wait, finished")
