"""The MR console's parameter card (Qt): the open row's Routine, Contrast, Physio and Geometry tabs.

Numeric fields come from the view's `parameter_card` (declared Parameters, greyed by their Rules);
settings chosen from a list (CHOICES) are rows of checkable buttons named "<choice>:<option>". Under
the tabs: the scan time and the first conflict in words; in each tab, why its greyed fields are greyed.
"""
from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from consoles.common.widgets import button, group
from consoles.mr import card_help, mapping
from consoles.mr.model import CARD, CHOICES
from consoles.mr.status import CHOICE_LABELS, CHOICE_TITLES
from consoles.common.widgets import ChoiceRow
from consoles.mr.param_card import SHIM_CENTRE, SHIM_FIELDS, SHIM_SIZE

# the shim box's fields sit in a grid of two columns: short labels (the line above says centre and size)
SHIM_LABELS = {"shim_lr_mm": "L/R", "shim_ap_mm": "A/P", "shim_fh_mm": "F/H", "shim_read_mm": "Read",
               "shim_phase_mm": "Phase", "shim_slice_mm": "Slice"}
TABS = tuple(CARD)  # Routine, Contrast, Physio, Geometry
WIDE_CHOICES = ("shim_mode",)  # buttons that need the card's whole width, under their label
# The ranges and sign conventions under the fields (consoles.mr.card_help), in the ultrasound probe panel's font
HELP_STYLE = "color: #c3cad3; font-size: 12px;"


