"""MR measurement aids without Qt (issue 34): scale bar lengths, slice positions, pointer read-out, distance tool."""
from __future__ import annotations

import math

import numpy as np
import pytest

from consoles.common import overlays as ov
from consoles.common.scale_bar import scale_bar, scale_bar_overlays
from consoles.mr.measure import MAX_DISTANCES, patient_text, slice_position_text
from consoles.mr.model import ConsoleActionError, MRModel
from rendering.geometry import PlanePose
from rendering.subjects import load_runtime

LOC = {"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}}


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, seed=0, perturbations=None):
    return MRModel(rt, "mr_measure_test", seed, {"queue": [LOC, {"protocol": "cine_2ch"}], "layout": {"layout": "2x2"}},
                   perturbations)


# ---- scale bar -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("px_per_mm, width, want_mm", [(1.0, 300, 50.0), (0.6, 300, 100.0), (2.5, 300, 20.0),
                                                       (0.3, 1000, 1000.0), (10.0, 100, 2.0)])
def test_scale_bar_is_the_longest_round_length_that_fits(px_per_mm, width, want_mm):
    bar = scale_bar(px_per_mm, width)
    assert bar is not None and bar.length_mm == want_mm
    assert bar.length_px == pytest.approx(want_mm * px_per_mm)
    assert bar.length_px <= 0.3 * width + 1e-9
    assert bar.text == f"{want_mm:g} mm"


def test_scale_bar_refuses_unreadable_scales():
    assert scale_bar(0.0, 300) is None and scale_bar(float("nan"), 300) is None and scale_bar(1.0, 20) is None


def test_scale_bar_overlay_spans_its_length_on_screen():
    t = ov.PixelTransform(1.7, 140.0, 120.0)
    o = ov.OverlaySet()
    bar = scale_bar_overlays(o, t, 280, 240)
    line = o.find("scale_bar")
    x0, y0 = t.to_pixel(line.u0, line.v0)
    x1, y1 = t.to_pixel(line.u1, line.v1)
    assert (x1 - x0) == pytest.approx(bar.length_px) and y0 == pytest.approx(y1) == pytest.approx(230.0)
    assert o.find("scale_bar_text").text == bar.text


# ---- slice position and pointer -----------------------------------------------------------------------
def test_slice_position_text_names_the_main_axis_and_the_signed_position():
    iso = (0.0, 10.0, -400.0)
    tra = PlanePose.from_normal((5.0, 3.0, -412.34), (0.0, 0.1, 1.0))
    assert slice_position_text(tra, iso) == "Tra F 12.3"
    cor = PlanePose.from_normal((5.0, 30.0, -412.0), (0.0, 1.0, 0.2))
    assert slice_position_text(cor, iso) == "Cor P 20.0"
    sag = PlanePose.from_normal((-7.25, 30.0, -412.0), (1.0, 0.0, 0.0))
    assert slice_position_text(sag, iso) == "Sag R 7.2"
    assert patient_text((1.0, 5.0, -390.0), iso) == "L1.0 A5.0 H10.0 mm"


def test_localizer_viewports_show_their_slice_position_from_the_isocentre(rt):
    m = _model(rt)
    names = [m.viewport_image_data(i).name for i in range(3)]
    texts = [m.slice_position(i) for i in range(3)]
    for name, text, i in zip(names, texts, range(3)):
        k = {"sagittal": 0, "coronal": 1, "transverse": 2}[name]
        assert text.split()[0] == ("Sag", "Cor", "Tra")[k]
        c = m.viewport_image_data(i).pose.centre[k] - m.isocentre_mm[k]
        assert float(text.split()[2]) == pytest.approx(abs(c), abs=0.05)
    assert m.slice_position(3) is None  # an empty viewport


def test_the_pointer_over_one_anatomical_point_reads_where_the_patient_lies(rt):
    """Scanner coordinates are from the isocentre: with a seeded offset of the patient on the table, the same
    subject point (on both transverse localizers) reads differently, by the offset."""
    per = {"isocentre_lr_mm": [-40.0, 40.0], "isocentre_ap_mm": [-30.0, 30.0]}
    a, b = _model(rt, 0, per), _model(rt, 1, per)
    assert a.isocentre_mm != b.isocentre_mm and a.isocentre_mm[2] == b.isocentre_mm[2]
    read = []
    for m in (a, b):
        i = next(k for k in range(3) if m.viewport_image_data(k).name == "transverse")
        pose = m.viewport_image_data(i).pose
        p = np.array([12.0, 20.0, m.isocentre_mm[2]])
        m.set_pointer(i, float((p - pose.centre) @ pose.u), float((p - pose.centre) @ pose.v))
        np.testing.assert_allclose(m.pointer_mm(), p, atol=1e-3)
        read.append(m.pointer_text(i))
    assert read[0] == patient_text(np.array([12.0, 20.0, a.isocentre_mm[2]]), a.isocentre_mm)
    assert read[0] != read[1]


