"""Shortcut policies, run headless: agents that ignore the screen, to show that a task's answer moves.

A task tests what it names only if an agent that never looks at the screen fails it on other subjects and
seeds. Two such agents are played here against every card, on the pure console models:

- the fixed script: the reference's operations recorded on the public ``dev`` subject, seed 0, replayed
  verbatim on a cohort (subject, seed). Operations carry screen-equivalent values (table millimetres on a
  scout drawn in a fixed table frame, millimetres and degrees on an image in scanner coordinates, list
  positions, typed text), so replaying them is what replaying the dev episode's clicks and keystrokes does.
  An operation the console refuses is skipped, as a click the console ignores would be.
- the constant answer: the same script with every typed number replaced by the cohort median of what the
  reference typed there (the best single value a policy that never reads the screen could learn). The
  median is over the whole cohort (s01..s30 x seeds 0-2), as issue 21 defines it, not over the sample the
  policy is then tried on (a median fitted to 16 episodes and scored on the same 16 lands on a cluster of
  them by construction). The conformance test reads it from tasks/cohort_medians.json, which
  `medimageos tasks medians --write` makes and `make sweep` checks (`--check`).

`answers` reads the reference's correct answer of an episode (range edges, plane pose, typed values) as
named scalars with the oracle's tolerance for each, through the modality's ``answers`` hook (scoring/answers/);
`spread` compares them over many episodes (`medimageos tasks spread`).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from consoles.common.clock import SimClock
from consoles.common.model_base import ConsoleActionError
from rendering import memo
from runner.agents.reference.common import Op, wait_seconds
from runner.headless.drive import OP_SECONDS, HeadlessError, HeadlessRun, make_model
from scoring.answers import Answer
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult
from tasks.card import TaskCard

DEV = ("dev", 0)
# The fixed sample the conformance test replays on: 16 cohort subjects, 8 of each sex (odd ids are men), over
# the whole list, with seeds chosen so that (subject index + seed), which picks the answer of a cohort-balanced
# choice (consoles.common.balance.cohort_balanced_choice, which every console draws with), takes every residue
# mod 2 and mod 3 about equally often: a sample on which a 3-way choice always had one answer would let a fixed
# script pass by construction.
SAMPLE_PAIRS: tuple[tuple[str, int], ...] = (
    ("s01", 1), ("s02", 2), ("s05", 1), ("s06", 2), ("s09", 0), ("s10", 0), ("s13", 0), ("s14", 1),
    ("s17", 0), ("s18", 1), ("s21", 2), ("s22", 2), ("s25", 1), ("s26", 1), ("s29", 2), ("s30", 0))
COHORT_PAIRS: tuple[tuple[str, int], ...] = tuple((f"s{i:02d}", k) for i in range(1, 31) for k in range(3))
COHORT_MEDIANS_FILE = Path(__file__).resolve().parents[2] / "tasks" / "cohort_medians.json"
MAX_FIXED_PASS_RATE = 0.10  # L3-L6 tasks: share of sample episodes a replayed dev script may pass
MAX_JUDGEMENT_PASS_RATE = 0.50  # two-way judgements (L2, binary causes): a coin's share


def _modality_module(card: TaskCard) -> Any:
    return importlib.import_module(f"runner.headless.{card.modality}")


def reference_run(card: TaskCard, subject: str, seed: int) -> HeadlessRun:
    """The reference plan of one episode, headless (its operations are the fixed script on dev)."""
    from runner.headless import run_reference

    return run_reference(card, subject, seed)


def replay(card: TaskCard, subject: str, seed: int, ops: Sequence[Op]) -> OracleResult:
    """Replay recorded operations verbatim on a fresh episode and score its end state.

    Refused operations are skipped (a click the console ignores); waits advance the clock by what they
    asked, every other operation by one GUI step, as in `runner.headless.drive.drive`."""
    apply_op = _modality_module(card).apply_op
    model = make_model(card, subject, seed)
    clock = SimClock(start=model.t)
    clock.subscribe(model.on_clock)
    for op in ops:
        if op.name == "done":
            break
        if op.name == "wait":
            clock.advance(wait_seconds(op.args["seconds"]))
            continue
        try:
            apply_op(model, op)
        except (ConsoleActionError, HeadlessError, KeyError, ValueError, TypeError):
            pass  # the console did nothing with it; the script goes on
        clock.advance(OP_SECONDS)
    from scoring.subject_oracle import load_oracle

    return get_oracle(card.oracle)(model.state(), load_oracle(subject), card)


def _numeric_slots(ops: Sequence[Op]) -> dict[tuple[int, str], float]:
    """(operation index, argument) -> value, for every numeric argument of every operation."""
    out = {}
    for i, op in enumerate(ops):
        for k, v in op.args.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[(i, k)] = float(v)
    return out


def _typed_slot(op: Op) -> str:
    """A name for where an operation types a number: its name and its non-numeric arguments."""
    keys = [f"{k}={v}" for k, v in sorted(op.args.items()) if not isinstance(v, (int, float)) or isinstance(v, bool)]
    return ".".join([op.name, *keys])


TYPED_OPS = ("set_range", "set_table_height", "set_param", "set_pose", "set_monitor_z", "set_roi")


def typed_medians(runs: Iterable[HeadlessRun]) -> dict[str, float]:
    """Per typing slot ('<operation>.<its other arguments>|<argument>'), the median of what the reference
    typed there over `runs` (the last value per slot in each run)."""
    values: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        last: dict[str, float] = {}
        for op in run.ops:
            if op.name in TYPED_OPS:
                for k, v in op.args.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        last[f"{_typed_slot(op)}|{k}"] = float(v)
        for slot, v in last.items():
            values[slot].append(v)
    return {slot: round(statistics.median(vs), 1) for slot, vs in sorted(values.items())}


def constant_answer_script(dev_ops: Sequence[Op], medians: Mapping[str, float]) -> list[Op] | None:
    """The dev script with each typed number replaced by its slot's median (`typed_medians`); None when the
    script types no number that has one."""
    out, changed = [], False
    for op in dev_ops:
        if op.name in TYPED_OPS:
            args = dict(op.args)
            for k, v in op.args.items():
                key = f"{_typed_slot(op)}|{k}"
                if key in medians and isinstance(v, (int, float)) and not isinstance(v, bool):
                    args[k] = medians[key]
                    changed = True
            out.append(Op(op.name, args))
        else:
            out.append(op)
    return out if changed else None


class StaleMedians(RuntimeError):
    """tasks/cohort_medians.json has no entry for a card, or one made from another card or generator."""


def _medians_stamp(card: TaskCard) -> dict[str, str]:
    """What the medians depend on: the card's version, the hash of what starts its episodes (initial state and
    perturbations: a card edited without a version bump is caught too) and the subject generator."""
    from rendering.subjects import GENERATOR_VERSION

    inputs = json.dumps(card.model_dump(include={"initial_state", "perturbations"}, mode="json"), sort_keys=True)
    return {"card_version": card.version, "card_inputs": hashlib.sha256(inputs.encode()).hexdigest()[:16],
            "generator": GENERATOR_VERSION}


def cohort_medians_entry(card: TaskCard, runs: Iterable[HeadlessRun]) -> dict[str, Any]:
    """What tasks/cohort_medians.json holds for a card: its typed medians over `runs` (the cohort's
    reference runs) and the card and generator versions they were made from."""
    return {**_medians_stamp(card), "medians": typed_medians(runs)}


def load_cohort_medians(card: TaskCard, path: Path = COHORT_MEDIANS_FILE) -> dict[str, float]:
    """The card's cohort medians as shipped; StaleMedians (naming the fix) when missing or out of date."""
    fix = "run `medimageos tasks medians --write` (the headless reference over s01..s30 x seeds 0-2)"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise StaleMedians(f"{path} is missing: {fix}") from exc
    entry = data.get(card.id)
    if entry is None:
        raise StaleMedians(f"{path} has no entry for {card.id}: {fix}")
    want = _medians_stamp(card)
    got = {k: entry.get(k) for k in want}
    if got != want:
        raise StaleMedians(f"{path}: {card.id}'s medians were made from {got}, the card and generator are now "
                           f"{want}: {fix}")
    return {k: float(v) for k, v in entry["medians"].items()}


