"""Small Qt building blocks shared by the consoles (buttons, numeric fields, headers, choice rows,
image thumbnails)."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence, Union

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common.numeric import format_number, judge_entry, limited_message, not_a_number, parse_number
from consoles.common.params import Parameter


def button(text: str, name: str, on_click: Callable[[], None], primary: bool = False) -> QtWidgets.QPushButton:
    b = QtWidgets.QPushButton(text)
    b.setObjectName(name)
    b.setMinimumHeight(30)
    b.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
    if primary:
        b.setProperty("primary", True)
    b.clicked.connect(lambda _=False: on_click())
    return b


class SteadyCaretLineEdit(QtWidgets.QLineEdit):
    """A line edit whose caret is a steady 2 px bar it draws itself (Qt's own caret follows a
    wall-clock timer, and the console style hides it): the same pixels in every run."""

    def paintEvent(self, ev: QtGui.QPaintEvent) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(ev)
        if self.hasFocus() and not self.hasSelectedText():
            r = self.cursorRect()
            p = QtGui.QPainter(self)
            # just right of the insertion point, so it never covers the last glyph's stem
            p.fillRect(QtCore.QRect(r.center().x() + 1, r.top(), 2, r.height()), self.palette().text())
            p.end()


NO_VALUE_TEXT = "n/a"  # what a field shows for a value that does not exist (NaN: no inversion, no ECG)


class NumberField(SteadyCaretLineEdit):
    """A numeric entry that always shows its whole value, e.g. '120'; its unit is a label beside it
    (`unit_label`, put there by `with_unit`), never part of the editable text (issue 24: with the unit
    inside, a double-click selected one word and typing made '87 0').

    It is a plain line edit, not a QDoubleSpinBox: the spin box's inner editor is laid out by the
    style, and under a style sheet with hidden buttons Qt 6.11 shrinks it to about 1 px, so the
    value vanished from every screenshot. Typing commits on Enter or focus loss through
    consoles.common.numeric.judge_entry: in range it is applied (rounded to the shown decimals); out
    of range a full-turn angle is wrapped and anything else refused, and either way `on_message`
    gets the status line's words; a refused entry keeps its text and turns the field red. Up/Down
    step by `step` (inside the range). A focus click selects the whole number, and so does a
    double-click (not one word of it). The caret is a steady 2 px bar drawn by the field itself.
    """

    def __init__(self, name: str, lo: float, hi: float, decimals: int, step: float, unit: str,
                 on_commit: Callable[[float], None], label: str = "",
                 on_message: Callable[[str, bool], None] | None = None) -> None:
        super().__init__()
        self.setObjectName(name)
        self.lo, self.hi, self.decimals, self.step, self.unit = float(lo), float(hi), decimals, step, unit
        self.label = label or name
        self._value = self.lo
        self._on_commit = on_commit
        self._on_message = on_message
        self.refused = False  # the text on show is an entry the console refused
        self.setMinimumHeight(28)
        self.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.NoContextMenu)
        self.setText(format_number(self._value, decimals, ""))
        self.editingFinished.connect(self._commit_text)

    def value(self) -> float:
        return self._value

    def setValue(self, value: float) -> None:  # noqa: N802 (Qt naming, like QDoubleSpinBox)
        """Show `value` (clamped and rounded) without committing it; NaN (no such value) shows
        NO_VALUE_TEXT."""
        self._set_refused(False)
        if math.isnan(float(value)):
            self._value = math.nan
            self.setText(NO_VALUE_TEXT)
            return
        self._value = self._normalise(value)
        self.setText(format_number(self._value, self.decimals, ""))

    def _normalise(self, value: float) -> float:
        return round(min(self.hi, max(self.lo, float(value))), self.decimals)

    def _set_refused(self, refused: bool) -> None:
        if refused != self.refused:
            self.refused = refused
            self.setProperty("refused", refused)
            self.style().unpolish(self)
            self.style().polish(self)

    def _commit(self, value: float) -> None:
        old = self._value
        self.setValue(value)
        if self._value != old:  # NaN before: any number is a change
            self._on_commit(self._value)

    def _say(self, message: str | None, refused: bool) -> None:
        if message and self._on_message is not None:
            self._on_message(message, refused)

    def _commit_text(self) -> None:
        if self.text() == NO_VALUE_TEXT and math.isnan(self._value):
            return
        v = parse_number(self.text(), self.unit)
        verdict = not_a_number(self.label, self.text()) if v is None else \
            judge_entry(self.label, v, self.lo, self.hi, self.decimals, self.unit)
        if verdict.value is None:
            self._set_refused(True)  # the typed text stays, so the next screenshot shows what was refused
            self._say(verdict.message, True)
            return
        self._commit(verdict.value)
        self._say(verdict.message, False)

    def keyPressEvent(self, ev: QtGui.QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if ev.key() in (QtCore.Qt.Key.Key_Up, QtCore.Qt.Key.Key_Down):
            sign = 1 if ev.key() == QtCore.Qt.Key.Key_Up else -1
            self._commit(self._value + sign * self.step)
            return
        super().keyPressEvent(ev)

    def mouseDoubleClickEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        # the whole number, not the word under the pointer ("-" of "-2", or "87" of a unit text)
        super().mouseDoubleClickEvent(ev)
        self.selectAll()


def with_unit(field: NumberField) -> QtWidgets.QWidget:
    """The field with its unit as a label beside it (named "<field>_unit"); a field without a unit as is."""
    if not field.unit:
        return field
    box = QtWidgets.QWidget()
    lay = QtWidgets.QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(6)
    lay.addWidget(field, 1)
    unit = QtWidgets.QLabel(field.unit)
    unit.setObjectName(f"{field.objectName()}_unit")
    unit.setMinimumWidth(28)
    lay.addWidget(unit)
    field.unit_label = unit
    return box


def number_field(name: str, lo: float, hi: float, decimals: int, step: float, unit: str,
                 on_commit: Callable[[float], None], label: str = "",
                 on_message: Callable[[str, bool], None] | None = None) -> NumberField:
    """A numeric field that commits on Enter / focus loss (not on every keystroke)."""
    return NumberField(name, lo, hi, decimals, step, unit.strip(), on_commit, label, on_message)


def set_quietly(field: NumberField, value: float) -> None:
    """Show a model value without echoing it back as a user edit."""
    old = field.value()
    if math.isnan(old) != math.isnan(value) or abs(old - value) > 1e-9:
        field.setValue(value)


def say_entry(model: Any, message: str, refused: bool) -> None:
    """Put a field's entry message on the console's status line (the model's message); a refusal
    goes the way every refusal goes (ConsoleActionError, so the view shows it as refused)."""
    if refused:
        model._require(False, message)
    model.message = message
    model._changed("message")


FORM_LABEL_WIDTH = 96


def form(rows: list[tuple[str, QtWidgets.QWidget]], label_width: int = FORM_LABEL_WIDTH) -> QtWidgets.QFormLayout:
    """Label/field rows whose labels share one width, so fields line up across groups and a
    label never touches its field."""
    lay = QtWidgets.QFormLayout()
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setHorizontalSpacing(8)
    lay.setVerticalSpacing(5)
    for text, w in rows:
        label = QtWidgets.QLabel(text)
        label.setMinimumWidth(label_width)
        lay.addRow(label, w)
    return lay


CardRow = Union[Parameter, tuple[str, QtWidgets.QWidget]]


class ParameterCard:
    """A form of NumberFields built from declared Parameters, refreshed from the model.

    Rows are Parameters (a field named `p.widget_name`, committing through `p.commit`) or plain
    (label, widget) rows such as read-outs, in the order given. `dispatch(fn, *args)` runs a
    commit (a view's `_do`, which turns refusals into the message line). `refresh()` shows every
    field's model value and enables it exactly when its `enabled_when` holds.
    """

    def __init__(self, model: Any, rows: Sequence[CardRow], dispatch: Callable[..., None],
                 label_width: int = FORM_LABEL_WIDTH) -> None:
        self.model = model
        self.fields: dict[str, NumberField] = {}
        self.params: dict[str, Parameter] = {}
        form_rows: list[tuple[str, QtWidgets.QWidget]] = []
        for row in rows:
            if isinstance(row, Parameter):
                # the card's current model, not the one it was built with: a console reset in
                # place rebinds the card to a new model (rebind)
                f = number_field(row.widget_name, row.lo, row.hi, row.decimals, row.step, row.unit,
                                 lambda v, p=row: dispatch(self._commit, p, v), row.label,
                                 lambda text, refused: dispatch(say_entry, self.model, text, refused))
                self.fields[row.name], self.params[row.name] = f, row
                form_rows.append((row.label, with_unit(f)))
            else:
                form_rows.append(row)
        self.layout = form(form_rows, label_width)

    def _commit(self, p: Parameter, value: float) -> None:
        """Hand an entry to the model; if the model applied another value (a limit that depends on
        other settings), the status line says what was entered and what was set."""
        p.commit(self.model, value)
        got = p.value(self.model)
        note = None if math.isnan(got) else limited_message(p.label, value, got, p.decimals, p.unit)
        if note is not None:
            say_entry(self.model, note, False)

    def field(self, name: str) -> NumberField:
        return self.fields[name]

    def rebind(self, model: Any) -> None:
        """Show `model` from now on, every field exactly as a freshly built card shows it: text set
        anew (cursor at the end, no selection, no undo history, no half-typed text)."""
        self.model = model
        for name, f in self.fields.items():
            f.setEnabled(self.params[name].enabled(model))
        for name, f in self.fields.items():
            f.setValue(self.params[name].value(model))
            f.setModified(False)

    def refresh(self) -> None:
        """Enable states first, then values: the order the console always used (disabling a
        focused field moves focus, which can emit its editingFinished)."""
        for name, f in self.fields.items():
            f.setEnabled(self.params[name].enabled(self.model))
        for name, f in self.fields.items():
            set_quietly(f, self.params[name].value(self.model))


def group(title: str, name: str) -> tuple[QtWidgets.QGroupBox, QtWidgets.QVBoxLayout]:
    g = QtWidgets.QGroupBox(title)
    g.setObjectName(name)
    lay = QtWidgets.QVBoxLayout(g)
    lay.setContentsMargins(8, 14, 8, 8)
    lay.setSpacing(6)
    return g, lay


def header_bar(title: str, spacing: int) -> tuple[QtWidgets.QWidget, QtWidgets.QHBoxLayout]:
    """The console's top bar (40 px, named "header") with its bold title; the caller adds the rest."""
    h = QtWidgets.QWidget()
    h.setObjectName("header")
    h.setFixedHeight(40)
    lay = QtWidgets.QHBoxLayout(h)
    lay.setContentsMargins(12, 2, 12, 2)
    lay.setSpacing(spacing)
    lay.addWidget(QtWidgets.QLabel(f"<b>{title}</b>"))
    return h, lay


STYLESHEET = """
QWidget { color: #e2e6eb; }
QGroupBox { border: 1px solid #555c66; border-radius: 4px; margin-top: 10px; font-weight: bold; }
QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 4px; }
QPushButton { background: #3e444e; border: 1px solid #6b7380; border-radius: 3px; padding: 4px 10px; }
QPushButton:hover { background: #4a525e; }
QPushButton:disabled { color: #7a808a; background: #32363d; border-color: #474c55; }
QPushButton[primary="true"] { background: #2e6db0; border-color: #5a9be0; font-weight: bold; }
QPushButton[primary="true"]:disabled { background: #2a3a4d; color: #8090a0; border-color: #3b4c60; }
QPushButton:checked { background: #2e7dc8; border-color: #8cc4ff; }
QListWidget { background: #1c1f24; border: 1px solid #555c66; }
QListWidget::item { padding: 4px; }
QListWidget::item:selected { background: #2e7dc8; color: white; }
QLineEdit { background: #1c1f24; border: 1px solid #6b7380; padding: 2px 6px;
            selection-background-color: #2e7dc8; selection-color: white; }
QLineEdit:focus { border: 1px solid #8cc4ff; }
QLineEdit:disabled { color: #9aa0aa; background: #25282e; border-color: #474c55; }
QLineEdit[refused="true"] { border: 1px solid #ff5c5c; color: #ff8a8a; }
QProgressBar { border: 1px solid #6b7380; background: #1c1f24; text-align: center; height: 16px; }
QProgressBar::chunk { background: #2e7dc8; }
#header { background: #1f2329; border-bottom: 1px solid #555c66; }
#message { background: #1c1f24; border: 1px solid #555c66; padding: 6px; color: #ffd479; }
#message[refused="true"] { color: #ff8a8a; }
"""


THUMB_PX = 56  # thumbnails in series lists and exam strips


def thumbnail(pixels: np.ndarray, hi: float, size: int = THUMB_PX) -> QtGui.QPixmap:
    """A greyscale thumbnail of an image (0..hi maps to black..white): block means down to at most
    `size` pixels, centred on a black square (numpy only: no smoothing that depends on Qt)."""
    img = np.asarray(pixels, np.float64)
    f = max(1, math.ceil(max(img.shape) / size))
    rows, cols = (math.ceil(n / f) * f for n in img.shape)
    padded = np.zeros((rows, cols))
    padded[:img.shape[0], :img.shape[1]] = img
    small = padded.reshape(rows // f, f, cols // f, f).mean(axis=(1, 3))
    grey = np.clip(np.round(255.0 * small / max(hi, 1e-9)), 0, 255).astype(np.uint8)
    canvas = np.zeros((size, size), np.uint8)
    r0, c0 = (size - grey.shape[0]) // 2, (size - grey.shape[1]) // 2
    canvas[r0:r0 + grey.shape[0], c0:c0 + grey.shape[1]] = grey
    data = np.ascontiguousarray(canvas)
    qimg = QtGui.QImage(data.data, size, size, size, QtGui.QImage.Format.Format_Grayscale8).copy()
    return QtGui.QPixmap.fromImage(qimg)


def colour_thumbnail(rgb: np.ndarray, size: int = THUMB_PX) -> QtGui.QPixmap:
    """A colour thumbnail of an RGB uint8 (rows, cols, 3) image (a map): every f-th pixel (a map's
    colours must not be averaged into colours it does not have), centred on a black square."""
    f = max(1, math.ceil(max(rgb.shape[:2]) / size))
    small = np.ascontiguousarray(rgb[f // 2::f, f // 2::f][:size, :size])
    canvas = np.zeros((size, size, 3), np.uint8)
    r0, c0 = (size - small.shape[0]) // 2, (size - small.shape[1]) // 2
    canvas[r0:r0 + small.shape[0], c0:c0 + small.shape[1]] = small
    data = np.ascontiguousarray(canvas)
    qimg = QtGui.QImage(data.data, size, size, 3 * size, QtGui.QImage.Format.Format_RGB888).copy()
    return QtGui.QPixmap.fromImage(qimg)


class ChoiceRow(QtWidgets.QWidget):
    """A setting chosen from a list, as a row of checkable buttons named "<choice>:<option>"."""

    def __init__(self, name: str, options: tuple[str, ...], labels: dict[str, str],
                 on_pick: Callable[[str], None]) -> None:
        super().__init__()
        self.setObjectName(f"{name}_choice")
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.buttons: dict[str, QtWidgets.QPushButton] = {}
        for opt in options:
            b = button(labels.get(opt, opt), f"{name}:{opt}", lambda o=opt: on_pick(o))
            b.setCheckable(True)
            b.setMinimumHeight(28)
            b.setStyleSheet("padding: 3px 6px;")
            self.buttons[opt] = b
            lay.addWidget(b)
        lay.addStretch(1)

    def show_value(self, value: str | None, enabled: bool) -> None:
        for opt, b in self.buttons.items():
            b.setChecked(opt == value)
            b.setEnabled(enabled)
