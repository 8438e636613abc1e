"""`medimageos baselines`: the blind baselines over a selection, each written as an agent's results folder.

Four policies that never look at the screen, so that a model's score can be read against them
(`medimageos score`/`report` show them beside any model; `report DIR --baselines OUT` when they live apart):

- `baseline-noop`: waits one second every step until the step budget ends (runner.agents.simple.NoopAgent);
- `baseline-fixed-script`: the reference's operations on the public `dev` subject, seed 0, replayed verbatim
  (runner.headless.shortcut: the detector of `medimageos tasks spread`);
- `baseline-constant-answer`: the same script with every typed number replaced by its cohort median
  (tasks/cohort_medians.json, made by `medimageos tasks medians --write` for L2+ cards);
- `baseline-random`: uniformly random allowed actions (runner.agents.simple.RandomAgent).

The first three run headless (the consoles' pure models, scored by the card's oracle; no display, no Qt),
as the shortcut detector runs them. The random agent's actions are screen pixels, which only the GUI
interprets: it runs through `medimageos run` on an Xvfb display, and only when asked (`--include random`).
"""
from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from runner.agents.simple import RandomAgent

HEADLESS = ("noop", "fixed-script", "constant-answer")
GUI = ("random",)
BASELINES = HEADLESS + GUI
DEFAULT_INCLUDE = HEADLESS  # the random agent needs a display and the full step budget per episode
NOOP_WAIT_S = 1.0  # NoopAgent's wait per step
PATHS = {"noop": "headless (console model: one 1 s wait per step of the budget)",
         "fixed-script": "headless (console model: dev seed 0's reference operations replayed)",
         "constant-answer": "headless (console model: dev's script typing the cohort medians)",
         "random": "GUI on Xvfb (its actions are screen pixels; no headless path)"}


def agent_name(kind: str) -> str:
    """The results folder's agent name of a baseline ('baseline-noop', ...)."""
    from scoring.aggregate import BASELINE_PREFIX

    return BASELINE_PREFIX + kind


class BaselineRandomAgent(RandomAgent):
    """RandomAgent under the baseline's agent name, so its folder sits beside the other baselines."""

    name = "baseline-random"


def _scripts(card: Any, kinds: Sequence[str]) -> dict[str, tuple[list, str, dict[str, Any]]]:
    """Per headless baseline: (operations, termination, note) for one card."""
    from runner.agents.reference.common import Op
    from runner.headless.drive import HeadlessError
    from runner.headless.shortcut import DEV, StaleMedians, constant_answer_script, load_cohort_medians, reference_run

    out: dict[str, tuple[list, str, dict[str, Any]]] = {}
    if "noop" in kinds:
        ops = [Op("wait", {"seconds": NOOP_WAIT_S})] * card.budgets.max_steps
        out["noop"] = (ops, "budget", {"policy": "wait 1 s every step"})
    if "fixed-script" in kinds or "constant-answer" in kinds:
        try:
            dev_ops = reference_run(card, *DEV).ops  # ends with the planner's done
        except HeadlessError as exc:
            raise ValueError(f"fixed-script baseline for {card.id}: the reference fails on dev: {exc}") from exc
        source = {"script_from": f"reference on {DEV[0]} seed {DEV[1]}", "operations": len(dev_ops) - 1}
        if "fixed-script" in kinds:
            out["fixed-script"] = (dev_ops, "done", {"policy": "fixed script", **source})
        if "constant-answer" in kinds:
            try:
                medians = load_cohort_medians(card)
                const = constant_answer_script(dev_ops, medians)
                note = {"policy": "constant answer (cohort medians)", **source}
            except StaleMedians as exc:
                if card.level >= 2:  # the detector's cards: their medians must be current
                    raise ValueError(f"constant-answer baseline for {card.id}: {exc}") from exc
                const = None
                note = {"policy": "constant answer", **source,
                        "medians": "none made for L0-L1 cards; dev's own typed values are the constants"}
            if const is None:
                note.setdefault("medians", "the script types no number: the fixed script itself")
            out["constant-answer"] = (const or dev_ops, "done", note)
    return out


