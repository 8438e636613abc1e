"""MR measurement aids (a mixin of MRModel; no Qt): what a real console shows so distances and positions are read,
not counted in pixels.

- Slice position: each image's position in patient coordinates with its main orientation, e.g. "Tra F 12.3": the
  image centre's coordinate along the axis its normal points most along, in mm from the isocentre (the scanner
  frame the card's Position fields use: + = left, posterior, head), with that axis's direction letter.
- Pointer read-out: the patient coordinates (scanner frame, mm) of the last pointer position over an image, e.g.
  "R12.3 A45.6 H7.8 mm"; display state (never logged as an event; in the dump under "measure").
- Distance tool: with the tool on, two clicks on an image measure the distance between them in mm (like the
  ultrasound calipers); each measurement stays on the image it was made on; turning the tool off clears them.
The mm scale bar is generic (consoles.common.scale_bar).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MeasureTools", "Distance", "MAX_DISTANCES", "slice_position_text", "patient_text", "ORIENTATION_NAMES"]

ORIENTATION_NAMES = ("Sag", "Cor", "Tra")  # the image normal's main axis: x (L/R), y (A/P), z (F/H)
AXIS_LETTERS = (("R", "L"), ("A", "P"), ("F", "H"))  # subject frame: +x left, +y posterior, +z head
MAX_DISTANCES = 4  # on screen at once: a fifth measurement replaces the oldest


def _letter_value(k: int, value: float, decimals: int = 1) -> str:
    q = round(float(value), decimals) + 0.0  # -0.0 reads as 0.0 and takes the positive letter
    return f"{AXIS_LETTERS[k][int(q >= 0.0)]} {abs(q):.{decimals}f}"


def slice_position_text(pose: Any, isocentre_mm: Any) -> str:
    """"Tra F 12.3": the main orientation of a plane and its centre's position along that axis (mm from the
    isocentre, direction letter)."""
    n = np.asarray(pose.normal, float)
    k = int(np.argmax(np.abs(n)))
    value = float(np.asarray(pose.centre, float)[k] - float(isocentre_mm[k]))
    return f"{ORIENTATION_NAMES[k]} {_letter_value(k, value)}"


def patient_text(point_mm: Any, isocentre_mm: Any) -> str:
    """"R12.3 A45.6 H7.8 mm": a subject-frame point in the scanner frame (mm from the isocentre); compact, to fit
    beside the caption of a 2x2 layout's viewport."""
    d = np.asarray(point_mm, float) - np.asarray(isocentre_mm, float)
    return " ".join(_letter_value(k, float(d[k])).replace(" ", "") for k in range(3)) + " mm"


@dataclass(frozen=True)
class Distance:
    """One distance measurement: its end points on the displayed plane (u, v mm) and in the subject frame, and the
    image it was made on (series uid, 0-based image index)."""

    series: int
    image: int
    p1_uv: tuple[float, float]
    p2_uv: tuple[float, float]
    p1_mm: tuple[float, float, float]
    p2_mm: tuple[float, float, float]

    @property
    def length_mm(self) -> float:
        return float(np.linalg.norm(np.subtract(self.p2_mm, self.p1_mm)))

    def text(self) -> str:
        return f"{self.length_mm:.1f} mm"

    def to_dict(self) -> dict[str, Any]:
        return {"series": self.series, "image": self.image + 1, "length_mm": round(self.length_mm, 3),
                "p1_mm": [round(x, 3) + 0.0 for x in self.p1_mm], "p2_mm": [round(x, 3) + 0.0 for x in self.p2_mm]}


