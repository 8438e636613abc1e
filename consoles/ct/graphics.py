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

from consoles.common import overlays as ov
from consoles.ct.model import TABLE_HEIGHT_LIMITS

EDGE_GRAB_PX = 10  # how close (pixels) to an edge or line a press grabs it
RULER_GAP_PX = 3.0  # a ruler's base line this far outside the scout image
# pixel margins around a scout image (consoles.ct.view): the z ruler's numbers left, its title above, the
# lateral scout's table-height ruler with numbers and title below (the AP scout keeps the same, so both
# scouts show table z at the same scale)
SCOUT_MARGIN_PX = {"left": 50.0, "right": 8.0, "top": 46.0, "bottom": 52.0}


def scout_view_box(width_px: int, height_px: int, u0: float, u1: float, v0: float, v1: float
                   ) -> tuple[float, float, float, float]:
    """(u0, u1, v0, v1) for ImageViewport.set_view_box: the scout image's mm box with SCOUT_MARGIN_PX around it
    at the scale that fits the widget (before the widget is laid out: 40 mm left, 10 mm elsewhere)."""
    mg = SCOUT_MARGIN_PX
    free_w, free_h = width_px - mg["left"] - mg["right"], height_px - mg["top"] - mg["bottom"]
    if free_w < 50 or free_h < 50:
        return u0 - 40.0, u1 + 10.0, v0 - 10.0, v1 + 10.0
    k = min(free_w / (u1 - u0), free_h / (v1 - v0))
    return u0 - mg["left"] / k, u1 + mg["right"] / k, v0 - mg["bottom"] / k, v1 + mg["top"] / k


def scout_overlays(m: Any, view: str, px_per_mm: float, width: int, height: int) -> ov.OverlaySet:
    """The AP ("ap") or lateral ("lateral") scout's ruler, acquired ranges, planned range with its
    grips, isocentre line, monitoring line and orientation labels. `m` is a CTModel."""
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
    if view == "ap":  # ranges already acquired in this exam, so a clipped end shows on the scout
        for sr in m.series:
            o.add(ov.Box(f"series{sr.uid}", u0 + 4, sr.end_mm, u1 - 4, sr.start_mm, (0.6, 0.6, 0.65), 1.0))
            o.add(ov.Label(f"series{sr.uid}_label", u1 - 6, sr.start_mm - 10 / k,
                           f"#{sr.uid} acquired", (0.75, 0.75, 0.8), 11, "right"))
    if m.protocol is not None:
        color = ov.GREEN if m.confirmed else ov.YELLOW
        o.add(ov.Box("range", u0, m.end_mm, u1, m.start_mm, color, 2.0),
              ov.Movable(axis=(0.0, 1.0), span="row") if view == "ap" else None)
        mid = (u0 + u1) / 2
        if m.protocol.contrast:
            mz = m.bolus.shown_monitor_z()
            o.add(ov.Line("monitor_line", u0, mz, u1, mz, ov.CYAN, 1.5, dashed=True))
            if view == "ap":
                o.add(ov.Label("monitor_label", u1 - 4, mz, "Monitor", ov.CYAN, 12, "right"))
        if view == "ap":
            # start first: when both edges are equally near, the start edge is grabbed
            o.add(ov.Handle("start_handle", mid, m.start_mm, color, 14, role="resize", target="range",
                            axis=(0.0, 1.0), span="row"))
            o.add(ov.Handle("end_handle", mid, m.end_mm, color, 14, role="resize", target="range",
                            axis=(0.0, -1.0), span="row"))
            o.add(ov.Label("start_label", u0 + 6, m.start_mm - 12 / k, f"Start {m.start_mm:.1f}", color, 13))
            o.add(ov.Label("end_label", u0 + 6, m.end_mm + 12 / k, f"End {m.end_mm:.1f}", color, 13))
        else:  # the lateral scout's horizontal axis is height against the couch top
            yi = m.iso_couch_y()
            o.add(ov.Line("iso_line", yi, bottom, yi, top, ov.CYAN, 2.0, dashed=True))
            o.add(ov.Handle("iso_handle", yi, (top + bottom) / 2, ov.CYAN, 14, role="move", target="iso_line",
                            axis=(1.0, 0.0), span="column"))
            o.add(ov.Label("iso_label", yi - 6, (top + bottom) / 2 + 24 / k,
                           f"Isocentre  H {m.table_height_mm:.1f}", ov.CYAN, 13, "right"))
    w, h = width, height
    if view == "ap":
        o.add(ov.Label("orient_r", 8, h / 2, "R", ov.WHITE, 16, "left", True))
        o.add(ov.Label("orient_l", w - 8, h / 2, "L", ov.WHITE, 16, "right", True))
        o.add(ov.Label("title", 8, 14, "AP scout", ov.WHITE, 13, "left", True))
    else:
        o.add(ov.Label("orient_a", 8, h / 2, "A", ov.WHITE, 16, "left", True))
        o.add(ov.Label("orient_p", w - 8, h / 2, "P", ov.WHITE, 16, "right", True))
        o.add(ov.Label("title", 8, 14, "Lateral scout", ov.WHITE, 13, "left", True))
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
