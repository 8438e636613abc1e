"""Workflow stages from a console's event log, shared by every modality's oracles (pure).

A stage is a named predicate over one event of the state dump's ``events`` list. Ordered stages must
occur one after another; a stage marked ``same_event`` may be met by the very event that met the previous
stage (confirming a CT plan both plans and confirms it). MR and ultrasound oracles use the same helpers.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Sequence

from scoring.verdict import OracleResult

Event = dict[str, Any]
EventMatch = Callable[[Event], bool]


class Stage(NamedTuple):
    """One workflow stage: its name (as in the card's workflow_stages) and the event that completes it."""

    name: str
    match: EventMatch
    same_event: bool = False


def event_is(kind: str, **fields: Any) -> EventMatch:
    """A predicate matching events of this kind whose fields equal the given values."""
    return lambda e: e["event"] == kind and all(e.get(k) == v for k, v in fields.items())


def event_in(*kinds: str) -> EventMatch:
    """A predicate matching events of any of these kinds."""
    return lambda e: e["event"] in kinds


def ordered_stages(events: list[Event], checks: Sequence[Stage | tuple]) -> dict[str, bool]:
    """Each stage is done if an event matching it occurs after the previous stage's event.

    A check is a Stage, (name, match) or (name, match, True); with True the stage may be met by the same
    event as the previous one. Once a stage is missing, every later stage counts as not done."""
    done: dict[str, bool] = {}
    pos = -1
    for name, match, *shares in checks:
        start = pos if shares and shares[0] else pos + 1
        found = next((i for i, e in enumerate(events) if i >= start and match(e)), None)
        if found is None or (done and not all(done.values())):
            done[name] = False
            continue
        done[name] = True
        pos = found
    return done


def event_index(events: list[Event], pred: EventMatch, after: int = -1) -> int | None:
    """Index of the first event after `after` that matches, or None."""
    return next((i for i, e in enumerate(events) if i > after and pred(e)), None)


def events_before(events: list[Event], pred: EventMatch) -> list[Event]:
    """The events before the first one matching `pred` (all of them when none matches)."""
    i = event_index(events, pred)
    return events[:i] if i is not None else events


def progress(stages: dict[str, bool]) -> float:
    """PR: the fraction of stages done (0 when there are none)."""
    return sum(stages.values()) / max(1, len(stages))


def stage_names(checks: Iterable[Stage | tuple]) -> list[str]:
    """The names of these stages, in order."""
    return [c[0] for c in checks]


def checks_verdict(stages: dict[str, bool], checks: dict[str, bool], aq: float, details: dict[str, Any],
                   has_result: bool, why_fail: str) -> OracleResult:
    """The common verdict rule: FAIL without a scored result, PASS when every stage and check holds,
    else PARTIAL naming what is missing. AQ is clipped to 0-100; the checks go into the details."""
    pr = progress(stages)
    details["checks"] = checks
    aq = round(float(min(100.0, max(0.0, aq))) if aq == aq else aq, 2)  # NaN stays NaN: a scorer fault
    if not has_result:
        return OracleResult(outcome="FAIL", sr=0.0, pr=pr, aq=0.0, stages=stages, details=details, reason=why_fail)
    if all(stages.values()) and all(checks.values()):
        return OracleResult(outcome="PASS", sr=1.0, pr=pr, aq=aq, stages=stages, details=details,
                            reason="workflow complete; " + ", ".join(checks) + " met")
    why = []
    missing = [k for k, v in stages.items() if not v]
    if missing:
        why.append("stages missing or out of order: " + ", ".join(missing))
    bad = [k for k, v in checks.items() if not v]
    if bad:
        why.append("failed: " + ", ".join(bad))
    return OracleResult(outcome="PARTIAL", sr=0.0, pr=pr, aq=aq, stages=stages, details=details,
                        reason="; ".join(why))
