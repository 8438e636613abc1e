"""The one loop every headless driver runs: planner -> operation -> model method -> clock, then the oracle.

A modality's driver (runner/headless/<modality>.py) only says how one planner operation becomes a call
of its console model (`apply_op`); building the model, advancing simulated time, bounding a plan that
never ends and scoring are the same for CT, MR and ultrasound.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from consoles.common.clock import SimClock
from consoles.common.model_base import ConsoleActionError
from runner.actions import NOMINAL_SECONDS
from runner.agents.reference.common import Op, wait_seconds
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult
from tasks.card import TaskCard

OP_SECONDS = NOMINAL_SECONDS["click"]  # simulated time one GUI step takes
# each modality's console model class: (module, class), all built as (runtime, task id, seed, initial state,
# perturbations) exactly as the console process builds them
MODELS = {"ct": ("consoles.ct.model", "CTModel"), "mr": ("consoles.mr.model", "MRModel"),
          "us": ("consoles.us.model", "USModel")}


class HeadlessError(RuntimeError):
    """The plan could not be executed on the model (a refused operation or a plan that never ends)."""


@dataclass
class HeadlessRun:
    """What one headless episode produced."""

    verdict: OracleResult
    state: dict[str, Any]
    ops: list[Op] = field(default_factory=list)
    wall_s: float = 0.0


def make_model(card: TaskCard, subject: str, seed: int) -> Any:
    """The console's model for this episode, built exactly as the console process builds it."""
    from rendering.subjects import load_runtime

    module, cls = MODELS[card.modality]
    model_cls = getattr(importlib.import_module(module), cls)
    # the plain JSON a console process receives (consoles.common.console_card.ConsoleCard)
    return model_cls(load_runtime(subject), card.id, seed, dict(card.initial_state), dict(card.perturbations))


def drive(card: TaskCard, subject: str, seed: int, planner: Any, apply_op: Callable[[Any, Op], None],
          max_ops: int) -> HeadlessRun:
    """Run `planner` on a fresh model until it says done (at most `max_ops` operations); the verdict of
    the card's oracle on the final state. Waits advance the clock by what they ask, every other
    operation by one GUI step's nominal time, as the console's clock does."""
    t0 = time.perf_counter()
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


def score_initial(card: TaskCard, subject: str, seed: int) -> OracleResult:
    """The oracle's verdict on the start state, nothing done (the no-op agent's best case)."""
    from scoring.subject_oracle import load_oracle

    st = make_model(card, subject, seed).state()
    return get_oracle(card.oracle)(st, load_oracle(subject), card)
