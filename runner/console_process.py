"""One console process on one display: launch, handshake, privileged queries, teardown."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.control_client import ConsoleFault, ControlClient
from runner.display import VirtualDisplay, _die_with_parent

STARTUP_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 30.0


class ConsoleProcess:
    """`python -m consoles.<modality>` under a display, driven over its control socket."""

    def __init__(self, display: VirtualDisplay, modality: str, task: str, subject: str, seed: int,
                 log_path: Path | None = None, extra_env: dict[str, str] | None = None,
                 timeout_s: float | None = None) -> None:
        self.display = display
        self.modality, self.task, self.subject, self.seed = modality, task, subject, seed
        self._tmp = tempfile.mkdtemp(prefix="medimageos-ctl-")
        self.socket_path = os.path.join(self._tmp, "control.sock")
        self.log_path = log_path
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.client = ControlClient(self.socket_path, timeout_s or REQUEST_TIMEOUT_S)
        self.hello: dict[str, Any] = {}

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> dict[str, Any]:
        env = self.display.env()
        env.update(self.extra_env)
        env["PYTHONHASHSEED"] = "0"
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        cmd = [sys.executable, "-m", f"consoles.{self.modality}", "--task", self.task,
               "--subject", self.subject, "--seed", str(self.seed), "--control", self.socket_path]
        self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, preexec_fn=_die_with_parent)
        if log is not subprocess.DEVNULL:
            log.close()
        deadline = time.monotonic() + timeout_s
        try:
            self.client.connect(deadline, alive=self.alive)
            self.hello = self.client.request("hello", timeout_s=max(1.0, deadline - time.monotonic()))
            self.settle(0.0)  # first frame rendered and on the server
        except BaseException:
            self.stop()
            raise
        return self.hello

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _check(self, what: str, reply_fn):
        try:
            return reply_fn()
        except ConsoleFault as exc:
            code = self.proc.poll() if self.proc else None
            if code is not None:
                raise ConsoleFault(f"console exited with code {code} during {what}: {exc}") from exc
            raise

    def settle(self, advance: float) -> float:
        return self._check("settle", lambda: self.client.request("settle", advance=advance)["sim_time"])

    def state(self) -> dict[str, Any]:
        return self._check("state", lambda: self.client.request("state")["state"])

    def geometry(self) -> dict[str, Any]:
        return self._check("geometry", lambda: self.client.request("geometry"))

    def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        return self._check(cmd, lambda: self.client.request(cmd, **args))

    def stop(self) -> None:
        """Ask politely, then kill the process group; never leaves a console behind."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.client.request("quit", timeout_s=3.0)
            except ConsoleFault:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=5)
        self.client.close()
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass
        try:
            os.rmdir(self._tmp)
        except OSError:
            pass

    def __enter__(self) -> "ConsoleProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
