"""A viewer segment of 1, 2 or 4 image viewports with one active (Qt), bound to a LayoutState.

The widget owns four ImageViewports for its whole life and only shows the ones the layout uses,
so switching layout never rebuilds VTK windows (and never changes their pixels). The active one
has a bright frame; 1x1 shows the active one. Pressing a viewport activates it before its owner sees the press.
"""
from __future__ import annotations

from typing import Callable

from PySide6 import QtCore, QtWidgets

from consoles.common.layout_state import MAX_VIEWPORTS, LayoutState
from consoles.common.viewport import ImageViewport

ACTIVE_BORDER = "#ffd94d"
INACTIVE_BORDER = "#3a3f47"
BORDER_PX = 2
# grid cells (row, column) of each shown viewport, per layout
_CELLS = {"1x1": [(0, 0)], "1x2": [(0, 0), (0, 1)], "2x2": [(0, 0), (0, 1), (1, 0), (1, 1)]}


class _Frame(QtWidgets.QFrame):
    """A coloured border around one viewport."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.setObjectName(name)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(BORDER_PX, BORDER_PX, BORDER_PX, BORDER_PX)
        lay.setSpacing(0)

    def set_active(self, active: bool) -> None:
        color = ACTIVE_BORDER if active else INACTIVE_BORDER
        self.setStyleSheet(f"QFrame#{self.objectName()} {{ background: {color}; border: none; }}")


class ViewportLayout(QtWidgets.QWidget):
    """Four viewports named `<prefix>1`..`<prefix>4` in a 1x1, 1x2 or 2x2 grid."""

    def __init__(self, parent: QtWidgets.QWidget | None, prefix: str = "viewport",
                 state: LayoutState | None = None, placeholder: str = "Empty viewport") -> None:
        super().__init__(parent)
        self.setObjectName(f"{prefix}_layout")
        self.state = state or LayoutState()
        self.activated: Callable[[int], None] | None = None  # called after a press activates a viewport
        self._grid = QtWidgets.QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(4)
        self._frames: list[_Frame] = []
        self._viewports: list[ImageViewport] = []
        for i in range(MAX_VIEWPORTS):
            frame = _Frame(f"{prefix}{i + 1}_frame")
            vp = ImageViewport(frame, f"{prefix}{i + 1}", placeholder)
            frame.layout().addWidget(vp)
            vp.installEventFilter(self)
            # right-drag window/level is display state the dump records
            vp.window_level_callback = lambda w, lv, i=i: self.state.set_window_level(i, w, lv)
            self._frames.append(frame)
            self._viewports.append(vp)
        self.sync()

    # -- access ---------------------------------------------------------------------------------
    def viewport(self, i: int) -> ImageViewport:
        return self._viewports[i]

    def viewports(self) -> list[ImageViewport]:
        """All four, shown or not (the shell syncs only visible ones)."""
        return list(self._viewports)

    def visible_viewports(self) -> list[ImageViewport]:
        return [self._viewports[i] for i in self.state.visible()]

    def active_viewport(self) -> ImageViewport:
        return self._viewports[self.state.active]

    def index_of(self, vp: ImageViewport) -> int:
        return self._viewports.index(vp)

    # -- edits (go through the state, then redraw) ----------------------------------------------
    def set_layout(self, layout: str) -> None:
        self.state.set_layout(layout)
        self.sync()

    def activate(self, i: int) -> None:
        self.state.activate(i)
        self._show_active()

    def set_window_level(self, i: int, window: float, level: float) -> None:
        self.state.set_window_level(i, window, level)
        vc = self.state.viewports[i]
        self._viewports[i].set_window_level(vc.window, vc.level)

    def sync(self) -> None:
        """Make the widgets show the state: grid, visibility, active frame, window/level."""
        for frame in self._frames:
            self._grid.removeWidget(frame)
        cells = _CELLS[self.state.layout]
        shown = self.state.visible()  # 1x1: the active viewport, whichever it is
        for i, frame in enumerate(self._frames):
            if i in shown:
                self._grid.addWidget(frame, *cells[shown.index(i)])
                frame.show()
            else:
                frame.hide()
        for r in range(2):
            self._grid.setRowStretch(r, 1 if any(c[0] == r for c in cells) else 0)
            self._grid.setColumnStretch(r, 1 if any(c[1] == r for c in cells) else 0)
        for i, vp in enumerate(self._viewports):
            vc = self.state.viewports[i]
            if (vp.window_level[0], vp.window_level[1]) != (vc.window, vc.level):
                vp.set_window_level(vc.window, vc.level)
        self._show_active()

    def _show_active(self) -> None:
        for i, frame in enumerate(self._frames):
            frame.set_active(i == self.state.active)

    def eventFilter(self, obj: QtCore.QObject, ev: QtCore.QEvent) -> bool:  # noqa: N802 (Qt API)
        if ev.type() == QtCore.QEvent.Type.MouseButtonPress and obj in self._viewports:
            i = self._viewports.index(obj)
            if i != self.state.active and i in self.state.visible():
                self.activate(i)
                if self.activated is not None:
                    self.activated(i)
        return False  # the viewport still gets the press (planning drags start on it)