class CardPanel:
    """Builds the card into a panel for `view` (an MRConsoleView: its model, `_name`, `_do` and
    `parameter_card`) and shows the view's current model (the view may be rebound)."""

    def __init__(self, view: Any, width: int) -> None:
        self.view = view
        self.tab = 0
        self.widget = self._build(width)

    def _build(self, width: int) -> QtWidgets.QWidget:
        panel = QtWidgets.QWidget()
        panel.setFixedWidth(width)
        lay = QtWidgets.QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        g, gl = group("Parameters", "card_group")
        self.card_title = self.view._name("card_title", QtWidgets.QLabel())
        self.card_title.setWordWrap(True)
        # two lines whatever it says: an empty word-wrapped label is laid out 1 px shorter after it
        # once held text, which moved the tabs of a console reset in place
        self.card_title.setFixedHeight(34)
        self.card_title.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        gl.addWidget(self.card_title)
        tabs = QtWidgets.QHBoxLayout()
        tabs.setSpacing(3)
        self.tab_btns: list[QtWidgets.QPushButton] = []
        for i, tab in enumerate(TABS):
            name = f"tab_{tab.lower()}"
            b = self.view._name(name, button(tab, name, lambda i=i: self.show_tab(i)))
            b.setCheckable(True)
            b.setStyleSheet("padding: 4px 6px;")
            self.tab_btns.append(b)
            tabs.addWidget(b)
        gl.addLayout(tabs)
        self.pages = QtWidgets.QStackedWidget()
        self.choices: dict[str, ChoiceRow] = {}
        self.reasons: list[QtWidgets.QLabel] = []
        for tab in TABS:
            self.pages.addWidget(self._build_tab(tab))
        none_page = QtWidgets.QLabel("Double-click a row of the exam queue (or right-click it and choose "
                                     "Open) to see and change its parameters.")
        none_page.setObjectName("no_row_open")
        none_page.setWordWrap(True)
        none_page.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        none_page.setStyleSheet("color: #c0c6ce; padding: 8px;")
        self.no_row_page = none_page
        self.pages.addWidget(none_page)
        gl.addWidget(self.pages)
        self.scan_time = self.view._name("scan_time", QtWidgets.QLabel())
        gl.addWidget(self.scan_time)
        self.conflict = self.view._name("conflict", QtWidgets.QLabel())
        self.conflict.setWordWrap(True)
        self.conflict.setStyleSheet("color: #ff9a8a;")
        gl.addWidget(self.conflict)
        gl.addStretch(1)
        lay.addWidget(g, 1)
        return panel

    def _build_tab(self, tab: str) -> QtWidgets.QWidget:
        page = QtWidgets.QWidget()
        pl = QtWidgets.QVBoxLayout(page)
        pl.setContentsMargins(0, 6, 0, 0)
        pl.setSpacing(8)
        names = CARD[tab]
        card = self.view.parameter_card([n for n in names if n not in CHOICES and n not in SHIM_FIELDS])
        form: QtWidgets.QFormLayout = card.layout
        for idx, n in enumerate(names):
            if n not in CHOICES:
                continue
            row = ChoiceRow(n, CHOICES[n][0], CHOICE_LABELS[n], lambda o, n=n: self.view._do(self.view.model.set_param, n, o))
            for opt, b in row.buttons.items():
                self.view._name(f"{n}:{opt}", b)
            self.choices[n] = row
            # choices take their place in the card's order; their label on a line of its own when the
            # buttons need the whole width
            pos = sum(1 for m in names[:idx] if m not in CHOICES) + sum(
                2 if m in WIDE_CHOICES else 1 for m in names[:idx] if m in CHOICES)
            label = QtWidgets.QLabel(CHOICE_TITLES[n])
            if n in WIDE_CHOICES:
                form.insertRow(pos, label)
                form.insertRow(pos + 1, row)
            else:
                form.insertRow(pos, label, row)
        pl.addLayout(form)
        if tab == "Contrast":  # T2-prep times are fixed by the protocol: shown, not edited
            self.t2_prep_label = self.view._name("t2_prep_times", QtWidgets.QLabel())
            form.addRow(QtWidgets.QLabel("T2 prep times"), self.t2_prep_label)
        if tab == "Geometry":
            # the Position fields are scanner coordinates, as real consoles show them (consoles.mr.model)
            hint = self.view._name("position_convention",
                                   QtWidgets.QLabel("Position: mm from the isocentre, + = L, P, H"))
            lines = {n: self._help(f"geometry_help:{n}", t) for n, t in card_help.geometry_lines("T").items()}
            self.geometry_help = lines  # they follow the open row's main orientation (refresh)
            form.insertRow(3, _help_block([hint, lines["position_range"]]))
            # under the main orientation, the tilts and the rotation: their ranges and signs
            at = form.getWidgetPosition(card.field("inplane_deg").parentWidget())[0] + 1
            form.insertRow(at, _help_block([w for n, w in lines.items() if n != "position_range"]))
            self.orientation_label = self.view._name("orientation_readout", QtWidgets.QLabel())
            # the orientation read-out under the angles it sums up, the shim box under its mode
            at = form.getWidgetPosition(self.choices["shim_mode"])[0] - 1
            form.insertRow(at, QtWidgets.QLabel("Orientation"), self.orientation_label)
            form.addRow(self._shim_box_fields())
        elif card_help.range_lines(tab):  # the ranges of the tab's fields, under them
            form.addRow(_help_block([self._help(f"{tab.lower()}_ranges:{i + 1}", t)
                                     for i, t in enumerate(card_help.range_lines(tab))]))
        reason = QtWidgets.QLabel()
        reason.setObjectName(f"greyed_{tab.lower()}")
        reason.setWordWrap(True)
        reason.setStyleSheet("color: #9aa3ae;")
        self.reasons.append(reason)
        pl.addWidget(reason)
        pl.addStretch(1)
        return page

    def _shim_box_fields(self) -> QtWidgets.QWidget:
        """The shim box's centre (L/R, A/P, F/H) and size (read, phase, slice) fields, two columns of three
        under one line with their ranges (issue 34): the card's own NumberFields, refreshed with the others."""
        card = self.view.parameter_card(list(SHIM_FIELDS))
        box = QtWidgets.QWidget()
        grid = QtWidgets.QGridLayout(box)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(5)
        head = self._help("shim_box_help", card_help.shim_line())
        head.setStyleSheet(HELP_STYLE)
        grid.addWidget(head, 0, 0, 1, 4)
        for col, names in enumerate((SHIM_CENTRE, SHIM_SIZE)):
            for r, n in enumerate(names):
                label = self.view._name(f"{n}_label", QtWidgets.QLabel(SHIM_LABELS[n]))
                grid.addWidget(label, r + 1, 2 * col)
                grid.addWidget(card.field(n).parentWidget(), r + 1, 2 * col + 1)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        # rows of the fields' own height, fixed: laid out while the tab was hidden the grid squeezed them by 2 px,
        # and a console reset in place (laid out shown) did not, so its screenshots differed
        row_h = card.field(SHIM_CENTRE[0]).sizeHint().height()
        for r in range(1, 4):
            grid.setRowMinimumHeight(r, row_h)
        box.setFixedHeight(box.sizeHint().height())
        return box

    def _help(self, name: str, text: str) -> QtWidgets.QLabel:
        """One named help line (range or sign convention) in the help font."""
        return self.view._name(name, QtWidgets.QLabel(text))

    def show_tab(self, i: int) -> None:
        """Show tab i (0: Routine); with no row open the card stays on its empty page."""
        self.tab = i
        self._show_page()


    def refresh(self) -> None:
        """Values, enabled states, read-outs and reasons from the model."""
        m = self.view.model
        self.view.refresh_cards()
        row = m.open_row
        for tb in self.tab_btns:
            tb.setEnabled(row is not None)
        if row is None:
            self.card_title.setText("<b>No row open</b>")
            _set_text(self.scan_time, "")
            _set_text(self.conflict, "")
            if self.conflict.styleSheet() != "color: #ff9a8a;":  # as built (a reset in place)
                self.conflict.setStyleSheet("color: #ff9a8a;")
        else:
            self.card_title.setText(f"<b>Row {m.index_of(row.uid)}: {row.name}</b>  ({row.status})")
            self.scan_time.setText(f"Scan time {m.scan_time_text(row)}")
            found = m.row_conflicts(row)
            warned = mapping.warnings(row.params, row.proto, m.shown_heart_rate())
            _set_text(self.conflict, f"Conflict: {found[0]}" if found else f"Warning: {warned[0]}" if warned else "")
            # a warning (Go still acquires) in amber, a conflict (Go blocked) in red
            style = "color: #ffc36a;" if warned and not found else "color: #ff9a8a;"
            if self.conflict.styleSheet() != style:
                self.conflict.setStyleSheet(style)
            self.orientation_label.setText(row.params.orientation_text())
            t2 = mapping.mm.T2_SCHEMES.get(row.params.scheme or "")
            self.t2_prep_label.setText(" / ".join(f"{t:.0f}" for t in t2.prep_ms) + " ms" if t2 else "-")
        # the angles' signs for the open row's main orientation (as built, transverse, when none is open:
        # a console reset in place then shows what a fresh one shows)
        for name, text in card_help.geometry_lines("T" if row is None else row.params.main).items():
            _set_text(self.geometry_help[name], text)
        card = m.card()
        for name, row_w in self.choices.items():
            opts, rule = CHOICES[name]
            row_w.show_value(None if row is None else getattr(row.params, name), rule(m))
        for tab, label in zip(TABS, self.reasons):
            _set_text(label, _greyed_text(card.get(tab, [])) if row is not None else "")
        self._show_page()

    def _show_page(self) -> None:
        has_row = self.view.model.open_row is not None
        self.pages.setCurrentIndex(self.tab if has_row else len(TABS))
        for i, b in enumerate(self.tab_btns):
            b.setChecked(has_row and i == self.tab)



