"""Qt binding of the ultrasound console model: a cart scanner's screen (left) and its touch panel (right).

Left, the screen: the image's settings column, the B-mode sector (depth scale, focus marker, TGC curve,
orientation marker, calipers, annotations drawn over it), the TGC pots beside it, the exam strip and
the message line. Right, the touch panel: the probe map (drag the footprint over the body) with the
probe's rotation, tilt, rock and pressure, the imaging controls (presets, depth, focus, frequency,
gain, dynamic range, grey map), and Freeze, calipers, annotation and Save.

Every user action goes through `_do(model.method, ...)`: the model refuses in words (the message line).
The image is formed by the model (`frame()`, cached until the pose, a control or the coupling change)
when the view shows a change: under the runner once per step (probe-map and caliper drags coalesce their
motion to the settle), by hand once per event-loop pass while the probe is dragged.

Geometry export (for reference solvers and grounding): every control by name ("<param>_field", "<param>_minus" and
"<param>_plus" for depth, focus and gain, "preset:<name>",
"grey_map:<map>", "compound:<Off|3|5>", "freeze", "caliper", ...), "probe_footprint" (the grab square on the body
map), rows of the
exam strip as "strip_item:<uid>", the image's overlay labels as "us_image.label:<name>" (depth_<cm>,
caliper<k>.text, annotation<k>); transforms "us_image" (u = image x mm, v = -depth mm -> screen) and
"probe_map" (u = azimuth deg, v = height mm -> screen); caliper end handles under viewports.us_image.handles.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common.view_base import ConsoleViewBase, by_role
from consoles.common.viewport import ImageViewport
from consoles.common.numeric import range_text
from consoles.common.widgets import ChoiceRow, SteadyCaretLineEdit, button, group, header_bar, thumbnail
from consoles.us import view_graphics as graphics
from consoles.us.model import (CHOICES, COMPOUND_OPTIONS, FIELD_LABELS, FROZEN, LIVE, MAX_ANNOTATION_CHARS, PARAM,
                               STEPPED, USModel)
from consoles.us.view_parts import MapPose, ProbeMap, USImageViewport, USParameterCard
from rendering.us_physics import GREY_MAP_NOTES, GREY_MAPS, PRESET_NAMES, TGC_BANDS

ROLE = QtCore.Qt.ItemDataRole.UserRole
LEFT_W, RIGHT_W = 780, 476
TGC_W = 88
THUMB_PX = 64
STRIP_CELL = QtCore.QSize(92, THUMB_PX + 26)
SCREEN_BG = "#000000"
PROBE_ROWS = tuple((n, FIELD_LABELS[n]) for n in ("probe_z_mm", "probe_azimuth_deg", "probe_rotation_deg",
                                                   "probe_tilt_deg", "probe_rock_deg", "pressure_pct"))
# Beside the probe fields (issue 24): each field's range and each angle's sign, in a sonographer's words (signs as
# rendering.us_image.ProbeGeometry turns the beam and consoles/us/bed.py reads the bed frame; looking down on the
# probe from outside the body: rotation turns the marker anticlockwise from the head, tilt fans the beam to
# the right of a marker pointing away from you, rock swings it in the image plane towards the marker end).
PROBE_HELP = (("probe_z_mm", "Height: along the bed, + = toward the head; {range}"),
              ("probe_azimuth_deg", "Around body: 0 = up, + = toward the patient's left; {range}"),
              ("probe_rotation_deg", "Rotation: 0 = marker to head, + = anticlockwise from above; {range}"),
              ("probe_tilt_deg", "Tilt: + = beam to your right, marker away from you; {range}"),
              ("probe_rock_deg", "Rock: + = beam toward the marker end (heel-toe); {range}"),
              ("pressure_pct", "Pressure: {range}; firmer presses the whole array onto the skin"))
HELP_STYLE = "color: #c3cad3; font-size: 12px;"
IMAGING_ROWS = tuple(tuple((n, FIELD_LABELS[n]) for n in col) for col in (("depth_cm", "focus_cm", "frequency_mhz"),
                                                                         ("gain", "dynamic_range_db")))
GREY_MAP_LABELS = {g: f"{g} {GREY_MAP_NOTES[g].split(' ')[0]}" for g in GREY_MAPS}  # "A linear", "C high"
GREY_MAP_LABELS.update({"C": "C contrast"})
# Spatial compounding: Off, or the number of steered looks (angles) averaged (rendering.us_physics)
COMPOUND_LABELS: dict[str, str] = {}  # the buttons show the options ("Off", "3", "5"); the image's info line
# says "Compound 3 angles"


def compound_text(looks: int) -> str:
    """The image's compounding as its info line shows it: 'Off' or '3 angles'."""
    return "Off" if int(looks) == 1 else f"{int(looks)} angles"
