"""Pure overlay components: composites, handles with roles, hit-testing and the drag controller."""
from __future__ import annotations

import math

import pytest

from consoles.common import overlays as ov
from consoles.common.overlays import (
    Box, Caliper, Circle, DragController, Handle, Line, Movable, OverlaySet, PixelTransform, Polyline,
    RotatedBox, Text, expand, hit_test,
)

# 2 px per mm, plane origin at widget pixel (100, 200): x = 100 + 2u, y = 200 - 2v
T = PixelTransform(2.0, 100.0, 200.0)


def test_pixel_transform_round_trips_and_exports_the_shell_format():
    assert T.to_pixel(10.0, 5.0) == (120.0, 190.0)  # v up means y down
    assert T.to_plane(120.0, 190.0) == (10.0, 5.0)
    assert T.to_dict() == {"ax": 2.0, "bx": 100.0, "ay": -2.0, "by": 200.0}


def test_rotated_box_corners_and_containment():
    b = RotatedBox("shim", 10.0, 0.0, 4.0, 2.0, 90.0)
    assert [tuple(round(c, 9) for c in p) for p in b.corners()] == [(12, -4), (12, 4), (8, 4), (8, -4)]
    assert b.contains(10.0, 3.5) and not b.contains(13.0, 0.0)


def test_composites_expand_to_primitives():
    (poly,) = expand(Circle("roi", 0.0, 0.0, 5.0, segments=12))
    assert isinstance(poly, Polyline) and poly.closed and len(poly.points) == 12
    assert poly.points[3] == pytest.approx((0.0, 5.0))
    cal = Caliper("kidney", 0.0, 0.0, 30.0, 40.0)
    parts = expand(cal)
    assert [type(p).__name__ for p in parts] == ["Line", "Handle", "Handle", "Text"]
    assert parts[3].text == "50.0 mm" and isinstance(parts[3], ov.Label)
    assert parts[1].acts_on == "kidney" and parts[2].name == "kidney.p1"
    assert expand(Line("l", 0, 0, 1, 1)) == [Line("l", 0, 0, 1, 1)]


def test_handles_validate_their_role():
    with pytest.raises(ValueError):
        Handle("h", 0, 0, role="spin")
    with pytest.raises(ValueError):
        Handle("h", 0, 0, role="resize")  # needs an axis
    with pytest.raises(ValueError):
        Handle("h", 0, 0, role="rotate")  # needs a pivot
    with pytest.raises(ValueError):
        Handle("h", 0, 0, span="diagonal")


def test_hit_test_prefers_handles_then_nearest_then_first_added():
    o = OverlaySet()
    o.add(Box("range", -50.0, -20.0, 50.0, 20.0), Movable(axis=(0.0, 1.0)))
    o.add(Handle("top", 0.0, 20.0, role="resize", target="range", axis=(0.0, 1.0)))
    o.add(Handle("top_twin", 0.0, 20.0, role="resize", target="range", axis=(0.0, 1.0)))
    o.add(Handle("bottom", 0.0, -20.0, role="resize", target="range", axis=(0.0, -1.0)))
    # 4 mm (8 px) below the top handle: inside the box, but the handle wins
    h = hit_test(o, T, *T.to_pixel(0.0, 16.0))
    assert (h.kind, h.name, h.role, h.target) == ("handle", "top", "resize", "range")
    assert h.distance_px == pytest.approx(8.0)
    # inside the box, far from handles: the body, to move along its axis
    h = hit_test(o, T, *T.to_pixel(30.0, 0.0))
    assert (h.kind, h.name, h.role, h.axis) == ("body", "range", "move", (0.0, 1.0))
    # outside everything
    assert hit_test(o, T, *T.to_pixel(80.0, 0.0)) is None
    # just beyond reach (grab 10 px = 5 mm)
    assert hit_test(o, T, *T.to_pixel(0.0, 25.5)) is None  # 11 px above the top handle


