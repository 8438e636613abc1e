"""Benchmark digital subjects: build time of one subject, runtime-bundle load time, bundle size.

    .venv/bin/python bench/bench_subjects.py [--id s05] [--loads 9] [--json]

Builds into a temporary cache (MEDIMAGEOS_CACHE) so it measures a cold build; load time is
the median of several fresh reads of the runtime half (no in-process memo).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", default="s05")
    ap.add_argument("--loads", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MEDIMAGEOS_CACHE"] = tmp
        from rendering.subjects import runtime as R
        from rendering.subjects.bundle import ORACLE_FILES, RUNTIME_FILES, bundle_size_bytes
        t = time.perf_counter()
        d = R.build_procedural(args.id)
        build_s = time.perf_counter() - t
        loads = []
        for _ in range(args.loads):
            R.clear_memo()
            t = time.perf_counter()
            rt = R.load_runtime(args.id)
            loads.append(time.perf_counter() - t)
        t = time.perf_counter()
        from scoring.subject_oracle import load_oracle
        load_oracle(args.id)
        oracle_s = time.perf_counter() - t
        res = {"subject": args.id, "shape": list(rt.labels.shape), "build_s": round(build_s, 3),
               "generator_s": json.loads((d / "oracle.json").read_text())["stats"]["build_s"],
               "runtime_load_median_s": round(statistics.median(loads), 4), "runtime_load_max_s": round(max(loads), 4),
               "oracle_load_s": round(oracle_s, 3),
               "bundle_mb": round(bundle_size_bytes(d) / 1e6, 3),
               "runtime_half_mb": round(bundle_size_bytes(d, RUNTIME_FILES) / 1e6, 3),
               "oracle_half_mb": round(bundle_size_bytes(d, ORACLE_FILES) / 1e6, 3)}
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:>24}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
