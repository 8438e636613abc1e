"""Confidence intervals for SR, PR, AQ and the weighted score by a cluster bootstrap over subjects.

Episodes of one subject are not independent (its anatomy makes every task on it easier or harder), so the
resampling unit is the subject: each resample draws as many subjects as there are, with replacement, and
keeps all of a drawn subject's episodes (every task and seed) as many times as it was drawn. A statistic of
the resample is the same statistic `scoring.aggregate` forms on the original: a pooled mean over valid
episodes (INVALID episodes are dropped from every denominator; UNDETERMINED ones are scored), per-task SR
proportions (a task without valid episodes in a resample counts 0) and the level-weighted score
100 * sum_t (level_t + 1) p_t / sum_t (level_t + 1) over the scored task cards.

The interval is the percentile interval of the resampled statistics (numpy's linear percentile), at
`Bootstrap.confidence`, from `Bootstrap.resamples` resamples drawn by numpy's default generator seeded
with `Bootstrap.seed`; the same seed gives the same interval. A group whose valid episodes come from fewer
than two subjects has nothing to resample between subjects: its interval is the point estimate, flagged
`degenerate`. Resamples in which a group has no valid episode leave its statistic undefined; they are left
out of that group's percentiles and counted in `undefined_resamples`.

Pure numpy: no Qt, VTK or pydantic; an episode is anything with the attributes of `EpisodeLike`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 35  # fixed and stated in scores.json; the issue that asked for intervals
DEFAULT_CONFIDENCE = 0.95
METRICS = ("sr", "pr", "aq")


class EpisodeLike(Protocol):
    """What the bootstrap reads of an episode (a `scoring.verdict.Verdict` has all of it)."""

    task: str
    modality: str
    level: int
    subject: str
    seed: int
    outcome: str
    sr: float  # 0-1
    pr: float  # 0-1
    aq: float  # 0-100


def is_valid(ep: EpisodeLike) -> bool:
    """Counts in denominators: every outcome but INVALID (the rule of scoring.aggregate.stats)."""
    return ep.outcome != "INVALID"


@dataclass(frozen=True)
class Bootstrap:
    """How intervals are drawn: number of resamples, generator seed, confidence level."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        if not isinstance(self.resamples, int) or self.resamples < 1:
            raise ValueError(f"bootstrap resamples must be a positive integer (got {self.resamples!r})")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"bootstrap confidence must be between 0 and 1 (got {self.confidence!r})")

    def method(self) -> dict[str, Any]:
        """The statement written beside every interval (scores.json `intervals`)."""
        return {"method": "cluster bootstrap", "resampling_unit": "subject",
                "resamples": self.resamples, "seed": self.seed, "generator": "numpy.random.default_rng",
                "confidence": self.confidence, "interval": "percentile (numpy linear)",
                "invalid_episodes": "excluded from every denominator, as in the point estimates",
                "degenerate": "fewer than two subjects with valid episodes in a group: interval = point "
                              "estimate, flagged"}

    def counts(self, n_subjects: int) -> np.ndarray:
        """(resamples, n_subjects) multiplicities: how often each subject is drawn in each resample."""
        rng = np.random.default_rng(self.seed)
        if n_subjects == 0:
            return np.zeros((self.resamples, 0))
        return rng.multinomial(n_subjects, np.full(n_subjects, 1.0 / n_subjects),
                               size=self.resamples).astype(float)

    def percentiles(self) -> tuple[float, float]:
        tail = 100.0 * (1.0 - self.confidence) / 2.0
        return tail, 100.0 - tail


class _Design:
    """Episodes as arrays indexed by subject, so a resample's pooled mean is a matrix product."""

    def __init__(self, episodes: Sequence[EpisodeLike], subjects: Sequence[str]) -> None:
        index = {s: i for i, s in enumerate(subjects)}
        self.n_subjects = len(subjects)
        self.subject = np.array([index[e.subject] for e in episodes], dtype=int)
        self.valid = np.array([is_valid(e) for e in episodes], dtype=bool)
        # on the 0-100 scale of scores.json
        self.values = {"sr": np.array([100.0 * e.sr for e in episodes]),
                       "pr": np.array([100.0 * e.pr for e in episodes]),
                       "aq": np.array([float(e.aq) for e in episodes])}

    def sums(self, mask: np.ndarray, metric: str | None) -> np.ndarray:
        """Per subject: the sum of `metric` (or the count, for None) over valid episodes in `mask`."""
        m = mask & self.valid
        w = None if metric is None else self.values[metric][m]
        return np.bincount(self.subject[m], weights=w, minlength=self.n_subjects).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def interval(samples: np.ndarray, point: float | None, n_subjects: int, boot: Bootstrap) -> dict[str, Any]:
    """{"lo", "hi", "n_subjects", "degenerate", "undefined_resamples"} from resampled statistics.

    `n_subjects` counts the subjects with valid episodes in the group; under two the interval is the point
    estimate and `degenerate` is true. With no valid episode at all, lo and hi are None."""
    samples = np.asarray(samples, dtype=float)
    defined = samples[~np.isnan(samples)]
    out = {"lo": None, "hi": None, "n_subjects": int(n_subjects), "degenerate": n_subjects < 2,
           "undefined_resamples": int(samples.size - defined.size)}
    if point is None or defined.size == 0:
        return out
    if n_subjects < 2:
        out["lo"] = out["hi"] = float(point)
        return out
    lo, hi = np.percentile(defined, boot.percentiles())
    out["lo"], out["hi"] = float(lo), float(hi)
    return out