def test_pointer_read_out_is_the_subject_point_in_scanner_coordinates(rt):
    m = _model(rt)
    assert m.pointer_text(0) is None and m.state()["measure"]["pointer"] is None
    m.set_pointer(2, 31.5, -12.25)
    img = m.viewport_image_data(2)
    want = img.pose.centre + 31.5 * img.pose.u - 12.25 * img.pose.v
    np.testing.assert_allclose(m.pointer_mm(), want)
    assert m.pointer_text(2) == patient_text(want, m.isocentre_mm)
    assert m.pointer_text(0) is None  # shown only where the pointer was last
    d = m.state()["measure"]["pointer"]
    assert d["viewport"] == 3 and d["subject_mm"] == pytest.approx(list(want), abs=1e-3)
    n = len(m.events)
    m.set_pointer(2, 0.0, 0.0)
    assert len(m.events) == n  # display state: not an event
    m.set_layout("1x1")
    with pytest.raises(ConsoleActionError, match="not shown"):
        m.set_pointer(2, 0.0, 0.0)


# ---- distance tool -------------------------------------------------------------------------------------
def test_distance_tool_measures_between_two_clicks_on_one_image(rt):
    m = _model(rt)
    with pytest.raises(ConsoleActionError, match="distance tool on"):
        m.distance_point(0, 0.0, 0.0)
    m.set_distance_tool(True)
    assert m.distance_point(1, 10.0, 20.0) is None
    assert m.pending_distance_point(1) == (10.0, 20.0) and m.pending_distance_point(0) is None
    d = m.distance_point(1, 40.0, -20.0)
    assert d is not None and d.length_mm == pytest.approx(50.0) and d.text() == "50.0 mm"
    assert m.viewport_distances(1) == [d] and m.viewport_distances(0) == []
    assert m.state()["measure"]["distances"][0]["length_mm"] == pytest.approx(50.0)
    assert "50.0 mm" in m.message
    # a first click on another image starts over there
    m.distance_point(0, 0.0, 0.0)
    m.distance_point(2, 0.0, 0.0)
    assert m.pending_distance_point(0) is None and m.pending_distance_point(2) == (0.0, 0.0)
    m.distance_point(2, 3.0, 4.0)
    assert [round(x.length_mm, 6) for x in m.viewport_distances(2)] == [5.0]
    for k in range(MAX_DISTANCES):
        m.distance_point(0, 0.0, 0.0)
        m.distance_point(0, float(k + 1), 0.0)
    assert len(m.distances) == MAX_DISTANCES and m.distances[0].length_mm == pytest.approx(1.0)
    m.set_distance_tool(False)
    assert m.distances == [] and m.viewport_distances(0) == []


def test_a_distance_on_an_oblique_image_is_its_subject_frame_length(rt):
    m = _model(rt)
    m.set_distance_tool(True)
    m.distance_point(0, -20.0, 5.0)
    d = m.distance_point(0, 10.0, 45.0)
    assert np.linalg.norm(np.subtract(d.p2_mm, d.p1_mm)) == pytest.approx(math.hypot(30.0, 40.0))


# ---- plane-to-image angle in the plan info --------------------------------------------------------------
def test_plan_info_leads_with_the_angle_between_the_group_and_the_image(rt):
    from consoles.mr import view_graphics as graphics
    from rendering.geometry import plane_angle_deg

    m = _model(rt)
    m.open(m.row_at(2).uid)
    p = m.open_row.params
    for i in range(3):
        img = m.viewport_image_data(i)
        o = ov.OverlaySet()
        graphics.plan_info(o, p, 280, 240, img.pose)
        want = plane_angle_deg(p.pose(), img.pose)
        assert o.find("plan_info0").text == f"{want:.1f} deg to image"
        assert o.find("plan_info1").text.startswith(f"{int(p.n_slices)} slice")
    # perpendicular and parallel planes read 90 and 0
    tra = PlanePose.from_normal((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    sag = PlanePose.from_normal((0.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    m.set_pose(tra)
    assert graphics.plane_to_image_deg(m.open_row.params, sag) == pytest.approx(90.0)
    assert graphics.plane_to_image_deg(m.open_row.params, tra) == pytest.approx(0.0, abs=1e-6)


def test_slice_one_mark_sits_on_the_first_slice_line():
    from consoles.mr import view_graphics as graphics
    from rendering.mr_image import SliceGroup

    display = PlanePose.from_normal((0.0, 0.0, 0.0), (1.0, 0.0, 0.0))  # sagittal
    group = SliceGroup(PlanePose.from_normal((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), 200.0, 200.0, thickness_mm=6.0, gap_mm=2.0,
                       n_slices=5)
    o = ov.OverlaySet()
    graphics.planning_overlays(o, display, (-150.0, 150.0, -150.0, 150.0), group, "all", done=False)
    mark, first = o.find("slice1_mark"), o.find("slice0")
    assert mark.text == "1" and mark.v == pytest.approx(first.v0) == pytest.approx(first.v1)
    assert mark.v == pytest.approx(group.offsets_mm()[0] * np.dot(group.pose.normal, display.v))


def test_unnamed_localizer_images_show_no_position_or_pointer_coordinates(rt):
    """With labels hidden (a task asks which image is transverse) neither read-out names the plane: the slice
    position says it, and on a plane through the isocentre one pointer coordinate stays 0.0."""
    st = {"queue": [LOC], "labels_hidden": True, "layout": {"layout": "2x2"}}
    m = MRModel(rt, "mr_measure_test", 0, st, None)
    assert all(m.viewport_series(i) is not None and m.slice_position(i) is None for i in range(3))
    m.set_pointer(0, 10.0, 10.0)
    assert m.pointer_text(0) is None
    named = _model(rt)
    named.set_pointer(0, 10.0, 10.0)
    assert named.pointer_text(0) is not None and named.slice_position(0) is not None
