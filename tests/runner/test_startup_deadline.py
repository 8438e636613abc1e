"""A console that never opens its control socket is a fault within the startup deadline, not a hang.

The console reads MEDIMAGEOS_TEST_STARTUP_HANG (with MEDIMAGEOS_FAULT_INJECTION=1, tests only) and then
stays alive without listening: "always", or "once:<marker>" (only the first start hangs). The runner
kills it at the deadline, records its log tail, retries once on a fresh display, and an episode that
still cannot start is INVALID with that reason.
"""
from __future__ import annotations

import json

import pytest

from runner import console_process
from runner.agents.simple import NoopAgent
from runner.console_process import ConsoleKeeper, ConsoleProcess, ConsoleStartupError
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card
from tests.runner.baselines import with_budget

# No wall-clock assertion: the message names the deadline that ended the start, and this limit (well above
# two 6 s deadlines, a display restart and a noop episode) turns a hang into a failure.
pytestmark = [pytest.mark.display, pytest.mark.timeout(90)]

TASK = "ct_ui_smoke_routine"
HANG = "console: MEDIMAGEOS_TEST_STARTUP_HANG"  # what the hanging console prints (its log tail)


@pytest.fixture
def own_display():
    """A display of this test's own: the retry restarts it, which must not touch the session's."""
    from runner.display import VirtualDisplay

    d = VirtualDisplay(1280, 800).start()
    yield d
    d.stop()


def _env(how: str) -> dict[str, str]:
    return {"MEDIMAGEOS_FAULT_INJECTION": "1", "MEDIMAGEOS_TEST_STARTUP_HANG": how}


def test_a_console_that_never_opens_its_socket_is_killed_at_the_deadline(own_display):
    con = ConsoleProcess(own_display, "ct", TASK, "dev", 0, extra_env=_env("always"))
    with pytest.raises(ConsoleStartupError) as exc:
        con.start(timeout_s=6.0)
    msg = str(exc.value)
    assert "startup deadline of 6 s" in msg and HANG in msg, msg
    assert not con.alive()


def test_an_episode_whose_console_never_comes_up_is_invalid_with_the_reason(own_display, tmp_path, monkeypatch):
    monkeypatch.setattr(console_process, "STARTUP_DEADLINE_S", 6.0)  # the runner's constant, shortened
    server_before = own_display.proc.pid
    card = with_budget(load_card(TASK), 3)
    v = run_episode(EpisodeSpec(card, "dev", 0), NoopAgent(), tmp_path, own_display, console_env=_env("always"),
                    keeper=ConsoleKeeper())
    assert v.outcome == "INVALID" and v.termination == "fault", v
    assert "startup failed twice" in v.reason and "startup deadline of 6 s" in v.reason, v.reason
    assert v.reason.count(HANG) == 2, v.reason  # both attempts' log tails
    assert own_display.proc.pid != server_before and own_display.alive()  # a fresh Xvfb for the retry


def test_the_retry_on_a_fresh_display_succeeds_when_the_fault_is_gone(own_display, tmp_path, monkeypatch):
    monkeypatch.setattr(console_process, "STARTUP_DEADLINE_S", 6.0)  # shortened: the first start waits it out
    marker = tmp_path / "hung-once"
    card = with_budget(load_card(TASK), 3)
    v = run_episode(EpisodeSpec(card, "dev", 1), NoopAgent(), tmp_path / "out", own_display,
                    console_env=_env(f"once:{marker}"), keeper=ConsoleKeeper())
    assert marker.exists()  # the first start did hang
    assert v.outcome in ("FAIL", "PARTIAL") and v.termination != "fault", v.reason
    state = json.loads((episode_dir(tmp_path / "out", "noop", card.id, "dev", 1) / "state.json").read_text())
    retry = state["provenance"]["startup_retry"]
    assert f"startup deadline of {console_process.STARTUP_DEADLINE_S:g} s" in retry and HANG in retry
