"""Headless MR driver: the reference planner's operations executed on MRModel (pure, no Qt), then scored.

The planner (runner/agents/reference/mr.py) decides as in the GUI; here each of its operations is one
public MRModel method call instead of clicks and keystrokes, and simulated time advances through a SimClock
by the GUI action's nominal duration (or the requested wait), as the console's clock does.
"""
from __future__ import annotations

import time
from consoles.common.clock import SimClock
from runner.actions import NOMINAL_SECONDS
from runner.agents.reference.common import Op, wait_seconds
from runner.agents.reference.mr import MRPlanner
from runner.headless.ct import HeadlessError, HeadlessRun
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult
from tasks.card import TaskCard

MAX_OPS = 100  # a plan needs at most about 15; more means the planner is stuck on a refused operation
OP_SECONDS = NOMINAL_SECONDS["click"]  # simulated time one GUI step takes
# operations whose arguments are MRModel method arguments as they stand
DIRECT = ("open", "rename", "repeat", "skip", "delete", "move", "add_protocol", "go", "stop", "set_param",
          "activate_viewport", "set_graphics_mode", "load_entry", "select_entry", "set_shim_box_visible")
# graphical planning on a viewport's image: the MRModel method takes that image's plane instead of the index
ON_DISPLAY = ("rotate_group", "translate_group", "drag_grip", "move_shim")


def make_model(card: TaskCard, subject: str, seed: int):
    """The console's model for this episode, built exactly as the console process builds it."""
    from consoles.mr.model import MRModel
    from rendering.subjects import load_runtime

    return MRModel(load_runtime(subject), card.id, seed, card.initial_state, card.perturbations)


def apply_op(model, op: Op) -> None:
    """Perform one planner operation with the MRModel method of the same name."""
    if op.name in ON_DISPLAY:
        args = dict(op.args)
        image = model.viewport_image_data(model._viewport(args.pop("viewport")))
        if image is None:
            raise HeadlessError(f"{op.name}: viewport {op.args['viewport'] + 1} shows no image")
        getattr(model, op.name)(image.pose, **args)
        return
    if op.name not in DIRECT:
        raise HeadlessError(f"the headless MR driver does not know operation {op.name!r}")
    getattr(model, op.name)(**op.args)


def run_mr(card: TaskCard, subject: str, seed: int, planner: MRPlanner | None = None,
           max_ops: int = MAX_OPS) -> HeadlessRun:
    """Drive MRModel with the reference plan until the planner says done; return the oracle's verdict."""
    from consoles.mr.model import ConsoleActionError

    t0 = time.perf_counter()
    planner = planner or MRPlanner(card, subject)
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


def score_initial_mr(card: TaskCard, subject: str, seed: int) -> OracleResult:
    """The oracle's verdict on the start state, nothing done (the no-op agent's best case)."""
    from scoring.subject_oracle import load_oracle

    st = make_model(card, subject, seed).state()
    return get_oracle(card.oracle)(st, load_oracle(subject), card)
