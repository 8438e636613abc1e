"""Cheap drag repaints on a real console: a settle renders each changed, visible viewport exactly
once (after every change of the step, so press, motion and release cost one frame), hidden
viewports not at all, and a drag split into many small steps ends on the same screen as the same
drag done at once."""
from __future__ import annotations

import numpy as np

from runner.actions import Action
from runner.capture import ScreenCapture
from runner.console_process import ConsoleProcess
from runner.xinput import open_input

TASK = "ct_ui_smoke_routine"
DRAG_PX = 60  # the start edge moves down this far in total
SMALL_STEPS = 6  # 10 px each (presses closer than Qt's double-click distance to the last one are lost)


def _planning_console(display) -> ConsoleProcess:
    """A console with a chest protocol loaded and its scouts acquired (planning page on show)."""
    con = ConsoleProcess(display, "ct", TASK, "dev", 0)
    con.start()
    return con


def _prepare(con: ConsoleProcess, inp) -> None:
    geo = con.geometry()["geometry"]
    for name in ("protocol_item:chest_routine", "load_protocol", "acquire_scout"):
        x, y, w, h = geo[name]
        inp.perform(Action("click", x=x + w // 2, y=y + h // 2))
        con.settle(0.5)
    con.settle(5.0)  # the scout finishes in simulated time
    assert con.state()["scout"]["status"] == "done"


def _start_handle(con: ConsoleProcess) -> tuple[int, int]:
    h = con.geometry()["viewports"]["scout_ap"]["handles"]["start_handle"]
    return int(round(h["x"])), int(round(h["y"]))


def _drag(con: ConsoleProcess, inp, dy: int, advance: float) -> dict:
    """Drag the AP scout's start edge by dy pixels; the settle's reply (with its frame counts)."""
    x, y = _start_handle(con)
    inp.perform(Action("drag", x=x, y=y, x2=x, y2=y + dy))
    return con.request("settle", advance=advance)


def _visible_viewports(con: ConsoleProcess) -> set[str]:
    return set(con.geometry()["viewports"])


def test_drag_renders_each_visible_viewport_once_per_settle_and_steps_add_up(display):
    inp = open_input(display.name)
    cap = ScreenCapture(display.name)
    shots, states = [], []
    try:
        for n_steps in (1, SMALL_STEPS):
            con = _planning_console(display)
            try:
                _prepare(con, inp)
                visible = _visible_viewports(con)
                assert visible == {"scout_ap", "scout_lateral"}
                start_before = con.state()["plan"]["start_mm"]
                for i in range(n_steps):
                    last = i == n_steps - 1
                    reply = _drag(con, inp, DRAG_PX // n_steps, 1.0 if last else 0.0)
                    frames = reply["frames"]
                    # the range moved on both scouts: each renders exactly once, in the settle (a
                    # frame drawn outside the settle would not be counted here, and would race the
                    # capture); the hidden review and bolus viewports not at all
                    assert frames == {"scout_ap": 1, "scout_lateral": 1}, (n_steps, i, frames)
                # a settle with nothing changed renders nothing
                assert con.request("settle", advance=0.0)["frames"] == {}
                st = con.state()
                assert st["plan"]["start_mm"] < start_before  # dragged down = towards the feet
                shots.append(cap.grab_rgb())
                states.append(st)
            finally:
                con.stop()
    finally:
        cap.close()
        inp.close()
    one, many = states
    assert one["plan"] == many["plan"] and one["sim_time"] == many["sim_time"]
    diff = np.argwhere((shots[0] != shots[1]).any(axis=-1))
    assert diff.size == 0, f"{len(diff)} pixels differ, first at {diff[:3].tolist()}"
