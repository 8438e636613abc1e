"""MR viewport overlays from model state (pure: no Qt, no VTK; named view_* as the view's helper).

Each function turns what one viewport shows into an OverlaySet the viewport draws: the caption lines
(series, image k/N, orientation) top left, and the planning graphics of the open row cut with the
displayed plane (rendering.geometry): every slice's line plus the FOV outline ("all"), the first and
last slice ("outer"), or nothing ("off"); the shim box (adjust volume) when it is shown. Non-interactive
for now: no handles (graphical planning adds them).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from consoles.common import overlays as ov
from rendering.geometry import OrientedBox, PlanePose, box_plane_polygon, clip_segment_to_rect, rect_plane_segment

CAPTION_PX = 13
CAPTION_LINE_PX = 18
SLICE_COLOR = ov.YELLOW
DONE_COLOR = (0.7, 0.72, 0.76)  # an acquired row's graphics: where it was, no longer editable
FOV_COLOR = ov.CYAN
SHIM_COLOR = ov.GREEN


def view_rect(image: Any) -> tuple[float, float, float, float]:
    """(u0, u1, v0, v1): the plane region an MRImage covers (pixel edges, centred on its pose)."""
    rows, cols = image.pixels.shape
    du, dv = image.pixel_mm
    return -cols * du / 2.0, cols * du / 2.0, -rows * dv / 2.0, rows * dv / 2.0


def caption_overlays(o: ov.OverlaySet, lines: Sequence[str]) -> None:
    """Caption lines top left (screen-anchored), on a dark background so the image never hides them
    (added last: drawn above the graphics)."""
    for k, text in enumerate(lines):
        o.add(ov.Text(f"caption{k}", 6, 6 + k * CAPTION_LINE_PX, text, ov.WHITE, CAPTION_PX, "left", True,
                      valign="top"))


_AXIS_LETTERS = (("R", "L"), ("A", "P"), ("F", "H"))  # subject frame: +x left, +y posterior, +z head


def direction_letter(d: Any) -> str:
    """The patient direction a subject-frame vector points to most (L/R, A/P, H/F)."""
    d = np.asarray(d, float)
    k = int(np.argmax(np.abs(d)))
    return _AXIS_LETTERS[k][int(d[k] > 0)]


def orientation_overlays(o: ov.OverlaySet, pose: PlanePose, width: int, height: int) -> None:
    """Patient direction letters at the middle of each viewport edge (screen right = the plane's u)."""
    u, v = np.asarray(pose.u, float), np.asarray(pose.v, float)
    for name, d, x, y, align in (("orient_right", u, width - 6, height / 2, "right"),
                                 ("orient_left", -u, 6, height / 2, "left"),
                                 ("orient_top", v, width / 2, 14, "center"),
                                 ("orient_bottom", -v, width / 2, height - 14, "center")):
        o.add(ov.Label(name, x, y, direction_letter(d), ov.WHITE, 14, align, True))


def _segment(o: ov.OverlaySet, name: str, seg: Any, rect: tuple[float, float, float, float], color: Any,
             width: float) -> None:
    if seg is None:
        return
    clipped = clip_segment_to_rect(seg[0], seg[1], rect)
    if clipped is None:
        return
    (u0, v0), (u1, v1) = clipped
    o.add(ov.Line(name, float(u0), float(v0), float(u1), float(v1), color, width))


def _polygon(o: ov.OverlaySet, name: str, pts: np.ndarray, color: Any, dashed: bool) -> None:
    if len(pts) >= 3:
        o.add(ov.Polyline(name, tuple((float(u), float(v)) for u, v in pts), color, 1.5, closed=True,
                          dashed=dashed))


def planning_overlays(o: ov.OverlaySet, display: PlanePose, rect: tuple[float, float, float, float],
                      group: Any, mode: str, done: bool) -> None:
    """Add the slice group's graphics (rendering.mr_image.SliceGroup) as cut by the displayed plane."""
    if mode == "off" or group is None:
        return
    color = DONE_COLOR if done else SLICE_COLOR
    n = int(group.n_slices)
    ks = range(n) if mode == "all" else sorted({0, n - 1})
    size = (group.fov_read_mm, group.fov_phase_mm)
    for k in ks:
        width = 2.0 if k in (0, n - 1) else 1.0
        _segment(o, f"slice{k}", rect_plane_segment(group.slice_pose(k), size, display), rect, color, width)
    if mode == "all":
        _polygon(o, "fov", box_plane_polygon(group.slab(), display), FOV_COLOR, dashed=True)


def shim_overlays(o: ov.OverlaySet, display: PlanePose, box: dict[str, Any], pose: PlanePose) -> None:
    """The adjust volume (row_params shim_box(): centre and size along the slab's axes), cut by the plane."""
    centre = np.asarray(box["centre"], float)
    half = tuple(float(s) / 2.0 for s in box["size_mm"])
    oriented = OrientedBox(PlanePose.from_axes(centre, pose.u, pose.v), half)
    pts = box_plane_polygon(oriented, display)
    _polygon(o, "shim_box", pts, SHIM_COLOR, dashed=False)  # green, unlabelled, as scanners draw it
