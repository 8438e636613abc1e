"""Crash-safe resume: `medimageos run` SIGKILLed mid-run (its whole process group), then started
again, ends every episode exactly once with the verdicts of an uninterrupted run, and leaves no
Xvfb or console behind."""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from runner.agents import make_agent
from runner.episode import EpisodeSpec
from runner.parallel import _ours, descendants, pid_alive
from runner.run import run_sequential
from tasks.card import load_card
from tests.conftest import require_console

TASK = "ct_ui_smoke_routine"
SEEDS = [0, 1, 2]
KEYS = ("outcome", "sr", "pr", "aq", "steps", "rejected_steps", "termination", "stages", "details")
# The two runs' own waits and the reference run; together under the test's limit, so a stuck run fails here, with its stderr,
# and is killed, instead of pytest-timeout interrupting a wait and leaving it to the next test.
RUN_LIMIT_S = 30.0
pytestmark = [pytest.mark.display, pytest.mark.timeout(4 * RUN_LIMIT_S)]


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("medimageos")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "runner.cli"]


def _start(out: Path, *extra: str) -> subprocess.Popen:
    cmd = _cli() + ["run", "--agent", "noop", "--tasks", TASK, "--subjects", "dev",
                    "--seeds", ",".join(map(str, SEEDS)), "--out", str(out), *extra]
    # Own session: its process group is the runner and its workers (Xvfb and consoles make
    # their own sessions and must die by PR_SET_PDEATHSIG when their parent is killed).
    # stderr to a file beside the results (a pipe nobody reads could fill and stall the run)
    with open(out.parent / f"{out.name}.stderr", "a") as err:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _stderr(out: Path) -> str:
    return (out.parent / f"{out.name}.stderr").read_text()[-2000:]


@contextmanager
def _running(out: Path, *extra: str) -> Iterator[subprocess.Popen]:
    """A `medimageos run` whose process group is killed on the way out, whatever happened: a failed
    assertion or pytest-timeout's interrupt must not leave a runner and its Xvfb behind."""
    proc = _start(out, *extra)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)


class Watch:
    """Collects every Xvfb/console pid below `root` while the run is alive."""

    def __init__(self, root: int) -> None:
        self.root, self.seen = root, set()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.seen |= {p for p in descendants(self.root) if _ours(p)}
            self.stop.wait(0.05)

    def close(self) -> None:
        self.stop.set()
        self.t.join()

    def wait_gone(self, timeout_s: float = 20.0) -> list[int]:
        ev = threading.Event()
        alive: list[int] = []
        for _ in range(int(timeout_s / 0.1)):
            alive = [p for p in self.seen if pid_alive(p) and _ours(p)]
            if not alive:
                break
            ev.wait(0.1)
        return alive


def _verdicts(out: Path) -> dict[int, dict]:
    base = out / "noop" / TASK / "dev"
    return {k: json.loads((base / f"seed{k}" / "verdict.json").read_text())
            for k in SEEDS if (base / f"seed{k}" / "verdict.json").is_file()}


def _wait_for(cond, proc: subprocess.Popen, timeout_s: float) -> bool:
    ev = threading.Event()
    for _ in range(int(timeout_s / 0.02)):
        if cond():
            return True
        if proc.poll() is not None:
            return cond()
        ev.wait(0.02)
    return False


def test_sigkill_mid_run_then_resume_ends_every_episode_once_with_identical_verdicts(tmp_path):
    require_console()
    # the uninterrupted reference run: the sequential path `run --workers 1` takes, in this process (no runner
    # process to start for it)
    run_sequential([EpisodeSpec(load_card(TASK), "dev", k) for k in SEEDS], functools.partial(make_agent, "noop"),
                   tmp_path / "clean", "noop")
    clean = _verdicts(tmp_path / "clean")
    assert sorted(clean) == SEEDS and all(v["outcome"] != "INVALID" for v in clean.values()), clean

    out = tmp_path / "crashy"
    with _running(out, "--workers", "2") as proc:
        watch = Watch(proc.pid)
        try:
            hit = _wait_for(lambda: len(_verdicts(out)) >= 1, proc, timeout_s=RUN_LIMIT_S)
            assert hit and proc.poll() is None, "run ended before it could be interrupted"
            os.killpg(proc.pid, signal.SIGKILL)  # kill -9 of the runner's process group
            proc.wait(timeout=10)
        finally:
            watch.close()
    assert watch.seen, "never saw the run's Xvfb/console processes"
    assert watch.wait_gone() == [], "Xvfb/console processes survived the SIGKILL"
    before = _verdicts(out)
    assert 1 <= len(before) < len(SEEDS)
    # a final folder is complete or absent: every seed<k> folder has its verdict
    for d in (out / "noop" / TASK / "dev").glob("seed[0-9]"):
        assert (d / "verdict.json").is_file(), f"partial episode folder {d}"
    inodes = {k: os.stat(out / "noop" / TASK / "dev" / f"seed{k}" / "verdict.json").st_ino for k in before}

    with _running(out, "--workers", "2") as proc:
        watch = Watch(proc.pid)
        try:
            assert proc.wait(timeout=RUN_LIMIT_S) == 0, _stderr(out)
        finally:
            watch.close()
    assert watch.wait_gone() == []

    after = _verdicts(out)
    assert sorted(after) == SEEDS
    for k in before:  # finished episodes were skipped, not redone
        assert os.stat(out / "noop" / TASK / "dev" / f"seed{k}" / "verdict.json").st_ino == inodes[k]
    assert sorted(p.name for p in (out / "noop" / TASK / "dev").iterdir()) == [f"seed{k}" for k in SEEDS]
    assert not list(out.rglob("*.tmp-*")) and not list(out.rglob("*.part"))
    for k in SEEDS:
        ep = out / "noop" / TASK / "dev" / f"seed{k}"
        lines = (ep / "receipts.jsonl").read_text().splitlines()
        assert [json.loads(x)["step"] for x in lines] == list(range(after[k]["steps"]))  # no duplicates
        assert {x: after[k][x] for x in KEYS} == {x: clean[k][x] for x in KEYS}, f"seed{k}"
