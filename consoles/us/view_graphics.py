"""What the ultrasound console draws over its image, as plain overlay data (no Qt, no VTK).

Plane coordinates of the image viewport: u = image x_mm (screen right), v = -y_mm (up; y_mm is the
depth below the footprint). The image is laid out with fixed pixel margins around the sector (the
depth scale and focus marker on the left, the TGC curve on the right, the orientation marker above
the marker-side end of the array), so `view_box` and `image_overlays` take the viewport's size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from consoles.common import overlays as ov
from rendering import us_image as U
from rendering.us_physics import CURVILINEAR, TGC_RANGE_DB

# pixel margins around the sector: depth scale + labels (left), TGC curve (right), marker (top)
LEFT_PX, RIGHT_PX, TOP_PX, BOTTOM_PX = 74.0, 46.0, 26.0, 12.0
SCALE_GAP_PX = 14.0  # the depth scale's line this far left of the sector's widest point
TGC_GAP_PX = 22.0  # the TGC baseline this far right of it
TGC_SWING_PX = 16.0  # +-20 dB moves the TGC curve this far from its baseline
TEXT_PX = 13
GREY: ov.Color = (0.62, 0.66, 0.72)
CALIPER_COLORS: tuple[ov.Color, ...] = (ov.YELLOW, ov.CYAN, ov.GREEN, ov.ORANGE)


@dataclass(frozen=True)
class SectorBox:
    """Where the sector lies in image mm (for a depth) and the pixel scale it is shown at."""

    depth_mm: float
    half_width_mm: float  # at the sector's bottom corners (its widest)
    y_top_mm: float  # the array's end points (above the centre line's footprint: negative)
    k: float  # pixels per mm

    @classmethod
    def fit(cls, depth_mm: float, width_px: int, height_px: int) -> "SectorBox":
        width, y_top, y_bottom = U.sector_extent_mm(depth_mm)
        k = min((width_px - LEFT_PX - RIGHT_PX) / width, (height_px - TOP_PX - BOTTOM_PX) / (y_bottom - y_top))
        return cls(float(depth_mm), width / 2.0, float(y_top), max(1e-3, float(k)))

    def view_box(self) -> tuple[float, float, float, float]:
        """(u0, u1, v0, v1) for ImageViewport.set_view_box: the sector plus the pixel margins."""
        k = self.k
        return (-self.half_width_mm - LEFT_PX / k, self.half_width_mm + RIGHT_PX / k,
                -self.depth_mm - BOTTOM_PX / k, -self.y_top_mm + TOP_PX / k)


def depth_label_step_cm(depth_mm: float) -> int:
    """Labelled ticks every 1, 2 or 4 cm: about 4 to 8 numbers on the scale at any depth."""
    d = depth_mm / 10.0
    return 1 if d <= 8 else 2 if d <= 16 else 4


def depth_scale(o: ov.OverlaySet, box: SectorBox) -> None:
    """A ruler left of the sector: a tick every cm, numbers (cm) at every labelled tick."""
    k = box.k
    u = -box.half_width_mm - SCALE_GAP_PX / k
    o.add(ov.Line("depth_axis", u, 0.0, u, -box.depth_mm, GREY, 1.0))
    step = depth_label_step_cm(box.depth_mm)
    last = int(math.floor(box.depth_mm / 10.0 + 1e-9))
    for cm in range(0, last + 1):
        labelled = cm % step == 0
        length = (9.0 if labelled else 5.0) / k
        o.add(ov.Line(f"depth_tick_{cm}", u - length, -10.0 * cm, u, -10.0 * cm, GREY, 1.0))
        if labelled:
            text = f"{cm} cm" if cm + step > last else str(cm)  # the unit once, on the deepest number
            o.add(ov.Text(f"depth_{cm}", u - 12.0 / k, -10.0 * cm, text, ov.WHITE, TEXT_PX, "right",
                          background=False))


def focus_marker(o: ov.OverlaySet, box: SectorBox, focus_mm: float) -> None:
    """A triangle on the depth scale pointing into the image at the transmit focus."""
    k = box.k
    u = -box.half_width_mm - SCALE_GAP_PX / k
    v = -float(focus_mm)
    o.add(ov.Polyline("focus_marker", ((u + 2.0 / k, v + 6.0 / k), (u + 2.0 / k, v - 6.0 / k), (u + 11.0 / k, v)),
                      ov.YELLOW, 2.0, closed=True))


def tgc_curve(o: ov.OverlaySet, box: SectorBox, tgc_db: Sequence[float]) -> None:
    """The TGC curve right of the sector: the pots' offsets (dB) against depth, flat beyond the ends."""
    k = box.k
    u0 = box.half_width_mm + TGC_GAP_PX / k
    o.add(ov.Line("tgc_baseline", u0, 0.0, u0, -box.depth_mm, GREY, 1.0, dashed=True))
    n = len(tgc_db)
    swing = TGC_SWING_PX / k / max(abs(TGC_RANGE_DB[0]), abs(TGC_RANGE_DB[1]))
    pts = [(u0 + swing * float(tgc_db[0]), 0.0)]
    pts += [(u0 + swing * float(db), -(i + 0.5) * box.depth_mm / n) for i, db in enumerate(tgc_db)]
    pts.append((u0 + swing * float(tgc_db[-1]), -box.depth_mm))
    o.add(ov.Polyline("tgc_curve", tuple(pts), ov.GREEN, 2.0))


