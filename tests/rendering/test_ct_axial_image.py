"""Axial CT images (issue 33): partial-volume edges formed from the interpolated HU volume, never from the nearest
label (no 2 mm voxel staircases), and breathing moves organs, not bones, on the review images as on the scouts."""
from __future__ import annotations

import numpy as np
import pytest

from rendering import ct_physics

PX = 2.0  # the subject grid's voxel (mm)


# ---- the formation itself, on a synthetic oblique edge ---------------------------------------------------------
def _oblique_edge_labels(angle_deg: float, n: int = 64, nz: int = 6) -> np.ndarray:
    """uint8 (nz, n, n): label 1 below a straight edge at `angle_deg` to the columns, rasterized on the voxel grid
    nearest-neighbour (each voxel centre inside or not), the staircase a label volume holds."""
    y, x = np.mgrid[0:n, 0:n].astype(float)
    inside = y < np.tan(np.deg2rad(angle_deg)) * (x - n / 2) + n / 2 + 0.3
    return np.repeat(inside[None].astype(np.uint8), nz, axis=0)


def _edge_crossings(img: np.ndarray, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the row (fractional, linear between rows as the viewport interpolates) where the edge crosses
    `half`."""
    cols, pos = [], []
    for c in range(12, img.shape[1] - 12):
        col = img[:, c]
        i = np.nonzero((col[:-1] >= half) & (col[1:] < half))[0]
        if len(i) == 1:
            i = int(i[0])
            cols.append(c)
            pos.append(i + (col[i] - half) / (col[i] - col[i + 1]))
    assert len(cols) > 30
    return np.asarray(cols, float), np.asarray(pos)


def _edge_residuals_mm(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The edge's half-way crossings minus a straight line fitted through them: its deviation from straight, mm."""
    cols, pos = _edge_crossings(img, (lo + hi) / 2.0)
    return (pos - np.polyval(np.polyfit(cols, pos, 1), cols)) * PX


@pytest.mark.parametrize("angle", [15.0, 25.0, 35.0])
def test_an_oblique_edge_has_partial_volume_and_is_not_placed_on_the_voxel_grid(angle):
    labels = _oblique_edge_labels(angle)
    lut = np.array([0.0, 100.0], np.float32)
    slab = ct_physics.slab_mean_hu(labels, lut, 4.0, 9.0, 0.0, PX, -1000.0)  # a 5 mm slice inside the volume
    img = ct_physics.axial_psf(slab[None], (PX, PX))[0]
    nearest = lut[labels[3]]  # the image as the nearest label gave it before (issue 33)
    # partial volume: across the edge the image passes through values between the two tissues, on every column
    between = ((img > 5.0) & (img < 95.0)).sum(axis=0)[12:-12]
    assert between.min() >= 1 and ((nearest > 5.0) & (nearest < 95.0)).sum() == 0
    r, rn = _edge_residuals_mm(img, 0.0, 100.0), _edge_residuals_mm(nearest, 0.0, 100.0)
    # and it wobbles less about the straight edge (the staircase's corners are rounded). Not gone: a 2 mm label
    # grid holds no sub-voxel position of a surface parallel to z, so about 3/4 of the wobble remains (issue 33)
    assert np.sqrt(np.mean(r ** 2)) < 0.9 * np.sqrt(np.mean(rn ** 2))
    assert np.abs(r).max() < 0.9 * np.abs(rn).max()


def test_slice_profile_is_the_mean_of_the_linearly_interpolated_planes():
    # weights sum to 1, a slab between two planes weighs them by distance, a thin slice is the interpolated plane
    for z0, z1 in ((3.0, 8.0), (0.4, 1.15), (5.3, 5.3), (-3.0, 2.0)):
        k0, w, out = ct_physics.slice_profile_weights(z0, z1, 0.0, PX, 10)
        assert w.sum() + out == pytest.approx(1.0)
        zs = np.linspace(z0, z1, 20001) if z1 > z0 else np.array([z0])
        # numerically: the mean over the slab of the interpolated index weights
        ref = np.zeros(10)
        for z in zs:
            k = int(np.floor(z / PX))
            f = z / PX - k
            for kk, ww in ((k, 1 - f), (k + 1, f)):
                if 0 <= kk < 10:
                    ref[kk] += ww / len(zs)
        got = np.zeros(10)
        got[k0:k0 + len(w)] = w
        assert np.allclose(got, ref, atol=1e-4), (z0, z1, got, ref)
    assert ct_physics.slice_profile_weights(-10.0, -5.0, 0.0, PX, 10)[2] == pytest.approx(1.0)  # beyond: outside


def test_kernel_psf_follows_the_published_mtf50():
    # the Gaussian PSF's MTF is 0.5 at the stated 50 % frequency
    s, f = ct_physics.KERNEL_PSF_SIGMA_MM, ct_physics.KERNEL_MTF50_LP_PER_MM
    assert np.exp(-2.0 * (np.pi * s * f) ** 2) == pytest.approx(0.5)
    taps = ct_physics._inplane_taps(PX)
    assert taps.sum() == pytest.approx(1.0) and np.allclose(taps, taps[::-1])
    # the pixel's area mean of the interpolated image (1/4 pixel^2) and the PSF's variance, summed
    var = float((taps * (np.arange(len(taps)) - len(taps) // 2) ** 2).sum())
    assert var == pytest.approx(0.25 + (s / PX) ** 2)


# ---- on a subject, through the console ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rt():
    from rendering.subjects import load_runtime

    return load_runtime("dev")


def _model(rt, breath_mm: float):
    from consoles.ct.model import CTModel

    m = CTModel(rt, "axial_breath_test", 0, perturbations={"breath_hold_mm": [breath_mm, breath_mm]})
    assert m.breath_hold_mm == breath_mm
    return m


def _table_rows_showing(m, label_names: list[str], zt: np.ndarray) -> np.ndarray:
    """Which table slabs (5 mm, centred on zt) of the noise-free axial images show these labels: the images
    change when their tissue becomes soft tissue (40 HU)."""
    ids = [m.subject.label_id(n) for n in label_names]
    lut = m._hu_lut.copy()
    lut[ids] = 40.0
    rows = []
    for z in zt:
        a = m.axial_hu(z + 2.5, z - 2.5)
        b = m.axial_hu(z + 2.5, z - 2.5, lut)
        rows.append(np.abs(a - b).max() > 1.0)
    return np.asarray(rows)


def test_breathing_moves_the_liver_not_the_vertebrae_on_axial_images(rt):
    deep, shallow = _model(rt, -12.0), _model(rt, 12.0)
    assert deep.patient_shift_mm == shallow.patient_shift_mm  # the same episode but for the breath-hold
    zt = np.arange(float(deep.table_from_subject_z(rt.world_z()[-1])), float(deep.table_from_subject_z(
        rt.world_z()[0])), -1.0)
    for vertebra in ("vertebra_T12", "vertebra_L1", "vertebra_L3"):
        a, b = _table_rows_showing(deep, [vertebra], zt), _table_rows_showing(shallow, [vertebra], zt)
        assert a.any() and np.array_equal(a, b), vertebra
    # the vertebral body's pixels are the same bytes on both episodes' images at every table position it shows
    show = np.nonzero(_table_rows_showing(deep, ["vertebra_L1"], zt))[0]
    vb = [rt.label_id("vertebra_L1")]
    checked = 0
    for i in show[::3]:
        z = zt[i]
        a, b = deep.axial_hu(z + 2.5, z - 2.5), shallow.axial_hu(z + 2.5, z - 2.5)
        k = int(round((float(deep.frame.rigid_subject_z(z)) - rt.origin_mm[2]) / rt.spacing_mm[2]))
        # where the slab is vertebra all through at the rigid place (partial-volume rims mix in the soft tissue
        # around them, which does move)
        full = ct_physics.slab_mean_hu(rt.labels, deep._bone_label_mask().astype(np.float32),
                                       float(deep.frame.rigid_subject_z(z - 2.5)),
                                       float(deep.frame.rigid_subject_z(z + 2.5)), float(rt.origin_mm[2]),
                                       float(rt.spacing_mm[2]), 0.0) > 1.0 - 1e-6
        core = np.isin(rt.labels[k], vb) & full
        if core.sum() > 20:
            assert np.allclose(a[core], b[core], atol=1e-3)
            checked += 1
    assert checked >= 3
    # the liver moves: its dome is 24 mm (the breath-holds' difference) higher on the shallow breath-hold
    la, lb = _table_rows_showing(deep, ["liver"], zt), _table_rows_showing(shallow, ["liver"], zt)
    dome_deep, dome_shallow = zt[np.argmax(la)], zt[np.argmax(lb)]
    assert dome_shallow - dome_deep == pytest.approx(24.0, abs=1.5)


def test_review_images_are_the_formation_plus_the_stated_noise_and_deterministic(rt):
    from consoles.ct.model import CTModel

    ms = []
    for _ in range(2):
        m = CTModel(rt, "axial_breath_test", 0, perturbations={"breath_hold_mm": [8.0, 8.0]})
        m.load_protocol("abdomen_liver")
        m._finish_scout()
        m.set_range(-150, -250)
        m.scan_t_start = m.t
        m._finish_scan()
        ms.append(m)
    a, b = ms[0].series[-1], ms[1].series[-1]
    assert a.images.tobytes() == b.images.tobytes()
    # image i is the noise-free slab of its table position, blurred in plane, plus noise of the stated sigma
    i = a.n_images // 2
    zc = a.start_mm - (i + 0.5) * (a.start_mm - a.end_mm) / a.n_images
    clean = ct_physics.axial_psf(ms[0].axial_hu(zc + a.slice_mm / 2, zc - a.slice_mm / 2)[None],
                                 tuple(float(v) for v in rt.spacing_mm[:2]))[0]
    d = a.images[i] - clean
    assert abs(float(d.mean())) < 0.1 * a.noise_hu
    assert float(d.std()) == pytest.approx(a.noise_hu, rel=0.1)
