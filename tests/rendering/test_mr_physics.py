"""MR signal equations and per-label LUTs against hand computations and physics.md (no display)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rendering import mr_physics as mp
from rendering.subjects.labels import LABEL_NAMES, L
from rendering.subjects.tissues import default_table, mr_flowing_blood_mask


@pytest.fixture(scope="module")
def table():
    return default_table()


def test_bssfp_matches_the_physics_md_formula_by_hand():
    # blood at 1.5 T (1550/250 ms), TR 3, TE 1.5, flip 60, PD 0.9
    e1, e2 = math.exp(-3 / 1550), math.exp(-3 / 250)
    a = math.radians(60)
    want = 0.9 * math.sin(a) * (1 - e1) / (1 - (e1 - e2) * math.cos(a) - e1 * e2) * math.exp(-1.5 / 250)
    assert mp.bssfp_signal(0.9, 1550.0, 250.0, 3.0, 1.5, 60.0) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(0.169, abs=0.002)  # the figure the image tests rely on


def test_spoiled_gre_peaks_at_the_ernst_angle_and_spin_echo_by_hand():
    t1, tr = 586.0, 150.0
    flips = np.linspace(1, 90, 891)
    s = mp.spoiled_gre_signal(1.0, t1, 1e9, tr, 0.0, flips)
    ernst = math.degrees(math.acos(math.exp(-tr / t1)))
    assert flips[int(np.argmax(s))] == pytest.approx(ernst, abs=0.2)
    assert mp.spin_echo_signal(0.8, 586.0, 46.0, 500.0, 15.0) == pytest.approx(
        0.8 * (1 - math.exp(-500 / 586)) * math.exp(-15 / 46), rel=1e-12)


def test_inversion_nulls_a_tissue_at_ti_t1_ln2(table):
    # HASTE is fully relaxed before its single inversion: Mz(TI) = 1 - 2 exp(-TI/T1) = 0 at TI = T1 ln 2
    fat = L["fat_subcutaneous"]
    t1_fat = float(table.mr_t1_15[fat])
    seq = mp.SequenceParams("haste", tr_ms=2000.0, te_ms=60.0, ti_ms=t1_fat * math.log(2))
    lut = mp.signal_lut(table, seq, 1.5)
    assert lut[fat] < 1e-6
    assert lut[L["liver"]] > 0.05
    stir = mp.signal_lut(table, mp.PRESETS["stir_tse"], 1.5)
    assert stir[fat] < 0.1 * stir[L["liver"]]  # the preset's TI ~240 ms suppresses fat


def test_lut_equals_the_per_label_equation_at_each_field(table):
    seq = mp.PRESETS["t1_spoiled_gre"]
    for field, t1s, t2s in ((1.5, table.mr_t1_15, table.mr_t2_15), (3.0, table.mr_t1_30, table.mr_t2_30)):
        lut = mp.signal_lut(table, seq, field)
        assert lut.dtype == np.float32 and lut.shape == (table.n_labels,)
        for lab in (L["liver"], L["fat_subcutaneous"], L["bladder"], L["muscle"]):
            want = mp.spoiled_gre_signal(float(table.mr_pd[lab]), float(t1s[lab]), float(t2s[lab]) / 2,
                                         seq.tr_ms, seq.te_ms, seq.flip_deg)
            assert lut[lab] == pytest.approx(want, rel=1e-6)
    assert mp.relaxation(table, 3.0).t1_ms[L["liver"]] == pytest.approx(809.0)
    assert mp.relaxation(table, 1.5).t1_ms[L["liver"]] == pytest.approx(586.0)


@pytest.mark.parametrize("name,t1_15,t2_15,t1_30,t2_30", [
    # physics.md, MR: "T1/T2 (ms) at 3 T ... At 1.5 T ..."
    ("liver", 586, 46, 809, 34), ("muscle", 856, 27, 898, 29), ("fat_subcutaneous", 343, 58, 382, 68),
    ("lv_blood", 1550, 250, 1650, 150), ("kidney_left_cortex", 966, 87, 1142, 76),
    ("kidney_left_medulla", 1412, 85, 1545, 81), ("spleen", 1057, 79, 1328, 61), ("lv_myocardium", 1030, 52, 1189, 46),
])
def test_tissue_table_holds_the_physics_md_relaxation_times(table, name, t1_15, t2_15, t1_30, t2_30):
    lab = L[name]
    assert (table.mr_t1_15[lab], table.mr_t2_15[lab], table.mr_t1_30[lab], table.mr_t2_30[lab]) == (
        t1_15, t2_15, t1_30, t2_30)


def test_flowing_blood_is_black_on_spin_echo_and_bright_on_bssfp(table):
    flowing = mr_flowing_blood_mask(LABEL_NAMES, table.n_labels)
    assert flowing[L["lv_blood"]] and flowing[L["aorta_descending"]] and flowing[L["portal_vein"]]
    assert not flowing[L["lv_myocardium"]] and not flowing[L["bladder"]] and not flowing[L["air"]]
    haste = mp.signal_lut(table, mp.PRESETS["t2_haste"], 1.5)
    ssfp = mp.signal_lut(table, mp.PRESETS["cine_bssfp"], 1.5)
    assert haste[L["lv_blood"]] < 0.5 * haste[L["lv_myocardium"]]
    assert ssfp[L["lv_blood"]] > 2.0 * ssfp[L["lv_myocardium"]]


def test_bssfp_offresonance_banding_factor():
    t2, tr = 250.0, 3.0
    e2 = math.exp(-tr / t2)
    assert mp.bssfp_offres_factor(0.0, tr, t2) == pytest.approx(1.0)
    # phi = pi at df = 1 / (2 TR): the dark band
    assert mp.bssfp_offres_factor(1000.0 / (2 * tr), tr, t2) == pytest.approx((1 - e2) / (1 + e2))
    assert mp.bssfp_offres_factor(1000.0 / (2 * tr), tr, t2) < 0.02


def test_sequence_parameters_are_validated():
    with pytest.raises(ValueError):
        mp.SequenceParams("flash3d", tr_ms=5.0, te_ms=2.0)
    with pytest.raises(ValueError):
        mp.SequenceParams("spoiled_gre", tr_ms=5.0, te_ms=6.0)
    with pytest.raises(ValueError):
        mp.SequenceParams("spin_echo", tr_ms=500.0, te_ms=15.0, ti_ms=-1.0)
    assert mp.SequenceParams("haste", tr_ms=1000.0, te_ms=90.0).te_ms == 90.0  # single shot: TE may exceed TR
