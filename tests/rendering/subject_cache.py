"""The subject cache the tests share with the CLI: the 31-subject cohort is built once per machine.

Bundles live where `medimageos subjects` and the consoles keep them (rendering.subjects.bundle.cache_root:
$MEDIMAGEOS_CACHE/subjects, else ~/.cache/medimageos/subjects), under the generator version, so a new
generator version builds a fresh set and an unchanged one is reused by every later test session. Bundles
are written to a temporary sibling and renamed into place, so concurrent sessions building the same
subject never see (or leave) a half-written bundle. MEDIMAGEOS_TEST_SUBJECT_CACHE points the tests at
another cache root (e.g. a CI cache directory).
"""
from __future__ import annotations

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
    """Point MEDIMAGEOS_CACHE at the shared cache and build whatever subjects it lacks (in 2 processes).

    `tmp_path_factory` is accepted for older callers and unused: the cache outlives the session."""
    base = cache_base()
    os.environ["MEDIMAGEOS_CACHE"] = str(base)
    missing = missing_subjects(base)
    if missing:
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
    from rendering.subjects.runtime import clear_memo
    clear_memo()
    return base
