"""Qt pieces of the MR console view: status icons, the inline rename field and a hand-made drag
(press, move, release) that X-injected input drives the same way every run.

Qt's QDrag runs its own event loop on X11 (it would block the control socket and depends on timing),
so drags here are plain mouse events: the source's press arms a drag, motion beyond a few pixels
starts it (a label follows the pointer), the release drops it on whatever is under the pointer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common.widgets import SteadyCaretLineEdit

STATUS_COLORS = {"pending": "#9aa3ae", "running": "#4dabff", "done": "#4fd672", "stopped": "#ff6b5e",
                 "skipped": "#c9a55a"}
ICON_PX = 14
DRAG_START_PX = 6  # pointer travel that turns a press into a drag


def status_icon(status: str) -> QtGui.QIcon:
    """A small drawn icon per row status: pending ring, running triangle, done tick, stopped square,
    skipped arrow (drawn with QPainter: the same pixels everywhere)."""
    pm = QtGui.QPixmap(ICON_PX, ICON_PX)
    pm.fill(QtCore.Qt.GlobalColor.transparent)
    p = QtGui.QPainter(pm)
    p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    color = QtGui.QColor(STATUS_COLORS[status])
    pen = QtGui.QPen(color, 2)
    s = ICON_PX
    if status == "pending":
        p.setPen(pen)
        p.drawEllipse(QtCore.QRectF(2, 2, s - 4, s - 4))
    elif status == "running":
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(color)
        p.drawPolygon(QtGui.QPolygonF([QtCore.QPointF(3, 1), QtCore.QPointF(s - 1, s / 2), QtCore.QPointF(3, s - 1)]))
    elif status == "done":
        p.setPen(QtGui.QPen(color, 2.5))
        p.drawPolyline(QtGui.QPolygonF([QtCore.QPointF(2, s / 2), QtCore.QPointF(s / 2 - 1, s - 3),
                                        QtCore.QPointF(s - 2, 3)]))
    elif status == "stopped":
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(color)
        p.drawRect(QtCore.QRectF(2, 2, s - 4, s - 4))
    else:  # skipped: an arrow passing over
        p.setPen(pen)
        p.drawLine(QtCore.QPointF(1, s / 2), QtCore.QPointF(s - 2, s / 2))
        p.drawPolyline(QtGui.QPolygonF([QtCore.QPointF(s - 6, 3), QtCore.QPointF(s - 2, s / 2),
                                        QtCore.QPointF(s - 6, s - 3)]))
    p.end()
    return QtGui.QIcon(pm)


class RenameField(SteadyCaretLineEdit):
    """The inline editor put over a queue row's name: Enter commits, Escape or a click elsewhere cancels."""

    def __init__(self, parent: QtWidgets.QWidget, on_commit: Callable[[str], None],
                 on_cancel: Callable[[], None]) -> None:
        super().__init__(parent)
        self.setObjectName("rename_field")
        self.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.NoContextMenu)
        self._on_commit, self._on_cancel = on_commit, on_cancel
        self.returnPressed.connect(lambda: self._on_commit(self.text()))
        self.hide()

    def keyPressEvent(self, ev: QtGui.QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if ev.key() == QtCore.Qt.Key.Key_Escape:
            self._on_cancel()
            return
        super().keyPressEvent(ev)

    def focusOutEvent(self, ev: QtGui.QFocusEvent) -> None:  # noqa: N802 (Qt API)
        super().focusOutEvent(ev)
        if self.isVisible():
            self._on_cancel()


@dataclass
class _Pending:
    source: str  # "library" | "series"
    key: Any
    text: str
    start: QtCore.QPoint  # global


class HandDrag(QtCore.QObject):
    """Drags from item views (the protocol library, the series list) made of plain mouse events.

    `sources[viewport widget] = (kind, item_at)` where item_at(local point) -> (key, text) or None.
    `drop(kind, key, global_point)` is called on release after a drag; a press without travel
    stays a click for the view itself.
    """

    def __init__(self, indicator_parent: QtWidgets.QWidget,
                 drop: Callable[[str, Any, QtCore.QPoint], None]) -> None:
        super().__init__()
        self._drop = drop
        self._sources: dict[QtWidgets.QWidget, tuple[str, Callable[[QtCore.QPoint], Any]]] = {}
        self._pending: _Pending | None = None
        self.active = False
        self.indicator = QtWidgets.QLabel(indicator_parent)
        self.indicator.setObjectName("drag_indicator")
        self.indicator.setStyleSheet("background: #2e7dc8; color: white; border: 1px solid #8cc4ff; padding: 3px 6px;")
        self.indicator.hide()

    def add_source(self, view: QtWidgets.QAbstractItemView, kind: str,
                   item_at: Callable[[QtCore.QPoint], Any]) -> None:
        self._sources[view.viewport()] = (kind, item_at)
        view.viewport().installEventFilter(self)

    def cancel(self) -> None:
        """No drag armed or under way (a console reset, a refresh that removed the source item)."""
        self._pending = None
        self.active = False
        self.indicator.hide()

    def eventFilter(self, obj: QtCore.QObject, ev: QtCore.QEvent) -> bool:  # noqa: N802 (Qt API)
        if obj not in self._sources:
            return False
        et = ev.type()
        left = QtCore.Qt.MouseButton.LeftButton
        if et == QtCore.QEvent.Type.MouseButtonPress:
            self.cancel()
            if ev.button() == left:
                kind, item_at = self._sources[obj]
                hit = item_at(ev.position().toPoint())
                if hit is not None:
                    self._pending = _Pending(kind, hit[0], hit[1], ev.globalPosition().toPoint())
            return False
        if et == QtCore.QEvent.Type.MouseMove and self._pending is not None:
            g = ev.globalPosition().toPoint()
            if not self.active and (g - self._pending.start).manhattanLength() >= DRAG_START_PX:
                self.active = True
                self.indicator.setText(f"\u2192 {self._pending.text}")
                self.indicator.adjustSize()
                self.indicator.show()
                self.indicator.raise_()
            if self.active:
                parent = self.indicator.parentWidget()
                self.indicator.move(parent.mapFromGlobal(g) + QtCore.QPoint(14, 10))
                return True  # the view must not turn the drag into a selection sweep
            return False
        if et == QtCore.QEvent.Type.MouseButtonRelease and ev.button() == left and self._pending is not None:
            pending, active = self._pending, self.active
            self.cancel()
            if active:
                self._drop(pending.source, pending.key, ev.globalPosition().toPoint())
                return True  # a drop is not a click on the source item
        return False
