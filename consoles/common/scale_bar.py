"""A millimetre scale bar for any image viewport (pure: no Qt, no VTK; generic, so CT and US may use it too).

Real consoles draw a calibrated bar in a corner of every image, so a distance on screen can be read off it
instead of counted in pixels. The bar's length is a round number of millimetres (1, 2 or 5 x 10^k) that fits in
a share of the viewport's width at the viewport's screen pixels per mm (which follows from the image's pixel
spacing and the zoom); it carries a tick every tenth of its length and is labelled with its length.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from consoles.common import overlays as ov

__all__ = ["ScaleBar", "scale_bar", "scale_bar_overlays"]

ROUND_STEPS = (1.0, 2.0, 5.0)
MAX_SHARE = 0.3  # of the viewport's width: the bar leaves the bottom edge's middle (orientation letter) free
MIN_PX = 12.0  # below this a bar is not readable (a viewport of a few pixels)
MARGIN_PX = 8.0
BAR_Y_PX = 10.0  # from the bottom edge
TICK_PX = 5.0
LABEL_PX = 13


@dataclass(frozen=True)
class ScaleBar:
    """A bar of `length_mm` drawn `length_px` long (screen pixels)."""

    length_mm: float
    length_px: float

    @property
    def text(self) -> str:
        return f"{self.length_mm:g} mm"


def scale_bar(px_per_mm: float, width_px: float, max_share: float = MAX_SHARE) -> ScaleBar | None:
    """The longest round length (1, 2, 5 x 10^k mm) whose bar fits in `max_share` of `width_px` at `px_per_mm`;
    None when no readable bar fits (or the scale is not finite)."""
    if not (math.isfinite(px_per_mm) and px_per_mm > 0.0 and width_px > 0.0):
        return None
    max_mm = max_share * width_px / px_per_mm
    if max_mm * px_per_mm < MIN_PX:
        return None
    exp = math.floor(math.log10(max_mm))
    best = 0.0
    for e in (exp - 1, exp):
        for s in ROUND_STEPS:
            mm = s * 10.0 ** e
            if mm <= max_mm * (1 + 1e-9) and mm > best:
                best = mm
    if best * px_per_mm < MIN_PX:
        return None
    return ScaleBar(round(best, 6), best * px_per_mm)


def scale_bar_overlays(o: ov.OverlaySet, t: ov.PixelTransform, width: int, height: int,
                       color: ov.Color = ov.WHITE, name: str = "scale_bar") -> ScaleBar | None:
    """Add a scale bar at the viewport's bottom left (plane-mm lines placed through the viewport's pixel
    transform `t`, so it sits at fixed screen pixels at any zoom), its length as text above its left end."""
    bar = scale_bar(t.k, width)
    if bar is None:
        return None
    x0, y = MARGIN_PX, height - BAR_Y_PX
    x1 = x0 + bar.length_px
    u0, v = t.to_plane(x0, y)
    u1, _ = t.to_plane(x1, y)
    _, v_tick = t.to_plane(x0, y - TICK_PX)
    _, v_end = t.to_plane(x0, y - 2.0 * TICK_PX)
    o.add(ov.Line(f"{name}", u0, v, u1, v, color, 2.0))
    for k in range(11):  # a tick every tenth, the ends and the middle longer
        uk = u0 + (u1 - u0) * k / 10.0
        top = v_end if k in (0, 5, 10) else v_tick
        o.add(ov.Line(f"{name}_tick{k}", uk, v, uk, top, color, 1.0))
    o.add(ov.Text(f"{name}_text", x0, y - 2.0 * TICK_PX - 3.0, bar.text, color, LABEL_PX, "left", True,
                  valign="bottom"))
    return bar
