"""scoring.subject_oracle: the API scoring code relies on, and the console guard."""
from __future__ import annotations

import numpy as np
import pytest

from tests.rendering.subject_cache import session_cache


@pytest.fixture(scope="module")
def orc(tmp_path_factory):
    session_cache(tmp_path_factory)
    from scoring.subject_oracle import load_oracle
    return load_oracle("dev")


def test_masks_extents_and_voxel_z_agree(orc):
    rt = orc.runtime
    for name in ("lung_left", "lung_right", "lungs", "liver", "kidney_left", "kidney_right", "kidneys", "heart",
                 "bladder", "aorta_descending", "aorta", "spleen", "lv", "rv", "la", "ra"):
        m = orc.organ_mask(name)
        assert m.dtype == bool and m.shape == rt.labels.shape and m.any(), name
        z = orc.organ_voxel_z(name)
        assert z.size == m.sum()
        z0, z1 = orc.organ_z_extent(name)
        assert z0 == z.min() and z1 == z.max() and z0 < z1
    assert orc.organ_mask("lungs").sum() == orc.organ_mask("lung_left").sum() + orc.organ_mask("lung_right").sum()
    assert not (orc.organ_mask("liver") & orc.organ_mask("kidneys")).any()
    with pytest.raises(Exception, match="no organ"):
        orc.organ_mask("appendix")


def test_landmarks_planes_axis_and_body_centre(orc):
    for name in ("lung_apex_left", "lung_apex_right", "lung_base_left", "lung_base_right", "carina", "heart_apex",
                 "mitral_valve_centre", "aortic_valve_centre", "tricuspid_valve_centre", "liver_dome", "liver_tip",
                 "kidney_left_upper_pole", "kidney_left_lower_pole", "kidney_left_hilum", "bladder_top",
                 "bladder_bottom"):
        p = orc.landmarks[name]
        assert p.shape == (3,) and np.all(np.isfinite(p)), name
    base, apex = orc.lv_long_axis
    assert np.allclose(base, orc.landmarks["mitral_valve_centre"])
    assert set(orc.reference_planes) == {"2ch", "4ch", "3ch", "sax"}
    for p in orc.reference_planes.values():
        assert set(p) >= {"centre", "normal", "row"} and all(np.shape(v) == (3,) for v in p.values())
    z = orc.landmarks["carina"][2]
    cy = orc.body_centre_y(z)
    e = orc.body_extent(z)
    assert cy == pytest.approx((e["y_min"] + e["y_max"]) / 2) and abs(orc.body_centre_x(z)) < 5
    assert orc.vertebrae["T12"]["z_top"] > orc.vertebrae["L1"]["z_top"]
    lz = orc.organ_z_extent("liver")
    assert lz[0] == pytest.approx(orc.landmarks["liver_tip"][2]) and lz[1] == pytest.approx(orc.landmarks["liver_dome"][2])


def test_refuses_console_role(orc, monkeypatch):
    from scoring.subject_oracle import OracleAccessError, load_oracle
    monkeypatch.setenv("MEDIMAGEOS_ROLE", "console")
    with pytest.raises(OracleAccessError, match="console"):
        load_oracle("dev")
    monkeypatch.setenv("MEDIMAGEOS_ROLE", "scoring")
    assert load_oracle("dev").id == "dev"
