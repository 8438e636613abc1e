"""Xvfb lifecycle: a free display chosen by the server itself, depth 24, always cleaned up.

Xvfb is started in its own process group with `-displayfd`, so it picks a free display number
and tells us when it is ready (a condition, not a sleep). The group is killed on close, at
interpreter exit, on SIGINT/SIGTERM and when the owning process dies (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import atexit
import ctypes
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import weakref

_LIVE: "weakref.WeakSet[VirtualDisplay]" = weakref.WeakSet()
_PR_SET_PDEATHSIG = 1
XVFB_MMAP_THRESHOLD = 1 << 20  # glibc MALLOC_MMAP_THRESHOLD_ for Xvfb (see VirtualDisplay.start)


class DisplayError(RuntimeError):
    """Xvfb could not be started or stopped."""


try:
    # Resolved here, in the parent: dlopen() between fork and exec can deadlock when another thread
    # of the runner held the loader lock at fork time (the child would never exec).
    _PRCTL = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except OSError:  # not glibc: no parent-death signal
    _PRCTL = None


def _die_with_parent() -> None:
    # Runs in the child before exec: if the runner is SIGKILLed, the kernel kills Xvfb too.
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()


class VirtualDisplay:
    """One Xvfb server. Use as a context manager or call start()/stop()."""

    # The bound on waiting for Xvfb's display number, not a sleep: Xvfb usually answers in about 0.5 s, but
    # it twice took over 20 s on a loaded 2-core machine (once inside podman, once beside a headless sweep).
    def __init__(self, width: int = 1280, height: int = 800, start_timeout_s: float = 60.0) -> None:
        self.width, self.height = width, height
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.number: int | None = None
        self._log = None

    @property
    def name(self) -> str:
        if self.number is None:
            raise DisplayError("display not started")
        return f":{self.number}"

    def start(self) -> "VirtualDisplay":
        exe = shutil.which("Xvfb")
        if exe is None:
            raise DisplayError("Xvfb is not installed; run scripts/bootstrap.sh (Debian package xvfb)")
        rfd, wfd = os.pipe()
        cmd = [exe, "-displayfd", str(wfd), "-screen", "0", f"{self.width}x{self.height}x24",
               "-nolisten", "tcp", "-noreset", "-dpi", "96", "+extension", "XTEST", "-ac"]
        env = dict(os.environ)
        # A fixed mmap threshold: large blocks Xvfb frees go back to the system instead of staying on
        # its heap under glibc's dynamic threshold (anonymous memory 22.1 -> 18.1 MiB over the CT
        # reference episodes; drag steps unchanged).
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(XVFB_MMAP_THRESHOLD))
        # Xvfb's messages go to an unlinked temporary file, not a pipe: a pipe nobody reads fills up
        # (64 KiB) over a long session and Xvfb then blocks in write(), and with it every client.
        self._log = tempfile.TemporaryFile(prefix="medimageos-xvfb-")
        self.proc = subprocess.Popen(cmd, env=env, pass_fds=(wfd,), stdout=subprocess.DEVNULL,
                                     stderr=self._log, preexec_fn=_die_with_parent)
        os.close(wfd)
        _LIVE.add(self)
        deadline = time.monotonic() + self.start_timeout_s
        buf = b""
        try:
            while not buf.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DisplayError(f"Xvfb did not report a display within {self.start_timeout_s} s; "
                                       f"its log: {self.log_tail() or '(empty)'}")
                ready, _, _ = select.select([rfd], [], [], left)
                if ready:
                    chunk = os.read(rfd, 64)
                    if not chunk:
                        self.proc.wait(timeout=5)
                        err = self.log_tail()
                        raise DisplayError(f"Xvfb exited before it was ready: {err}")
                    buf += chunk
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(rfd)
        self.number = int(buf.strip())
        return self

    def log_tail(self, limit: int = 500) -> str:
        """The end of what Xvfb wrote to stderr."""
        if self._log is None:
            return ""
        try:
            self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, self._log.tell() - limit))
            return self._log.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def restart(self) -> "VirtualDisplay":
        """Stop this server and start a fresh one (a new display number) in this object, so every
        holder of it draws on the new server from now on."""
        self.stop()
        self.number = None
        return self.start()

    def env(self) -> dict[str, str]:
        """Environment for a process that should draw on this display."""
        env = dict(os.environ)
        env["DISPLAY"] = self.name
        env.pop("WAYLAND_DISPLAY", None)
        env.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
        env.setdefault("GALLIUM_DRIVER", "llvmpipe")
        # glibc's dynamic mmap threshold otherwise grows to 32 MiB after the first large numpy array is
        # freed, after which volumes land on the brk heap and are never given back (a console kept
        # ~60 MiB of freed scout intermediates). A fixed threshold returns large blocks to the system.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "262144")
        return env

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.number is not None:
            for leftover in (f"/tmp/.X{self.number}-lock", f"/tmp/.X11-unix/X{self.number}"):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass
        _LIVE.discard(self)

    def __enter__(self) -> "VirtualDisplay":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def stop_all_displays() -> None:
    for d in list(_LIVE):
        d.stop()


atexit.register(stop_all_displays)
