"""Benchmark MR image formation (no Qt): the 3-plane localizer and a 20-slice 256x256 series (median ms).

    .venv/bin/python bench/bench_mr.py [--subject dev] [--repeats 15] [--json]

Targets (issue 10): localizer (3 planes) <= 60 ms, 20-slice 256x256 series <= 200 ms, medians. The console's
localizer is now a stack of parallel slices per plane (issue 33: consoles/mr/protocols.py LOCALIZER_STACKS,
3 x 11 slices): "localizer" is that one; "localizer_1slice" the former single slice per plane (the issue 10
figure), for comparison; per slice the two cost the same.
"warm" runs reuse the cached signal volume of the sequence (what the console does for every series
after the first with the same contrast); "cold" includes computing it (first series of a contrast).
The series is a transverse-oblique T2 HASTE stack of 6 mm slices (3 sub-planes each), 360 mm FOV.
The machine's load average is printed: other processes share the cores, so compare medians with it.
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.timing import parse_args, record, report, times_ms  # noqa: E402


def main(argv=None) -> int:
    args = parse_args(argv, default_repeats=15)
    from rendering import mr_image as MI
    from rendering.mr_physics import PRESETS
    from rendering.subjects import load_runtime

    rt = load_runtime(args.subject)
    iso = (0.0, -120.0, -150.0)
    group = MI.SliceGroup.from_normal((0.0, -120.0, -250.0), (0.0, 0.25, 1.0), 10.0, fov_read_mm=360.0,
                                      fov_phase_mm=360.0, matrix_read=256, thickness_mm=6.0, gap_mm=1.0,
                                      n_slices=20)
    haste = PRESETS["t2_haste"]
    seeds = iter(range(10 ** 6))
    load0 = os.getloadavg()

    from consoles.mr.protocols import LOCALIZER_STACKS

    def localizer(_i=0):
        MI.acquire_localizer(rt, iso, seed=next(seeds), stacks=LOCALIZER_STACKS)

    def localizer_1slice(_i=0):
        MI.acquire_localizer(rt, iso, seed=next(seeds))

    def series(_i=0):
        MI.acquire_series(rt, group, haste, seed=next(seeds))

    out: dict[str, float | str] = {}
    localizer(), series()  # first call imports scipy.ndimage: not part of either figure
    out["localizer_cold_ms"] = round(statistics.median(times_ms(localizer, 3, MI.clear_cache)[0]), 1)
    out["series_cold_ms"] = round(statistics.median(times_ms(series, 3, MI.clear_cache)[0]), 1)
    localizer(), series()  # warm the caches
    for name, fn in (("localizer", localizer), ("localizer_1slice", localizer_1slice), ("series_20x256x256", series)):
        record(out, name, fn, args.repeats, "_warm")
    return report(out, args, load0)


if __name__ == "__main__":
    sys.exit(main())