def _group_intervals(design: _Design, mask: np.ndarray, counts: np.ndarray, boot: Bootstrap) -> dict[str, Any]:
    """SR, PR and AQ intervals of the episodes in `mask` (pooled means over valid episodes)."""
    den = design.sums(mask, None)
    n_subj = int(np.count_nonzero(den))
    out = {}
    for metric in METRICS:
        num = design.sums(mask, metric)
        point = float(num.sum() / den.sum()) if den.sum() else None
        out[metric] = interval(_ratio(counts @ num, counts @ den), point, n_subj, boot)
    return out


def _task_meta(episodes: Sequence[EpisodeLike], cards: Mapping[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """(modality, level) of every task: from its card when there is one, else from its first episode."""
    meta = dict(cards)
    for e in episodes:
        meta.setdefault(e.task, (e.modality, e.level))
    return meta


def _task_proportions(design: _Design, tasks: Sequence[str], task_of: np.ndarray,
                      counts: np.ndarray) -> np.ndarray:
    """(rows of counts, tasks) per-task SR proportions in [0, 1]; a task without valid episodes counts 0."""
    cols_num, cols_den = [], []
    for t in tasks:
        mask = task_of == t
        cols_num.append(design.sums(mask, "sr") / 100.0)
        cols_den.append(design.sums(mask, None))
    if not tasks:
        return np.zeros((counts.shape[0], 0))
    num = counts @ np.stack(cols_num, axis=1)
    den = counts @ np.stack(cols_den, axis=1)
    return np.nan_to_num(_ratio(num, den), nan=0.0)


def agent_intervals(episodes: Sequence[EpisodeLike], cards: Mapping[str, tuple[str, int]],
                    boot: Bootstrap | None = None) -> dict[str, Any]:
    """Intervals of one agent's episodes, in the shape of `scoring.aggregate`'s agent block.

    `cards` maps every scored task id to its (modality, level); the weighted score is formed over exactly
    these tasks. Returns {"n_subjects", "overall": {sr, pr, aq, score}, "by_task": {task: {sr, pr, aq}},
    "by_modality": {...}, "by_level": {"L0": {sr, pr, aq, sr_task_mean}, ...}}, each an `interval` dict."""
    boot = boot or Bootstrap()
    episodes = list(episodes)
    subjects = sorted({e.subject for e in episodes})
    design = _Design(episodes, subjects)
    counts = boot.counts(len(subjects))
    ones = np.ones((1, len(subjects)))  # the original sample: every subject once
    meta = _task_meta(episodes, cards)
    task_of = np.array([e.task for e in episodes], dtype=object)
    modality_of = np.array([meta[e.task][0] for e in episodes], dtype=object)
    level_of = np.array([meta[e.task][1] for e in episodes], dtype=int)
    everything = np.ones(len(episodes), dtype=bool)

    overall = _group_intervals(design, everything, counts, boot)
    scored = list(cards)
    weights = np.array([cards[t][1] + 1 for t in scored], dtype=float)
    if scored:
        props = _task_proportions(design, scored, task_of, counts)
        point = float(100.0 * (_task_proportions(design, scored, task_of, ones) @ weights)[0] / weights.sum())
        n_subj = int(np.count_nonzero(design.sums(np.isin(task_of, scored), None)))
        overall["score"] = interval(100.0 * props @ weights / weights.sum(), point, n_subj, boot)
    else:
        props = np.zeros((boot.resamples, 0))
        overall["score"] = interval(np.full(boot.resamples, np.nan), None, 0, boot)

    by_task = {t: _group_intervals(design, task_of == t, counts, boot) for t in sorted(meta)}
    by_modality = {m: _group_intervals(design, modality_of == m, counts, boot)
                   for m in sorted({mod for mod, _ in meta.values()})}
    by_level = {}
    for level in range(7):
        block = _group_intervals(design, level_of == level, counts, boot)
        cols = [i for i, t in enumerate(scored) if cards[t][1] == level]
        if cols:
            point_props = _task_proportions(design, [scored[i] for i in cols], task_of, ones)
            n_subj = int(np.count_nonzero(design.sums(np.isin(task_of, [scored[i] for i in cols]), None)))
            block["sr_task_mean"] = interval(100.0 * props[:, cols].mean(axis=1),
                                             float(100.0 * point_props.mean()), n_subj, boot)
        by_level[f"L{level}"] = block
    return {"n_subjects": len(subjects), "overall": overall, "by_task": by_task, "by_modality": by_modality,
            "by_level": by_level}


def paired_difference(a: Sequence[EpisodeLike], b: Sequence[EpisodeLike], cards: Mapping[str, tuple[str, int]],
                      boot: Bootstrap | None = None) -> dict[str, Any]:
    """A minus B on paired episodes: a[i] and b[i] are the same (task, subject, seed) run by two agents.

    Both members of every pair must be valid (the caller drops pairs with an INVALID side). The subjects are
    resampled once for both agents (a paired cluster bootstrap), so what the subjects share cancels out.
    Returns {"n_pairs", "n_subjects", "overall": {metric: {"a", "b", "diff", "lo", "hi", ...}},
    "by_modality": {...}} for SR, PR, AQ and (overall) the weighted score over `cards`."""
    boot = boot or Bootstrap()
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"paired_difference needs pairs: {len(a)} episodes of A, {len(b)} of B")
    for x, y in zip(a, b):
        if (x.task, x.subject, x.seed) != (y.task, y.subject, y.seed):
            raise ValueError(f"pair mismatch: A has {(x.task, x.subject, x.seed)}, B {(y.task, y.subject, y.seed)}")
        if not (is_valid(x) and is_valid(y)):
            raise ValueError(f"pair {(x.task, x.subject, x.seed)} has an INVALID side: drop it before pairing")
    subjects = sorted({e.subject for e in a})
    da, db = _Design(a, subjects), _Design(b, subjects)
    counts, ones = boot.counts(len(subjects)), np.ones((1, len(subjects)))
    meta = _task_meta(a, cards)
    task_of = np.array([e.task for e in a], dtype=object)
    modality_of = np.array([meta[e.task][0] for e in a], dtype=object)

    def diff_block(stat: Callable[[_Design, np.ndarray], np.ndarray], n_subj: int) -> dict[str, Any]:
        pa, pb = float(stat(da, ones)[0]), float(stat(db, ones)[0])
        iv = interval(stat(da, counts) - stat(db, counts), None if np.isnan(pa - pb) else pa - pb, n_subj, boot)
        return {"a": None if np.isnan(pa) else pa, "b": None if np.isnan(pb) else pb,
                "diff": None if np.isnan(pa - pb) else pa - pb, **iv}

    def mean_stat(mask: np.ndarray, metric: str) -> Callable[[_Design, np.ndarray], np.ndarray]:
        return lambda d, c: _ratio(c @ d.sums(mask, metric), c @ d.sums(mask, None))

    def group(mask: np.ndarray) -> dict[str, Any]:
        n_subj = int(np.count_nonzero(da.sums(mask, None)))
        return {m: diff_block(mean_stat(mask, m), n_subj) for m in METRICS}

    overall = group(np.ones(len(a), dtype=bool))
    scored = list(cards)
    if scored:
        w = np.array([cards[t][1] + 1 for t in scored], dtype=float)
        overall["score"] = diff_block(lambda d, c: 100.0 * _task_proportions(d, scored, task_of, c) @ w / w.sum(),
                                      int(np.count_nonzero(da.sums(np.isin(task_of, scored), None))))
    return {"n_pairs": len(a), "n_subjects": len(subjects), "overall": overall,
            "by_modality": {m: group(modality_of == m) for m in sorted(set(modality_of.tolist()))}}


def format_interval(point: float | None, iv: Mapping[str, Any] | None, digits: int = 1) -> str:
    """'34.0 [28.1, 40.2]' (a dagger marks a degenerate interval); '–' without a point estimate."""
    if point is None:
        return "–"
    if not iv or iv.get("lo") is None:
        return f"{point:.{digits}f}"
    mark = "†" if iv.get("degenerate") else ""
    return f"{point:.{digits}f} [{iv['lo']:.{digits}f}, {iv['hi']:.{digits}f}]{mark}"

