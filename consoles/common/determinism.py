"""Qt settings that make a console's pixels a pure function of (task, subject, seed, actions).

Wall-clock driven behaviour is switched off: caret blinking, tooltips, UI animations, and the
timestamp-based double-click detector (replaced by one that only pairs clicks within one runner
step; see DoubleClickFilter). The UI font is loaded from a pinned file, never from the font set.
"""
from __future__ import annotations

import ctypes
import os
import struct
import time
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common.import_memory import forget_checked_sources

forget_checked_sources()  # every later import: PySide6's source check no longer fills linecache

FONT_FILE_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",  # Debian fonts-dejavu-core (installed by bootstrap)
)
BOLD_FONT_FILE_CANDIDATES = ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",)
MONO_FONT_FILE_CANDIDATES = ("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",)
UI_FONT_PIXEL_SIZE = 13


def qt_environment() -> dict[str, str]:
    """Environment a console process needs before QApplication exists."""
    return {
        "QT_QPA_PLATFORM": "xcb",  # embedded VTK needs a real X window; offscreen breaks it
        "QT_ENABLE_HIGHDPI_SCALING": "0",
        "QT_SCALE_FACTOR": "1",
        "QT_FONT_DPI": "96",
        "QT_ACCESSIBILITY": "0",
        "QT_XCB_NO_XI2": "1",  # core pointer events only: XTEST input arrives the same way every time
        "MEDIMAGEOS_ROLE": "console",  # guards the subject oracle against console code
    }


def apply_environment() -> None:
    for key, value in qt_environment().items():
        os.environ.setdefault(key, value)
    os.environ["MEDIMAGEOS_ROLE"] = "console"


def _first_existing(paths: tuple[str, ...]) -> str:
    for p in paths:
        if Path(p).is_file():
            return p
    raise FileNotFoundError(
        f"pinned UI font not found (looked for {', '.join(paths)}); run scripts/bootstrap.sh "
        "to install fonts-dejavu-core"
    )


def load_pinned_fonts() -> QtGui.QFont:
    """Register the pinned font files and return the UI font (explicit family, pixel size, no hinting)."""
    families = []
    for candidates in (FONT_FILE_CANDIDATES, BOLD_FONT_FILE_CANDIDATES, MONO_FONT_FILE_CANDIDATES):
        fid = QtGui.QFontDatabase.addApplicationFont(_first_existing(candidates))
        if fid < 0:
            raise RuntimeError(f"Qt could not load the pinned font {candidates[0]}")
        families.extend(QtGui.QFontDatabase.applicationFontFamilies(fid))
    font = QtGui.QFont("DejaVu Sans")
    font.setPixelSize(UI_FONT_PIXEL_SIZE)
    font.setHintingPreference(QtGui.QFont.HintingPreference.PreferNoHinting)
    font.setStyleStrategy(QtGui.QFont.StyleStrategy.NoFontMerging)
    return font


def neutral_palette() -> QtGui.QPalette:
    """A fixed dark, vendor-neutral palette (never the system's)."""
    p = QtGui.QPalette()
    c = QtGui.QColor
    roles = QtGui.QPalette.ColorRole
    p.setColor(roles.Window, c(43, 47, 54))
    p.setColor(roles.WindowText, c(226, 230, 235))
    p.setColor(roles.Base, c(28, 31, 36))
    p.setColor(roles.AlternateBase, c(38, 42, 48))
    p.setColor(roles.Text, c(235, 238, 242))
    p.setColor(roles.Button, c(62, 68, 78))
    p.setColor(roles.ButtonText, c(235, 238, 242))
    p.setColor(roles.Highlight, c(46, 125, 200))
    p.setColor(roles.HighlightedText, c(255, 255, 255))
    p.setColor(roles.ToolTipBase, c(60, 60, 60))
    p.setColor(roles.ToolTipText, c(240, 240, 240))
    p.setColor(roles.PlaceholderText, c(140, 146, 156))
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(QtGui.QPalette.ColorGroup.Disabled, role, c(120, 125, 133))
    p.setColor(QtGui.QPalette.ColorGroup.Disabled, roles.Button, c(50, 54, 61))
    return p


