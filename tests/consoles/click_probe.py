"""Clicks a probe widget through real XTEST input, one runner step per action, and reports the
mouse events the widget received (press / double) per step.

    python -m tests.consoles.click_probe   (under Xvfb; prints JSON)
"""
from __future__ import annotations

import json
import os


def main() -> int:
    from consoles.common.determinism import InputFence, apply_environment, configure_application

    apply_environment()
    from PySide6 import QtCore, QtWidgets

    from runner.actions import parse_action
    from tasks.card import ActionProfile
    from runner.xinput import XTestInput

    app = QtWidgets.QApplication(["click_probe"])
    filt = configure_application(app, benchmark_mode=True)
    seen: list[str] = []

    class Target(QtWidgets.QWidget):
        def mousePressEvent(self, ev) -> None:  # noqa: N802 (Qt API)
            seen.append("press")

        def mouseDoubleClickEvent(self, ev) -> None:  # noqa: N802 (Qt API)
            seen.append("double")

    w = Target()
    w.setFixedSize(400, 300)
    w.move(0, 0)
    w.show()
    w.activateWindow()

    fence = None

    def settle() -> None:
        # as the console shell settles: the input fence first (every injected X event handled; a bare
        # processEvents could run before Qt's reader thread queued them, and under load a click then
        # showed up a step late), then what those events posted
        if fence is not None:
            fence.pass_through()
        for _ in range(3):
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)

    settle()
    fence = InputFence(app, w)
    xin = XTestInput(os.environ["DISPLAY"])
    script = {
        "double_click": ['{"action": "double_click", "x": 100, "y": 100}'],
        "two_clicks_in_two_steps": ['{"action": "click", "x": 100, "y": 100}',
                                    '{"action": "click", "x": 101, "y": 100}'],
        "short_drags": ['{"action": "drag", "x": 100, "y": 100, "to_x": 100, "to_y": 103}',
                        '{"action": "drag", "x": 100, "y": 103, "to_x": 100, "to_y": 106}',
                        '{"action": "drag", "x": 100, "y": 106, "to_x": 100, "to_y": 109}'],
    }
    out = {}
    for name, actions in script.items():
        per_step = []
        for text in actions:
            seen.clear()
            xin.perform(parse_action(text, ActionProfile(), (1280, 800)).action)
            xin.sync()
            settle()
            filt.epoch += 1  # what the console shell does at the end of every settle
            per_step.append(list(seen))
        out[name] = per_step
        xin.perform(parse_action('{"action": "move", "x": 300, "y": 250}', ActionProfile(), (1280, 800)).action)
        xin.sync()
        settle()
        filt.epoch += 1
    xin.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
