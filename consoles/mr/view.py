"""Qt binding of the MR console model: widgets show the MRModel and forward user input to it.

Left: the exam queue (Go / Stop, why Go is blocked) and the protocol library. Centre: the viewer
(1, 2 or 4 viewports, graphics mode, shim box) over the series list. Right: the parameter card of
the open row. Every user action goes through `_do(model.method, ...)`; the model refuses in words.
T1/T2 maps (consoles.mr.mapping) show in their colour table with a colour bar in ms; the "ROI tool"
button (bottom right, beside the "roi_readout" label) turns a left drag on a map into an ellipse ROI.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common import overlays as ov
from consoles.common.layout import ViewportLayout
from consoles.common.numeric import duration_text as mss
from consoles.common.view_base import ConsoleViewBase, by_role
from consoles.common.viewport import ImageViewport
from consoles.common.widgets import THUMB_PX, button, colour_thumbnail, group, header_bar, thumbnail
from consoles.mr import mapping, planning
from consoles.mr import view_graphics as graphics
from consoles.mr.model import MRModel, apply_resize, plan_grips
from consoles.mr.view_card import TABS, CardPanel
from consoles.mr.view_parts import HandDrag, RenameField, status_icon

ROLE = QtCore.Qt.ItemDataRole.UserRole
MENU_ENTRIES = (("open", "Open"), ("rename", "Rename"), ("repeat", "Repeat"), ("skip", "Skip"),
                ("delete", "Delete"), ("move_up", "Move up"), ("move_down", "Move down"))
LAYOUTS = ("1x1", "1x2", "2x2")
GRAPHICS = (("all", "All slices"), ("outer", "Outer"), ("off", "Off"))
QUEUE_ROW_PX = 24
OPEN_ROW_BG = QtGui.QColor("#2b4a6b")
SELECTED_BG = QtGui.QColor("#2e7dc8")
LEFT_W, RIGHT_W = 356, 312
# MR signal is in units of fully relaxed water (about 0..1); viewports show it x1000 so window widths
# stay well above ImageViewport's 1.0 minimum (the model's window/level stay in signal units)
DISPLAY_SCALE = 1000.0
SCANNING_COLOR = "#8cc4ff"  # a scan under way: information, neither ready (green) nor blocked (orange)
# the Go line's colour by its kind (consoles.mr.status.GO_KINDS): nothing left to start is news in the status
# line's neutral colour, not a warning (issue 34)
GO_COLORS = {"ready": "#7dffa0", "scanning": SCANNING_COLOR, "finished": "#e2e6eb", "blocked": "#ffb36b"}
# each grip kind's shape (consoles.mr.view_graphics.GRIP_STYLES; colours in docs/consoles.md)
VIEWER_LEGEND = "Grips: square move, circle turn, diamond FOV, triangle slices, +/bar shim. Wheel down: next image"
SERIES_CELL_W = 182  # three entries side by side in the series list (beside a scroll bar's room)


class MRConsoleView(ConsoleViewBase):
    """Builds the MR console widgets around an MRModel (the shell's ConsoleController)."""

    model: MRModel

    def __init__(self, model: MRModel, width: int, height: int) -> None:
        super().__init__(model, width, height)
        # The first widget of the focus chain takes focus when the window is activated (and after a
        # reset in place): let that be the empty background, so no field shows a caret at the start
        # (it was the Slices field of a card that opens a row). Clicking a field still focuses it.
        self.central.setFocusPolicy(QtCore.Qt.FocusPolicy.TabFocus)
        self._rename_uid: int | None = None
        self._menu_uid: int | None = None
        self._plan_drag: tuple[int, Any, Any] | None = None  # (viewport, display pose, row params at the press)
        self._roi_drag: tuple[int, float, float, float, float] | None = None  # (viewport, press u, v, now u, v)
        self._shown: list[Any] = [None] * 4  # per viewport: what image it shows (skip re-uploading)
        self._thumbs: dict[tuple, QtGui.QPixmap] = {}
        outer = QtWidgets.QVBoxLayout(self.central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self._build_header())
        body = QtWidgets.QHBoxLayout()
        body.setContentsMargins(8, 6, 8, 4)
        body.setSpacing(8)
        body.addWidget(self._build_left())
        body.addWidget(self._build_centre(), 1)
        self.card_panel = CardPanel(self, RIGHT_W)
        body.addWidget(self.card_panel.widget)
        outer.addLayout(body, 1)
        self.message = self._name("message", QtWidgets.QLabel())
        self.message.setFixedHeight(30)
        msg_row = QtWidgets.QHBoxLayout()
        msg_row.setContentsMargins(8, 0, 8, 6)
        msg_row.addWidget(self.message, 1)
        # the distance tool (consoles.mr.measure), beside the ROI tool (the viewer's toolbar is full): two clicks
        # on an image measure between them in mm
        self.distance_btn = self._name("distance_tool", button(
            "Distance", "distance_tool", lambda: self._do(self.model.set_distance_tool, not self.model.distance_tool)))
        self.distance_btn.setCheckable(True)
        msg_row.addWidget(self.distance_btn)
        msg_row.addSpacing(4)
        # ROI tool (beside its read-out; the viewer's toolbar is full): a left drag on a T1/T2 map
        # draws an ellipse and reads mean / SD in ms
        self.roi_btn = self._name("roi_tool", button("ROI tool", "roi_tool",
                                                     lambda: self._do(self.model.set_roi_tool, not self.model.roi_tool)))
        self.roi_btn.setCheckable(True)
        msg_row.addWidget(self.roi_btn)
        msg_row.addSpacing(8)
        # the last ROI measured on a map (also drawn beside it on the viewport)
        self.roi_readout = self._name("roi_readout", QtWidgets.QLabel())
        self.roi_readout.setFixedHeight(30)
        self.roi_readout.setFixedWidth(300)  # the message's room must not depend on the read-out (reset in place)
        self.roi_readout.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        msg_row.addWidget(self.roi_readout)
        outer.addLayout(msg_row)
        self.drag = HandDrag(self.central, self._on_drop)
        self.drag.add_source(self.library, "library", self._library_item_at)
        self.drag.add_source(self.series_list, "series", self._series_item_at)
        self._remember_built_state()
        self._bind_model()

    # ---- construction -----------------------------------------------------------------
    def _build_header(self) -> QtWidgets.QWidget:
        h, lay = header_bar("MR Acquisition", spacing=20)
        self.patient_label = self._name("patient", QtWidgets.QLabel())
        lay.addWidget(self.patient_label)
        self.indication_label = self._name("indication", QtWidgets.QLabel())
        self.indication_label.setWordWrap(True)
        self.indication_label.setStyleSheet("color: #ffe7a3;")
        lay.addWidget(self.indication_label, 1)
        self.status_label = self._name("scanner_status", QtWidgets.QLabel())
        self.clock_label = self._name("exam_time", QtWidgets.QLabel())
        self.hr_label = self._name("heart_rate", QtWidgets.QLabel())
        for w in (self.status_label, self.clock_label, self.hr_label):
            lay.addWidget(w)
        return h

    def _build_left(self) -> QtWidgets.QWidget:
        panel = QtWidgets.QWidget()
        panel.setFixedWidth(LEFT_W)
        lay = QtWidgets.QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        g, gl = group("Exam queue", "queue_group")
        self.queue = self._name("queue", QtWidgets.QTableWidget(0, 4))
        q = self.queue
        q.setHorizontalHeaderLabels(["#", "Sequence", "Status", "Time"])
        q.verticalHeader().hide()
        q.verticalHeader().setDefaultSectionSize(QUEUE_ROW_PX)
        q.horizontalHeader().setHighlightSections(False)
        q.horizontalHeader().setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        for col, w in ((0, 24), (2, 86), (3, 42)):
            q.horizontalHeader().setSectionResizeMode(col, QtWidgets.QHeaderView.ResizeMode.Fixed)
            q.setColumnWidth(col, w)
        q.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        q.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        q.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        q.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        q.setShowGrid(False)
        q.setIconSize(QtCore.QSize(14, 14))
        q.setFixedHeight(QUEUE_ROW_PX * 10 + 26)
        q.setStyleSheet("QTableWidget { background: #1c1f24; border: 1px solid #555c66; }"
                        "QHeaderView::section { background: #2b2f36; border: none; border-bottom: 1px solid #555c66;"
                        " padding: 2px 4px; }")
        q.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        q.customContextMenuRequested.connect(self._queue_menu_requested)
        q.cellDoubleClicked.connect(lambda r, c: self._do(self.model.open, self._uid_at(r)))
        self._name_items("queue_row", q, by_role())
        gl.addWidget(q)
        self.rename_field = self._name("rename_field", RenameField(q.viewport(), self._commit_rename,
                                                                    self._cancel_rename))
        row = QtWidgets.QHBoxLayout()
        self.go_btn = self._name("go", button("Go", "go", lambda: self._do(self.model.go), primary=True))
        self.stop_btn = self._name("stop", button("Stop", "stop", lambda: self._do(self.model.stop)))
        self.go_btn.setMinimumWidth(110)
        self.stop_btn.setMinimumWidth(90)
        row.addWidget(self.go_btn)
        row.addWidget(self.stop_btn)
        row.addStretch(1)
        gl.addLayout(row)
        self.go_reason = self._name("go_status", QtWidgets.QLabel())
        self.go_reason.setWordWrap(True)
        self.go_reason.setMinimumHeight(36)
        self.go_reason.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        gl.addWidget(self.go_reason)
        lay.addWidget(g)
        self.menu = QtWidgets.QMenu(self.central)
        self.menu.setObjectName("queue_menu")
        self.menu.setStyleSheet("QMenu { background: #2b2f36; border: 1px solid #8a93a0; padding: 2px; }"
                                "QMenu::item { padding: 4px 28px 4px 14px; }"
                                "QMenu::item:selected { background: #2e7dc8; color: white; }")
        self._menu_actions: dict[str, QtGui.QAction] = {}
        for key, text in MENU_ENTRIES:
            a = self.menu.addAction(text)
            a.triggered.connect(lambda _=False, k=key: self._menu_chosen(k))
            self._menu_actions[key] = a

        g, gl = group("Protocol library", "library_group")
        self.library = self._name("library", QtWidgets.QTreeWidget())
        t = self.library
        t.setHeaderHidden(True)
        t.setRootIsDecorated(False)
        t.setItemsExpandable(False)
        t.setExpandsOnDoubleClick(False)
        t.setIndentation(14)
        t.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        t.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        t.setStyleSheet("QTreeWidget { background: #1c1f24; border: 1px solid #555c66; }")
        self._library_items: dict[str, QtWidgets.QTreeWidgetItem] = {}
        bold = QtGui.QFont(t.font())
        bold.setBold(True)
        for folder in MRModel.library().get("children", []):
            fi = QtWidgets.QTreeWidgetItem([folder["label"]])
            fi.setFont(0, bold)
            t.addTopLevelItem(fi)
            for leaf in folder.get("children", []):
                li = QtWidgets.QTreeWidgetItem([leaf["label"]])
                li.setData(0, ROLE, leaf["protocol"])
                fi.addChild(li)
                self._library_items[leaf["protocol"]] = li
        t.expandAll()
        t.itemDoubleClicked.connect(self._library_double_clicked)
        gl.addWidget(t)
        hint = QtWidgets.QLabel("Double-click adds to the end; drag onto a queue row inserts there.")
        hint.setWordWrap(True)
        hint.setStyleSheet("color: #9aa3ae;")
        gl.addWidget(hint)
        lay.addWidget(g, 1)
        return panel

    def _build_centre(self) -> QtWidgets.QWidget:
        area = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(area)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        bar = QtWidgets.QHBoxLayout()
        bar.setSpacing(4)
        self.layout_btns: dict[str, QtWidgets.QPushButton] = {}
        bar.addWidget(QtWidgets.QLabel("Layout"))
        for name in LAYOUTS:
            b = self._name(f"layout_{name}", button(name, f"layout_{name}",
                                                     lambda n=name: self._do(self.model.set_layout, n)))
            b.setCheckable(True)
            self.layout_btns[name] = b
            bar.addWidget(b)
        bar.addSpacing(14)
        bar.addWidget(QtWidgets.QLabel("Graphics"))
        self.graphics_btns: dict[str, QtWidgets.QPushButton] = {}
        for mode, text in GRAPHICS:
            b = self._name(f"graphics_{mode}", button(text, f"graphics_{mode}",
                                                       lambda m=mode: self._set_graphics_mode(m)))
            b.setCheckable(True)
            self.graphics_btns[mode] = b
            bar.addWidget(b)
        bar.addSpacing(14)
        self.shim_btn = self._name("shim_box_toggle", button(
            "Shim box", "shim_box_toggle", lambda: self._do(self.model.set_shim_box_visible,
                                                            not self.model.shim_box_visible)))
        self.shim_btn.setCheckable(True)
        bar.addWidget(self.shim_btn)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.viewer = ViewportLayout(area, "viewport", self.model.layout, "Empty: drag a series here")
        for i, vp in enumerate(self.viewer.viewports()):
            self._named[vp.name] = vp
            vp.wheel_callback = lambda n, i=i: self._do(self.model.page, i, n)
            vp.mouse_callback = lambda kind, u, v, b, i=i: self._on_viewport_mouse(i, kind, u, v, b)
            vp.setMouseTracking(True)  # the pointer read-out follows the pointer without a button held
            # right-drag window/level is display state the model records
            vp.window_level_callback = lambda w, lv, i=i: self._do(self.model.set_window_level, i, w / DISPLAY_SCALE,
                                                                    lv / DISPLAY_SCALE)
        self.viewer.activated = lambda i: self._do(self.model.activate_viewport, i)
        lay.addWidget(self.viewer, 1)
        # what the grips and the wheel do, in words (issue 24: they were found by trial)
        self.viewer_legend = self._name("viewer_legend", QtWidgets.QLabel(VIEWER_LEGEND))
        legend_h = self.viewer_legend.sizeHint().height()  # the viewer keeps its size with the smaller font
        self.viewer_legend.setStyleSheet("color: #b8c0cc; font-size: 11px;")
        self.viewer_legend.setFixedHeight(legend_h)
        lay.addWidget(self.viewer_legend)
        g, gl = group("Series", "series_group")
        gl.setContentsMargins(4, 14, 4, 4)  # the room of a third entry per row
        self.series_list = self._name("series_list", QtWidgets.QListWidget())
        s = self.series_list
        s.setViewMode(QtWidgets.QListView.ViewMode.ListMode)
        s.setFlow(QtWidgets.QListView.Flow.LeftToRight)
        s.setWrapping(True)
        s.setResizeMode(QtWidgets.QListView.ResizeMode.Adjust)
        s.setIconSize(QtCore.QSize(THUMB_PX, THUMB_PX))
        s.setGridSize(QtCore.QSize(SERIES_CELL_W, THUMB_PX + 8))
        s.setFixedHeight(2 * (THUMB_PX + 8) + 6)
        s.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        # the model's selection is drawn (a press must not select before the model knows)
        s.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        s.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        s.setWordWrap(True)
        s.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        s.itemClicked.connect(lambda it: self._do(self.model.select_entry, it.data(ROLE)))
        # a double-click opens the entry in the active viewport (issue 34: it only highlighted it)
        s.itemDoubleClicked.connect(lambda it: self._do(self.model.load_entry, self.model.layout.active, it.data(ROLE)))
        self._name_items("series_item", s, by_role())
        gl.addWidget(s)
        lay.addWidget(g)
        return area

    # ---- reset in place ---------------------------------------------------------------------
    def _restore_built_state(self) -> None:
        """The MR widgets as built (see ConsoleViewBase.rebind): menu closed, no rename, no drag,
        the queue and lists scrolled to the top, no thumbnails, the Routine tab, the new model's
        layout state in the viewer."""
        super()._restore_built_state()
        self.menu.hide()
        self._menu_uid = None
        self._cancel_rename()
        self.drag.cancel()
        self._plan_drag = None
        self._roi_drag = None
        self.queue.setRowCount(0)
        self.queue.scrollToTop()
        self.series_list.clear()
        self.series_list.scrollToTop()
        self.library.scrollToTop()
        self._thumbs.clear()
        self._shown = [None] * 4
        self.viewer.state = self.model.layout
        self.viewer.sync()
        self.card_panel.show_tab(0)

    # ---- glue -------------------------------------------------------------------------------
    def _uid_at(self, row: int) -> int:
        return int(self.queue.item(row, 0).data(ROLE))

    def _set_graphics_mode(self, mode: str) -> None:
        self._do(self.model.set_graphics_mode, mode)  # the active viewport's

    # queue context menu and inline rename
    def _queue_menu_requested(self, pos: QtCore.QPoint) -> None:
        row = self.queue.rowAt(pos.y())
        if row < 0:
            return
        self._cancel_rename()
        self._menu_uid = self._uid_at(row)
        r = self.model.row(self._menu_uid)
        self._menu_actions["skip"].setText("Unskip" if r.status == "skipped" else "Skip")
        # popup(), never exec(): a nested event loop would stop the control socket
        self.menu.popup(self.queue.viewport().mapToGlobal(pos) + QtCore.QPoint(2, 2))

    def _menu_chosen(self, key: str) -> None:
        uid, self._menu_uid = self._menu_uid, None
        if uid is None:
            return
        if key == "rename":
            self._start_rename(uid)
            return
        fn = {"open": self.model.open, "repeat": self.model.repeat, "skip": self.model.skip,
              "delete": self.model.delete, "move_up": self.model.move_up, "move_down": self.model.move_down}[key]
        self._do(fn, uid)

    def _start_rename(self, uid: int) -> None:
        rows = [self._uid_at(r) for r in range(self.queue.rowCount())]
        if uid not in rows:
            return
        self._rename_uid = uid
        rect = self.queue.visualItemRect(self.queue.item(rows.index(uid), 1))
        f = self.rename_field
        f.setGeometry(rect.adjusted(0, 0, 0, 0))
        f.setText(self.model.row(uid).name)
        f.selectAll()
        f.show()
        f.raise_()
        f.setFocus(QtCore.Qt.FocusReason.OtherFocusReason)

    def _commit_rename(self, text: str) -> None:
        uid = self._rename_uid
        self._cancel_rename()
        if uid is not None:
            self._do(self.model.rename, uid, text)

    def _cancel_rename(self) -> None:
        self._rename_uid = None
        f = self.rename_field
        if f.isVisible():
            f.hide()  # hide first: clearing focus must not cancel twice
            f.clearFocus()
        f.setText("")

    # library and drags
    def _library_double_clicked(self, item: QtWidgets.QTreeWidgetItem, col: int) -> None:
        pid = item.data(0, ROLE)
        if pid:
            self._do(self.model.add_protocol, pid)

    def _library_item_at(self, pos: QtCore.QPoint):
        item = self.library.itemAt(pos)
        pid = None if item is None else item.data(0, ROLE)
        return None if not pid else (pid, item.text(0))

    def _series_item_at(self, pos: QtCore.QPoint):
        item = self.series_list.itemAt(pos)
        return None if item is None else (item.data(ROLE), item.text().split("\n")[0])

    def _on_drop(self, kind: str, key: Any, g: QtCore.QPoint) -> None:
        """A hand-made drag ended at global point g: protocol onto the queue, series onto a viewport."""
        if kind == "library":
            vp = self.queue.viewport()
            local = vp.mapFromGlobal(g)
            if vp.rect().contains(local):
                row = self.queue.rowAt(local.y())
                self._do(self.model.add_protocol, key, None if row < 0 else row)
            return
        for i, v in enumerate(self.viewer.viewports()):
            if v.isVisible() and v.rect().contains(v.mapFromGlobal(g)):
                self._do(self.model.load_entry, i, key)
                return

    # ---- model -> screen ----------------------------------------------------------------------
    def _show_changes(self, topics: Sequence[str]) -> None:
        t = set(topics)
        if t & {"init", "layout"}:
            self.viewer.sync()
        if t & {"init", "series", "selection", "labels"}:
            self._show_series_list()
        if t & {"init", "layout", "series", "open", "params", "queue", "viewport_resized", "labels", "scan",
                "pointer", "measure"}:
            self._show_viewports()

    PANEL_PARTS = (
        ("_refresh_header", ("clock",)),
        # the queue's Time column and the Go line show the open row's scan time, as the card does: redrawn with
        # it on a parameter edit (issue 34: the Time column lagged the card until a scan started)
        ("_refresh_queue", ("params",)),
        ("_refresh_go", ("clock", "params")),
        ("_refresh_toolbar", ("layout", "measure")),
        ("_refresh_card", ("params",)),
        ("_refresh_message", ("params", "layout", "selection", "measure")),
    )
    QUIET_TOPICS = ("pointer",)  # the pointer read-out is drawn on the viewports only

    def _refresh_panel(self) -> None:
        self.refresh_parts()

    def _refresh_header(self) -> None:
        m = self.model
        self.patient_label.setText(f"Patient: {m.subject.id.upper()}   Supine, head first   "
                                   f"{m.field_t:g} T")
        ind = m.indication or ""
        self.indication_label.setText(f"Clinical question: {ind}" if ind else "")
        row = m.running_row
        if row is None:
            self.status_label.setText("Scanner: <b>Idle</b>")
        else:
            self.status_label.setText(f"Scanning: <b>{row.name}</b>, {m.remaining_s():.0f} s left")
        self.clock_label.setText(f"Exam time {mss(m.t)}")
        hr = m.shown_heart_rate()
        self.hr_label.setText(f"<b>HR {hr} bpm</b>" if hr is not None else "<b>HR --</b>")
        _set_style(self.hr_label, "color: #7dffa0;" if hr is not None else "color: #ff9a8a;")

    def _refresh_queue(self) -> None:
        m, q = self.model, self.queue
        if q.rowCount() != len(m.rows):
            q.setRowCount(len(m.rows))
        open_uid = m.open_row.uid if m.open_row is not None else None
        for r, row in enumerate(m.rows):
            texts = (str(r + 1), row.name, row.status, m.scan_time_text(row))
            for c, text in enumerate(texts):
                it = q.item(r, c)
                if it is None:
                    it = QtWidgets.QTableWidgetItem()
                    q.setItem(r, c, it)
                if it.text() != text:
                    it.setText(text)
                if c == 0:
                    it.setData(ROLE, row.uid)
                if c == 2 and it.data(QtCore.Qt.ItemDataRole.UserRole + 1) != row.status:
                    it.setData(QtCore.Qt.ItemDataRole.UserRole + 1, row.status)
                    it.setIcon(status_icon(row.status))
                    it.setForeground(QtGui.QColor("#e2e6eb"))
                is_open = row.uid == open_uid
                want = QtGui.QBrush(OPEN_ROW_BG) if is_open else QtGui.QBrush()
                if it.background() != want:  # every change repaints the table (a clock tick too)
                    it.setBackground(want)
                if c == 3:
                    it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        if self._rename_uid is not None and all(r.uid != self._rename_uid for r in m.rows):
            self._cancel_rename()
        running = m.running_row is not None
        self.stop_btn.setEnabled(running)

    def _refresh_go(self) -> None:
        go = self.model.go_status()  # the words are the model's (consoles.mr.status); the colour says their kind
        running = self.model.running_row
        # Go cannot act while a scan runs: greyed, not the blue of a primary button (issue 34)
        self.go_btn.setEnabled(running is None)
        if bool(self.go_btn.property("primary")) != (running is None):
            self.go_btn.setProperty("primary", running is None)
            self.go_btn.style().unpolish(self.go_btn)
            self.go_btn.style().polish(self.go_btn)
        self.go_reason.setText(go.text)
        _set_style(self.go_reason, f"color: {GO_COLORS[go.kind]};")

    def _refresh_toolbar(self) -> None:
        m = self.model
        for name, b in self.layout_btns.items():
            b.setChecked(m.layout.layout == name)
        mode = m.graphics_mode(m.layout.active)
        for k, b in self.graphics_btns.items():
            b.setChecked(k == mode)
        self.shim_btn.setChecked(bool(m.shim_box_visible))
        self.distance_btn.setChecked(bool(m.distance_tool))
        self.roi_btn.setChecked(bool(m.roi_tool))
        last = m.rois[-1] if m.rois else None
        text = "" if last is None else f"{mapping.KIND_TITLE[last.kind]} {last.text()}"
        if self.roi_readout.text() != text:
            if text:
                self.roi_readout.setText(text)
            else:
                self.roi_readout.clear()

    def _refresh_card(self) -> None:
        self.card_panel.refresh()

    def _refresh_message(self) -> None:
        self.message.setText(self.model.message)

    # ---- series list -------------------------------------------------------------------------
    def _entry_text(self, e: Any) -> str:
        """Caption beside a thumbnail: the title on at most two lines (elided after that), then the
        image count on its own line (a long series name used to push the count out of the cell)."""
        fm = self.series_list.fontMetrics()
        width = SERIES_CELL_W - THUMB_PX - 22
        lines: list[str] = []
        words = e.title.split()
        max_lines = 2 if e.count_text else 3
        while words and len(lines) < max_lines:
            line = words.pop(0)
            while words and fm.horizontalAdvance(f"{line} {words[0]}") <= width:
                line = f"{line} {words.pop(0)}"
            if len(lines) == max_lines - 1 and words:
                line = fm.elidedText(" ".join([line, *words]), QtCore.Qt.TextElideMode.ElideRight, width)
                words = []
            lines.append(line)
        return "\n".join(lines + ([e.count_text] if e.count_text else []))

    def _show_series_list(self) -> None:
        m, s = self.model, self.series_list
        entries = m.series_entries()
        keys = [str(e.key) for e in entries]
        current = [s.item(i).data(ROLE) for i in range(s.count())]
        if current != keys:
            s.clear()
            for e in entries:
                it = QtWidgets.QListWidgetItem(self._entry_text(e))
                it.setData(ROLE, str(e.key))
                it.setIcon(QtGui.QIcon(self._thumbnail(e)))
                it.setSizeHint(QtCore.QSize(SERIES_CELL_W - 4, THUMB_PX + 4))
                s.addItem(it)
        else:
            for i, e in enumerate(entries):
                text = self._entry_text(e)
                if s.item(i).text() != text:
                    s.item(i).setText(text)
        selected = m.selected_entry
        for i in range(s.count()):
            it = s.item(i)
            want = QtGui.QBrush(SELECTED_BG) if selected is not None and it.data(ROLE) == str(selected) \
                else QtGui.QBrush()
            if it.background() != want:
                it.setBackground(want)

    def _thumbnail(self, e: Any) -> QtGui.QPixmap:
        key = (e.key, e.series, e.image)
        pm = self._thumbs.get(key)
        if pm is None:
            img = self.model.entry_image(e.key)
            data = self.model.series_by_uid(e.series).data
            if isinstance(data, mapping.MapSeriesData) and data.is_map(e.image or 0):
                r = data.result
                pm = self._thumbs[key] = colour_thumbnail(mapping.mm.colourise(r.map_ms, r.fit_ok, r.kind,
                                                                               r.map_window_ms))
                return pm
            level, width = data.auto_window
            pm = self._thumbs[key] = thumbnail(img.pixels, level + width / 2.0)
        return pm

    # ---- viewports ---------------------------------------------------------------------------
    def _show_viewports(self) -> None:
        m = self.model
        row = m.open_row
        group_ = None
        if row is not None and not row.proto.is_localizer:
            group_ = row.params.slice_group()
        # grips only where the model would accept the drag (a refused drag must not look possible)
        shim_editable = row is not None and m.row_editable()
        editable = shim_editable and not row.proto.is_localizer
        for i, vp in enumerate(self.viewer.viewports()):
            img = m.viewport_image_data(i)
            if img is None:
                if self._shown[i] is not None:
                    vp.set_plane_pose(None)
                    vp.set_image(None)
                    self._shown[i] = None
                vp.set_overlays(ov.OverlaySet())
                continue
            s = m.viewport_series(i)
            is_map = mapping.is_map_series(s) and s.data.is_map(m.viewport_image[i])
            if self._shown[i] is not img:
                u0, u1, v0, v1 = graphics.view_rect(img)
                vp.set_plane_pose(img.pose)
                vp.set_view_box(u0, u1, v0, v1)
                # a map is shown in ms through its colour table; other images x DISPLAY_SCALE in grey
                vp.set_image(img.pixels if is_map else img.pixels * DISPLAY_SCALE, *img.placement())
                if is_map:
                    vp.set_color_map(graphics.map_colormap(s.data.kind), f"{mapping.KIND_TITLE[s.data.kind]} (ms)")
                elif vp.color_map is not None:
                    vp.set_color_map(None)
                self._shown[i] = img
            if is_map:  # the map's own window (ms): window/level drags apply to the source images
                lo, hi = s.data.map_window_ms
                want = (hi - lo, (hi + lo) / 2.0)
            else:
                vc = m.layout.viewports[i]
                want = (max(1.0, vc.window * DISPLAY_SCALE), vc.level * DISPLAY_SCALE)
            if vp.window_level != want:
                vp.set_window_level(*want)
            o = ov.OverlaySet()
            graphics.measure_overlays(o, vp.pixel_transform(), vp.width(), vp.height(), m.pointer_text(i))
            rect = graphics.view_rect(img)
            mode = m.graphics_mode(i)
            caption = m.viewport_caption(i)
            position = m.slice_position(i)  # None on an unnamed localizer image (model.measure)
            n_text = len(caption) + (1 if position else 0)  # the caption's lines and the slice position under them
            graphics.planning_overlays(o, img.pose, rect, group_, mode,
                                       done=row is not None and row.status in ("done", "running"))
            shim = m.shim_box_visible and row is not None and not row.proto.is_localizer
            if shim:
                graphics.shim_overlays(o, img.pose, row.params.shim_box(), row.params.pose())
            if group_ is not None and mode != "off":
                # the plan info where it covers least of the body (issue 34), and the grips clear of it
                t = vp.pixel_transform()
                outline = graphics.fov_outline(group_, img.pose)
                info = graphics.plan_info_box(graphics.plan_info_lines(row.params, img.pose), vp.width(), vp.height(),
                                              n_text, graphics.body_share_map(img, t, vp.width(), vp.height(), outline))
                if editable:
                    free = graphics.free_spot(t, vp.width(), vp.height(), n_text, rect, info)
                    graphics.group_handles(o, img.pose, rect, plan_grips(row.params, img.pose, vp.pixels_per_mm(),
                                                                         with_shim=False, free=free,
                                                                         rotate_end=m.rotate_grip_end(row.uid)))
                graphics.plan_info(o, row.params, vp.width(), vp.height(), img.pose, info)
            if shim and shim_editable:
                graphics.shim_handles(o, rect, plan_grips(row.params, img.pose, vp.pixels_per_mm(), with_group=False),
                                      vp.pixel_transform(), vp.width(), vp.height())
            if is_map:
                roi = m.viewport_roi(i)
                if self._roi_drag is not None and self._roi_drag[0] == i:
                    _, pu, pv, cu, cv = self._roi_drag
                    graphics.roi_overlays(o, ((pu + cu) / 2.0, (pv + cv) / 2.0), (abs(cu - pu) / 2.0, abs(cv - pv) / 2.0),
                                          None, vp.height())
                elif roi is not None:
                    graphics.roi_overlays(o, roi.centre_mm, roi.radii_mm, roi.text(), vp.height())
            graphics.distance_overlays(o, m.viewport_distances(i), m.pending_distance_point(i), vp.pixels_per_mm())
            graphics.orientation_overlays(o, img.pose, vp.width(), vp.height(),
                                          graphics.below_color_bar(vp.height()) if is_map else None,
                                          graphics.clear_of_caption(caption, vp.width()))
            graphics.slice_position_overlay(o, caption, position)
            graphics.caption_overlays(o, caption)
            vp.set_overlays(o)

    # ---- planning drags on the viewports ------------------------------------------------------------
    def _on_viewport_mouse(self, i: int, kind: str, u: float, v: float, button: Any) -> None:
        """A left press on a grip of viewport i starts a planning drag (overlays.DragController); the
        model gets absolute values computed from the row as it was at the press, so a drag's result
        depends on where it ends, not on how X batched its motion. A press elsewhere does nothing."""
        vp = self.viewer.viewport(i)
        m = self.model
        if kind in ("move", "press", "release") and m.viewport_image_data(i) is not None:
            # display state, not a user action: the status line is kept (not self._do)
            self._batched(m.set_pointer, i, u, v)
        if self._distance_mouse(i, kind, u, v, button):
            return
        if self._roi_mouse(i, kind, u, v, button):
            return
        drag = vp.drag
        drag.grab_px = graphics.GRAB_PX
        if kind == "press":
            if button != QtCore.Qt.MouseButton.LeftButton or drag.active:
                return
            img = self.model.viewport_image_data(i)
            row = self.model.open_row
            if img is None or row is None or not vp.overlays.handles():
                return
            if drag.press(u, v, vp.overlays, vp.pixel_transform()) is None:
                return
            self._plan_drag = (i, img.pose, row.params.copy())
            return
        if kind not in ("move", "release") or not drag.active:
            return
        d = drag.move(u, v) if kind == "move" else drag.release(u, v)
        start = self._plan_drag
        if kind == "release":
            self._plan_drag = None
        if d is None or start is None or start[0] != i:
            return
        self._do(self._apply_plan_drag, d, start[1], start[2])

    def _distance_mouse(self, i: int, kind: str, u: float, v: float, button: Any) -> bool:
        """With the distance tool on, a left press on an image is one of a measurement's two clicks
        (model.distance_point). True when the event was the tool's."""
        m = self.model
        if not m.distance_tool or m.viewport_image_data(i) is None:
            return False
        # a second click soon after the first may come as a double-click event (Qt's timing, not the user's)
        if kind in ("press", "double") and button == QtCore.Qt.MouseButton.LeftButton:
            self._do(m.distance_point, i, u, v)
        return kind in ("press", "release", "double")

    def _roi_mouse(self, i: int, kind: str, u: float, v: float, button: Any) -> bool:
        """With the ROI tool on, a left drag on a map draws an ellipse inscribed in the dragged rectangle;
        the release measures it (model.measure_roi). True when the event was the ROI tool's."""
        m = self.model
        if kind == "press":
            s = m.viewport_series(i)
            if not (m.roi_tool and button == QtCore.Qt.MouseButton.LeftButton and mapping.is_map_series(s)
                    and s.data.is_map(m.viewport_image[i])):
                return False
            self._roi_drag = (i, u, v, u, v)
            return True
        d = self._roi_drag
        if d is None or d[0] != i or kind not in ("move", "release"):
            return d is not None and kind == "move"
        self._roi_drag = (i, d[1], d[2], u, v)
        if kind == "release":
            self._roi_drag = None
            centre = ((d[1] + u) / 2.0, (d[2] + v) / 2.0)
            radii = (abs(u - d[1]) / 2.0, abs(v - d[2]) / 2.0)
            self._do(m.measure_roi, i, centre, radii)
        self._show_viewports()
        return True

    def _apply_plan_drag(self, d: ov.DragDelta, display: Any, p0: Any) -> None:
        """One drag step on the model, from the press-time parameters `p0` and the drag's totals."""
        m = self.model
        row = m.open_row
        if row is None:
            return
        p = row.params
        name = d.handle
        if name == "centre":
            want = planning.translated(p0.pose(), display, d.total_du, d.total_dv)
            if not np.allclose(want.centre, p.pose().centre):
                m.set_pose(want)
        elif name == "rotate":
            if abs(d.total_angle_deg) > 1e-9 or not np.allclose(p.normal(), p0.normal()):
                # from the press-time row, with where the grip was grabbed: it keeps that end (issue 24)
                m.rotate_group(display, d.total_angle_deg, start=p0, grip_uv=(d.u - d.total_du, d.v - d.total_dv))
        elif name == "shim_centre":
            c = np.asarray(p0.shim_box()["centre"], float) + d.total_du * display.u + d.total_dv * display.v
            if not np.allclose(c, np.asarray(p.shim_box()["centre"], float), atol=5e-4):
                m.set_shim_centre(c)
        else:
            g = planning.find_grip(plan_grips(p0, display, 1.0, with_group=not row.proto.is_localizer), name)
            if g is not None and g.role == "resize":
                apply_resize(m, p0, g, d.total_amount)

    # ---- controller interface ---------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        s = self.model.state()
        s["ui"] = {"card_tab": TABS[self.card_panel.tab], "menu_open": self.menu.isVisible(),
                   "renaming": self._rename_uid, "roi_readout": self.roi_readout.text()}
        return s

    def _extra_targets(self) -> dict[str, list[int]]:
        """Library leaves (a tree's rows are not all top-level) and the context menu's entries while shown."""
        out: dict[str, list[int]] = {}
        t = self.library
        origin = t.viewport().mapToGlobal(QtCore.QPoint(0, 0))
        for pid, item in self._library_items.items():
            r = t.visualItemRect(item)
            out[f"library_item:{pid}"] = [origin.x() + r.x(), origin.y() + r.y(), r.width(), r.height()]
        for vp in self.viewer.viewports():  # planning grips: "viewport<N>.handle:<name>"
            if not vp.isVisible():
                continue
            st = vp.screen_transform()
            for h in vp.overlays.handles():
                x, y = st.to_pixel(h.u, h.v)
                s = max(h.size_px, 2 * graphics.GRAB_PX)  # the reach hit_test grabs within
                out[f"{vp.name}.handle:{h.name}"] = [int(round(x - s / 2)), int(round(y - s / 2)), s, s]
        if self.menu.isVisible():
            mo = self.menu.mapToGlobal(QtCore.QPoint(0, 0))
            for key, a in self._menu_actions.items():
                r = self.menu.actionGeometry(a)
                out[f"queue_menu:{key}"] = [mo.x() + r.x(), mo.y() + r.y(), r.width(), r.height()]
        return out

    def viewports(self) -> list[ImageViewport]:
        return self.viewer.viewports()


def _set_style(w: QtWidgets.QWidget, style: str) -> None:
    """A style sheet set only when it changes (setting one re-polishes the widget)."""
    if w.styleSheet() != style:
        w.setStyleSheet(style)
