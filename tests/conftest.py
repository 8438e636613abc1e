"""Shared fixtures. Display tests start their own Xvfb; nothing here is mocked."""
from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def display():
    """One real Xvfb server for the session's integration tests."""
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/bootstrap.sh")
    from runner.display import VirtualDisplay

    d = VirtualDisplay(1280, 800).start()
    yield d
    d.stop()


def descendants_alive(pids: list[int]) -> list[int]:
    """Which of these pids still exist (zombies excluded)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] != "Z":
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def require_console() -> None:
    """Xvfb and the development subject must be available: a missing install step fails the test."""
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/bootstrap.sh")
    from rendering.subjects import load_runtime

    load_runtime("dev")