class DoubleClickFilter(QtCore.QObject):
    """Makes a double click exactly 'two presses of one button within one runner step'.

    Qt pairs presses by X server timestamps (wall time) and, under XTEST, not even reliably: the
    same injected double click came through as a double click in one run and as two presses in
    the next, and a short drag followed by another starting within a few pixels turned the second
    press into a double click, so that drag never started. Qt's own pairing is therefore switched
    off (a zero interval, see configure_application) and done here instead: the runner injects a
    double_click as one burst and settles after every action, so 'same step' is deterministic.
    """

    def __init__(self) -> None:
        super().__init__()
        self.epoch = 0
        self._press_epoch = -1
        self._presses = 0  # physical presses seen at the window in _press_epoch
        self._delivering = False

    def reset(self) -> None:
        """As constructed: the first runner step, no press seen (a console reset in place)."""
        self.epoch, self._press_epoch, self._presses = 0, -1, 0

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt API)
        et = event.type()
        if et == QtCore.QEvent.Type.MouseButtonPress and isinstance(obj, QtGui.QWindow) and not self._delivering:
            # Each physical press reaches the window exactly once (widgets may see it twice,
            # through their parents); the presses of one double_click can share an X timestamp.
            if self._press_epoch != self.epoch:
                self._press_epoch, self._presses = self.epoch, 0
            self._presses += 1
            if self._presses == 2:  # the second press of this step: press, then double click, as Qt does
                me = event
                dbl = QtGui.QMouseEvent(QtCore.QEvent.Type.MouseButtonDblClick, me.position(),
                                        me.scenePosition(), me.globalPosition(), me.button(),
                                        me.buttons(), me.modifiers())
                self._delivering = True
                try:
                    obj.event(event)
                    QtCore.QCoreApplication.sendEvent(obj, dbl)
                finally:
                    self._delivering = False
                return True
        elif et == QtCore.QEvent.Type.MouseButtonDblClick and not self._delivering:
            return True  # Qt's own pairing (should not happen with a zero interval)
        elif et in (QtCore.QEvent.Type.ToolTip, QtCore.QEvent.Type.WhatsThis):
            return True  # tooltips appear after a wall-clock hover delay
        return False


class _Cookie(ctypes.Structure):
    _fields_ = [("sequence", ctypes.c_uint)]


class _AtomReply(ctypes.Structure):
    _fields_ = [("response_type", ctypes.c_uint8), ("pad0", ctypes.c_uint8), ("sequence", ctypes.c_uint16),
                ("length", ctypes.c_uint32), ("atom", ctypes.c_uint32)]


XCB_CLIENT_MESSAGE = 33
FENCE_ATOM = b"_MEDIMAGEOS_INPUT_FENCE"
FENCE_TIMEOUT_S = 5.0  # wall clock: only a broken X connection takes this long


