"""Acquisition geometry: the CT table frame and helical timing (no display)."""
from __future__ import annotations

import numpy as np
import pytest

from rendering.geometry import TableFrame, helical_duration_s, helical_time_at, table_feed_mm_s


def test_table_frame_round_trips_and_matches_the_documented_formulas():
    f = TableFrame(laser_z_subject_mm=3.0, patient_shift_mm=-27.5, iso_height_mm=270.0)
    z = np.array([-400.0, 0.0, 55.5])
    assert np.allclose(f.table_z(z), z - 3.0 - 27.5)
    assert np.allclose(f.subject_z(f.table_z(z)), z)
    assert f.y_iso_subject(160.0) == pytest.approx(-110.0)
    assert f.table_height_for(f.y_iso_subject(142.3)) == pytest.approx(142.3)


def test_table_frame_from_a_state_dump():
    state = {"frame": {"laser_z_subject_mm": 0.0, "patient_shift_mm": 31.2, "iso_height_mm": 270.0,
                       "table_height_offset_mm": 4.0}}
    f = TableFrame.from_state(state)
    assert f.patient_shift_mm == 31.2 and f.table_z(0.0) == pytest.approx(31.2)
    assert TableFrame.from_state({"frame": f.to_dict()}) == f


def test_breath_hold_moves_the_dome_and_below_but_not_the_apices():
    """Below the dome everything moves by the breath-hold, nothing above the fixed level moves, the chest
    between stretches linearly; the warp inverts exactly and its fields survive the state dump."""
    f = TableFrame(patient_shift_mm=40.0, breath_hold_mm=-25.0, breath_fixed_z_mm=0.0, breath_dome_z_mm=-150.0)
    z = np.array([-400.0, -150.0, -75.0, 0.0, 30.0])
    assert np.allclose(f.table_z(z), z + 40.0 + np.array([-25.0, -25.0, -12.5, 0.0, 0.0]))
    assert np.allclose(f.subject_z(f.table_z(z)), z)
    assert f.subject_z(float(f.table_z(-75.0))) == pytest.approx(-75.0)
    assert isinstance(f.table_z(-75.0), float) and isinstance(f.subject_z(0.0), float)
    zs = np.linspace(-500, 100, 601)
    assert np.all(np.diff(f.table_z(zs)) > 0)  # monotonic: the range is still one interval of the patient
    assert TableFrame.from_state({"frame": f.to_dict()}) == f
    assert TableFrame(breath_hold_mm=0.0).table_z(-200.0) == -200.0  # no breath-hold: the rigid frame
    with pytest.raises(ValueError, match="dome"):
        TableFrame(breath_hold_mm=30.0, breath_fixed_z_mm=0.0, breath_dome_z_mm=-20.0)


def test_helical_timing():
    assert table_feed_mm_s(1.0, 40.0, 0.5) == pytest.approx(80.0)
    assert helical_duration_s(400.0, 1.0, 40.0, 0.5) == pytest.approx(5.0)
    assert helical_duration_s(1.0, 1.5, 40.0, 0.25) == pytest.approx(0.5)  # never shorter than the minimum
    assert helical_time_at(-100.0, 100.0, 10.0, 1.0, 40.0, 0.5) == pytest.approx(12.5)


# ---- plane poses, orientation text, reslicing, intersections ------------------------------------
from rendering.geometry import (  # noqa: E402
    OrientedBox, PlanePose, ResliceGrid, box_plane_polygon, clip_line_to_rect, clip_segment_to_rect,
    normal_from_orientation_text, orientation_angles, orientation_text, plane_angle_deg, plane_line_in_plane,
    plane_plane_line, pose_from_orientation_text, rect_plane_segment, reslice,
)


