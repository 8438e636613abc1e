"""Collect episode verdicts from a results folder and aggregate them into scores.

Results layout: DIR/<agent>/<task>/<subject>/seed<k>/ holding receipts.jsonl, step PNGs,
state.json and verdict.json. A folder without verdict.json is an unfinished episode: it is
counted but never scored.

Rules (see the benchmark card, Evaluation):
- SR, PR and AQ are reported side by side as 0-100 means and never merged.
- INVALID episodes are counted but excluded from every denominator (metric means, budget
  share, rejected-action share). UNDETERMINED episodes are scored (they are not faults).
- The overall score weights capability levels by w_i = i + 1 over per-task SR proportions:
  Score = 100 * sum_i (i+1) sum_j s_ij / sum_i (i+1) n_i, with the tasks and their levels taken
  from the task cards passed in. A card without valid episodes counts s = 0 and is flagged.
- Every SR, PR, AQ and the score carry a 95 % interval from a cluster bootstrap over subjects
  (scoring/intervals.py; the method, resamples and seed are stated in the `intervals` block).
- Agents named `baseline-*` are the blind baselines of `medimageos baselines`; they are scored
  like any agent and flagged `baseline: true`.
"""
from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from pydantic import ValidationError

from scoring.fingerprints import summarize as summarize_fingerprints
from scoring.intervals import Bootstrap, agent_intervals
from tasks.card import TaskCard
from scoring.verdict import OracleResult, Verdict

log = logging.getLogger(__name__)

OUTCOMES = ("PASS", "PARTIAL", "FAIL", "UNDETERMINED", "INVALID")
TERMINATIONS = ("done", "budget", "fault")
LEVELS = tuple(range(7))
SCHEMA_VERSION = 1
BASELINE_PREFIX = "baseline-"  # agent names of `medimageos baselines` (runner/cli_baselines.py)
_SEED_DIR = re.compile(r"^seed(\d+)$")


# --------------------------------------------------------------------------- collection

@dataclass(frozen=True)
class Episode:
    """One finished episode: its folder and its verdict."""

    path: Path
    verdict: Verdict


@dataclass(frozen=True)
class CorruptVerdict:
    path: Path
    error: str


