"""Qt pieces of the ultrasound console view: the image viewport, the probe positioning map and the parameter card
whose status line is the model's.

The probe map is a body pictogram unrolled around the torso: azimuth around the body across (the
patient's right flank on the screen's left, the anterior midline in the middle, the left flank on the
right, as seen facing a supine patient) and height along the body up (head at the top). The probe's
footprint is drawn where the model's pose puts it (probe_z_mm, probe_azimuth_deg), turned by its
rotation, with the marker end shown as a dot. Pressing on the footprint and moving drags the probe:
the new pose is the pose at the press plus the pointer's travel, so it depends only on where the
pointer is, never on how X batched the motion. Motion is coalesced like an ImageViewport's: by hand
once per event-loop pass (a zero-delay single shot, not a wall-clock timer), under the runner once per
step, at settle (USImageViewport flushes the map with itself) or just before the release.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from consoles.common import viewport as viewport_module
from consoles.common.params import Parameter
from consoles.common.viewport import ImageViewport
from consoles.common.widgets import ParameterCard

AZIMUTH_RANGE = (-135.0, 135.0)  # the map's width: front and both flanks (the model's azimuth bounds)
FOOTPRINT_LEN_PX, FOOTPRINT_W_PX = 28.0, 10.0
GRAB_PX = 16.0  # a press this close to the footprint's centre grabs it
MAP_MARGINS = (40, 22, 8, 22)  # left (height ticks), top (Head), right, bottom (flank names)
SKIN = QtGui.QColor("#3b4654")
GRID = QtGui.QColor("#7d8794")
TEXT = QtGui.QColor("#d0d5dc")
PROBE = QtGui.QColor("#8cc4ff")
PROBE_FROZEN = QtGui.QColor("#8a939e")
MARKER = QtGui.QColor("#ffa040")


class USParameterCard(ParameterCard):
    """A parameter card whose commits leave the status line to the US model: the model says what it set, and
    when it set another value than the one entered, which setting limits it (issue 34), where the shared card
    would add "(limited by the other settings)" over it."""

    def _commit(self, p: Parameter, value: float) -> None:
        p.commit(self.model, value)


class USImageViewport(ImageViewport):
    """The B-mode viewport: no window/level drag (the image's display is the model's dynamic range and
    grey map, which the dump records), and it flushes other coalesced motion sources (the probe map)
    when the settle flushes its own, since the shell flushes viewports only."""

    def __init__(self, parent: QtWidgets.QWidget | None, name: str, placeholder: str = "No image") -> None:
        super().__init__(parent, name, placeholder)
        self.motion_sources: list[Callable[[], None]] = []

    def flush_pending_motion(self) -> None:
        super().flush_pending_motion()
        for flush in self.motion_sources:
            flush()

    def mousePressEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        if ev.button() != QtCore.Qt.MouseButton.RightButton:
            super().mousePressEvent(ev)

    def mouseReleaseEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        if ev.button() != QtCore.Qt.MouseButton.RightButton:
            super().mouseReleaseEvent(ev)


@dataclass(frozen=True)
class MapPose:
    """What the probe map shows of the pose."""

    z_mm: float
    azimuth_deg: float
    rotation_deg: float
    live: bool


@dataclass
class _Drag:
    press: QtCore.QPointF
    z0: float
    az0: float
    last: tuple[float, float] | None = None  # the (z, azimuth) last sent to the model


class ProbeMap(QtWidgets.QWidget):
    """The body pictogram with the draggable probe footprint.

    `pose()` gives what to draw; `z_limits()` the heights the map spans (the model's); `move_to(z,
    azimuth)` is called with the dragged pose (the view sends it to the model through `_do`).
    """

    def __init__(self, pose: Callable[[], MapPose], z_limits: Callable[[], tuple[float, float]],
                 move_to: Callable[[float, float], None], roll: Callable[[], float] = lambda: 0.0) -> None:
        super().__init__()
        self.setObjectName("probe_map")
        self._pose, self._z_limits, self._move_to, self._roll = pose, z_limits, move_to, roll
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.setMouseTracking(False)
        self._drag: _Drag | None = None
        self._pending: QtCore.QPointF | None = None
        self._flush_armed = False

    # ---- mapping --------------------------------------------------------------------------
    def map_rect(self) -> QtCore.QRectF:
        left, top, right, bottom = MAP_MARGINS
        return QtCore.QRectF(left, top, self.width() - left - right, self.height() - top - bottom)

    def to_widget(self, azimuth_deg: float, z_mm: float) -> QtCore.QPointF:
        r = self.map_rect()
        lo, hi = self._z_limits()
        a0, a1 = AZIMUTH_RANGE
        return QtCore.QPointF(r.left() + (azimuth_deg - a0) / (a1 - a0) * r.width(),
                              r.bottom() - (z_mm - lo) / max(1e-6, hi - lo) * r.height())

    def scale(self) -> tuple[float, float]:
        """(pixels per degree of azimuth, pixels per mm of height)."""
        r = self.map_rect()
        lo, hi = self._z_limits()
        return r.width() / (AZIMUTH_RANGE[1] - AZIMUTH_RANGE[0]), r.height() / max(1e-6, hi - lo)

    def footprint_centre(self) -> QtCore.QPointF:
        p = self._pose()
        return self.to_widget(p.azimuth_deg, p.z_mm)

    def transform(self) -> dict[str, float]:
        """Map (u = azimuth deg, v = height mm) -> screen pixel: x = ax u + bx, y = ay v + by."""
        kx, ky = self.scale()
        g = self.mapToGlobal(QtCore.QPoint(0, 0))
        o = self.to_widget(0.0, 0.0)
        return {"ax": kx, "bx": g.x() + o.x(), "ay": -ky, "by": g.y() + o.y()}

    # ---- dragging ---------------------------------------------------------------------------
    def cancel(self) -> None:
        """No drag and no coalesced motion (a console reset, a refusal that ends the drag)."""
        self._drag = None
        self._pending = None
        self._flush_armed = False

    @property
    def dragging(self) -> bool:
        return self._drag is not None

    def mousePressEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        self.cancel()
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        c, p = self.footprint_centre(), ev.position()
        if math.hypot(p.x() - c.x(), p.y() - c.y()) <= GRAB_PX:
            pose = self._pose()
            self._drag = _Drag(QtCore.QPointF(p), pose.z_mm, pose.azimuth_deg)

    def mouseMoveEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        if self._drag is None:
            return
        self._pending = QtCore.QPointF(ev.position())
        if viewport_module.MOTION_DELIVERY["mode"] == "timer" and not self._flush_armed:
            self._flush_armed = True
            QtCore.QTimer.singleShot(0, self.flush_pending_motion)

    def mouseReleaseEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt API)
        if ev.button() != QtCore.Qt.MouseButton.LeftButton or self._drag is None:
            return
        self.flush_pending_motion()
        if self._drag is not None:
            self._apply(QtCore.QPointF(ev.position()))
        self.cancel()

    def flush_pending_motion(self) -> None:
        """Send the latest coalesced pointer position of a drag to the model (settle, release, or the
        next event-loop pass by hand)."""
        self._flush_armed = False
        if self._drag is not None and self._pending is not None:
            p, self._pending = self._pending, None
            self._apply(p)

    def _apply(self, p: QtCore.QPointF) -> None:
        d = self._drag
        assert d is not None
        kx, ky = self.scale()
        lo, hi = self._z_limits()
        z = min(hi, max(lo, d.z0 - (p.y() - d.press.y()) / ky))
        az = min(AZIMUTH_RANGE[1], max(AZIMUTH_RANGE[0], d.az0 + (p.x() - d.press.x()) / kx))
        target = (round(z, 1), round(az, 1))
        if target != d.last:  # the release at the last flushed point moves nothing
            d.last = target
            self._move_to(*target)

    # ---- painting ---------------------------------------------------------------------------
    def paintEvent(self, ev: QtGui.QPaintEvent) -> None:  # noqa: N802 (Qt API)
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        p.fillRect(self.rect(), QtGui.QColor("#1c1f24"))
        r = self.map_rect()
        p.setPen(QtGui.QPen(GRID, 1))
        p.setBrush(SKIN)
        p.drawRoundedRect(r, 10, 10)
        fm = p.fontMetrics()
        # flank and midline lines, named below the map
        dash = QtGui.QPen(GRID, 1, QtCore.Qt.PenStyle.DashLine)
        roll = float(self._roll())  # the patient's flanks and midline where the patient lies (+: left side up)
        for az, name in ((-90.0, "R flank"), (0.0, "Front"), (90.0, "L flank")):
            x = self.to_widget(az - roll, 0.0).x()
            p.setPen(dash)
            p.drawLine(QtCore.QPointF(x, r.top() + 2), QtCore.QPointF(x, r.bottom() - 2))
            p.setPen(TEXT)
            w = fm.horizontalAdvance(name)
            p.drawText(QtCore.QPointF(x - w / 2.0, r.bottom() + fm.ascent() + 3), name)
        p.setPen(TEXT)
        head = "Head \u2191"
        p.drawText(QtCore.QPointF(r.center().x() - fm.horizontalAdvance(head) / 2.0, r.top() - 6), head)
        # heights along the body every 100 mm, the numbers the Height field shows
        lo, hi = self._z_limits()
        p.setPen(QtGui.QPen(GRID, 1))
        z = math.ceil(lo / 100.0) * 100.0
        while z <= hi:
            y = self.to_widget(0.0, z).y()
            p.setPen(QtGui.QPen(GRID, 1))
            p.drawLine(QtCore.QPointF(r.left() - 4, y), QtCore.QPointF(r.left(), y))
            p.setPen(TEXT)
            text = f"{z:.0f}"
            p.drawText(QtCore.QPointF(r.left() - 6 - fm.horizontalAdvance(text), y + fm.ascent() / 2.0 - 1), text)
            z += 100.0
        self._paint_footprint(p)
        p.end()

    def _paint_footprint(self, p: QtGui.QPainter) -> None:
        pose = self._pose()
        c = self.footprint_centre()
        p.save()
        p.translate(c)
        # rotation 0: marker to the head (up on the map); 90: to the patient's right (left on the map)
        p.rotate(-pose.rotation_deg)
        body = QtCore.QRectF(-FOOTPRINT_W_PX / 2.0, -FOOTPRINT_LEN_PX / 2.0, FOOTPRINT_W_PX, FOOTPRINT_LEN_PX)
        p.setPen(QtGui.QPen(QtGui.QColor("#0e1116"), 1.5))
        p.setBrush(PROBE if pose.live else PROBE_FROZEN)
        p.drawRoundedRect(body, 3, 3)
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(MARKER)
        p.drawEllipse(QtCore.QPointF(0.0, -FOOTPRINT_LEN_PX / 2.0 + 4.0), 3.5, 3.5)
        p.restore()
