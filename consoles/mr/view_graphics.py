"""MR viewport overlays from model state (pure: no Qt, no VTK; named view_* as the view's helper).

Each function turns what one viewport shows into an OverlaySet the viewport draws: the caption lines
(series, image k/N, orientation) top left, and the planning graphics of the open row cut with the
displayed plane (rendering.geometry): every slice's line plus the FOV outline ("all"), the first and
last slice ("outer"), or nothing ("off"), slice 1 (image 1 of the series) marked "1"; the shim box (adjust volume) when it is shown. An editable
row's group carries grips (consoles.mr.planning): centre (move), rotate (a circle beyond the group's
end), FOV read/phase edges and stack edges (resize), and the shim box's centre and faces when it is
shown; bottom-right lines show what a scanner shows of the plan (angle to the image, slices, slab, FOV),
never the answer.
Measurement aids (consoles.mr.measure): a mm scale bar bottom left, the slice position under the caption, the
pointer's patient coordinates top right and the distance tool's lines with their lengths.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
from scipy import ndimage

from consoles.common import overlays as ov
from consoles.common import scale_bar
from consoles.mr import planning
from rendering.geometry import (OrientedBox, PlanePose, box_plane_polygon, clip_segment_to_rect, plane_angle_deg,
                               rect_plane_segment)

CAPTION_PX = 13
CAPTION_LINE_PX = 18
SLICE_COLOR = ov.YELLOW
DONE_COLOR = (0.7, 0.72, 0.76)  # an acquired row's graphics: where it was, no longer editable
FOV_COLOR = ov.CYAN
SHIM_COLOR = ov.GREEN
HANDLE_PX = 14  # drawn size; hit_test grabs within max(GRAB_PX, HANDLE_PX / 2)
GRAB_PX = 10
ROTATE_COLOR = ov.ORANGE
INFO_PX = 13
PLAN_INFO_LINES = 3  # angle to the image, slices and slab, FOV (plan_info)
MEASURE_COLOR = (1.0, 0.55, 0.9)  # distance lines: a colour no planning graphic uses
CROSS_PX = 6.0


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


def orientation_overlays(o: ov.OverlaySet, pose: PlanePose, width: int, height: int,
                         right_y: float | None = None, top_x: float | None = None) -> None:
    """Patient direction letters at the middle of each viewport edge (screen right = the plane's u);
    `right_y` moves the right one (out from under a colour bar), `top_x` the top one (clear of a caption)."""
    u, v = np.asarray(pose.u, float), np.asarray(pose.v, float)
    for name, d, x, y, align in (("orient_right", u, width - 6, height / 2 if right_y is None else right_y, "right"),
                                 ("orient_left", -u, 6, height / 2, "left"),
                                 ("orient_top", v, width / 2 if top_x is None else top_x, 14, "center"),
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


_RECT_SIGNS = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])  # corners, counter-clockwise


def stack_segments(group: Any, display: PlanePose, ks: Sequence[int], eps: float = 1e-9) -> list:
    """Where slices `ks` of a group (finite FOV rectangles) cut the displayed plane: per slice a
    segment in display (u, v) mm or None; rendering.geometry.rect_plane_segment for the whole stack
    at once (one slice at a time cost most of a planning drag's redraw)."""
    pose = group.pose
    u, v = pose.u, pose.v
    n = np.cross(u, -v)
    nd = np.cross(display.u, -display.v)
    if np.linalg.norm(np.cross(n, nd)) < eps:
        return [None] * len(ks)
    half = np.array([group.fov_read_mm / 2.0, group.fov_phase_mm / 2.0])
    offs = np.asarray(group.offsets_mm(), float)[list(ks)]
    basis = np.stack([display.u, display.v, nd], axis=1)  # subject direction -> (u, v, distance)
    c = (np.asarray(pose.centre, float) - display.centre) @ basis
    cu, cv, cn = u @ basis, v @ basis, n @ basis
    local = _RECT_SIGNS * half  # (4, 2)
    corners = c + offs[:, None, None] * cn + local[None, :, :1] * cu + local[None, :, 1:] * cv  # (K, 4, 3)
    out: list = []
    for pts3 in corners:
        d = pts3[:, 2]
        pts = [pts3[j, :2] for j in range(4) if abs(d[j]) <= eps]
        for a in range(4):
            b = (a + 1) % 4
            if (d[a] < -eps and d[b] > eps) or (d[a] > eps and d[b] < -eps):
                t = d[a] / (d[a] - d[b])
                pts.append(pts3[a, :2] + t * (pts3[b, :2] - pts3[a, :2]))
        if not pts:
            out.append(None)
            continue
        p = np.unique(np.round(np.asarray(pts), 9), axis=0)
        i, j = np.unravel_index(np.argmax(((p[:, None] - p[None]) ** 2).sum(-1)), (len(p), len(p)))
        out.append((p[i], p[j]))
    return out


def planning_overlays(o: ov.OverlaySet, display: PlanePose, rect: tuple[float, float, float, float],
                      group: Any, mode: str, done: bool) -> None:
    """Add the slice group's graphics (rendering.mr_image.SliceGroup) as cut by the displayed plane."""
    if mode == "off" or group is None:
        return
    color = DONE_COLOR if done else SLICE_COLOR
    n = int(group.n_slices)
    ks = list(range(n)) if mode == "all" else sorted({0, n - 1})
    segs = stack_segments(group, display, ks)
    for k, seg in zip(ks, segs):
        width = 2.0 if k in (0, n - 1) else 1.0
        _segment(o, f"slice{k}", seg, rect, color, width)
    first = segs[0] if ks and ks[0] == 0 else None
    if n > 1 and first is not None:  # which end of the stack is image 1 of the series it acquires
        clipped = clip_segment_to_rect(first[0], first[1], rect)
        if clipped is not None:
            end = max(clipped, key=lambda p: (float(p[0]), float(p[1])))  # the right (else upper) end: stable
            o.add(ov.Text("slice1_mark", float(end[0]), float(end[1]), "1", color, INFO_PX, "left", False,
                          valign="center", offset_px=(6.0, 0.0)))
    if mode == "all":
        _polygon(o, "fov", fov_outline(group, display), FOV_COLOR, dashed=True)


def fov_outline(group: Any, display: PlanePose) -> np.ndarray:
    """The dashed FOV outline of a group on a display, (k, 2) display mm: where the plane cuts the slab, or, when
    it misses a group seen face-on (a coronal stack moved or thinned off a coronal localizer's plane: issue 34,
    the outline vanished after a parameter edit and left only the grips), the FOV rectangle projected onto it,
    where its face-on grips are."""
    cut = box_plane_polygon(group.slab(), display)
    if len(cut) >= 3 or planning.edge_on(display, group.pose):
        return cut
    pose = group.pose
    w, h = group.fov_read_mm / 2.0, group.fov_phase_mm / 2.0
    corners = pose.to_subject(np.array([-w, w, w, -w]), np.array([-h, -h, h, h]))  # (4, 3)
    return display.to_plane(corners)[:, :2]


def shim_overlays(o: ov.OverlaySet, display: PlanePose, box: dict[str, Any], pose: PlanePose) -> None:
    """The adjust volume (row_params shim_box(): centre and size along the slab's axes), cut by the plane."""
    centre = np.asarray(box["centre"], float)
    half = tuple(float(s) / 2.0 for s in box["size_mm"])
    oriented = OrientedBox(PlanePose.from_axes(centre, pose.u, pose.v), half)
    pts = box_plane_polygon(oriented, display)
    _polygon(o, "shim_box", pts, SHIM_COLOR, dashed=False)  # green, unlabelled, as scanners draw it


def free_spot(t: ov.PixelTransform, width: int, height: int, n_caption: int,
              rect: tuple[float, float, float, float], info_box: tuple[float, ...] | None = None) -> Any:
    """(u, v) -> whether a grip there is on the image and clear of the texts drawn over it (caption
    top left, plan info in `info_box` (plan_info_box; default bottom right), orientation letters at the edge middles), which are drawn on top
    and would hide it."""
    busy = [(0, 0, 170, 8 + CAPTION_LINE_PX * max(1, n_caption)),
            (width - 170, height - 12 - PLAN_INFO_LINES * CAPTION_LINE_PX, width, height)
            if info_box is None or (info_box[4] == "right" and info_box[3] >= height - 6) else tuple(info_box[:4])]
    # the scale bar and the pointer read-out are drawn under the graphics (measure_overlays), so they reserve no
    # room: a grip over them stays visible and grabbable, and grips do not move when the pointer comes near
    busy += [(width / 2 - 16, 0, width / 2 + 16, 28), (width / 2 - 16, height - 28, width / 2 + 16, height),
             (0, height / 2 - 16, 24, height / 2 + 16), (width - 24, height / 2 - 16, width, height / 2 + 16)]
    margin = HANDLE_PX

    def free(u: float, v: float) -> bool:
        x, y = t.to_pixel(u, v)
        if not (margin <= x <= width - margin and margin <= y <= height - margin) or not _inside(rect, u, v):
            return False
        return not any(x0 - margin <= x <= x1 + margin and y0 - margin <= y <= y1 + margin for x0, y0, x1, y1 in busy)

    return free


def _inside(rect: tuple[float, float, float, float], u: float, v: float) -> bool:
    u0, u1, v0, v1 = rect
    return u0 <= u <= u1 and v0 <= v <= v1


# Each grip kind has its own shape and colour (issue 34: the stack's grips were yellow squares of the centre
# grip's colour and size, a few pixels from it): kind -> (colour, shape, size px). docs/consoles.md's grip legend
# and the viewer's legend line (consoles.mr.view) say the same.
STACK_COLOR = (0.72, 0.58, 1.0)  # lavender: no other planning graphic uses it
GRIP_STYLES: dict[str, tuple[Any, str, int]] = {
    "centre": (SLICE_COLOR, "square", HANDLE_PX),
    "rotate": (ROTATE_COLOR, "circle", HANDLE_PX),
    "fov": (FOV_COLOR, "diamond", HANDLE_PX - 2),
    "stack": (STACK_COLOR, "triangle", HANDLE_PX),
    "shim_centre": (SHIM_COLOR, "plus", HANDLE_PX + 2),
    "shim_face": (SHIM_COLOR, "bar", HANDLE_PX - 2),
}


def grip_kind(name: str) -> str:
    """The kind (a GRIP_STYLES key) of a grip named as consoles.mr.planning names them."""
    if name in ("centre", "rotate", "shim_centre"):
        return name
    for prefix, kind in (("fov_", "fov"), ("stack_", "stack"), ("shim_", "shim_face")):
        if name.startswith(prefix):
            return kind
    raise ValueError(f"no grip kind for {name!r}")


def _add_grips(o: ov.OverlaySet, grips: list, rect: tuple[float, float, float, float]) -> None:
    """Grips as overlay handles (named as the grip, styled by kind), only those over the image."""
    for g in grips:
        if not _inside(rect, g.u, g.v):
            continue
        color, shape, size = GRIP_STYLES[grip_kind(g.name)]
        if g.role == "rotate":
            o.add(ov.Handle(g.name, g.u, g.v, color, size, "rotate", pivot=g.pivot, shape=shape))
        elif g.role == "resize":
            o.add(ov.Handle(g.name, g.u, g.v, color, size, "resize", axis=g.axis, shape=shape))
        else:
            o.add(ov.Handle(g.name, g.u, g.v, color, size, "move", shape=shape))


def group_handles(o: ov.OverlaySet, display: PlanePose, rect: tuple[float, float, float, float], grips: list) -> None:
    """The open (editable) row's grips on one display (consoles.mr.planning.group_grips), the rotate
    grip joined to the centre by a thin dashed line so it reads as a lever."""
    by = {g.name: g for g in grips}
    c, r = by["centre"], by["rotate"]
    if _inside(rect, r.u, r.v):
        o.add(ov.Line("rotate_lever", c.u, c.v, r.u, r.v, ROTATE_COLOR, 1.0, dashed=True))
    _add_grips(o, grips, rect)


def visible_rect(t: ov.PixelTransform, width: int, height: int, rect: tuple[float, float, float, float],
                 margin_px: float = HANDLE_PX) -> tuple[float, float, float, float]:
    """(u0, u1, v0, v1): the part of the image `rect` on screen, `margin_px` inside the viewport's edges (a grip
    drawn there is whole and grabbable)."""
    (a, b), (c, d) = t.to_plane(margin_px, height - margin_px), t.to_plane(width - margin_px, margin_px)
    u0, u1 = max(rect[0], min(a, c)), min(rect[1], max(a, c))
    v0, v1 = max(rect[2], min(b, d)), min(rect[3], max(b, d))
    return (u0, max(u0, u1), v0, max(v0, v1))


def _toward(anchor: tuple[float, float], p: tuple[float, float], r: tuple[float, float, float, float]
            ) -> tuple[float, float]:
    """The point of the segment anchor -> p furthest from the anchor inside r (the anchor lies in r)."""
    t = 1.0
    for k, (lo, hi) in enumerate(((r[0], r[1]), (r[2], r[3]))):
        d = p[k] - anchor[k]
        if d > 1e-12 and p[k] > hi:
            t = min(t, (hi - anchor[k]) / d)
        elif d < -1e-12 and p[k] < lo:
            t = min(t, (lo - anchor[k]) / d)
    t = max(0.0, t)
    return anchor[0] + t * (p[0] - anchor[0]), anchor[1] + t * (p[1] - anchor[1])


def clamped_grips(grips: list, visible: tuple[float, float, float, float]) -> list:
    """The shim box's grips drawn inside the visible part of the image (issue 34: they sat on the viewport's
    edge or off screen): the centre grip clamped into it, each face grip pulled along the line from the (drawn)
    centre grip towards its face until it is inside. Dragging still acts on the box (a drag's effect is its
    motion, not where it starts)."""
    u0, u1, v0, v1 = visible
    by = {g.name: g for g in grips}
    c = by.get("shim_centre")
    anchor = ((u0 + u1) / 2.0, (v0 + v1) / 2.0) if c is None else \
        (min(u1, max(u0, c.u)), min(v1, max(v0, c.v)))
    out = []
    for g in grips:
        if g.name == "shim_centre":
            out.append(replace(g, u=anchor[0], v=anchor[1]))
        elif u0 <= g.u <= u1 and v0 <= g.v <= v1:
            out.append(g)
        else:
            u, v = _toward(anchor, (g.u, g.v), visible)
            out.append(replace(g, u=u, v=v))
    return out


def shim_handles(o: ov.OverlaySet, rect: tuple[float, float, float, float], grips: list,
                 t: ov.PixelTransform | None = None, width: int = 0, height: int = 0) -> None:
    """The adjust volume's grips (centre, faces along read, phase and slice) on one display, kept inside the
    viewport's visible part of the image when its transform and size are given."""
    if t is not None and width > 0 and height > 0:
        grips = clamped_grips(grips, visible_rect(t, width, height, rect))
    _add_grips(o, grips, rect)


def plane_to_image_deg(params: Any, display: PlanePose) -> float:
    """The angle between the slice group's plane and the displayed image's (0-90 deg; 90 = perpendicular)."""
    return plane_angle_deg(params.pose(), display)


def plan_info_lines(params: Any, display: PlanePose | None = None) -> tuple[str, ...]:
    """What a scanner shows of the plan on short lines: with a display, the angle between the group's plane and
    this image (issue 34: "perpendicular to the 2-chamber image" is read, not judged by eye); slice count and
    slab thickness; FOV."""
    slab = planning.stack_extent_mm(int(params.n_slices), params.thickness_mm, params.gap_mm)
    n = int(params.n_slices)
    lines = (f"{n} slice{'s' if n != 1 else ''}  slab {slab:.0f} mm",
             f"FOV {params.fov_read_mm:.0f}x{params.fov_phase_mm:.0f}")
    if display is not None:
        lines = (f"{plane_to_image_deg(params, display):.1f} deg to image",) + lines
    return lines


# ---- where the plan info goes: off the body (issue 34: "21 slices slab 138 mm / FOV 380x300" sat over the left
# kidney's lower pole) -------------------------------------------------------------------------------------------
BODY_SIGNAL_SHARE = 0.05  # a pixel above this share of the image's 99th percentile is body (IoU ~0.93-0.99 with
# the subject's body labels on the renal card's localizers of the cohort's extremes; air is noise near 0)
BODY_MARGIN_PX = 3  # image pixels of margin around the silhouette (about 5 mm on a localizer)
GROUP_WEIGHT = 2.0  # covering the planned group's outline (the anatomy being planned) weighs this much more
INFO_CHAR_PX = 7.0  # a generous mean advance of the 13 px plan info font (DejaVu Sans: about 6.5)
INFO_STEP_PX = 6  # candidate places along each side, this far apart
_BODY_MASKS: "weakref.WeakKeyDictionary[Any, np.ndarray]" = weakref.WeakKeyDictionary()


def body_mask(image: Any) -> np.ndarray:
    """The body silhouette of an MRImage, from its own pixels (rows x cols, bool): signal above
    BODY_SIGNAL_SHARE of its 99th percentile, opened (noise), closed and hole-filled (lungs, bowel gas)."""
    mask = _BODY_MASKS.get(image)
    if mask is None:
        px = np.asarray(image.pixels, float)
        m = px > BODY_SIGNAL_SHARE * float(np.percentile(px, 99))
        m = ndimage.binary_fill_holes(ndimage.binary_closing(ndimage.binary_opening(m), iterations=3))
        # a few pixels' margin: a label touching the skin line reads as on the body (and the mask is approximate)
        m = ndimage.binary_dilation(m, iterations=BODY_MARGIN_PX)
        mask = _BODY_MASKS[image] = np.asarray(m, bool)
    return mask


def _clutter(image: Any, t: ov.PixelTransform, x: np.ndarray, y: np.ndarray, outline: Any) -> np.ndarray:
    """Per widget point (x, y): 1 on the image's body silhouette (off the image: 0), plus GROUP_WEIGHT inside
    `outline` (display-mm polygon: the planned group, the anatomy it covers, which a label about it must not
    hide)."""
    mask = body_mask(image)
    rows, cols = mask.shape
    u0, v_top, du, dv = image.placement()
    u, v = (x - t.ox) / t.k, (t.oy - y) / t.k
    c, r = np.floor((u - u0) / du).astype(int), np.floor((v_top - v) / dv).astype(int)
    inside = (c >= 0) & (c < cols) & (r >= 0) & (r < rows)
    out = np.zeros(x.shape, float)
    out[inside] = mask[r[inside], c[inside]]
    if outline is not None and len(outline) >= 3:
        out += GROUP_WEIGHT * _in_polygon(np.asarray(outline, float), u, v)
    return out


def body_share(image: Any, t: ov.PixelTransform, box: tuple[float, float, float, float], outline: Any = None,
               step: float = 3.0) -> float:
    """Share of a widget-pixel box (x0, y0, x1, y1) over the image's body silhouette, plus GROUP_WEIGHT x its
    share inside `outline` (_clutter), sampled every `step` px."""
    xs = np.arange(box[0] + step / 2, box[2], step)
    ys = np.arange(box[1] + step / 2, box[3], step)
    if len(xs) == 0 or len(ys) == 0:
        return 0.0
    x, y = np.meshgrid(xs, ys)
    return float(_clutter(image, t, x, y, outline).mean())


def body_share_map(image: Any, t: ov.PixelTransform, width: int, height: int, outline: Any = None,
                   step: int = 3) -> Any:
    """body_share for many boxes of one viewport at once: the clutter sampled once on a `step` px grid of the
    widget, each box then summed from its table of sums (a plan info place is chosen among some 100 boxes on
    every redraw; one by one they cost ~9 ms in 1x1)."""
    xs = np.arange(step / 2, width, step)
    ys = np.arange(step / 2, height, step)
    x, y = np.meshgrid(xs, ys)
    table = np.zeros((len(ys) + 1, len(xs) + 1))
    table[1:, 1:] = _clutter(image, t, x, y, outline).cumsum(0).cumsum(1)

    def share(box: tuple[float, float, float, float]) -> float:
        c0, c1 = (int(np.clip(np.ceil((b - step / 2) / step), 0, len(xs))) for b in (box[0], box[2]))
        r0, r1 = (int(np.clip(np.ceil((b - step / 2) / step), 0, len(ys))) for b in (box[1], box[3]))
        n = (c1 - c0) * (r1 - r0)
        if n <= 0:
            return 0.0
        return float((table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]) / n)

    return share


def _in_polygon(poly: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether points (u, v) lie inside a polygon (k, 2) (even-odd rule)."""
    inside = np.zeros(u.shape, bool)
    for (u0, v0), (u1, v1) in zip(poly, np.roll(poly, -1, axis=0)):
        crosses = (v0 > v) != (v1 > v)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = u0 + (v - v0) * (u1 - u0) / (v1 - v0)
        inside ^= crosses & (u < at)
    return inside


def plan_info_box(lines: Sequence[str], width: int, height: int, n_text: int,
                  share: Any = None) -> tuple[float, float, float, float, str]:
    """(x0, y0, x1, y1, align) of the plan info: at the right or left edge, clear of the caption (top left, `n_text`
    lines), the pointer read-out (top right), the scale bar (bottom left) and the orientation letters (edge
    middles); where `share(box)` (the body's share of a box) is least, bottom right first on ties (and without a
    body to avoid)."""
    bw = INFO_CHAR_PX * max((len(t) for t in lines), default=0) + 4.0
    bh = CAPTION_LINE_PX * len(lines)
    letter = (height / 2.0 - 16.0, height / 2.0 + 16.0)
    found: list[tuple[float, float, float, float, str]] = []
    for align, x0, top, bottom in (("right", width - 6.0 - bw, 8.0 + 2 * CAPTION_LINE_PX, height - 6.0),
                                   ("left", 6.0, 8.0 + CAPTION_LINE_PX * max(1, n_text), height - 40.0)):
        y1 = bottom
        while y1 - bh >= top:
            if not (y1 - bh < letter[1] and y1 > letter[0]):
                found.append((x0, y1 - bh, x0 + bw, y1, align))
            y1 -= INFO_STEP_PX
    if not found:  # a viewport too small for any: the bottom right, as always
        return width - 6.0 - bw, height - 6.0 - bh, width - 6.0, height - 6.0, "right"
    if share is None:
        return found[0]
    scores = [round(share(b[:4]), 3) for b in found]
    return found[int(np.argmin(scores))]


def plan_info(o: ov.OverlaySet, params: Any, width: int, height: int, display: PlanePose | None = None,
              box: tuple[float, float, float, float, str] | None = None) -> None:
    """The plan info lines (plan_info_lines) in `box` (plan_info_box; default the bottom right)."""
    lines = plan_info_lines(params, display)
    x0, _, x1, y1, align = box if box is not None else plan_info_box(lines, width, height, 0)
    for k, text in enumerate(lines):
        o.add(ov.Text(f"plan_info{k}", x1 if align == "right" else x0,
                      y1 - (len(lines) - 1 - k) * CAPTION_LINE_PX, text, SLICE_COLOR, INFO_PX, align, True,
                      valign="bottom"))


# ---- mapping ---------------------------------------------------------------------------------------------
ROI_COLOUR = (1.0, 1.0, 1.0)
ROI_TEXT_PX = 14


CAPTION_CHAR_PX = 8.0  # a generous mean advance of the caption font (13 px DejaVu Sans)


def clear_of_caption(lines: Sequence[str], width: int) -> float | None:
    """Where the top letter goes when the caption's first line would reach the middle of the top edge
    (a long row name in a small viewport): just right of it; None keeps it in the middle."""
    if not lines:
        return None
    end = 6 + CAPTION_CHAR_PX * len(lines[0]) + 12
    return None if end < width / 2 - 8 else min(width - 20.0, end)


def below_color_bar(height: int) -> float:
    """A y (px) just below the colour bar ImageViewport draws at the right edge (its top 44 px and
    length 0.4 x height in 60..200 px, consoles.common.viewport), so the right letter is not hidden."""
    return 44.0 + max(60.0, min(200.0, 0.4 * height)) + 16.0


def map_colormap(kind: str) -> Any:
    """The colour table of a T1 or T2 map (rendering.mr_mapping.colour_lut), unit ms; its lowest entry is
    black, so background and failed fits (0 ms) read as 'no value', not as a short T1."""
    from consoles.common.colormaps import ColorMap
    from rendering.mr_mapping import colour_lut

    table = colour_lut(kind).astype(float) / 255.0
    table[0] = 0.0
    return ColorMap(f"{kind}_map", table, "ms")


def roi_overlays(o: ov.OverlaySet, centre: Any, radii: Any, text: str | None, height: int) -> None:
    """An ellipse ROI (plane mm) and its read-out at the viewport's bottom left, above the lines of
    plan info (on a dark box: legible on any colour; near the ellipse it ran off a small viewport's edge)."""
    cu, cv = float(centre[0]), float(centre[1])
    ru, rv = max(float(radii[0]), 0.1), max(float(radii[1]), 0.1)
    pts = tuple((cu + ru * math.cos(2 * math.pi * k / 64), cv + rv * math.sin(2 * math.pi * k / 64)) for k in range(64))
    o.add(ov.Polyline("roi", pts, ROI_COLOUR, 2.0, closed=True))
    if text:
        o.add(ov.Text("roi_readout", 6, height - 10 - PLAN_INFO_LINES * CAPTION_LINE_PX, text, ov.WHITE, ROI_TEXT_PX, "left", True, valign="bottom"))


# ---- measurement aids (consoles.mr.measure) ------------------------------------------------------------------
def measure_overlays(o: ov.OverlaySet, t: ov.PixelTransform, width: int, height: int,
                     pointer: str | None) -> None:
    """The aids drawn under every image's graphics (added first): the mm scale bar (bottom left) and the
    pointer's patient coordinates top right (on the viewport the pointer was last over)."""
    scale_bar.scale_bar_overlays(o, t, width, height)
    if pointer:
        o.add(ov.Text("pointer_readout", width - 6, 6 + CAPTION_LINE_PX, pointer, ov.WHITE, CAPTION_PX, "right",
                      True, valign="top"))


def slice_position_overlay(o: ov.OverlaySet, caption: Sequence[str], slice_position: str | None) -> None:
    """The image's slice position ("Tra F 12.3") as the line under the caption (drawn on top, as the caption;
    free_spot counts it as a caption line)."""
    if slice_position:
        o.add(ov.Text("slice_position", 6, 6 + len(caption) * CAPTION_LINE_PX, slice_position, ov.WHITE,
                      CAPTION_PX, "left", True, valign="top"))


def _cross(o: ov.OverlaySet, name: str, u: float, v: float, k: float) -> None:
    r = CROSS_PX / k
    o.add(ov.Line(f"{name}_h", u - r, v, u + r, v, MEASURE_COLOR, 1.5))
    o.add(ov.Line(f"{name}_v", u, v - r, u, v + r, MEASURE_COLOR, 1.5))


def distance_overlays(o: ov.OverlaySet, distances: Sequence[Any], pending: tuple[float, float] | None,
                      k: float) -> None:
    """Distance tool measurements on this image: a line between crosses, its length beside its second end; a
    first click waiting for its second as a lone cross (`k` screen pixels per mm, for the crosses' size)."""
    for j, d in enumerate(distances):
        (u0, v0), (u1, v1) = d.p1_uv, d.p2_uv
        o.add(ov.Line(f"distance{j}", u0, v0, u1, v1, MEASURE_COLOR, 1.5))
        _cross(o, f"distance{j}_a", u0, v0, k)
        _cross(o, f"distance{j}_b", u1, v1, k)
        o.add(ov.Text(f"distance{j}_text", u1, v1, d.text(), MEASURE_COLOR, CAPTION_PX, "left", False,
                      valign="center", offset_px=(10.0, 0.0)))
    if pending is not None:
        _cross(o, "distance_pending", pending[0], pending[1], k)
