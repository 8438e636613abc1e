"""A model-backed agent: any OpenAI-compatible vision chat endpoint (vLLM, hosted APIs).

Each step's messages come from the agent's adapter (runner/agents/adapters): by default the
`generic` one (the system prompt and one user message with goal, last k steps, steps left and the
screenshot; see runner.agents.prompt), or a model family's own prompt, history of screenshots and
image size (ui-tars-1.5, qwen2.5-vl, qwen3-vl, opencua). They go through the official `openai`
client and the assistant text comes back unparsed; the episode parses it with `parse_reply` (the
adapter's format, validated by runner.actions), so malformed output becomes a rejected step with
feedback, not an agent failure.

Failures of the endpoint are handled here. The client's own retries are off; this module retries
rate limits (429), timeouts, connection errors, 408/409 and 5xx with deterministic exponential
backoff (base * 2**(attempt-1), capped, raised to the server's Retry-After when it asks for more),
through an injectable `sleep`. Other errors (400, 401, 403, 404, 422, ...) fail at once. Either way
the agent raises AgentFault and the runner records the episode as INVALID, never FAIL.

Per call metadata for receipts lands in `last_call_info` (also after a fault), including the
adapter's name, version, prompt hash and the image size sent; these are part of the cache key.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import openai

from runner.actions import ParseResult, ParserState
from runner.agents.adapters import Adapter, Turn, get_adapter
from runner.agents.adapters.imaging import resize_png
from runner.agents.base import AgentFault, Observation
from runner.agents.endpoint import EndpointClient, resolve_api_key
from runner.model_cache import ModelCache, request_key
from tasks.card import ActionProfile, TaskCard

_RETRYABLE_STATUS = {408, 409, 429}


def _is_retryable(exc: BaseException) -> bool:
    """Connection errors, timeouts, 408/409/429 and 5xx, for the openai and anthropic clients alike (both
    name their classes APIConnectionError / APIStatusError)."""
    names = {c.__name__ for c in type(exc).__mro__}
    if "APIConnectionError" in names:  # includes APITimeoutError
        return True
    status = getattr(exc, "status_code", None)
    if "APIStatusError" in names and isinstance(status, int):
        return status in _RETRYABLE_STATUS or status >= 500
    return False


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = str(exc).strip().replace("\n", " ")
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {text}"


def call_with_retries(call: Callable[[], Any], info: dict[str, Any], *, where: str,
                      errors: tuple[type[BaseException], ...], max_retries: int,
                      delay: Callable[[int, BaseException], float], sleep: Callable[[float], None]) -> Any:
    """`call()` with the retry policy of this module: client `errors` that are retryable (see _is_retryable)
    are retried up to `max_retries` times after `delay(attempt, exc)` seconds, others fail at once; either
    failure raises AgentFault naming `where`. Attempts, errors, backoffs and latency land in `info`."""
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        info["attempts"] = attempt
        try:
            result = call()
        except errors as exc:
            info["errors"].append(_describe(exc))
            info["latency_s"] = round(time.monotonic() - started, 4)
            if not _is_retryable(exc):
                raise AgentFault(f"{where} failed with a non-retryable error: {_describe(exc)}") from exc
            if attempt > max_retries:
                raise AgentFault(f"{where} still failing after {attempt} attempts; last error: "
                                 f"{_describe(exc)}") from exc
            wait = delay(attempt, exc)
            info["backoff_s"].append(wait)
            sleep(wait)
            continue
        info["latency_s"] = round(time.monotonic() - started, 4)
        return result


class ApiAgent(EndpointClient):
    """Agent backed by an OpenAI-compatible chat completions endpoint."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        top_p: float | None = None,
        seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        history_k: int = 3,
        cache: ModelCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        adapter: Adapter | str | None = None,
    ) -> None:
        """`max_retries` counts retries after the first attempt (at most 1 + max_retries calls).

        `top_p`, `seed` and `extra_body` (server-specific settings such as vLLM's top_k) are sent
        only when given; all of them are part of the cache key. The key comes from `api_key`, else
        OPENAI_API_KEY, else a dummy for local endpoints; a remote endpoint without one is an error.
        `adapter` (an Adapter or its name; default generic) decides prompt, history, image size and
        reply format; `history_k` is the generic adapter's text history.
        """
        if max_retries < 0 or history_k < 0 or timeout_s <= 0:
            raise ValueError("max_retries and history_k must be >= 0 and timeout_s > 0")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = resolve_api_key(api_key, self.base_url, "OPENAI_API_KEY",
                                        " (use OPENAI_API_KEY=EMPTY for a server that needs none)")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.top_p = top_p
        self.seed = seed
        self.extra_body = dict(extra_body) if extra_body else None
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.history_k = history_k
        self.cache = cache
        self._sleep = sleep
        self._client: openai.OpenAI | None = None
        if adapter is None or isinstance(adapter, str):
            adapter = get_adapter(adapter or "generic", history_k=history_k)
        if getattr(adapter, "make_agent", None) is not None:
            raise ValueError(f"{adapter.name} speaks its vendor's computer-use tool, not chat completions: "
                             "build its agent with runner.agents.make_agent or adapter.make_agent")
        self.adapter: Adapter = adapter
        # the generic adapter keeps the old name, so earlier results folders stay this agent's
        self.name = f"api:{model}" if adapter.name == "generic" else f"api:{adapter.name}:{model}"
        self._card: TaskCard | None = None
        self._episode: dict[str, Any] = {}
        self._images: dict[int, bytes] = {}  # step -> screenshot as sent, for adapters that replay images
        self.last_call_info: dict[str, Any] = {}

    # -- Agent protocol ----------------------------------------------------------------------
    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        self._card = card
        self._episode = {"task": card.id, "task_version": card.version, "subject": subject, "seed": seed}
        self._images = {}
        self.last_call_info = {}

    def act(self, obs: Observation) -> str:
        """The assistant's raw reply for this observation; AgentFault if the endpoint keeps failing."""
        if self._card is None:
            raise RuntimeError("ApiAgent.act() called before reset()")
        request = self.build_request(obs)
        key = self.cache_key(request, obs)
        info: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "prompt_version": self.adapter.version,
            **self.adapter.describe((obs.width, obs.height)),
            "images": sum(1 for m in request["messages"] if isinstance(m.get("content"), list)
                          for p in m["content"] if p.get("type") == "image_url"),
            "cache_key": key,
            "cache_hit": False,
            "attempts": 0,
            "latency_s": 0.0,
            "tokens": None,
            "finish_reason": None,
            "response_id": None,
            "errors": [],
            "backoff_s": [],
        }
        self.last_call_info = info
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                info.update(cache_hit=True, tokens=cached.get("tokens"),
                            finish_reason=cached.get("finish_reason"), response_id=cached.get("response_id"))
                return cached["text"]
        result = self._call_with_retries(request, info)
        if self.cache is not None:
            self.cache.put(key, result)
        return result["text"]

    # -- request and key ---------------------------------------------------------------------
    def build_request(self, obs: Observation) -> dict[str, Any]:
        """The chat.completions.create arguments for this observation (without extra_body).

        The screenshot is resized to the adapter's image size; adapters that replay earlier
        screenshots get them back from this episode's earlier requests.
        """
        assert self._card is not None
        size = self.adapter.image_size((obs.width, obs.height))
        image = resize_png(obs.screenshot_png, size)
        self._images[obs.step] = image
        keep = max(1, self.adapter.history_images)
        for old in [s for s in self._images if s <= obs.step - keep]:
            del self._images[old]  # only the last few are ever replayed
        turns = [Turn(r.step, self._images.get(r.step), r.raw, r.status, r.feedback) for r in obs.history]
        request: dict[str, Any] = {
            "model": self.model,
            "messages": self.adapter.build_messages(self._card, obs, image, turns),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.top_p is not None:
            request["top_p"] = self.top_p
        if self.seed is not None:
            request["seed"] = self.seed
        return request

    def cache_key(self, request: dict[str, Any], obs: Observation) -> str:
        """Hash of everything that determines the response.

        When sampling (temperature > 0) the episode and step are part of the key too, so episodes
        that happen to see identical screens still draw independent samples, while a resumed
        episode replays its own.
        """
        desc: dict[str, Any] = {
            "base_url": self.base_url,
            "request": request,
            "extra_body": self.extra_body,
            "adapter": self.adapter.describe((obs.width, obs.height)),
        }
        if self.temperature > 0:
            desc["sample_scope"] = {**self._episode, "step": obs.step}
        return request_key(desc)

    def parse_reply(self, raw: Any, profile: ActionProfile, screen: tuple[int, int], *,
                    coord_scale: str = "pixels", state: ParserState | None = None) -> ParseResult:
        """The reply read in the adapter's format (the step engine calls this instead of parse_action)."""
        return self.adapter.parse(raw, profile, screen, coord_scale=coord_scale, state=state)

    # -- transport ---------------------------------------------------------------------------
    def _get_client(self) -> openai.OpenAI:
        if self._client is None:
            self._client = openai.OpenAI(
                api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
        return self._client

    def _call_with_retries(self, request: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        client = self._get_client()
        kwargs = dict(request)
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        resp = call_with_retries(lambda: client.chat.completions.create(**kwargs), info,
                                 where=f"model endpoint {self.base_url} (model {self.model})",
                                 errors=(openai.OpenAIError,), max_retries=self.max_retries,
                                 delay=self.backoff_delay, sleep=self._sleep)
        if not resp.choices:
            raise AgentFault(f"model endpoint {self.base_url} (model {self.model}) returned no choices")
        choice = resp.choices[0]
        usage = resp.usage
        tokens = None
        if usage is not None:
            tokens = {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens,
                      "total": usage.total_tokens}
        result = {
            "text": choice.message.content or "",
            "finish_reason": choice.finish_reason,
            "tokens": tokens,
            "response_id": resp.id,
        }
        info.update(tokens=tokens, finish_reason=choice.finish_reason, response_id=resp.id)
        return result

