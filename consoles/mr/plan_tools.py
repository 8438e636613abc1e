"""Graphical planning entry points of the MR console (a mixin of MRModel; no Qt): the open row's slice group
translated in a displayed image's plane, turned about its normal (double oblique from oblique images), FOV /
stack / shim box sizes from resize grips, the shim box moved; every change through set_pose / set_param /
set_shim_size / set_shim_centre, so it is logged and refused like a typed field. The geometry itself is
consoles.mr.planning's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from consoles.common.model_base import Rule
from consoles.mr import planning
from consoles.mr.param_card import GEOMETRY, PARAM, ROW_EDITABLE
from consoles.mr.row_params import RowParams
from rendering.geometry import PlanePose

if TYPE_CHECKING:
    from consoles.mr.model import MRModel

__all__ = ["PlanningTools", "plan_grips", "planning_rotated", "apply_resize", "SHIM_GRIP_OFFSET_PX"]

SHIM_GRIP_OFFSET_PX = 20.0  # the shim box's move grip, up-left of its centre (off the group's centre grip)


class PlanningTools:
    """Drags of the open row's grips on a displayed plane, as model calls (the view's drags end here)."""

    def row_editable(self) -> bool:
        """Whether the open row's parameters (and so its planning grips) can be changed now."""
        return ROW_EDITABLE(self)

    def _editable_params(self, rule: Rule = GEOMETRY) -> RowParams:
        self._require_rule(rule)
        row = self.open_row
        assert row is not None
        return row.params

    def translate_group(self, display: PlanePose, du: float, dv: float) -> None:
        """Move the open row's slice group by (du, dv) mm in the displayed image's plane."""
        p = self._editable_params()
        self.set_pose(planning.translated(p.pose(), display, float(du), float(dv)))

    def rotate_group(self, display: PlanePose, deg: float, start: RowParams | None = None,
                     grip_uv: tuple[float, float] | None = None) -> None:
        """Turn the open row's slice group about the displayed plane's normal through its centre grip
        (counter-clockwise on screen positive): planning on an oblique image gives a double oblique.

        `start`: the parameters the turn is measured from (a drag's press-time row; default the row as it
        is); `grip_uv`: where on the display the rotate grip was grabbed (default where it sits). The grip
        then keeps that end of the group after the turn (issue 24: it used to jump to the other end when
        the row's parameters re-derived the group's in-plane axes turned by 180 deg): the model remembers
        the grabbed end as a subject direction turned with the group."""
        p = self._editable_params()  # refused unless the open row's geometry is editable
        p = p if start is None else start
        row = self.open_row
        g = planning.find_grip(plan_grips(p, display, 1.0, with_shim=False,
                                          rotate_end=self._rotate_ends.get(row.uid)), "rotate")
        assert g is not None and g.pivot is not None
        gu, gv = grip_uv if grip_uv is not None else (g.u, g.v)
        d3 = (gu - g.pivot[0]) * np.asarray(display.u) + (gv - g.pivot[1]) * np.asarray(display.v)
        if float(np.linalg.norm(d3)) > 1e-9:
            self._rotate_ends[row.uid] = tuple(float(x) for x in planning.turned(display, d3, float(deg)))
        self.set_pose(planning_rotated(p, display, float(deg)))

    def rotate_grip_end(self, uid: int) -> tuple[float, float, float] | None:
        """The end of a row's group its rotate grip keeps (a subject direction from the group's centre, set by
        the last turn; None: not turned yet, the grip sits at the far end)."""
        return self._rotate_ends.get(uid)

    def grips(self, display: PlanePose, px_per_mm: float = 1.0) -> list[planning.Grip]:
        """The open row's grips on a displayed plane: the group's (not for a localizer) and the shim box's
        (consoles.mr.planning); rotate grip placement depends on the viewport's pixels per mm and the end
        the grip was last released at."""
        row = self.open_row
        if row is None:
            return []
        return plan_grips(row.params, display, px_per_mm, with_group=not row.proto.is_localizer,
                          rotate_end=self._rotate_ends.get(row.uid))

    def drag_grip(self, display: PlanePose, name: str, amount_mm: float) -> None:
        """A resize grip (fov_*, stack_*, shim_<axis>_*) dragged `amount_mm` outwards along its axis on
        the displayed plane: that size changes symmetrically by 2 x amount x the grip's factor (the
        stack's through the slice count)."""
        rule = ROW_EDITABLE if name.startswith("shim_") or name.startswith("fov_") else GEOMETRY
        p = self._editable_params(rule)
        g = planning.find_grip(self.grips(display), name)
        self._require(g is not None and g.role == "resize",
                      f"There is no {name.replace('_', ' ')} grip on this image: the edge is seen end-on here.")
        assert g is not None
        apply_resize(self, p, g, float(amount_mm))

    def move_shim(self, display: PlanePose, du: float, dv: float) -> None:
        """Move the adjust volume by (du, dv) mm in the displayed plane."""
        p = self._editable_params(ROW_EDITABLE)
        c = np.asarray(p.shim_box()["centre"], float)
        self.set_shim_centre(c + float(du) * display.u + float(dv) * display.v)


