"""OpenAI's computer-use tool, through the Responses API and the official `openai` client.

Published facts this follows (OpenAI's computer-use guide and the `openai` SDK's Responses types):

* two tool formats: `computer_use_preview` (`display_width`, `display_height`, `environment`; the
  computer-use-preview model; requests with `truncation: "auto"`) and the newer `computer` tool (no
  settings; coordinates are pixels of the screenshots sent);
* replies carry `computer_call` items: `call_id`, `pending_safety_checks`, and one `action` (preview) or
  a batch of `actions` (the newer tool) to run in order: click (x, y, button left / right / wheel /
  back / forward, `keys` held), double_click, drag (a `path` of {x, y} points), keypress (`keys`, one
  combination), move, scroll (x, y, scroll_x, scroll_y), type (text), wait, screenshot;
* each call is answered by a `computer_call_output` with the screenshot after it
  (`{"type": "computer_screenshot", "image_url": ...}`), acknowledging its pending safety checks;
  turns are chained with `previous_response_id`; a reply without computer_call ends the task.

Mapped: click (wheel = middle button), double_click, drag (its path's first and last points), keypress,
move, scroll (scroll_y in pixels, 100 px a wheel click, at least one), type, wait (2 s, the guide's
pause, capped by the card) and the display-only screenshot. Rejected with a reason (one step; the
model is told in a user message after the call's output): the back / forward buttons, actions holding
keys, horizontal-only scrolls. A batch runs one action a step; after a rejected action the rest of
the batch is not run and the output says so. Safety checks are acknowledged (the console holds no
real patient or system) and recorded in the receipt's model_call (`safety_checks`).

Images: the preview tool's screenshots are kept within 2048 px a side (larger images are resized by
the API, which would move the coordinate space); the newer tool's within its documented original-
detail budget (6000 px, 10.24 megapixels).
"""
from __future__ import annotations

import json
from typing import Any

from runner.actions import MAX_SCROLL_CLICKS, ParserState
from runner.agents.adapters.base import AdapterReject, DisplayStep
from runner.agents.adapters.vendor_tool import (
    NOT_EXECUTED, SYSTEM, QueuedCall, VendorToolAdapter, VendorToolAgent, system_text,
)
from runner.agents.base import Observation
from runner.agents.prompt import png_data_url
from tasks.card import ActionProfile

WAIT_SECONDS = 2.0
PIXELS_PER_CLICK = 100
ENVIRONMENT = "linux"
END = "When the task is complete, reply without a computer action: that ends the episode."
TASK = "Task: {goal}"
_BUTTONS = {"left": "left", "right": "right", "wheel": "middle"}


