"""The visibility figure on the MR cardiac planning cards and the ultrasound cards (issue 33): boundaries at any
angle on the image (the LV's long-axis ends, the heart's borders, a kidney's poles and capsule on the live
ultrasound image) measured on the displayed images with the oracle's masks (runner.visibility drives the
console's own model; on ultrasound the reference plan to its final pose)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from scoring import visibility as vis

PX = 1.0
N = 161


def _tilted_box(angle_deg: float, contrast: float, end_contrast: float, sd: float | None, rng):
    """A plane image (z = 0, columns along x, rows down -y) holding a 60 x 20 mm box organ whose long axis
    lies `angle_deg` from x; its last 8 mm towards +axis are `end_contrast` over the background, the rest
    `contrast`. Gaussian noise of `sd` (None: noise-free, and no clean image is handed on)."""
    k = (np.arange(N) - (N - 1) / 2.0) * PX
    x, y = k[None, :] + 0.0 * k[:, None], -k[:, None] + 0.0 * k[None, :]
    pts = np.stack([x, y, np.zeros_like(x)], axis=-1)
    a = math.radians(angle_deg)
    axis = np.array([math.cos(a), math.sin(a), 0.0])
    across = np.array([-math.sin(a), math.cos(a), 0.0])
    s, t = pts @ axis, pts @ across
    organ = (np.abs(s) <= 30.0) & (np.abs(t) <= 10.0)
    clean = 100.0 + np.where(organ, np.where(s > 22.0, end_contrast, contrast), 0.0)
    grey = clean + (rng.normal(0.0, sd, clean.shape) if sd else 0.0)
    im = vis.PlaneImage("image", grey, clean if sd else None, None, pts, np.array([1.0, 0.0, 0.0]),
                        np.array([0.0, -1.0, 0.0]), (PX, PX))
    voxels = pts[organ]
    oracle = SimpleNamespace(organ_voxels_mm=lambda name: voxels)
    return im, organ, oracle, axis, across


@pytest.mark.parametrize("angle", [0.0, 30.0, 125.0, 270.0])
def test_oblique_boundary_is_measured_along_its_direction(angle):
    """The +axis end is the bright one (CNR 40 / 2), the -axis end and the sides are not (10 / 2): a figure
    measured on the wrong end or side would read 5; out-of-plane directions are not measured at all."""
    rng = np.random.default_rng(5)
    im, organ, oracle, axis, across = _tilted_box(angle, 10.0, 40.0, 2.0, rng)
    bounds = (vis.MRBoundary("far end", "box", tuple(axis)), vis.MRBoundary("near end", "box", tuple(-axis)),
              vis.MRBoundary("side", "box", tuple(across)), vis.MRBoundary("through", "box", (0.0, 0.0, 1.0)))
    ms = {m.structure: m for m in vis.oblique_measures("card", "sX", 0, oracle, [im], bounds, {("box", 0): organ})}
    assert set(ms) == {"far end", "near end", "side"}
    assert ms["far end"].cnr == pytest.approx(20.0, rel=0.15), ms["far end"]
    assert ms["near end"].cnr == pytest.approx(5.0, rel=0.2), ms["near end"]
    assert ms["side"].cnr < 12.0 and ms["side"].cnr > 3.0, ms["side"]  # 10 along most of it, 40 at one end
    assert all(abs(m.short_mm) <= 1.5 for m in ms.values())


def test_oblique_section_short_of_the_extreme_scores_zero():
    """The organ extends 15 mm beyond what the image cuts (a voxel off the plane): the boundary is not on it."""
    rng = np.random.default_rng(6)
    im, organ, oracle, axis, _ = _tilted_box(30.0, 30.0, 30.0, 2.0, rng)
    voxels = np.vstack([oracle.organ_voxels_mm("box"), 45.0 * axis + np.array([0.0, 0.0, 9.0])])
    far = SimpleNamespace(organ_voxels_mm=lambda name: voxels)
    (m,) = vis.oblique_measures("card", "sX", 0, far, [im], (vis.MRBoundary("far end", "box", tuple(axis)),),
                                {("box", 0): organ})
    assert m.short_mm == pytest.approx(15.0, abs=1.5) and m.cnr == 0.0 and m.section_cnr > 10.0
    assert vis.failures([m]) == [m]


def test_without_a_noise_free_image_the_noise_is_the_bands_own_sd():
    """Ultrasound: no noise-free image; the pooled SD of the pixels within each band is the noise (an edge
    along the pixel grid: an oblique one's staircase mixes a few pixels of the other side into each band)."""
    rng = np.random.default_rng(7)
    im, organ, oracle, axis, _ = _tilted_box(90.0, 24.0, 24.0, 8.0, rng)
    im = vis.PlaneImage(im.name, im.grey, None, np.ones(im.grey.shape, bool), im.points, im.col_axis, im.row_axis,
                        im.pixel_mm)
    (m,) = vis.oblique_measures("card", "sX", 0, oracle, [im], (vis.MRBoundary("end", "box", tuple(axis)),),
                                {("box", 0): organ})
    assert m.noise_sd_grey == pytest.approx(8.0, rel=0.1) and m.cnr == pytest.approx(3.0, rel=0.15), m


def test_a_shadow_over_some_columns_is_not_noise():
    """Half the columns darker by 60 grey on both sides of the edge (a rib shadow): the contrast falls to the
    columns' mean, the noise stays the speckle's SD about each column's own band mean."""
    rng = np.random.default_rng(9)
    im, organ, oracle, axis, _ = _tilted_box(90.0, 24.0, 24.0, 8.0, rng)
    grey = im.grey.copy()
    grey[:, : (N - 1) // 2] -= 60.0  # the box's left half
    im = vis.PlaneImage(im.name, grey, None, None, im.points, im.col_axis, im.row_axis, im.pixel_mm)
    (m,) = vis.oblique_measures("card", "sX", 0, oracle, [im], (vis.MRBoundary("end", "box", tuple(axis)),),
                                {("box", 0): organ})
    assert m.noise_sd_grey == pytest.approx(8.0, rel=0.1) and m.cnr == pytest.approx(3.0, rel=0.15), m


def test_bands_off_the_image_are_not_used():
    """A column whose outside band leaves the valid pixels (an ultrasound sector's edge) is skipped."""
    rng = np.random.default_rng(8)
    im, organ, oracle, axis, _ = _tilted_box(0.0, 24.0, 24.0, 2.0, rng)
    valid = np.ones(im.grey.shape, bool)
    valid[:, (N - 1) // 2 + 32:] = False  # the image ends 2 mm beyond the box's +x end
    im = vis.PlaneImage(im.name, im.grey, im.grey_clean, valid, im.points, im.col_axis, im.row_axis, im.pixel_mm)
    (m,) = vis.oblique_measures("card", "sX", 0, oracle, [im], (vis.MRBoundary("end", "box", tuple(axis)),),
                                {("box", 0): organ})
    assert m.cnr == 0.0 and m.width_mm == 0.0


def test_us_boundaries_lie_in_the_image_plane():
    axis = np.array([0.6, 0.0, 0.8])
    b = vis.us_boundaries(axis, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), "left")
    assert [x.structure for x in b] == ["left kidney upper pole", "left kidney lower pole", "left kidney near capsule",
                                        "left kidney far capsule"]
    far = np.array(b[3].direction)
    assert far == pytest.approx([0.0, 1.0, 0.0]) and np.array(b[2].direction) == pytest.approx(-far)


# The fixed samples of the fast lane (the cohort run is `medimageos tasks visibility --tasks <cards>`): the MR
# episodes issue 33's players read (s04 seed 2, s25 seed 0) and its ultrasound ones (s13 seed 1, s26 seed 2).
HEART_SAMPLE = (("s04", 2), ("s25", 0))
US_SAMPLE = (("s13", 1), ("s26", 2))
MR_CARDIAC_CARDS = ("L3_coarse_2ch", "L3_coarse_4ch", "L4_2ch", "L4_4ch", "L4_fine_2ch", "L4_fine_4ch",
                    "L4_heart_shim_box", "L4_long_axis_pair", "L5_fine_lax_from_scratch", "L5_sax_stack")
US_CARDS = ("us_kidney_acquisition_optimization_v1", "us_kidney_contact_vs_gain_v1", "us_kidney_long_axis_search_v1")
# Cards that miss the bound on the sample, and why (docs/visibility.md, "MR cardiac", "Ultrasound"): strict, so
# the test says when one starts to pass. Since the localizer became 3 stacks of 11 parallel slices (issue 33) a
# localizer slice cuts the LV near its apex on the sample, and generator 1.6.0's mitral annulus and closed leaflets
# make the mitral valve plane show wherever an image cuts it (before, LV blood ran into LA blood, edge CNR 0-2.9).
# What is left on MR is the heart's top on the shim card: the right ventricle's outflow running into the
# pulmonary artery, blood against blood.
KNOWN_SHORTFALLS: dict[str, str] = {
    "L4_heart_shim_box": ("s04 seed 2 superior border: RV outflow against pulmonary artery blood (0.9 on a "
                          "coronal localizer slice that cuts it 0.3 mm short)"),
}
# Ultrasound, with spatial compounding on (3 steered looks, the presets' default: rendering.us_physics): the speckle
# falls from about 19 to 14 grey (median over the cohort), the contrasts stay, and on the sample the lower pole
# against perirenal fat reads 2.1-3.2 (3.1-3.2 on s26 seed 2), the near capsule 1.2-2.2; the upper pole against
# spleen and under rib shadows 0.2-1.2 and the far capsule, behind which fat and muscle are about as dark as the
# cortex (0.5-17 grey of contrast), 0.0-1.1 stay far under 3: contrast-limited, not speckle-limited.
_US = ("contrast-limited with compounding on: upper pole against spleen and under rib shadows 0.2-1.2, far capsule "
       "0.0-1.1 (lower pole 2.1-3.2, near capsule 1.2-2.2)")
KNOWN_SHORTFALLS.update({c: _US for c in ("us_kidney_acquisition_optimization_v1", "us_kidney_contact_vs_gain_v1",
                                          "us_kidney_long_axis_search_v1")})


def _params(cards):
    return [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_SHORTFALLS[c], strict=True))
            if c in KNOWN_SHORTFALLS else c for c in cards]