def _episode_verdict(card: Any, subject: str, seed: int, kind: str, ops: list, termination: str,
                     note: dict[str, Any]) -> Any:
    """Replay `ops` headless and make the episode's verdict (INVALID on any runner or scorer fault)."""
    from runner.agents.reference.common import wait_seconds
    from runner.headless.drive import OP_SECONDS
    from runner.headless.shortcut import replay
    from scoring.score import require_done
    from scoring.verdict import Verdict

    t0 = time.monotonic()
    played = ops[:next((i for i, op in enumerate(ops) if op.name == "done"), len(ops))]
    # what replay's clock advanced: a wait what it asked, any other operation one GUI step
    sim = sum(wait_seconds(op.args["seconds"]) if op.name == "wait" else OP_SECONDS for op in played)
    common = dict(task=card.id, task_version=card.version, modality=card.modality, level=card.level,
                  subject=subject, seed=seed, agent=agent_name(kind), steps=len(played), termination=termination,
                  sim_seconds=round(sim, 3))
    details = {"baseline": {"kind": kind, "path": "headless", **note,
                            "rejected_steps": "not counted (refused operations are skipped)"}}
    try:
        result = require_done(replay(card, subject, seed, ops), termination)
    except Exception as exc:  # noqa: BLE001 - a fault of the model or oracle is INVALID, never FAIL
        return Verdict(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0, reason=f"headless fault: {exc!r}",
                       details=details, wall_seconds=round(time.monotonic() - t0, 3), **common)
    return Verdict(outcome=result.outcome, sr=result.sr, pr=result.pr, aq=result.aq, reason=result.reason,
                   stages=result.stages, details={**result.details, **details},
                   wall_seconds=round(time.monotonic() - t0, 3), **common)


def _write(out: Path, verdict: Any, ops: list) -> None:
    """The episode folder: verdict.json and operations.jsonl (the replayed operations), published atomically."""
    from runner import results

    final = results.episode_dir(out, verdict.agent, verdict.task, verdict.subject, verdict.seed)
    work = results.fresh_work_dir(final)
    (work / "operations.jsonl").write_text("".join(json.dumps({"name": op.name, "args": op.args}) + "\n"
                                                   for op in ops))
    results.write_json_atomic(work / "verdict.json", verdict.model_dump())
    results.publish(work, final)


def _card_job(job: tuple[str, list[str], list[int], list[str], str]) -> dict[str, int]:
    """All headless baseline episodes of one card (a worker process's unit); outcome counts per baseline."""
    from rendering import memo
    from runner import results
    from tasks.card import load_card

    card_id, subjects, seeds, kinds, out = job
    card = load_card(card_id)
    counts: dict[str, int] = {}
    with memo.enabled():  # the baselines of one episode start from the same images
        scripts = _scripts(card, kinds)
        for subject in subjects:
            for seed in seeds:
                for kind, (ops, termination, note) in scripts.items():
                    final = results.episode_dir(Path(out), agent_name(kind), card.id, subject, seed)
                    if results.is_finished(final, card.version):
                        counts["skipped"] = counts.get("skipped", 0) + 1
                        continue
                    v = _episode_verdict(card, subject, seed, kind, ops, termination, note)
                    _write(Path(out), v, ops)
                    counts[f"{kind}:{v.outcome}"] = counts.get(f"{kind}:{v.outcome}", 0) + 1
    return counts


