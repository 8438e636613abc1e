"""A change of a row's main orientation keeps the plane where it is (issue 34): the tilts are converted to the new
base and the in-plane rotation keeps the FOV's axes, so slice group, FOV rectangle and centre are unchanged, and
the status line says what the angles now read (before, the tilt numbers were kept and applied to the new axes, so
the plane jumped with no message). Without Qt."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from consoles.mr.model import MRModel
from consoles.mr.param_card import tilts_in_base
from consoles.mr.row_params import normal_from_tilts
from rendering.subjects import load_runtime


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _corners(m: MRModel) -> np.ndarray:
    """The slab's FOV rectangle at its centre: the plane, its centre and its in-plane axes in one (4, 3) array
    (sorted, so a group that is the same plane seen from the other side compares equal)."""
    p = m.open_row.params
    pose = p.pose()
    c, u, v = np.asarray(pose.centre), np.asarray(pose.u), np.asarray(pose.v)
    pts = [c + su * p.fov_read_mm / 2 * u + sv * p.fov_phase_mm / 2 * v for su in (-1, 1) for sv in (-1, 1)]
    return np.asarray(sorted(tuple(np.round(x, 6)) for x in pts))


@pytest.mark.parametrize("start,new", [(s, n) for s, n in itertools.permutations("TCS", 2)])
def test_main_orientation_change_keeps_the_plane(rt, start, new):
    q = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
         {"protocol": "t2_haste_cor", "params": {"matrix": 64, "main": start, "tilt_a_deg": 23.0,
                                                  "tilt_b_deg": -11.0, "inplane_deg": 17.0}}]
    m = MRModel(rt, "mr_main_test", 0, {"queue": q, "open": 2})
    before, normal = _corners(m), m.open_row.params.normal()
    m.set_param("main", new)
    p = m.open_row.params
    assert p.main == new
    assert abs(float(np.dot(p.normal(), normal))) == pytest.approx(1.0, abs=1e-6)  # the same plane
    assert _corners(m) == pytest.approx(before, abs=1e-3)  # the same FOV rectangle and centre
    assert -90 <= p.tilt_a_deg <= 90 and -90 <= p.tilt_b_deg <= 90
    assert f"Tilt 1 {p.tilt_a_deg:.1f}" in m.message and "kept" in m.message
    assert m.events[-1]["event"] == "geometry_changed"


def test_tilts_in_base_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        for main in "TCS":
            a, b = tilts_in_base(n, main)
            assert abs(float(np.dot(normal_from_tilts(main, a, b), n))) == pytest.approx(1.0, abs=1e-6)
