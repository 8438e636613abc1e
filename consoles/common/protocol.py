"""The control protocol: JSON lines over a Unix socket, runner <-> console.

Pure dispatch logic (no Qt): a request is one JSON object per line, {"cmd": name, ...args};
the reply is one JSON object per line, {"ok": true, ...} or {"ok": false, "error": text}.
The Qt side only moves bytes between the socket and `ControlProtocol.handle_line`.
"""
from __future__ import annotations

import json
import traceback
from typing import Any, Callable

PROTOCOL_VERSION = 1
Handler = Callable[..., dict[str, Any]]


class ControlProtocol:
    """Registry of command handlers; `handle_line` never raises."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def register(self, name: str, handler: Handler) -> None:
        self._handlers[name] = handler

    @property
    def commands(self) -> list[str]:
        return sorted(self._handlers)

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        cmd = request.get("cmd")
        if not isinstance(cmd, str):
            return {"ok": False, "error": "request needs a string field 'cmd'"}
        handler = self._handlers.get(cmd)
        if handler is None:
            return {"ok": False, "error": f"unknown command {cmd!r}; known: {self.commands}"}
        args = {k: v for k, v in request.items() if k not in ("cmd", "id")}
        try:
            reply = handler(**args)
        except TypeError as exc:
            return {"ok": False, "error": f"bad arguments for {cmd!r}: {exc}"}
        except Exception as exc:  # a handler fault must reach the runner, not kill the console
            return {"ok": False, "error": f"{cmd} failed: {exc!r}", "trace": traceback.format_exc(limit=5)}
        out = {"ok": True}
        out.update(reply or {})
        if "id" in request:
            out["id"] = request["id"]
        return out

    def handle_line(self, line: bytes | str) -> bytes:
        try:
            request = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _encode({"ok": False, "error": f"request is not JSON: {exc}"})
        if not isinstance(request, dict):
            return _encode({"ok": False, "error": "request must be a JSON object"})
        return _encode(self.handle(request))


def _encode(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), default=_json_default) + "\n").encode()


def _json_default(o: Any) -> Any:
    # numpy scalars and arrays appear in state dumps; keep this module numpy-agnostic.
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
