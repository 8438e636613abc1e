"""CT planning graphics built from model state, and drags through the shared controller (no Qt)."""
from __future__ import annotations

import pytest

from consoles.common.overlays import Circle, DragController, PixelTransform, hit_test_plane
from consoles.ct import graphics
from consoles.ct.model import CTModel
from rendering.subjects import load_runtime

K = 0.4  # pixels per mm on the scouts (about what the console shows)


@pytest.fixture(scope="module")
def planned():
    m = CTModel(load_runtime("dev"), "ccta_heart_coverage_isocenter", 0, {}, {"heart_rate_bpm": [60, 60]})
    m.load_protocol("ccta")
    m.acquire_scout()
    m.on_clock(0, 5)
    m.set_range(-30, -165)
    return m


def test_ap_scout_grips_have_roles_and_span_the_row(planned):
    m = planned
    o = graphics.scout_overlays(m, "ap", K, 560, 700)
    h = {x.name: x for x in o.handles()}
    assert (h["start_handle"].role, h["start_handle"].target, h["start_handle"].span) == ("resize", "range", "row")
    assert h["end_handle"].axis == (0.0, -1.0)
    far_left = m.scouts["ap"].u0 - 35.0  # in the ruler margin, off the image
    # 9 px from the start edge, anywhere along the row: the edge
    assert hit_test_plane(o, K, far_left, m.start_mm - 9 / K).name == "start_handle"
    assert hit_test_plane(o, K, far_left, m.start_mm - 11 / K).kind == "body"  # inside the range: move it
    assert hit_test_plane(o, K, far_left, m.start_mm + 11 / K) is None  # above the range
    # both edges equally near (a short range): the start edge wins, as it always has
    short = graphics.scout_overlays(_with_range(m, -100.0, -110.0), "ap", K, 560, 700)
    assert hit_test_plane(short, K, 0.0, -105.0).name == "start_handle"


def _with_range(m, start, end):
    class View:  # the model's state with another range, for the builder only
        def __getattr__(self, name):
            return {"start_mm": start, "end_mm": end}.get(name, getattr(m, name))
    return View()


def test_dragging_the_range_body_moves_it_along_the_table_only(planned):
    m = planned
    o = graphics.scout_overlays(m, "ap", K, 560, 700)
    d = DragController(graphics.EDGE_GRAB_PX)
    mid_v = (m.start_mm + m.end_mm) / 2
    hit = d.press(0.0, mid_v, o, PixelTransform(K, 0.0, 0.0))
    assert (hit.kind, hit.role, hit.target) == ("body", "move", "range")
    step = d.move(25.0, mid_v + 12.0)
    assert (step.du, step.dv) == (0.0, 12.0)
    step = d.release(-5.0, mid_v + 20.0)
    assert step.dv == pytest.approx(8.0) and step.total_dv == pytest.approx(20.0)


def test_lateral_scout_iso_handle_spans_its_column(planned):
    m = planned
    o = graphics.scout_overlays(m, "lateral", K, 380, 700)
    (iso,) = o.handles()
    assert (iso.name, iso.role, iso.span, iso.axis) == ("iso_handle", "move", "column", (1.0, 0.0))
    yi = m.iso_couch_y()  # the lateral scout's horizontal axis: height against the couch top
    assert hit_test_plane(o, K, yi + 8 / K, m.start_mm + 300.0).name == "iso_handle"
    assert hit_test_plane(o, K, yi + 12 / K, 0.0) is None


def test_monitor_roi_is_a_circle_in_axial_plane_coordinates(planned):
    m = CTModel(load_runtime("dev"), "ccta_heart_coverage_isocenter", 0, {}, {"heart_rate_bpm": [60, 60]})
    m.load_protocol("ccta")
    m.acquire_scout()
    m.on_clock(0, 5)
    m.set_monitor_z(-65.0)
    m.acquire_monitor_reference()
    o = graphics.monitor_overlays(m, m.monitor_image, 600, 600)
    assert o.find("roi") is None and o.find("hint") is not None
    m.set_roi(12.0, -40.0)  # monitoring-image mm: gantry x, posterior of the isocentre
    o = graphics.monitor_overlays(m, m.monitor_image, 600, 600)
    roi = o.find("roi")
    assert isinstance(roi, Circle) and (roi.cu, roi.cv) == (12.0, 40.0)  # v = -y: anterior up


def test_the_isocentre_label_follows_its_line_at_its_top_end(planned):
    """issue 34: the label rides on the line (beside it, at its top in the margin), wherever the table height puts it."""
    m = planned
    top, _ = m.table_limits()
    placed = []
    for h in (60.0, 200.0):
        o = graphics.scout_overlays(_with_height(m, h), "lateral", 0.7, 388, 708)
        label, line = o.find("iso_label"), o.find("iso_line")
        yi = m.iso_couch_y(h)
        assert line.u0 == line.u1 == pytest.approx(yi)
        assert abs(label.u - yi) * 0.7 == pytest.approx(graphics.LABEL_GAP_PX, abs=0.01)  # beside its line
        assert label.v > top and line.v1 == pytest.approx(label.v)  # above the image, the line reaching up to it
        placed.append(label.u - yi)
    assert placed[0] > 0 > placed[1]  # right of a line near the anterior side, left of one near the couch


def _with_height(m, h):
    class View:
        def __getattr__(self, name):
            return h if name == "table_height_mm" else getattr(m, name)

        def iso_couch_y(self, height=None):
            return m.iso_couch_y(h if height is None else height)
    return View()
