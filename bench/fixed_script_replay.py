"""The skeptical reviewer's check of issue 21, in the GUI: record the reference on the public `dev` subject
(seed 0), then replay its receipts (the same clicks, drags and keystrokes, pixel for pixel) on cohort
subjects and seeds, and count PASS.

    .venv/bin/python bench/fixed_script_replay.py [--tasks IDS] [--subjects s01,s02,s03] [--seeds 0,1]
                                                   [--out results/fixed_script_replay] [--workers 1]

Prints one row per task (fixed-script PASS count and mean AQ) and the total. The headless version of the
same check (operations instead of pixels) is `medimageos tasks spread` and tests/test_shortcuts.py.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the 17 tasks of issue 21's table
ISSUE_TASKS = ("us_kidney_acquisition_optimization_v1,ct_lung_coverage_isocenter,ct_kub_low_dose_constraint,"
               "mr_renal_bilateral_geometry_planning_v2,us_kidney_long_axis_search_v1,L1_go_availability,"
               "mr_renal_acquisition_adequacy_v2,us_kidney_contact_vs_gain_v1,L5_sax_stack,ct_undercoverage_recovery,"
               "ct_renal_bilateral_coverage,mr_t1t2_mapping_from_boot,L3_coarse_4ch,L4_4ch,L4_fine_2ch,"
               "ct_liver_coverage_isocenter,ccta_heart_coverage_isocenter")


def _run(*args: str) -> None:
    cmd = [sys.executable, "-m", "runner.cli", "run", *args]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def _verdicts(out: Path, task: str) -> list[dict]:
    """Every episode's verdict.json of `task` under a results folder."""
    return [v for v in (json.loads(p.read_text()) for p in sorted(out.rglob("verdict.json"))) if v.get("task") == task]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=ISSUE_TASKS)
    ap.add_argument("--subjects", default="s01,s02,s03")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--out", default="results/fixed_script_replay")
    ap.add_argument("--workers", default="1")
    args = ap.parse_args(argv)
    out = ROOT / args.out
    total = passed = 0
    print(f"{'task':45s} {'fixed PASS':>10s} {'mean AQ':>8s}")
    for task in args.tasks.split(","):
        dev = out / "dev" / task
        _run("--agent", "reference", "--tasks", task, "--subjects", "dev", "--seeds", "0", "--out", str(dev))
        receipts = sorted(dev.rglob("receipts.jsonl"))
        if len(receipts) != 1:
            raise SystemExit(f"{task}: expected one dev receipts file under {dev}, found {len(receipts)}")
        rep = out / "replay" / task
        _run("--agent", "replay", "--from", str(receipts[0]), "--tasks", task, "--subjects", args.subjects,
             "--seeds", args.seeds, "--out", str(rep), "--workers", args.workers)
        scores = _verdicts(rep, task)
        n_pass = sum(s.get("outcome") == "PASS" for s in scores)
        aqs = [s["aq"] for s in scores if isinstance(s.get("aq"), (int, float))]
        total += len(scores)
        passed += n_pass
        aq = f"{sum(aqs) / len(aqs):.0f}" if aqs else "-"
        print(f"{task:45s} {n_pass:>4d}/{len(scores):<5d} {aq:>8s}", flush=True)
    print(f"{'total':45s} {passed:>4d}/{total:<5d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
