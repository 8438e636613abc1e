"""Graphical slice planning on a displayed image (pure: no Qt, no VTK).

A viewport shows an image lying in a plane (its PlanePose, the "display"); the open row's slice
group is drawn there as cut by that plane, with grips. This module is the geometry behind the
grips, in the display's (u, v) millimetres (u to the screen's right, v up):

- centre: translate the group's centre within the display plane (its distance from the display
  plane is kept);
- rotate: turn the group about the display's normal through the centre grip; counter-clockwise on
  screen is positive (overlays.DragController's `dangle_deg`). Every angle to the display's normal
  is kept, so planning on an oblique image tilts the group in 3D (double oblique);
- FOV edges, stack edges, shim box faces: resize grips sitting where the drawn cut of the group
  (rendering.geometry: slice lines, slab outline) meets that edge, so an edge follows the pointer.
  A grip dragged s mm outwards along its on-screen axis moves its edge by s x `factor` mm along the
  group's own axis (factor = how much of that axis the on-screen motion carries, 0.5..1), and the
  size grows symmetrically about the centre by 2 s x factor. The stack's grips change the slice
  COUNT (thickness and gap stay, as a radiographer adds slices to cover a ventricle).

A group is "edge-on" on a display when its normal projects onto it with at least MIN_PROJECTION of
its length: its slices show as lines; the centre grip is the point of the centre slice's line
nearest the group centre, FOV grips sit at that line's ends, stack grips at the outer lines. Else
the group is seen (nearly) face-on: the centre grip is the centre's projection, FOV grips sit on the
slab outline's faces, and the stack cannot be dragged there. A grip whose axis carries less than
MIN_PROJECTION of the on-screen motion is not offered (an edge seen end-on cannot be dragged).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from rendering.geometry import PlanePose, cross3, plane_plane_line

MIN_PROJECTION = 0.5
ROTATE_OFFSET_PX = 28.0  # the rotation grip sits this far beyond the group's end
KEPT_INNER_SHARE = 0.75  # a kept end's grip with no room beyond it: this share of the way out, midway between
# the stack grips (0.5) and the FOV edge grip at the end
# ...and with no room there either (a caption, the pointer read-out or the plan info over that part of the line),
# nearer the centre grip, still on the kept end's side (issue 34: the grip jumped to the other end instead)
KEPT_INNER_SHARES = (KEPT_INNER_SHARE, 0.3)
AXES = ("read", "phase", "slice")


@dataclass(frozen=True)
class Projected:
    """One of the group's axes as it shows on the display: unit 2D direction and length factor."""

    direction: tuple[float, float]
    factor: float  # |projection| of the unit 3D axis onto the display plane (0..1)

    @property
    def usable(self) -> bool:
        return self.factor >= MIN_PROJECTION


def project_axis(display: PlanePose, axis: Any) -> Projected:
    """A subject-frame direction as seen on the display (unit 2D direction, projection length)."""
    a = np.asarray(axis, float)
    d = np.array([a @ display.u, a @ display.v])
    n = float(np.linalg.norm(d))
    if n < 1e-9:
        return Projected((0.0, 0.0), 0.0)
    return Projected((float(d[0] / n), float(d[1] / n)), n)


def group_axes(pose: PlanePose) -> dict[str, np.ndarray]:
    """The slice group's read, phase and slice axes (subject frame)."""
    return {"read": pose.u, "phase": pose.v, "slice": pose.normal}


def centre_on_display(display: PlanePose, point: Any) -> tuple[float, float]:
    """Where a subject point projects onto the display, in its (u, v) mm."""
    p = display.to_plane(point)
    return float(p[0]), float(p[1])


# ---- slice group ----------------------------------------------------------------------------
def translated(pose: PlanePose, display: PlanePose, du: float, dv: float) -> PlanePose:
    """The group moved by (du, dv) mm of the display plane."""
    return pose.translated(du * display.u + dv * display.v)


def turned(display: PlanePose, direction: Any, deg: float) -> np.ndarray:
    """A subject direction turned as `rotated` turns a group on `display` by `deg`."""
    d = np.asarray(direction, float)
    return np.asarray(PlanePose(d, display.u, display.v).rotated(-display.normal, deg, np.zeros(3)).centre)


def rotated(pose: PlanePose, display: PlanePose, deg: float, pivot: Any | None = None) -> PlanePose:
    """The group turned by `deg` (counter-clockwise on screen) about the display's normal through
    `pivot` (subject mm; default the group centre). Screen counter-clockwise turns u towards v, a
    right-handed turn about u x v = -normal (the display normal points into the screen)."""
    return pose.rotated(-display.normal, deg, pivot)


def stack_extent_mm(n_slices: int, thickness_mm: float, gap_mm: float) -> float:
    """Outer edge to outer edge of a stack of slices."""
    return n_slices * thickness_mm + (n_slices - 1) * gap_mm


def slices_for_extent(extent_mm: float, thickness_mm: float, gap_mm: float, lo: int = 1, hi: int = 64) -> int:
    """The slice count whose stack extent is nearest `extent_mm` (thickness and gap kept)."""
    n = int(math.floor((extent_mm + gap_mm) / (thickness_mm + gap_mm) + 0.5))
    return max(lo, min(hi, n))


