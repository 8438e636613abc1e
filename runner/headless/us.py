"""Headless ultrasound driver: the reference planner's operations executed on USModel (pure, no Qt), then scored.

The planner (runner/agents/reference/us.py) decides as in the GUI; here each of its operations is the
USModel method of the same name instead of clicks and keystrokes, and simulated time advances through a
SimClock by the GUI action's nominal duration (or the requested wait), as the console's clock does.
"""
from __future__ import annotations

from runner.agents.reference.common import Op
from runner.agents.reference.us import USPlanner
from runner.headless.drive import HeadlessError, HeadlessRun, drive, make_model, score_initial
from tasks.card import TaskCard

__all__ = ["HeadlessError", "HeadlessRun", "apply_op", "make_model", "run_us", "score_initial"]

MAX_OPS = 60  # a plan needs at most about 10; more means the planner is stuck on a refused operation
# operations whose arguments are USModel method arguments as they stand
DIRECT = ("set_param", "set_preset", "set_pose", "freeze", "caliper_point", "add_annotation", "save_image",
          "save_clip", "apply_gel")


def apply_op(model, op: Op) -> None:
    """Perform one planner operation with the USModel method of the same name."""
    if op.name not in DIRECT:
        raise HeadlessError(f"the headless ultrasound driver does not know operation {op.name!r}")
    getattr(model, op.name)(**op.args)


def run_us(card: TaskCard, subject: str, seed: int, planner: USPlanner | None = None,
           max_ops: int = MAX_OPS) -> HeadlessRun:
    """Drive USModel with the reference plan until the planner says done; return the oracle's verdict."""
    return drive(card, subject, seed, planner or USPlanner(card, subject), apply_op, max_ops)