# ---- planning helpers shared by the model and the view's drags ----------------------------------------
def plan_grips(p: RowParams, display: PlanePose, px_per_mm: float, with_group: bool = True,
               with_shim: bool = True, free: Any = None, rotate_end: Any = None) -> list[planning.Grip]:
    """The grips of row parameters `p` on a displayed plane (group first, then the shim box); `free`
    (u, v) -> bool tells where the rotate grip may go, `rotate_end` (a subject direction) the end of the
    group it keeps (MRModel.rotate_grip_end; planning.group_grips)."""
    out: list[planning.Grip] = []
    if with_group:
        extent = planning.stack_extent_mm(int(p.n_slices), p.thickness_mm, p.gap_mm)
        out += planning.group_grips(display, p.pose(), (p.fov_read_mm, p.fov_phase_mm), extent, px_per_mm, free,
                                    rotate_end)
    if with_shim:
        box = p.shim_box()
        off = SHIM_GRIP_OFFSET_PX / px_per_mm
        out += planning.shim_grips(display, p.pose(), box["centre"], tuple(float(s) for s in box["size_mm"]),
                                   (-off, off))
    return out


def planning_rotated(p: RowParams, display: PlanePose, deg: float) -> PlanePose:
    """The group of `p` turned on a display about its centre grip (planning.group_grips)."""
    g = planning.find_grip(plan_grips(p, display, 1.0, with_shim=False), "rotate")
    assert g is not None
    return planning.rotated(p.pose(), display, deg, g.pivot_mm)


def apply_resize(m: "MRModel", p0: RowParams, g: planning.Grip, amount_mm: float) -> None:
    """Set the size a resize grip acts on, from the parameters `p0` it was found on (press time)."""
    row = m.open_row
    assert row is not None
    cur = row.params
    if g.name.startswith("fov_"):
        key = f"fov_{g.group_axis}_mm"
        par = PARAM[key]
        value = planning.resized(getattr(p0, key), g, amount_mm, par.lo, par.hi)
        if par.clamp(value) != getattr(cur, key):
            m.set_param(key, value)
    elif g.name.startswith("stack_"):
        par = PARAM["n_slices"]
        n = planning.stack_resized(int(p0.n_slices), p0.thickness_mm, p0.gap_mm, g, amount_mm, int(par.lo),
                                   int(par.hi))
        if n != cur.n_slices:
            m.set_param("n_slices", n)
    elif g.name.startswith("shim_"):
        k = planning.AXES.index(str(g.group_axis))
        size = [float(s) for s in p0.shim_box()["size_mm"]]
        size[k] = planning.resized(size[k], g, amount_mm, 10.0, 500.0)
        if [round(s, 1) for s in size] != [float(s) for s in cur.shim_box()["size_mm"]]:
            m.set_shim_size(tuple(size))
