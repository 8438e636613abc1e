"""The same episodes on Ray: one actor per worker, each owning one Xvfb display for its lifetime.

The driver keeps the retry policy of the local backend (runner.parallel.RetryBook): an actor that
dies (RayActorError) or whose episode runs past its deadline is killed with ``ray.kill`` (its Xvfb
and console die with it through PR_SET_PDEATHSIG), replaced, and the episode is retried; INVALID
verdicts are retried up to `max_invalid_retries` times. On a cluster, `out` must be a path every
node sees (a shared filesystem): actors write the episode folders themselves.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from runner.episode import EpisodeSpec
from runner.parallel import DEFAULT_MAX_CRASH_RETRIES, RetryBook, episode_deadline_s
from runner.run import Progress
from scoring.verdict import Verdict

WATCH_TICK_S = 1.0


class EpisodeActor:
    """Body of the Ray actor: runs episodes on its own display."""

    def __init__(self, agent_factory: Callable[[], Any], out: str, coord_scale: str,
                 reuse: bool | None = None) -> None:
        from runner.console_process import ConsoleKeeper

        self.agent_factory, self.out, self.coord_scale = agent_factory, Path(out), coord_scale
        self.display = None
        self.keeper = ConsoleKeeper(reuse)  # the actor's console, reset in place between clean episodes

    def pid(self) -> int:
        return os.getpid()

    def run(self, spec: EpisodeSpec) -> dict[str, Any]:
        from runner.display import VirtualDisplay
        from runner.episode import run_episode

        w, h = spec.card.observation.width, spec.card.observation.height
        d = self.display
        if d is None or not d.alive() or (d.width, d.height) != (w, h):
            if d is not None:
                d.stop()
            self.display = VirtualDisplay(w, h).start()
        try:
            v = run_episode(spec, self.agent_factory(), self.out, self.display, coord_scale=self.coord_scale,
                            keeper=self.keeper)
        except BaseException:
            self.keeper.discard()
            raise
        return v.model_dump()

    def shutdown(self) -> None:
        self.keeper.close()
        if self.display is not None:
            self.display.stop()
            self.display = None


def run_ray(specs: list[EpisodeSpec], agent_factory: Callable[[], Any], out: Path, agent_name: str,
            workers: int = 2, address: str | None = None, coord_scale: str = "pixels",
            max_invalid_retries: int = 1, episode_timeout_s: float | None = None,
            max_crash_retries: int = DEFAULT_MAX_CRASH_RETRIES, progress: Progress | None = None,
            num_cpus_per_worker: float = 1.0, reuse: bool | None = None) -> list[Verdict]:
    """Run `specs` on `workers` Ray actors; verdicts in the order of `specs`. `reuse` as in
    runner.parallel.run_parallel (each actor resets its console in place between clean episodes).

    Uses the Ray runtime already initialized in this process if there is one, else connects to
    `address` (e.g. "auto" or "ray://head:10001") or starts a local one (and shuts it down after).
    """
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError, RayError

    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    book = RetryBook(specs, out, agent_name, max_invalid_retries, max_crash_retries,
                     progress or Progress(len(specs)))
    if not book.queue:
        return list(book.verdicts)  # type: ignore[arg-type]
    started_ray = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, include_dashboard=False)
        else:
            ray.init(num_cpus=max(workers, 1), include_dashboard=False)
        started_ray = True
    Actor = ray.remote(num_cpus=num_cpus_per_worker, max_restarts=0, max_task_retries=0)(EpisodeActor)

    def new_actor():
        return Actor.remote(agent_factory, str(out), coord_scale, reuse)

    n = max(1, min(workers, len(book.queue)))
    actors = [new_actor() for _ in range(n)]
    jobs: dict[int, tuple[Any, int, float]] = {}  # slot -> (ref, episode index, start time)
    try:
        while book.pending():
            for slot in range(n):
                if slot not in jobs and book.queue:
                    idx = book.queue.popleft()
                    jobs[slot] = (actors[slot].run.remote(specs[idx]), idx, time.monotonic())
            if not jobs:
                break
            refs = [j[0] for j in jobs.values()]
            ready, _ = ray.wait(refs, num_returns=1, timeout=WATCH_TICK_S)
            now = time.monotonic()
            for slot, (ref, idx, t0) in list(jobs.items()):
                if ref in ready:
                    del jobs[slot]
                    try:
                        payload = ray.get(ref)
                    except (RayActorError, RayError) as exc:
                        _replace(ray, actors, slot, new_actor)
                        book.crashed(idx, f"actor failed: {type(exc).__name__}: {str(exc)[:300]}")
                        continue
                    book.finished(idx, Verdict.model_validate(payload))
                    continue
                deadline = episode_timeout_s or episode_deadline_s(specs[idx])
                if now - t0 > deadline:
                    del jobs[slot]
                    _replace(ray, actors, slot, new_actor)
                    book.crashed(idx, f"episode exceeded its {deadline:.0f} s deadline (actor killed)")
    finally:
        for a in actors:
            try:
                ray.get(a.shutdown.remote(), timeout=20)
            except (GetTimeoutError, RayError):
                pass
            try:
                ray.kill(a, no_restart=True)
            except (RayError, ValueError):
                pass
        if started_ray:
            ray.shutdown()
    return list(book.verdicts)  # type: ignore[arg-type]


def _replace(ray, actors: list, slot: int, new_actor) -> None:
    try:
        ray.kill(actors[slot], no_restart=True)
    except Exception:  # noqa: BLE001 - already dead is fine
        pass
    actors[slot] = new_actor()
