"""Parallel runs: 1 worker vs 2 workers vs Ray give identical verdicts and byte-identical
screenshots, as does a fresh CLI runner process launching a console per episode beside a reused
console; hung/dead workers are killed (with their Xvfb and console) and their episode retried; INVALID is retried then kept."""
from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from runner.agents import make_agent
from runner.agents.base import AgentFault
from runner.parallel import RetryBook, _ours, descendants, pid_alive, run_parallel
from runner.run import Progress
from tasks.card import TaskCard
from tests.conftest import require_console

TASK = "ct_ui_smoke_routine"
TYPING_TASK = "ct_lung_coverage_isocenter"
# The hung first attempt costs the whole episode limit, so the hang tests set a short one: a retry (a new worker,
# its Xvfb and console, two steps) takes ~4 s alone and up to ~4x that under make test's 4 display workers on
# 2 cores; one slowed past the limit is retried again (HANG_RETRIES), so a loaded machine costs time, not the verdict.
HANG_TIMEOUT_S = 12.0
HANG_RETRIES = 3
KEYS = ("outcome", "sr", "pr", "aq", "steps", "rejected_steps", "termination", "stages", "details", "sim_seconds")


# ---- no display needed -----------------------------------------------------------------------

def _card() -> TaskCard:
    return TaskCard.model_validate({"id": "t_par", "version": "1", "modality": "ct", "level": 2,
                                    "title": "t", "goal": "Parallel test goal text.",
                                    "budgets": {"max_steps": 5}, "oracle": "x"})


def _v(spec, outcome: str):
    from runner.parallel import fault_verdict

    v = fault_verdict(spec, "a", "x")
    return v.model_copy(update={"outcome": outcome, "termination": "done"})


def test_retry_book_requeues_invalid_then_keeps_it_and_records_crashes(tmp_path):
    from runner.episode import EpisodeSpec
    from runner.results import episode_dir, is_finished

    specs = [EpisodeSpec(_card(), "dev", k) for k in range(3)]
    done = episode_dir(tmp_path, "a", "t_par", "dev", 2)
    done.mkdir(parents=True)
    (done / "verdict.json").write_text(_v(specs[2], "PASS").model_dump_json())
    book = RetryBook(specs, tmp_path, "a", max_invalid_retries=1, max_crash_retries=1,
                     progress=Progress(3, out=open(os.devnull, "w")))
    assert list(book.queue) == [0, 1] and book.verdicts[2].outcome == "PASS"  # finished: skipped
    book.queue.clear()
    invalid_dir = episode_dir(tmp_path, "a", "t_par", "dev", 0)
    invalid_dir.mkdir(parents=True)
    (invalid_dir / "verdict.json").write_text("{}")
    book.finished(0, _v(specs[0], "INVALID"))
    assert list(book.queue) == [0] and not invalid_dir.exists()  # the INVALID folder went first
    book.queue.clear()
    book.finished(0, _v(specs[0], "INVALID"))
    assert book.verdicts[0].outcome == "INVALID" and not book.queue  # out of retries: kept
    book.crashed(1, "boom")
    assert list(book.queue) == [1]
    book.queue.clear()
    book.crashed(1, "boom again")
    assert book.verdicts[1].outcome == "INVALID" and "boom again" in book.verdicts[1].reason
    assert is_finished(episode_dir(tmp_path, "a", "t_par", "dev", 1))
    assert not book.pending()


# ---- fault-injection agents (picklable: module level, state in marker files) ----------------

class FlakyAgent:
    """Says done after two waits, except on the first attempt of some seeds: hang, die or fault."""

    name = "flaky"

    def __init__(self, markers: str, plan: dict[int, str]) -> None:
        self.markers, self.plan = Path(markers), plan

    def reset(self, card, subject, seed) -> None:
        self.seed = seed
        mode = self.plan.get(seed, "ok")
        self.mode = "ok"
        attempt = self.markers / f"seed{seed}.attempt{len(list(self.markers.glob(f'seed{seed}.attempt*')))}"
        attempt.touch()
        if mode == "always_fault" or (mode != "ok" and attempt.name.endswith("attempt0")):
            self.mode = mode

    def act(self, obs) -> str:
        if obs.step == 1:
            if self.mode == "hang":
                threading.Event().wait()  # never returns: the watchdog must kill us
            if self.mode == "die":
                os._exit(7)
            if self.mode in ("fault", "always_fault"):
                raise AgentFault("injected fault")
        if obs.step >= 2:
            return json.dumps({"action": "done"})
        return json.dumps({"action": "wait", "seconds": 1})


def attempts(markers: Path, seed: int) -> int:
    return len(list(markers.glob(f"seed{seed}.attempt*")))


