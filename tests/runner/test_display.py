"""Xvfb lifecycle: a free display, cleaned up on stop, on Ctrl-C/SIGTERM and when the owner is killed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from runner.display import VirtualDisplay
from tests.conftest import descendants_alive

pytestmark = pytest.mark.display  # every test here starts Xvfb itself


def _wait_for(cond, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_two_displays_get_distinct_numbers_and_stop_cleanly():
    with VirtualDisplay(640, 480) as a, VirtualDisplay(640, 480) as b:
        assert a.number != b.number
        pids = [a.proc.pid, b.proc.pid]
        assert os.path.exists(f"/tmp/.X11-unix/X{a.number}")
    assert descendants_alive(pids) == []
    assert not os.path.exists(f"/tmp/.X11-unix/X{a.number}")


OWNER = textwrap.dedent("""
    import signal, sys, time
    # Ctrl-C on a runner in a terminal. A shell starts asynchronous commands with SIGINT ignored
    # (a CI job run in the background would be one), and Python then leaves it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from runner.display import VirtualDisplay
    d = VirtualDisplay(320, 240).start()
    print(d.proc.pid, flush=True)
    try:
        time.sleep(120)
    finally:
        d.stop()
""")


def _start_owner():
    p = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True,
                         cwd=os.getcwd(), start_new_session=True)
    xvfb_pid = int(p.stdout.readline())
    assert descendants_alive([xvfb_pid]) == [xvfb_pid]
    return p, xvfb_pid


def test_xvfb_dies_with_its_owner_on_sigkill_sigint_and_sigterm():
    for sig in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM):
        owner, xvfb = _start_owner()  # SIGINT runs `finally`; SIGKILL/SIGTERM rely on PR_SET_PDEATHSIG
        os.kill(owner.pid, sig)
        owner.wait(timeout=20)
        assert _wait_for(lambda: descendants_alive([xvfb]) == []), f"Xvfb survived {sig!r}"
