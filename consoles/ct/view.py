"""Qt binding of the CT console model: widgets show the model and forward user input to it."""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6 import QtCore, QtWidgets

from consoles.common import overlays as ov
from consoles.common.viewport import ImageViewport
from consoles.common.widgets import STYLESHEET, button, group, number_field, set_quietly
from consoles.ct.model import ConsoleActionError, CTModel
from consoles.ct.protocols import get_protocol

EDGE_GRAB_PX = 10
WL_PRESETS = (("Lung", 1500, -600), ("Mediast.", 400, 40), ("Abdomen", 350, 50), ("Bone", 2000, 400))


class CTConsoleView:
    """Builds the CT console widgets around a CTModel (the shell's ConsoleController)."""

    def __init__(self, model: CTModel, width: int, height: int) -> None:
        self.model = model
        self.central = QtWidgets.QWidget()
        self.central.setStyleSheet(STYLESHEET)
        self.central.setFixedSize(width, height)
        self._named: dict[str, QtWidgets.QWidget] = {}
        self._drag: str | None = None
        self._drag_anchor = 0.0
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
        model.listeners.append(self._on_model)
        self._on_model("init")

    # ---- construction -----------------------------------------------------------------
    def _name(self, name: str, w: QtWidgets.QWidget) -> QtWidgets.QWidget:
        w.setObjectName(name)
        self._named[name] = w
        return w

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
        self.protocol_list.setFixedHeight(5 * 26 + 6)
        self.protocol_list.itemClicked.connect(
            lambda it: self._do(m.select_protocol, it.data(QtCore.Qt.ItemDataRole.UserRole)))
        gl.addWidget(self.protocol_list)
        self.load_btn = self._name("load_protocol", button("Load protocol", "load_protocol",
                                                             lambda: self._do(m.load_protocol)))
        gl.addWidget(self.load_btn)
        lay.addWidget(g)

        g, gl = group("2  Plan", "plan_group")
        self.scout_btn = self._name("acquire_scout", button("Acquire scout", "acquire_scout",
                                                              lambda: self._do(m.acquire_scout)))
        gl.addWidget(self.scout_btn)
        form = QtWidgets.QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.setSpacing(5)
        self.start_field = self._name("start_field", number_field(
            "start_field", -2000, 2000, 1, 5.0, " mm", lambda v: self._do(m.set_range, v, None)))
        self.end_field = self._name("end_field", number_field(
            "end_field", -2000, 2000, 1, 5.0, " mm", lambda v: self._do(m.set_range, None, v)))
        self.height_field = self._name("table_height_field", number_field(
            "table_height_field", 60, 260, 1, 1.0, " mm", lambda v: self._do(m.set_table_height, v)))
        self.length_label = QtWidgets.QLabel()
        form.addRow("Start (top)", self.start_field)
        form.addRow("End (bottom)", self.end_field)
        form.addRow("Length", self.length_label)
        form.addRow("Table height", self.height_field)
        gl.addLayout(form)
        self.confirm_btn = self._name("confirm_plan", button("Confirm plan", "confirm_plan",
                                                               lambda: self._do(m.confirm)))
        gl.addWidget(self.confirm_btn)
        lay.addWidget(g)

        g, gl = group("3  Acquire", "acquire_group")
        form = QtWidgets.QFormLayout()
        form.setSpacing(5)
        self.kv_field = self._name("kv_field", number_field("kv_field", 70, 150, 0, 10, " kV",
                                                            lambda v: self._do(m.set_param, "kv", v)))
        self.mas_field = self._name("mas_field", number_field("mas_field", 10, 600, 0, 10, " mAs",
                                                              lambda v: self._do(m.set_param, "mas", v)))
        self.pitch_field = self._name("pitch_field", number_field("pitch_field", 0.2, 1.5, 2, 0.05, "",
                                                                  lambda v: self._do(m.set_param, "pitch", v)))
        form.addRow("Tube voltage", self.kv_field)
        form.addRow("Tube current", self.mas_field)
        form.addRow("Pitch", self.pitch_field)
        gl.addLayout(form)
        self.dose_label = self._name("dose_readout", QtWidgets.QLabel())
        gl.addWidget(self.dose_label)
        self.scan_btn = self._name("scan", button("Scan", "scan", lambda: self._do(m.scan), primary=True))
        gl.addWidget(self.scan_btn)
        self.progress = self._name("scan_progress", QtWidgets.QProgressBar())
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        gl.addWidget(self.progress)
        lay.addWidget(g)

        self.message = self._name("message", QtWidgets.QLabel())
        self.message.setWordWrap(True)
        self.message.setMinimumHeight(54)
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
        for t in (self.tab_plan, self.tab_review):
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
        for vp in (self.scout_ap, self.scout_lat):
            vp.set_window_level(6.0, 3.2)
        self.pages.addWidget(plan)

        review = QtWidgets.QWidget()
        rl = QtWidgets.QHBoxLayout(review)
        rl.setContentsMargins(0, 0, 0, 0)
        self.recon = ImageViewport(review, "recon_view", "No series open: scan, then Open recon")
        self._named["recon_view"] = self.recon
        self.recon.wheel_callback = lambda n: self._do(m.scroll_recon, n)
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
        gl.addWidget(self.series_list)
        self.open_btn = self._name("open_recon", button(
            "Open recon", "open_recon", lambda: self._do(self._open_selected), primary=True))
        gl.addWidget(self.open_btn)
        sl.addWidget(g)
        g, gl = group("Images", "images_group")
        row = QtWidgets.QHBoxLayout()
        self.prev_btn = self._name("prev_image", button("Prev", "prev_image", lambda: self._do(m.scroll_recon, -1)))
        self.next_btn = self._name("next_image", button("Next", "next_image", lambda: self._do(m.scroll_recon, 1)))
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
        self._show_page(0)
        return area

    # ---- glue ---------------------------------------------------------------------------
    def _do(self, fn, *args) -> None:
        try:
            fn(*args)
        except ConsoleActionError:
            pass  # the model already put the reason in its message
        self._refresh_panel()

    def _show_page(self, i: int) -> None:
        self.pages.setCurrentIndex(i)
        self.tab_plan.setChecked(i == 0)
        self.tab_review.setChecked(i == 1)
        self.page = i

    def _open_selected(self) -> None:
        row = self.series_list.currentRow()
        self.model.open_recon(row if row >= 0 else None)
        self._show_page(1)

    def _on_model(self, what: str) -> None:
        m = self.model
        if what in ("init", "scout"):
            self._show_scouts()
        if what in ("init", "scout", "plan", "protocol", "params"):
            self._draw_plan()
        if what in ("init", "series"):
            self.series_list.clear()
            for s in m.series:
                self.series_list.addItem(f"#{s.uid} {get_protocol(s.protocol).name}\n"
                                         f"    {s.start_mm:.0f} to {s.end_mm:.0f} mm, {s.n_images} img")
        if what in ("init", "recon", "recon_slice", "series"):
            self._show_recon()
        self._refresh_panel()

    def _refresh_panel(self) -> None:
        m = self.model
        p = m.protocol
        self.patient_label.setText(
            f"Patient: {m.subject.id.upper()}   Supine, head first   Protocol: {p.name if p else '-'}")
        self.clock_label.setText(f"Exam time {m.t:7.1f} s")
        busy = m.scan_status != "idle" or m.scout_status == "acquiring"
        status = ("SCANNING" if m.scan_status == "scanning" else
                  "RECONSTRUCTING" if m.scan_status == "reconstructing" else
                  "SCOUT" if m.scout_status == "acquiring" else "READY")
        self.status_label.setText(f"Scanner: <b>{status}</b>")
        self.message.setText(m.message)
        if m.selected_protocol:
            for i in range(self.protocol_list.count()):
                it = self.protocol_list.item(i)
                if it.data(QtCore.Qt.ItemDataRole.UserRole) == m.selected_protocol and not it.isSelected():
                    self.protocol_list.setCurrentRow(i)
        planning = m.scout_status == "done" and not busy
        self.load_btn.setEnabled(not busy)
        self.scout_btn.setEnabled(p is not None and not busy)
        for f in (self.start_field, self.end_field, self.height_field):
            f.setEnabled(planning)
        for f in (self.kv_field, self.mas_field, self.pitch_field):
            f.setEnabled(p is not None and not busy)
        self.confirm_btn.setEnabled(planning and not m.confirmed)
        self.confirm_btn.setText("Plan confirmed" if m.confirmed else "Confirm plan")
        self.scan_btn.setEnabled(m.confirmed and not busy)
        self.open_btn.setEnabled(bool(m.series) and not busy)
        set_quietly(self.start_field, m.start_mm)
        set_quietly(self.end_field, m.end_mm)
        set_quietly(self.height_field, m.table_height_mm)
        set_quietly(self.kv_field, m.kv)
        set_quietly(self.mas_field, m.mas)
        set_quietly(self.pitch_field, m.pitch)
        self.length_label.setText(f"{m.start_mm - m.end_mm:.1f} mm")
        d = m.current_dose()
        self.dose_label.setText(f"CTDIvol {d.ctdi_vol_mgy:.2f} mGy   DLP {d.dlp_mgycm:.0f} mGy·cm\n"
                                f"Effective dose {d.effective_msv:.2f} mSv")
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
            vp.set_view_box(sc.u0 - 40, u1 + 10, bottom - 10, top + 10)
            vp.set_image(sc.pixels, sc.u0, sc.v_top, sc.du, sc.dv)

    def _draw_plan(self) -> None:
        m = self.model
        for vp, view in ((self.scout_ap, "ap"), (self.scout_lat, "lateral")):
            o = ov.OverlaySet()
            sc = m.scouts.get(view)
            if sc is None:
                vp.set_overlays(o)
                continue
            u0 = sc.u0
            u1 = sc.u0 + (sc.pixels.shape[1] - 1) * sc.du
            top, bottom = m.table_limits()
            # ruler in table mm, every 50 mm, so a reader can map the image to the numeric fields
            tick = 50 * np.ceil(bottom / 50)
            while tick <= top:
                o.add(ov.Line(f"tick{tick}", u0 - 8, tick, u0 - 2, tick, ov.WHITE, 1.0))
                if int(tick) % 100 == 0:
                    o.add(ov.Label(f"tickl{tick}", u0 - 10, tick, f"{tick:.0f}", ov.WHITE, 11, "right", False, False))
                tick += 50
            if m.protocol is not None:
                color = ov.GREEN if m.confirmed else ov.YELLOW
                o.add(ov.Box("range", u0, m.end_mm, u1, m.start_mm, color, 2.0))
                mid = (u0 + u1) / 2
                if view == "ap":
                    o.add(ov.Handle("start_handle", mid, m.start_mm, color, 14))
                    o.add(ov.Handle("end_handle", mid, m.end_mm, color, 14))
                    k = vp.pixels_per_mm()
                    o.add(ov.Label("start_label", u0 + 6, m.start_mm - 12 / k, f"Start {m.start_mm:.1f}", color, 13))
                    o.add(ov.Label("end_label", u0 + 6, m.end_mm + 12 / k, f"End {m.end_mm:.1f}", color, 13))
                else:
                    yi = m.y_iso_subject()
                    o.add(ov.Line("iso_line", yi, bottom, yi, top, ov.CYAN, 2.0, dashed=True))
                    o.add(ov.Handle("iso_handle", yi, (top + bottom) / 2, ov.CYAN, 14))
                    o.add(ov.Label("iso_label", yi - 6, (top + bottom) / 2 + 24 / vp.pixels_per_mm(),
                                   f"Isocentre  H {m.table_height_mm:.1f}", ov.CYAN, 13, "right"))
            w, h = vp.width(), vp.height()
            if view == "ap":
                o.add(ov.Label("orient_r", 8, h / 2, "R", ov.WHITE, 16, "left", True))
                o.add(ov.Label("orient_l", w - 8, h / 2, "L", ov.WHITE, 16, "right", True))
                o.add(ov.Label("title", 8, h - 14, "AP scout", ov.WHITE, 13, "left", True))
            else:
                o.add(ov.Label("orient_a", 8, h / 2, "A", ov.WHITE, 16, "left", True))
                o.add(ov.Label("orient_p", w - 8, h / 2, "P", ov.WHITE, 16, "right", True))
                o.add(ov.Label("title", 8, h - 14, "Lateral scout", ov.WHITE, 13, "left", True))
            vp.set_overlays(o)

    def _on_ap_mouse(self, kind: str, u: float, v: float, button) -> None:
        m = self.model
        if m.scout_status != "done" or m.protocol is None:
            return
        k = self.scout_ap.pixels_per_mm()
        if kind == "press" and button == QtCore.Qt.MouseButton.LeftButton:
            d_start, d_end = abs(v - m.start_mm) * k, abs(v - m.end_mm) * k
            if min(d_start, d_end) <= EDGE_GRAB_PX:
                self._drag = "start" if d_start <= d_end else "end"
            elif m.end_mm < v < m.start_mm:
                self._drag, self._drag_anchor = "box", v
            else:
                self._drag = None
        elif kind in ("move", "release") and self._drag:
            if self._drag == "start":
                self._do(m.set_range, v, None)
            elif self._drag == "end":
                self._do(m.set_range, None, v)
            else:
                self._do(m.move_range, v - self._drag_anchor)
                self._drag_anchor = v
            if kind == "release":
                self._drag = None

    def _on_lat_mouse(self, kind: str, u: float, v: float, button) -> None:
        m = self.model
        if m.scout_status != "done" or m.protocol is None:
            return
        k = self.scout_lat.pixels_per_mm()
        if kind == "press" and button == QtCore.Qt.MouseButton.LeftButton:
            self._drag = "iso" if abs(u - m.y_iso_subject()) * k <= EDGE_GRAB_PX else None
        elif kind in ("move", "release") and self._drag == "iso":
            self._do(m.set_table_height, m.table_height_for(u))
            if kind == "release":
                self._drag = None

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
        self.recon.set_image(img, ox, -oy, sx, sy)
        z_table = s.start_mm - (m.recon_index + 0.5) * (s.start_mm - s.end_mm) / s.n_images
        o = ov.OverlaySet()
        w, h = self.recon.width(), self.recon.height()
        o.add(ov.Label("info", 8, 14, f"Series {s.uid}  image {m.recon_index + 1}/{s.n_images}", ov.WHITE, 13,
                       "left", True))
        o.add(ov.Label("zpos", 8, 32, f"Table {z_table:.1f} mm   {s.slice_mm:g} mm slices", ov.WHITE, 13,
                       "left", True))
        o.add(ov.Label("orient_r", 8, h / 2, "R", ov.WHITE, 16, "left", True))
        o.add(ov.Label("orient_l", w - 8, h / 2, "L", ov.WHITE, 16, "right", True))
        o.add(ov.Label("orient_a", w / 2, 14, "A", ov.WHITE, 16, "center", True))
        self.recon.set_overlays(o)
        self.image_label.setText(f"Image {m.recon_index + 1} of {s.n_images}\nTable z {z_table:.1f} mm")

    # ---- controller interface -----------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        s = self.model.state()
        ww, wl = self.recon.window_level
        s["ui"] = {"page": ["planning", "review"][self.page], "recon_window": ww, "recon_level": wl}
        return s

    def named_widgets(self) -> dict[str, QtWidgets.QWidget]:
        return dict(self._named)

    def named_targets(self) -> dict[str, list[int]]:
        """Rects of things that are not widgets: list items and planning handles."""
        out: dict[str, list[int]] = {}
        g = self.protocol_list.viewport().mapToGlobal(QtCore.QPoint(0, 0))
        for i in range(self.protocol_list.count()):
            it = self.protocol_list.item(i)
            r = self.protocol_list.visualItemRect(it)
            out[f"protocol_item:{it.data(QtCore.Qt.ItemDataRole.UserRole)}"] = [
                g.x() + r.x(), g.y() + r.y(), r.width(), r.height()]
        g = self.series_list.viewport().mapToGlobal(QtCore.QPoint(0, 0))
        for i in range(self.series_list.count()):
            r = self.series_list.visualItemRect(self.series_list.item(i))
            out[f"series_item:{i}"] = [g.x() + r.x(), g.y() + r.y(), r.width(), r.height()]
        m = self.model
        sc = m.scouts.get("ap")
        if sc is not None and self.scout_ap.isVisible():
            mid = sc.u0 + (sc.pixels.shape[1] - 1) * sc.du / 2
            for name, v in (("range_start_edge", m.start_mm), ("range_end_edge", m.end_mm)):
                x, y = self.scout_ap.to_screen(mid, v)
                out[f"scout_ap.{name}"] = [x - 7, y - 7, 14, 14]
        if m.scouts.get("lateral") is not None and self.scout_lat.isVisible():
            top, bottom = m.table_limits()
            x, y = self.scout_lat.to_screen(m.y_iso_subject(), (top + bottom) / 2)
            out["scout_lateral.iso_handle"] = [x - 7, y - 7, 14, 14]
        return out

    def transforms(self) -> dict[str, dict[str, float]]:
        """Image-plane mm -> screen pixel maps of the visible viewports: x = ax*u + bx, y = ay*v + by."""
        out = {}
        for vp in (self.scout_ap, self.scout_lat, self.recon):
            if vp.isVisible():
                x0, y0 = vp.to_screen(0.0, 0.0)
                k = vp.pixels_per_mm()
                g = vp.mapToGlobal(QtCore.QPoint(0, 0))
                wx, wy = vp.to_widget(0.0, 0.0)
                out[vp.name] = {"ax": k, "bx": g.x() + wx, "ay": -k, "by": g.y() + wy}
        return out

    def viewports(self) -> list[ImageViewport]:
        return [self.scout_ap, self.scout_lat, self.recon]

    def on_clock(self, t_old: float, t_new: float) -> None:
        self.model.on_clock(t_old, t_new)
