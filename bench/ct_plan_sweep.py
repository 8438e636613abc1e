"""Display-free sweep: the reference plan run headless (runner/headless: CT, MR, US models), scored by the oracles.

    .venv/bin/python bench/ct_plan_sweep.py [--subjects cohort] [--seeds 0-2] [--tasks ct|mr|us|IDS]

Prints every non-PASS episode, the outcomes per task, and the headless speed (seconds per episode). The
conformance test (tests/test_conformance.py) asserts the same sweep; this script is for looking at numbers.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", default="cohort")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--tasks", default="ct")
    args = ap.parse_args(argv)
    from runner.headless import run_reference, score_initial
    from tasks.card import select_cards

    subs = [f"s{i:02d}" for i in range(1, 31)] if args.subjects == "cohort" else args.subjects.split(",")
    a, _, b = args.seeds.partition("-")
    seeds = range(int(a), int(b or a) + 1)
    counts: collections.Counter = collections.Counter()
    walls: list[float] = []
    bad = 0
    for card in select_cards(args.tasks):
        for sid in subs:
            for seed in seeds:
                run = run_reference(card, sid, seed)
                r = run.verdict
                walls.append(run.wall_s)
                counts[(card.id, r.outcome)] += 1
                if r.outcome != "PASS":
                    bad += 1
                    print(card.id, sid, seed, r.outcome, r.reason, flush=True)
                if score_initial(card, sid, seed).outcome == "PASS":
                    bad += 1
                    print(card.id, sid, seed, "the untouched start state PASSes", flush=True)
        print(card.id, {k[1]: v for k, v in counts.items() if k[0] == card.id}, flush=True)
    print(f"{len(walls)} episodes; headless seconds per episode: median {statistics.median(walls):.3f}, "
          f"mean {statistics.mean(walls):.3f}, max {max(walls):.3f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
