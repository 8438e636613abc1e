"""Anatomy sanity over the development subject and the 30-subject scoring cohort."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from tests.rendering.subject_cache import ALL_IDS

# published adult ranges (ml / mm), generous at the edges for a 2 mm phantom
VOLUME_ML = {"lungs": (2200, 7500), "liver": (900, 2600), "spleen": (80, 450), "kidney_left": (90, 260),
             "kidney_right": (90, 260), "heart": (250, 1000), "bladder": (100, 700), "lv_blood": (60, 220),
             "lv_myocardium": (60, 250)}
SOLID = ["liver", "spleen", "kidney_left", "kidney_right", "heart", "lv", "rv", "la", "aorta", "bladder",
         "pancreas", "trachea", "pulmonary_artery", "ivc", "svc", "oesophagus", "gallbladder"]


@pytest.fixture(scope="module")
def oracles(subject_cache):
    from scoring.subject_oracle import load_oracle
    return {sid: load_oracle(sid) for sid in ALL_IDS}


def _near(orc, point, organ, tol_mm=3.0) -> bool:
    """Is the point inside the organ or within tol of one of its voxels?"""
    rt = orc.runtime
    m = orc.organ_mask(organ)
    ijk = np.rint(rt.world_to_index(point)).astype(int)
    r = int(np.ceil(tol_mm / min(rt.spacing_mm)))
    i, j, k = ijk
    sub = m[max(k - r, 0):k + r + 1, max(j - r, 0):j + r + 1, max(i - r, 0):i + r + 1]
    return bool(sub.any())


@pytest.mark.parametrize("sid", ALL_IDS)
def test_volumes_and_sizes_in_adult_ranges(oracles, sid):
    orc = oracles[sid]
    for organ, (lo, hi) in VOLUME_ML.items():
        v = orc.organ_volume_ml(organ)
        assert lo <= v <= hi, f"{sid} {organ} volume {v:.0f} ml outside [{lo}, {hi}]"
    for side in ("left", "right"):
        k = orc.kidneys[side]
        assert 90 <= k["length_mm"] <= 130, f"{sid} kidney {side} length {k['length_mm']:.0f} mm"
        # measured from the mask along the construction axis
        P = orc.organ_voxels_mm(f"kidney_{side}")
        t = (P - np.asarray(k["centre"])) @ np.asarray(k["long_axis"])
        meas = t.max() - t.min() + 2.0
        assert abs(meas - k["length_mm"]) <= 6, f"{sid} kidney {side}: mask length {meas:.0f} vs {k['length_mm']:.0f}"
    zl = orc.organ_z_extent("lungs")
    assert 200 <= zl[1] - zl[0] <= 360, f"{sid} lung craniocaudal extent {zl[1] - zl[0]:.0f} mm"
    zl = orc.organ_z_extent("liver")
    assert 120 <= zl[1] - zl[0] <= 230, f"{sid} liver craniocaudal extent {zl[1] - zl[0]:.0f} mm"


@pytest.mark.parametrize("sid", ALL_IDS)
def test_lungs_above_diaphragm_and_kidneys_retroperitoneal(oracles, sid):
    orc = oracles[sid]
    lab = orc.runtime.labels
    z = orc.runtime.world_z()
    lung = orc.organ_mask("lungs")
    for organ in ("liver", "spleen", "kidneys", "stomach"):
        m = orc.organ_mask(organ)
        both = lung.any(axis=0) & m.any(axis=0)
        if not both.any():
            continue
        zlow_lung = np.where(lung, z[:, None, None], np.inf).min(axis=0)
        ztop_org = np.where(m, z[:, None, None], -np.inf).max(axis=0)
        bad = both & (zlow_lung <= ztop_org)
        assert bad.sum() <= 0.01 * both.sum(), f"{sid}: lung below {organ} in {bad.sum()} columns"
    for side, sgn in (("left", 1), ("right", -1)):
        c = orc.organ_centroid(f"kidney_{side}")
        spine = orc.vertebrae["L1"]["body_centre"]
        assert sgn * c[0] > 40, f"{sid} kidney {side} not lateral to the spine: x={c[0]:.0f}"
        assert c[1] > spine[1] - 25, f"{sid} kidney {side} not retroperitoneal (y={c[1]:.0f}, spine {spine[1]:.0f})"
        liver_c = orc.organ_centroid("liver")
        assert c[1] > liver_c[1], f"{sid} kidney {side} anterior to the liver centroid"
    assert lab.dtype == np.uint8


@pytest.mark.parametrize("sid", ALL_IDS)
def test_no_overlaps_and_no_fragments(oracles, sid):
    orc = oracles[sid]
    ret = orc.meta["stats"]["organ_retention"]
    for organ in SOLID:
        assert ret[organ] >= 0.9, f"{sid}: {organ} lost {1 - ret[organ]:.0%} of its voxels to later structures"
    for organ in ("liver", "spleen", "kidney_left", "kidney_right", "heart", "bladder", "lung_left", "lung_right",
                  "aorta", "trachea"):
        lab_cc, n = ndi.label(orc.organ_mask(organ))
        sizes = np.bincount(lab_cc.ravel())[1:]
        assert n >= 1 and sizes.max() >= 0.98 * sizes.sum(), f"{sid}: {organ} is fragmented ({n} parts)"


@pytest.mark.parametrize("sid", ALL_IDS)
def test_landmarks_inside_their_organs(oracles, sid):
    orc = oracles[sid]
    lm = orc.landmarks
    expect = {"mitral_valve_centre": ["lv_blood", "la"], "aortic_valve_centre": ["lv_blood", "aorta"],
              "tricuspid_valve_centre": ["ra", "rv"], "carina": ["trachea"], "heart_apex": ["lv_myocardium"],
              "lv_centre": ["lv_blood"], "liver_dome": ["liver"], "liver_tip": ["liver"],
              "lung_apex_left": ["lung_left"], "lung_apex_right": ["lung_right"], "lung_base_left": ["lung_left"],
              "lung_base_right": ["lung_right"], "bladder_centre": ["bladder"], "spleen_centre": ["spleen"],
              "aortic_arch_top": ["aorta"], "aorta_descending_mid": ["aorta_descending"]}
    for side in ("left", "right"):
        for p in ("upper_pole", "lower_pole", "hilum", "centre"):
            expect[f"kidney_{side}_{p}"] = [f"kidney_{side}"]
    for name, organs in expect.items():
        assert name in lm, f"{sid}: landmark {name} missing"
        assert any(_near(orc, lm[name], o) for o in organs), f"{sid}: {name} at {lm[name].round(1)} not in {organs}"
    # left kidney usually higher, lung apex above carina above heart apex, liver dome below the lung apex
    assert lm["carina"][2] < lm["lung_apex_left"][2]
    assert lm["heart_apex"][2] < lm["mitral_valve_centre"][2] < lm["carina"][2]
    assert lm["liver_tip"][2] < lm["liver_dome"][2] < lm["carina"][2]
    v = orc.vertebrae
    tops = [v[n]["z_top"] for n in ["C5", "C6", "C7"] + [f"T{i}" for i in range(1, 13)] + [f"L{i}" for i in range(1, 6)]]
    assert all(a > b for a, b in zip(tops, tops[1:])), "vertebrae not ordered head to feet"


def test_left_kidney_usually_higher(oracles):
    higher = [orc.landmarks["kidney_left_upper_pole"][2] > orc.landmarks["kidney_right_upper_pole"][2]
              for sid, orc in oracles.items() if sid != "dev"]
    assert np.mean(higher) >= 0.7, f"left kidney higher in only {np.mean(higher):.0%} of the cohort"


@pytest.mark.parametrize("sid", ALL_IDS)
def test_reference_planes_consistent(oracles, sid):
    orc = oracles[sid]
    base, apex = orc.lv_long_axis
    d = (apex - base) / np.linalg.norm(apex - base)
    assert 70 <= np.linalg.norm(apex - base) <= 110, "LV long axis length"
    planes = orc.reference_planes
    assert set(planes) >= {"2ch", "4ch", "3ch", "sax"}
    for name, p in planes.items():
        n, r, c = p["normal"], p["row"], p["col"]
        assert abs(np.linalg.norm(n) - 1) < 1e-9 and abs(np.linalg.norm(r) - 1) < 1e-9
        assert abs(n @ r) < 1e-9 and abs(np.linalg.norm(c) - 1) < 1e-9
    for name in ("2ch", "4ch", "3ch"):
        p = planes[name]
        for pt in (base, apex):
            assert abs(p["normal"] @ (pt - p["centre"])) < 1e-6, f"{name} does not contain the LV long axis"
    assert abs(planes["3ch"]["normal"] @ (orc.landmarks["aortic_valve_centre"] - base)) < 1e-6
    assert abs(abs(planes["sax"]["normal"] @ d) - 1) < 1e-9, "SAX not perpendicular to the long axis"
    assert abs(planes["2ch"]["normal"] @ planes["4ch"]["normal"]) < 0.2
    # clinical content: 4ch cuts all four chambers, 2ch cuts LV and LA but not the RV
    pts = {k: orc.organ_voxels_mm(k) for k in ("lv_blood", "rv", "la", "ra")}

    def cut(plane, organ):
        return int((np.abs((pts[organ] - plane["centre"]) @ plane["normal"]) < 1.5).sum())
    for organ in ("lv_blood", "rv", "la", "ra"):
        assert cut(planes["4ch"], organ) > 20, f"4ch misses {organ}"
    assert cut(planes["2ch"], "lv_blood") > 50 and cut(planes["2ch"], "la") > 10
    assert cut(planes["2ch"], "rv") < 0.02 * len(pts["rv"]), "2ch cuts the RV"


@pytest.mark.parametrize("sid", ALL_IDS)
def test_body_centre_inside_body(oracles, sid):
    orc = oracles[sid]
    for organ in ("lungs", "liver", "kidneys", "heart"):
        z0, z1 = orc.organ_z_extent(organ)
        zm = (z0 + z1) / 2
        e = orc.body_extent(zm)
        cy = orc.body_centre_y(zm)
        assert e["y_min"] < cy < e["y_max"] and abs(orc.body_centre_x(zm)) < 10
        assert -200 < cy < -60     # table top at y = 0, supine body at y < 0


@pytest.mark.parametrize("sid", ALL_IDS)
def test_mitral_valve_closes_the_orifice_at_the_valve_plane(oracles, sid):
    """The atrioventricular junction (generator 1.6.0): on every line parallel to the LV long axis through the
    mitral orifice, LA blood meets LV blood only across the closed leaflets (no blood-to-blood step), the
    fibrous annulus rings the orifice in the valve plane (~30 mm across), and no LV voxel lies on the atrial
    side of the annulus plane within it (the plane the mitral valve plane's CNR is measured on)."""
    orc = oracles[sid]
    rt, lab = orc.runtime, orc.runtime.labels
    hf = orc.meta["heart_frame"]
    d, e_s, e_n = (np.asarray(hf[k], float) for k in ("long_axis", "septal", "four_chamber_normal"))
    mv = np.asarray(orc.landmarks["mitral_valve_centre"], float)
    r_mv = float(hf["mv_radius_mm"])
    ids = {n: rt.label_id(n) for n in ("la_blood", "lv_blood", "mitral_valve", "lv_myocardium")}

    def label_at(p):
        i, j, k = np.rint(rt.world_to_index(p)).astype(int)
        return int(lab[k, j, i])

    def cube_has_valve(p):  # the 8 voxels an image's (trilinear) sample at p reads
        lo_ = np.floor(rt.world_to_index(p)).astype(int)
        return bool((lab[lo_[2]:lo_[2] + 2, lo_[1]:lo_[1] + 2, lo_[0]:lo_[0] + 2] == ids["mitral_valve"]).any())

    for rho in (0.0, 0.4 * r_mv, 0.75 * r_mv):
        for th in np.deg2rad(np.arange(0, 360, 45)):
            w = np.cos(th) * e_s + np.sin(th) * e_n
            us = np.arange(-10.0, 16.0, 0.5)
            seq = [label_at(mv + rho * w + u * d) for u in us]
            # the leaflets are one voxel thick: a line may cross them diagonally between voxel centres, but
            # an image sampling there reads them
            for u0, a, b in zip(us, seq, seq[1:]):
                if (a, b) == (ids["la_blood"], ids["lv_blood"]):
                    assert cube_has_valve(mv + rho * w + (u0 + 0.25) * d), \
                        f"{sid}: LA blood runs into LV blood at r {rho:.0f} mm, {np.rad2deg(th):.0f} deg"
            assert any(cube_has_valve(mv + rho * w + u * d) for u in us), \
                f"{sid}: no leaflet across the orifice at r {rho:.0f} mm, {np.rad2deg(th):.0f} deg"
    # The annulus all round, except where a posterior-mediastinal structure painted before the heart holds
    # its place: the left main bronchus (s21, s26) and the descending aorta (s28) run through the valve ring
    # of a few subjects whose heart lies far back (a placement conflict of generator <= 1.6.0, docs/visibility.md
    # "MR cardiac"); at most 3 of the 12 directions.
    behind = {rt.label_id(n) for n in ("airway_wall", "bronchus_left", "bronchus_right", "trachea",
                                       "aorta_descending", "oesophagus")}
    missing = []
    for th in np.deg2rad(np.arange(0, 360, 30)):
        w = np.cos(th) * e_s + np.sin(th) * e_n
        ring = [label_at(mv + r * w) for r in np.arange(r_mv - 1.0, r_mv + 4.0, 0.5)]
        if ids["mitral_valve"] not in ring:
            assert set(ring) & behind, f"{sid}: no annulus at {np.rad2deg(th):.0f} deg ({sorted(set(ring))})"
            missing.append(round(float(np.rad2deg(th))))
    assert len(missing) <= 3, f"{sid}: the annulus is missing at {missing} deg"
    assert 26.0 <= 2 * r_mv + 3.0 <= 36.0, f"{sid}: annulus {2 * r_mv + 3.0:.0f} mm across"
    P = np.concatenate([orc.organ_voxels_mm("lv")])
    r_ = P - mv
    u = r_ @ d
    across = np.linalg.norm(r_ - u[:, None] * d, axis=1)
    assert not np.any((across <= r_mv + 1.0) & (u < -2.0)), f"{sid}: LV voxels on the atrial side of the valve"