def edge_on(display: PlanePose, pose: PlanePose) -> bool:
    """Whether the group's slices show as lines on the display (see the module notes)."""
    return project_axis(display, pose.normal).usable


# ---- grips -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grip:
    """Where one grip sits on the display (u, v mm) and what dragging it does.

    Resize grips: `axis` is the outward on-screen direction, `factor` the group-axis mm per on-screen
    mm along it, `group_axis` which size it changes (read, phase, slice). Rotate: `pivot` on screen
    and `pivot_mm` (subject frame)."""

    name: str  # centre, rotate, fov_<read|phase>_<lo|hi>, stack_<lo|hi>, shim_centre, shim_<axis>_<lo|hi>
    u: float
    v: float
    role: str  # move | rotate | resize
    axis: tuple[float, float] | None = None
    factor: float = 1.0
    group_axis: str | None = None
    pivot: tuple[float, float] | None = None
    pivot_mm: tuple[float, float, float] | None = None


def _pivot_point(display: PlanePose, pose: PlanePose) -> np.ndarray:
    """Subject point of the centre grip: on the centre slice's line nearest the group centre when
    edge-on, else the centre's projection onto the display."""
    c = np.asarray(pose.centre, float)
    if edge_on(display, pose):
        line = plane_plane_line(pose, display)  # the point of the cut nearest pose.centre
        if line is not None:
            return line[0]
    return c - display.distance(c) * display.normal


def _cut_direction(display: PlanePose, pose: PlanePose) -> np.ndarray:
    """Unit subject direction of the slices' lines on an edge-on display, signed towards the
    group's phase axis (else its read axis) so grips keep their places as the group turns."""
    d = cross3(pose.normal, display.normal)
    d = d / np.linalg.norm(d)
    ref = pose.v if abs(d @ pose.v) > 1e-6 else pose.u
    return d if d @ ref >= 0 else -d


def _uv(display: PlanePose, point: Any) -> tuple[float, float]:
    p = display.to_plane(point)
    return float(p[0]), float(p[1])


def _dir2(display: PlanePose, d3: Any) -> tuple[float, float]:
    d = np.array([np.asarray(d3) @ display.u, np.asarray(d3) @ display.v])
    n = float(np.linalg.norm(d))
    return (float(d[0] / n), float(d[1] / n)) if n > 1e-12 else (0.0, 0.0)


def _face_grips(display: PlanePose, pose: PlanePose, centre: Any, halves: dict[str, float], prefix: str,
                names: tuple[str, ...], origin: np.ndarray) -> list[Grip]:
    """Grips on a box's faces (half sizes along the group's axes, centred on `centre`), reached from
    `origin` (a display point) along each axis's projection: where that face's cut crosses it."""
    out = []
    c = np.asarray(centre, float)
    axes = group_axes(pose)
    for name in names:
        a = axes[name]
        p = project_axis(display, a)
        if not p.usable:
            continue
        d3 = p.direction[0] * display.u + p.direction[1] * display.v  # unit, in the display
        base = a @ (origin - c)
        for suffix, s in (("lo", -1.0), ("hi", 1.0)):
            t = (s * halves[name] - base) / p.factor
            gu, gv = _uv(display, origin + t * d3)
            out.append(Grip(f"{prefix}{name}_{suffix}", gu, gv, "resize", axis=(s * p.direction[0], s * p.direction[1]),
                            factor=p.factor, group_axis=name))
    return out


