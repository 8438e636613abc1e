"""Episodes per hour on this machine: an agent (default: reference) over a fixed set of tasks, 1 vs N workers.

    .venv/bin/python bench/bench_throughput.py [--workers 1,2] [--seeds 0-3] [--subjects dev]
                                               [--tasks ID,ID,...] [--agent reference] [--json]

The default task set is the 8 CT tasks of issue 14 by id (not `ct`), so figures stay comparable
when tasks are added.

Each worker count runs the same episodes into a fresh temp folder (nothing is skipped), through
runner.parallel.run_parallel (a worker process per display). Wall time includes worker start-up,
console launches and scoring; the verdicts of every worker count are checked to be identical.
"""
from __future__ import annotations

import argparse
import functools
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.agents import make_agent  # noqa: E402
from runner.cli import _seeds, _subjects  # noqa: E402
from runner.parallel import run_parallel  # noqa: E402
from runner.run import Progress, expand  # noqa: E402
from tasks.card import select_cards  # noqa: E402

KEYS = ("outcome", "sr", "pr", "aq", "steps", "details")
CT8 = ("ccta_heart_coverage_isocenter,ct_kub_low_dose_constraint,ct_liver_coverage_isocenter,"
       "ct_lung_coverage_isocenter,ct_renal_bilateral_coverage,ct_renal_undercoverage_recovery,"
       "ct_ui_smoke_routine,ct_undercoverage_recovery")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--seeds", default="0-3", type=_seeds)
    ap.add_argument("--subjects", default="dev")
    ap.add_argument("--tasks", default=CT8)
    ap.add_argument("--agent", default="reference")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    specs = expand(select_cards(args.tasks), _subjects(args.subjects), args.seeds)
    factory = functools.partial(make_agent, args.agent)
    name = factory().name
    rows, outcomes = [], {}
    for n in [int(x) for x in args.workers.split(",")]:
        with tempfile.TemporaryDirectory(prefix=f"bench-w{n}-") as tmp:
            t0 = time.perf_counter()
            vs = run_parallel(specs, factory, Path(tmp), name, workers=n, max_invalid_retries=0,
                              progress=Progress(len(specs), out=io.StringIO()))
            wall = time.perf_counter() - t0
        outcomes[n] = [{k: v.model_dump()[k] for k in KEYS} for v in vs]
        counts: dict[str, int] = {}
        for v in vs:
            counts[v.outcome] = counts.get(v.outcome, 0) + 1
        rows.append({"workers": n, "episodes": len(vs), "wall_s": round(wall, 1),
                     "episodes_per_hour": round(3600 * len(vs) / wall, 1),
                     "mean_episode_s": round(sum(v.wall_seconds for v in vs) / len(vs), 2),
                     "outcomes": counts})
    first = next(iter(outcomes.values()))
    same = all(o == first for o in outcomes.values())
    report = {"agent": name, "tasks": sorted({s.card.id for s in specs}), "subjects": args.subjects,
              "seeds": args.seeds, "cpus": os.cpu_count(), "identical_verdicts": same, "runs": rows}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"agent {name} on {len(specs)} episode(s) ({', '.join(report['tasks'])}; subjects {args.subjects}; "
              f"seeds {args.seeds}; {os.cpu_count()} CPUs)")
        for r in rows:
            print(f"  {r['workers']} worker(s): {r['episodes_per_hour']:7.1f} episodes/hour  "
                  f"(wall {r['wall_s']} s, mean episode {r['mean_episode_s']} s, {r['outcomes']})")
        print(f"  identical verdicts across worker counts: {same}")
        for n, o in outcomes.items():
            for spec, a, b in zip(specs, first, o):
                if a != b:
                    diff = {k: (a[k], b[k]) for k in KEYS if a[k] != b[k]}
                    print(f"  differs with {n} worker(s): {spec.card.id} {spec.subject} seed{spec.seed}: {diff}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
