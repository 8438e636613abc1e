"""Anthropic's computer-use tool, through the Messages API and the official `anthropic` client.

Published facts this follows (Anthropic's computer-use tool guide and the `anthropic` SDK's types):

* three tool formats: `computer_20250124` (beta `computer-use-2025-01-24`) and `computer_20251124` (beta
  `computer-use-2025-11-24`, `enable_zoom`), one `tools[]` entry named "computer" with
  `display_width_px` / `display_height_px`, whose tool_use input names the action
  (`{"action": "left_click", "coordinate": [x, y]}`); and the newest, `computer_toolset_20260801` (GA, no
  beta header), one entry without name or display size whose members are tools of their own
  (tool_use `name` "left_click", `toolset_name` "computer", input `{"coordinate": [x, y]}`); its results
  name the toolset too, and its coordinates are pixels of the screenshots sent;
* actions: key (xdotool syntax, "ctrl+s", "Return", "Page_Down"; toolset: `repeat`), hold_key, type,
  cursor_position, mouse_move, left_mouse_down, left_mouse_up, left_click, left_click_drag
  (start_coordinate -> coordinate), right_click, middle_click, double_click, triple_click (clicks may name
  keys to hold in `text`; without coordinate they click at the cursor), scroll (scroll_direction up /
  down / left / right, scroll_amount wheel clicks), wait (duration, s), screenshot, zoom (region
  [x0, y0, x1, y1] in screenshot pixels, returned at display resolution scaled up to the image budget);
* images: the API scales down any image over 1568 px on its long edge or about 1.15 megapixels, so
  screenshots are sent scaled to fit (coordinates then name the scaled screenshot and are mapped back);
* the loop: tool results answer every tool_use of a turn in the next user message; after a failed call
  the turn's later calls are answered "not executed"; a turn without tool_use ends the task.

Mapped: every click but triple_click, left_click_drag, mouse_move, scroll up/down, key (one key or
combination from the card's allowlist), type, wait (capped at the card's longest wait), and the display-
only screenshot, zoom and cursor_position. Rejected with a reason (an `is_error` result, one step):
triple_click, hold_key, left_mouse_down/up, clicks holding keys, horizontal scrolls, repeated keys.
Earlier tool results keep their screenshots for the last KEEP_IMAGES results only, as the vendor's
reference loop does, so a long episode stays under the request's image limit.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from runner.actions import ParserState
from runner.agents.adapters.base import AdapterReject, DisplayStep
from runner.agents.adapters.vendor_tool import (
    NOT_EXECUTED, SYSTEM, QueuedCall, VendorToolAdapter, VendorToolAgent, system_text,
)
from runner.agents.base import Observation
from tasks.card import ActionProfile

MAX_LONG_EDGE = 1568
MAX_PIXELS = 1_150_000
KEEP_IMAGES = 3  # screenshots kept in earlier tool results
TOOLSET = "computer"
END = "When the task is complete, reply without calling the tool: that ends the episode."
TASK = "Task: {goal}"
MEMBERS = ("key", "hold_key", "type", "cursor_position", "mouse_move", "left_mouse_down", "left_mouse_up",
           "left_click", "left_click_drag", "right_click", "middle_click", "double_click", "triple_click",
           "scroll", "wait", "screenshot", "zoom")
_NOT_HERE = {
    "triple_click": "triple_click is not available on this console; use left_click or double_click",
    "hold_key": "hold_key is not available on this console (no held keys); press keys with key",
    "left_mouse_down": "left_mouse_down is not available on this console (no held buttons); use left_click_drag",
    "left_mouse_up": "left_mouse_up is not available on this console (no held buttons); use left_click_drag",
}
_CLICKS = {"left_click": "left", "right_click": "right", "middle_click": "middle"}


class ClaudeComputerAdapter(VendorToolAdapter):
    """Claude through Anthropic's computer tool; `tool_type` picks the tool format (see module docstring)."""

    name = "claude-computer"
    version = "1"
    family = "Claude (Anthropic), computer-use tool"
    tool_type = "computer_toolset_20260801"
    beta: str | None = None
    zoom = True
    source_format = "computer toolset (computer_toolset_20260801) tool_use blocks"
    coordinates = "pixels of the screenshot sent (scaled to <= 1568 px and ~1.15 MP)"
    serve = ("ANTHROPIC_API_KEY=... medimageos run --agent api --adapter claude-computer "
             "--model claude-opus-4-5 --max-tokens 4096")
    example_model = "claude-opus-4-5"
    client = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    max_long_edge = MAX_LONG_EDGE
    max_pixels = MAX_PIXELS
    history = f"the whole conversation; screenshots in the last {KEEP_IMAGES} tool results"

    def tool(self, screen: tuple[int, int]) -> dict[str, Any]:
        """The tools[] entry for a screen of `screen` pixels."""
        if self.tool_type == "computer_toolset_20260801":
            return {"type": self.tool_type}
        w, h = self.image_size(screen)
        tool: dict[str, Any] = {"type": self.tool_type, "name": "computer", "display_width_px": w,
                                "display_height_px": h}
        if self.zoom:
            tool["enable_zoom"] = True
        return tool

    def prompt_template(self) -> str:
        return "\n".join([SYSTEM, END, TASK, json.dumps(self.tool((1280, 800)), sort_keys=True),
                          str(self.beta), str(KEEP_IMAGES)])

    def make_agent(self, model: str, base_url: str | None = None, **opts: Any) -> "ClaudeComputerAgent":
        return ClaudeComputerAgent(self, model, base_url, **opts)

    # -- replies ------------------------------------------------------------------------------
    def action_of(self, call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(action name, its input) of a tool_use block in this tool format."""
        inp = call.get("input")
        if not isinstance(inp, dict):
            raise AdapterReject("the tool_use input must be an object")
        if self.tool_type == "computer_toolset_20260801":
            if call.get("toolset_name") != TOOLSET or call.get("name") not in MEMBERS:
                raise AdapterReject(f"unknown tool {call.get('name')!r}; use the computer toolset's tools")
            return call["name"], inp
        if call.get("name") != "computer":
            raise AdapterReject(f"unknown tool {call.get('name')!r}; use the computer tool")
        action = inp.get("action")
        if not isinstance(action, str):
            raise AdapterReject('the computer tool needs an "action"')
        return action, inp

    def read_call(self, call: dict[str, Any], profile: ActionProfile, screen: tuple[int, int],
                  state: ParserState | None, repairs: list[str]) -> dict[str, Any] | DisplayStep:
        if call.get("type") == "end_turn":
            return {"action": "done"}
        if call.get("type") != "tool_use":
            raise AdapterReject("expected a tool_use block")
        action, inp = self.action_of(call)
        if action in _NOT_HERE:
            raise AdapterReject(_NOT_HERE[action])
        if action == "zoom" and not self.zoom:
            raise AdapterReject(f"unknown action 'zoom' of the {self.tool_type} tool (it has no zoom)")

        def at(key: str = "coordinate") -> tuple[int, int]:
            if inp.get(key) is None:
                x, y = self.pointer(state, action)
                repairs.append(f"{action} at the cursor ({x},{y})")
                return x, y
            return self.point(inp[key], screen, key)

        if action in _CLICKS or action in ("double_click", "left_click_drag", "scroll") or action == "mouse_move":
            if inp.get("text"):
                raise AdapterReject(f"{action} cannot hold keys ({inp['text']!r}) on this console; press keys "
                                    "with key")
        if action in _CLICKS:
            x, y = at()
            return {"action": "click", "x": x, "y": y, "button": _CLICKS[action]}
        if action == "double_click":
            x, y = at()
            return {"action": "double_click", "x": x, "y": y}
        if action == "mouse_move":
            x, y = self.point(inp.get("coordinate"), screen, "coordinate")
            return {"action": "move", "x": x, "y": y}
        if action == "left_click_drag":
            x2, y2 = self.point(inp.get("coordinate"), screen, "coordinate")
            x, y = at("start_coordinate")
            return {"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2}
        if action == "scroll":
            direction = inp.get("scroll_direction")
            amount = inp.get("scroll_amount")
            if direction in ("left", "right"):
                raise AdapterReject("horizontal scrolling is not available on this console; scroll up or down")
            if direction not in ("up", "down"):
                raise AdapterReject('scroll needs scroll_direction "up" or "down"')
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise AdapterReject("scroll needs scroll_amount, a whole number of wheel clicks >= 1")
            x, y = at()
            return {"action": "scroll", "x": x, "y": y, "clicks": amount if direction == "down" else -amount}
        if action == "key":
            text = inp.get("text")
            if not isinstance(text, str) or not text.strip():
                raise AdapterReject('key needs text, a key or combination such as "Return" or "ctrl+a"')
            if len(text.split()) > 1:
                raise AdapterReject("one key or combination per call (keys joined with '+', e.g. ctrl+a)")
            repeat = inp.get("repeat", 1)
            if repeat not in (None, 1):
                raise AdapterReject("one key press per call: send repeat 1 and call key again")
            return {"action": "key", "key": text.strip()}
        if action == "type":
            return {"action": "type", "text": inp.get("text")}
        if action == "wait":
            return self.capped_wait(inp.get("duration"), profile, repairs)
        if action == "screenshot":
            return DisplayStep("screenshot")
        if action == "zoom":
            box = self.region(inp.get("region"), screen)
            return DisplayStep("zoom on screen pixels (%d,%d)-(%d,%d)" % box)
        if action == "cursor_position":
            if state is None or state.pointer is None:
                raise AdapterReject("the cursor position is unknown")
            x, y = self.to_image(state.pointer, screen)
            return DisplayStep(f"X={x},Y={y}")
        raise AdapterReject(f"unknown action {action!r} of the computer tool")


class Claude20251124Adapter(ClaudeComputerAdapter):
    name = "claude-computer-20251124"
    tool_type = "computer_20251124"
    beta = "computer-use-2025-11-24"
    source_format = "computer tool (computer_20251124, enable_zoom) tool_use blocks"
    serve = ClaudeComputerAdapter.serve.replace("claude-computer", "claude-computer-20251124")


class Claude20250124Adapter(ClaudeComputerAdapter):
    name = "claude-computer-20250124"
    tool_type = "computer_20250124"
    beta = "computer-use-2025-01-24"
    zoom = False
    source_format = "computer tool (computer_20250124) tool_use blocks"
    serve = ClaudeComputerAdapter.serve.replace("claude-computer", "claude-computer-20250124").replace(
        "claude-opus-4-5", "claude-sonnet-4-5")
    example_model = "claude-sonnet-4-5"


def _image(png: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(png).decode("ascii")}}


class ClaudeComputerAgent(VendorToolAgent):
    """Claude through the Messages API (`client.beta.messages.create`) with the adapter's computer tool."""

    adapter: ClaudeComputerAdapter

    def __init__(self, adapter: ClaudeComputerAdapter, model: str, base_url: str | None = None, **opts: Any) -> None:
        import anthropic

        self.errors = (anthropic.AnthropicError,)
        super().__init__(adapter, model, base_url, **opts)

    def _conv_reset(self) -> None:
        self._messages: list[dict[str, Any]] = []

    def _client_new(self) -> Any:
        import anthropic

        return anthropic.Anthropic(api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s,
                                   max_retries=0)

    def _request(self, obs: Observation) -> dict[str, Any]:
        assert self._card is not None
        size = self.adapter.image_size(self._screen)
        if not self._messages:
            content: list[dict[str, Any]] = [{"type": "text", "text": TASK.format(goal=self._card.goal)},
                                             _image(self.screenshot(obs))]
        else:
            content = list(self._results) + [{"type": "text", "text": n} for n in self._notes]
        self._messages.append({"role": "user", "content": content})
        _keep_recent_images(self._messages, KEEP_IMAGES)
        request: dict[str, Any] = {
            "model": self.model, "max_tokens": self.max_tokens,
            "system": system_text(self._card, size, END), "tools": [self.adapter.tool(self._screen)],
            "messages": self._messages,
        }
        if self.adapter.beta:
            request["betas"] = [self.adapter.beta]
        return json.loads(json.dumps(request))  # a snapshot: later turns change the conversation

    def _create(self, client: Any, request: dict[str, Any]) -> dict[str, Any]:
        return client.beta.messages.create(**request).model_dump(mode="json", exclude_none=True)

    def _accept(self, response: dict[str, Any], info: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict]]:
        content = [b for b in response.get("content") or [] if isinstance(b, dict)]
        self._messages.append({"role": "assistant", "content": content})
        usage = response.get("usage") or {}
        if usage:
            info["tokens"] = {"prompt": usage.get("input_tokens"), "completion": usage.get("output_tokens")}
        info.update(finish_reason=response.get("stop_reason"), response_id=response.get("id"))
        text = " ".join(b.get("text", "") for b in content if b.get("type") == "text").strip()
        if text:
            info["text"] = text[:2000]
        uses = [b for b in content if b.get("type") == "tool_use"]
        if not uses:
            end = {"type": "end_turn", "text": text[:2000]}
            return [(json.dumps(end), end, {})]
        return [(json.dumps({k: b[k] for k in ("type", "id", "name", "input", "toolset_name") if k in b}), b, {})
                for b in uses]

    def _answer(self, item: QueuedCall, content: Any, is_error: bool) -> dict[str, Any] | None:
        if item.call.get("type") != "tool_use":  # an end of turn that was rejected: a note, not a result
            self._notes.append(f"Your turn ended without a tool call, which ends the episode, but: {content}")
            return None
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.call.get("id"), "content": content}
        if is_error:
            result["is_error"] = True
        if item.call.get("toolset_name"):
            result["toolset_name"] = item.call["toolset_name"]
        return result

    def _result(self, item: QueuedCall, executed: bool, feedback: str, obs: Observation) -> Any:
        if not executed:
            return self._answer(item, feedback, True)
        box = self._zoom_box(item)
        image = self.zoomed(obs, box) if box is not None else self.screenshot(obs)
        return self._answer(item, [{"type": "text", "text": feedback}, _image(image)], False)

    def _skipped(self, item: QueuedCall) -> Any:
        return self._answer(item, NOT_EXECUTED, True)

    def _zoom_box(self, item: QueuedCall) -> tuple[int, int, int, int] | None:
        try:
            action, inp = self.adapter.action_of(item.call)
        except AdapterReject:
            return None
        if action != "zoom":
            return None
        return self.adapter.region(inp.get("region"), self._screen)


_PLACEHOLDER = "(an earlier screenshot, omitted)"


def _keep_recent_images(messages: list[dict[str, Any]], keep: int) -> None:
    """Replace the images of all but the last `keep` tool results by a short text (in place)."""
    results = [b for m in messages if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
               and isinstance(b.get("content"), list)]
    for block in results[:-keep] if keep > 0 else results:
        block["content"] = [p if p.get("type") != "image" else {"type": "text", "text": _PLACEHOLDER}
                            for p in block["content"]]