class ProcessWatcher:
    """Samples our descendants in the background: every Xvfb/console pid we ever started."""

    def __init__(self, root_pid: int | None = None) -> None:
        self.root = root_pid or os.getpid()
        # processes that were already running (e.g. the session display other tests share)
        self.baseline = {p for p in descendants(self.root) if _ours(p)}
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen |= {p for p in descendants(self.root) if _ours(p)} - self.baseline
            self._stop.wait(0.1)

    def __enter__(self) -> "ProcessWatcher":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()

    def leftovers(self, timeout_s: float = 20.0) -> list[int]:
        """Pids still alive once `timeout_s` has passed (returns as soon as none are)."""
        ev = threading.Event()
        for _ in range(int(timeout_s / 0.1)):
            alive = [p for p in self.seen if pid_alive(p) and _ours(p)]
            if not alive:
                return []
            ev.wait(0.1)
        return alive



def _specs(seeds, task: str = TASK):
    from runner.episode import EpisodeSpec
    from tasks.card import load_card

    return [EpisodeSpec(load_card(task), "dev", k) for k in seeds]


def _tree_ok(out: Path) -> None:
    """Every episode folder has exactly one complete verdict; no temp or partial files left."""
    assert not list(out.rglob("*.tmp-*")), list(out.rglob("*.tmp-*"))
    assert not list(out.rglob("*.part"))
    for seed_dir in out.glob("*/*/*/seed*"):
        assert (seed_dir / "verdict.json").is_file(), seed_dir


# ---- on the real console ---------------------------------------------------------------------

@pytest.mark.display
def test_hung_and_dead_workers_are_killed_and_their_episodes_retried(tmp_path):
    require_console()
    markers = tmp_path / "markers"
    markers.mkdir()
    factory = functools.partial(FlakyAgent, str(markers), {0: "hang", 1: "die"})
    with ProcessWatcher() as watch:
        vs = run_parallel(_specs([0, 1]), factory, tmp_path / "out", "flaky", workers=2,
                          episode_timeout_s=HANG_TIMEOUT_S, max_crash_retries=HANG_RETRIES,
                          progress=Progress(2, out=open(os.devnull, "w")))
    assert [v.termination for v in vs] == ["done", "done"], [v.reason for v in vs]
    assert all(v.outcome != "INVALID" for v in vs)
    # each first attempt was killed (hung) or died, and retried; a retry slowed past the episode limit by a
    # loaded machine is retried once more (seen under 4 display workers beside other tests)
    assert attempts(markers, 0) >= 2 and attempts(markers, 1) >= 2
    _tree_ok(tmp_path / "out")
    assert len(list((tmp_path / "out").glob("*/*/*/seed*"))) == 2
    assert len(watch.seen) >= 6  # 2 first displays + 2 replacement displays + >= 2 consoles each
    assert watch.leftovers() == []


