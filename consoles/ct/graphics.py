"""CT planning graphics from model state (pure: no Qt, no VTK).

Each function turns the CT model's state into the OverlaySet one viewport shows; the view only
passes in what depends on the widget (pixels per mm, widget size) and hands the set to the
viewport, which draws it and hit-tests it for drags. Grips carry their roles here:

- AP scout: the range edges are resize handles spanning the whole row (grab an edge anywhere
  along it, within the grab radius), the range body moves along the table axis;
- lateral scout: the isocentre line is a move handle spanning its column, along the AP axis.

Scouts are drawn in their fixed table window (consoles.ct.model): rows are table z, AP columns gantry
x, lateral columns height against the couch top, so every graphic here is in screen-fixed millimetres.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from consoles.common import label_layout
from consoles.common import overlays as ov
from consoles.ct.model import TABLE_HEIGHT_LIMITS

EDGE_GRAB_PX = 10  # how close (pixels) to an edge or line a press grabs it
RULER_GAP_PX = 3.0  # a ruler's base line this far outside the scout image
# pixel margins around a scout image (consoles.ct.view): the z ruler's numbers left, its title above, the
# lateral scout's table-height ruler with numbers and title below (the AP scout keeps the same, so both
# scouts show table z at the same scale)
SCOUT_MARGIN_PX = {"left": 50.0, "right": 8.0, "top": 46.0, "bottom": 52.0}
# the AP scout's labels of horizontal lines (Start, End, Monitor, '#N acquired') go right of the image, on their
# line's row, where no body is (issue 34): a gutter as wide as the widest of them ('Start -870.0' at 13 px, 79 px)
AP_LABEL_GUTTER_PX = 92.0


def scout_margins(view: str) -> dict[str, float]:
    """The pixel margins around a scout image (SCOUT_MARGIN_PX; the AP scout's right one is its label gutter)."""
    return dict(SCOUT_MARGIN_PX, right=AP_LABEL_GUTTER_PX) if view == "ap" else dict(SCOUT_MARGIN_PX)


def scout_view_box(width_px: int, height_px: int, u0: float, u1: float, v0: float, v1: float, view: str = "lateral"
                   ) -> tuple[float, float, float, float]:
    """(u0, u1, v0, v1) for ImageViewport.set_view_box: the scout image's mm box with SCOUT_MARGIN_PX around it
    at the scale that fits the widget (before the widget is laid out: 40 mm left, 10 mm elsewhere)."""
    mg = scout_margins(view)
    free_w, free_h = width_px - mg["left"] - mg["right"], height_px - mg["top"] - mg["bottom"]
    if free_w < 50 or free_h < 50:
        return u0 - 40.0, u1 + 10.0, v0 - 10.0, v1 + 10.0
    k = min(free_w / (u1 - u0), free_h / (v1 - v0))
    return u0 - mg["left"] / k, u1 + mg["right"] / k, v0 - mg["bottom"] / k, v1 + mg["top"] / k


BODY_P = 0.3  # a scout pixel whose line integral exceeds this is body (air reads ~0; 0.3 is ~15 mm of water)
LABEL_GAP_PX = 6.0  # a label's anchor this far beside the line or edge it labels
MARGIN_ROW_PX = 16.0  # a label in the top margin: this far above the image's top row (between title and image)
TITLE_ROW_PX = 14.0  # the viewport title's row (and a label's last resort beside it)


class ScoutLabels:
    """Places a scout's labels (consoles.common.label_layout): each one beside what it labels, clear of the
    rulers' text, of the labels placed before it and of the body on the scout (its pixels above BODY_P)."""

    def __init__(self, sc: Any, u0: float, u1: float, top: float, bottom: float, k: float, width: int,
                 height: int, o: ov.OverlaySet) -> None:
        self.k, self.width, self.height = k, width, height
        vu0, vu1, vv0, vv1 = scout_view_box(width, height, u0, u1, bottom, top, sc.view)
        self.cu, self.cv = (vu0 + vu1) / 2.0, (vv0 + vv1) / 2.0  # the viewport centres its view box
        self.left, self.right = self.x(u0), self.x(u1)
        self.top, self.bottom = self.y(top), self.y(bottom)
        self.sc = sc

        def to_index(x: float, y: float) -> tuple[float, float]:
            u, v = self.plane(x, y)
            return (sc.v_top - v) / sc.dv + 0.5, (u - sc.u0) / sc.du + 0.5

        self.body = label_layout.mask_cover(sc.pixels > BODY_P, to_index)
        self.taken: list[label_layout.PxBox] = [self._box(t) for t in o.primitives() if isinstance(t, ov.Label)]
        self.o = o

    def x(self, u: float) -> float:
        return self.width / 2.0 + (u - self.cu) * self.k

    def y(self, v: float) -> float:
        return self.height / 2.0 - (v - self.cv) * self.k

    def plane(self, x: float, y: float) -> tuple[float, float]:
        return self.cu + (x - self.width / 2.0) / self.k, self.cv - (y - self.height / 2.0) / self.k

    def _box(self, t: ov.Label) -> label_layout.PxBox:
        if t.screen_anchored:
            x, y = t.u, t.v
        else:
            x, y = self.x(t.u), self.y(t.v)
        valign = "center"
        if isinstance(t, ov.Text):
            x, y, valign = x + t.offset_px[0], y + t.offset_px[1], t.valign
        return label_layout.text_box(x, y, t.text, t.size_px, t.align, valign)

    def add(self, name: str, text: str, color: ov.Color, size: int, spots: list[label_layout.Spot]) -> ov.Text:
        """Place a label at the first free spot (label_layout.place), add it and keep its box taken."""
        spot, box = label_layout.place(text, size, spots, self.width, self.height, self.taken, self.body)
        self.taken.append(box)
        u, v = self.plane(spot.x, spot.y)
        item = ov.Text(name, u, v, text, color, size, spot.align, valign=spot.valign)
        self.o.add(item)
        return item

    def beside_edge(self, y_edge: float, inside_below: bool) -> list[label_layout.Spot]:
        """Spots for a range edge's label: inside the range next to the edge (left end, right end), then outside."""
        g = 12.0
        first, second = (y_edge + g, y_edge - g) if inside_below else (y_edge - g, y_edge + g)
        return [*self.beyond_right(y_edge),
                label_layout.Spot(self.left + LABEL_GAP_PX, first, "left"),
                label_layout.Spot(self.right - LABEL_GAP_PX, first, "right"),
                label_layout.Spot(self.left + LABEL_GAP_PX, second, "left"),
                label_layout.Spot(self.right - LABEL_GAP_PX, second, "right")]

    def beyond_right(self, y: float) -> list[label_layout.Spot]:
        """Spots right of the image (the AP scout's label gutter), on row `y`, then just above and below it."""
        return [label_layout.Spot(self.right + LABEL_GAP_PX, y + dy, "left") for dy in (0.0, -10.0, 10.0)]

    def side_letter(self, x: float, align: str) -> list[label_layout.Spot]:
        """Spots for an orientation letter on one side: inside the image's edge at mid height (over air), a little
        higher or lower, then under the image (the margin the AP scout leaves free)."""
        mid = (self.top + self.bottom) / 2.0
        rows = [mid + d for d in (0.0, -40.0, 40.0, -80.0, 80.0, -120.0, 120.0)]
        spots = [label_layout.Spot(x, r, align) for r in rows]
        return spots + [label_layout.Spot(x, self.bottom + 24.0, align), label_layout.Spot(x, self.top - MARGIN_ROW_PX,
                                                                                           align)]


def scout_overlays(m: Any, view: str, px_per_mm: float, width: int, height: int) -> ov.OverlaySet:
    """The AP ("ap") or lateral ("lateral") scout's ruler, acquired ranges, planned range with its
    grips, isocentre line, monitoring line and orientation labels. `m` is a CTModel.

    Labels never cover what they label (issue 34): each is placed by ScoutLabels beside its line or edge, over air
    or in the margin, clear of the rulers' numbers (the isocentre label at the top of its line, in the margin)."""
    o = ov.OverlaySet()
    sc = m.scouts.get(view)
    if sc is None:
        return o
    u0 = sc.u0
    u1 = sc.u0 + (sc.pixels.shape[1] - 1) * sc.du
    top, bottom = m.table_limits()
    k = px_per_mm
    # rulers, so a reader maps the image to the numeric fields without dragging (issue 24): table z along
    # both scouts (a tick every 10 mm, numbers every 50 or 100 mm), and under the lateral scout the table
    # height that would put the isocentre at each column
    o.add(ov.Ruler("zruler", "v", u0 - RULER_GAP_PX / k, bottom, top, k, title="Table z (mm)"))
    if view == "lateral":
        h0, h1 = TABLE_HEIGHT_LIMITS
        c0 = m.iso_couch_y(0.0)
        o.add(ov.Ruler("hruler", "u", bottom - RULER_GAP_PX / k, h0, h1, k, origin=c0,
                       direction=m.iso_couch_y(1.0) - c0, title="Table height for isocentre (mm)"))
    w, h = width, height
    o.add(ov.Label("title", 8, TITLE_ROW_PX, "AP scout" if view == "ap" else "Lateral scout", ov.WHITE, 13, "left",
                   True))
    place = ScoutLabels(sc, u0, u1, top, bottom, k, w, h, o)
    # orientation letters first: at the image's sides, clear of the z ruler's numbers (issue 34: "R" sat on "-100")
    for name, letter, x, align in ((("orient_r", "R", place.left + 4, "left"), ("orient_l", "L", place.right - 4, "right"))
                                   if view == "ap" else
                                   (("orient_a", "A", place.left + 4, "left"), ("orient_p", "P", place.right - 4,
                                                                                 "right"))):
        place.add(name, letter, ov.WHITE, 16, place.side_letter(x, align))
    if view == "ap":  # ranges already acquired in this exam, so a clipped end shows on the scout
        for sr in m.series:
            o.add(ov.Box(f"series{sr.uid}", u0 + 4, sr.end_mm, u1 - 4, sr.start_mm, (0.6, 0.6, 0.65), 1.0))
    if m.protocol is not None:
        color = ov.GREEN if m.confirmed else ov.YELLOW
        o.add(ov.Box("range", u0, m.end_mm, u1, m.start_mm, color, 2.0),
              ov.Movable(axis=(0.0, 1.0), span="row") if view == "ap" else None)
        mid = (u0 + u1) / 2
        if m.protocol.contrast:
            mz = m.bolus.shown_monitor_z()
            o.add(ov.Line("monitor_line", u0, mz, u1, mz, ov.CYAN, 1.5, dashed=True))
        if view == "ap":
            # start first: when both edges are equally near, the start edge is grabbed
            o.add(ov.Handle("start_handle", mid, m.start_mm, color, 14, role="resize", target="range",
                            axis=(0.0, 1.0), span="row"))
            o.add(ov.Handle("end_handle", mid, m.end_mm, color, 14, role="resize", target="range",
                            axis=(0.0, -1.0), span="row"))
            place.add("start_label", f"Start {m.start_mm:.1f}", color, 13, place.beside_edge(place.y(m.start_mm), True))
            place.add("end_label", f"End {m.end_mm:.1f}", color, 13, place.beside_edge(place.y(m.end_mm), False))
            if m.protocol.contrast:
                ym = place.y(m.bolus.shown_monitor_z())
                place.add("monitor_label", "Monitor", ov.CYAN, 12, place.beyond_right(ym) +
                          [label_layout.Spot(x, ym + dy, a) for dy in (-10.0, 10.0)
                           for x, a in ((place.right - 4, "right"), (place.left + LABEL_GAP_PX, "left"))])
        else:  # the lateral scout's horizontal axis is height against the couch top
            yi = m.iso_couch_y()
            o.add(ov.Handle("iso_handle", yi, (top + bottom) / 2, ov.CYAN, 14, role="move", target="iso_line",
                            axis=(1.0, 0.0), span="column"))
            # the label rides on its line: at its top end in the margin (either side of the line, clear of the
            # ruler's title), else beside the line over air; the line reaches up to it
            xl = place.x(yi)
            spots = [label_layout.Spot(xl + dx, y, a) for y in (place.top - MARGIN_ROW_PX, TITLE_ROW_PX)
                     for dx, a in ((LABEL_GAP_PX, "left"), (-LABEL_GAP_PX, "right"))]
            spots += [label_layout.Spot(xl + dx, y, a) for y in np.arange(place.top + 20.0, place.bottom - 10.0, 24.0)
                      for dx, a in ((LABEL_GAP_PX, "left"), (-LABEL_GAP_PX, "right"))]
            label = place.add("iso_label", f"Isocentre  H {m.table_height_mm:.1f}", ov.CYAN, 13, spots)
            line_top = max(top, label.v)
            o.add(ov.Line("iso_line", yi, bottom, yi, line_top, ov.CYAN, 2.0, dashed=True))
    if view == "ap":
        for sr in m.series:
            ys = place.y(sr.start_mm)
            place.add(f"series{sr.uid}_label", f"#{sr.uid} acquired", (0.75, 0.75, 0.8), 11,
                      place.beyond_right(ys + 10.0) +
                      [label_layout.Spot(x, ys + dy, a) for dy in (10.0, -10.0)
                       for x, a in ((place.right - LABEL_GAP_PX, "right"), (place.left + LABEL_GAP_PX, "left"))])
    return o


def monitor_overlays(m: Any, img: Any, width: int, height: int) -> ov.OverlaySet:
    """The bolus monitoring image's caption, orientation and ROI (or the hint to place it).
    Image coordinates: u = gantry x, v = -(subject y - isocentre y) (anterior up)."""
    o = ov.OverlaySet()
    w, h = width, height
    samples = m.bolus.samples
    n = len(samples)
    what = f"monitoring image {n}" if n else "reference image"
    o.add(ov.Label("info", 8, h - 14, f"Monitoring slice at table {m.bolus.monitor_z_mm:.1f} mm  ({what})",
                   ov.WHITE, 13, "left", True))
    o.add(ov.Label("orient_r", 8, h / 2, "R", ov.WHITE, 16, "left", True))
    o.add(ov.Label("orient_l", w - 8, h / 2, "L", ov.WHITE, 16, "right", True))
    o.add(ov.Label("orient_a", w / 2, 14, "A", ov.WHITE, 16, "center", True))
    roi = m.bolus.roi
    if roi is not None:
        x, y = m.bolus.roi_image_mm()
        r = m.bolus.roi_radius_mm
        o.add(ov.Circle("roi", x, -y, r, ov.YELLOW, 2.0, segments=12))
        val = f"{samples[-1][1]:.0f} HU" if n else f"{m.roi_hu(img):.0f} HU"
        o.add(ov.Label("roi_label", x + r + 3, -y, f"ROI {val}", ov.YELLOW, 13))
    else:
        o.add(ov.Label("hint", 8, h - 36, "Click the descending aorta to place the ROI", ov.YELLOW, 13,
                       "left", True))
    return o


def recon_overlays(m: Any, width: int, height: int) -> ov.OverlaySet:
    """The open reconstruction's caption (series, image, table position) and orientation."""
    s = m.series[m.recon_open]
    z_table = recon_table_z(m)
    o = ov.OverlaySet()
    w, h = width, height
    o.add(ov.Label("info", 8, 14, f"Series {s.uid}  image {m.recon_index + 1}/{s.n_images}", ov.WHITE, 13,
                   "left", True))
    o.add(ov.Label("zpos", 8, 32, f"Table {z_table:.1f} mm   {s.slice_mm:g} mm slices", ov.WHITE, 13,
                   "left", True))
    o.add(ov.Label("orient_r", 8, h / 2, "R", ov.WHITE, 16, "left", True))
    o.add(ov.Label("orient_l", w - 8, h / 2, "L", ov.WHITE, 16, "right", True))
    o.add(ov.Label("orient_a", w / 2, 14, "A", ov.WHITE, 16, "center", True))
    return o


def recon_table_z(m: Any) -> float:
    """Table z (mm) of the centre of the recon image on show."""
    s = m.series[m.recon_open]
    return s.start_mm - (m.recon_index + 0.5) * (s.start_mm - s.end_mm) / s.n_images
