"""What the vendor computer-use tool adapters share: the adapter half and the agent loop.

Models served by their vendors act through the vendors' own computer-use tools (Anthropic's `computer`
tool in the Messages API, OpenAI's computer tool in the Responses API), not through a prompt that asks
for JSON. Such a model answers one request with one or more tool calls, each answered later by a tool
result that carries the screen after it. The benchmark's step engine runs one action per step, so the
agent here keeps the calls of the model's last turn in a queue and hands them out one step each:

* `act(obs)` first settles the call handed out at the previous step from `obs.history[-1]` (its status
  and feedback) and `obs` (the screen after it: the next screenshot of the tool result); when the queue
  is empty it sends the settled results to the model and queues the calls of its reply.
* Each call is the step's raw text: the vendor's call as JSON (a tool_use block, a computer_call
  action), read by the adapter's `parse_native` into one of the project's actions in screen pixels,
  validated against the card like any other reply. A call that cannot be mapped is a rejected step
  (one step, no input) whose feedback comes back to the model as an error result; the calls after it
  in the same turn are not run and come back as "not executed", as the vendors' own loops do.
* Screenshots, zooms and cursor queries are display-only steps (one step each, no input, the console's
  clock stands): the step engine executes them without input and the agent answers them from the
  screen it gets next.
* A turn without a tool call ends the episode (`done`), as it ends the vendors' loops.

Screenshots are sent scaled to fit the vendor's documented image limits (`max_long_edge`,
`max_pixels`); the tool's display size is that scaled size, and coordinates are mapped back to screen
pixels by `scale_point`. No sampling settings are sent (the vendors' current APIs and models fix their
own), so cached replies are keyed by episode and step too: a resumed episode replays its own.
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.actions import ParserState
from runner.agents.adapters.base import Adapter, AdapterReject, DisplayStep
from runner.agents.adapters.imaging import crop_png, fit_size, resize_png
from runner.agents.base import Observation, StepRecord
from runner.agents.endpoint import EndpointClient, resolve_api_key
from runner.model_cache import ModelCache, request_key
from tasks.card import ActionProfile, TaskCard

NOT_EXECUTED = "Not executed: an earlier computer action in this turn failed."


class VendorToolAdapter(Adapter):
    """An adapter whose model acts through its vendor's computer-use tool (see the module docstring)."""

    client = ""  # the vendor client package
    key_env = ""  # the environment variable holding the API key
    default_base_url = ""
    max_long_edge = 0
    max_pixels = 0
    history = "the whole vendor conversation: each tool call with its result"

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        return fit_size(screen, self.max_long_edge, self.max_pixels)

    def zoom_size(self, region: tuple[int, int]) -> tuple[int, int]:
        """The size a zoomed region is sent at: scaled to fill the image budget."""
        return fit_size(region, self.max_long_edge, self.max_pixels, upscale=True)

    def make_agent(self, model: str, base_url: str | None = None, **opts: Any) -> "VendorToolAgent":
        raise NotImplementedError

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list) -> list:
        raise NotImplementedError(f"{self.name} speaks its vendor's tool protocol; use make_agent()")

    # -- replies ------------------------------------------------------------------------------
    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any] | DisplayStep:
        try:
            call = json.loads(raw)
        except ValueError:
            raise AdapterReject(f"not a {self.source_format} call") from None
        if not isinstance(call, dict):
            raise AdapterReject(f"not a {self.source_format} call")
        return self.read_call(call, profile, screen, state, repairs)

    def read_call(self, call: dict[str, Any], profile: ActionProfile, screen: tuple[int, int],
                  state: ParserState | None, repairs: list[str]) -> dict[str, Any] | DisplayStep:
        """One vendor call -> a project action in screen pixels, a DisplayStep, or AdapterReject."""
        raise NotImplementedError

    # -- helpers ------------------------------------------------------------------------------
    def point(self, xy: Any, screen: tuple[int, int], what: str) -> tuple[int, int]:
        """An (x, y) pair in screenshot pixels -> the screen pixel it names."""
        if not (isinstance(xy, (list, tuple)) and len(xy) == 2):
            raise AdapterReject(f"{what} must be [x, y] in screenshot pixels")
        return self.to_screen(xy[0], xy[1], self.image_size(screen), screen)

    def to_image(self, xy: tuple[int, int], screen: tuple[int, int]) -> tuple[int, int]:
        """A screen pixel -> the screenshot pixel that shows it."""
        iw, ih = self.image_size(screen)
        return (min(iw - 1, int(xy[0] * iw / screen[0])), min(ih - 1, int(xy[1] * ih / screen[1])))

    def region(self, box: Any, screen: tuple[int, int]) -> tuple[int, int, int, int]:
        """A zoom region (x0, y0, x1, y1) in screenshot pixels -> the screen box it covers (x1, y1 exclusive)."""
        iw, ih = self.image_size(screen)
        if not (isinstance(box, (list, tuple)) and len(box) == 4
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)):
            raise AdapterReject("zoom needs region [x0, y0, x1, y1] in screenshot pixels")
        x0, y0, x1, y1 = (float(v) for v in box)
        if not (0 <= x0 < x1 <= iw and 0 <= y0 < y1 <= ih):
            raise AdapterReject(f"zoom region must satisfy 0 <= x0 < x1 <= {iw} and 0 <= y0 < y1 <= {ih}, "
                                f"got {list(box)}")
        sx, sy = screen[0] / iw, screen[1] / ih
        return (int(math.floor(x0 * sx)), int(math.floor(y0 * sy)),
                max(int(math.floor(x0 * sx)) + 1, min(screen[0], int(math.ceil(x1 * sx)))),
                max(int(math.floor(y0 * sy)) + 1, min(screen[1], int(math.ceil(y1 * sy)))))

    def capped_wait(self, seconds: Any, profile: ActionProfile, repairs: list[str]) -> dict[str, Any]:
        """A wait of `seconds`, capped at the card's longest wait (with a repair note)."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise AdapterReject(f"wait needs a positive duration in seconds, got {seconds!r}")
        if seconds > profile.max_wait_seconds:
            repairs.append(f"waited {profile.max_wait_seconds:g} s, the task's longest wait "
                           f"(asked for {seconds:g} s)")
            seconds = profile.max_wait_seconds
        return {"action": "wait", "seconds": seconds}


@dataclass
class QueuedCall:
    """One vendor call waiting for its step: its raw text, what the vendor loop needs to answer it."""

    raw: str
    call: dict[str, Any]
    info: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


class VendorToolAgent(EndpointClient):
    """The agent loop of a vendor tool adapter; subclasses speak one vendor's API (see module docstring).

    Subclasses implement `_client_new`, `_start` (the conversation's first input), `_request` (the next
    request from the conversation and the settled results), `_create` (one API call -> response dict),
    `_accept` (the reply -> queued calls, updating the conversation), `_result` and `_skipped` (the
    answer to one call).
    """

    errors: tuple[type[BaseException], ...] = ()

    def __init__(self, adapter: VendorToolAdapter, model: str, base_url: str | None = None,
                 api_key: str | None = None, *, max_tokens: int = 4096,
                 timeout_s: float = 60.0, max_retries: int = 4, backoff_base_s: float = 1.0,
                 backoff_max_s: float = 30.0, cache: ModelCache | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:

        if max_retries < 0 or timeout_s <= 0 or max_tokens <= 0:
            raise ValueError("max_retries must be >= 0, timeout_s and max_tokens > 0")
        self.adapter = adapter
        self.model = model
        self.base_url = (base_url or adapter.default_base_url).rstrip("/")
        self._api_key = resolve_api_key(api_key, self.base_url, adapter.key_env)
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.cache = cache
        self._sleep = sleep
        self._client: Any = None
        self.name = f"api:{adapter.name}:{model}"
        self._card: TaskCard | None = None
        self._episode: dict[str, Any] = {}
        self.last_call_info: dict[str, Any] = {}
        self._reset_state()

    def _reset_state(self) -> None:
        self._screen: tuple[int, int] = (0, 0)
        self._queue: list[QueuedCall] = []
        self._current: QueuedCall | None = None
        self._results: list[Any] = []  # answers to settled calls, sent with the next request
        self._notes: list[str] = []  # text for the model with the next request (a rejected end of turn)
        self._conv_reset()

    # -- Agent protocol ----------------------------------------------------------------------
    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        self._card = card
        self._episode = {"task": card.id, "task_version": card.version, "subject": subject, "seed": seed}
        self.last_call_info = {}
        self._reset_state()

    def act(self, obs: Observation) -> str:
        """The next vendor call as the step's raw text; calls the model when the last turn's calls are spent."""
        if self._card is None:
            raise RuntimeError(f"{type(self).__name__}.act() called before reset()")
        self._screen = (obs.width, obs.height)
        if self._current is not None:
            last = obs.history[-1] if obs.history else None
            self._settle(self._current, last, obs)
            self._current = None
        if not self._queue:
            self._turn(obs)
        item = self._queue.pop(0)
        self._current = item
        self.last_call_info = item.info
        return item.raw

    def parse_reply(self, raw: Any, profile: ActionProfile, screen: tuple[int, int], *,
                    coord_scale: str = "pixels", state: ParserState | None = None):
        return self.adapter.parse(raw, profile, screen, coord_scale=coord_scale, state=state)

    # -- settling ----------------------------------------------------------------------------
    def _settle(self, item: QueuedCall, record: StepRecord | None, obs: Observation) -> None:
        executed = record is not None and record.status == "executed"
        feedback = record.feedback if record is not None else "no record of this step"
        answers = [self._result(item, executed, feedback, obs)]
        if not executed:
            answers += [self._skipped(rest) for rest in self._queue]
            self._queue.clear()
        self._results += [a for a in answers if a is not None]

    def screenshot(self, obs: Observation) -> bytes:
        """The screen as the model sees it (scaled to the vendor's image limits)."""
        return resize_png(obs.screenshot_png, self.adapter.image_size((obs.width, obs.height)))

    def zoomed(self, obs: Observation, box: tuple[int, int, int, int]) -> bytes:
        """A screen region at full resolution, scaled to fill the vendor's image budget."""
        return crop_png(obs.screenshot_png, box, self.adapter.zoom_size((box[2] - box[0], box[3] - box[1])))

    # -- one model turn ----------------------------------------------------------------------
    def _turn(self, obs: Observation) -> None:
        request = self._request(obs)
        desc: dict[str, Any] = {"base_url": self.base_url, "request": request,
                                "adapter": self.adapter.describe(self._screen)}
        desc["sample_scope"] = {**self._episode, "step": obs.step}  # vendors sample as they choose
        key = request_key(desc)
        info: dict[str, Any] = {
            "model": self.model, "base_url": self.base_url, "prompt_version": self.adapter.version,
            **self.adapter.describe(self._screen), "cache_key": key, "cache_hit": False, "attempts": 0,
            "latency_s": 0.0, "tokens": None, "finish_reason": None, "response_id": None, "errors": [],
            "backoff_s": [],
        }
        self.last_call_info = info
        response = self.cache.get(key) if self.cache is not None else None
        if response is not None:
            info["cache_hit"] = True
        else:
            response = self._call(request, info)
            if self.cache is not None:
                self.cache.put(key, response)
        self._results, self._notes = [], []
        calls = self._accept(response, info)  # never empty: a turn without calls is an end of turn
        n = len(calls)
        for i, (raw, call, extra) in enumerate(calls):
            step_info = info if i == 0 else {k: info[k] for k in ("model", "base_url", "adapter", "adapter_version",
                                                                  "prompt_hash", "image_size", "response_id")}
            step_info = {**step_info, "batch": [i + 1, n]}
            self._queue.append(QueuedCall(raw, call, step_info, extra))

    def _call(self, request: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        from runner.agents.api import call_with_retries

        client = self._get_client()
        return call_with_retries(lambda: self._create(client, request), info,
                                 where=f"{self.base_url} (model {self.model})", errors=self.errors,
                                 max_retries=self.max_retries, delay=self.backoff_delay, sleep=self._sleep)

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = self._client_new()
        return self._client

    # -- vendor hooks ------------------------------------------------------------------------
    def _conv_reset(self) -> None:
        raise NotImplementedError

    def _client_new(self) -> Any:
        raise NotImplementedError

    def _request(self, obs: Observation) -> dict[str, Any]:
        raise NotImplementedError

    def _create(self, client: Any, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _accept(self, response: dict[str, Any], info: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict]]:
        raise NotImplementedError

    def _result(self, item: QueuedCall, executed: bool, feedback: str, obs: Observation) -> Any:
        """The answer to one settled call (None when it needs none)."""
        raise NotImplementedError

    def _skipped(self, item: QueuedCall) -> Any:
        raise NotImplementedError



SYSTEM = """You operate a simulated medical imaging acquisition console shown full screen; your screenshots are {width}x{height} pixels. You see it only through screenshots and act on it only through the computer tool.
* Each tool result carries the screen after your action and a line of feedback. An action this console does not support comes back as an error that says why; it changes nothing.
* You have {steps} actions in all: every tool call costs one, screenshots and zooms included.
* The console's clock moves only with your actions; wait (at most {max_wait} s) when it is busy.{keys}
* {end}"""
KEYS = "\n* Only these keys can be pressed: {keys}."


def system_text(card: TaskCard, size: tuple[int, int], end: str) -> str:
    """The short system prompt of the vendor tool adapters: the screen, the step budget, the keys, how to end."""
    prof = card.action_profile
    keys = KEYS.format(keys=", ".join(prof.allowed_keys)) if "key" in prof.allowed_actions and prof.allowed_keys else ""
    return SYSTEM.format(width=size[0], height=size[1], steps=card.budgets.max_steps,
                         max_wait=f"{prof.max_wait_seconds:g}", keys=keys, end=end)
