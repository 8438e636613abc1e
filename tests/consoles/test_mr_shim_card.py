"""The shim box (adjust volume) on the MR parameter card, without Qt (issue 34): its centre (scanner-frame mm,
as the Position fields) and size (mm along the group's read, phase and slice axes) are card fields with ranges;
typed values move and size the box the grips draw; out-of-range values are refused with the words every field
uses and change nothing; a localizer has no shim fields to edit."""
from __future__ import annotations

import numpy as np
import pytest

from consoles.mr.model import CARD, PARAM, ConsoleActionError, MRModel
from consoles.mr.param_card import SHIM_CENTRE, SHIM_FIELDS, SHIM_SIZE
from rendering.geometry import PlanePose
from rendering.subjects import load_runtime


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, protocol: str = "cine_sax", open_row: int = 2, isocentre: tuple = (0.0, 0.0, 0.0)) -> MRModel:
    q = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
         {"protocol": protocol, "params": {"matrix": 64}}]
    m = MRModel(rt, "mr_shim_card_test", 0, {"queue": q, "open": open_row})
    m.isocentre_mm = tuple(float(c) for c in isocentre)
    return m


def _box(m: MRModel) -> tuple[np.ndarray, np.ndarray]:
    b = m.open_row.params.shim_box()
    return np.asarray(b["centre"], float), np.asarray(b["size_mm"], float)


def test_shim_fields_are_on_the_geometry_tab_with_ranges():
    assert all(n in CARD["Geometry"] for n in SHIM_FIELDS)
    assert [(PARAM[n].lo, PARAM[n].hi, PARAM[n].unit) for n in SHIM_SIZE] == [(10.0, 500.0, "mm")] * 3
    # the centre's ranges are the Position fields' (the same scanner frame)
    for shim, pos in zip(SHIM_CENTRE, ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")):
        assert (PARAM[shim].lo, PARAM[shim].hi) == (PARAM[pos].lo, PARAM[pos].hi)


def test_fields_read_the_box_that_follows_the_slab(rt):
    m = _model(rt, isocentre=(12.0, -7.0, 30.0))
    centre, size = _box(m)
    assert m.open_row.params.shim_box()["follows_slab"]
    assert [m.open_value(n) for n in SHIM_CENTRE] == pytest.approx(list(centre - np.array([12.0, -7.0, 30.0])))
    assert [m.open_value(n) for n in SHIM_SIZE] == pytest.approx(list(size))
    fields = {f["name"]: f for f in m.card()["Geometry"]}
    assert fields["shim_read_mm"]["value"] == pytest.approx(size[0], abs=0.05)
    assert fields["shim_read_mm"]["enabled"]


def test_typed_centre_and_size_move_the_box_and_its_grips(rt):
    m = _model(rt, isocentre=(12.0, -7.0, 30.0))
    c0, s0 = _box(m)
    display = PlanePose.coronal(tuple(c0))
    before = {g.name: (g.u, g.v) for g in m.grips(display) if g.name.startswith("shim_")}
    m.set_param("shim_fh_mm", 55.5)
    m.set_param("shim_lr_mm", -20.0)
    m.set_param("shim_phase_mm", 150.0)
    c1, s1 = _box(m)
    assert c1 == pytest.approx([-20.0 + 12.0, c0[1], 55.5 + 30.0])  # scanner frame -> subject mm
    assert s1 == pytest.approx([s0[0], 150.0, s0[2]])  # the other sizes kept (the slab's)
    assert m.open_value("shim_fh_mm") == pytest.approx(55.5)
    assert m.open_value("shim_phase_mm") == pytest.approx(150.0)
    after = {g.name: (g.u, g.v) for g in m.grips(display) if g.name.startswith("shim_")}
    # the box's centre grip moved with the box: down/up by the F/H change on a coronal display (v = head)
    dv = after["shim_centre"][1] - before["shim_centre"][1]
    assert dv == pytest.approx((c1 - c0) @ np.asarray(display.v), abs=1e-6)
    assert [e["event"] for e in m.events[-3:]] == ["shim_box_moved", "shim_box_moved", "shim_box_changed"]


@pytest.mark.parametrize("name,value,words", [
    ("shim_read_mm", 5.0, "Shim size read: 5.0 mm is outside 10.0-500.0 mm; not applied"),
    ("shim_slice_mm", 600.0, "Shim size slice: 600.0 mm is outside 10.0-500.0 mm; not applied"),
    ("shim_fh_mm", -1200.0, "Shim centre F/H: -1200.0 mm is outside -1000.0 to 1000.0 mm; not applied"),
])
def test_out_of_range_is_refused_and_changes_nothing(rt, name, value, words):
    m = _model(rt)
    before = m.open_row.params.shim_box()
    with pytest.raises(ConsoleActionError, match=words.replace(".", r"\.")):
        m.set_param(name, value)
    assert m.open_row.params.shim_box() == before


def test_a_localizer_or_an_acquired_row_refuses_the_shim_fields(rt):
    q = [{"protocol": "localizer_3plane"}, {"protocol": "cine_sax"}]
    m = MRModel(rt, "mr_shim_card_test", 0, {"queue": q, "open": 1})
    assert not PARAM["shim_read_mm"].enabled(m)
    with pytest.raises(ConsoleActionError, match="no shim box"):
        m.set_param("shim_read_mm", 100.0)
    q = [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_sax", "status": "done"}]
    done = MRModel(rt, "mr_shim_card_test", 0, {"queue": q, "open": 2})
    with pytest.raises(ConsoleActionError, match="acquired"):
        done.set_param("shim_lr_mm", 0.0)