@pytest.mark.parametrize("card", _params(MR_CARDIAC_CARDS))
def test_mr_cardiac_boundaries_visible(card, subject_cache):
    """Bound: the LV apex and the mitral valve plane (the shim card: the heart's six borders) show with
    CNR >= 3 on at least one image the card plans on (localizer, the cines its start state holds), as
    displayed, on the fixed sample."""
    from runner.visibility import MR_SHIM_CARDS, mr_cardiac_episode

    measures = [m for s, k in HEART_SAMPLE for m in mr_cardiac_episode(card, s, k)]
    names = ([b.structure for b in vis.HEART_BORDERS] if card in MR_SHIM_CARDS else
             ["LV apex", "mitral valve plane"])
    assert {(m.subject, m.seed, m.structure) for m in measures} == {(s, k, n) for s, k in HEART_SAMPLE for n in names}
    fails = vis.failures(measures)
    assert not fails, "under CNR 3 on every image:\n" + vis.failure_report(fails)


@pytest.mark.parametrize("card", _params(US_CARDS))
def test_us_kidney_boundaries_visible(card, subject_cache):
    """Bound: the examined kidney's poles and near / far capsule show with CNR >= 3 on the image at the
    reference's final pose, as displayed, on the fixed sample."""
    from runner.visibility import us_episode

    measures = [m for s, k in US_SAMPLE for m in us_episode(card, s, k)]
    assert {(m.subject, m.seed) for m in measures} == set(US_SAMPLE)
    assert {m.structure.split(" ", 1)[1] for m in measures} == {"kidney upper pole", "kidney lower pole",
                                                                 "kidney near capsule", "kidney far capsule"}
    fails = vis.failures(measures)
    assert not fails, "under CNR 3 on the image:\n" + vis.failure_report(fails)


