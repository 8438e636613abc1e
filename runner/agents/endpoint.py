"""What every agent behind an HTTP model endpoint shares: the retry delay and the client's lifecycle.

`runner.agents.api.ApiAgent` (OpenAI-compatible chat completions) and the vendor computer-use tool agents
(`runner.agents.adapters.vendor_tool.VendorToolAgent`) both hold a lazily made client in `_client` and the
backoff settings `backoff_base_s` / `backoff_max_s`.
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

LOCAL_DUMMY_API_KEY = "EMPTY"  # vLLM's convention for servers started without --api-key
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def is_local_url(base_url: str) -> bool:
    """True for endpoints on this machine (no API key needed by default)."""
    host = (urlparse(base_url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def resolve_api_key(api_key: str | None, base_url: str, env_name: str, hint: str = "") -> str:
    """The key to send: the one given, else `env_name` from the environment, else the dummy key for an endpoint
    on this machine; a remote endpoint without a key is a ValueError naming where to put one."""
    key = api_key if api_key is not None else os.environ.get(env_name)
    if key:
        return key
    if not is_local_url(base_url):
        raise ValueError(f"no API key for {base_url}: pass api_key or set {env_name}{hint}")
    return LOCAL_DUMMY_API_KEY


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (Retry-After / retry-after-ms), if it said so."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if seconds >= 0:
            return seconds
    return None



class EndpointClient:
    """Mixin: deterministic exponential backoff (raised to the server's Retry-After) and a client that is
    closed on `close()` and dropped when the agent is pickled (it holds sockets; agents are shipped to
    worker processes and Ray actors)."""

    _client: Any = None
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0

    def backoff_delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """Deterministic delay after failed attempt number `attempt` (1-based)."""
        delay = self.backoff_base_s * (2 ** (attempt - 1))
        asked = retry_after_s(exc) if exc is not None else None
        if asked is not None:
            delay = max(delay, asked)
        return min(delay, self.backoff_max_s)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None
        return state
