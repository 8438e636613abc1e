"""`medimageos tasks spread`: how far each task's correct answer moves with subject and seed, against the
oracle's tolerance, and how two screen-blind policies (dev's replayed script, constant typed answers) fare.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from runner.headless.shortcut import (DEV, SAMPLE_PAIRS, Answer, answers, is_judgement, max_constant_pass_rate,
                                      max_fixed_pass_rate, reference_run, shortcut_result, spread, typed_medians)

COHORT = [f"s{i:02d}" for i in range(1, 31)]


def _card_answers(args: tuple[str, list[tuple[str, int]], bool]) -> tuple[str, dict, Any, Any]:
    """Reference answers of one card on every pair, and its shortcut result on the fixed sample (the constant
    answer types the median over every pair of the table: the cohort's, by default); with `on_all`, the same
    two policies replayed on every pair of the table too (None otherwise)."""
    from tasks.card import load_card

    from rendering import memo

    card_id, pairs, on_all = args
    card = load_card(card_id)
    with memo.enabled():
        runs = {p: reference_run(card, *p) for p in pairs}
        per = {p: answers(card, r) for p, r in runs.items()}
        dev_run = reference_run(card, *DEV)
        medians = typed_medians(runs.values())
        sample_runs = {p: runs.get(p) or reference_run(card, *p) for p in SAMPLE_PAIRS}
        result = shortcut_result(card, SAMPLE_PAIRS, sample_runs, dev_run, medians=medians)
        over_all = shortcut_result(card, pairs, runs, dev_run, medians=medians) if on_all else None
        return card_id, {"episodes": per, "dev": answers(card, dev_run)}, result, over_all


def _fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


def cmd_tasks_spread(args) -> int:
    """Print the spread table (one row per task); exit 1 when a task fails its validity bounds."""
    from tasks.card import select_cards

    cards = [c for c in select_cards(args.tasks) if c.level >= 2]  # L0-L1 tasks have no answer to spread
    if not cards:
        print(f"no task at L2 or above among {args.tasks!r}", file=sys.stderr)
        return 2
    seeds = [int(s) for s in args.seeds.split(",")]
    subjects = COHORT if args.subjects == "cohort" else args.subjects.split(",")
    pairs = [(s, k) for s in subjects for k in seeds]
    jobs = [(c.id, pairs, args.replay_all) for c in cards]
    rows, bad = [], []
    with ProcessPoolExecutor(args.workers) as ex:
        results = {cid: (a, sr, al) for cid, a, sr, al in ex.map(_card_answers, jobs)}
    for card in cards:
        a, sr, over_all = results[card.id]
        parts = spread(a["episodes"], a["dev"])
        judgement = is_judgement(card, list(a["episodes"].values()))
        ratios = [p.ratio for p in parts if p.ratio is not None]
        worst = min(ratios) if ratios else None
        limit = max_fixed_pass_rate(card, judgement)
        ok = sr.fixed_rate() <= limit and (sr.constant_rate() or 0.0) <= max_constant_pass_rate(card, judgement)
        if card.level >= 3 and not judgement:
            ok = ok and worst is not None and worst >= 2.0
        if judgement:
            ok = ok and all((p.majority_share or 0) <= 0.5 + 1e-9 and not p.dev_is_majority for p in parts)
        if not ok:
            bad.append(card.id)
        rows.append({"task": card.id, "level": card.level, "judgement": judgement, "parts": [
            {"name": p.name, "spread": p.spread, "tolerance": p.tolerance, "ratio": p.ratio,
             "majority_share": p.majority_share, "one_answer_subjects": p.one_answer_subjects,
             "dev_is_majority": p.dev_is_majority} for p in parts],
            "min_ratio": worst, "fixed_script_passes": len(sr.fixed_passes),
            "constant_answer_passes": None if sr.constant_passes is None else len(sr.constant_passes),
            "sample": sr.pairs, "ok": ok,
            # the same policies over every episode of the table (--replay-all): the chance rate itself, which
            # the 16-pair sample only estimates
            "fixed_script_passes_all": None if over_all is None else len(over_all.fixed_passes),
            "constant_answer_passes_all": None if over_all is None or over_all.constant_passes is None
            else len(over_all.constant_passes), "episodes": len(pairs)})
    if args.json_out:  # the rows kept for later, whichever way they are printed
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(rows, indent=2) + "\n")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"episodes per task: {len(pairs)} (subjects {len(subjects)} x seeds {seeds}); "
              f"shortcut sample: {len(SAMPLE_PAIRS)} pairs")
        every = f" | fixed script, all {len(pairs)} | constant, all {len(pairs)}" if args.replay_all else ""
        print(f"| task | L | answer parts: spread / tolerance (p5-p95) | min | fixed script | constant{every} |")
        print("|---|---|---|---|---|---|" + ("---|---|" if args.replay_all else ""))
        for r in rows:
            if r["judgement"]:
                desc = "; ".join(f"{p['name']}: majority {p['majority_share']:.0%}, dev majority "
                                 f"{'yes' if p['dev_is_majority'] else 'no'}" for p in r["parts"])
            else:
                desc = "; ".join(f"{p['name']} {p['spread']:.1f}/{p['tolerance']:g} = {_fmt_ratio(p['ratio'])}"
                                 if p["tolerance"] else f"{p['name']}: {p['majority_share']:.0%} one choice"
                                 for p in r["parts"]) or "(no answer parts)"
            const = "-" if r["constant_answer_passes"] is None else f"{r['constant_answer_passes']}/{r['sample']}"
            mark = "" if r["ok"] else " **over bound**"
            tail = ""
            if args.replay_all:
                n, ca = r["episodes"], r["constant_answer_passes_all"]
                tail = f" {r['fixed_script_passes_all']}/{n} | {'-' if ca is None else f'{ca}/{n}'} |"
            print(f"| {r['task']} | L{r['level']} | {desc} | {_fmt_ratio(r['min_ratio'])} | "
                  f"{r['fixed_script_passes']}/{r['sample']} | {const}{mark} |{tail}")
    if bad:
        print(f"tasks over their validity bounds: {', '.join(bad)}")
    return 1 if bad else 0


def add_parser(tsub) -> None:
    """Register `tasks spread` under the `tasks` command."""
    sp = tsub.add_parser("spread", help="how far each task's answer moves with subject and seed, against its "
                         "tolerance; dev's replayed script and constant typed answers on a fixed sample")
    sp.add_argument("--tasks", default="all")
    sp.add_argument("--subjects", default="cohort")
    sp.add_argument("--seeds", default="0,1,2")
    sp.add_argument("--workers", type=int, default=2)
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--json-out", metavar="PATH", help="also write the rows as JSON to PATH")
    sp.add_argument("--replay-all", action="store_true",
                    help="also replay the two screen-blind policies on every episode of the table (their cohort "
                    "pass rate, not only the fixed sample's; about twice the run time)")
    sp.set_defaults(fn=cmd_tasks_spread)