@pytest.mark.display
def test_invalid_episodes_are_retried_then_recorded_invalid(tmp_path):
    require_console()
    markers = tmp_path / "markers"
    markers.mkdir()
    factory = functools.partial(FlakyAgent, str(markers), {0: "fault", 1: "always_fault"})
    with ProcessWatcher() as watch:
        vs = run_parallel(_specs([0, 1]), factory, tmp_path / "out", "flaky", workers=2,
                          max_invalid_retries=1, progress=Progress(2, out=open(os.devnull, "w")))
    assert vs[0].outcome != "INVALID" and vs[0].termination == "done"
    assert vs[1].outcome == "INVALID" and "injected fault" in vs[1].reason
    assert attempts(markers, 0) == 2 and attempts(markers, 1) == 2
    _tree_ok(tmp_path / "out")
    assert watch.leftovers() == []


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module (its start, 10-45 s, lands in the first Ray test's setup: those tests have
    a 180 s limit)."""
    require_console()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


_ONE: dict[str, tuple] = {}  # the one-worker run of this worker process, shared by the tests comparing with it


def _shared_dir(tmp_path_factory) -> Path:
    """A folder every xdist worker of this pytest run shares (the run's own temp root), else this process's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _one_worker_run(tmp_path_factory) -> tuple[list, Path]:
    """The reference on TYPING_TASK, seeds 0 and 1, in one worker in-process (the sequential path): the run the
    two-worker, the Ray and the CLI runs must reproduce. Run once per pytest run: the first test needing it
    runs it under a file lock, the others (on any xdist worker) wait for it and read it."""
    from runner.run import run_sequential
    from scoring.verdict import Verdict

    if "one" not in _ONE:
        shared = _shared_dir(tmp_path_factory) / "test_parallel_one_worker"
        shared.mkdir(exist_ok=True)
        out, record = shared / "out", shared / "verdicts.json"
        with open(shared / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
            if not record.is_file():
                verdicts = run_sequential(_specs([0, 1], TYPING_TASK), functools.partial(make_agent, "reference"),
                                          out, "reference")
                assert [v.outcome for v in verdicts] == ["PASS", "PASS"], [v.reason for v in verdicts]
                record.write_text(json.dumps([v.model_dump(mode="json") for v in verdicts]))
            verdicts = [Verdict.model_validate(v) for v in json.loads(record.read_text())]
        _ONE["one"] = (verdicts, out)
    return _ONE["one"]


def _same_as_one_worker(verdicts: list, out: Path, tmp_path_factory) -> None:
    one, one_out = _one_worker_run(tmp_path_factory)
    assert [{k: v.model_dump()[k] for k in KEYS} for v in verdicts] == \
           [{k: v.model_dump()[k] for k in KEYS} for v in one]
    _tree_ok(out)
    for k in (0, 1):
        rel = Path("reference") / TYPING_TASK / "dev" / f"seed{k}"
        assert _episode_bytes(out / rel) == _episode_bytes(one_out / rel), k


@pytest.mark.display
def test_one_worker_and_two_workers_give_identical_verdicts_and_screenshots(tmp_path, tmp_path_factory):
    # a task that types into numeric fields (their focus, selection and caret are in the pixels)
    require_console()
    with ProcessWatcher() as watch:
        _one_worker_run(tmp_path_factory)
        two = run_parallel(_specs([0, 1], TYPING_TASK), functools.partial(make_agent, "reference"), tmp_path / "two",
                           "reference", workers=2, progress=Progress(2, out=open(os.devnull, "w")))
    _same_as_one_worker(two, tmp_path / "two", tmp_path_factory)
    assert watch.leftovers() == []


@pytest.mark.display
@pytest.mark.timeout(180)
def test_one_worker_and_ray_give_identical_verdicts_and_screenshots(tmp_path, tmp_path_factory, local_ray):
    from runner.ray_backend import run_ray

    with ProcessWatcher() as watch:
        _one_worker_run(tmp_path_factory)
        on_ray = run_ray(_specs([0, 1], TYPING_TASK), functools.partial(make_agent, "reference"), tmp_path / "ray",
                         "reference", workers=2, progress=Progress(2, out=open(os.devnull, "w")))
    _same_as_one_worker(on_ray, tmp_path / "ray", tmp_path_factory)
    assert watch.leftovers() == []


def _episode_bytes(d: Path) -> dict[str, bytes]:
    """Every screenshot and the state dump of one episode folder, by name. The dump's record of how
    the console started (a fresh launch or a reset in place) is left out: which one a worker uses
    depends on how episodes fall to workers, and nothing else may."""
    files = {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.suffix == ".png"}
    assert "final.png" in files and "step_000.png" in files, sorted(files)
    state = json.loads((d / "state.json").read_text())
    assert state["provenance"].pop("console_start") in ("launch", "reset")
    files["state.json"] = json.dumps(state, sort_keys=True).encode()
    return files


@pytest.mark.display
def test_a_fresh_runner_process_without_console_reuse_gives_the_episodes_of_a_reused_console(tmp_path,
                                                                                              tmp_path_factory):
    """A CLI run in a fresh runner process launching a console per episode (--no-reuse) against the one-worker
    run of this process, whose second episode reset its console in place (the typing task: focus, selection
    and caret are in the pixels): every screenshot byte-identical, state dumps identical but for how the console
    started. (Resets after other tasks and pages are tests/runner/test_console_reset.py's.)"""
    require_console()
    _, one_out = _one_worker_run(tmp_path_factory)
    r = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--agent", "reference", "--tasks", TYPING_TASK,
                        "--subjects", "dev", "--seeds", "0,1", "--out", str(tmp_path / "fresh"), "--no-reuse"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    starts = {}
    for k in (0, 1):
        rel = Path("reference") / TYPING_TASK / "dev" / f"seed{k}"
        starts[k] = [json.loads((d / rel / "state.json").read_text())["provenance"]["console_start"]
                     for d in (one_out, tmp_path / "fresh")]
        a, b = _episode_bytes(one_out / rel), _episode_bytes(tmp_path / "fresh" / rel)
        assert a.keys() == b.keys() and len(a) > 10
        assert [n for n in a if a[n] != b[n]] == [], k
    # the reused console was reset for its second episode; --no-reuse launched one for each
    assert starts == {0: ["launch", "launch"], 1: ["reset", "launch"]}, starts


@pytest.mark.display
@pytest.mark.timeout(180)
def test_ray_kills_a_hung_actor_and_retries_its_episode(tmp_path, local_ray):
    from ray import cloudpickle

    from runner.ray_backend import run_ray

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # actors cannot import this test module
    markers = tmp_path / "markers"
    markers.mkdir()
    factory = functools.partial(FlakyAgent, str(markers), {0: "hang"})
    with ProcessWatcher() as watch:
        vs = run_ray(_specs([0]), factory, tmp_path / "out", "flaky", workers=1, episode_timeout_s=HANG_TIMEOUT_S,
                     max_crash_retries=HANG_RETRIES, progress=Progress(1, out=open(os.devnull, "w")))
    assert vs[0].termination == "done" and vs[0].outcome != "INVALID", vs[0].reason
    # the hung first attempt was killed and the episode retried; on a loaded machine a slow retry can hit the
    # episode limit too and be retried once more (seen under 4 display workers beside other jobs)
    assert attempts(markers, 0) >= 2
    _tree_ok(tmp_path / "out")
    assert watch.leftovers() == []
