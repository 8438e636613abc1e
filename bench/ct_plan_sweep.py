"""Display-free sweep: the reference solver's plans, executed on CTModel, scored by the oracles.

    .venv/bin/python bench/ct_plan_sweep.py [--subjects cohort] [--seeds 0-2]

Checks every CT task's reference targets (range, table height, mAs, monitoring slice and ROI, recovery
range) on every subject and seed in seconds per subject, without Xvfb; the GUI run
(`medimageos run --agent reference --tasks ct --subjects cohort --seeds 0-2`) remains the acceptance test.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run_one(card, sid, seed):
    from consoles.ct.model import CTModel
    from rendering.subjects import load_runtime
    from runner.agents.reference.ct import CTReferenceSolver
    from scoring.oracles import get_oracle

    sol = CTReferenceSolver(card, sid)
    m = CTModel(load_runtime(sid), card.id, seed, card.initial_state, card.perturbations)
    t = [0.0]

    def adv(dt):
        m.on_clock(t[0], t[0] + dt)
        t[0] += dt

    plan = sol.plan
    if plan.get("recovery"):
        m.open_recon(0)
    else:
        m.load_protocol(plan["protocol"])
        m.acquire_scout()
        adv(5)
    st = m.state()
    s, e = sol.target_range(st)
    m.set_range(s, e)
    m.set_range(s, e)
    h = sol.target_table_height()
    if h is not None:
        m.set_table_height(h)
    mas = sol.target_mas(m.state())
    if mas is not None:
        m.set_param("mas", mas)
    m.confirm()
    if plan.get("bolus"):
        st = m.state()
        mz, x, y = sol.monitor_target(st)
        m.set_monitor_z(mz)
        m.acquire_monitor_reference()
        m.set_roi(x, y)
        m.start_bolus_tracking()
        while not [x for x in m.series if not x.prior] and t[0] < 200:
            adv(3)
    else:
        m.scan()
        while m.scan_status != "idle":
            adv(3)
    m.open_recon()
    st = m.state()
    return get_oracle(card.oracle)(st, sol.oracle, card)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", default="cohort")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--tasks", default="ct")
    args = ap.parse_args(argv)
    from runner.taskcard import select_cards

    subs = [f"s{i:02d}" for i in range(1, 31)] if args.subjects == "cohort" else args.subjects.split(",")
    a, _, b = args.seeds.partition("-")
    seeds = range(int(a), int(b or a) + 1)
    counts = collections.Counter()
    for card in select_cards(args.tasks):
        if card.id == "ct_ui_smoke_routine":
            continue
        for sid in subs:
            for seed in seeds:
                r = run_one(card, sid, seed)
                counts[(card.id, r.outcome)] += 1
                if r.outcome != "PASS":
                    print(card.id, sid, seed, r.outcome, r.reason, flush=True)
        print(card.id, {k[1]: v for k, v in counts.items() if k[0] == card.id}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