def answers(card: TaskCard, run: HeadlessRun) -> dict[str, Answer]:
    """The correct answer of one reference episode as named parts, from the modality's hook
    ``scoring.answers.<modality>.answers(task, state, ops) -> {name: Answer}``."""
    from scoring.registry import entry_for_card

    hook = getattr(importlib.import_module(f"scoring.answers.{card.modality}"), "answers", None)
    if hook is None:
        raise NotImplementedError(f"scoring/answers/{card.modality}.py defines no answers(task, state, ops) hook")
    return hook(entry_for_card(card), run.state, run.ops)


def is_judgement(card: TaskCard, per_episode: Sequence[dict[str, Answer]]) -> bool:
    """A task whose answer is a choice (every part categorical)."""
    parts = [a for ans in per_episode for a in ans.values()]
    return bool(parts) and all(a.tolerance is None for a in parts)


@dataclass
class SlotSpread:
    """How far one answer part moves over a set of episodes."""

    name: str
    spread: float | None  # numeric: 5th to 95th percentile range, in the part's unit
    tolerance: float | None
    majority_share: float | None = None  # categorical: cohort share of the most common choice
    one_answer_subjects: int | None = None  # categorical: subjects whose seeds all want the same choice
    dev_is_majority: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.spread is None or not self.tolerance:
            return None
        return self.spread / self.tolerance


