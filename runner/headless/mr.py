"""Headless MR driver: the reference planner's operations executed on MRModel (pure, no Qt), then scored.

The planner (runner/agents/reference/mr.py) decides as in the GUI; here each of its operations is one
public MRModel method call instead of clicks and keystrokes, and simulated time advances through a SimClock
by the GUI action's nominal duration (or the requested wait), as the console's clock does.
"""
from __future__ import annotations

from runner.agents.reference.common import Op
from runner.agents.reference.mr import MRPlanner
from runner.headless.drive import HeadlessError, HeadlessRun, drive, make_model, score_initial
from tasks.card import TaskCard

__all__ = ["HeadlessError", "HeadlessRun", "apply_op", "make_model", "run_mr", "score_initial"]

MAX_OPS = 100  # a plan needs at most about 15; more means the planner is stuck on a refused operation
# operations whose arguments are MRModel method arguments as they stand
DIRECT = ("open", "rename", "repeat", "skip", "delete", "move", "add_protocol", "go", "stop", "set_param",
          "activate_viewport", "set_graphics_mode", "load_entry", "select_entry", "set_shim_box_visible",
          "measure_roi", "set_roi_tool",
          "select_list_item")  # issue 21: a series-list click by screen position
# graphical planning on a viewport's image: the MRModel method takes that image's plane instead of the index
ON_DISPLAY = ("rotate_group", "translate_group", "drag_grip", "move_shim")


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
    return drive(card, subject, seed, planner or MRPlanner(card, subject), apply_op, max_ops)