def orientation_marker(o: ov.OverlaySet, box: SectorBox) -> None:
    """The probe-marker side of the image (the screen's left): a dot just outside the array's left end."""
    k = box.k
    h = math.radians(CURVILINEAR.fov_deg) / 2.0
    u = -CURVILINEAR.radius_mm * math.sin(h) - 12.0 / k
    v = -box.y_top_mm + 4.0 / k
    for i, r in enumerate((5.0, 3.5, 2.0, 0.8)):  # concentric rings: a filled dot
        o.add(ov.Circle(f"orientation_marker_{i}", u, v, r / k, ov.ORANGE, 2.0, segments=20))


def caliper_overlays(o: ov.OverlaySet, box: SectorBox,
                     calipers: Sequence[tuple[tuple[float, float], tuple[float, float]]],
                     pending: tuple[float, float] | None) -> None:
    """Placed calipers (image mm ends) and a pending first point. The length ("1: 58.3 mm") sits under
    the deeper end, where its own line never crosses it (at the middle, a slanted line ran through the
    digits behind the label's translucent box and OCR read 58.3 as 52.3); above the shallower end when
    the deeper one is at the bottom of the image."""
    k = box.k
    for i, (p1, p2) in enumerate(calipers):
        name, color = f"caliper{i + 1}", CALIPER_COLORS[i % len(CALIPER_COLORS)]
        o.add(ov.Line(name, p1[0], -p1[1], p2[0], -p2[1], color, 1.5, True))
        o.add(ov.Handle(f"{name}.p0", p1[0], -p1[1], color, 10, "move", name))
        o.add(ov.Handle(f"{name}.p1", p2[0], -p2[1], color, 10, "move", name))
        deep, shallow = (p1, p2) if p1[1] >= p2[1] else (p2, p1)
        length = math.hypot(p2[0] - p1[0], p2[1] - p1[1])
        text = f"{i + 1}: {length:.1f} mm"
        if (box.depth_mm - deep[1]) * k > 28.0:
            o.add(ov.Text(f"{name}.text", deep[0], -deep[1], text, color, TEXT_PX, "center", valign="top",
                          offset_px=(0.0, 12.0)))
        else:
            o.add(ov.Text(f"{name}.text", shallow[0], -shallow[1], text, color, TEXT_PX, "center", valign="bottom",
                          offset_px=(0.0, -12.0)))
    if pending is not None:
        color = CALIPER_COLORS[len(calipers) % len(CALIPER_COLORS)]
        o.add(ov.Handle("caliper_pending", pending[0], -pending[1], color, 10))


def annotation_overlays(o: ov.OverlaySet, annotations: Sequence[tuple[str, float, float]]) -> None:
    for i, (text, x, y) in enumerate(annotations):
        o.add(ov.Text(f"annotation{i + 1}", x, -y, text, ov.WHITE, 14, "left", valign="center"))


def image_overlays(depth_mm: float, focus_mm: float, tgc_db: Sequence[float],
                   calipers: Sequence[tuple[tuple[float, float], tuple[float, float]]],
                   pending: tuple[float, float] | None, annotations: Sequence[tuple[str, float, float]],
                   width_px: int, height_px: int) -> ov.OverlaySet:
    """Everything drawn over the image, in drawing order (measurements and text last, on top)."""
    box = SectorBox.fit(depth_mm, width_px, height_px)
    o = ov.OverlaySet()
    depth_scale(o, box)
    focus_marker(o, box, focus_mm)
    tgc_curve(o, box, tgc_db)
    orientation_marker(o, box)
    caliper_overlays(o, box, calipers, pending)
    annotation_overlays(o, annotations)
    return o


def caliper_end(handle: str) -> tuple[int, int] | None:
    """(caliper index from 1, end 1 or 2) of a caliper end handle's name ("caliper2.p0" -> (2, 1))."""
    name, _, end = handle.partition(".")
    if not name.startswith("caliper") or not name[7:].isdigit() or end not in ("p0", "p1"):
        return None
    return int(name[7:]), 1 if end == "p0" else 2


MARKER_WORDS = (("patient's left", "patient's right"), ("posterior", "anterior"), ("head", "feet"))


def marker_direction(marker: Sequence[float]) -> str:
    """The probe marker's direction in words, from its subject-frame vector (x patient left, y posterior,
    z head): the dominant axis, e.g. "head" or "patient's right"."""
    i = max(range(3), key=lambda a: abs(float(marker[a])))
    return MARKER_WORDS[i][0 if float(marker[i]) >= 0 else 1]
