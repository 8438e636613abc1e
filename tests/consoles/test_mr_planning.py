"""Graphical slice planning without Qt: consoles.mr.planning and the MRModel operations on it.

Drags in a displayed plane's mm change the open row's slice group (centre, orientation, FOV, slice
count) and shim box; fields and pose stay one state; a double-oblique chain (axial -> 2ch -> 4ch)
gives the normal the geometry predicts; refusals name the reason.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from consoles.mr import planning
from consoles.mr.model import ConsoleActionError, MRModel
from rendering.geometry import PlanePose, plane_angle_deg
from rendering.subjects import load_runtime

AXIAL = PlanePose.axial((0.0, 0.0, 0.0))
CORONAL = PlanePose.coronal((0.0, 0.0, 0.0))
SAGITTAL = PlanePose.sagittal((0.0, 0.0, 0.0))


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, status="pending", protocol="cine_2ch"):
    """A model with a localizer already done and one row of `protocol` open."""
    q = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
         {"protocol": protocol, "status": status, "params": {"matrix": 64}}]
    m = MRModel(rt, "mr_plan_test", 0, {"queue": q, "open": 2})
    return m


def _pose(m) -> PlanePose:
    return m.open_row.params.pose()


# ---- pure geometry ------------------------------------------------------------------------------------
def test_translate_moves_the_centre_in_the_displayed_plane_only():
    g = PlanePose.from_normal((5.0, -3.0, 20.0), (0.3, 0.2, 0.93), 10.0)
    out = planning.translated(g, CORONAL, 12.0, -7.0)  # coronal: u = +x, v = +z
    assert np.allclose(out.centre - g.centre, [12.0, 0.0, -7.0])
    assert np.allclose(out.normal, g.normal) and np.allclose(out.u, g.u)


def test_rotation_about_the_displayed_normal_keeps_the_angle_to_it():
    display = PlanePose.from_normal((0, 0, 0), (0.2, -0.4, 0.89), 17.0)  # an oblique image
    g = PlanePose.from_normal((10.0, 4.0, -6.0), (0.7, 0.1, 0.7), 5.0)
    before = plane_angle_deg(g, display)
    for deg in (7.0, -33.0, 90.0):
        r = planning.rotated(g, display, deg)
        assert plane_angle_deg(r, display) == pytest.approx(before, abs=1e-9)
        assert np.allclose(r.centre, g.centre)
        assert math.degrees(math.acos(np.clip(np.dot(r.normal, g.normal), -1, 1))) > 0.5


def test_rotation_is_counter_clockwise_on_screen():
    """A group seen edge-on on the axial image as a vertical line turns to the left of the screen's up
    for a positive (counter-clockwise) angle."""
    g = PlanePose.sagittal((0.0, 0.0, 0.0))  # cuts the axial image along screen v
    r = planning.rotated(g, AXIAL, 30.0)
    line = np.cross(r.normal, AXIAL.normal)  # the cut's direction
    d = np.array([line @ AXIAL.u, line @ AXIAL.v])
    d = d if d[1] > 0 else -d
    assert math.degrees(math.atan2(d[1], d[0])) == pytest.approx(120.0, abs=1e-6)


def test_resize_factors_follow_the_cut():
    """An axial group on the coronal image (edge-on): read axis along the line (factor 1), stack
    grips at the outer slice lines; turned 60 deg about x (towards the coronal normal), the lines
    spread by 1 / cos 30 = 2 / sqrt 3 on screen and a screen mm carries sqrt(3)/2 mm of the normal."""
    g = PlanePose.axial((0.0, 0.0, 0.0))
    grips = {gr.name: gr for gr in planning.group_grips(CORONAL, g, (300.0, 200.0), 78.0, 2.0)}
    assert grips["fov_read_hi"].factor == pytest.approx(1.0) and grips["stack_hi"].factor == pytest.approx(1.0)
    assert planning.resized(300.0, grips["fov_read_hi"], 10.0, 100, 500) == pytest.approx(320.0)
    # 8 x 8 mm slices, gap 2 (extent 78): +5 mm on each side -> 88 mm -> 9 slices
    assert planning.stack_resized(8, 8.0, 2.0, grips["stack_hi"], 5.0) == 9
    assert planning.stack_resized(8, 8.0, 2.0, grips["stack_lo"], -100.0) == 1
    tilted = g.rotated((1.0, 0.0, 0.0), 30.0)  # normal 30 deg from +z towards y
    grips = {gr.name: gr for gr in planning.group_grips(CORONAL, tilted, (300.0, 200.0), 78.0, 2.0)}
    f = math.cos(math.radians(30.0))
    assert grips["stack_hi"].factor == pytest.approx(f)
    assert grips["stack_hi"].v - grips["stack_lo"].v == pytest.approx(78.0 / f)  # the outer lines on screen
    assert planning.stack_resized(8, 8.0, 2.0, grips["stack_hi"], 5.0 / f) == 9
    # seen face-on (the axial group on an axial image): no stack grips, FOV grips on the outline
    face = {gr.name: gr for gr in planning.group_grips(AXIAL, g, (300.0, 200.0), 78.0, 2.0)}
    assert not any(n.startswith("stack") for n in face)
    assert (face["fov_read_hi"].u, face["fov_phase_hi"].v) == pytest.approx((150.0, 100.0))


def test_grips_sit_where_the_group_is_drawn():
    g = PlanePose.axial((10.0, 0.0, 30.0))  # seen edge-on on the coronal image: a horizontal line at v = 30
    grips = {gr.name: gr for gr in planning.group_grips(CORONAL, g, (300.0, 200.0), 40.0, 2.0)}
    assert (grips["centre"].u, grips["centre"].v) == pytest.approx((10.0, 30.0))
    assert set(grips) == {"centre", "rotate", "fov_read_lo", "fov_read_hi", "stack_lo", "stack_hi"}
    assert (grips["fov_read_hi"].u, grips["fov_read_hi"].v) == pytest.approx((160.0, 30.0))
    assert grips["stack_hi"].v == pytest.approx(50.0) and grips["stack_lo"].v == pytest.approx(10.0)
    assert grips["stack_hi"].axis == pytest.approx((0.0, 1.0))
    # the rotate grip lies beyond the FOV's end, off every other grip
    assert abs(grips["rotate"].u - 10.0) == pytest.approx(150.0 + planning.ROTATE_OFFSET_PX / 2.0)
    pts = [(gr.u, gr.v) for gr in grips.values()]
    assert min(math.dist(a, b) for i, a in enumerate(pts) for b in pts[i + 1:]) * 2.0 >= 14.0
    # a centre off the displayed plane: the centre grip stays on the drawn line
    off = PlanePose.from_normal((10.0, 25.0, 30.0), (0.0, 0.5, 0.866), 0.0)
    c = planning.find_grip(planning.group_grips(CORONAL, off, (300.0, 200.0), 40.0, 2.0), "centre")
    p3 = CORONAL.to_subject(c.u, c.v)
    assert abs(off.distance(p3)) < 1e-9


# ---- the model ------------------------------------------------------------------------------------------
def test_translate_round_trip_reads_back_in_the_fields(rt):
    m = _model(rt)
    c0 = np.array(m.open_row.params.centre_mm)
    m.translate_group(CORONAL, 10.0, -4.0)
    assert np.allclose(np.array(m.open_row.params.centre_mm) - c0, [10.0, 0.0, -4.0], atol=1e-6)
    iso = m.isocentre_mm  # the Position fields show mm from the isocentre
    assert m.open_value("pos_lr_mm") == pytest.approx(c0[0] + 10.0 - iso[0])
    assert m.open_value("pos_fh_mm") == pytest.approx(c0[2] - 4.0 - iso[2])
    assert m.events[-1]["event"] == "geometry_changed"
    m.translate_group(CORONAL, -10.0, 4.0)
    assert np.allclose(m.open_row.params.centre_mm, c0, atol=1e-6)


def test_fields_and_pose_are_one_state(rt):
    m = _model(rt)
    m.set_param("main", "T")
    m.set_param("tilt_a_deg", -23.4)
    m.set_param("tilt_b_deg", 12.1)
    m.set_param("inplane_deg", 30.0)
    assert m.open_row.params.orientation_text() == "T > C -23.4 > S 12.1"
    pose = _pose(m)
    assert pose.inplane_deg() == pytest.approx(30.0, abs=1e-6)
    m.set_pose(pose)  # the graphics write back what they read: nothing moves
    p = m.open_row.params
    assert (p.main, p.tilt_a_deg, p.tilt_b_deg, p.inplane_deg) == pytest.approx(("T", -23.4, 12.1, 30.0))
    m.rotate_group(AXIAL, 15.0)  # a turn about the axial normal keeps the tilt out of the axial plane
    assert plane_angle_deg(_pose(m), AXIAL) == pytest.approx(plane_angle_deg(pose, AXIAL), abs=1e-3)
    assert m.open_row.params.inplane_deg != pytest.approx(30.0)


def test_double_oblique_chain_axial_to_2ch_to_4ch(rt):
    """A 2ch row planned on an axial image (a sagittal group turned about the axial normal: single
    oblique), then a 4ch row planned on the 2ch image (a transverse group, seen edge-on there, turned
    about the 2ch normal): the 4ch normal is the transverse normal turned about the 2ch normal, a
    double oblique with both tilts."""
    q = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
         {"protocol": "cine_2ch", "params": {"matrix": 64}}, {"protocol": "cine_4ch", "params": {"matrix": 64}}]
    m = MRModel(rt, "mr_plan_test", 0, {"queue": q, "open": 2})
    for n, v in (("main", "S"), ("tilt_a_deg", 0.0), ("tilt_b_deg", 0.0), ("inplane_deg", 0.0)):
        m.set_param(n, v)
    s0 = _pose(m)
    m.rotate_group(PlanePose.axial(s0.centre), -40.0)
    two_ch = _pose(m)
    assert plane_angle_deg(two_ch, s0) == pytest.approx(40.0, abs=1e-3)
    assert abs(two_ch.normal[2]) < 1e-6  # still vertical: a single oblique so far
    assert m.open_row.params.orientation_text() == "S > C 40.0"
    m.open(3)
    for n, v in (("main", "T"), ("tilt_a_deg", 0.0), ("tilt_b_deg", 0.0), ("inplane_deg", 0.0)):
        m.set_param(n, v)
    m.set_pose(PlanePose.from_normal(two_ch.centre, _pose(m).normal, 0.0))
    m.rotate_group(two_ch, 35.0)  # plan on the 2ch image: turn about its normal
    four_ch = _pose(m)
    want = PlanePose.axial(two_ch.centre).rotated(-two_ch.normal, 35.0)
    assert plane_angle_deg(four_ch, want) == pytest.approx(0.0, abs=1e-3)
    assert plane_angle_deg(four_ch, two_ch) == pytest.approx(90.0, abs=1e-3)  # still cuts the 2ch at right angles
    assert plane_angle_deg(four_ch, PlanePose.axial()) == pytest.approx(35.0, abs=1e-3)
    text = m.open_row.params.orientation_text()
    assert text.startswith("T > ") and text.count(">") == 2, text  # both tilts: double oblique
    assert min(abs(four_ch.normal[0]), abs(four_ch.normal[1])) > 0.2


def test_rotation_on_the_2ch_image_keeps_the_angle_to_the_2ch_plane(rt):
    m = _model(rt)
    two_ch = PlanePose.from_normal((0, 0, 0), (0.6, -0.5, 0.62), 0.0)
    before = plane_angle_deg(_pose(m), two_ch)
    m.rotate_group(two_ch, 48.0)
    assert plane_angle_deg(_pose(m), two_ch) == pytest.approx(before, abs=1e-3)


def test_fov_stack_and_shim_drags(rt):
    m = _model(rt)
    p = m.open_row.params
    p.main, p.tilt_a_deg, p.tilt_b_deg, p.inplane_deg = "T", 0.0, 0.0, 0.0  # axial: seen edge-on on coronal
    disp = PlanePose.coronal(p.centre_mm)
    fov0, n0 = p.fov_read_mm, p.n_slices
    m.drag_grip(disp, "fov_read_hi", 15.0)
    assert p.fov_read_mm == pytest.approx(min(500, fov0 + 30.0))
    with pytest.raises(ConsoleActionError, match="end-on"):
        m.drag_grip(disp, "fov_phase_hi", 15.0)
    step = p.thickness_mm + p.gap_mm
    m.drag_grip(disp, "stack_hi", step)  # one slice pitch on each side: two more slices
    assert p.n_slices == n0 + 2
    with pytest.raises(ConsoleActionError, match="end-on"):
        m.drag_grip(PlanePose.axial(p.centre_mm), "stack_hi", 5.0)
    c0 = np.array(p.shim_box()["centre"])
    m.move_shim(disp, 5.0, 8.0)
    assert np.allclose(np.array(p.shim_box()["centre"]) - c0, [5.0, 0.0, 8.0], atol=1e-3)
    assert m.events[-1]["event"] == "shim_box_moved"
    size0 = p.shim_box()["size_mm"]
    m.drag_grip(disp, "shim_slice_hi", 10.0)
    assert p.shim_box()["size_mm"][2] == pytest.approx(size0[2] + 20.0)
    assert p.shim_box()["follows_slab"] is False
    assert m.state()["queue"][1]["params"]["shim_centre_mm"] == pytest.approx(list(c0 + [5.0, 0.0, 8.0]), abs=1e-3)


@pytest.mark.parametrize("status,reason", [("done", "has been acquired"), ("running", "running")])
def test_planning_is_refused_on_rows_that_are_not_editable(rt, status, reason):
    m = _model(rt, status=status)
    before = m.open_row.params.to_dict()
    for fn, args in ((m.translate_group, (CORONAL, 5.0, 0.0)), (m.rotate_group, (AXIAL, 10.0)),
                     (m.drag_grip, (CORONAL, "fov_read_hi", 5.0)), (m.drag_grip, (CORONAL, "stack_hi", 5.0)),
                     (m.move_shim, (CORONAL, 1.0, 1.0)), (m.drag_grip, (CORONAL, "shim_read_hi", 5.0)),
                     (m.set_shim_centre, ((0.0, 0.0, 0.0),))):
        with pytest.raises(ConsoleActionError, match=reason):
            fn(*args)
    assert m.open_row.params.to_dict() == before


def test_planning_is_refused_on_the_localizer_and_with_no_row_open(rt):
    m = MRModel(rt, "mr_plan_test", 0, {"queue": [{"protocol": "localizer_3plane", "params": {"matrix": 64}}],
                                        "open": 1})  # a pending localizer row
    with pytest.raises(ConsoleActionError, match="fixed about the isocentre"):
        m.translate_group(CORONAL, 5.0, 0.0)
    m.close_row()
    with pytest.raises(ConsoleActionError, match="Open a row"):
        m.rotate_group(AXIAL, 5.0)


def test_the_stacks_cut_drawn_at_once_equals_the_geometry_modules_per_slice_cut():
    """view_graphics.stack_segments (a drag's redraw) against rendering.geometry.rect_plane_segment."""
    from consoles.mr.view_graphics import stack_segments
    from rendering.geometry import rect_plane_segment
    from rendering.mr_image import SliceGroup

    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(200):
        g = SliceGroup(PlanePose.from_normal(rng.normal(0, 30, 3), rng.normal(size=3), rng.uniform(-90, 90)),
                       fov_read_mm=rng.uniform(100, 400), fov_phase_mm=rng.uniform(100, 400),
                       n_slices=int(rng.integers(1, 20)), thickness_mm=6.0, gap_mm=2.0)
        d = PlanePose.from_normal(rng.normal(0, 30, 3), rng.normal(size=3), rng.uniform(-90, 90))
        ks = list(range(g.n_slices))
        for k, fast in zip(ks, stack_segments(g, d, ks)):
            ref = rect_plane_segment(g.slice_pose(k), (g.fov_read_mm, g.fov_phase_mm), d)
            assert (ref is None) == (fast is None)
            if ref is not None:
                seen += 1
                assert np.allclose(sorted(map(tuple, ref)), sorted(map(tuple, fast)), atol=1e-6)
    assert seen > 500
    assert stack_segments(g, g.pose, [0]) == [None]  # parallel planes


def test_the_answers_frame_uses_the_protocol_librarys_default_orientations():
    """scoring/oracles/mr_planning.py copies the planned rows' default orientations (scoring may not import
    consoles): they must be the library's, or the answer tilts are read in the wrong frame."""
    from consoles.mr.protocols import get_protocol
    from scoring.oracles.mr_planning import DEFAULT_ORIENTATION

    for pid, text in DEFAULT_ORIENTATION.items():
        assert get_protocol(pid).slices.orientation == text


# ---- issue 24: the rotate grip keeps its end ----------------------------------------------------------------
def _grip_angle_deg(grips) -> float:
    by = {g.name: g for g in grips}
    return math.degrees(math.atan2(by["rotate"].v - by["centre"].v, by["rotate"].u - by["centre"].u))


def _turned_by(a0: float, a: float) -> float:
    return (a - a0) % 360.0


def test_the_rotate_grip_keeps_the_end_it_was_released_at(rt):
    """The 2ch group turned in 30 deg steps on the sagittal localizer, clockwise and counter-clockwise: the
    rotate grip turns with the group (its angle about the centre grip by the total turn). The negative control,
    the grips placed without the model's memory of the end (as before), jumps to the other end of the line."""
    from consoles.mr.model import plan_grips

    for step in (30.0, -30.0):
        m = _model(rt)
        display = m.viewport_image_data(0).pose  # the sagittal localizer
        a0 = _grip_angle_deg(m.grips(display))
        kept, forgot = [], []
        for k in range(1, 7):
            m.rotate_group(display, step)
            kept.append(_turned_by(a0, _grip_angle_deg(m.grips(display))))
            forgot.append(_turned_by(a0, _grip_angle_deg(plan_grips(m.open_row.params, display, 1.0, with_shim=False))))
        want = [(k * step) % 360.0 for k in range(1, 7)]
        assert kept == pytest.approx(want, abs=0.5)
        assert any(abs((f - w + 180.0) % 360.0 - 180.0) > 90.0 for f, w in zip(forgot, want)), forgot


def test_a_drag_keeps_the_end_that_was_grabbed(rt):
    """Grabbed at the other end (where a caption pushed it, say), the grip stays there after the turn."""
    m = _model(rt)
    display = m.viewport_image_data(0).pose
    by = {g.name: g for g in m.grips(display)}
    cu, cv = by["centre"].u, by["centre"].v
    start = m.open_row.params.copy()
    other_end = (2 * cu - by["rotate"].u, 2 * cv - by["rotate"].v)
    m.rotate_group(display, -120.0, start=start, grip_uv=other_end)
    a = _grip_angle_deg(m.grips(display))
    want = math.degrees(math.atan2(other_end[1] - cv, other_end[0] - cu)) - 120.0
    assert abs((a - want + 180.0) % 360.0 - 180.0) < 0.5
    with pytest.raises(ConsoleActionError):  # refused like any planning drag on a row that is not editable
        _model(rt, status="done").rotate_group(display, 10.0)