class OpenAIComputerAdapter(VendorToolAdapter):
    """An OpenAI model through the Responses API's computer tool (`tool_type` picks the format)."""

    name = "openai-computer"
    version = "1"
    family = "OpenAI GPT (computer tool, Responses API)"
    tool_type = "computer"
    source_format = "computer_call items (computer tool), batched actions"
    coordinates = "pixels of the screenshot sent (<= 6000 px, 10.24 MP)"
    serve = "OPENAI_API_KEY=... medimageos run --agent api --adapter openai-computer --model gpt-5.4 --max-tokens 4096"
    example_model = "gpt-5.4"
    client = "openai"
    key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
    max_long_edge = 6000
    max_pixels = 10_240_000
    history = "the whole conversation, chained with previous_response_id"

    def tool(self, screen: tuple[int, int]) -> dict[str, Any]:
        if self.tool_type == "computer":
            return {"type": "computer"}
        w, h = self.image_size(screen)
        return {"type": self.tool_type, "display_width": w, "display_height": h, "environment": ENVIRONMENT}

    def prompt_template(self) -> str:
        return "\n".join([SYSTEM, END, TASK, json.dumps(self.tool((1280, 800)), sort_keys=True)])

    def make_agent(self, model: str, base_url: str | None = None, **opts: Any) -> "OpenAIComputerAgent":
        return OpenAIComputerAgent(self, model, base_url, **opts)

    def read_call(self, call: dict[str, Any], profile: ActionProfile, screen: tuple[int, int],
                  state: ParserState | None, repairs: list[str]) -> dict[str, Any] | DisplayStep:
        if call.get("type") == "message":
            return {"action": "done"}
        a = call.get("action")
        if call.get("type") != "computer_call" or not isinstance(a, dict):
            raise AdapterReject("expected a computer_call action")
        kind = a.get("type")
        if a.get("keys") and kind in ("click", "double_click", "drag", "move", "scroll"):
            raise AdapterReject(f"{kind} cannot hold keys ({a['keys']}) on this console; use keypress alone")

        def xy(p: Any = None) -> tuple[int, int]:
            p = a if p is None else p
            if not isinstance(p, dict):
                raise AdapterReject(f"{kind} needs x and y")
            return self.point([p.get("x"), p.get("y")], screen, "x, y")

        if kind == "click":
            button = a.get("button", "left")
            if button not in _BUTTONS:
                raise AdapterReject(f"the {button!r} button is not available on this console; use left, right "
                                    "or wheel")
            x, y = xy()
            return {"action": "click", "x": x, "y": y, "button": _BUTTONS[button]}
        if kind == "double_click":
            x, y = xy()
            return {"action": "double_click", "x": x, "y": y}
        if kind == "move":
            x, y = xy()
            return {"action": "move", "x": x, "y": y}
        if kind == "drag":
            path = a.get("path")
            if not (isinstance(path, list) and len(path) >= 2):
                raise AdapterReject("drag needs a path of at least two {x, y} points")
            if len(path) > 2:
                repairs.append(f"dragged straight from the path's first point to its last ({len(path)} points)")
            (x, y), (x2, y2) = xy(path[0]), xy(path[-1])
            return {"action": "drag", "x": x, "y": y, "to_x": x2, "to_y": y2}
        if kind == "scroll":
            sx, sy = a.get("scroll_x", 0) or 0, a.get("scroll_y", 0) or 0
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (sx, sy)):
                raise AdapterReject("scroll_x and scroll_y must be numbers")
            if sy == 0:
                raise AdapterReject("horizontal scrolling is not available on this console; scroll with scroll_y")
            if sx:
                repairs.append("scrolled vertically only (scroll_x ignored)")
            clicks = max(1, round(abs(sy) / PIXELS_PER_CLICK))
            if clicks > MAX_SCROLL_CLICKS:
                repairs.append(f"scrolled {MAX_SCROLL_CLICKS} wheel clicks, the most in one step")
                clicks = MAX_SCROLL_CLICKS
            x, y = xy()
            return {"action": "scroll", "x": x, "y": y, "clicks": clicks if sy > 0 else -clicks}
        if kind == "keypress":
            keys = a.get("keys")
            if isinstance(keys, str):
                keys = [keys]
            if not (isinstance(keys, list) and keys and all(isinstance(k, str) and k for k in keys)):
                raise AdapterReject("keypress needs keys, a list of key names (one combination)")
            return {"action": "key", "key": "+".join(k.strip() if len(k) > 1 else k for k in keys)}
        if kind == "type":
            return {"action": "type", "text": a.get("text")}
        if kind == "wait":
            return self.capped_wait(WAIT_SECONDS, profile, repairs)
        if kind == "screenshot":
            return DisplayStep("screenshot")
        raise AdapterReject(f"unknown computer action {kind!r}")


class OpenAIComputerPreviewAdapter(OpenAIComputerAdapter):
    name = "openai-computer-preview"
    tool_type = "computer_use_preview"
    family = "OpenAI computer-use-preview (Responses API)"
    source_format = "computer_call items (computer_use_preview tool), one action each"
    coordinates = "pixels of the declared display = the screenshot sent (<= 2048 px a side)"
    serve = ("OPENAI_API_KEY=... medimageos run --agent api --adapter openai-computer-preview "
             "--model computer-use-preview --max-tokens 4096")
    example_model = "computer-use-preview"
    max_long_edge = 2048
    max_pixels = 2048 * 2048


