"""Shared session cache for subject tests: the cohort is built once per test session."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ALL_IDS = ["dev"] + [f"s{i:02d}" for i in range(1, 31)]
ROOT = Path(__file__).resolve().parents[2]


def session_cache(tmp_path_factory) -> Path:
    """MEDIMAGEOS_CACHE for the session (set in os.environ), with every subject built."""
    # MEDIMAGEOS_TEST_SUBJECT_CACHE reuses a cache across sessions (it is rebuilt per generator version)
    reuse = os.environ.get("MEDIMAGEOS_TEST_SUBJECT_CACHE")
    base = Path(reuse) if reuse else tmp_path_factory.getbasetemp() / "medimageos-subject-cache"
    os.environ["MEDIMAGEOS_CACHE"] = str(base)
    from rendering.subjects.generator import GENERATOR_VERSION
    missing = [s for s in ALL_IDS if not (base / "subjects" / GENERATOR_VERSION / s / "runtime.json").exists()]
    if missing:
        env = dict(os.environ, MEDIMAGEOS_CACHE=str(base))
        env.pop("MEDIMAGEOS_ROLE", None)
        chunks = [missing[i::2] for i in range(2)]   # two build processes (CI has 2 cores)

        def run(ids):
            if ids:
                subprocess.run([sys.executable, "-m", "rendering.subjects", "build", *ids], env=env, cwd=ROOT,
                               check=True, capture_output=True, text=True)
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(run, chunks))
    from rendering.subjects.runtime import clear_memo
    clear_memo()
    return base