def test_canonical_poses_follow_the_radiological_lps_convention():
    # axial viewed from the feet: screen right is patient left (+x), screen up anterior (-y)
    ax = PlanePose.axial((0.0, 0.0, 50.0))
    assert np.allclose(ax.to_subject(10.0, 0.0), [10.0, 0.0, 50.0])
    assert np.allclose(ax.to_subject(0.0, 10.0), [0.0, -10.0, 50.0])
    assert np.allclose(ax.normal, [0.0, 0.0, 1.0])  # into the screen = towards the head
    assert np.allclose(ax.dicom_orientation(), [1, 0, 0, 0, 1, 0])  # DICOM's axial IOP
    cor = PlanePose.coronal()
    assert np.allclose(cor.dicom_orientation(), [1, 0, 0, 0, 0, -1]) and np.allclose(cor.normal, [0, 1, 0])
    sag = PlanePose.sagittal()
    assert np.allclose(sag.dicom_orientation(), [0, 1, 0, 0, 0, -1]) and np.allclose(sag.normal, [-1, 0, 0])
    # each canonical pose is what from_normal gives with no in-plane rotation
    for p in (ax, cor, sag):
        q = PlanePose.from_normal(p.centre, p.normal, 0.0)
        assert np.allclose(q.u, p.u) and np.allclose(q.v, p.v)
        # (u, v, normal) is left-handed since the normal points away from the viewer; DICOM's
        # (row, column, normal) = (u, -v, normal) is right-handed
        assert np.linalg.det(p.rotation_matrix()) == pytest.approx(-1.0)
        assert np.linalg.det(np.column_stack([p.u, -p.v, p.normal])) == pytest.approx(1.0)


def test_from_normal_inplane_rotation_is_counter_clockwise_on_screen_and_round_trips():
    p = PlanePose.from_normal((0, 0, 0), (0, 0, 1), 90.0)
    # axial turned 90 deg CCW: screen right now points where screen up pointed (anterior)
    assert np.allclose(p.u, [0, -1, 0]) and np.allclose(p.v, [-1, 0, 0])
    q = PlanePose.from_normal((1, 2, 3), (0.3, -0.2, 0.9), -37.5)
    assert q.inplane_deg() == pytest.approx(-37.5)
    assert np.allclose(PlanePose.from_axes(q.centre, q.u, q.v).normal, q.normal)


def test_point_conversion_round_trips_and_measures_signed_distance():
    p = PlanePose.from_normal((5.0, -80.0, 20.0), (1.0, 1.0, 1.0), 12.0)
    pts = np.array([[0.0, 0.0, 0.0], [10.0, -3.0, 7.0]])
    uvw = p.to_plane(pts)
    assert np.allclose(p.to_subject(uvw[:, 0], uvw[:, 1], uvw[:, 2]), pts)
    assert np.allclose(p.distance(p.centre + 4.0 * p.normal), 4.0)


def test_rotated_about_an_axis_is_right_handed():
    p = PlanePose.axial().rotated((0, 0, 1), 90.0)
    assert np.allclose(p.u, [0, 1, 0])  # +x turned 90 deg right-handed about +z gives +y
    moved = PlanePose.coronal((0, 0, 0)).moved_in_plane(3.0, 4.0)
    assert np.allclose(moved.centre, [3.0, 0.0, 4.0])


@pytest.mark.parametrize("normal,text", [
    ((0, 0, 1), "T"),
    ((0, 0, -1), "T"),
    ((np.sin(np.deg2rad(-23.4)), 0, np.cos(np.deg2rad(-23.4))), "T > S -23.4"),
    ((0, 1, 0), "C"),
    ((1, 0, 0), "S"),
])
def test_orientation_text_of_simple_planes(normal, text):
    assert orientation_text(normal) == text


def test_orientation_text_double_oblique_is_exact_and_round_trips():
    a, b = np.deg2rad(-23.4), np.deg2rad(12.1)
    n = np.array([np.sin(b), np.sin(a) * np.cos(b), np.cos(a) * np.cos(b)])  # x=S, y=C, z=T
    assert orientation_text(n) == "T > C -23.4 > S 12.1"
    main, sec, ta, third, tb = orientation_angles(n)
    assert (main, sec, third) == ("T", "C", "S") and ta == pytest.approx(-23.4) and tb == pytest.approx(12.1)
    assert np.allclose(normal_from_orientation_text("T > C -23.4 > S 12.1"), n)
    assert np.allclose(normal_from_orientation_text("Tra > Cor -23.4 > Sag 12.1"), n)
    rng = np.random.default_rng(3)
    for _ in range(50):
        m = rng.normal(size=3)
        back = normal_from_orientation_text(orientation_text(m, decimals=4))
        assert plane_angle_deg(back, m) < 1e-3


