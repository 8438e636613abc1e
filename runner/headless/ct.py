"""Headless CT driver: the reference planner's operations executed on CTModel (pure, no Qt), then scored.

The planner (runner/agents/reference/ct.py) reads the same registry targets as in the GUI; here each of
its operations is one public CTModel method call instead of clicks and keystrokes, and simulated time
advances by the GUI action's nominal duration (or the requested wait), through `on_clock` like the
console's clock does.
"""
from __future__ import annotations

from runner.agents.reference.common import Op
from runner.agents.reference.ct import CTPlanner
from runner.headless.drive import HeadlessError, HeadlessRun, drive, make_model, score_initial
from tasks.card import TaskCard

__all__ = ["HeadlessError", "HeadlessRun", "apply_op", "make_model", "run_ct", "score_initial"]

MAX_OPS = 300  # a plan needs about 20; more means the planner is stuck on a refused or clamped value


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
    return drive(card, subject, seed, planner or CTPlanner(card, subject), apply_op, max_ops)
