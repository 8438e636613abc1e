"""A local OpenAI-compatible chat server with scripted replies, for tests through the real client.

    with fake_openai(['{"action": "done"}', rate_limit(2), server_error(), slow(5.0)]) as server:
        agent = ApiAgent("fake-model", server.base_url, ...)
        ...
        server.requests[0]["temperature"]   # every request body, parsed, in arrival order

Each POST /v1/chat/completions (or to the given `routes`: the vendor tool tests use /v1/messages and
/v1/responses with full `Reply(body=...)` answers) consumes the next script item: a `Reply`, a plain string (a normal
assistant reply with that content, malformed or not), or a callable `body -> Reply | str` for
replies that depend on the request. When the script runs out the `default` item is used; without
one the server answers HTTP 400 "script exhausted", which the agent treats as non-retryable.
Delays wait on an event that is set when the server stops, so a test never waits for them.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    content: str | None = None  # assistant text of a 200 chat completion
    body: dict[str, Any] | None = None  # full JSON body, overriding `content`
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait this long before answering (longer than the client timeout = timeout)
    finish_reason: str = "stop"
    prompt_tokens: int = 100
    completion_tokens: int = 10


ScriptItem = Union[Reply, str, Callable[[dict[str, Any]], Union[Reply, str]]]


def text(content: str, **kw: Any) -> Reply:
    """A normal 200 reply whose assistant message is `content` (may be malformed on purpose)."""
    return Reply(content=content, **kw)


def error(status: int, message: str = "scripted error", type_: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> Reply:
    """An HTTP error with an OpenAI-style error body."""
    return Reply(status=status, body={"error": {"message": message, "type": type_, "param": None,
                                                "code": None}}, headers=dict(headers or {}))


def rate_limit(retry_after: float | None = 1.0) -> Reply:
    """HTTP 429, with a Retry-After header (seconds) unless retry_after is None."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return error(429, "Rate limit reached (scripted)", "rate_limit_exceeded", headers)


def server_error(status: int = 500) -> Reply:
    """An HTTP 5xx."""
    return error(status, "The server had an error (scripted)", "server_error")


def unauthorized() -> Reply:
    return error(401, "Incorrect API key provided (scripted)", "invalid_request_error")


def slow(delay_s: float, then: Reply | str = '{"action": "wait", "seconds": 1}') -> Reply:
    """A reply sent only after `delay_s` seconds: longer than the client timeout, it times out."""
    reply = text(then) if isinstance(then, str) else Reply(**{**then.__dict__})
    reply.delay_s = delay_s
    return reply


class FakeOpenAIServer:
    """OpenAI-compatible HTTP server on 127.0.0.1 (free port) running in a daemon thread."""

    CHAT_ROUTES = ("/v1/chat/completions", "/chat/completions")

    def __init__(self, script: list[ScriptItem] | None = None, default: ScriptItem | None = None,
                 routes: tuple[str, ...] = CHAT_ROUTES) -> None:
        self.routes = routes  # POST paths answered from the script (a vendor tool test: /v1/messages, ...)
        self._script: list[ScriptItem] = list(script or [])
        self.default = default
        self.requests: list[dict[str, Any]] = []  # parsed JSON bodies, in arrival order
        self.request_headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def push(self, *items: ScriptItem) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(items)

    def start(self) -> "FakeOpenAIServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases delayed handlers at once
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- request handling ------------------------------------------------------------------
    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            item = self._script.pop(0) if self._script else self.default
        if item is None:
            return error(400, "fake_openai: script exhausted")
        if callable(item) and not isinstance(item, Reply):
            item = item(body)
        return text(item) if isinstance(item, str) else item

    @staticmethod
    def _completion(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                         "finish_reason": reply.finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}, {})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

            def do_POST(self) -> None:
                if self.path.rstrip("/") not in server.routes:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}, {})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.request_headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = server._next_reply(body)
                if reply.delay_s > 0 and server._stop.wait(reply.delay_s):
                    return  # server stopping: drop the connection
                if reply.status == 200 and reply.body is None:
                    payload = server._completion(reply, body, len(server.requests))
                else:
                    payload = reply.body if reply.body is not None else {}
                self._send(reply.status, payload, reply.headers)

        return Handler


@contextmanager
def fake_openai(script: list[ScriptItem] | None = None, default: ScriptItem | None = None,
                routes: tuple[str, ...] = FakeOpenAIServer.CHAT_ROUTES) -> Iterator[FakeOpenAIServer]:
    """Run a FakeOpenAIServer for the duration of the block (answering POSTs to `routes`)."""
    server = FakeOpenAIServer(script, default, routes).start()
    try:
        yield server
    finally:
        server.stop()
