"""Benchmark what makes the mapping cards' tests slow (issue 22, no Qt): one mapping acquisition as a card
check forms it, and one shortcut-detector card check (tests/test_shortcuts.py's `_check_card`), median ms.

    .venv/bin/python bench/bench_mapping_card.py [--subject dev] [--repeats 10] [--card mr_t1t2_mapping_staged]
                                                 [--card-repeats 3] [--json]

"acquisition": acquire_t1_map + fit of a 192 x 192 MOLLI map (5(3)3, 72 bpm, untriggered, so the heart
moves), each run on a slice shifted by a new 0.1 mm and with a new seed: what a card check meets, where
almost every map is of a new geometry (the console's, then the oracle's re-formed one from the dump), while
the Bloch simulation of a protocol timing is reused. "card": the detector on one card (17 reference runs,
their replays and the oracle), inside rendering.memo.enabled() as the test runs it; its CPU time is this
process's own (other processes share the cores: compare medians with the load average printed); each card
run starts from empty image-formation caches, as the first mapping card of a test process does.
Figures only: no test asserts a timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.timing import MIN_REPEATS, report, times_ms  # noqa: E402


def _clear_caches() -> None:
    """Empty the per-process image-formation caches (Bloch results, relaxation calibration, slice class
    weights, fit projectors, signal volumes), where they exist in this version of the code."""
    from rendering import mr_image as mi
    from rendering import mr_mapping as mm

    for name in ("_sim_cache", "_truth_cache", "_class_slices", "_projectors"):
        getattr(mm, name, {}).clear()
    mi.clear_cache()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subject", default="dev")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--card", default="mr_t1t2_mapping_staged")
    ap.add_argument("--card-repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < MIN_REPEATS:
        ap.error(f"--repeats must be >= {MIN_REPEATS}")
    from rendering import memo
    from rendering import mr_mapping as mm
    from rendering.geometry import PlanePose
    from rendering.mr_image import SliceGroup
    from scoring.subject_oracle import load_oracle
    from tasks.card import all_cards
    from tests.test_shortcuts import _check_card

    orc = load_oracle(args.subject)  # only for the short-axis plane to time on
    p = orc.reference_planes["sax"]
    pose = PlanePose.from_axes(p["centre"], p["row"], [-x for x in p["col"]])
    load0 = os.getloadavg()

    def t1map(i: int) -> None:
        group = SliceGroup(pose.translated(0.1 * (i + 1) * pose.normal), fov_read_mm=340.0, fov_phase_mm=340.0,
                           matrix_read=192, thickness_mm=8.0)
        mm.acquire_t1_map(orc.runtime, group, "5(3)3", 72.0, trigger="none", seed=i)

    t1map(-1)  # imports, the subject's first touch and the protocol's Bloch simulation: in no figure
    out: dict[str, object] = {}
    wall, cpu = times_ms(t1map, args.repeats)
    out["t1_map_new_slice_median_ms"] = round(statistics.median(wall), 1)
    out["t1_map_new_slice_median_cpu_ms"] = round(statistics.median(cpu), 1)

    card = {c.id: c for c in all_cards()}[args.card]
    walls, cpus = [], []
    for _ in range(args.card_repeats):
        _clear_caches()  # every run as the first mapping card of a test process
        t, c = time.perf_counter(), time.process_time()
        with memo.enabled():
            _check_card(card)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[f"card_{args.card}_median_s"] = round(statistics.median(walls), 2)
    out[f"card_{args.card}_median_cpu_s"] = round(statistics.median(cpus), 2)
    return report(out, args, load0, repeats=f"{args.repeats} maps, {args.card_repeats} cards")

if __name__ == "__main__":
    sys.exit(main())