class OpenAIComputerAgent(VendorToolAgent):
    """An OpenAI model through `client.responses.create` with the adapter's computer tool."""

    adapter: OpenAIComputerAdapter

    def __init__(self, adapter: OpenAIComputerAdapter, model: str, base_url: str | None = None, **opts: Any) -> None:
        import openai

        self.errors = (openai.OpenAIError,)
        super().__init__(adapter, model, base_url, **opts)

    def _conv_reset(self) -> None:
        self._previous: str | None = None

    def _client_new(self) -> Any:
        import openai

        return openai.OpenAI(api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0)

    def _request(self, obs: Observation) -> dict[str, Any]:
        assert self._card is not None
        if self._previous is None:
            items: list[dict[str, Any]] = [{"role": "user", "content": [
                {"type": "input_text", "text": TASK.format(goal=self._card.goal)},
                {"type": "input_image", "image_url": png_data_url(self.screenshot(obs)), "detail": "high"}]}]
        else:
            items = list(self._results)
            if self._notes:
                items.append({"role": "user", "content": [{"type": "input_text", "text": n} for n in self._notes]})
        request: dict[str, Any] = {
            "model": self.model, "instructions": system_text(self._card, self.adapter.image_size(self._screen), END),
            "tools": [self.adapter.tool(self._screen)], "input": items, "truncation": "auto",
            "max_output_tokens": self.max_tokens,
        }
        if self._previous is not None:
            request["previous_response_id"] = self._previous
        return request

    def _create(self, client: Any, request: dict[str, Any]) -> dict[str, Any]:
        return client.responses.create(**request).model_dump(mode="json", exclude_none=True)

    def _accept(self, response: dict[str, Any], info: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict]]:
        self._previous = response.get("id")
        usage = response.get("usage") or {}
        if usage:
            info["tokens"] = {"prompt": usage.get("input_tokens"), "completion": usage.get("output_tokens"),
                              "total": usage.get("total_tokens")}
        info.update(finish_reason=response.get("status"), response_id=response.get("id"))
        output = [o for o in response.get("output") or [] if isinstance(o, dict)]
        text = " ".join(c.get("text", "") for o in output if o.get("type") == "message"
                        for c in o.get("content") or [] if isinstance(c, dict)).strip()
        if text:
            info["text"] = text[:2000]
        calls = []
        checks = []
        for o in (o for o in output if o.get("type") == "computer_call"):
            actions = o.get("actions") if o.get("actions") is not None else [o.get("action")]
            checks += o.get("pending_safety_checks") or []
            for i, a in enumerate(actions):
                call = {"type": "computer_call", "call_id": o.get("call_id"), "action": a}
                extra = {"last": i == len(actions) - 1, "checks": o.get("pending_safety_checks") or []}
                calls.append((json.dumps(call), call, extra))
        if checks:
            info["safety_checks"] = [{k: c.get(k) for k in ("id", "code", "message")} for c in checks]
            info["safety_checks_acknowledged"] = True
        if not calls:
            end = {"type": "message", "text": text[:2000]}
            return [(json.dumps(end), end, {})]
        return calls

    def _output(self, item: QueuedCall, obs: Observation | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "computer_call_output", "call_id": item.call["call_id"],
                               "output": {"type": "computer_screenshot",
                                          "image_url": png_data_url(self.screenshot(obs if obs else self._last_obs))}}
        if item.extra.get("checks"):
            out["acknowledged_safety_checks"] = [{k: c.get(k) for k in ("id", "code", "message")}
                                                 for c in item.extra["checks"]]
        return out

    def _result(self, item: QueuedCall, executed: bool, feedback: str, obs: Observation) -> Any:
        self._last_obs = obs
        self._failed_call = None if executed else item.call.get("call_id")
        if item.call.get("type") != "computer_call":  # a rejected end of turn
            self._notes.append(f"Your reply had no computer action, which ends the episode, but: {feedback}")
            return None
        if executed and not item.extra.get("last"):
            return None  # the call's output follows its last action
        if not executed:
            self._notes.append(f"This action was rejected and not run: {feedback}"
                               + ("" if item.extra.get("last") else " The call's later actions were not run."))
        return self._output(item, obs)

    def _skipped(self, item: QueuedCall) -> Any:
        if (item.call.get("type") != "computer_call" or not item.extra.get("last")
                or item.call["call_id"] == self._failed_call):
            return None  # the failed call's own output is already made
        self._notes.append(f"{NOT_EXECUTED} (call {item.call['call_id']})")
        return self._output(item, None)