def test_hit_test_spans_rows_and_columns():
    o = OverlaySet()
    o.add(Handle("edge", 0.0, 10.0, role="resize", target="r", axis=(0, 1), span="row"))
    o.add(Handle("iso", 40.0, 0.0, role="move", axis=(1, 0), span="column", visible=False))
    assert hit_test(o, T, *T.to_pixel(-300.0, 12.0)).name == "edge"  # far along the row
    assert hit_test(o, T, *T.to_pixel(41.0, -300.0)).name == "iso"
    assert hit_test(o, T, *T.to_pixel(-300.0, 16.0)) is None  # 12 px off the row


def test_hit_test_bodies_of_lines_circles_and_rotated_boxes():
    o = OverlaySet()
    o.add(Line("slice", -50.0, -50.0, 50.0, 50.0), Movable())
    o.add(Circle("roi", 80.0, 0.0, 5.0), Movable())
    o.add(RotatedBox("fov", -80.0, 0.0, 10.0, 2.0, 90.0), Movable())
    o.add(Circle("deco", 0.0, -80.0, 5.0))  # not movable: never grabbed
    assert hit_test(o, T, *T.to_pixel(3.0, 0.0)).name == "slice"  # 3 mm / sqrt(2) off the line
    assert hit_test(o, T, *T.to_pixel(82.0, 1.0)).name == "roi"
    assert hit_test(o, T, *T.to_pixel(-80.0, 9.0)).name == "fov"
    assert hit_test(o, T, *T.to_pixel(-76.0, 0.0)) is None  # outside the turned box
    assert hit_test(o, T, *T.to_pixel(0.0, -80.0)) is None


def test_drag_move_along_an_axis_reports_increments_and_totals():
    o = OverlaySet()
    o.add(Box("range", -50.0, -20.0, 50.0, 20.0), Movable(axis=(0.0, 1.0)))
    d = DragController()
    assert d.press(0.0, 0.0, o, T).name == "range" and d.active
    a = d.move(7.0, 3.0)
    assert (a.role, a.du, a.dv, a.total_dv) == ("move", 0.0, 3.0, 3.0)
    b = d.release(-2.0, 10.0)
    assert (b.phase, b.dv, b.total_dv, b.u, b.v) == ("release", 7.0, 10.0, -2.0, 10.0)
    assert not d.active and d.move(0.0, 50.0) is None


def test_a_release_where_the_last_move_was_is_marked_as_a_repeat():
    o = OverlaySet()
    o.add(Box("range", -50.0, -20.0, 50.0, 20.0), Movable(axis=(0.0, 1.0)))
    d = DragController()
    d.press(0.0, 0.0, o, T)
    assert not d.move(0.0, 4.0).repeats_last_move
    assert d.release(0.0, 4.0).repeats_last_move  # nothing left to apply: views may skip it
    d.press(0.0, 0.0, o, T)  # a click on the range: no move, so its release is the whole drag
    assert not d.release(0.0, 0.0).repeats_last_move
    d.press(0.0, 0.0, o, T)
    d.move(0.0, 4.0)
    assert not d.release(0.0, 6.0).repeats_last_move  # let go further on


def test_drag_rotate_and_resize():
    box = RotatedBox("shim", 0.0, 0.0, 20.0, 10.0)
    o = OverlaySet()
    for h in box.handles(px_per_mm=T.k):
        o.add(h)
    d = DragController()
    rot = next(h for h in o.handles() if h.role == "rotate")
    assert (rot.u, rot.v) == (0.0, 22.0)  # 24 px above the top edge at 2 px/mm
    assert d.press(rot.u, rot.v, o, T).role == "rotate"
    step = d.move(-22.0, 0.0)  # a quarter turn, counter-clockwise on screen
    assert step.dangle_deg == pytest.approx(90.0)
    turned = box.dragged(step)
    assert turned.angle_deg == pytest.approx(90.0) and (turned.cu, turned.cv) == pytest.approx((0.0, 0.0))
    d.release(-22.0, 0.0)
    # stretch the right edge by 6 mm: the left edge stays
    assert d.press(20.0, 0.0, o, T).name == "shim.right"
    step = d.release(26.0, 5.0)
    assert step.damount == pytest.approx(6.0) and step.total_amount == pytest.approx(6.0)
    wider = box.dragged(step)
    assert wider.half_u == pytest.approx(23.0) and wider.cu == pytest.approx(3.0)
    assert min(c[0] for c in wider.corners()) == pytest.approx(-20.0)


