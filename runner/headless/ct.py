"""Headless CT driver: the reference planner's operations executed on CTModel (pure, no Qt), then scored.

The planner (runner/agents/reference/ct.py) reads the same registry targets as in the GUI; here each of
its operations is one public CTModel method call instead of clicks and keystrokes, and simulated time
advances by the GUI action's nominal duration (or the requested wait), through `on_clock` like the
console's clock does.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from runner.actions import NOMINAL_SECONDS
from consoles.common.clock import SimClock
from runner.agents.reference.ct import CTPlanner, Op, wait_seconds
from tasks.card import TaskCard
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult

MAX_OPS = 300  # a plan needs about 20; more means the planner is stuck on a refused or clamped value
OP_SECONDS = NOMINAL_SECONDS["click"]  # simulated time one GUI step takes


class HeadlessError(RuntimeError):
    """The plan could not be executed on the model (a refused operation or a plan that never ends)."""


@dataclass
class HeadlessRun:
    """What one headless episode produced."""

    verdict: OracleResult
    state: dict[str, Any]
    ops: list[Op] = field(default_factory=list)
    wall_s: float = 0.0


def make_model(card: TaskCard, subject: str, seed: int):
    """The console's model for this episode, built exactly as the console process builds it."""
    from consoles.ct.model import CTModel
    from rendering.subjects import load_runtime

    return CTModel(load_runtime(subject), card.id, seed, card.initial_state, card.perturbations)


def apply_op(model, op: Op) -> None:
    """Perform one planner operation with the CTModel method of the same meaning."""
    a = op.args
    if op.name == "set_range":
        model.set_range(**{f"{a['edge']}_mm": a["value"]})
    elif op.name == "review_prior":
        model.open_recon(a["series_index"])
    elif op.name in ("set_table_height", "set_monitor_z"):
        getattr(model, op.name)(a["value"])
    elif op.name == "set_param":
        model.set_param(a["name"], a["value"])
    elif op.name == "set_roi":
        model.set_roi(a["x_mm"], a["y_mm"])
    elif op.name in ("select_protocol",):
        model.select_protocol(a["pid"])
    elif op.name in ("load_protocol", "acquire_scout", "confirm", "scan", "acquire_monitor_reference",
                     "start_bolus_tracking", "open_recon"):
        getattr(model, op.name)()
    else:
        raise HeadlessError(f"the headless CT driver does not know operation {op.name!r}")


def run_ct(card: TaskCard, subject: str, seed: int, planner: CTPlanner | None = None,
           max_ops: int = MAX_OPS) -> HeadlessRun:
    """Drive CTModel with the reference plan until the planner says done; return the oracle's verdict."""
    from consoles.ct.model import ConsoleActionError

    t0 = time.perf_counter()
    planner = planner or CTPlanner(card, subject)
    model = make_model(card, subject, seed)
    clock = SimClock(start=model.t)
    clock.subscribe(model.on_clock)
    ops: list[Op] = []
    while True:
        st = model.state()
        op = planner.next_op(st)
        ops.append(op)
        if op.name == "done":
            break
        if len(ops) > max_ops:
            tail = ", ".join(f"{o.name}{o.args or ''}" for o in ops[-5:])
            raise HeadlessError(f"{card.id} {subject} seed {seed}: no 'done' after {max_ops} operations; last: {tail}")
        if op.name == "wait":
            clock.advance(wait_seconds(op.args["seconds"]))
            continue
        try:
            apply_op(model, op)
        except ConsoleActionError as exc:
            raise HeadlessError(f"{card.id} {subject} seed {seed}: the console refused {op}: {exc}") from exc
        clock.advance(OP_SECONDS)
    verdict = get_oracle(card.oracle)(st, planner.oracle, card)
    return HeadlessRun(verdict, st, ops, time.perf_counter() - t0)


def score_initial_ct(card: TaskCard, subject: str, seed: int) -> OracleResult:
    """The oracle's verdict on the start state, nothing done (the no-op agent's best case)."""
    from scoring.subject_oracle import load_oracle

    st = make_model(card, subject, seed).state()
    return get_oracle(card.oracle)(st, load_oracle(subject), card)