def test_orientation_text_rejects_malformed_input():
    for bad in ("", "X", "T > T 3", "T > C", "T > C 1 > S 2 > C 3"):
        with pytest.raises(ValueError):
            normal_from_orientation_text(bad)


def test_pose_from_orientation_text_views_sagittal_from_the_left():
    p = pose_from_orientation_text("S", centre=(0, 0, 0))
    assert np.allclose(p.u, PlanePose.sagittal().u) and np.allclose(p.v, PlanePose.sagittal().v)
    q = pose_from_orientation_text("T > C -20.0", (1, 2, 3), inplane_deg=15.0)
    assert orientation_text(q) == "T > C -20.0" and q.inplane_deg() == pytest.approx(15.0)


def test_plane_angle():
    assert plane_angle_deg(PlanePose.axial(), PlanePose.coronal()) == pytest.approx(90.0)
    assert plane_angle_deg((0, 0, 1), (0, 0, -1)) == pytest.approx(0.0)
    assert plane_angle_deg((0, 0, 1), (0, 1, 1)) == pytest.approx(45.0)


def _marker_volume():
    """vol[z, y, x], 2 mm voxels, origin (-40, -40, -40): 41^3 with labelled single voxels."""
    vol = np.zeros((41, 41, 41), np.uint8)
    origin, spacing = (-40.0, -40.0, -40.0), (2.0, 2.0, 2.0)

    def put(x, y, z, label):
        vol[int((z + 40) / 2), int((y + 40) / 2), int((x + 40) / 2)] = label

    put(20.0, 0.0, 0.0, 1)  # patient left
    put(0.0, -20.0, 0.0, 2)  # anterior
    put(0.0, 0.0, 20.0, 3)  # head
    return vol, origin, spacing


def test_reslice_puts_patient_left_right_and_anterior_up_on_an_axial_image():
    vol, origin, spacing = _marker_volume()
    img = reslice(vol, origin, spacing, PlanePose.axial(), fov_mm=82.0, pixel_mm=2.0, order=0)
    assert img.shape == (41, 41) and img.dtype == np.uint8
    r, c = np.argwhere(img == 1)[0]
    assert (r, c) == (20, 30)  # same row as the centre, 10 pixels to the screen's right
    r, c = np.argwhere(img == 2)[0]
    assert (r, c) == (10, 20)  # 10 pixels above the centre: anterior is up
    assert not (img == 3).any()  # the head marker is 20 mm off this plane


def test_reslice_on_coronal_and_grid_placement():
    vol, origin, spacing = _marker_volume()
    g = ResliceGrid.centred(PlanePose.coronal(), 82.0, 2.0)
    img = reslice(vol, origin, spacing, g, order=0)
    assert tuple(np.argwhere(img == 3)[0]) == (10, 20)  # head up
    assert tuple(np.argwhere(img == 1)[0]) == (20, 30)
    u0, v_top, du, dv = g.placement()
    assert (u0, v_top, du, dv) == (-40.0, 40.0, 2.0, 2.0)
    uu, vv = g.uv()
    assert uu[20, 30] == pytest.approx(20.0) and vv[10, 20] == pytest.approx(20.0)


def test_reslice_linear_interpolates_and_fills_outside():
    # a linear ramp in x is reproduced exactly by trilinear sampling on an oblique plane
    z, y, x = np.meshgrid(np.arange(30), np.arange(30), np.arange(30), indexing="ij")
    vol = (3.0 * x + 0.5 * y - z).astype(np.float32)
    origin, spacing = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    pose = PlanePose.from_normal((15.0, 15.0, 15.0), (0.2, 0.3, 1.0), 25.0)
    g = ResliceGrid.centred(pose, 10.0, 0.5)
    img = reslice(vol, origin, spacing, g, order=1)
    pts = g.points()
    assert np.allclose(img, 3.0 * pts[..., 0] + 0.5 * pts[..., 1] - pts[..., 2], atol=1e-3)
    far = reslice(vol, origin, spacing, PlanePose.axial((0, 0, 500.0)), 10.0, 1.0, order=1, cval=-7.0)
    assert np.all(far == -7.0)


