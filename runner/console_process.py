"""One console process on one display: launch, handshake, privileged queries, reset, teardown.

`ConsoleKeeper` holds one worker's console between episodes: the next episode on the same modality
and display resets it in place (the console's `reset` command) instead of launching a new process;
any episode that did not end cleanly stops it, so the next one launches afresh.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.control_client import ConsoleFault, ControlClient
from runner.display import VirtualDisplay, _die_with_parent
from tasks.card import console_card, console_card_json

# The one startup deadline (seconds): launch -> control socket open -> hello -> first frame settled.
# A console starts in 2-4 s on an idle 2-core machine; a console that has not answered by then is
# killed, its log tail becomes the fault, and the episode retries once on a fresh display (run_episode).
# Subjects are built by the runner before the launch (ensure_subject), so a cold cache never counts here.
STARTUP_DEADLINE_S = 30.0
STARTUP_TIMEOUT_S = STARTUP_DEADLINE_S  # the old name, kept for callers
REQUEST_TIMEOUT_S = 30.0
LOG_TAIL_BYTES = 2000
REUSE_ENV = "MEDIMAGEOS_CONSOLE_REUSE"  # "0": every episode launches its own console (escape hatch)



class ConsoleStartupError(ConsoleFault):
    """The console did not come up within the startup deadline (or exited first); the message holds
    the console's log tail."""


