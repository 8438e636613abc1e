"""The process shell every console shares: Qt application, fixed frameless window, control server.

A modality console supplies a `ConsoleController` (its model plus the Qt widgets binding it);
the shell owns the clock, the control socket and the settle protocol:

settle = take in pending X input -> advance the simulated clock -> let widgets repaint ->
         push every frame to the X server (Qt and VTK connections) -> answer.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from consoles.common import determinism

determinism.apply_environment()  # before Qt is imported anywhere in this process

from PySide6 import QtCore, QtGui, QtNetwork, QtWidgets  # noqa: E402

from consoles.common.clock import SimClock  # noqa: E402
from consoles.common.protocol import PROTOCOL_VERSION, ControlProtocol  # noqa: E402
from consoles.common import viewport as viewport_module  # noqa: E402
from consoles.common.viewport import ImageViewport  # noqa: E402

CONSOLE_VERSION = "0.1.0"


class ConsoleController(Protocol):
    """What a modality console provides to the shell."""

    central: QtWidgets.QWidget

    def state(self) -> dict[str, Any]: ...

    def named_widgets(self) -> dict[str, QtWidgets.QWidget]: ...

    def named_targets(self) -> dict[str, list[int]]: ...

    def viewports(self) -> list[ImageViewport]: ...

    def on_clock(self, t_old: float, t_new: float) -> None: ...

    def rebind(self, model: Any) -> None: ...


# (task, subject, seed, the card as JSON or None) -> (provenance of the new episode, its new model):
# what `reset` needs from the modality (consoles.common.launch makes it).
EpisodeFactory = Callable[[str, str, int, "dict[str, Any] | str | None"], tuple[dict[str, Any], Any]]


def widget_screen_rect(w: QtWidgets.QWidget) -> list[int] | None:
    """[x, y, width, height] on the screen, or None if the widget is not visible."""
    if not w.isVisible():
        return None
    top_left = w.mapToGlobal(QtCore.QPoint(0, 0))
    return [top_left.x(), top_left.y(), w.width(), w.height()]


class ConsoleWindow(QtWidgets.QWidget):
    """The console's one top-level window.

    When the focused field is disabled (say, the plan locks while the cursor is in Start), Qt
    hands focus to the next field and selects its text, so a field the agent never touched would
    look selected and take the next keystrokes. Here focus is dropped instead; Tab still moves
    between enabled fields.
    """

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: N802, A002 (Qt API)
        # The window's own focus widget, not QApplication's: that one is None while Qt's wall-clock
        # focus-out timer has deactivated the window, which made this depend on machine load.
        fw = self.focusWidget()
        if fw is not None and not fw.isEnabled():
            return False
        return super().focusNextPrevChild(next)


class ConsoleShell:
    """Runs one console: window, clock, control server, event loop."""

    def __init__(self, args: argparse.Namespace, width: int, height: int) -> None:
        self.args = args
        self.benchmark_mode = bool(args.control)
        self.app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
        self.dblclick = determinism.configure_application(self.app, self.benchmark_mode)
        self.fence: determinism.InputFence | None = None  # made at the first settle (the window exists)
        viewport_module.MOTION_DELIVERY["mode"] = "settle" if self.benchmark_mode else "timer"
        self.clock = SimClock()
        self.width, self.height = width, height
        self.window = ConsoleWindow()
        self.window.setObjectName("console_window")
        self.window.setWindowFlags(QtCore.Qt.WindowType.FramelessWindowHint)
        self.window.setFixedSize(width, height)
        self.window.move(0, 0)
        self.window.setCursor(QtCore.Qt.CursorShape.ArrowCursor)
        self.layout = QtWidgets.QVBoxLayout(self.window)
        self.layout.setContentsMargins(0, 0, 0, 0)
        self.controller: ConsoleController | None = None
        self.provenance: dict[str, Any] = {}
        self._environment: dict[str, Any] | None = None
        self.protocol = ControlProtocol()
        self._server: QtNetwork.QLocalServer | None = None
        self._clients: list[QtNetwork.QLocalSocket] = []
        self._buffers: dict[int, bytes] = {}
        self._register_commands()
        self._realtime: QtCore.QTimer | None = None
        self.new_episode: EpisodeFactory | None = None  # set by the launcher: enables `reset`

    # ---- wiring -------------------------------------------------------------------------
    def attach(self, controller: ConsoleController) -> None:
        self.controller = controller
        self.layout.addWidget(controller.central)
        self.clock.subscribe(controller.on_clock)

    def _register_commands(self) -> None:
        p = self.protocol
        p.register("hello", self.cmd_hello)
        p.register("settle", self.cmd_settle)
        p.register("advance", self.cmd_advance)
        p.register("state", self.cmd_state)
        p.register("geometry", self.cmd_geometry)
        p.register("quit", self.cmd_quit)
        p.register("reset", self.cmd_reset)
        if os.environ.get("MEDIMAGEOS_FAULT_INJECTION") == "1":
            # Only for the runner's own fault tests: a real crash and a real hang of a real console.
            p.register("_crash", lambda: os._exit(17))
            p.register("_hang", lambda seconds=3600: time.sleep(seconds) or {})

    # ---- commands -----------------------------------------------------------------------
    def cmd_hello(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "version": CONSOLE_VERSION,
            "window_id": int(self.window.winId()),
            "viewport": [self.width, self.height],
            "pid": os.getpid(),
            "sim_time": self.clock.now,
            "commands": self.protocol.commands,
        }

    def _process_all(self) -> None:
        # Events posted while handling events (repaints, queued signals) need a second pass.
        for _ in range(2):
            self.app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)
            QtCore.QCoreApplication.sendPostedEvents()

    def _keep_active(self) -> None:
        """The console window is the active one at the end of every step.

        Qt's xcb backend deactivates a window 400 ms (wall clock) after a FocusOut that no FocusIn
        follows, which would make focus frames, the caret and even key delivery depend on timing.
        Without a window manager nothing else competes for focus, so take it back explicitly.
        """
        if self.benchmark_mode and not self.window.isActiveWindow():
            self.window.activateWindow()
            QtGui.QGuiApplication.sync()
            self._process_all()

    def _flush_frames(self) -> None:
        QtGui.QGuiApplication.sync()  # X input in, Qt events and repaints out, round trip to the server
        self._process_all()
        self._keep_active()
        if self.controller is not None:
            shown = [vp for vp in self.controller.viewports() if vp.isVisible()]
            for vp in shown:
                vp.render_pending()  # one frame per changed viewport (hidden ones wait)
            # then wait for the server to have them all: it puts one frame on screen while the
            # next viewport renders, instead of a round trip after each
            for vp in shown:
                vp.sync_display()
        QtGui.QGuiApplication.sync()

    def cmd_settle(self, advance: float = 0.0) -> dict[str, Any]:
        viewports = self.controller.viewports() if self.controller is not None else []
        frames_before = [vp.frames_rendered for vp in viewports]
        # deliver every X event the runner injected before asking (it waited for the X server)
        if self.fence is None:
            self.fence = determinism.InputFence(self.app, self.window)
        self.fence.pass_through()
        self._process_all()
        for vp in viewports:
            vp.flush_pending_motion()
        if advance:
            self.clock.advance(advance)
        self._flush_frames()
        if self.dblclick is not None:
            self.dblclick.epoch += 1
        # frames each viewport rendered for this step (the runner ignores it; tests and bench read it)
        frames = {vp.name: vp.frames_rendered - n for vp, n in zip(viewports, frames_before)
                  if vp.frames_rendered != n}
        return {"sim_time": self.clock.now, "frames": frames}

    def cmd_advance(self, seconds: float) -> dict[str, Any]:
        self.clock.advance(seconds)
        self._flush_frames()
        return {"sim_time": self.clock.now}

    def cmd_state(self) -> dict[str, Any]:
        assert self.controller is not None
        state = self.controller.state()
        state["provenance"] = dict(self.provenance)
        state["provenance"]["environment"] = dict(self.environment())
        state["sim_time"] = self.clock.now
        state["console_version"] = CONSOLE_VERSION
        return {"state": state}

    def environment(self) -> dict[str, Any]:
        """The console side of the environment fingerprint, computed once (after the first render)."""
        if self._environment is None:
            from consoles.common.environment import console_environment

            viewports = self.controller.viewports() if self.controller is not None else []
            self._environment = console_environment(vp.GetRenderWindow() for vp in viewports)
        return self._environment

    def cmd_geometry(self) -> dict[str, Any]:
        assert self.controller is not None
        rects: dict[str, list[int]] = {}
        for name, w in self.controller.named_widgets().items():
            r = widget_screen_rect(w)
            if r is not None:
                rects[name] = r
        rects.update(self.controller.named_targets())
        transforms = getattr(self.controller, "transforms", lambda: {})()
        # every visible viewport's rect, plane mm -> screen transform, plane pose and handles,
        # whatever the modality (ImageViewport.export_geometry)
        viewports = {vp.name: vp.export_geometry() for vp in self.controller.viewports() if vp.isVisible()}
        return {"geometry": rects, "transforms": transforms, "viewports": viewports,
                "screen": [self.width, self.height]}

    def cmd_reset(self, task: str, subject: str, seed: int, card: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start a new episode in this process, as if the console had just been launched with
        `--task task --subject subject --seed seed` (and `--card-json card`: the validated card the
        runner hands over; without it the console validates `task` itself): a new model (new
        perturbations), a new clock, the widgets and render windows kept and rebound, focus and
        double-click state as at launch. Answers like `hello`, plus `reset_ms` (time spent in the
        console)."""
        if self.new_episode is None or self.controller is None:
            raise RuntimeError("this console cannot reset in place (no episode factory attached)")
        t0 = time.perf_counter()
        # Focus first, while the old model is still bound: a focused field commits its text on
        # focus-out, and that must reach the model being dropped, not the new one.
        fw = self.window.focusWidget()
        if fw is not None:
            fw.clearFocus()
        self._process_all()
        provenance, model = self.new_episode(task, subject, int(seed), card)
        self.clock = SimClock()
        self.clock.subscribe(self.controller.on_clock)
        self.controller.rebind(model)
        self.provenance = provenance
        # Repaint everything, not only what Qt saw change: nothing drawn for the last episode may
        # survive in the backing store or in a render window.
        self.window.update()
        for vp in self.controller.viewports():
            vp.refresh()
        if self.dblclick is not None:
            self.dblclick.reset()
        self._process_all()
        self._focus_as_activated()
        self._process_all()
        reply = self.cmd_hello()
        reply["reset_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
        return reply

    def _focus_as_activated(self) -> None:
        """Give focus where Qt gives it when a window without a focus widget is activated (what a
        fresh launch does): the first widget of the tab chain that takes tab focus and is visible
        and enabled, for the activation reason (a line edit then does not select its text); or
        nobody. (QApplicationPrivate::setActiveWindow with focusNextPrevChild_helper.)"""
        tab = QtCore.Qt.FocusPolicy.TabFocus.value
        w = self.window.nextInFocusChain()
        while w is not None and w is not self.window:
            if ((w.focusPolicy().value & tab) == tab and w.focusProxy() is None
                    and w.isVisibleTo(self.window) and w.isEnabled()):
                w.setFocus(QtCore.Qt.FocusReason.ActiveWindowFocusReason)
                return
            w = w.nextInFocusChain()

    def cmd_quit(self) -> dict[str, Any]:
        QtCore.QTimer.singleShot(0, self.app.quit)
        return {}

    # ---- control server -----------------------------------------------------------------
    def _listen(self, path: str) -> None:
        Path(path).unlink(missing_ok=True)
        self._server = QtNetwork.QLocalServer()
        self._server.setSocketOptions(QtNetwork.QLocalServer.SocketOption.UserAccessOption)
        if not self._server.listen(path):
            raise RuntimeError(f"cannot listen on control socket {path}: {self._server.errorString()}")
        self._server.newConnection.connect(self._on_connection)

    def _on_connection(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            sock = self._server.nextPendingConnection()
            self._clients.append(sock)
            self._buffers[id(sock)] = b""
            sock.readyRead.connect(lambda s=sock: self._on_ready(s))
            sock.disconnected.connect(lambda s=sock: self._on_disconnect(s))

    def _on_disconnect(self, sock: QtNetwork.QLocalSocket) -> None:
        if sock in self._clients:
            self._clients.remove(sock)
        # The runner owns this console: if it goes away, so do we (no orphaned consoles).
        if self.benchmark_mode and not self._clients:
            QtCore.QTimer.singleShot(0, self.app.quit)

    def _on_ready(self, sock: QtNetwork.QLocalSocket) -> None:
        buf = self._buffers.get(id(sock), b"") + bytes(sock.readAll().data())
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                sock.write(self.protocol.handle_line(line))
                sock.flush()
        self._buffers[id(sock)] = buf

    # ---- run ----------------------------------------------------------------------------
    def run(self) -> int:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.window.show()
        self.window.move(0, 0)
        self.window.activateWindow()
        if self.controller is not None:
            for vp in self.controller.viewports():
                vp.Initialize()
        if self.args.control:
            _injected_startup_hang()
            self._listen(self.args.control)
        else:
            # A person at the console: simulated time follows the wall clock, 10 ticks a second.
            self._realtime = QtCore.QTimer()
            self._realtime.setInterval(100)
            self._realtime.timeout.connect(lambda: self.clock.advance(0.1))
            self._realtime.start()
        profile_to = os.environ.get("MEDIMAGEOS_PROFILE")
        if not profile_to:
            return self.app.exec()
        # Developer profiling (issue 14): cProfile over the event loop, stats written at quit.
        import cProfile

        prof = cProfile.Profile()
        try:
            return prof.runcall(self.app.exec)
        finally:
            prof.dump_stats(profile_to)


STARTUP_HANG_ENV = "MEDIMAGEOS_TEST_STARTUP_HANG"


def _injected_startup_hang() -> None:
    """Only for the runner's startup-deadline tests (with MEDIMAGEOS_FAULT_INJECTION=1): stay alive
    without opening the control socket. "always"; or "once:<marker file>": hang only when the marker
    does not exist yet (it is created), so the first start hangs and a retry comes up."""
    how = os.environ.get(STARTUP_HANG_ENV, "")
    if not how or os.environ.get("MEDIMAGEOS_FAULT_INJECTION") != "1":
        return
    if how.startswith("once:"):
        try:
            os.close(os.open(how[len("once:"):], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    elif how != "always":
        return
    print(f"console: {STARTUP_HANG_ENV}={how}: hanging before opening the control socket", file=sys.stderr,
          flush=True)
    while True:
        time.sleep(3600)


def console_arg_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Run a simulated acquisition console.")
    ap.add_argument("--task", required=True, help="task id or path to a task.json")
    ap.add_argument("--card-json", default=None,
                    help="the task's card as validated JSON (the runner passes it: the console then never "
                         "imports the card schema); --task must then be its id or its file")
    ap.add_argument("--subject", default="dev", help="subject id (default: dev)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--control", default="", help="Unix socket path for the runner's control channel")
    return ap
