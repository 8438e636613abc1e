"""MR planning grips without a display (issue 34): each grip kind has its own shape and colour (the stack's grips
were yellow squares like the centre grip), every grip the planner makes has a style, shapes draw as outlines of
their size (consoles.common.overlays.handle_outline), and the shim box's grips are drawn inside the viewport's
visible part of the image however far the box reaches."""
from __future__ import annotations

import math

import numpy as np
import pytest

from consoles.common import overlays as ov
from consoles.mr import view_graphics as graphics
from consoles.mr.plan_tools import plan_grips
from consoles.mr.row_params import RowParams
from consoles.mr.protocols import get_protocol
from rendering.geometry import PlanePose


def _params() -> RowParams:
    """A short-axis cine's row parameters at the isocentre (a 10-slice stack, shim box on the slab)."""
    return RowParams.from_protocol(get_protocol("cine_sax"), (0.0, 0.0, 0.0))


def test_every_grip_kind_has_its_own_shape_and_colour():
    styles = graphics.GRIP_STYLES
    shapes = [s[1] for s in styles.values()]
    colours = {s[0] for s in styles.values()}
    assert len(set(shapes)) == len(shapes)
    # the group's grips differ in colour too; the shim box's two kinds share its green (shape tells them apart)
    group = [styles[k][0] for k in ("centre", "rotate", "fov", "stack")]
    assert len(set(group)) == 4 and styles["shim_centre"][0] not in group and len(colours) == 5


def test_every_planned_grip_has_a_style():
    p = _params()
    for display in (PlanePose.coronal((0.0, 0.0, 0.0)), PlanePose.sagittal((0.0, 0.0, 0.0)),
                    PlanePose.axial((0.0, 0.0, 0.0))):
        grips = plan_grips(p, display, 1.0)
        kinds = {graphics.grip_kind(g.name) for g in grips}
        assert {"centre", "rotate", "shim_centre", "shim_face"} <= kinds
    with pytest.raises(ValueError):
        graphics.grip_kind("nonsense")


@pytest.mark.parametrize("shape", ["square", "circle", "diamond", "triangle", "plus", "bar"])
def test_shapes_are_outlines_of_their_size(shape):
    h = ov.Handle("g", 0.0, 0.0, size_px=14, role="resize", axis=(1.0, 0.0), shape=shape)
    pts = np.asarray(ov.handle_outline(h, 100.0, 50.0))
    r = np.hypot(pts[:, 0] - 100.0, pts[:, 1] - 50.0)
    assert len(pts) >= 3 and r.max() <= 14 and r.max() >= 6
    if shape == "triangle":  # the tip points along the axis (screen right), the base behind the centre
        assert pts[0, 0] > 100.0 + 7 and (pts[1:, 0] < 100.0).all()


def test_shim_grips_are_clamped_into_the_visible_image():
    p = _params()
    p.shim_size_mm = (600.0, 600.0, 600.0)  # larger than any image: its faces lie off screen
    p.shim_centre_mm = (0.0, 0.0, 150.0)
    display = PlanePose.coronal((0.0, 0.0, 0.0))
    rect = (-200.0, 200.0, -200.0, 200.0)
    t = ov.PixelTransform(1.0, 150.0, 150.0)  # 300 x 300 px showing u, v in -150..150 mm
    grips = plan_grips(p, display, 1.0, with_group=False)
    assert any(not (-150 <= g.u <= 150 and -150 <= g.v <= 150) for g in grips)
    vis = graphics.visible_rect(t, 300, 300, rect)
    assert vis == pytest.approx((-136.0, 136.0, -136.0, 136.0))
    drawn = graphics.clamped_grips(grips, vis)
    assert [g.name for g in drawn] == [g.name for g in grips]
    for g in drawn:
        assert -136.0 - 1e-9 <= g.u <= 136.0 + 1e-9 and -136.0 - 1e-9 <= g.v <= 136.0 + 1e-9, g
    o = ov.OverlaySet()
    graphics.shim_handles(o, rect, grips, t, 300, 300)
    assert {h.name for h in o.handles()} == {g.name for g in grips}  # none dropped, all on screen
    # a face grip stays on its side of the box's centre grip
    c = next(g for g in drawn if g.name == "shim_centre")
    for g0, g in zip(grips, drawn):
        if g.name != "shim_centre" and math.hypot(g.u - c.u, g.v - c.v) > 1e-6:
            assert (g0.u - c.u) * (g.u - c.u) + (g0.v - c.v) * (g.v - c.v) > 0


def test_fov_outline_persists_on_a_face_on_display_the_slab_misses():
    """Issue 34: a coronal stack moved (or thinned) off the coronal localizer's plane lost its dashed FOV outline;
    it is then the FOV rectangle projected where the face-on grips are."""
    p = _params()
    p.main, p.tilt_a_deg, p.tilt_b_deg, p.inplane_deg = "C", 0.0, 0.0, 0.0
    display = PlanePose.coronal((0.0, 0.0, 0.0))
    p.centre_mm = (10.0, 0.0, 20.0)  # the display plane through the slab: the cut
    cut = graphics.fov_outline(p.slice_group(), display)
    p.centre_mm = (10.0, 80.0, 20.0)  # 80 mm behind it, slab 10 x (8 + 2) mm thick: the cut misses
    g = p.slice_group()
    from rendering.geometry import box_plane_polygon

    assert len(box_plane_polygon(g.slab(), display)) == 0
    shown = graphics.fov_outline(g, display)
    assert len(shown) == 4
    us, vs = sorted(shown[:, 0]), sorted(shown[:, 1])
    assert us[-1] - us[0] == pytest.approx(p.fov_read_mm) or us[-1] - us[0] == pytest.approx(p.fov_phase_mm)
    assert np.mean(shown, axis=0) == pytest.approx([-10.0 if display.u[0] < 0 else 10.0, 20.0], abs=1e-6)
    assert sorted(np.round(np.ptp(shown, axis=0), 6)) == sorted(np.round(np.ptp(cut, axis=0), 6))
    o = ov.OverlaySet()
    graphics.planning_overlays(o, display, (-300.0, 300.0, -300.0, 300.0), g, "all", done=False)
    assert "fov" in {i.name for i in o.items}


def test_body_share_map_agrees_with_one_box_at_a_time():
    """The table of sums the view uses gives each box's body (and group) share as sampling the box itself does
    (within the 3 px grids' different phase at the silhouette's edges)."""
    rng = np.random.default_rng(0)

    class _Image:  # an MRImage's surface: pixels and placement
        pixels = np.zeros((100, 100), np.float32)
        pixels[20:80, 30:70] = 1.0
        pixels += rng.uniform(0, 0.01, pixels.shape).astype(np.float32)

        def placement(self):
            return (-50.0, 50.0, 1.0, 1.0)  # u0, v_top, du, dv: 100 x 100 mm

    img = _Image()
    t = ov.PixelTransform(2.0, 100.0, 100.0)  # 200 x 200 px
    outline = np.array([[-10.0, -10.0], [10.0, -10.0], [10.0, 10.0], [-10.0, 10.0]])
    share = graphics.body_share_map(img, t, 200, 200, outline)
    for box in [(0, 0, 60, 60), (6, 140, 146, 194), (60, 60, 140, 140), (150, 0, 200, 30), (10, 10, 10, 40)]:
        assert share(box) == pytest.approx(graphics.body_share(img, t, box, outline), abs=0.05), box
    assert share((0, 0, 40, 40)) == 0.0 and share((80, 80, 120, 120)) > 2.0  # air; body inside the group
