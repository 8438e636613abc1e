"""Spatial compound imaging (rendering.us_physics COMPOUND_*, rendering.us_image step 7): steered looks whose
speckle decorrelates with the steering (van Cittert-Zernike, Trahey et al. 1986) averaged after detection, so the
speckle's SD falls about as 1/sqrt(N) while a tissue's mean echo level and the capsule's contrast stay; off, the
frame is the single look it always was; same inputs, same bytes."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from rendering import us_image as U
from rendering import us_physics as P
from rendering.subjects import load_runtime

KIDNEY_VIEW = dict(azimuth_deg=-85.0, rotation_deg=5.0, tilt_deg=-15.0)


@pytest.fixture(scope="module")
def dev(subject_cache):
    return load_runtime("dev")


@pytest.fixture(scope="module")
def geometry(dev):
    k, j, i = np.nonzero(np.isin(dev.labels, [dev.label_id(n) for n in ("kidney_right_cortex",
                                                                          "kidney_right_medulla",
                                                                          "kidney_right_sinus")]))
    z = float(dev.origin_mm[2] + dev.spacing_mm[2] * k.mean())
    return U.ProbeGeometry.from_pose(dev, U.ProbePose(z_mm=z, **KIDNEY_VIEW))


@pytest.fixture(scope="module")
def beams(dev, geometry):
    return {n: U.acquire_beam(dev, geometry, U.Acquisition(compound=n)) for n in P.COMPOUND_LOOKS}


def _region(dev, beam, names, erode=4):
    """Samples of these labels, eroded (away from every boundary), at depths 30-110 mm (in the focal zone,
    above the receiver's noise)."""
    m = np.isin(beam.labels, [dev.label_id(n) for n in names])
    m = ndimage.binary_erosion(m, iterations=erode)
    d = beam.depths_mm[:, None]
    return m & (d > 30.0) & (d < 110.0)


def _speckle_sd_and_mean(db, mask):
    """SD of the echo level about its local mean (15 samples x 9 lines, ~5 mm: a rib shadow over some lines and
    the depth gain are image, not speckle), and the mean level."""
    db = db.astype(np.float64)
    res = db - ndimage.uniform_filter(db, (15, 9), mode="nearest")
    return float(res[mask].std()), float(db[mask].mean())


def test_looks_span_the_published_steering():
    assert P.compound_angles_deg(1) == (0.0,)
    for n in P.COMPOUND_LOOKS[1:]:
        a = P.compound_angles_deg(n)
        assert len(a) == n and a[0] == -P.COMPOUND_MAX_STEER_DEG and a[-1] == P.COMPOUND_MAX_STEER_DEG
        assert np.allclose(a, -np.array(a[::-1]))
    assert 3 <= max(P.COMPOUND_LOOKS) <= 9 and P.COMPOUND_MAX_STEER_DEG <= 20.0  # Entrekin et al. 2001
    with pytest.raises(ValueError):
        P.compound_angles_deg(4)
    assert all(p.compound == P.COMPOUND_DEFAULT_LOOKS > 1 for p in P.PRESETS.values())


def test_look_correlation_follows_the_aperture_overlap():
    c = P.look_field_correlation
    assert c(0.0, 2.5) == 1.0
    half = math.degrees(math.atan(0.5 / 2.5))  # the aperture moved by half its width (Trahey et al. 1986)
    assert c(half, 2.5) == pytest.approx(0.25)
    assert c(math.degrees(math.atan(1.0 / 2.5)), 2.5) == 0.0  # a whole aperture: no overlap
    steps = [c(a, 2.5) for a in np.linspace(0.0, 25.0, 26)]
    assert all(x >= y for x, y in zip(steps, steps[1:]))
    assert c(10.0, 4.0) < c(10.0, 2.5)  # a narrower aperture (higher f-number) decorrelates sooner


def test_off_is_the_single_frame(dev, geometry, beams):
    assert U.Acquisition().compound == 1
    assert np.array_equal(U.acquire_beam(dev, geometry, U.Acquisition()).db, beams[1].db)


def test_compounding_lowers_the_speckle_and_keeps_the_level(dev, beams):
    """Liver and renal cortex: the speckle's SD (about each depth's mean) falls with the looks (fully
    developed speckle on a log display: 5.6 dB; N decorrelated looks averaged in dB: 5.6 / sqrt(N); the
    scatterers' own strengths, the same in every look, keep part of it), the mean level stays within 1 dB (the
    looks are averaged in dB: a geometric mean)."""
    for names in (["liver"], ["kidney_right_cortex"], ["fat_visceral"]):
        mask = _region(dev, beams[1], names, erode=2)
        assert mask.sum() > 500, names
        sd = {n: _speckle_sd_and_mean(b.db, mask) for n, b in beams.items()}
        assert 4.5 < sd[1][0] < 7.0, (names, sd)  # about the 5.6 dB of fully developed speckle
        assert sd[3][0] < sd[1][0] / 1.35, (names, sd)  # sqrt(3) = 1.73 for wholly decorrelated speckle
        assert sd[5][0] < sd[3][0], (names, sd)
        for n in (3, 5):
            assert abs(sd[n][1] - sd[1][1]) < 1.0, (names, sd)


def test_the_capsule_contrast_stays(dev, beams):
    """Cortex against perirenal fat: the same step in mean level with the looks averaged (specular echoes kept,
    speckle averaged), so its contrast-to-speckle ratio rises."""
    cortex = _region(dev, beams[1], ["kidney_right_cortex"], erode=1)
    fat = _region(dev, beams[1], ["fat_visceral"], erode=1)
    assert cortex.sum() > 200 and fat.sum() > 200
    step = {n: float(b.db[fat].mean() - b.db[cortex].mean()) for n, b in beams.items()}
    assert step[1] > 3.0, step
    for n in (3, 5):
        assert abs(step[n] - step[1]) < 1.5, step


def test_same_inputs_same_bytes(dev, geometry, beams):
    U.clear_cache()
    again = U.acquire_beam(dev, geometry, U.Acquisition(compound=3))
    assert np.array_equal(again.db, beams[3].db)
    assert not np.array_equal(beams[3].db, beams[5].db)
