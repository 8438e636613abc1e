"""The same episodes on Ray: one actor per worker, each owning one Xvfb display for its lifetime.

The driver keeps the retry policy of the local backend (runner.parallel.RetryBook): an actor that
dies (RayActorError) or whose episode runs past its deadline is killed with ``ray.kill`` (its Xvfb
and console die with it through PR_SET_PDEATHSIG), replaced, and the episode is retried; INVALID
verdicts are retried up to `max_invalid_retries` times.

No shared filesystem is needed: `out` is only the driver's. An actor runs each episode into a scratch
folder of its own node, reads the finished folder back (screenshots, receipts, state, card, log, verdict)
and returns it with the verdict; the scratch copy is deleted. The driver writes the folder beside its final
place and renames it in (runner.results.publish), so `out` only ever holds complete episodes and a resumed
run skips exactly the delivered ones. A folder is written once: only an accepted verdict's folder is
written (an INVALID that will be retried is not), and an episode whose actor died (its node killed, say)
delivers nothing and is retried on another actor.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from runner import results
from runner.episode import EpisodeSpec
from runner.parallel import DEFAULT_MAX_CRASH_RETRIES, RetryBook, episode_deadline_s
from runner.run import Progress
from scoring.verdict import Verdict

WATCH_TICK_S = 1.0
# An actor that died on a node makes the node suspect for this long: its replacement is placed on another
# node. A node being lost (a worker container killed) is noticed by Ray's health checks only after several
# seconds; until then SPREAD would put the replacement right back on the dying node, which has the fewest
# actors, and the episode would spend a second retry there (seen: ActorUnavailableError, then ActorDiedError).
SUSPECT_NODE_S = 120.0
SCRATCH_PREFIX = "medimageos-actor-"  # + pid + random: an actor's scratch folder in the node's temp dir


class EpisodeActor:
    """Body of the Ray actor: runs episodes on its own display."""

    def __init__(self, agent_factory: Callable[[], Any], coord_scale: str, reuse: bool | None = None) -> None:
        from runner.console_process import ConsoleKeeper

        self.agent_factory, self.coord_scale = agent_factory, coord_scale
        # Scratch on this actor's own node; the driver's `out` may not exist here (no shared filesystem).
        # An actor killed (hung episode, lost driver) never deletes its own, so each new one removes those
        # of actors that are gone: the pid is in the name.
        _remove_dead_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        self.display = None
        self.keeper = ConsoleKeeper(reuse)  # the actor's console, reset in place between clean episodes

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(self, spec: EpisodeSpec) -> dict[str, Any]:
        from runner.display import VirtualDisplay
        from runner.episode import run_episode

        w, h = spec.card.observation.width, spec.card.observation.height
        d = self.display
        if d is None or not d.alive() or (d.width, d.height) != (w, h):
            if d is not None:
                d.stop()
            self.display = VirtualDisplay(w, h).start()
        agent = self.agent_factory()
        final = results.episode_dir(self.scratch, agent.name, spec.card.id, spec.subject, spec.seed)
        shutil.rmtree(final, ignore_errors=True)  # never a leftover of an earlier attempt on this actor
        try:
            v = run_episode(spec, agent, self.scratch, self.display, coord_scale=self.coord_scale,
                            keeper=self.keeper)
            files = read_episode_folder(final)
        except BaseException:
            self.keeper.discard()
            raise
        finally:
            shutil.rmtree(final, ignore_errors=True)
        return {"verdict": v.model_dump(), "files": files, "node": _node_name()}

    def shutdown(self) -> None:
        self.keeper.close()
        if self.display is not None:
            self.display.stop()
            self.display = None
        shutil.rmtree(self.scratch, ignore_errors=True)


def _remove_dead_scratch() -> None:
    for d in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = d.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


def _node_name() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def read_episode_folder(folder: Path) -> dict[str, bytes]:
    """Every file of a finished episode folder, by path relative to it (POSIX separators)."""
    if not (folder / "verdict.json").is_file():
        raise FileNotFoundError(f"episode folder {folder} has no verdict.json: not finished")
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def install_episode_folder(final: Path, files: dict[str, bytes]) -> None:
    """Write a shipped episode folder at `final` atomically: into a temporary sibling, then renamed in.

    Paths come from another machine, so each must stay inside the folder (no absolute path, no `..`)."""
    if "verdict.json" not in files:
        raise ValueError(f"shipped episode for {final} has no verdict.json")
    work = results.fresh_work_dir(final)
    try:
        for rel, data in files.items():
            pp = PurePosixPath(rel)
            if pp.is_absolute() or ".." in pp.parts or not pp.parts:
                raise ValueError(f"shipped episode for {final} has an unsafe path {rel!r}")
            dest = work.joinpath(*pp.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        results.publish(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


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
    # SPREAD: actors go to different nodes where there is room, so one node lost (a worker container
    # killed) takes as few running episodes with it as possible and its replacements land on nodes with
    # free CPUs; on one machine it changes nothing.
    Actor = ray.remote(num_cpus=num_cpus_per_worker, max_restarts=0, max_task_retries=0,
                       scheduling_strategy="SPREAD")(EpisodeActor)

    suspects: dict[str, float] = {}  # node id -> when an actor of ours died there
    where: list[Any] = []  # per slot: a ref to the node id of its actor

    def new_actor(slot: int):
        now = time.monotonic()
        avoid = {nid for nid, t in suspects.items() if now - t < SUSPECT_NODE_S}
        target = _other_node(ray, num_cpus_per_worker, avoid, [_resolved(ray, r) for r in where]) if avoid else None
        if target:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            actor = Actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(target, soft=True)).remote(
                agent_factory, coord_scale, reuse)
        else:
            actor = Actor.remote(agent_factory, coord_scale, reuse)
        ref = actor.node_id.remote()
        if slot < len(where):
            where[slot] = ref
        else:
            where.append(ref)
        return actor

    def replace(slot: int, died: bool) -> None:
        if died and (nid := _resolved(ray, where[slot])):
            suspects[nid] = time.monotonic()
        try:
            ray.kill(actors[slot], no_restart=True)
        except Exception:  # noqa: BLE001 - already dead is fine
            pass
        actors[slot] = new_actor(slot)

    shipped_bytes: list[int] = []

    n = max(1, min(workers, len(book.queue)))
    actors = [new_actor(slot) for slot in range(n)]
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
                        replace(slot, died=True)
                        book.crashed(idx, f"actor failed: {type(exc).__name__}: {str(exc)[:300]}")
                        continue
                    v = Verdict.model_validate(payload["verdict"])
                    if not (v.outcome == "INVALID" and book.invalid_tries[idx] < book.max_invalid):
                        # accepted: its folder is written now, once (a retried INVALID's never is)
                        s = specs[idx]
                        final = results.episode_dir(out, agent_name, s.card.id, s.subject, s.seed)
                        if results.is_finished(final, s.card.version):
                            raise RuntimeError(f"{final} was delivered twice (from {payload.get('node')}); "
                                               "an episode must be written exactly once")
                        install_episode_folder(final, payload["files"])
                        shipped_bytes.append(sum(len(b) for b in payload["files"].values()))
                    book.finished(idx, v)
                    continue
                deadline = episode_timeout_s or episode_deadline_s(specs[idx])
                if now - t0 > deadline:
                    del jobs[slot]
                    replace(slot, died=False)  # a hang is the episode's, not the node's
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
    if shipped_bytes:
        print(f"ray: {len(shipped_bytes)} episode folders shipped to {out}, "
              f"{sum(shipped_bytes) / len(shipped_bytes) / 1e6:.2f} MB each on average",
              file=book.progress.out, flush=True)
    return list(book.verdicts)  # type: ignore[arg-type]


def _resolved(ray, ref) -> str | None:
    """The value of an actor's node-id ref if it is already there (never waits), else None."""
    try:
        return ray.get(ref, timeout=0)
    except Exception:  # noqa: BLE001 - not ready, or its actor died before answering
        return None


def _other_node(ray, cpus: float, avoid: set[str], placed: list[str | None]) -> str | None:
    """An alive node not in `avoid` with at least `cpus` CPUs, the one with the fewest of our actors."""
    nodes = [nd["NodeID"] for nd in ray.nodes()
             if nd.get("Alive") and nd["NodeID"] not in avoid and nd.get("Resources", {}).get("CPU", 0) >= cpus]
    return min(nodes, key=placed.count) if nodes else None
