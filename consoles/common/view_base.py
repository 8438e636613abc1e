"""What every console's Qt view shares: widget names, geometry export, action dispatch.

A modality view subclasses ConsoleViewBase, builds its widgets into `self.central`, names every
widget an agent or solver acts on with `_name`, registers item views (lists, tables) whose rows
are targets with `_name_items`, and sends every user action to the model through `_do`, which
turns a refusal (ConsoleActionError, the reason already in the model's message) into a refresh.
The shell talks to it through the ConsoleController protocol (consoles.common.shell).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from PySide6 import QtCore, QtWidgets

from consoles.common.model_base import ConsoleActionError
from consoles.common.viewport import ImageViewport
from consoles.common.widgets import STYLESHEET, CardRow, ParameterCard

ItemKey = Callable[[QtCore.QModelIndex], Any]


def item_screen_rects(view: QtWidgets.QAbstractItemView, key: ItemKey | None = None) -> dict[str, list[int]]:
    """Screen rect [x, y, w, h] of every row of a list or table view, keyed by `key(index of the
    row's first column)` (default: the row number). A table row's rect spans its columns."""
    out: dict[str, list[int]] = {}
    model = view.model()
    if model is None:
        return out
    g = view.viewport().mapToGlobal(QtCore.QPoint(0, 0))
    root = QtCore.QModelIndex()  # PySide6 list models require the parent argument
    for row in range(model.rowCount(root)):
        first = model.index(row, 0)
        r = view.visualRect(first)
        # list models hide columnCount (private in QAbstractListModel): a list view has one column
        n_cols = 1 if isinstance(view, QtWidgets.QListView) else model.columnCount(root)
        for col in range(1, n_cols):
            r = r.united(view.visualRect(model.index(row, col)))
        name = str(row if key is None else key(first))
        out[name] = [g.x() + r.x(), g.y() + r.y(), r.width(), r.height()]
    return out


def by_role(role: QtCore.Qt.ItemDataRole = QtCore.Qt.ItemDataRole.UserRole) -> ItemKey:
    """An item key that reads the row's data under `role` (e.g. a protocol id kept in UserRole)."""
    return lambda index: index.data(role)


class ConsoleViewBase:
    """Base of a console's Qt binding (the shell's ConsoleController)."""

    def __init__(self, model: Any, width: int, height: int) -> None:
        self.model = model
        self.central = QtWidgets.QWidget()
        self.central.setStyleSheet(STYLESHEET)
        self.central.setFixedSize(width, height)
        self._named: dict[str, QtWidgets.QWidget] = {}
        self._item_views: list[tuple[str, QtWidgets.QAbstractItemView, ItemKey | None]] = []
        self._cards: list[ParameterCard] = []

    # ---- naming ---------------------------------------------------------------------------------
    def _name(self, name: str, w: QtWidgets.QWidget) -> QtWidgets.QWidget:
        """Give `w` a stable object name and export its geometry under it."""
        w.setObjectName(name)
        self._named[name] = w
        return w

    def _name_items(self, prefix: str, view: QtWidgets.QAbstractItemView, key: ItemKey | None = None) -> None:
        """Export every row of `view` as "<prefix>:<key>" (hidden pages too, so a solver can plan a
        click before it switches page)."""
        self._item_views.append((prefix, view, key))

    def parameter_card(self, rows: Sequence[CardRow]) -> ParameterCard:
        """A form of fields for the model's declared Parameters (rows may be Parameter names),
        named and refreshed by this view."""
        resolved = [self.model.parameters[r] if isinstance(r, str) else r for r in rows]
        card = ParameterCard(self.model, resolved, self._do)
        for f in card.fields.values():
            self._name(f.objectName(), f)
        self._cards.append(card)
        return card

    def refresh_cards(self) -> None:
        """Values and enabled state of every parameter field, from the model."""
        for card in self._cards:
            card.refresh()

    # ---- actions --------------------------------------------------------------------------------
    def _do(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a user action on the model; a refusal already put its reason in the model's message."""
        try:
            fn(*args)
        except ConsoleActionError:
            pass
        self._refresh_panel()

    def _refresh_panel(self) -> None:
        """Bring every control up to date with the model (subclasses extend this)."""
        self.refresh_cards()

    # ---- controller interface -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return self.model.state()

    def named_widgets(self) -> dict[str, QtWidgets.QWidget]:
        return dict(self._named)

    def named_targets(self) -> dict[str, list[int]]:
        """Rects of things that are not widgets: rows of item views, the view's own targets
        (`_extra_targets`) and the labels drawn on visible viewports."""
        out: dict[str, list[int]] = {}
        for prefix, view, key in self._item_views:
            out.update({f"{prefix}:{k}": r for k, r in item_screen_rects(view, key).items()})
        out.update(self._extra_targets())
        for vp in self.viewports():
            if vp.isVisible():
                out.update({f"{vp.name}.label:{k}": r for k, r in vp.label_rects().items()})
        return out

    def _extra_targets(self) -> dict[str, list[int]]:
        """Modality-specific targets (e.g. planning handles); none by default."""
        return {}

    def viewports(self) -> list[ImageViewport]:
        return []

    def transforms(self) -> dict[str, dict[str, float]]:
        """Image-plane mm -> screen pixel maps of the visible viewports: x = ax*u + bx, y = ay*v + by."""
        out = {}
        for vp in self.viewports():
            if vp.isVisible():
                k = vp.pixels_per_mm()
                g = vp.mapToGlobal(QtCore.QPoint(0, 0))
                wx, wy = vp.to_widget(0.0, 0.0)
                out[vp.name] = {"ax": k, "bx": g.x() + wx, "ay": -k, "by": g.y() + wy}
        return out

    def on_clock(self, t_old: float, t_new: float) -> None:
        self.model.on_clock(t_old, t_new)