def test_us_compounding_lowers_the_speckle_and_lifts_the_lower_pole(subject_cache, monkeypatch):
    """Spatial compounding (on in the presets) against the single look, on the same episode and pose: the
    speckle SD in the kidney's boundary bands falls by more than a quarter, the contrasts stay within 3 grey,
    and the lower pole against perirenal fat, 2.1 without, reaches the bound (docs/visibility.md, "Ultrasound")."""
    from dataclasses import replace

    from rendering import us_physics as P
    from runner.visibility import us_episode

    card, (subject, seed) = "us_kidney_long_axis_search_v1", ("s26", 2)
    on = {m.structure: m for m in us_episode(card, subject, seed)}
    monkeypatch.setattr(P, "PRESETS", {k: replace(p, compound=1) for k, p in P.PRESETS.items()})
    off = {m.structure: m for m in us_episode(card, subject, seed)}
    assert set(on) == set(off)
    for name in on:
        assert on[name].noise_sd_grey < 0.8 * off[name].noise_sd_grey, (name, on[name], off[name])
        assert abs(on[name].contrast_grey - off[name].contrast_grey) < 3.0, (name, on[name], off[name])
    lower = "left kidney lower pole"
    assert off[lower].cnr < vis.CNR_BOUND <= on[lower].cnr, (off[lower], on[lower])
