"""Small Qt building blocks shared by the consoles (buttons, numeric fields, headers)."""
from __future__ import annotations

from typing import Callable

from PySide6 import QtCore, QtWidgets


def button(text: str, name: str, on_click: Callable[[], None], primary: bool = False) -> QtWidgets.QPushButton:
    b = QtWidgets.QPushButton(text)
    b.setObjectName(name)
    b.setMinimumHeight(30)
    b.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
    if primary:
        b.setProperty("primary", True)
    b.clicked.connect(lambda _=False: on_click())
    return b


def number_field(name: str, lo: float, hi: float, decimals: int, step: float, suffix: str,
                 on_commit: Callable[[float], None]) -> QtWidgets.QDoubleSpinBox:
    """A numeric field that commits on Enter / focus loss (not on every keystroke).

    No spin arrows: under the neutral dark style they render as empty grey boxes that look
    clickable but show nothing. Values are typed (or stepped with the Up/Down keys).
    """
    f = QtWidgets.QDoubleSpinBox()
    f.setButtonSymbols(QtWidgets.QAbstractSpinBox.ButtonSymbols.NoButtons)
    f.setObjectName(name)
    f.setRange(lo, hi)
    f.setDecimals(decimals)
    f.setSingleStep(step)
    f.setSuffix(suffix)
    f.setKeyboardTracking(False)
    f.setMinimumHeight(28)
    f.setAccelerated(False)
    f.setCorrectionMode(QtWidgets.QAbstractSpinBox.CorrectionMode.CorrectToNearestValue)
    f.valueChanged.connect(lambda v: on_commit(float(v)))
    return f


def set_quietly(field: QtWidgets.QDoubleSpinBox, value: float) -> None:
    """Show a model value without echoing it back as a user edit."""
    if abs(field.value() - value) > 1e-9:
        field.blockSignals(True)
        field.setValue(value)
        field.blockSignals(False)


def group(title: str, name: str) -> tuple[QtWidgets.QGroupBox, QtWidgets.QVBoxLayout]:
    g = QtWidgets.QGroupBox(title)
    g.setObjectName(name)
    lay = QtWidgets.QVBoxLayout(g)
    lay.setContentsMargins(8, 14, 8, 8)
    lay.setSpacing(6)
    return g, lay


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
QDoubleSpinBox, QSpinBox, QLineEdit { background: #1c1f24; border: 1px solid #6b7380; padding: 2px 4px; }
QDoubleSpinBox:disabled { color: #7a808a; }
QProgressBar { border: 1px solid #6b7380; background: #1c1f24; text-align: center; height: 16px; }
QProgressBar::chunk { background: #2e7dc8; }
#header { background: #1f2329; border-bottom: 1px solid #555c66; }
#message { background: #1c1f24; border: 1px solid #555c66; padding: 6px; color: #ffd479; }
"""