@dataclass
class ResultsScan:
    """Everything found under a results folder."""

    root: Path
    episodes: list[Episode] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)
    corrupt: list[CorruptVerdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def verdicts(self) -> list[Verdict]:
        return [e.verdict for e in self.episodes]

    def summary(self) -> dict[str, Any]:
        """JSON-ready description of what was (and was not) collected."""
        # <root>/<agent>/<task>/<subject>/seed<k>: the agent is the fourth part from the end (a merged
        # scan holds folders of two roots)
        unfinished_by_agent = Counter(p.parts[-4] for p in self.unfinished)
        return {
            "root": str(self.root),
            "episodes": len(self.episodes),
            "unfinished": len(self.unfinished),
            "unfinished_by_agent": dict(sorted(unfinished_by_agent.items())),
            "unfinished_paths": [str(p) for p in self.unfinished],
            "corrupt": [{"path": str(c.path), "error": c.error} for c in self.corrupt],
            "warnings": list(self.warnings),
        }


def episode_dirs(root: Path) -> list[Path]:
    """Every DIR/<agent>/<task>/<subject>/seed<k>/ folder, sorted."""
    root = Path(root)
    return sorted(p for p in root.glob("*/*/*/seed*") if p.is_dir() and _SEED_DIR.match(p.name))


def load_verdict(path: Path) -> Verdict:
    """Read and validate one verdict.json (raises ValueError naming the problem)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"unreadable: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    try:
        return Verdict.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"not a valid verdict: {problems}") from exc


def scan_results(root: Path | str) -> ResultsScan:
    """Walk a results folder: finished episodes, unfinished folders, corrupt verdict files.

    Duplicates (two folders whose verdicts name the same agent/task/subject/seed) keep the first
    folder in sorted order and are reported; a verdict whose fields disagree with its folder
    names is kept (the verdict is authoritative) and reported.
    """
    root = Path(root)
    scan = ResultsScan(root=root)
    if not root.is_dir():
        scan.warnings.append(f"results folder {root} does not exist")
        return scan
    seen: dict[tuple[str, str, str, int], Path] = {}
    for ep_dir in episode_dirs(root):
        vpath = ep_dir / "verdict.json"
        if not vpath.exists():
            scan.unfinished.append(ep_dir)
            continue
        try:
            verdict = load_verdict(vpath)
        except ValueError as exc:
            scan.corrupt.append(CorruptVerdict(vpath, str(exc)))
            log.warning("corrupt verdict %s: %s", vpath, exc)
            continue
        agent, task, subject, seed_name = ep_dir.relative_to(root).parts
        expected = (agent, task, subject, int(_SEED_DIR.match(seed_name).group(1)))
        key = (verdict.agent, verdict.task, verdict.subject, verdict.seed)
        if key != expected:
            scan.warnings.append(
                f"{vpath}: verdict names {key} but its folder says {expected}; using the verdict")
        if key in seen:
            scan.warnings.append(f"{vpath}: duplicate of {seen[key]} for {key}; ignored")
            continue
        seen[key] = ep_dir
        scan.episodes.append(Episode(ep_dir, verdict))
    return scan


def collect(root: Path | str, problems: list[str] | None = None) -> list[Verdict]:
    """The verdicts of all finished episodes under `root`.

    Unfinished episodes (no verdict.json) are skipped; corrupt verdict files are skipped and
    reported with their path through the logger and, if given, appended to `problems`.
    """
    scan = scan_results(root)
    if problems is not None:
        problems.extend(f"corrupt verdict {c.path}: {c.error}" for c in scan.corrupt)
        problems.extend(scan.warnings)
    return scan.verdicts


# --------------------------------------------------------------------------- aggregation

def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def stats(verdicts: Iterable[Verdict]) -> dict[str, Any]:
    """SR/PR/AQ (0-100 means over valid episodes), outcome and termination counts, shares.

    `n` counts every episode, `n_valid` the non-INVALID ones that form every denominator.
    Means and shares are None when there is nothing to divide by.
    """
    verdicts = list(verdicts)
    valid = [v for v in verdicts if v.outcome != "INVALID"]
    outcomes = Counter(v.outcome for v in verdicts)
    terminations_valid = Counter(v.termination for v in valid)
    steps = sum(v.steps for v in valid)
    rejected = sum(v.rejected_steps for v in valid)
    return {
        "n": len(verdicts),
        "n_valid": len(valid),
        "sr": _pct(_mean([v.sr for v in valid])),
        "pr": _pct(_mean([v.pr for v in valid])),
        "aq": _mean([v.aq for v in valid]),  # already 0-100
        "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
        "terminations": {t: terminations_valid.get(t, 0) for t in TERMINATIONS},
        "terminations_all": {t: Counter(v.termination for v in verdicts).get(t, 0)
                             for t in TERMINATIONS},
        "budget_share": (terminations_valid.get("budget", 0) / len(valid)) if valid else None,
        "steps": steps,
        "rejected_steps": rejected,
        "rejected_share": (rejected / steps) if steps else None,
    }


def _check_cards(cards: Sequence[TaskCard]) -> None:
    ids = [c.id for c in cards]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate task cards: {dupes}")


def score_denominator(cards: Sequence[TaskCard]) -> int:
    """sum_i (i+1) n_i over the given cards."""
    return sum(c.level + 1 for c in cards)


def weighted_score(sr_by_task: dict[str, float], cards: Sequence[TaskCard]) -> float:
    """100 * sum_i (i+1) sum_j s_ij / sum_i (i+1) n_i.

    `sr_by_task` maps task id -> SR proportion in [0, 1]; tasks of `cards` absent from it count 0,
    entries for tasks without a card are ignored. The levels come from the cards.
    """
    cards = list(cards)
    if not cards:
        raise ValueError("weighted_score needs at least one task card")
    _check_cards(cards)
    for task, s in sr_by_task.items():
        if s is None or not 0.0 <= s <= 1.0:
            raise ValueError(f"SR proportion of {task!r} must be in [0, 1] (got {s!r}); "
                             "pass proportions, not percentages")
    num = sum((c.level + 1) * sr_by_task.get(c.id, 0.0) for c in cards)
    return 100.0 * num / score_denominator(cards)


def is_baseline(agent: str) -> bool:
    """An agent written by `medimageos baselines` (noop, random, fixed script, constant answer)."""
    return agent.startswith(BASELINE_PREFIX)


def aggregate(verdicts: Iterable[Verdict], cards: Sequence[TaskCard],
              intervals: Bootstrap | None = Bootstrap()) -> dict[str, Any]:
    """Scores per agent, broken down per task, modality and level, with bootstrap intervals.

    Returns::

        {"schema": 1,
         "cards": {task_id: {"modality", "level", "version", "title"}},
         "weight_denominator": sum_i (i+1) n_i,
         "intervals": the bootstrap's method statement (absent when `intervals` is None),
         "agents": {agent: {
             "baseline": bool, "n_subjects": int,
             "overall": stats + {"score", "score_tasks", "missing_tasks", "extra_tasks"},
             "by_task": {task_id: stats + {"modality", "level", "in_cards", "missing",
                                           "sr_proportion", "versions"}},
             "by_modality": {"ct": stats, ...},
             "by_level": {"L0": stats + {"n_tasks", "sr_task_mean"}, ... "L6"}}}}

    Every task of `cards` appears in every agent's `by_task` (n = 0 when never run), and all seven
    levels appear in `by_level`. The level and modality of a task come from its card when there is
    one, otherwise from its verdicts (such tasks are listed but never enter the score).
    With `intervals` (the default), every stats block gets a "ci" dict: {"sr", "pr", "aq"} (overall
    also "score", levels also "sr_task_mean"), each {"lo", "hi", "n_subjects", "degenerate",
    "undefined_resamples"} (scoring.intervals.interval).
    """
    cards = list(cards)
    _check_cards(cards)
    card_by_id = {c.id: c for c in cards}
    by_agent: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_agent[v.agent].append(v)

    modalities = sorted({c.modality for c in cards}
                        | {v.modality for vs in by_agent.values() for v in vs})
    out: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "cards": {c.id: {"modality": c.modality, "level": c.level, "version": c.version,
                         "title": c.title} for c in cards},
        "weight_denominator": score_denominator(cards),
        "agents": {},
    }
    if intervals is not None:
        out["intervals"] = intervals.method()
    meta = {c.id: (c.modality, c.level) for c in cards}
    for agent in sorted(by_agent):
        block = _aggregate_agent(by_agent[agent], cards, card_by_id, modalities)
        block = {"baseline": is_baseline(agent), **block}
        if intervals is not None:
            _attach_intervals(block, agent_intervals(by_agent[agent], meta, intervals))
        out["agents"][agent] = block
    return out


def _attach_intervals(block: dict[str, Any], ivs: dict[str, Any]) -> None:
    """Put each group's intervals beside its point estimates, as its "ci" entry."""
    block["n_subjects"] = ivs["n_subjects"]
    block["overall"]["ci"] = ivs["overall"]
    for section in ("by_task", "by_modality", "by_level"):
        for key, stats_block in block[section].items():
            stats_block["ci"] = ivs[section].get(key)


def _aggregate_agent(verdicts: list[Verdict], cards: list[TaskCard],
                     card_by_id: dict[str, TaskCard], modalities: list[str]) -> dict[str, Any]:
    by_task_v: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_task_v[v.task].append(v)

    def task_meta(task: str) -> tuple[str, int]:
        if task in card_by_id:
            return card_by_id[task].modality, card_by_id[task].level
        first = by_task_v[task][0]
        return first.modality, first.level

    task_ids = [c.id for c in cards] + sorted(t for t in by_task_v if t not in card_by_id)
    by_task: dict[str, Any] = {}
    for task in task_ids:
        modality, level = task_meta(task)
        s = stats(by_task_v.get(task, []))
        s.update(
            modality=modality,
            level=level,
            in_cards=task in card_by_id,
            missing=s["n_valid"] == 0,
            sr_proportion=(s["sr"] / 100.0) if s["sr"] is not None else 0.0,
            versions=sorted({v.task_version for v in by_task_v.get(task, [])}),
        )
        by_task[task] = s

    by_modality = {
        m: stats(v for t in task_ids if by_task[t]["modality"] == m for v in by_task_v.get(t, []))
        for m in modalities
    }
    by_level: dict[str, Any] = {}
    for level in LEVELS:
        level_tasks = [t for t in task_ids if by_task[t]["level"] == level]
        s = stats(v for t in level_tasks for v in by_task_v.get(t, []))
        scored = [c.id for c in cards if c.level == level]
        s["n_tasks"] = len(scored)
        # Mean of per-task SR proportions over this level's cards (missing tasks count 0): the
        # quantity the weighted score is built from, as opposed to the episode-pooled `sr`.
        s["sr_task_mean"] = (100.0 * sum(by_task[t]["sr_proportion"] for t in scored) / len(scored)
                             if scored else None)
        by_level[f"L{level}"] = s

    overall = stats(verdicts)
    sr_props = {c.id: by_task[c.id]["sr_proportion"] for c in cards}
    overall.update(
        score=weighted_score(sr_props, cards) if cards else None,
        score_tasks=len(cards),
        missing_tasks=[c.id for c in cards if by_task[c.id]["missing"]],
        extra_tasks=[t for t in task_ids if t not in card_by_id],
    )
    return {"overall": overall, "by_task": by_task, "by_modality": by_modality,
            "by_level": by_level}


# --------------------------------------------------------------------------- files and commands

def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def episode_environment(ep_dir: Path) -> dict[str, Any] | None:
    """The environment fingerprint in an episode's state.json (None for older episodes or no dump)."""
    try:
        state = json.loads((Path(ep_dir) / "state.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    env = (state.get("provenance") or {}).get("environment") if isinstance(state, dict) else None
    return env if isinstance(env, dict) and env else None


def environment_section(episodes: Iterable[Episode]) -> dict[str, Any]:
    """Distinct environment fingerprints across the scored episodes, with episode counts."""
    return summarize_fingerprints(episode_environment(ep.path) for ep in episodes)


def _default_cards() -> list[TaskCard]:
    from tasks.card import all_cards

    return list(all_cards())


def merge_scans(main: ResultsScan, extra: ResultsScan) -> ResultsScan:
    """One scan of two results folders (a model's and a baselines folder): an agent may live in one
    of them only (ValueError naming it), so no episode is counted twice."""
    if not Path(extra.root).is_dir():
        raise ValueError(f"baselines folder {extra.root} does not exist")
    agents_main = {e.verdict.agent for e in main.episodes}
    clash = sorted(agents_main & {e.verdict.agent for e in extra.episodes})
    if clash:
        raise ValueError(f"agent(s) {clash} appear in both {main.root} and {extra.root}; "
                         "pass a baselines folder that holds only the baselines")
    merged = ResultsScan(root=main.root, episodes=main.episodes + extra.episodes,
                         unfinished=main.unfinished + extra.unfinished, corrupt=main.corrupt + extra.corrupt,
                         warnings=main.warnings + extra.warnings)
    return merged


def score_command(dir: Path | str, out_json: Path | str | None = None,
                  cards: Sequence[TaskCard] | None = None,
                  oracle_fn: "OracleFn | None" = None,
                  baselines: Path | str | None = None) -> dict[str, Any]:
    """`medimageos score DIR`: (optionally re-score,) aggregate and write DIR/scores.json.

    `cards` defaults to every shipped task card; `out_json` overrides the output path;
    with `oracle_fn` the verdicts are first recomputed from the state dumps (see `rescore`).
    The result is `aggregate(...)` plus a "collection" block (episodes, unfinished, corrupt) and an
    "environment" block (the distinct environment fingerprints of the episodes, with counts).
    With `baselines`, the agents of that folder (`medimageos baselines --out`) are scored beside DIR's.
    """
    root = Path(dir)
    if oracle_fn is not None:
        rescore(root, oracle_fn)
    scan = scan_results(root)
    if baselines is not None:
        scan = merge_scans(scan, scan_results(baselines))
    result = aggregate(scan.verdicts, list(cards) if cards is not None else _default_cards())
    result["collection"] = scan.summary()
    result["environment"] = environment_section(scan.episodes)
    target = Path(out_json) if out_json is not None else root / "scores.json"
    atomic_write_text(target, json.dumps(result, indent=2, sort_keys=False) + "\n")
    return result


# An oracle hook: (state dump, previous verdict, episode folder) -> new oracle result or verdict.
OracleFn = Callable[[dict, Verdict, Path], "OracleResult | Verdict"]


def rescore(dir: Path | str, oracle_fn: OracleFn, write: bool = True) -> list[Verdict]:
    """Recompute every finished episode's verdict from its state.json with `oracle_fn`.

    The episode bookkeeping (steps, rejected steps, termination, timings) is kept from the old
    verdict; outcome, sr, pr, aq, stages, details and reason come from the oracle. Episodes that
    ended on an environment fault (termination "fault") or have no state.json keep their verdict.
    An oracle that raises makes the episode INVALID (a scorer fault) with the error as reason.
    Returns the verdicts after re-scoring; with `write` they replace verdict.json atomically.
    """
    out: list[Verdict] = []
    for ep in scan_results(dir).episodes:
        old = ep.verdict
        state_path = ep.path / "state.json"
        if old.termination == "fault" or not state_path.exists():
            out.append(old)
            continue
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
            result = oracle_fn(state, old, ep.path)
            if isinstance(result, Verdict):
                new = result
            else:
                result = OracleResult.model_validate(result)
                new = old.model_copy(update=result.model_dump())
        except Exception as exc:  # a scorer fault is INVALID by definition, never FAIL
            new = old.model_copy(update={"outcome": "INVALID", "sr": 0.0, "pr": 0.0, "aq": 0.0,
                                         "reason": f"scorer fault: {type(exc).__name__}: {exc}"})
        if write:
            atomic_write_text(ep.path / "verdict.json", new.model_dump_json(indent=2) + "\n")
        out.append(new)
    return out
