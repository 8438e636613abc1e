"""Benchmark cardiac mapping (no Qt): MOLLI 5(3)3 acquisition + fit of one slice and T2-prep acquisition +
fit (median ms), on the subject's mid-ventricular short-axis slice, 192 x 192, 8 mm.

    .venv/bin/python bench/bench_mapping.py [--subject dev] [--repeats 15] [--json]

Target (issue 12): each <= 150 ms median; the fit of a 192x192 map in about 100 ms.
"warm" runs reuse the Bloch simulation of the protocol (cached per protocol, heart rate and tissue set:
what the console does for every re-acquisition at the same heart rate); "cold" includes it (first map of
an episode). Each run uses a new noise seed. The machine's load average is printed: other processes share
the cores, so compare medians with it (CPU time shows this process's own cost).
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
    import numpy as np

    from rendering import mr_mapping as mm
    from rendering.geometry import PlanePose
    from rendering.mr_image import SliceGroup
    from scoring.subject_oracle import load_oracle

    orc = load_oracle(args.subject)  # only for the short-axis plane to time on
    rt = orc.runtime
    p = orc.reference_planes["sax"]
    group = SliceGroup(PlanePose.from_axes(p["centre"], p["row"], -p["col"]), fov_read_mm=340.0,
                       fov_phase_mm=340.0, matrix_read=192, thickness_mm=8.0)
    seeds = iter(range(10 ** 6))
    load0 = os.getloadavg()

    def t1map(_i=0):
        mm.acquire_t1_map(rt, group, "5(3)3", 60.0, seed=next(seeds))

    def t2map(_i=0):
        mm.acquire_t2_map(rt, group, heart_rate_bpm=60.0, seed=next(seeds))

    def clear():
        mm._sim_cache.clear()
        mm._truth_cache.clear()

    out: dict[str, float | str] = {}
    t1map(), t2map()  # imports and first-touch of the subject: not part of any figure
    out["t1_molli_cold_ms"] = round(statistics.median(times_ms(t1map, 3, clear)[0]), 1)
    out["t2_prep_cold_ms"] = round(statistics.median(times_ms(t2map, 3, clear)[0]), 1)
    t1map(), t2map()
    for name, fn in (("t1_molli_acq_fit", t1map), ("t2_prep_acq_fit", t2map)):
        record(out, name, fn, args.repeats, "_warm")
    s = mm.acquire_t1_map(rt, group, "5(3)3", 60.0, seed=0)
    y = np.stack([im.pixels for im in s.sources]).reshape(len(s.sources), -1).T.copy()
    floor = mm.NOISE_FLOOR_SIGMAS * s.noise_sigma
    wall, cpu = times_ms(lambda _i: mm.fit_molli(y, s.times_ms, floor=floor), args.repeats)
    out["molli_fit_only_192x192_median_ms"] = round(statistics.median(wall), 1)
    out["molli_fit_only_median_cpu_ms"] = round(statistics.median(cpu), 1)
    out["fitted_pixels"] = int((y.max(axis=1) > floor).sum())
    return report(out, args, load0)


if __name__ == "__main__":
    sys.exit(main())