def run_headless(cards: Sequence[Any], subjects: list[str], seeds: list[int], kinds: Sequence[str], out: Path,
                 workers: int = 1) -> dict[str, int]:
    """The headless baselines over cards x subjects x seeds into `out`; finished episodes are skipped."""
    jobs = [(c.id, subjects, seeds, list(kinds), str(out)) for c in cards]
    totals: dict[str, int] = {}
    t0 = time.monotonic()
    with ProcessPoolExecutor(workers) if workers > 1 else _InProcess() as ex:
        for i, (job, part) in enumerate(zip(jobs, ex.map(_card_job, jobs)), 1):
            print(f"[{i}/{len(jobs)}] {job[0]}: {json.dumps(part, sort_keys=True)} "
                  f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
            for k, n in part.items():
                totals[k] = totals.get(k, 0) + n
    return totals


class _InProcess:
    """The executor interface for one worker: cards run one after the other in this process."""

    def __enter__(self) -> "_InProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def map(self, fn, items):
        return map(fn, items)


def run_random(cards: Sequence[Any], subjects: list[str], seeds: list[int], out: Path, random_seed: int,
               workers: int = 1) -> list[Any]:
    """The random agent through the GUI runner (Xvfb), as `medimageos run --agent random` does."""
    import functools

    from runner.run import expand, run_sequential

    specs = expand(cards, subjects, seeds)
    factory = functools.partial(BaselineRandomAgent, base_seed=random_seed)
    if workers > 1:
        from runner.parallel import run_parallel

        return run_parallel(specs, factory, out, BaselineRandomAgent.name, workers=workers)
    return run_sequential(specs, factory, out, BaselineRandomAgent.name)


def _check_subjects(subjects: list[str]) -> None:
    from rendering.subjects import list_subjects

    known = {s["id"] for s in list_subjects()}
    unknown = [s for s in subjects if s not in known]
    if unknown:
        raise ValueError(f"unknown subject(s) {unknown}; known: dev, s01..s30 and imported subjects")


def cmd_baselines(args) -> int:
    """Run the chosen baselines; write a manifest (baselines.json) beside them; print what ran where."""
    from runner.cli import _subjects
    from tasks.card import select_cards

    kinds = [k.strip() for k in args.include.split(",") if k.strip()]
    bad = [k for k in kinds if k not in BASELINES]
    if bad or not kinds:
        raise ValueError(f"--include: unknown baseline(s) {bad or kinds}; choose from {', '.join(BASELINES)}")
    cards = select_cards(args.tasks)
    subjects = _subjects(args.subjects)
    _check_subjects(subjects)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if "dev" in subjects and any(k in kinds for k in ("fixed-script", "constant-answer")):
        print("note: on dev seed 0 the fixed script is the reference itself; dev is never scored",
              file=sys.stderr)
    for k in kinds:
        print(f"{agent_name(k)}: {PATHS[k]}", file=sys.stderr)
    n = len(cards) * len(subjects) * len(args.seeds)
    print(f"{n} episode(s) per baseline ({len(cards)} task(s) x {len(subjects)} subject(s) x seeds {args.seeds}) "
          f"-> {out}", file=sys.stderr)
    headless = [k for k in kinds if k in HEADLESS]
    summary: dict[str, Any] = {}
    if headless:
        summary["headless"] = run_headless(cards, subjects, args.seeds, headless, out, args.workers)
    if "random" in kinds:
        verdicts = run_random(cards, subjects, args.seeds, out, args.random_seed, args.workers)
        outcomes: dict[str, int] = {}
        for v in verdicts:
            outcomes[f"random:{v.outcome}"] = outcomes.get(f"random:{v.outcome}", 0) + 1
        summary["gui"] = outcomes
    manifest = {"baselines": {agent_name(k): PATHS[k] for k in kinds}, "tasks": [c.id for c in cards],
                "subjects": subjects, "seeds": args.seeds, "random_seed": args.random_seed if "random" in kinds
                else None, "outcomes": summary}
    (out / "baselines.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps({"out": str(out), **summary}))
    return 0


def add_parser(sub) -> None:
    """Register `baselines` under the top-level commands."""
    from runner.cli import _seeds

    bp = sub.add_parser("baselines", help="run the blind baselines (noop, fixed script, constant answer headless; "
                        "random on Xvfb with --include random) over a selection, as agents' results folders")
    bp.add_argument("--out", required=True, help="results folder to write the baselines into (a model's own "
                    "results folder puts them beside it in score and report)")
    bp.add_argument("--tasks", default="all", help="ids (comma-separated), a modality (ct|mr|us) or all")
    bp.add_argument("--subjects", default="cohort", help="ids (comma-separated), dev, or cohort (s01-s30)")
    bp.add_argument("--seeds", default=[0, 1, 2], type=_seeds, help="e.g. 0,1,2 or 0-2")
    bp.add_argument("--include", default=",".join(DEFAULT_INCLUDE),
                    help=f"comma-separated, from {', '.join(BASELINES)} (default: the headless three; random "
                    "runs the GUI on Xvfb over the full step budget: slow)")
    bp.add_argument("--workers", type=int, default=1, help="processes (headless: one card each; random: displays)")
    bp.add_argument("--random-seed", type=int, default=0, help="the random agent's base seed")
    bp.set_defaults(fn=cmd_baselines)
