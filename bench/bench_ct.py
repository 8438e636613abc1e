"""Benchmark the CT simulator (no Qt): scout render, one helical acquisition, one bolus-monitoring step.

    .venv/bin/python bench/bench_ct.py [--subject dev] [--repeats 7] [--json]

Targets (issue 4): scout <= 50 ms, full helical acquisition of a planned stack <= 1 s, bolus step <= 50 ms.
"scout" is both views (AP + lateral) with noise and the water-equivalent diameter; "helical" is the
routine chest (5 mm) and the CCTA stack (0.75 mm, enhanced per image time); medians over repeats.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(1000 * statistics.median(times), 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subject", default="dev")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from consoles.ct.model import CTModel
    from rendering.subjects import load_runtime

    rt = load_runtime(args.subject)
    m = CTModel(rt, "bench", 0)
    m.load_protocol("chest_routine")
    t = time.perf_counter()
    m._finish_scout()  # first scout: attenuation volume + both line integrals (cached per console)
    out = {"scout_first_ms": round(1000 * (time.perf_counter() - t), 1),
           "scout_ms": _median_ms(m._finish_scout, args.repeats)}

    m.set_range(30, -290)

    def chest():
        m.scan_t_start = m.t
        m._finish_scan()
    out["helical_chest_5mm_ms"] = _median_ms(chest, args.repeats)
    out["chest_images"] = m.series[-1].n_images

    c = CTModel(rt, "bench", 0)
    c.load_protocol("ccta")
    c._finish_scout()
    c.set_range(-30, -165)
    c.set_monitor_z(-65)
    c.acquire_monitor_reference()
    c.set_roi(30.0, -85.0)
    c.confirm()
    c.start_bolus_tracking()
    c.t = c.t_injection + 20.0

    def ccta():
        c.scan_t_start = c.t
        c._finish_scan()
    out["helical_ccta_0.75mm_enhanced_ms"] = _median_ms(ccta, args.repeats)
    out["ccta_images"] = c.series[-1].n_images

    def step():
        c.bolus.status = "monitoring"
        c.bolus._monitor_step()
    out["bolus_monitor_step_ms"] = _median_ms(step, args.repeats)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:34s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