def _percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def spread(episodes: dict[tuple[str, int], dict[str, Answer]], dev: dict[str, Answer] | None = None) -> list[SlotSpread]:
    """Per answer part: numeric spread (p5-p95) against its median tolerance; for a choice, the cohort share of the
    most common one, how many subjects want one choice on every seed, and whether dev's choice is a strict
    majority of the cohort's."""
    names = sorted({n for ans in episodes.values() for n in ans})
    out = []
    for name in names:
        vals = {k: a[name] for k, a in episodes.items() if name in a}
        first = next(iter(vals.values()))
        if first.tolerance is None:
            by_subject: dict[str, set] = defaultdict(set)
            for (subject, _), a in vals.items():
                by_subject[subject].add(a.value)
            counts = Counter(a.value for a in vals.values())
            (majority, n_major), = counts.most_common(1)
            dev_major = None if dev is None or name not in dev else (
                dev[name].value == majority and n_major > len(vals) / 2)
            out.append(SlotSpread(name, None, None, n_major / len(vals),
                                  sum(len(v) == 1 for v in by_subject.values()), dev_major))
        else:
            xs = [float(a.value) for a in vals.values()]
            # a tolerance may depend on the episode (a heart rate's valid delays, a kidney's depth window):
            # compare the spread with the median episode's
            tol = statistics.median(float(a.tolerance) for a in vals.values())
            out.append(SlotSpread(name, _percentile(xs, 0.95) - _percentile(xs, 0.05), tol))
    return out


@dataclass
class ShortcutResult:
    """How two screen-blind policies fare on one card over a set of (subject, seed) pairs."""

    card_id: str
    level: int
    pairs: int
    fixed_passes: list[tuple[str, int]]
    constant_passes: list[tuple[str, int]] | None  # None: the task types no number

    def fixed_rate(self) -> float:
        return len(self.fixed_passes) / self.pairs

    def constant_rate(self) -> float | None:
        return None if self.constant_passes is None else len(self.constant_passes) / self.pairs


def shortcut_result(card: TaskCard, pairs: Sequence[tuple[str, int]] = SAMPLE_PAIRS,
                    reference_runs: dict[tuple[str, int], HeadlessRun] | None = None,
                    dev_run: HeadlessRun | None = None, medians: Mapping[str, float] | None = None) -> ShortcutResult:
    """Replay dev's reference script, and its constant-answer version, on `pairs`; which of them PASS.
    `reference_runs` and `dev_run`, when the caller has them, are the reference runs of those episodes;
    `medians` the typed values of the constant answer (default: the medians over `reference_runs`, the cohort's
    when `pairs` is the cohort)."""
    with memo.enabled():
        dev_ops = (dev_run or reference_run(card, *DEV)).ops
        if medians is None:
            runs = reference_runs if reference_runs is not None else {p: reference_run(card, *p) for p in pairs}
            medians = typed_medians(runs.values())
        const_ops = constant_answer_script(dev_ops, medians)
        fixed, const = [], None if const_ops is None else []
        for p in pairs:  # both scripts of one episode in a row: they start from the same images
            if replay(card, p[0], p[1], dev_ops).outcome == "PASS":
                fixed.append(p)
            if const_ops is not None and replay(card, p[0], p[1], const_ops).outcome == "PASS":
                const.append(p)
    return ShortcutResult(card.id, card.level, len(pairs), fixed, const)


def max_fixed_pass_rate(card: TaskCard, judgement: bool) -> float:
    """The most a replayed dev script may pass: a coin's share for a two-way judgement, else 10 %."""
    return MAX_JUDGEMENT_PASS_RATE if judgement else MAX_FIXED_PASS_RATE


def max_constant_pass_rate(card: TaskCard, judgement: bool) -> float:
    """The most the constant-answer script may pass. For a judgement whose remedy is typed (L6 contact vs
    gain: type a gain when the cause is gain) a fixed remedy is right whenever the coin is, so a coin's share;
    else 10 %."""
    return MAX_JUDGEMENT_PASS_RATE if judgement else MAX_FIXED_PASS_RATE