def _help_block(labels: list[QtWidgets.QLabel]) -> QtWidgets.QWidget:
    """Help lines under a group of fields: one form row spanning the card, the lines 2 px apart."""
    box = QtWidgets.QWidget()
    lay = QtWidgets.QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(2)
    for label in labels:
        label.setStyleSheet(HELP_STYLE)
        lay.addWidget(label)
    return box


def _set_text(label: QtWidgets.QLabel, text: str) -> None:
    """Set a label's text; empty means clear(): a word-wrapped label emptied by setText("") answers
    heightForWidth 14 where a fresh (or cleared) one answers -1, which moved the card's scan time by
    1 px on a console reset in place after a row with greyed fields had been open."""
    if text:
        label.setText(text)
    elif label.text():
        label.clear()


def _greyed_text(fields: list[dict[str, Any]]) -> str:
    """Why the greyed fields of one tab are greyed, one line per reason: 'TI: This sequence has no inversion pulse.'"""
    by_reason: dict[str, list[str]] = {}
    for f in fields:
        if not f.get("enabled") and f.get("reason"):
            label = f.get("label") or CHOICE_TITLES.get(f["name"], f["name"])
            by_reason.setdefault(f["reason"], []).append(label)
    return "\n".join(f"{', '.join(labels)}: {reason}" for reason, labels in by_reason.items())
