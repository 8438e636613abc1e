"""Runner side of the control socket: JSON lines with deadlines; a silent console is a fault."""
from __future__ import annotations

import json
import socket
import time
from typing import Any


class ConsoleFault(RuntimeError):
    """The console crashed, hung, or answered with an error: the episode is INVALID."""


class ControlClient:
    """A blocking client with a deadline on every request."""

    def __init__(self, path: str, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self.sock: socket.socket | None = None
        self._buf = b""
        self._next_id = 0

    def connect(self, deadline: float, alive=lambda: True) -> None:
        """Connect, retrying until `deadline` (monotonic) while `alive()` says the console runs."""
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not alive():
                raise ConsoleFault("console exited before opening its control socket")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                self.sock = s
                return
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                last = exc
                s.close()
                # the socket file appears when the console is up; poll the condition briefly
                time.sleep(0.02)
        raise ConsoleFault(f"console did not open its control socket {self.path} in time ({last})")

    def request(self, cmd: str, timeout_s: float | None = None, **args: Any) -> dict[str, Any]:
        if self.sock is None:
            raise ConsoleFault("not connected to the console")
        self._next_id += 1
        msg = {"cmd": cmd, "id": self._next_id, **args}
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        try:
            self.sock.sendall((json.dumps(msg) + "\n").encode())
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConsoleFault(f"console did not answer {cmd!r} within {timeout_s or self.timeout_s:.0f} s")
                self.sock.settimeout(left)
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise ConsoleFault(f"console closed the control connection during {cmd!r} (crashed?)")
                self._buf += chunk
        except socket.timeout as exc:
            raise ConsoleFault(f"console did not answer {cmd!r} within {timeout_s or self.timeout_s:.0f} s") from exc
        except OSError as exc:
            raise ConsoleFault(f"control connection failed during {cmd!r}: {exc}") from exc
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ConsoleFault(f"console refused {cmd!r}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