def log_tail(path: Path | str | None, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a console log, as text ("" if there is none)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


def ensure_subject(subject: str) -> None:
    """Build a procedural subject in the runner before a console needs it: a console that finds
    its subject missing builds it in a child process before opening its socket (tens of seconds),
    which would otherwise count against the startup deadline."""
    from rendering.subjects.runtime import runtime_dir

    runtime_dir(subject)


def reuse_default() -> bool:
    """Whether consoles are reset in place between episodes unless a caller says otherwise."""
    return os.environ.get(REUSE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


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
        # always logged: on a startup fault the log tail is the reason recorded
        self._own_log = log_path is None
        if self._own_log:
            self.log_path = Path(self._tmp) / "console.log"
        self.client = ControlClient(self.socket_path, timeout_s or REQUEST_TIMEOUT_S)
        self.hello: dict[str, Any] = {}

    def start(self, timeout_s: float | None = None) -> dict[str, Any]:
        """Launch and handshake within the startup deadline; on a miss the console is killed and
        ConsoleStartupError names the deadline and carries the log tail."""
        timeout_s = STARTUP_DEADLINE_S if timeout_s is None else timeout_s
        ensure_subject(self.subject)
        env = self.display.env()
        env.update(self.extra_env)
        env["PYTHONHASHSEED"] = "0"
        cmd = [sys.executable, "-m", f"consoles.{self.modality}", "--task", self.task,
               "--card-json", console_card_json(self.task),
               "--subject", self.subject, "--seed", str(self.seed), "--control", self.socket_path]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, preexec_fn=_die_with_parent)
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        try:
            self.client.connect(deadline, alive=self.alive)
            self.hello = self.client.request("hello", timeout_s=max(0.1, deadline - time.monotonic()))
            self.client.request("settle", advance=0.0,  # first frame rendered and on the server
                                timeout_s=max(0.1, deadline - time.monotonic()))
        except ConsoleFault as exc:
            code = self.proc.poll()
            self._kill_group()
            tail = log_tail(self.log_path)  # read before stop() removes a log of our own
            self.stop()
            what = (f"console exited with code {code}" if code is not None
                    else f"console did not come up within the startup deadline of {timeout_s:g} s")
            raise ConsoleStartupError(f"{what} ({exc}); pid {self.proc.pid} killed after "
                                      f"{time.monotonic() - t0:.1f} s; console log tail:\n{tail or '(empty)'}") from exc
        except BaseException:
            self.stop()
            raise
        return self.hello

    def kill(self) -> None:
        """Kill the console's process group at once (it is not answering) and clean up."""
        self._kill_group()
        self.stop()

    def _kill_group(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=5)

    def reset(self, task: str, subject: str, seed: int) -> dict[str, Any]:
        """Start the next episode in this process (the console's `reset`): it then shows what a
        console launched with these arguments shows. Same handshake as `start`: reply, then a
        settle so the first frame is on the server."""
        reply = self.request("reset", task=task, subject=subject, seed=seed, card=console_card(task))
        self.task, self.subject, self.seed = task, subject, seed
        self.hello = {k: v for k, v in reply.items() if k not in ("ok", "id")}
        self.settle(0.0)
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
        if self._own_log:
            try:
                os.unlink(self.log_path)
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


class ConsoleKeeper:
    """One worker's console across episodes (reset in place when it can, launch when it must).

    `acquire` returns a console showing the requested episode's first frame: the kept console
    reset in place if it is alive, on the same display and modality with the same environment,
    else a fresh launch. `release(console, clean)` keeps it only after a clean episode; any
    fault, crash, timeout or INVALID verdict stops it (`discard`), so a console in an unknown
    state never starts another episode. With `reuse=False` every episode launches and stops its
    own console, exactly as before reuse existed.

    The console's output goes to a log the keeper owns; each episode's part is copied to that
    episode's log path on release.
    """

    def __init__(self, reuse: bool | None = None) -> None:
        self.reuse = reuse_default() if reuse is None else bool(reuse)
        self._console: ConsoleProcess | None = None
        self._key: tuple | None = None
        self._log_dir: str | None = None
        self._log_mark = 0
        self._episode_log: Path | None = None
        self.launches = self.resets = 0

    def acquire(self, display: VirtualDisplay, modality: str, task: str, subject: str, seed: int, *,
                log_path: Path | None = None, extra_env: dict[str, str] | None = None,
                timeout_s: float | None = None) -> ConsoleProcess:
        """A console on `display` showing the first frame of (task, subject, seed)."""
        if not self.reuse:
            con = ConsoleProcess(display, modality, task, subject, seed, log_path=log_path,
                                 extra_env=extra_env, timeout_s=timeout_s)
            con.start()
            self.launches += 1
            return con
        key = (id(display), display.name, modality, tuple(sorted((extra_env or {}).items())), timeout_s)
        con = self._console
        self._episode_log = log_path
        if con is not None and self._key == key and con.alive() and display.alive():
            self._log_mark = self._log_size()
            try:
                con.reset(task, subject, seed)
                self.resets += 1
                return con
            except ConsoleFault:
                pass  # a console that cannot reset is in an unknown state: launch a new one
        self.discard()
        self._log_dir = self._log_dir or tempfile.mkdtemp(prefix="medimageos-console-log-")
        log = Path(self._log_dir) / "console.log"
        log.write_bytes(b"")
        self._log_mark = 0
        con = ConsoleProcess(display, modality, task, subject, seed, log_path=log, extra_env=extra_env,
                             timeout_s=timeout_s)
        try:
            con.start()
        except BaseException:
            self._copy_log()
            raise
        self._console, self._key = con, key
        self.launches += 1
        return con

    def release(self, console: ConsoleProcess, clean: bool) -> None:
        """The episode on `console` is over: keep it for the next one only if it ended `clean`."""
        if console is not self._console:  # not kept (reuse off, or already discarded)
            console.stop()
            return
        if not clean or not console.alive():
            self.discard()
        else:
            self._copy_log()

    def discard(self) -> None:
        """Stop the kept console, if any (the next episode launches afresh)."""
        con, self._console, self._key = self._console, None, None
        if con is not None:
            con.stop()
            self._copy_log()

    def close(self) -> None:
        """Stop the kept console and remove the keeper's log."""
        self.discard()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def _log_size(self) -> int:
        try:
            return (Path(self._log_dir) / "console.log").stat().st_size if self._log_dir else 0
        except OSError:
            return 0

    def _copy_log(self) -> None:
        """The console output since the episode began, into the episode's log (if it has one)."""
        dest, self._episode_log = self._episode_log, None
        if dest is None or self._log_dir is None:
            return
        try:
            with open(Path(self._log_dir) / "console.log", "rb") as f:
                f.seek(self._log_mark)
                data = f.read()
            with open(dest, "ab") as out:
                out.write(data)
        except OSError:
            pass