# What the gel line says for each film state (consoles/us/contact.py)
GEL_STATES = {"none": "applied", "no_gel": "none", "no_gel_left": "dry on the left", "no_gel_right": "dry on the right"}
IMAGE_TOPICS = {"init", "pose", "acquisition", "display", "freeze", "viewport_resized"}
OVERLAY_TOPICS = IMAGE_TOPICS | {"calipers", "annotations"}


def patient_position(roll_deg: float) -> str:
    """How the patient lies, as the sonographer sees it (the model's roll: + the left side up)."""
    if abs(roll_deg) < 10.0:
        return "Supine"
    return f"{'Left' if roll_deg > 0 else 'Right'} side up {abs(roll_deg):.0f} deg"


def mss(seconds: float) -> str:
    """m:ss, as a scanner's exam clock shows it."""
    s = int(round(max(0.0, seconds)))
    return f"{s // 60}:{s % 60:02d}"


class USConsoleView(ConsoleViewBase):
    """Builds the ultrasound console widgets around a USModel (the shell's ConsoleController)."""

    model: USModel
    # commits leave the status line to the model, which names what it adjusted and why (USParameterCard)
    CARD_CLASS = USParameterCard

    def __init__(self, model: USModel, width: int, height: int) -> None:
        super().__init__(model, width, height)
        self._caliper_mode = False
        self._annotate_mode = False
        self._caliper_drag: tuple[int, int] | None = None  # (caliper index, end) being dragged
        self._shown_frame: Any = None  # the USFrame on the viewport (skip re-uploading it)
        self._view_box: tuple[float, float, float, float] | None = None  # the viewport's, as last set
        self._thumbs: dict[int, QtGui.QPixmap] = {}
        outer = QtWidgets.QVBoxLayout(self.central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self._build_header())
        body = QtWidgets.QHBoxLayout()
        body.setContentsMargins(8, 6, 8, 6)
        body.setSpacing(8)
        body.addWidget(self._build_screen())
        body.addWidget(self._build_panel())
        outer.addLayout(body, 1)
        self._set_tab_order()
        self._remember_built_state()
        self._bind_model()

    # ---- construction -----------------------------------------------------------------
    def _build_header(self) -> QtWidgets.QWidget:
        h, lay = header_bar("US Acquisition", spacing=22)
        self.patient_label = self._name("patient", QtWidgets.QLabel())
        lay.addWidget(self.patient_label)
        self.preset_label = self._name("preset_readout", QtWidgets.QLabel())
        self.frequency_label = self._name("frequency_readout", QtWidgets.QLabel())
        lay.addWidget(self.preset_label)
        lay.addWidget(self.frequency_label)
        lay.addStretch(1)
        self.frame_rate_label = self._name("frame_rate", QtWidgets.QLabel())
        self.status_label = self._name("scanner_status", QtWidgets.QLabel())
        self.clock_label = self._name("exam_time", QtWidgets.QLabel())
        for w in (self.frame_rate_label, self.status_label, self.clock_label):
            lay.addWidget(w)
        return h

    def _build_screen(self) -> QtWidgets.QWidget:
        area = QtWidgets.QWidget()
        area.setFixedWidth(LEFT_W)
        lay = QtWidgets.QVBoxLayout(area)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        screen = QtWidgets.QWidget()
        screen.setObjectName("us_screen")
        screen.setStyleSheet(f"#us_screen {{ background: {SCREEN_BG}; border: 1px solid #555c66; }}")
        sl = QtWidgets.QVBoxLayout(screen)
        sl.setContentsMargins(1, 1, 1, 1)
        sl.setSpacing(0)
        sl.addWidget(self._build_info())
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(0)
        self.image = USImageViewport(screen, "us_image", "No image")
        self._named["us_image"] = self.image
        self.image.set_window_level(255.0, 127.5)  # the frame is display-ready grey (0-255)
        self.image.mouse_callback = self._on_image_mouse
        row.addWidget(self.image, 1)
        row.addWidget(self._build_tgc())
        sl.addLayout(row, 1)
        lay.addWidget(screen, 1)
        g, gl = group("Exam strip", "strip_group")
        gl.setContentsMargins(4, 14, 4, 4)
        self.strip = self._name("exam_strip", QtWidgets.QListWidget())
        s = self.strip
        s.setFlow(QtWidgets.QListView.Flow.LeftToRight)
        s.setWrapping(False)
        s.setIconSize(QtCore.QSize(THUMB_PX, THUMB_PX))
        s.setGridSize(STRIP_CELL)
        s.setViewMode(QtWidgets.QListView.ViewMode.IconMode)
        s.setMovement(QtWidgets.QListView.Movement.Static)
        s.setFixedHeight(STRIP_CELL.height() + 8)
        s.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        s.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        s.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        s.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._name_items("strip_item", s, by_role())
        gl.addWidget(s)
        lay.addWidget(g)
        self.message = self._name("message", QtWidgets.QLabel())
        self.message.setFixedHeight(30)
        lay.addWidget(self.message)
        return area

    def _build_info(self) -> QtWidgets.QWidget:
        """The screen's title bar: LIVE / FROZEN, the image's settings, the marker side."""
        bar = QtWidgets.QWidget()
        bar.setObjectName("info_bar")
        bar.setFixedHeight(48)
        bar.setStyleSheet(f"#info_bar {{ background: {SCREEN_BG}; border-bottom: 1px solid #30343a; }}")
        lay = QtWidgets.QHBoxLayout(bar)
        lay.setContentsMargins(8, 4, 10, 4)
        lay.setSpacing(14)
        self.live_label = self._name("live_indicator", QtWidgets.QLabel())
        self.live_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.live_label.setFixedSize(96, 32)
        lay.addWidget(self.live_label)
        self.info_label = self._name("image_info", QtWidgets.QLabel())
        self.info_label.setStyleSheet("color: #e8ecf0;")
        lay.addWidget(self.info_label, 1)
        self.marker_label = self._name("marker_side", QtWidgets.QLabel())
        self.marker_label.setStyleSheet("color: #ffb070;")
        lay.addWidget(self.marker_label)
        return bar

    def _build_tgc(self) -> QtWidgets.QWidget:
        """The TGC pots beside the image, each at the height of the depth band it sets (placed by
        `_place_tgc_pots` whenever the image's scale changes)."""
        col = QtWidgets.QWidget()
        col.setObjectName("tgc_column")
        col.setFixedWidth(TGC_W)
        col.setStyleSheet("#tgc_column { background: #1f2329; }")
        title = QtWidgets.QLabel("<b>TGC</b>", col)
        title.setGeometry(0, 6, TGC_W, 18)
        title.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        # the pots' unit and range, as every field shows them (issue 34): above the first pot
        p = PARAM["tgc_1"]
        self.tgc_range = self._name("tgc_range", QtWidgets.QLabel(f"{p.unit}<br>{range_text(p.lo, p.hi, 0, '')}", col))
        self.tgc_range.setGeometry(0, 26, TGC_W, 34)
        self.tgc_range.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.tgc_range.setStyleSheet(HELP_STYLE)
        self.tgc_card = self.parameter_card([PARAM[f"tgc_{i + 1}"] for i in range(TGC_BANDS)])
        # the card's form is not shown: the pots are placed by hand at their bands' heights
        self.tgc_pots: list[tuple[QtWidgets.QLabel, QtWidgets.QWidget]] = []
        for i, f in enumerate(self.tgc_card.fields.values()):
            label = QtWidgets.QLabel(str(i + 1), col)
            label.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
            f.setParent(col)
            self.tgc_pots.append((label, f))
        self._tgc_ys: tuple[int, ...] = ()
        self._place_tgc_pots([40 + 40 * i for i in range(TGC_BANDS)])
        return col

    def _place_tgc_pots(self, ys: Sequence[float]) -> None:
        """Put pot k's row centred on ys[k] (column pixels)."""
        ys = tuple(int(round(y)) for y in ys)
        if ys == self._tgc_ys:
            return
        self._tgc_ys = ys
        for (label, f), y in zip(self.tgc_pots, ys):
            label.setGeometry(0, y - 14, 16, 28)
            f.setGeometry(20, y - 14, TGC_W - 26, 28)

    def _build_panel(self) -> QtWidgets.QWidget:
        panel = QtWidgets.QWidget()
        panel.setFixedWidth(RIGHT_W)
        lay = QtWidgets.QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        lay.addWidget(self._build_probe_group())
        lay.addWidget(self._build_imaging_group())
        lay.addWidget(self._build_tools_group())
        lay.addStretch(1)
        return panel

    def _build_probe_group(self) -> QtWidgets.QGroupBox:
        g, gl = group("Probe", "probe_group")
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(8)
        self.probe_map = self._name("probe_map", ProbeMap(self._map_pose, lambda: self.model.bed_z_limits(),
                                                          self._drag_probe_to,
                                                          lambda: self.model.patient_roll_deg))
        self.probe_map.setFixedSize(224, 196)
        self.image.motion_sources.append(self.probe_map.flush_pending_motion)
        row.addWidget(self.probe_map)
        right = QtWidgets.QVBoxLayout()
        right.setSpacing(6)
        self.probe_card = self.parameter_card([replace(PARAM[n], label=text) for n, text in PROBE_ROWS])
        self.probe_card.layout.setVerticalSpacing(5)
        right.addLayout(self.probe_card.layout)
        right.addStretch(1)
        row.addLayout(right, 1)
        gl.addLayout(row)
        # the range and sign of every field, and how to move the probe, under the map and the fields
        helps = QtWidgets.QVBoxLayout()
        helps.setSpacing(1)
        for name, text in PROBE_HELP:
            p = PARAM[name]
            rng = range_text(p.lo, 359.0 if name == "probe_rotation_deg" else p.hi, 0, p.unit)
            label = self._name(f"probe_help:{name}", QtWidgets.QLabel(text.format(range=rng)))
            label.setStyleSheet(HELP_STYLE)
            helps.addWidget(label)
        drag = self._name("probe_help:drag", QtWidgets.QLabel("Drag the probe on the body map, or type a value and Enter."))
        drag.setStyleSheet(HELP_STYLE)
        helps.addWidget(drag)
        gl.addLayout(helps)
        # Apply gel shows what it changed: the gel under the array and the share of scan lines in contact
        gel = QtWidgets.QHBoxLayout()
        gel.setSpacing(12)
        self.gel_btn = self._name("apply_gel", button("Apply gel", "apply_gel", lambda: self._do(self.model.apply_gel)))
        self.gel_btn.setFixedWidth(110)
        gel.addWidget(self.gel_btn)
        self.gel_label = self._name("gel_state", QtWidgets.QLabel())
        self.contact_label = self._name("contact_state", QtWidgets.QLabel())
        gel.addWidget(self.gel_label)
        gel.addWidget(self.contact_label)
        gel.addStretch(1)
        gl.addLayout(gel)
        return g

    def _build_imaging_group(self) -> QtWidgets.QGroupBox:
        g, gl = group("Imaging", "imaging_group")
        self.choices: dict[str, ChoiceRow] = {}
        self.choices["preset"] = ChoiceRow("preset", PRESET_NAMES, {}, lambda o: self._do(self.model.set_preset, o))
        self.choices["grey_map"] = ChoiceRow("grey_map", GREY_MAPS, GREY_MAP_LABELS,
                                             lambda o: self._do(self.model.set_param, "grey_map", o))
        self.choices["compound"] = ChoiceRow("compound", COMPOUND_OPTIONS, COMPOUND_LABELS,
                                             lambda o: self._do(self.model.set_param, "compound", o))
        for name, row_w in self.choices.items():
            # frozen, the preset stays readable: the chosen one greyed but still marked
            row_w.setStyleSheet("QPushButton:checked:disabled { background: #24496e; color: #d6e2ee; "
                                "border-color: #4d7aa6; }")
            for opt, b in row_w.buttons.items():
                self._name(f"{name}:{opt}", b)
        presets = QtWidgets.QHBoxLayout()
        presets.addWidget(QtWidgets.QLabel("Preset"))
        presets.addWidget(self.choices["preset"], 1)
        presets.addWidget(QtWidgets.QLabel("Compound"))  # on the preset's row: the panel has no height to spare
        presets.addWidget(self.choices["compound"])
        gl.addLayout(presets)
        cols = QtWidgets.QHBoxLayout()
        cols.setSpacing(14)
        self.imaging_cards = []
        self.step_buttons: dict[str, tuple[QtWidgets.QPushButton, QtWidgets.QPushButton]] = {}
        for rows in IMAGING_ROWS:
            card = self.parameter_card([replace(PARAM[n], label=text) for n, text in rows])
            for r in range(card.layout.rowCount()):
                card.layout.itemAt(r, QtWidgets.QFormLayout.ItemRole.LabelRole).widget().setMinimumWidth(72)
            for name in STEPPED:  # a cart scanner's -/+ keys: one press, one step
                if name in card.fields:
                    self._add_step_buttons(name, card.fields[name])
            self.imaging_cards.append(card)
            box = QtWidgets.QVBoxLayout()
            box.addLayout(card.layout)
            if rows is IMAGING_ROWS[-1]:
                box.addWidget(self._imaging_ranges())
            box.addStretch(1)
            cols.addLayout(box, 1)
        gl.addLayout(cols)
        maps = QtWidgets.QHBoxLayout()
        maps.addWidget(QtWidgets.QLabel("Grey map"))
        maps.addWidget(self.choices["grey_map"], 1)
        gl.addLayout(maps)
        return g

    def _add_step_buttons(self, name: str, field: QtWidgets.QWidget) -> None:
        """'-' and '+' beside a field (named "<param>_minus" / "<param>_plus"), after its unit."""
        row = field.parentWidget().layout() if field.parentWidget() is not None else None
        assert isinstance(row, QtWidgets.QHBoxLayout), f"{name}: the field is not in its unit row"
        keys = QtWidgets.QHBoxLayout()
        keys.setSpacing(2)
        pair = []
        for text, sign, suffix in (("\u2212", -1, "minus"), ("+", 1, "plus")):
            b = self._name(f"{name}_{suffix}", button(text, f"{name}_{suffix}",
                                                     lambda n=name, k=sign: self._do(self.model.step_param, n, k)))
            b.setFixedSize(24, 28)
            b.setStyleSheet("padding: 0px; font-weight: bold;")
            keys.addWidget(b)
            pair.append(b)
        row.addLayout(keys)
        self.step_buttons[name] = (pair[0], pair[1])

    def _imaging_ranges(self) -> QtWidgets.QLabel:
        """The imaging fields' ranges (the probe fields' ranges are under the map, the TGC pots' above them)."""
        def rng(n: str, unit: bool = True) -> str:
            p = PARAM[n]
            return range_text(p.lo, p.hi, 0, p.unit if unit else "")  # the bounds are whole numbers

        text = (f"Gain {rng('gain')}, DR {rng('dynamic_range_db')}<br>"
                f"Depth {rng('depth_cm', False)}, focus {rng('focus_cm')}")
        label = self._name("imaging_help", QtWidgets.QLabel(text))
        label.setStyleSheet("color: #c3cad3; font-size: 11px;")
        label.setFixedHeight(30)
        return label

    def _build_tools_group(self) -> QtWidgets.QGroupBox:
        g, gl = group("Freeze, measure, save", "tools_group")
        row = QtWidgets.QHBoxLayout()
        self.freeze_btn = self._name("freeze", button("Freeze", "freeze", lambda: self._do(self.model.freeze),
                                                      primary=True))
        self.freeze_btn.setMinimumWidth(120)
        self.caliper_btn = self._name("caliper", button("Caliper", "caliper", self._toggle_caliper_mode))
        self.caliper_btn.setCheckable(True)
        self.clear_cal_btn = self._name("clear_calipers", button(
            "Clear calipers", "clear_calipers", lambda: self._do(self.model.clear_calipers)))
        for b in (self.freeze_btn, self.caliper_btn, self.clear_cal_btn):
            row.addWidget(b)
        gl.addLayout(row)
        self.caliper_readout = self._name("caliper_readout", QtWidgets.QLabel())
        self.caliper_readout.setWordWrap(True)
        self.caliper_readout.setMinimumHeight(22)
        self.caliper_readout.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        gl.addWidget(self.caliper_readout)
        row = QtWidgets.QHBoxLayout()
        self.annotation_field = self._name("annotation_field", SteadyCaretLineEdit())
        f = self.annotation_field
        f.setMaxLength(MAX_ANNOTATION_CHARS)
        f.setMinimumHeight(28)
        f.setPlaceholderText("Annotation text, Enter")
        f.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.NoContextMenu)
        f.returnPressed.connect(lambda: self._do(self._place_annotation, None))
        self.annotate_btn = self._name("annotate", button("Annotate", "annotate", self._toggle_annotate_mode))
        self.annotate_btn.setCheckable(True)
        self.clear_ann_btn = self._name("clear_annotations", button(
            "Clear text", "clear_annotations", lambda: self._do(self.model.clear_annotations)))
        row.addWidget(f, 1)
        row.addWidget(self.annotate_btn)
        row.addWidget(self.clear_ann_btn)
        gl.addLayout(row)
        row = QtWidgets.QHBoxLayout()
        self.save_image_btn = self._name("save_image", button("Save image", "save_image",
                                                              lambda: self._do(self.model.save_image)))
        self.save_clip_btn = self._name("save_clip", button("Save clip", "save_clip",
                                                            lambda: self._do(self.model.save_clip)))
        row.addWidget(self.save_image_btn)
        row.addWidget(self.save_clip_btn)
        gl.addLayout(row)
        return g

    def _set_tab_order(self) -> None:
        """Tab goes probe, imaging, TGC, annotation: the window's first focus (at launch and after a
        reset) is the probe's Height field, not the first TGC pot beside the image."""
        order = [*self.probe_card.fields.values(), *(f for c in self.imaging_cards for f in c.fields.values()),
                 *self.tgc_card.fields.values(), self.annotation_field]
        for a, b in zip(order, order[1:]):
            QtWidgets.QWidget.setTabOrder(a, b)

    # ---- reset in place ---------------------------------------------------------------------
    def _restore_built_state(self) -> None:
        """The US widgets as built (see ConsoleViewBase.rebind): no caliper or annotation mode, an
        empty annotation editor, no probe-map or caliper drag, an empty exam strip."""
        super()._restore_built_state()
        self._caliper_mode = self._annotate_mode = False
        self._caliper_drag = None
        self.caliper_btn.setChecked(False)
        self.annotate_btn.setChecked(False)
        self.annotation_field.setText("")
        self.annotation_field.setModified(False)
        self.probe_map.cancel()
        self.strip.clear()
        self.strip.scrollToTop()
        self._thumbs.clear()
        self._shown_frame = None
        self._view_box = None  # the as-built viewport's camera was put back: set it again

    # ---- user input -------------------------------------------------------------------------
    def _map_pose(self) -> MapPose:
        m = self.model  # the bed frame, as the probe fields show it
        return MapPose(m.value("probe_z_mm"), m.value("probe_azimuth_deg"), m.value("probe_rotation_deg"), LIVE(m))

    def _drag_probe_to(self, z_mm: float, azimuth_deg: float) -> None:
        self._do(lambda: self.model.move_on_bed(z_mm, azimuth_deg))

    def _toggle_caliper_mode(self) -> None:
        self._caliper_mode = not self._caliper_mode and FROZEN(self.model)
        if self._caliper_mode:
            self._annotate_mode = False
        self._refresh_tools()

    def _toggle_annotate_mode(self) -> None:
        self._annotate_mode = not self._annotate_mode
        if self._annotate_mode:
            self._caliper_mode = False
        self._refresh_tools()

    def _place_annotation(self, at: tuple[float, float] | None) -> None:
        """The typed text onto the image (at image mm, or the model's default place); the editor empties
        only when the model took it."""
        text = self.annotation_field.text()
        if at is None:
            self.model.add_annotation(text)
        else:
            self.model.add_annotation(text, at[0], at[1])
        self.annotation_field.setText("")
        self._annotate_mode = False

    def _on_image_mouse(self, kind: str, u: float, v: float, btn) -> None:
        """Image clicks: drag a caliper end, place a caliper point, or place the annotation (image mm:
        x = u, y = -v)."""
        m, vp = self.model, self.image
        if kind == "press" and btn == QtCore.Qt.MouseButton.LeftButton:
            self._caliper_drag = None
            hit = vp.drag.press(u, v, vp.overlays, vp.pixel_transform()) if m.frozen else None
            end = graphics.caliper_end(hit.name) if hit is not None else None
            if end is not None:
                self._caliper_drag = end
                return
            vp.drag.cancel()
            if self._annotate_mode:
                self._do(self._place_annotation, (u, -v))
            elif self._caliper_mode:
                self._do(m.caliper_point, u, -v)
        elif kind in ("move", "release") and self._caliper_drag is not None:
            index, end = self._caliper_drag
            if kind == "release":
                self._caliper_drag = None
                vp.drag.cancel()
            cal = m.calipers[index - 1] if index <= len(m.calipers) else None
            if cal is not None and (cal.p1 if end == 1 else cal.p2) != (round(u, 2), round(-v, 2)):
                self._do(m.move_caliper_end, index, end, u, -v)

    # ---- model -> screen ----------------------------------------------------------------------
    def _show_changes(self, topics: Sequence[str]) -> None:
        t = set(topics)
        if t & IMAGE_TOPICS:
            self._show_image()
        if t & OVERLAY_TOPICS:
            self._show_overlays()
        if t & {"init", "saved"}:
            self._show_strip()
        if t & {"init", "pose", "freeze"}:
            self.probe_map.update()

    def _show_image(self) -> None:
        fr = self.model.frame()
        # the sector fills the viewport at every depth (and the viewport's size is final only once shown)
        box = graphics.SectorBox.fit(fr.beam.acquisition.depth_mm, self.image.width(), self.image.height())
        if box.view_box() != self._view_box:
            self._view_box = box.view_box()
            self.image.set_view_box(*self._view_box)
        if fr is not self._shown_frame:
            self.image.set_image(fr.pixels, fr.x0_mm, -fr.y_top_mm, fr.pixel_mm, fr.pixel_mm)
            self._shown_frame = fr
        depth = fr.beam.acquisition.depth_mm
        # the column and the viewport are siblings in one row: their tops differ by their geometries'
        dy = self.image.geometry().top() - self.tgc_pots[0][1].parentWidget().geometry().top()
        self._place_tgc_pots([dy + self.image.to_widget(0.0, -(i + 0.5) * depth / TGC_BANDS)[1]
                              for i in range(TGC_BANDS)])

    def _show_overlays(self) -> None:
        m = self.model
        a = m.beam().acquisition  # frozen: the frozen image's depth, focus and TGC
        o = graphics.image_overlays(a.depth_mm, a.focus_mm, a.tgc_db, [(c.p1, c.p2) for c in m.calipers],
                                    m.caliper_pending, [(n.text, n.x_mm, n.y_mm) for n in m.annotations],
                                    self.image.width(), self.image.height())
        self.image.set_overlays(o)

    def _show_strip(self) -> None:
        s = self.strip
        items = self.model.saved
        keys = [str(it.uid) for it in items]
        if [s.item(i).data(ROLE) for i in range(s.count())] == keys:
            return
        s.clear()
        for it in items:
            pm = self._thumbs.get(it.uid)
            if pm is None and it.pixels is not None:
                pm = self._thumbs[it.uid] = thumbnail(it.pixels, 255.0, THUMB_PX)
            label = f"{it.uid} Image" if it.kind == "image" else f"{it.uid} Clip {it.record.get('duration_s', 0):g} s"
            w = QtWidgets.QListWidgetItem(label)
            w.setData(ROLE, str(it.uid))
            if pm is not None:
                w.setIcon(QtGui.QIcon(pm))
            w.setSizeHint(STRIP_CELL - QtCore.QSize(4, 0))
            s.addItem(w)
        if s.count():
            s.scrollToItem(s.item(s.count() - 1))  # the newest item in view

    PANEL_PARTS = (
        ("_refresh_header", ("clock", "pose", "acquisition", "display", "freeze")),
        ("_refresh_info", ("pose", "acquisition", "display", "freeze")),
        ("_refresh_probe", ("pose", "freeze")),
        ("_refresh_imaging", ("acquisition", "display", "freeze")),
        ("_refresh_tools", ("freeze", "calipers", "annotations", "saved")),
        ("_refresh_message", ("pose", "acquisition", "display", "freeze", "calipers", "annotations", "saved")),
    )

    def _refresh_panel(self) -> None:
        self.refresh_parts()

    def _refresh_header(self) -> None:
        m = self.model
        self.patient_label.setText(f"Patient: {m.subject.id.upper()}   {patient_position(m.patient_roll_deg)}")
        self.preset_label.setText(f"Preset: <b>{m.preset}</b>")
        self.frequency_label.setText(f"{m.controls['frequency_mhz']:.1f} MHz")
        self.frame_rate_label.setText(f"{m.frame_rate_hz():.1f} Hz")
        if m.frozen:
            self.status_label.setText("Image: <b>FROZEN</b>")
            self.status_label.setStyleSheet("color: #7fd8ff;")
        else:
            self.status_label.setText("Image: <b>LIVE</b>")
            self.status_label.setStyleSheet("color: #7dffa0;")
        self.clock_label.setText(f"Exam time {mss(m.t)}")

    def _refresh_info(self) -> None:
        m = self.model
        a = m.beam().acquisition  # the image on show (frozen: as it was acquired)
        c = m.controls
        gap = "&nbsp;" * 4
        self.info_label.setText(
            f"<b>{m.preset}</b>{gap}{a.frequency_mhz:.1f} MHz{gap}Gain {a.gain:.0f} %{gap}"
            f"DR {c['dynamic_range_db']:.0f} dB{gap}Map {c['grey_map']}<br>"
            f"Depth {a.depth_mm / 10:.1f} cm{gap}Focus {a.focus_mm / 10:.1f} cm{gap}"
            f"Compound {compound_text(a.compound)}{gap}{m.frame_rate_hz():.1f} Hz")
        if m.frozen:
            self.live_label.setText("FROZEN")
            style = "background: #124a66; color: white; font-weight: bold; border: 1px solid #7fd8ff;"
        else:
            self.live_label.setText("LIVE")
            style = "background: #1f5a2c; color: white; font-weight: bold; border: 1px solid #7dffa0;"
        if self.live_label.styleSheet() != style:  # a new style sheet re-polishes the widget
            self.live_label.setStyleSheet(style)
        self.marker_label.setText(f"\u25cf Marker: {graphics.marker_direction(m.geometry().marker)}")

    def _refresh_probe(self) -> None:
        m = self.model
        self.probe_card.refresh()
        self.gel_btn.setEnabled(LIVE(m))
        self.gel_label.setText(f"Gel: {GEL_STATES.get(m.coupling.fault, m.coupling.fault)}")
        share = m.contact_state()["fraction_in_contact"]  # frozen: the frozen image's lines
        self.contact_label.setText(f"Contact: {100.0 * share:.0f} % of lines")
        self.probe_map.update()

    def _refresh_imaging(self) -> None:
        m = self.model
        for card in (*self.imaging_cards, self.tgc_card):
            card.refresh()
        for name, pair in self.step_buttons.items():  # the -/+ keys act when their field does (live)
            for b in pair:
                b.setEnabled(PARAM[name].enabled(m))
        self.choices["preset"].show_value(m.preset, CHOICES["preset"][1](m))
        self.choices["grey_map"].show_value(m.controls["grey_map"], CHOICES["grey_map"][1](m))
        self.choices["compound"].show_value(m.controls["compound"], CHOICES["compound"][1](m))

    def _refresh_tools(self) -> None:
        m = self.model
        frozen = FROZEN(m)
        self.freeze_btn.setText("Unfreeze" if m.frozen else "Freeze")
        if not frozen:
            self._caliper_mode = False
            self._caliper_drag = None
        self.caliper_btn.setEnabled(frozen)
        self.caliper_btn.setChecked(self._caliper_mode)
        self.clear_cal_btn.setEnabled(bool(m.calipers) or m.caliper_pending is not None)
        self.annotate_btn.setChecked(self._annotate_mode)
        self.clear_ann_btn.setEnabled(bool(m.annotations))
        self.save_clip_btn.setEnabled(LIVE(m))
        lines = [f"{i + 1}: {c.length_mm:.1f} mm" for i, c in enumerate(m.calipers)]
        if m.caliper_pending is not None:
            lines.append(f"{len(m.calipers) + 1}: click the second point")
        if not lines:
            lines.append("Caliper: click two points on the image." if self._caliper_mode else
                         "Press Caliper to measure." if frozen else "Freeze the image to measure.")
        self.caliper_readout.setText("    ".join(lines))

    def _refresh_message(self) -> None:
        self.message.setText(self.model.message)

    # ---- controller interface ---------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        s = self.model.state()
        s["ui"] = {"caliper_mode": self._caliper_mode, "annotate_mode": self._annotate_mode}
        return s

    def _extra_targets(self) -> dict[str, list[int]]:
        """The probe's footprint on the body map (a square around its centre, the grab area)."""
        if not self.probe_map.isVisible():
            return {}
        c = self.probe_map.footprint_centre()
        g = self.probe_map.mapToGlobal(QtCore.QPoint(0, 0))
        x, y = int(round(g.x() + c.x())), int(round(g.y() + c.y()))
        return {"probe_footprint": [x - 12, y - 12, 24, 24]}

    def transforms(self) -> dict[str, dict[str, float]]:
        """The image viewport's image mm (u = x, v = -depth) -> screen map, and the probe map's
        (u = azimuth deg, v = height mm) -> screen map under "probe_map"."""
        out = super().transforms()
        if self.probe_map.isVisible():
            out["probe_map"] = self.probe_map.transform()
        return out

    def viewports(self) -> list[ImageViewport]:
        return [self.image]