def test_rotation_crossing_the_back_of_the_pivot_wraps():
    o = OverlaySet()
    o.add(Handle("r", -10.0, 0.1, role="rotate", pivot=(0.0, 0.0)))
    d = DragController()
    d.press(-10.0, 0.1, o, T)
    step = d.move(-10.0, -0.1)  # a small turn across 180 deg, not almost a full one
    assert abs(step.dangle_deg) < 2.0


def test_caliper_end_points_are_draggable_and_its_text_follows():
    o = OverlaySet()
    o.add(Caliper("len", 0.0, 0.0, 30.0, 0.0))
    d = DragController()
    hit = d.press(30.5, 0.0, o, T)
    assert (hit.name, hit.target, hit.role) == ("len.p1", "len", "move")
    step = d.release(40.5, 0.0)
    assert step.total_du == pytest.approx(10.0)
    assert [p for p in expand(Caliper("len", 0.0, 0.0, 40.0, 0.0)) if isinstance(p, Text)][0].text == "40.0 mm"


# ---- rulers (issue 24: millimetre scales on planning images) -----------------------------------------------
def test_a_ruler_ticks_every_minor_step_longer_every_major_and_numbers_where_they_fit():
    from consoles.common.overlays import Line, Ruler, Text, expand

    r = Ruler("z", "v", -100.0, -455.0, 210.0, px_per_mm=0.9, title="Table z (mm)")
    items = expand(r)
    ticks = {i.name: i for i in items if isinstance(i, Line) and "_tick_" in i.name}
    assert len(ticks) == 67 and "z_tick_-450" in ticks and "z_tick_210" in ticks and "z_tick_-460" not in ticks
    lengths_px = {n: abs(t.u1 - t.u0) * 0.9 for n, t in ticks.items()}
    assert lengths_px["z_tick_-450"] == pytest.approx(8.0) and lengths_px["z_tick_-440"] == pytest.approx(4.0)
    texts = {i.name: i.text for i in items if isinstance(i, Text)}
    assert texts["z_-450"] == "-450" and texts["z_200"] == "200" and texts["z_title"] == "Table z (mm)"
    assert "z_-425" not in texts and len(texts) == 15  # 50 mm is 45 px here: a number every 50 mm
    numbers = [i for i in items if isinstance(i, Text) and i.name != "z_title"]
    assert all(i.align == "right" and i.v == float(i.text) for i in numbers)  # left of the scale, at their value
    # the negative control: cramped, the same scale numbers only every 100 mm
    sparse = {i.name for i in expand(Ruler("z", "v", 0.0, -455.0, 210.0, px_per_mm=0.5)) if isinstance(i, Text)}
    assert "z_-450" not in sparse and "z_-400" in sparse and "z_100" in sparse


def test_a_ruler_can_show_another_quantity_than_the_planes_own():
    from consoles.common.overlays import Ruler, Text, expand

    # a table height H drawn against couch height u = H - 270: H 0 at u -270, H 250 at u -20
    r = Ruler("h", "u", -460.0, 0.0, 260.0, px_per_mm=0.7, origin=-270.0, direction=1.0, title="Table height")
    texts = {i.name: i for i in expand(r) if isinstance(i, Text)}
    assert texts["h_0"].u == pytest.approx(-270.0) and texts["h_250"].u == pytest.approx(-20.0)
    assert texts["h_0"].valign == "top" and texts["h_0"].offset_px[1] > 0  # below the scale (screen y down)
    with pytest.raises(ValueError):
        Ruler("bad", "x", 0.0, 0.0, 1.0, px_per_mm=1.0)