def group_grips(display: PlanePose, pose: PlanePose, fov_mm: tuple[float, float], extent_mm: float,
                px_per_mm: float, free: Callable[[float, float], bool] | None = None,
                toward: Any | None = None) -> list[Grip]:
    """The slice group's grips on one display: centre, rotate, FOV edges, stack edges. The rotate
    grip goes beyond the end of the group that subject direction `toward` points to (the end it was
    released at, issue 24; None: the far end), or beyond the other end when `free(u, v)` says that
    spot is taken (a caption, off the image)."""
    halves = {"read": fov_mm[0] / 2.0, "phase": fov_mm[1] / 2.0, "slice": extent_mm / 2.0}
    pc = _pivot_point(display, pose)
    cu, cv = _uv(display, pc)
    out = [Grip("centre", cu, cv, "move")]
    c = np.asarray(pose.centre, float)
    axes = group_axes(pose)
    offset = ROTATE_OFFSET_PX / px_per_mm
    if edge_on(display, pose):
        l3 = _cut_direction(display, pose)
        ends: list[tuple[float, str, float]] = []  # (t along l3, axis, |a.l|)
        for sign in (1.0, -1.0):
            best = None
            for name in ("read", "phase"):
                al = float(axes[name] @ l3) * sign
                if abs(al) < 1e-9:
                    continue
                t = (math.copysign(halves[name], al) - axes[name] @ (pc - c)) / al
                if t > 0 and (best is None or t < best[0]):
                    best = (t, name, abs(al))
            if best is not None:
                ends.append((sign * best[0], best[1], best[2]))
        far = max((abs(t) for t, _, _ in ends if t > 0), default=halves["phase"])
        near = max((abs(t) for t, _, _ in ends if t < 0), default=far)
        # beyond the far end; else beyond the near one; else on the centre line inside the group
        # (then nearer the centre: issue 34's read-outs left small viewports with no other free spot)
        ts = [far + offset, -(near + offset), 0.6 * far, -0.6 * near, 0.3 * far, -0.3 * near]
        if toward is not None:  # the end it keeps, beyond it or else inside it (clear of the stack's grips),
            # before the other end's spots
            keep = 1 if float(np.asarray(toward, float) @ l3) >= 0 else -1
            ends_t = {1: far, -1: -near}
            ts = [ends_t[keep] + keep * offset, *(share * ends_t[keep] for share in KEPT_INNER_SHARES),
                  ends_t[-keep] - keep * offset, 0.6 * ends_t[-keep]]
        spots = [_uv(display, pc + t * l3) for t in ts]
        ru, rv = next((sp for sp in spots if free is None or free(*sp)), spots[0])
        out.append(Grip("rotate", ru, rv, "rotate", pivot=(cu, cv), pivot_mm=tuple(map(float, pc))))
        for t, name, al in ends:
            if al < MIN_PROJECTION:
                continue
            side = "hi" if axes[name] @ (pc + t * l3 - c) > 0 else "lo"
            gu, gv = _uv(display, pc + t * l3)
            out.append(Grip(f"fov_{name}_{side}", gu, gv, "resize", axis=_dir2(display, math.copysign(1.0, t) * l3),
                            factor=al, group_axis=name))
        pn = project_axis(display, pose.normal)
        dn = pn.direction[0] * display.u + pn.direction[1] * display.v
        slide = -0.5 * far * l3  # towards the lower end of the lines, off the centre grip
        for suffix, s in (("lo", -1.0), ("hi", 1.0)):
            gu, gv = _uv(display, pc + s * halves["slice"] / pn.factor * dn + slide)
            out.append(Grip(f"stack_{suffix}", gu, gv, "resize", axis=(s * pn.direction[0], s * pn.direction[1]),
                            factor=pn.factor, group_axis="slice"))
    else:
        pv = project_axis(display, pose.v)
        up = pv.direction[0] * display.u + pv.direction[1] * display.v if pv.factor > 1e-9 else display.v
        reach = halves["phase"] * max(pv.factor, 1e-9)
        if toward is not None and float(np.asarray(toward, float) @ up) < 0:  # kept at the lower end
            up = -up
        ru, rv = _uv(display, pc + (reach + offset) * up)
        if free is not None and not free(ru, rv):
            # the kept side nearer the centre first (when it was kept), then beyond the other end
            kept = [_uv(display, pc + share * reach * up) for share in KEPT_INNER_SHARES] if toward is not None else []
            alt = next((sp for sp in [*kept, _uv(display, pc - (reach + offset) * up)] if free(*sp)), None)
            if alt is not None:
                ru, rv = alt
        out.append(Grip("rotate", ru, rv, "rotate", pivot=(cu, cv), pivot_mm=tuple(map(float, pc))))
        out += _face_grips(display, pose, c, halves, "fov_", ("read", "phase"), pc)
    return out


def shim_grips(display: PlanePose, pose: PlanePose, centre: Any, size_mm: tuple[float, float, float],
               centre_offset: tuple[float, float] = (0.0, 0.0)) -> list[Grip]:
    """The shim box's grips: its centre (projected; drawn `centre_offset` display mm away, so it is not
    under the slice group's centre grip while the box follows the slab), and its faces along each
    usable axis."""
    c = np.asarray(centre, float)
    pc = c - display.distance(c) * display.normal
    cu, cv = _uv(display, pc)
    halves = {a: s / 2.0 for a, s in zip(AXES, size_mm)}
    return ([Grip("shim_centre", cu + centre_offset[0], cv + centre_offset[1], "move")]
            + _face_grips(display, pose, c, halves, "shim_", AXES, pc))


def find_grip(grips: list[Grip], name: str) -> Grip | None:
    return next((g for g in grips if g.name == name), None)


def resized(size_mm: float, grip: Grip, amount_mm: float, lo: float, hi: float) -> float:
    """A size after its grip was dragged `amount_mm` outwards along the grip's on-screen axis:
    symmetric about the centre, clamped to [lo, hi]."""
    return max(lo, min(hi, size_mm + 2.0 * amount_mm * grip.factor))


def stack_resized(n_slices: int, thickness_mm: float, gap_mm: float, grip: Grip, amount_mm: float,
                  lo: int = 1, hi: int = 64) -> int:
    """The slice count after a stack grip was dragged `amount_mm` outwards."""
    extent = stack_extent_mm(n_slices, thickness_mm, gap_mm) + 2.0 * amount_mm * grip.factor
    return slices_for_extent(extent, thickness_mm, gap_mm, lo, hi)
