"""`medimageos tasks medians`: the cohort median of every number the reference types, per card, kept in
tasks/cohort_medians.json for the shortcut detector's constant-answer policy (issue 21: "type the cohort
median of each field").

The conformance test runs the detector on a 16-pair sample; the median it types must come from the whole
cohort (s01..s30 x seeds 0-2), which is 90 reference episodes per card: too slow for `make test`, so it is
made here once and checked by `make sweep` (`--check`), and each entry names the card and generator
versions it was made from, so a changed card fails the detector until its medians are made again.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from runner.headless.shortcut import (COHORT_MEDIANS_FILE, COHORT_PAIRS, cohort_medians_entry, reference_run)


def _card_entry(card_id: str) -> tuple[str, dict[str, Any]]:
    from rendering import memo
    from tasks.card import load_card

    card = load_card(card_id)
    with memo.enabled():
        runs = [reference_run(card, *p) for p in COHORT_PAIRS]
    return card_id, cohort_medians_entry(card, runs)


def cmd_tasks_medians(args) -> int:
    """Make (--write) or compare (--check) tasks/cohort_medians.json; print each card's medians."""
    from tasks.card import select_cards

    cards = [c for c in select_cards(args.tasks) if c.level >= 2]  # the detector's cards
    with ProcessPoolExecutor(args.workers) as ex:
        made = dict(ex.map(_card_entry, [c.id for c in cards]))
    try:
        shipped = json.loads(COHORT_MEDIANS_FILE.read_text())
    except FileNotFoundError:
        shipped = {}
    stale = [cid for cid in made if shipped.get(cid) != made[cid]]
    for cid, entry in made.items():
        mark = " (differs from the shipped entry)" if cid in stale else ""
        print(f"{cid}: {json.dumps(entry['medians'])}{mark}")
    if args.write:
        merged = {**shipped, **made}
        tmp = COHORT_MEDIANS_FILE.with_suffix(".json.tmp")  # written whole, then renamed: never half a file
        tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
        tmp.replace(COHORT_MEDIANS_FILE)
        print(f"wrote {COHORT_MEDIANS_FILE} ({len(made)} cards made, {len(merged)} in all)")
        return 0
    if stale:
        print(f"{COHORT_MEDIANS_FILE} is out of date for: {', '.join(stale)} "
              "(run `medimageos tasks medians --write`)", file=sys.stderr)
        return 1
    return 0


def add_parser(tsub) -> None:
    """Register `tasks medians` under the `tasks` command."""
    sp = tsub.add_parser("medians", help="the cohort median of every number the reference types, per card "
                         "(tasks/cohort_medians.json, the shortcut detector's constant answer)")
    sp.add_argument("--tasks", default="all")
    sp.add_argument("--workers", type=int, default=2)
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the made medians into the shipped file")
    mode.add_argument("--check", action="store_true", help="exit 1 when the shipped file differs (the default)")
    sp.set_defaults(fn=cmd_tasks_medians)
