"""Many episodes at once on one machine: N worker processes, each owning one Xvfb display.

The parent hands episodes to idle workers one at a time (over a private pipe each) and is the
watchdog: a worker that dies, or whose episode runs past its deadline, is killed together with
everything it started (its Xvfb and console run in their own sessions, so their process groups
are killed one by one), a fresh worker takes its place and the episode is retried. An INVALID
verdict (environment fault) is retried up to `max_invalid_retries` times, deleting the INVALID
folder first; after that it stays INVALID. Finished episodes (verdict.json exists) are skipped.

Workers use the spawn start method: no Qt/X state is inherited, and agent factories must be
picklable (e.g. ``functools.partial(make_agent, "reference")``).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable

from runner import results
from runner.episode import EpisodeSpec, make_verdict
from runner.run import Progress
from scoring.verdict import Verdict

DEFAULT_MAX_CRASH_RETRIES = 2  # a worker death / hang is retried this often, then INVALID
WATCH_TICK_S = 1.0


def episode_deadline_s(spec: EpisodeSpec, per_step_s: float = 30.0, base_s: float = 180.0) -> float:
    """Generous wall-clock allowance for one episode (console start + every step + scoring)."""
    return base_s + per_step_s * spec.card.budgets.max_steps


# ---- process helpers (Linux /proc; no psutil needed) ------------------------------------------

def process_children() -> dict[int, list[int]]:
    """ppid -> child pids of every live process (one scan of /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """All live descendants of `pid` (pass `children` to reuse one /proc scan for many pids)."""
    children = process_children() if children is None else children
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().decode(errors="replace").rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def kill_tree(pid: int, known: set[int] | None = None) -> None:
    """SIGKILL `pid`, its descendants and their process groups (never our own group)."""
    # Remembered pids that are no longer our descendants (their parent died) are only killed if
    # they still look like what we started, in case the pid was reused meanwhile.
    current = set(descendants(pid)) | {pid}
    victims = current | {k for k in (known or ()) if k not in current and _ours(k)}
    own = os.getpgid(0)
    for v in victims:
        try:
            pg = os.getpgid(v)
        except ProcessLookupError:
            continue
        try:
            if pg != own and pg == v:  # a session/group leader we started (Xvfb, console)
                os.killpg(pg, signal.SIGKILL)
            else:
                os.kill(v, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _ours(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except OSError:
        return False
    return b"Xvfb" in cmd or b"consoles." in cmd


# ---- worker side ----------------------------------------------------------------------------

def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _worker_main(conn: Connection, agent_factory: Callable[[], Any], out: str, coord_scale: str,
                 reuse: bool | None = None) -> None:
    """Run episodes sent over `conn` until told to stop ('None'); one display for the lifetime, and
    one console reset in place between clean episodes of the same modality (ConsoleKeeper)."""
    _die_with_parent()  # a SIGKILLed runner takes its workers (and by PDEATHSIG their Xvfb) along
    from runner.console_process import ConsoleKeeper
    from runner.display import VirtualDisplay
    from runner.episode import run_episode

    display: VirtualDisplay | None = None
    keeper = ConsoleKeeper(reuse)
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                break
            idx, spec = msg
            try:
                w, h = spec.card.observation.width, spec.card.observation.height
                if display is None or not display.alive() or (display.width, display.height) != (w, h):
                    if display is not None:
                        display.stop()
                    display = VirtualDisplay(w, h).start()
                v = run_episode(spec, agent_factory(), Path(out), display, coord_scale=coord_scale, keeper=keeper)
                conn.send(("done", idx, v.model_dump()))
            except Exception as exc:  # noqa: BLE001 - reported, the parent decides
                keeper.discard()
                conn.send(("error", idx, f"{exc!r}\n{traceback.format_exc(limit=8)}"))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        keeper.close()
        if display is not None:
            display.stop()


# ---- parent side ----------------------------------------------------------------------------

@dataclass
class _Worker:
    proc: mp.Process
    conn: Connection
    job: int | None = None
    started: float = 0.0
    known_pids: set[int] = field(default_factory=set)


def _spawn(ctx, agent_factory, out: Path, coord_scale: str, reuse: bool | None = None) -> _Worker:
    parent_end, child_end = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_worker_main, args=(child_end, agent_factory, str(out), coord_scale, reuse),
                       daemon=True, name="medimageos-worker")
    proc.start()
    child_end.close()
    return _Worker(proc, parent_end)


def _kill(worker: _Worker) -> None:
    kill_tree(worker.proc.pid, worker.known_pids)
    worker.proc.join(10)
    worker.conn.close()


def fault_verdict(spec: EpisodeSpec, agent_name: str, reason: str) -> Verdict:
    """INVALID verdict for an episode no worker could finish."""
    return make_verdict(spec.card, spec, agent_name, None, 0, 0, "fault", reason, 0.0, 0.0)


def record_fault(out: Path, spec: EpisodeSpec, agent_name: str, reason: str) -> Verdict:
    """Write an INVALID episode folder (atomically, like a real one) and return its verdict."""
    final = results.episode_dir(out, agent_name, spec.card.id, spec.subject, spec.seed)
    work = results.fresh_work_dir(final)
    v = fault_verdict(spec, agent_name, reason)
    results.write_json_atomic(work / "verdict.json", v.model_dump())
    results.publish(work, final)
    return v


def discard_episode(out: Path, spec: EpisodeSpec, agent_name: str) -> None:
    """Delete a finished (INVALID) episode folder so it can be redone."""
    final = results.episode_dir(out, agent_name, spec.card.id, spec.subject, spec.seed)
    shutil.rmtree(final, ignore_errors=True)


class RetryBook:
    """Shared retry policy of the local and Ray backends."""

    def __init__(self, specs: list[EpisodeSpec], out: Path, agent_name: str, max_invalid_retries: int,
                 max_crash_retries: int, progress: Progress) -> None:
        self.specs, self.out, self.agent_name = specs, Path(out), agent_name
        self.max_invalid, self.max_crash = max_invalid_retries, max_crash_retries
        self.progress = progress
        self.invalid_tries = [0] * len(specs)
        self.crash_tries = [0] * len(specs)
        self.verdicts: list[Verdict | None] = [None] * len(specs)
        self.queue: deque[int] = deque()
        for i, spec in enumerate(specs):
            final = results.episode_dir(out, agent_name, spec.card.id, spec.subject, spec.seed)
            if results.is_finished(final, spec.card.version):
                v = Verdict.model_validate_json((final / "verdict.json").read_text())
                self.verdicts[i] = v
                progress.update(v, skipped=True)
            else:
                self.queue.append(i)

    def finished(self, idx: int, v: Verdict) -> None:
        """A worker returned a verdict: accept it or, if INVALID with retries left, redo it."""
        if v.outcome == "INVALID" and self.invalid_tries[idx] < self.max_invalid:
            self.invalid_tries[idx] += 1
            self.note(idx, f"INVALID ({v.reason.splitlines()[0][:120] if v.reason else 'no reason'}); "
                           f"retry {self.invalid_tries[idx]}/{self.max_invalid}")
            discard_episode(self.out, self.specs[idx], self.agent_name)
            self.queue.appendleft(idx)
            return
        self.verdicts[idx] = v
        self.progress.update(v)

    def crashed(self, idx: int, why: str) -> None:
        """The worker running `idx` died or hung (and was killed): retry, or record INVALID."""
        self.crash_tries[idx] += 1
        self.note(idx, f"{why.splitlines()[0][:160]}; "
                       + (f"retry {self.crash_tries[idx]}/{self.max_crash}" if self.crash_tries[idx] <= self.max_crash
                          else "recorded INVALID"))
        if self.crash_tries[idx] <= self.max_crash:
            self.queue.appendleft(idx)
            return
        v = record_fault(self.out, self.specs[idx], self.agent_name,
                         f"worker failed {self.crash_tries[idx]} times; last: {why}")
        self.verdicts[idx] = v
        self.progress.update(v)

    def note(self, idx: int, text: str) -> None:
        s = self.specs[idx]
        print(f"  ! {s.card.id} {s.subject} seed{s.seed}: {text}", file=self.progress.out, flush=True)

    def pending(self) -> bool:
        return any(v is None for v in self.verdicts)


def run_parallel(specs: list[EpisodeSpec], agent_factory: Callable[[], Any], out: Path, agent_name: str,
                 workers: int = 2, coord_scale: str = "pixels", max_invalid_retries: int = 1,
                 episode_timeout_s: float | None = None, max_crash_retries: int = DEFAULT_MAX_CRASH_RETRIES,
                 progress: Progress | None = None, reuse: bool | None = None) -> list[Verdict]:
    """Run `specs` on `workers` processes; verdicts in the order of `specs`.

    `reuse`: reset each worker's console in place between its clean episodes of one modality
    (None: on unless MEDIMAGEOS_CONSOLE_REUSE=0; False: launch a console per episode)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    book = RetryBook(specs, out, agent_name, max_invalid_retries, max_crash_retries,
                     progress or Progress(len(specs)))
    n = max(1, min(workers, len(book.queue)))
    if not book.queue:
        return list(book.verdicts)  # type: ignore[arg-type]
    ctx = mp.get_context("spawn")
    pool = [_spawn(ctx, agent_factory, out, coord_scale, reuse) for _ in range(n)]
    last_scan = 0.0
    try:
        while book.pending():
            for i, w in enumerate(pool):
                if w.job is None and book.queue:
                    idx = book.queue.popleft()
                    try:
                        w.conn.send((idx, specs[idx]))
                    except (BrokenPipeError, OSError):
                        book.queue.appendleft(idx)
                        _kill(w)
                        pool[i] = _spawn(ctx, agent_factory, out, coord_scale, reuse)
                        continue
                    w.job, w.started, w.known_pids = idx, time.monotonic(), set()
            busy = [w for w in pool if w.job is not None]
            if not busy:
                if book.queue:
                    continue
                break
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=WATCH_TICK_S)
            now = time.monotonic()
            if now - last_scan >= WATCH_TICK_S:  # remember who each worker started, for the kill
                last_scan = now
                tree = process_children()
                for w in busy:
                    w.known_pids |= set(descendants(w.proc.pid, tree))
            for i, w in enumerate(pool):
                if w.job is None:
                    continue
                idx = w.job
                msg = None
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.conn.poll():
                            msg = w.conn.recv()
                    except (EOFError, OSError):
                        msg = None
                if msg is not None:
                    w.job = None
                    kind, _, payload = msg
                    if kind == "done":
                        book.finished(idx, Verdict.model_validate(payload))
                    else:
                        _kill(w)
                        pool[i] = _spawn(ctx, agent_factory, out, coord_scale, reuse)
                        book.crashed(idx, f"worker error: {payload}")
                    continue
                deadline = episode_timeout_s or episode_deadline_s(specs[idx])
                dead = not w.proc.is_alive()
                if dead or now - w.started > deadline:
                    why = (f"worker exited with code {w.proc.exitcode}" if dead
                           else f"episode exceeded its {deadline:.0f} s deadline")
                    _kill(w)
                    pool[i] = _spawn(ctx, agent_factory, out, coord_scale, reuse)
                    book.crashed(idx, why)
    finally:
        for w in pool:
            try:
                w.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for w in pool:
            w.proc.join(15)
            if w.proc.is_alive():
                _kill(w)
            w.conn.close()
    return list(book.verdicts)  # type: ignore[arg-type]
