"""The subject cache the tests share with the CLI: the 31-subject cohort is built once per machine.

Bundles live where `medimageos subjects` and the consoles keep them (rendering.subjects.bundle.cache_root:
$MEDIMAGEOS_CACHE/subjects, else ~/.cache/medimageos/subjects), under the generator version, so a new
generator version builds a fresh set and an unchanged one is reused by every later test session. Bundles
are written to a temporary sibling and renamed into place, so concurrent sessions building the same
subject never see (or leave) a half-written bundle. A file lock around the build makes the first
test process build the missing subjects (in 2 processes) while every other one waits for it, so an
empty cache costs one build, not one per pytest-xdist worker (4 builders on 2 cores did, before).
MEDIMAGEOS_TEST_SUBJECT_CACHE points the tests at another cache root (e.g. a CI cache directory);
tests/conftest.py sets MEDIMAGEOS_CACHE to it once per session and restores it at the end.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ALL_IDS = ["dev"] + [f"s{i:02d}" for i in range(1, 31)]
COHORT = ALL_IDS[1:]
ROOT = Path(__file__).resolve().parents[2]
BUILD_PROCESSES = 2  # CI has 2 cores


def cache_base() -> Path:
    """The MEDIMAGEOS_CACHE-style base directory the tests use (its `subjects/` holds the bundles)."""
    override = os.environ.get("MEDIMAGEOS_TEST_SUBJECT_CACHE")
    if override:
        return Path(override).expanduser()
    from rendering.subjects.bundle import cache_root

    return cache_root().parent


def missing_subjects(base: Path, ids: list[str] = ALL_IDS) -> list[str]:
    """Procedural subjects of the current generator version not yet built under `base`."""
    from rendering.subjects.version import GENERATOR_VERSION

    return [s for s in ids if not (base / "subjects" / GENERATOR_VERSION / s / "runtime.json").exists()]


def session_cache(tmp_path_factory=None) -> Path:
    """Build whatever subjects the shared cache lacks (in 2 processes, one test process at a time).

    `tmp_path_factory` is accepted for older callers and unused: the cache outlives the session."""
    base = cache_base()
    if missing_subjects(base):
        base.mkdir(parents=True, exist_ok=True)
        with open(base / ".subject-build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
            missing = missing_subjects(base)  # what another process built while this one waited is done
            if missing:
                _build(base, missing)
    from rendering.subjects.runtime import clear_memo
    clear_memo()
    return base


def _build(base: Path, missing: list[str]) -> None:
    env = dict(os.environ, MEDIMAGEOS_CACHE=str(base))
    env.pop("MEDIMAGEOS_ROLE", None)
    chunks = [missing[i::BUILD_PROCESSES] for i in range(BUILD_PROCESSES)]

    def run(ids: list[str]) -> None:
        if ids:
            r = subprocess.run([sys.executable, "-m", "rendering.subjects", "build", *ids], env=env, cwd=ROOT,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"building subjects {ids} failed:\n{r.stderr[-2000:]}")
    with ThreadPoolExecutor(BUILD_PROCESSES) as ex:
        list(ex.map(run, chunks))
