"""What every console's Qt view shares: widget names, geometry export, action dispatch.

A modality view subclasses ConsoleViewBase, builds its widgets into `self.central`, names every
widget an agent or solver acts on with `_name`, registers item views (lists, tables) whose rows
are targets with `_name_items`, and sends every user action to the model through `_do`, which
turns a refusal (ConsoleActionError, the reason already in the model's message) into a refresh.
The shell talks to it through the ConsoleController protocol (consoles.common.shell).

Change notification: the model's notifications reach `_note_change`. Notifications raised
while an action or a clock advance runs are collected and handled once when it ends, and a topic
the view has bound (`bind_refresh`) refreshes only the panel parts bound to it: a drag step updates
the fields, read-outs and overlays that follow the plan, not the whole panel. An unbound topic, a
refusal, or an action that notified nothing refreshes the whole panel, as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from PySide6 import QtCore, QtWidgets

from consoles.common.colormaps import ColorMap
from consoles.common.model_base import ConsoleActionError
from consoles.common.overlays import OverlaySet
from consoles.common.viewport import ImageViewport
from consoles.common.widgets import STYLESHEET, CardRow, ParameterCard
from rendering.geometry import PlanePose

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


@dataclass(frozen=True)
class ViewportAsBuilt:
    """What a viewport showed when its view was built, before any model was bound to it."""

    placeholder: str
    view_box: tuple[float, float, float, float]
    window_level: tuple[float, float]
    pose: PlanePose | None
    color_map: ColorMap | None
    color_map_title: str

    @classmethod
    def of(cls, vp: ImageViewport) -> "ViewportAsBuilt":
        return cls(vp._placeholder_text, tuple(vp._view), vp.window_level, vp.plane_pose, vp.color_map,
                   vp._cmap_title)

    def restore(self, vp: ImageViewport) -> None:
        """Put `vp` back to this state: no image, no overlays (their actor cache emptied, so actors
        are made again in a fresh view's order), camera, window/level, pose, colour map, and no
        drag or coalesced motion left over from an earlier episode."""
        vp.set_overlays(OverlaySet())
        vp.reset_input_state()
        if vp.color_map is not None or self.color_map is not None:
            vp.set_color_map(self.color_map, self.color_map_title)
        vp.set_plane_pose(self.pose)
        vp.set_image(None)
        vp.set_placeholder(self.placeholder)
        vp.set_view_box(*self.view_box)
        vp.set_window_level(*self.window_level)


class ConsoleViewBase:
    """Base of a console's Qt binding (the shell's ConsoleController).

    PANEL_PARTS names the methods of a subclass's panel refresh, in order, each with the topics
    that refresh it alone; QUIET_TOPICS change nothing on the panel (see `_note_change`).

    A view can be rebound to a new model (`rebind`: a console reset in place for the next
    episode): it then shows exactly what a view freshly built around that model shows. A subclass
    calls `_remember_built_state()` at the end of its construction, before it binds its model,
    and extends `_restore_built_state()` with any widget state of its own (pages, list selections).
    CARD_CLASS is the class of the cards `parameter_card` makes.
    """

    PANEL_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = ()
    CARD_CLASS: type[ParameterCard] = ParameterCard  # the parameter cards' class (a console may refine commits)
    QUIET_TOPICS: tuple[str, ...] = ()

    def __init__(self, model: Any, width: int, height: int) -> None:
        self.model = model
        self.central = QtWidgets.QWidget()
        self.central.setStyleSheet(STYLESHEET)
        self.central.setFixedSize(width, height)
        self._named: dict[str, QtWidgets.QWidget] = {}
        self._item_views: list[tuple[str, QtWidgets.QAbstractItemView, ItemKey | None]] = []
        self._cards: list[ParameterCard] = []
        self._viewports_as_built: dict[str, ViewportAsBuilt] = {}
        self._panel_parts: list[Callable[[], None]] = []  # the full panel refresh, in order
        self._bindings: dict[str, set[Callable[[], None]]] = {}  # topic -> the parts it refreshes
        self._batch: _ChangeBatch | None = None  # notifications of the action or advance under way
        self._refused_message: str | None = None  # the status line of the last refused action
        for name, topics in self.PANEL_PARTS:
            self.panel_part(getattr(self, name), *topics)
        for topic in self.QUIET_TOPICS:
            self.bind_refresh(topic)

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
        card = self.CARD_CLASS(self.model, resolved, self._do)
        for f in card.fields.values():
            self._name(f.objectName(), f)
            unit = getattr(f, "unit_label", None)
            if unit is not None:  # the unit beside the field (issue 24), for grounding and OCR tests
                self._name(unit.objectName(), unit)
        self._cards.append(card)
        return card

    def refresh_cards(self) -> None:
        """Values and enabled state of every parameter field, from the model."""
        for card in self._cards:
            card.refresh()

    # ---- binding a model ------------------------------------------------------------------------
    def _on_model(self, what: str) -> None:
        """The model changed (`what`): subclasses redraw what depends on it in `_show_changes` and
        their panel parts (see `_note_change`)."""
        self._note_change(what)

    def _bind_model(self) -> None:
        """Listen to `self.model` and show it (the last step of construction and of `rebind`)."""
        self.model.listeners.append(self._on_model)
        for vp in self.viewports():
            vp.resize_callback = self._on_viewport_resized
        self._on_model("init")

    def _on_viewport_resized(self, vp: ImageViewport) -> None:
        """A viewport changed size (a page shown for the first time, a layout switch): its
        overlays were laid out for the old size, so draw them again (topic "viewport_resized"
        in `_show_changes`). Without this a task starting on another page showed the scout's
        range box at the hidden page's size the first time Planning was opened."""
        self._show_changes(["viewport_resized"])

    def _remember_built_state(self) -> None:
        """Record every viewport's as-built state (called once the widgets exist, before binding)."""
        self._viewports_as_built = {vp.name: ViewportAsBuilt.of(vp) for vp in self.viewports()}

    def _restore_built_state(self) -> None:
        """Widgets back to their as-built state, before the new model is shown (extend per modality)."""
        for vp in self.viewports():
            as_built = self._viewports_as_built.get(vp.name)
            if as_built is None:
                raise RuntimeError(f"{type(self).__name__} did not call _remember_built_state(): "
                                   f"cannot restore viewport {vp.name}")
            as_built.restore(vp)

    def rebind(self, model: Any) -> None:
        """Show `model` instead of the current one, as a view freshly built around it would.

        The old model is no longer listened to (it is dropped); parameter cards set every field's
        text anew; viewports lose images, overlays and camera changes; the subclass restores its own
        widget state; then the new model is bound as at construction.
        """
        old = self.model
        if self._on_model in old.listeners:
            old.listeners.remove(self._on_model)
        self.model = model
        self._refused_message = None
        self._restore_built_state()
        for card in self._cards:
            card.rebind(model)
        self._bind_model()

    # ---- change notification --------------------------------------------------------------------
    def panel_part(self, refresh: Callable[[], None], *topics: str) -> Callable[[], None]:
        """Register one part of the panel refresh (parts run in registration order) and bind it to
        `topics`: those notifications refresh only the parts bound to them."""
        self._panel_parts.append(refresh)
        for topic in topics:
            self.bind_refresh(topic)
            self._bindings[topic].add(refresh)
        return refresh

    def bind_refresh(self, topic: str) -> None:
        """Declare that `topic` changes only what the parts bound to it with `panel_part` show
        (with none, nothing on the panel)."""
        self._bindings.setdefault(topic, set())

    def refresh_parts(self) -> None:
        """Run every registered panel part in order (a subclass's `_refresh_panel`)."""
        for part in self._panel_parts:
            part()

    def _note_change(self, what: str) -> None:
        """A model notification: handled when the action or clock advance under way ends, else now."""
        if self._batch is not None:
            self._batch.note(what)
        else:
            self._apply_changes([what], full=False)

    def _show_changes(self, topics: Sequence[str]) -> None:
        """Redraw what is not a panel part (images, overlays, lists) for these topics (subclass)."""

    def _apply_changes(self, topics: Sequence[str], full: bool) -> None:
        """Show `topics`, then refresh the panel parts bound to them, or the whole panel when
        `full` or when a topic is not bound."""
        self._show_changes(topics)
        if full or not topics or any(t not in self._bindings for t in topics):
            self._refresh_panel()
        else:
            wanted = set().union(*(self._bindings[t] for t in topics))
            for part in self._panel_parts:
                if part in wanted:
                    part()
        self._show_refusal()

    def _show_refusal(self) -> None:
        """The status line ("message") in the refusal colour while it shows the reason of a refused
        action, in its own colour otherwise (issue 24: a refusal must read as one)."""
        label = self._named.get("message")
        if not isinstance(label, QtWidgets.QLabel):
            return
        refused = self._refused_message is not None and self._refused_message == getattr(self.model, "message", None)
        if bool(label.property("refused")) != refused:
            label.setProperty("refused", refused)
            label.style().unpolish(label)
            label.style().polish(label)

    def _batched(self, fn: Callable[..., Any], *args: Any, refusals: bool = True) -> bool:
        """Run `fn`, collecting the notifications it raises, then handle them once. With
        `refusals`, a refusal (ConsoleActionError, its reason in the model's message) is caught and
        False returned; other exceptions propagate."""
        if self._batch is not None:  # nested in a batch: the outer one shows it
            try:
                fn(*args)
            except ConsoleActionError:
                self._batch.full = True
                if not refusals:
                    raise
                return False
            return True
        batch = self._batch = _ChangeBatch()
        try:
            fn(*args)
        except ConsoleActionError:
            batch.full = True
            self._refused_message = getattr(self.model, "message", None)
            if not refusals:
                raise
        finally:
            self._batch = None
        # nothing notified: refresh everything, as every action always did
        self._apply_changes(batch.topics, full=batch.full or not batch.topics)
        return not batch.full

    # ---- actions --------------------------------------------------------------------------------
    def _do(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a user action on the model; a refusal already put its reason in the model's message.
        The view catches up once, after the action (see `_note_change`)."""
        self._refused_message = None  # a user action: the status line is this action's (clock steps keep it)
        self._batched(fn, *args)

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
        # every event of the advance and its final "clock" shown once, with the state after it
        self._batched(self.model.on_clock, t_old, t_new, refusals=False)


@dataclass
class _ChangeBatch:
    """Topics notified while an action or a clock advance runs, in first-notified order."""

    topics: list[str] = field(default_factory=list)
    full: bool = False  # a refusal: refresh the whole panel

    def note(self, what: str) -> None:
        if what not in self.topics:
            self.topics.append(what)
