"""What the image-formation benchmark scripts share: their command line, a timer of wall and CPU ms,
and how they record and print figures."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any, Callable

MIN_REPEATS = 10  # medians over at least this many runs


def parse_args(argv: list[str] | None, default_repeats: int) -> argparse.Namespace:
    """--subject (default dev), --repeats (>= MIN_REPEATS), --json."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--subject", default="dev")
    ap.add_argument("--repeats", type=int, default=default_repeats)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < MIN_REPEATS:
        ap.error(f"--repeats must be >= {MIN_REPEATS} (medians over at least {MIN_REPEATS} runs)")
    return args


def times_ms(fn: Callable[[int], Any], repeats: int, before: Callable[[], Any] | None = None
             ) -> tuple[list[float], list[float]]:
    """Wall and CPU (this process) milliseconds of `fn(i)` for i in range(repeats), `before()` untimed
    ahead of each: under load, CPU time shows our own cost."""
    wall, cpu = [], []
    for i in range(repeats):
        if before is not None:
            before()
        t, c = time.perf_counter(), time.process_time()
        fn(i)
        wall.append(1000 * (time.perf_counter() - t))
        cpu.append(1000 * (time.process_time() - c))
    return wall, cpu


def record(out: dict[str, Any], name: str, fn: Callable[[int], Any], repeats: int, tag: str = "") -> None:
    """Time `fn` and put `<name><tag>_median_ms`, `_min_ms` and `_median_cpu_ms` into `out`."""
    wall, cpu = times_ms(fn, repeats)
    out[f"{name}{tag}_median_ms"] = round(statistics.median(wall), 1)
    out[f"{name}{tag}_min_ms"] = round(min(wall), 1)
    out[f"{name}{tag}_median_cpu_ms"] = round(statistics.median(cpu), 1)


def report(out: dict[str, Any], args: argparse.Namespace, load_before: tuple[float, float, float],
           repeats: Any = None) -> int:
    """Add the repeats (`args.repeats` unless given) and the load average before/after (other processes
    share the cores), then print the figures as JSON (--json) or one per line."""
    out["repeats"] = args.repeats if repeats is None else repeats
    load_after = os.getloadavg()
    out["load_avg_1min_before_after"] = f"{load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} cores"
    if args.json:
        print(json.dumps(out))
    else:
        width = max(len(k) for k in out) + 2
        for k, v in out.items():
            print(f"{k:{width}s} {v}")
    return 0
