"""Graphical slice planning on a displayed image (pure: no Qt, no VTK).

A viewport shows an image lying in a plane (its PlanePose, the "display"); the open row's slice
group is drawn there as cut by that plane, with grips. This module is the geometry behind the
grips, in the display's (u, v) millimetres (u to the screen's right, v up):

- centre: translate the group's centre within the display plane (its distance from the display
  plane is kept);
- rotate: turn the group about the display's normal through the group's centre; counter-clockwise
  on screen is positive (overlays.DragController's `dangle_deg`). Every angle to the display's
  normal is kept, so planning on an oblique image tilts the group in 3D (double oblique);
- FOV edges: the group's read (u) and phase (v) axes as they project onto the display; dragging an
  edge by s mm along its projected axis changes the FOV symmetrically about the centre by
  2 s / |projection| (the edge follows the pointer when the axis lies in the display);
- stack extent: the group's normal projected onto the display; dragging an outer edge by s mm
  outwards changes the stack's extent by 2 s / |projection| and the slice COUNT follows
  (thickness and gap stay, as a radiographer adds slices to cover a ventricle);
- shim box (adjust volume): its centre moves in the display plane; its size along the group's
  read, phase and slice axes changes like the FOV edges.

A grip along an axis exists on a display only when that axis projects onto it with at least
MIN_PROJECTION of its length (an axis seen end-on cannot be dragged sensibly).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rendering.geometry import PlanePose

MIN_PROJECTION = 0.5
ROTATE_OFFSET_PX = 28.0  # the rotation grip sits this far beyond the group's end
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


# ---- slice group -----------------------------------------------------------------------------
def translated(pose: PlanePose, display: PlanePose, du: float, dv: float) -> PlanePose:
    """The group moved by (du, dv) mm of the display plane."""
    return pose.translated(du * display.u + dv * display.v)


def rotated(pose: PlanePose, display: PlanePose, deg: float) -> PlanePose:
    """The group turned by `deg` (counter-clockwise on screen) about the display's normal through
    its own centre. Screen counter-clockwise turns u towards v, i.e. a right-handed turn about
    u x v = -normal (the display normal points into the screen)."""
    return pose.rotated(-display.normal, deg)


def resized(size_mm: float, display: PlanePose, axis: Any, amount_mm: float, lo: float, hi: float) -> float:
    """A length along a group axis after its edge was dragged `amount_mm` outwards on the display
    (symmetric about the centre), clamped to [lo, hi]. An unusable axis keeps its size."""
    p = project_axis(display, axis)
    if not p.usable:
        return size_mm
    return max(lo, min(hi, size_mm + 2.0 * amount_mm / p.factor))


def stack_extent_mm(n_slices: int, thickness_mm: float, gap_mm: float) -> float:
    """Outer edge to outer edge of a stack of slices."""
    return n_slices * thickness_mm + (n_slices - 1) * gap_mm


def slices_for_extent(extent_mm: float, thickness_mm: float, gap_mm: float, lo: int = 1, hi: int = 64) -> int:
    """The slice count whose stack extent is nearest `extent_mm` (thickness and gap kept)."""
    n = int(math.floor((extent_mm + gap_mm) / (thickness_mm + gap_mm) + 0.5))
    return max(lo, min(hi, n))


def stack_resized(n_slices: int, thickness_mm: float, gap_mm: float, display: PlanePose, normal: Any,
                  amount_mm: float, lo: int = 1, hi: int = 64) -> int:
    """The slice count after an outer stack edge was dragged `amount_mm` outwards on the display."""
    p = project_axis(display, normal)
    if not p.usable:
        return n_slices
    extent = stack_extent_mm(n_slices, thickness_mm, gap_mm) + 2.0 * amount_mm / p.factor
    return slices_for_extent(extent, thickness_mm, gap_mm, lo, hi)


# ---- grips -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grip:
    """Where one grip sits on the display (u, v mm) and what dragging it does."""

    name: str  # centre, rotate, fov_read_lo/hi, fov_phase_lo/hi, stack_lo/hi, shim_centre, shim_<axis>_lo/hi
    u: float
    v: float
    role: str  # move | rotate | resize
    axis: tuple[float, float] | None = None  # outward unit direction of a resize grip
    pivot: tuple[float, float] | None = None


def _along(display: PlanePose, pose: PlanePose) -> tuple[float, float]:
    """The on-screen direction the group's slices run along: the slice lines' direction when the
    group is seen edge-on, else its phase axis (sign: towards the group's phase, then read axis)."""
    n = project_axis(display, pose.normal)
    if n.usable:
        d = (-n.direction[1], n.direction[0])
        ref = project_axis(display, pose.v)
        if ref.factor < 1e-6 or abs(d[0] * ref.direction[0] + d[1] * ref.direction[1]) < 1e-6:
            ref = project_axis(display, pose.u)
        if d[0] * ref.direction[0] + d[1] * ref.direction[1] < 0:
            d = (-d[0], -d[1])
        return d
    p = project_axis(display, pose.v)
    return p.direction if p.factor > 1e-6 else (0.0, 1.0)


def _half_extent(display: PlanePose, pose: PlanePose, halves: tuple[float, float, float],
                 direction: tuple[float, float]) -> float:
    """How far the box (half sizes along read, phase, slice) reaches from its centre along a screen
    direction (the box's support in that direction, display mm)."""
    out = 0.0
    for a, h in zip(group_axes(pose).values(), halves):
        p = project_axis(display, a)
        out += h * p.factor * abs(p.direction[0] * direction[0] + p.direction[1] * direction[1])
    return out


def group_grips(display: PlanePose, pose: PlanePose, fov_mm: tuple[float, float], extent_mm: float,
                px_per_mm: float) -> list[Grip]:
    """The slice group's grips on one display: centre, rotate, FOV edges, stack edges."""
    cu, cv = centre_on_display(display, pose.centre)
    out = [Grip("centre", cu, cv, "move")]
    halves = (fov_mm[0] / 2.0, fov_mm[1] / 2.0, extent_mm / 2.0)
    along = _along(display, pose)
    r = _half_extent(display, pose, halves, along) + ROTATE_OFFSET_PX / px_per_mm
    out.append(Grip("rotate", cu + r * along[0], cv + r * along[1], "rotate", pivot=(cu, cv)))
    axes = group_axes(pose)
    for name, a, h in (("fov_read", axes["read"], halves[0]), ("fov_phase", axes["phase"], halves[1]),
                       ("stack", axes["slice"], halves[2])):
        p = project_axis(display, a)
        if not p.usable:
            continue
        du, dv = p.direction
        # stack grips sit towards one end of the slice lines, off the centre grip when the stack is thin
        off = 0.5 * _half_extent(display, pose, halves, along) if name == "stack" else 0.0
        for suffix, s in (("lo", -1.0), ("hi", 1.0)):
            gu = cu + s * h * p.factor * du - off * along[0]
            gv = cv + s * h * p.factor * dv - off * along[1]
            out.append(Grip(f"{name}_{suffix}", gu, gv, "resize", axis=(s * du, s * dv)))
    return out


def shim_grips(display: PlanePose, pose: PlanePose, centre: Any, size_mm: tuple[float, float, float]) -> list[Grip]:
    """The shim box's grips: its centre, and both faces along each usable axis (read, phase, slice)."""
    cu, cv = centre_on_display(display, centre)
    out = [Grip("shim_centre", cu, cv, "move")]
    for name, a, s_mm in zip(AXES, group_axes(pose).values(), size_mm):
        p = project_axis(display, a)
        if not p.usable:
            continue
        du, dv = p.direction
        h = s_mm / 2.0 * p.factor
        for suffix, s in (("lo", -1.0), ("hi", 1.0)):
            out.append(Grip(f"shim_{name}_{suffix}", cu + s * h * du, cv + s * h * dv, "resize",
                            axis=(s * du, s * dv)))
    return out


def axis_of_grip(name: str) -> str:
    """"fov_read_hi" -> "read", "stack_lo" -> "slice", "shim_phase_hi" -> "phase"."""
    parts = name.split("_")
    if parts[0] == "stack":
        return "slice"
    return parts[1]
