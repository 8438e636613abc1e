"""What the image-formation benchmark scripts share: their command line and a timer of wall and CPU ms."""
from __future__ import annotations

import argparse
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