class MeasureTools:
    """Pointer read-out, slice positions and the distance tool; MRModel supplies the viewer and the isocentre."""

    def _init_measure(self) -> None:
        self.pointer: tuple[int, float, float] | None = None  # (viewport, u, v) of the last pointer position
        self.distance_tool = False
        self.distance_pending: tuple[int, int, float, float] | None = None  # (series, image, u, v) of a first click
        self.distances: list[Distance] = []

    def _shown_image(self, viewport: int) -> tuple[int, int, Any] | None:
        """(series uid, image index, MRImage) viewport (0-based) shows, None when empty."""
        s = self.viewport_series(viewport)
        if s is None:
            return None
        k = self.viewport_image[viewport]
        return s.uid, k, s.data[k]

    def _plane_unnamed(self, viewport: int) -> bool:
        """Whether viewport (0-based) shows a localizer image whose plane the task asks the agent to recognise
        (labels hidden): its position and the pointer's coordinates (one of which stays put on a plane through
        the isocentre) would name it, so neither is shown there."""
        s = self.viewport_series(viewport)
        return bool(self.labels_hidden and s is not None and s.localizer)

    def slice_position(self, viewport: int) -> str | None:
        """The slice position of the image viewport (0-based) shows ("Tra F 12.3"); None when empty (or unnamed)."""
        shown = self._shown_image(viewport)
        if shown is None or self._plane_unnamed(viewport):
            return None
        return slice_position_text(shown[2].pose, self.isocentre_mm)

    # ---- pointer -------------------------------------------------------------------------------------
    def set_pointer(self, viewport: int, u: float, v: float) -> None:
        """The pointer moved over viewport (0-based) to (u, v) mm of its displayed plane (display state only)."""
        i = self._viewport(viewport)
        p = (i, round(float(u), 3) + 0.0, round(float(v), 3) + 0.0)
        if p != self.pointer:
            self.pointer = p
            self._changed("pointer")

    def pointer_mm(self) -> np.ndarray | None:
        """The last pointer position in the subject frame (mm), None when it was never over an image."""
        if self.pointer is None:
            return None
        shown = self._shown_image(self.pointer[0])
        if shown is None:
            return None
        return np.asarray(shown[2].pose.to_subject(self.pointer[1], self.pointer[2]), float)

    def pointer_text(self, viewport: int) -> str | None:
        """The read-out viewport (0-based) shows: the pointer's patient coordinates when it was last over it."""
        if self.pointer is None or self.pointer[0] != viewport or self._plane_unnamed(viewport):
            return None
        p = self.pointer_mm()
        return None if p is None else patient_text(p, self.isocentre_mm)

    # ---- distance tool -------------------------------------------------------------------------------
    def set_distance_tool(self, on: bool) -> None:
        """Turn the distance tool on (clicks on an image measure) or off (its measurements are cleared)."""
        self.distance_tool = bool(on)
        self.distance_pending = None
        if not self.distance_tool:
            self.distances.clear()
        self._log("distance_tool", on=self.distance_tool)
        self.message = ("Distance tool on: click two points on an image." if self.distance_tool
                        else "Distance tool off.")
        self._changed("measure")

    def distance_point(self, viewport: int, u: float, v: float) -> Distance | None:
        """A click of the distance tool at (u, v) mm on viewport (0-based): the first starts a measurement, the
        second (on the same image) ends it and returns it."""
        self._require(self.distance_tool, "Turn the distance tool on first.")
        shown = self._shown_image(self._viewport(viewport))
        self._require(shown is not None, "There is no image here to measure on.")
        assert shown is not None
        uid, k, img = shown
        p = (round(float(u), 3) + 0.0, round(float(v), 3) + 0.0)
        pend = self.distance_pending
        if pend is None or (pend[0], pend[1]) != (uid, k):
            self.distance_pending = (uid, k, *p)
            self.message = "Distance: click the second point."
            self._changed("measure")
            return None
        a = (pend[2], pend[3])
        pose = img.pose
        d = Distance(uid, k, a, p, tuple(float(x) for x in pose.to_subject(*a)),
                     tuple(float(x) for x in pose.to_subject(*p)))
        self.distances.append(d)
        del self.distances[:-MAX_DISTANCES]
        self.distance_pending = None
        self._log("distance_measured", series=uid, image=k + 1, length_mm=round(d.length_mm, 2))
        self.message = f"Distance {d.text()}."
        self._changed("measure")
        return d

    def viewport_distances(self, viewport: int) -> list[Distance]:
        """The measurements made on the image viewport (0-based) shows."""
        shown = self._shown_image(viewport)
        if shown is None:
            return []
        return [d for d in self.distances if (d.series, d.image) == shown[:2]]

    def pending_distance_point(self, viewport: int) -> tuple[float, float] | None:
        """The first click of a measurement under way on the image viewport (0-based) shows."""
        shown, pend = self._shown_image(viewport), self.distance_pending
        if shown is None or pend is None or (pend[0], pend[1]) != shown[:2]:
            return None
        return pend[2], pend[3]

    def measure_dict(self) -> dict[str, Any]:
        """The dump's "measure": pointer (viewport 1-based, subject mm), tool state, measurements."""
        p = self.pointer_mm()
        return {"pointer": None if p is None or self.pointer is None else
                {"viewport": self.pointer[0] + 1, "uv_mm": [self.pointer[1], self.pointer[2]],
                 "subject_mm": [round(float(x), 3) + 0.0 for x in p]},
                "distance_tool": self.distance_tool, "distances": [d.to_dict() for d in self.distances]}
