"""`medimageos compare A B`: the paired difference of two agents' results on their common episodes.

An episode is common when both folders finished it (same task, subject and seed, same task version) and
neither side is INVALID (an environment or scorer fault says nothing about the agent; `score` leaves such
episodes out of every denominator too). On the common episodes the difference A - B of SR, PR, AQ and
the weighted score gets a paired cluster-bootstrap interval: one draw of subjects per resample serves both
agents (scoring.intervals.paired_difference), so what a subject makes easy or hard cancels out.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from scoring.aggregate import scan_results
from scoring.intervals import Bootstrap, paired_difference
from scoring.verdict import Verdict

Key = tuple[str, str, int]  # (task, subject, seed)
DROP_REASONS = ("only_in_a", "only_in_b", "invalid_in_a", "invalid_in_b", "task_version_differs")


def _agent_verdicts(root: Path, agent: str | None, which: str) -> tuple[str, list[Verdict]]:
    """The verdicts of one agent of a results folder (the only one, or the one named)."""
    if not Path(root).is_dir():
        raise ValueError(f"results folder {which} {root} does not exist")
    verdicts = scan_results(root).verdicts
    agents = sorted({v.agent for v in verdicts})
    if agent is None:
        if len(agents) != 1:
            raise ValueError(f"results folder {which} {root} holds {len(agents)} agents {agents}: "
                             f"name one with --agent-{which.lower()}")
        agent = agents[0]
    elif agent not in agents:
        raise ValueError(f"results folder {which} {root} has no agent {agent!r} (it has {agents})")
    return agent, [v for v in verdicts if v.agent == agent]


def pair_episodes(a: Sequence[Verdict], b: Sequence[Verdict]) -> tuple[list[Verdict], list[Verdict],
                                                                          dict[str, list[Key]]]:
    """Match A's and B's episodes on (task, subject, seed): the paired lists (sorted by key) and, per
    reason of DROP_REASONS, the keys left out."""
    by_a = {(v.task, v.subject, v.seed): v for v in a}
    by_b = {(v.task, v.subject, v.seed): v for v in b}
    dropped: dict[str, list[Key]] = {r: [] for r in DROP_REASONS}
    dropped["only_in_a"] = sorted(set(by_a) - set(by_b))
    dropped["only_in_b"] = sorted(set(by_b) - set(by_a))
    pa, pb = [], []
    for key in sorted(set(by_a) & set(by_b)):
        va, vb = by_a[key], by_b[key]
        if va.task_version != vb.task_version:
            dropped["task_version_differs"].append(key)
        elif va.outcome == "INVALID" or vb.outcome == "INVALID":
            if va.outcome == "INVALID":
                dropped["invalid_in_a"].append(key)
            if vb.outcome == "INVALID":
                dropped["invalid_in_b"].append(key)
        else:
            pa.append(va)
            pb.append(vb)
    return pa, pb, dropped


def compare(dir_a: Path | str, dir_b: Path | str, agent_a: str | None = None, agent_b: str | None = None,
            cards: Sequence[Any] | None = None, boot: Bootstrap | None = None) -> dict[str, Any]:
    """The comparison as a JSON-ready dict: agents, common and dropped episodes, the bootstrap's method and
    the paired differences (overall and per modality). `cards` (default: every shipped card) define the
    weighted score, as in `medimageos score`."""
    if cards is None:
        from tasks.card import all_cards

        cards = list(all_cards())
    boot = boot or Bootstrap()
    name_a, va = _agent_verdicts(Path(dir_a), agent_a, "A")
    name_b, vb = _agent_verdicts(Path(dir_b), agent_b, "B")
    pa, pb, dropped = pair_episodes(va, vb)
    if not pa:
        raise ValueError(f"{name_a} ({dir_a}) and {name_b} ({dir_b}) have no common valid episode "
                         f"(same task, subject and seed): nothing to compare")
    diff = paired_difference(pa, pb, {c.id: (c.modality, c.level) for c in cards}, boot)
    return {"a": {"dir": str(dir_a), "agent": name_a, "episodes": len(va)},
            "b": {"dir": str(dir_b), "agent": name_b, "episodes": len(vb)},
            "common_episodes": len(pa), "common_subjects": diff["n_subjects"],
            "dropped": {r: [list(k) for k in keys] for r, keys in dropped.items()},
            "intervals": {**boot.method(), "paired": "one draw of subjects per resample for both agents"},
            "score_tasks": len(cards), "overall": diff["overall"], "by_modality": diff["by_modality"]}


def _cell(x: float | None, signed: bool = False) -> str:
    return "–" if x is None else (f"{x:+.1f}" if signed else f"{x:.1f}")


def render_text(result: dict[str, Any], max_listed: int = 10) -> str:
    """The comparison as a table with the common and dropped episodes above it."""
    a, b = result["a"], result["b"]
    m = result["intervals"]
    lines = [f"A: {a['agent']} ({a['dir']}, {a['episodes']} finished episodes)",
             f"B: {b['agent']} ({b['dir']}, {b['episodes']} finished episodes)",
             f"common episodes (same task, subject, seed; both valid): {result['common_episodes']} "
             f"over {result['common_subjects']} subjects"]
    for reason, keys in result["dropped"].items():
        if keys:
            shown = ", ".join(f"{t}/{s}/seed{k}" for t, s, k in keys[:max_listed])
            more = f" (+{len(keys) - max_listed} more)" if len(keys) > max_listed else ""
            lines.append(f"dropped, {reason.replace('_', ' ')}: {len(keys)}: {shown}{more}")
    lines.append(f"intervals: paired {m['method']} over {m['resampling_unit']}s, {m['resamples']} resamples, "
                 f"seed {m['seed']}, {100 * m['confidence']:g} % {m['interval']}; score over "
                 f"{result['score_tasks']} task cards (tasks without common episodes count 0 for both)")
    lines += ["", "| group | metric | A | B | A - B | 95 % CI of A - B |", "|---|---|---|---|---|---|"]
    groups = [("overall", result["overall"])] + [(mod.upper(), g) for mod, g in result["by_modality"].items()]
    for name, g in groups:
        for metric in ("score", "sr", "pr", "aq"):
            if metric not in g:
                continue
            d = g[metric]
            ci = "–" if d["lo"] is None else f"[{d['lo']:+.1f}, {d['hi']:+.1f}]" + (
                " (degenerate: one subject)" if d["degenerate"] else "")
            lines.append(f"| {name} | {metric.upper()} | {_cell(d['a'])} | {_cell(d['b'])} | "
                         f"{_cell(d['diff'], True)} | {ci} |")
    return "\n".join(lines)


def cmd_compare(args) -> int:
    """Print the paired comparison (text or --json); with --out also write it as JSON."""
    result = compare(args.a, args.b, args.agent_a, args.agent_b,
                     boot=Bootstrap(resamples=args.resamples, seed=args.seed))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2) if args.json else render_text(result))
    if result["common_episodes"] < max(result["a"]["episodes"], result["b"]["episodes"]):
        print(f"note: only {result['common_episodes']} episodes are common; the differences hold for those "
              "alone", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """Register `compare` under the top-level commands."""
    from scoring.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED

    cp = sub.add_parser("compare", help="paired difference A - B of two results folders on their common "
                        "episodes, with a paired subject-bootstrap interval")
    cp.add_argument("a", help="results folder of agent A")
    cp.add_argument("b", help="results folder of agent B (may be the same folder as A, with --agent-a/-b)")
    cp.add_argument("--agent-a", default=None, help="the agent of A when its folder holds several")
    cp.add_argument("--agent-b", default=None, help="the agent of B when its folder holds several")
    cp.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    cp.add_argument("--seed", type=int, default=DEFAULT_SEED)
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.add_argument("--out", default=None, help="also write the JSON to this path")
    cp.set_defaults(fn=cmd_compare)