class InputFence(QtCore.QAbstractNativeEventFilter):
    """Makes 'settle' see every X event the runner injected before it asked, every time.

    The runner injects input and waits for the X server (XSync) before it asks the console to
    settle, so the events are already on their way to Qt's connection. Qt reads them on its own
    reader thread, though, and a processEvents() right after QGuiApplication.sync() could run
    before that thread had queued them: under load an injected click then arrived one step late
    (a caliper's second point, about 2 runs in 25). Here settle sends a ClientMessage to the
    console's own window on Qt's connection and processes events until it comes back: the X
    server queues it behind everything it delivered before, so every injected event has been
    handled once it is seen.
    """

    def __init__(self, app: QtWidgets.QApplication, window: QtWidgets.QWidget) -> None:
        super().__init__()
        self._xcb = ctypes.CDLL("libxcb.so.1")
        x = self._xcb
        x.xcb_intern_atom.restype = _Cookie
        x.xcb_intern_atom.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint16, ctypes.c_char_p]
        x.xcb_intern_atom_reply.restype = ctypes.POINTER(_AtomReply)
        x.xcb_intern_atom_reply.argtypes = [ctypes.c_void_p, _Cookie, ctypes.c_void_p]
        x.xcb_send_event.restype = _Cookie
        x.xcb_send_event.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.c_char_p]
        x.xcb_flush.argtypes = [ctypes.c_void_p]
        self._app, self._window = app, window
        self._conn = app.nativeInterface().connection()
        reply = x.xcb_intern_atom_reply(self._conn, x.xcb_intern_atom(self._conn, 0, len(FENCE_ATOM), FENCE_ATOM),
                                        None)
        if not reply:
            raise RuntimeError("the X server did not intern the input fence atom")
        self._atom = reply.contents.atom
        libc = ctypes.CDLL(None)
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(reply)
        self.sent = self.seen = 0
        app.installNativeEventFilter(self)

    def nativeEventFilter(self, event_type, message):  # noqa: N802 (Qt API)
        if bytes(event_type) == b"xcb_generic_event_t":
            p = int(message)
            if ctypes.c_uint8.from_address(p).value & 0x7F == XCB_CLIENT_MESSAGE \
                    and ctypes.c_uint32.from_address(p + 8).value == self._atom:
                self.seen = max(self.seen, ctypes.c_uint32.from_address(p + 12).value)
                return True, 0
        return False, 0

    def pass_through(self) -> None:
        """Process events until the fence sent now has come back (every earlier X event handled)."""
        self.sent += 1
        window = int(self._window.winId())
        # xcb_client_message_event_t: type, format 32, sequence, window, message type, data32[5]
        ev = struct.pack("<BBHII5I", XCB_CLIENT_MESSAGE, 32, 0, window, self._atom, self.sent, 0, 0, 0, 0)
        self._xcb.xcb_send_event(self._conn, 0, window, 0, ev)
        self._xcb.xcb_flush(self._conn)
        deadline = time.monotonic() + FENCE_TIMEOUT_S
        while self.seen < self.sent:
            if time.monotonic() > deadline:
                raise RuntimeError(f"input fence {self.sent} did not come back within {FENCE_TIMEOUT_S} s")
            self._app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)


class NoAnimationStyle(QtWidgets.QProxyStyle):
    """Fusion with widget animations off: their frames follow the wall clock (hover/focus fades).

    The text caret is not drawn either: Qt still toggles it on a wall-clock timer in some widgets
    even with a zero flash time, so its one-pixel column differed between identical runs. The
    focused field keeps its highlighted frame and its selection.
    """

    def pixelMetric(self, metric, option=None, widget=None):  # noqa: N802 (Qt API)
        if metric == QtWidgets.QStyle.PixelMetric.PM_TextCursorWidth:
            return 0
        return super().pixelMetric(metric, option, widget)

    def styleHint(self, hint, option=None, widget=None, returnData=None):  # noqa: N802 (Qt API)
        if hint == QtWidgets.QStyle.StyleHint.SH_Widget_Animation_Duration:
            return 0
        return super().styleHint(hint, option, widget, returnData)


def configure_application(app: QtWidgets.QApplication, benchmark_mode: bool) -> DoubleClickFilter | None:
    """Style, palette, font and (in benchmark mode) the wall-clock-free behaviour."""
    app.setStyle(NoAnimationStyle(QtWidgets.QStyleFactory.create("Fusion")))
    app.setPalette(neutral_palette())
    app.setFont(load_pinned_fonts())
    app.setCursorFlashTime(0)  # caret never blinks
    QtGui.QGuiApplication.styleHints().setCursorFlashTime(0)
    for effect in (QtCore.Qt.UIEffect.UI_General, QtCore.Qt.UIEffect.UI_AnimateMenu,
                   QtCore.Qt.UIEffect.UI_FadeMenu, QtCore.Qt.UIEffect.UI_AnimateCombo,
                   QtCore.Qt.UIEffect.UI_AnimateTooltip, QtCore.Qt.UIEffect.UI_FadeTooltip,
                   QtCore.Qt.UIEffect.UI_AnimateToolBox):
        app.setEffectEnabled(effect, False)
    if not benchmark_mode:
        return None
    # Qt never pairs clicks itself (by wall-clock timestamps); DoubleClickFilter pairs the two
    # presses of one runner step instead.
    QtGui.QGuiApplication.styleHints().setMouseDoubleClickInterval(0)
    app.setDoubleClickInterval(0)
    app.setKeyboardInputInterval(0)
    filt = DoubleClickFilter()
    app.installEventFilter(filt)
    return filt
