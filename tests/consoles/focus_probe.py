"""Disables a focused field while the console window is inactive, and reports where focus went.

    python -m tests.consoles.focus_probe   (under Xvfb; prints JSON)
"""
from __future__ import annotations

import json


def main() -> int:
    from consoles.common.determinism import apply_environment, configure_application

    apply_environment()
    from PySide6 import QtCore, QtWidgets

    from consoles.common.shell import ConsoleWindow
    from consoles.common.widgets import form, number_field

    app = QtWidgets.QApplication(["focus_probe"])
    configure_application(app, benchmark_mode=True)

    def settle() -> None:
        for _ in range(3):
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)

    def settle_until(condition, what: str, timeout_s: float = 20.0) -> None:
        """Process events until `condition()` holds: the X server's activation round trip can come later
        than a few passes of the event loop on a loaded machine, and a late activation of a window with no
        focus widget hands focus to its first enabled field (here b), which is not what is being tested."""
        timer = QtCore.QElapsedTimer()
        timer.start()
        while not condition():
            if timer.elapsed() > timeout_s * 1000:
                raise SystemExit(f"focus_probe: {what} not within {timeout_s:g} s")
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        settle()

    out = {}
    for active in (True, False):
        win = ConsoleWindow()
        a = number_field("a", 0, 10, 1, 1, "mm", lambda v: None)
        b = number_field("b", 0, 10, 1, 1, "mm", lambda v: None)
        win.setLayout(form([("A", a), ("B", b)]))
        win.show()
        win.activateWindow()
        settle_until(win.isActiveWindow, "the console window's activation")
        a.setFocus(QtCore.Qt.FocusReason.MouseFocusReason)
        settle_until(lambda: win.focusWidget() is a, "focus on field a")
        other = QtWidgets.QWidget()
        if not active:  # another window takes the X focus: the console window goes inactive
            other.show()
            other.activateWindow()
            settle_until(lambda: not win.isActiveWindow(), "the console window's deactivation")
        a.setEnabled(False)
        settle()
        out["active" if active else "inactive"] = {
            "window_active": win.isActiveWindow(), "b_is_focus_widget": win.focusWidget() is b,
            "b_selected": b.hasSelectedText()}
        other.close()
        win.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