def test_plane_plane_intersection():
    assert plane_plane_line(PlanePose.axial(), PlanePose.axial((0, 0, 5))) is None
    p, d = plane_plane_line(PlanePose.axial((0, 0, 30)), PlanePose.coronal((0, -20, 0)))
    assert np.allclose(p, [0, -20, 30]) and np.allclose(abs(d), [1, 0, 0])
    # an axial slice seen on a coronal localizer is a horizontal line at v = its z
    pt, dr = plane_line_in_plane(PlanePose.coronal((0, 0, 10)), PlanePose.axial((0, 0, 35)))
    assert pt[1] == pytest.approx(25.0) and np.allclose(abs(dr), [1, 0])
    # a plane tilted 30 deg about y, seen on the coronal: a line of slope tan(30 deg)
    tilted = PlanePose.axial().rotated((0, 1, 0), 30.0)
    pt, dr = plane_line_in_plane(PlanePose.coronal(), tilted)
    assert abs(dr[1] / dr[0]) == pytest.approx(np.tan(np.deg2rad(30.0)))


def test_clipping():
    rect = (0.0, 10.0, 0.0, 5.0)
    a, b = clip_segment_to_rect((-5, 2.5), (15, 2.5), rect)
    assert np.allclose(a, [0, 2.5]) and np.allclose(b, [10, 2.5])
    assert clip_segment_to_rect((-5, 7), (15, 7), rect) is None
    assert clip_segment_to_rect((1, 1), (2, 2), rect) is not None
    a, b = clip_line_to_rect((0, 0), (1, 1), rect)
    assert np.allclose(a, [0, 0]) and np.allclose(b, [5, 5])
    assert clip_line_to_rect((0, 6), (1, 0), rect) is None


def test_box_plane_polygon_of_a_slab_and_a_tilted_box():
    slab = OrientedBox(PlanePose.axial((0, 0, 40)), (100.0, 80.0, 5.0))  # 200 x 160 mm FOV, 10 mm slab
    poly = box_plane_polygon(slab, PlanePose.coronal((0, -10, 0)))
    # on the coronal the slab is a band u in [-100, 100], v (= z) in [35, 45]
    assert poly.shape == (4, 2)
    assert np.allclose(sorted(map(tuple, np.round(poly, 6))), [(-100, 35), (-100, 45), (100, 35), (100, 45)])
    assert len(box_plane_polygon(slab, PlanePose.coronal((0, -90, 0)))) == 0  # outside the FOV in y
    assert len(box_plane_polygon(slab, PlanePose.axial((0, 0, 60)))) == 0
    # a cube turned 45 deg about z cut by an axial plane through its centre is a diamond
    cube = OrientedBox(PlanePose.axial().rotated((0, 0, 1), 45.0), (10.0, 10.0, 10.0))
    d = box_plane_polygon(cube, PlanePose.axial())
    assert d.shape == (4, 2)
    assert np.allclose(np.sort(np.abs(d).max(axis=1)), [10 * np.sqrt(2)] * 4)
    assert cube.contains([[0, 0, 0], [0, 13.9, 0], [0, 14.3, 0]]).tolist() == [True, True, False]
    assert cube.volume_mm3() == pytest.approx(8000.0)


def test_rect_plane_segment_is_the_slice_line_on_a_localizer():
    seg = rect_plane_segment(PlanePose.axial((0, 0, 20)), (200.0, 150.0), PlanePose.coronal())
    assert seg is not None
    a, b = sorted(seg, key=lambda p: p[0])
    assert np.allclose(a, [-100, 20]) and np.allclose(b, [100, 20])
    assert rect_plane_segment(PlanePose.axial((0, 0, 20)), (200.0, 150.0), PlanePose.coronal((0, 100, 0))) is None
    assert rect_plane_segment(PlanePose.axial(), (10.0, 10.0), PlanePose.axial()) is None
