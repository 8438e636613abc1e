"""Qt binding of the CT console model: widgets show the model and forward user input to it."""
from __future__ import annotations

from typing import Any, Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common import overlays as ov
from consoles.common.view_base import ConsoleViewBase, by_role
from consoles.common.viewport import ImageViewport
from consoles.ct import graphics
from consoles.common.widgets import button, group
from consoles.ct.bolus import CAN_START, CONTRAST, MONITOR_TIMEOUT_S, SETUP_EDITABLE
from consoles.ct.model import CAN_SCAN, CAN_SCOUT, PLAN_EDITABLE, CTModel
from consoles.ct.protocols import get_protocol
from rendering import ct_physics

WL_PRESETS = (("Lung", 1500, -600), ("Mediast.", 400, 40), ("Abdomen", 350, 50), ("Bone", 2000, 400))


class HUCurve(QtWidgets.QWidget):
    """ROI enhancement curve of the bolus monitoring: HU against seconds since injection."""

    T_MAX, HU_MIN, HU_MAX = MONITOR_TIMEOUT_S, -50.0, 450.0

    def __init__(self, model: CTModel) -> None:
        super().__init__()
        self.model = model
        self.setMinimumHeight(170)

    def paintEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        b = self.model.bolus
        p = QtGui.QPainter(self)
        p.fillRect(self.rect(), QtGui.QColor("#1c1f24"))
        left, top, right, bottom = 40, 22, self.width() - 22, self.height() - 24
        fx = lambda t: left + (right - left) * min(t, self.T_MAX) / self.T_MAX  # noqa: E731
        fy = lambda hu: bottom - (bottom - top) * (min(max(hu, self.HU_MIN), self.HU_MAX) - self.HU_MIN) / (  # noqa: E731
            self.HU_MAX - self.HU_MIN)
        p.setPen(QtGui.QPen(QtGui.QColor("#6b7380"), 1))
        p.drawRect(left, top, right - left, bottom - top)
        p.setPen(QtGui.QColor("#c0c6ce"))
        for hu in (0, 200, 400):
            p.drawText(2, int(fy(hu)) + 4, f"{hu}")
        for t in (0, 20, 40, 60):
            p.drawText(int(fx(t)) - 8, self.height() - 6, f"{t}s")
        thr = b.threshold_hu
        pen = QtGui.QPen(QtGui.QColor("#ffd94d"), 1, QtCore.Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawLine(left, int(fy(thr)), right, int(fy(thr)))
        pts = b.samples
        if pts:
            p.setPen(QtGui.QPen(QtGui.QColor("#4dd9ff"), 2))
            for (t0, h0), (t1, h1) in zip(pts, pts[1:]):
                p.drawLine(int(fx(t0)), int(fy(h0)), int(fx(t1)), int(fy(h1)))
            p.setBrush(QtGui.QColor("#4dd9ff"))
            for t, h in pts:
                p.drawEllipse(QtCore.QPoint(int(fx(t)), int(fy(h))), 3, 3)
            t, h = pts[-1]
            p.setPen(QtGui.QColor("#ffffff"))
            p.drawText(left, 14, f"last {h:.0f} HU at {t:.0f} s after injection")
        # Drawn last, on its own background, at the right end (the curve stops at the trigger):
        # the rising curve used to cross the threshold value.
        text = f"threshold {thr:.0f} HU"
        box = p.fontMetrics().boundingRect(text).adjusted(-3, -1, 3, 1)
        box.moveBottomRight(QtCore.QPoint(right - 2, int(fy(thr)) - 2))
        p.fillRect(box, QtGui.QColor("#1c1f24"))
        p.setPen(QtGui.QColor("#ffd94d"))
        p.drawText(box, QtCore.Qt.AlignmentFlag.AlignCenter, text)
        p.end()


class CTConsoleView(ConsoleViewBase):
    """Builds the CT console widgets around a CTModel (the shell's ConsoleController)."""

    model: CTModel

    def __init__(self, model: CTModel, width: int, height: int) -> None:
        super().__init__(model, width, height)
        outer = QtWidgets.QVBoxLayout(self.central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self._build_header())
        body = QtWidgets.QHBoxLayout()
        body.setContentsMargins(8, 8, 8, 8)
        body.setSpacing(8)
        body.addWidget(self._build_left_panel())
        body.addWidget(self._build_main_area(), 1)
        outer.addLayout(body, 1)
        self._remember_built_state()
        self._bind_model()

    # ---- construction -----------------------------------------------------------------
    def _build_header(self) -> QtWidgets.QWidget:
        h = QtWidgets.QWidget()
        h.setObjectName("header")
        h.setFixedHeight(38)
        lay = QtWidgets.QHBoxLayout(h)
        lay.setContentsMargins(12, 4, 12, 4)
        title = QtWidgets.QLabel("<b>CT Acquisition</b>")
        self.patient_label = QtWidgets.QLabel()
        self.clock_label = self._name("clock", QtWidgets.QLabel())
        self.status_label = self._name("scanner_status", QtWidgets.QLabel())
        for w in (title, self.patient_label):
            lay.addWidget(w)
            lay.addSpacing(24)
        lay.addStretch(1)
        lay.addWidget(self.status_label)
        lay.addSpacing(24)
        lay.addWidget(self.clock_label)
        return h

    def _build_left_panel(self) -> QtWidgets.QWidget:
        m = self.model
        panel = QtWidgets.QWidget()
        panel.setFixedWidth(300)
        lay = QtWidgets.QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)

        g, gl = group("1  Protocol", "protocol_group")
        self.protocol_list = self._name("protocol_list", QtWidgets.QListWidget())
        self.protocol_list.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        for p in m.protocols():
            item = QtWidgets.QListWidgetItem(p.name)
            item.setData(QtCore.Qt.ItemDataRole.UserRole, p.id)
            self.protocol_list.addItem(item)
        row_px = 24  # fixed rows so the list is exactly as tall as its items (no dead space, no scrollbar)
        for i in range(self.protocol_list.count()):
            self.protocol_list.item(i).setSizeHint(QtCore.QSize(0, row_px))
        self.protocol_list.setFixedHeight(self.protocol_list.count() * row_px + 2 * self.protocol_list.frameWidth())
        self._name_items("protocol_item", self.protocol_list, by_role())
        self.protocol_list.itemClicked.connect(
            lambda it: self._do(self.model.select_protocol, it.data(QtCore.Qt.ItemDataRole.UserRole)))
        gl.addWidget(self.protocol_list)
        self.load_btn = self._name("load_protocol", button("Load protocol", "load_protocol",
                                                             lambda: self._do(self.model.load_protocol)))
        gl.addWidget(self.load_btn)
        lay.addWidget(g)

        g, gl = group("2  Plan", "plan_group")
        self.scout_btn = self._name("acquire_scout", button("Acquire scout", "acquire_scout",
                                                              lambda: self._do(self.model.acquire_scout)))
        gl.addWidget(self.scout_btn)
        self.length_label = self._name("length_readout", QtWidgets.QLabel())
        self.plan_card = self.parameter_card(["start_mm", "end_mm", ("Length", self.length_label),
                                              "table_height_mm"])
        self.start_field = self.plan_card.field("start_mm")
        self.end_field = self.plan_card.field("end_mm")
        self.height_field = self.plan_card.field("table_height_mm")
        gl.addLayout(self.plan_card.layout)
        self.confirm_btn = self._name("confirm_plan", button("Confirm plan", "confirm_plan",
                                                               lambda: self._do(self.model.confirm)))
        gl.addWidget(self.confirm_btn)
        lay.addWidget(g)

        g, gl = group("3  Acquire", "acquire_group")
        self.acquisition_card = self.parameter_card(["kv", "mas", "pitch"])
        self.kv_field = self.acquisition_card.field("kv")
        self.mas_field = self.acquisition_card.field("mas")
        self.pitch_field = self.acquisition_card.field("pitch")
        gl.addLayout(self.acquisition_card.layout)
        self.dose_label = self._name("dose_readout", QtWidgets.QLabel())
        gl.addWidget(self.dose_label)
        self.dose_limit_label = self._name("dose_limit", QtWidgets.QLabel())
        self.dose_limit_label.setWordWrap(True)
        self.dose_limit_label.setVisible(m.ctdi_limit_mgy is not None)
        gl.addWidget(self.dose_limit_label)
        self.scan_btn = self._name("scan", button("Scan", "scan", lambda: self._do(self.model.scan), primary=True))
        gl.addWidget(self.scan_btn)
        self.progress = self._name("scan_progress", QtWidgets.QProgressBar())
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        gl.addWidget(self.progress)
        lay.addWidget(g)

        self.message = self._name("message", QtWidgets.QLabel())
        self.message.setWordWrap(True)
        self.message.setMinimumHeight(46)
        self.message.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.message)
        lay.addStretch(1)
        return panel

    def _build_main_area(self) -> QtWidgets.QWidget:
        m = self.model
        area = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(area)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        tabs = QtWidgets.QHBoxLayout()
        self.tab_plan = self._name("tab_plan", button("Planning", "tab_plan", lambda: self._show_page(0)))
        self.tab_review = self._name("tab_review", button("Review", "tab_review", lambda: self._show_page(1)))
        self.tab_bolus = self._name("tab_bolus", button("Bolus tracking", "tab_bolus", lambda: self._show_page(2)))
        for t in (self.tab_plan, self.tab_bolus, self.tab_review):
            t.setCheckable(True)
            t.setFixedWidth(140)
            tabs.addWidget(t)
        tabs.addStretch(1)
        lay.addLayout(tabs)
        self.pages = QtWidgets.QStackedWidget()
        lay.addWidget(self.pages, 1)

        plan = QtWidgets.QWidget()
        pl = QtWidgets.QHBoxLayout(plan)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(6)
        self.scout_ap = ImageViewport(plan, "scout_ap", "No scout yet: load a protocol, then Acquire scout")
        self.scout_lat = ImageViewport(plan, "scout_lateral", "Lateral scout")
        self._named["scout_ap"] = self.scout_ap
        self._named["scout_lateral"] = self.scout_lat
        pl.addWidget(self.scout_ap, 3)
        pl.addWidget(self.scout_lat, 2)
        self.scout_ap.mouse_callback = self._on_ap_mouse
        self.scout_lat.mouse_callback = self._on_lat_mouse
        self.scout_ap.set_window_level(*ct_physics.SCOUT_DISPLAY_WINDOW["ap"])
        self.scout_lat.set_window_level(*ct_physics.SCOUT_DISPLAY_WINDOW["lateral"])
        self.pages.addWidget(plan)

        review = QtWidgets.QWidget()
        rl = QtWidgets.QHBoxLayout(review)
        rl.setContentsMargins(0, 0, 0, 0)
        self.recon = ImageViewport(review, "recon_view", "No series open: select one in the exam history, then Open recon")
        self._named["recon_view"] = self.recon
        self.recon.wheel_callback = lambda n: self._do(self.model.scroll_recon, n)
        self.recon.set_window_level(400, 40)
        rl.addWidget(self.recon, 1)
        side = QtWidgets.QWidget()
        side.setFixedWidth(220)
        sl = QtWidgets.QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 0)
        g, gl = group("Exam history", "series_group")
        self.series_list = self._name("series_list", QtWidgets.QListWidget())
        self.series_list.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.series_list.setFixedHeight(150)
        self.series_list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._name_items("series_item", self.series_list)
        gl.addWidget(self.series_list)
        self.open_btn = self._name("open_recon", button(
            "Open recon", "open_recon", lambda: self._do(self._open_selected), primary=True))
        gl.addWidget(self.open_btn)
        sl.addWidget(g)
        g, gl = group("Images", "images_group")
        row = QtWidgets.QHBoxLayout()
        self.prev_btn = self._name("prev_image", button("Prev", "prev_image", lambda: self._do(self.model.scroll_recon, -1)))
        self.next_btn = self._name("next_image", button("Next", "next_image", lambda: self._do(self.model.scroll_recon, 1)))
        row.addWidget(self.prev_btn)
        row.addWidget(self.next_btn)
        gl.addLayout(row)
        self.image_label = QtWidgets.QLabel()
        self.image_label.setWordWrap(True)
        gl.addWidget(self.image_label)
        sl.addWidget(g)
        g, gl = group("Window (display only)", "wl_group")
        grid = QtWidgets.QGridLayout()
        for i, (label, w, lv) in enumerate(WL_PRESETS):
            b = self._name(f"wl_{label.lower().rstrip('.')}", button(
                label, f"wl_{label}", lambda w=w, lv=lv: self.recon.set_window_level(w, lv)))
            grid.addWidget(b, i // 2, i % 2)
        gl.addLayout(grid)
        sl.addWidget(g)
        sl.addStretch(1)
        rl.addWidget(side)
        self.pages.addWidget(review)
        self.pages.addWidget(self._build_bolus_page())
        self._show_page({"planning": 0, "review": 1, "bolus": 2}.get(m.start_page, 0))
        return area

    def _build_bolus_page(self) -> QtWidgets.QWidget:
        m = self.model
        page = QtWidgets.QWidget()
        bl = QtWidgets.QHBoxLayout(page)
        bl.setContentsMargins(0, 0, 0, 0)
        self.monitor = ImageViewport(page, "monitor_view", "No monitoring image: set the slice, then Reference image")
        self._named["monitor_view"] = self.monitor
        self.monitor.set_window_level(600, 100)
        self.monitor.mouse_callback = self._on_monitor_mouse
        bl.addWidget(self.monitor, 1)
        side = QtWidgets.QWidget()
        side.setFixedWidth(300)
        sl = QtWidgets.QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 0)
        g, gl = group("Bolus tracking", "bolus_group")
        self.bolus_card = self.parameter_card(["monitor_z_mm", "threshold_hu", "delay_s"])
        self.monitor_z_field = self.bolus_card.field("monitor_z_mm")
        self.threshold_field = self.bolus_card.field("threshold_hu")
        self.delay_field = self.bolus_card.field("delay_s")
        gl.addLayout(self.bolus_card.layout)
        self.monitor_ref_btn = self._name("monitor_reference", button(
            "Reference image", "monitor_reference", lambda: self._do(self.model.acquire_monitor_reference)))
        gl.addWidget(self.monitor_ref_btn)
        self.bolus_btn = self._name("start_bolus", button(
            "Start injection + monitoring", "start_bolus", lambda: self._do(self.model.start_bolus_tracking), primary=True))
        gl.addWidget(self.bolus_btn)
        self.bolus_status = self._name("bolus_status", QtWidgets.QLabel())
        self.bolus_status.setWordWrap(True)
        gl.addWidget(self.bolus_status)
        sl.addWidget(g)
        g, gl = group("ROI enhancement (HU)", "curve_group")
        self.hu_curve = self._name("hu_curve", HUCurve(m))
        gl.addWidget(self.hu_curve)
        sl.addWidget(g)
        sl.addStretch(1)
        bl.addWidget(side)
        return page

    def _restore_built_state(self) -> None:
        """The CT widgets as built (see ConsoleViewBase.rebind): no protocol row
        current, no series listed, the dose-limit line shown only when the new card sets a limit,
        the curve drawing the new model, the card's start page."""
        super()._restore_built_state()
        m = self.model
        for lst in (self.protocol_list, self.series_list):
            lst.clearSelection()
            lst.setCurrentRow(-1)
            lst.scrollToTop()
        self.series_list.clear()
        self.dose_limit_label.setText("")
        self.dose_limit_label.setStyleSheet("")
        self.dose_limit_label.setVisible(m.ctdi_limit_mgy is not None)
        self.hu_curve.model = m
        self._show_page({"planning": 0, "review": 1, "bolus": 2}.get(m.start_page, 0))

    # ---- glue ---------------------------------------------------------------------------
    def _show_page(self, i: int) -> None:
        self.pages.setCurrentIndex(i)
        self.tab_plan.setChecked(i == 0)
        self.tab_review.setChecked(i == 1)
        self.tab_bolus.setChecked(i == 2)
        self.page = i

    def _open_selected(self) -> None:
        row = self.series_list.currentRow()
        self.model.open_recon(row if row >= 0 else None)
        self._show_page(1)

    def _show_changes(self, topics: Sequence[str]) -> None:
        """Images, overlays and the series list for these notifications, each redrawn once."""
        m = self.model
        t = set(topics)
        if t & {"init", "scout", "viewport_resized"}:  # the rulers' pixel margins follow the widget's size
            self._show_scouts()
        if t & {"init", "scout", "plan", "protocol", "params", "bolus", "series", "viewport_resized"}:
            self._draw_plan()
        if t & {"init", "bolus", "scout", "protocol", "viewport_resized"}:
            self._show_monitor()
        if t & {"init", "series"}:
            self.series_list.clear()
            for s in m.series:
                tag = "  (prior)" if s.prior else ""
                self.series_list.addItem(f"#{s.uid} {get_protocol(s.protocol).name}{tag}\n"
                                         f"    {s.start_mm:.0f} to {s.end_mm:.0f} mm, {s.n_images} img\n"
                                         f"    DLP {s.dlp_mgycm:.0f} mGy·cm")
        if t & {"init", "recon", "recon_slice", "series", "viewport_resized"}:
            self._show_recon()

    # The panel in refresh order, each part with the notifications that refresh it alone ("plan":
    # range, table height, confirmation; "params": acquisition parameters; both may unconfirm the
    # plan, which changes the message and the buttons that need a confirmed plan). Other topics
    # refresh the whole panel.
    PANEL_PARTS = (
        ("_refresh_header", ()),
        ("_refresh_message", ("plan", "params")),
        ("_refresh_protocol_list", ("protocol_selection",)),
        ("_refresh_workflow_buttons", ()),
        ("_refresh_plan_fields", ("plan",)),
        ("_refresh_acquisition_fields", ("params",)),
        ("_refresh_plan_buttons", ("plan", "params")),
        ("_refresh_dose", ("plan", "params")),
        ("_refresh_bolus_controls", ("plan", "params")),
        ("_refresh_bolus_status", ("plan", "params")),  # its words follow the plan's confirmation
        ("_refresh_progress", ()),
    )
    QUIET_TOPICS = ("recon_slice",)  # the image and its caption are drawn by _show_recon

    def _refresh_panel(self) -> None:
        self.refresh_parts()

    def _refresh_header(self) -> None:
        m = self.model
        p = m.protocol
        hr = f"   HR {m.heart_rate_bpm} bpm" if p is not None and p.contrast else ""
        self.patient_label.setText(
            f"Patient: {m.subject.id.upper()}   Supine, head first   Protocol: {p.name if p else '-'}{hr}")
        self.clock_label.setText(f"Exam time {m.t:7.1f} s")
        status = ("SCANNING" if m.scan_status == "scanning" else
                  "RECONSTRUCTING" if m.scan_status == "reconstructing" else
                  "SCOUT" if m.scout_status == "acquiring" else "READY")
        self.status_label.setText(f"Scanner: <b>{status}</b>")

    def _refresh_message(self) -> None:
        self.message.setText(self.model.message)

    def _refresh_protocol_list(self) -> None:
        m = self.model
        if m.selected_protocol:
            for i in range(self.protocol_list.count()):
                it = self.protocol_list.item(i)
                if it.data(QtCore.Qt.ItemDataRole.UserRole) == m.selected_protocol and not it.isSelected():
                    self.protocol_list.setCurrentRow(i)

    def _refresh_workflow_buttons(self) -> None:
        m = self.model
        self.load_btn.setEnabled(not m.busy)
        self.scout_btn.setEnabled(CAN_SCOUT(m))

    def _refresh_plan_fields(self) -> None:
        self.plan_card.refresh()

    def _refresh_acquisition_fields(self) -> None:
        self.acquisition_card.refresh()

    def _refresh_plan_buttons(self) -> None:
        m = self.model
        self.confirm_btn.setEnabled(PLAN_EDITABLE(m) and not m.confirmed)
        self.confirm_btn.setText("Plan confirmed" if m.confirmed else "Confirm plan")
        self.scan_btn.setEnabled(CAN_SCAN(m))
        self.open_btn.setEnabled(bool(m.series) and not m.busy)
        self.length_label.setText(m.length_text())

    def _refresh_dose(self) -> None:
        m = self.model
        # the model's texts: the status line shows the same ones after an edit (issue 34)
        self.dose_label.setText(f"{m.ctdi_text()}   {m.dlp_text()}\n"
                                f"{m.effective_dose_text()}   Noise ~{m.expected_noise_hu():.0f} HU")
        if m.ctdi_limit_mgy is not None:
            size = "" if m.ctdi_limit_dw_mm is None else f" (size-specific, Dw {m.ctdi_limit_dw_mm:.0f} mm)"
            if m.dose_limit_exceeded():
                text = f"DOSE NOTICE: CTDIvol > limit {m.ctdi_limit_mgy:.2f} mGy{size}"
                style = "background: #7a1f1f; color: white; padding: 3px;"
            else:
                text = f"Within dose limit: CTDIvol \u2264 {m.ctdi_limit_mgy:.2f} mGy{size}"
                style = "background: #1f4d2a; color: white; padding: 3px;"
            self.dose_limit_label.setText(text)
            if self.dose_limit_label.styleSheet() != style:  # a new style sheet re-polishes the widget
                self.dose_limit_label.setStyleSheet(style)

    def _refresh_bolus_controls(self) -> None:
        m = self.model
        self.tab_bolus.setEnabled(CONTRAST(m))
        self.bolus_card.refresh()
        self.monitor_ref_btn.setEnabled(SETUP_EDITABLE(m))
        self.bolus_btn.setEnabled(CAN_START(m))

    def _refresh_bolus_status(self) -> None:
        self.bolus_status.setText(self.model.bolus.status_text())
        self.hu_curve.update()

    def _refresh_progress(self) -> None:
        m = self.model
        self.progress.setValue(int(round(1000 * m.scan_progress())))
        if m.scan_status == "idle":
            self.progress.setFormat(f"Series {len(m.series)} complete" if m.series else "No scan yet")
        else:
            self.progress.setFormat(f"{m.scan_status.capitalize()} {100 * m.scan_progress():.0f} %")

    # ---- scouts and planning graphics -------------------------------------------------------
    def _show_scouts(self) -> None:
        m = self.model
        top, bottom = m.table_limits()
        for vp, view in ((self.scout_ap, "ap"), (self.scout_lat, "lateral")):
            sc = m.scouts.get(view)
            if sc is None:
                vp.set_image(None)
                continue
            n_cols = sc.pixels.shape[1]
            u1 = sc.u0 + (n_cols - 1) * sc.du
            # the scout's fixed window (the protocol's): the same table mm at the same pixel on every patient,
            # with pixel margins for the rulers (graphics.SCOUT_MARGIN_PX)
            vp.set_view_box(*graphics.scout_view_box(vp.width(), vp.height(), sc.u0, u1, bottom, top, view))
            vp.set_image(sc.pixels, sc.u0, sc.v_top, sc.du, sc.dv)

    def _draw_plan(self) -> None:
        for vp, view in ((self.scout_ap, "ap"), (self.scout_lat, "lateral")):
            vp.set_overlays(graphics.scout_overlays(self.model, view, vp.pixels_per_mm(), vp.width(), vp.height()))

    def _on_ap_mouse(self, kind: str, u: float, v: float, button) -> None:
        m = self.model
        if m.scout_status != "done" or m.protocol is None:
            return
        d = self._scout_drag(self.scout_ap, kind, u, v, button)
        if d is None or d.repeats_last_move:  # the range is already where the pointer was let go
            return
        if d.handle == "start_handle":  # edges follow the pointer itself, not the drag offset
            self._do(m.set_range, d.v, None)
        elif d.handle == "end_handle":
            self._do(m.set_range, None, d.v)
        else:
            self._do(m.move_range, d.dv)

    def _on_lat_mouse(self, kind: str, u: float, v: float, button) -> None:
        m = self.model
        if m.scout_status != "done" or m.protocol is None:
            return
        d = self._scout_drag(self.scout_lat, kind, u, v, button)
        if d is not None and d.handle == "iso_handle" and not d.repeats_last_move:
            self._do(m.set_table_height, m.table_height_for_couch_y(d.u))

    def _scout_drag(self, vp: ImageViewport, kind: str, u: float, v: float, button):
        """Feed a scout's drag controller: a left press grabs what the overlays offer under the
        pointer (graphics.scout_overlays), moves and the release report the drag's delta."""
        drag = vp.drag
        drag.grab_px = graphics.EDGE_GRAB_PX
        if kind == "press" and button == QtCore.Qt.MouseButton.LeftButton:
            drag.press(u, v, vp.overlays, vp.pixel_transform())
        elif kind == "move" and drag.active:
            return drag.move(u, v)
        elif kind == "release" and drag.active:
            return drag.release(u, v)
        return None

    # ---- bolus monitoring -------------------------------------------------------------------
    def _show_monitor(self) -> None:
        m = self.model
        img = m.monitor_image
        if img is None:
            self.monitor.set_image(None)
            self.monitor.set_overlays(ov.OverlaySet())
            return
        sx, sy, _ = m.subject.spacing_mm
        ox, oy, _ = m.subject.origin_mm
        half = 200.0
        # image mm: gantry x across, AP from the isocentre down (anterior up), as the scanner reconstructs it
        self.monitor.set_view_box(-half, half, -half, half)
        self.monitor.set_image(img, m.frame.gantry_x(ox), m.y_iso_subject() - oy, sx, sy)
        self.monitor.set_overlays(graphics.monitor_overlays(m, img, self.monitor.width(), self.monitor.height()))

    def _on_monitor_mouse(self, kind: str, u: float, v: float, button) -> None:
        if kind == "press" and button == QtCore.Qt.MouseButton.LeftButton and self.model.monitor_image is not None:
            self._do(self.model.set_roi, u, -v)  # image mm (consoles.ct.bolus.BolusTracking.set_roi)

    # ---- review -----------------------------------------------------------------------------
    def _show_recon(self) -> None:
        m = self.model
        img = m.recon_image()
        if img is None:
            self.recon.set_image(None)
            self.recon.set_overlays(ov.OverlaySet())
            self.image_label.setText("No series open")
            return
        s = m.series[m.recon_open]
        sx, sy, _ = m.subject.spacing_mm
        ox, oy, _ = m.subject.origin_mm
        half = m.fov_mm / 2.0
        self.recon.set_view_box(-half, half, -s.y_iso_subject - half, -s.y_iso_subject + half)
        self.recon.set_image(img, m.frame.gantry_x(ox), -oy, sx, sy)  # centred on the gantry, not the patient
        self.recon.set_overlays(graphics.recon_overlays(m, self.recon.width(), self.recon.height()))
        z_table = graphics.recon_table_z(m)
        self.image_label.setText(f"Image {m.recon_index + 1} of {s.n_images}\nTable z {z_table:.1f} mm")

    # ---- controller interface -----------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        s = self.model.state()
        ww, wl = self.recon.window_level
        s["ui"] = {"page": ["planning", "review", "bolus"][self.page], "recon_window": ww, "recon_level": wl}
        return s

    def _extra_targets(self) -> dict[str, list[int]]:
        """Planning handles on the scouts (list rows and viewport labels come from the base)."""
        out: dict[str, list[int]] = {}
        m = self.model
        sc = m.scouts.get("ap")
        if sc is not None and self.scout_ap.isVisible():
            mid = sc.u0 + (sc.pixels.shape[1] - 1) * sc.du / 2
            for name, v in (("range_start_edge", m.start_mm), ("range_end_edge", m.end_mm)):
                x, y = self.scout_ap.to_screen(mid, v)
                out[f"scout_ap.{name}"] = [x - 7, y - 7, 14, 14]
        if m.scouts.get("lateral") is not None and self.scout_lat.isVisible():
            top, bottom = m.table_limits()
            x, y = self.scout_lat.to_screen(m.iso_couch_y(), (top + bottom) / 2)
            out["scout_lateral.iso_handle"] = [x - 7, y - 7, 14, 14]
        return out

    def viewports(self) -> list[ImageViewport]:
        return [self.scout_ap, self.scout_lat, self.recon, self.monitor]
