"""MR image formation: contrast a radiographer expects on the dev subject, no voxel steps, thickness
averaging, Rician background, determinism, localizer and slice-group geometry (no display)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from rendering import mr_image as mi
from rendering.geometry import PlanePose, plane_angle_deg, reslice
from rendering.mr_physics import PRESETS, signal_lut
from rendering.subjects import SubjectRuntime, load_runtime
from rendering.subjects.labels import LABEL_NAMES, L
from rendering.subjects.tissues import default_table

FAT = ("fat_subcutaneous", "fat_visceral")


@pytest.fixture(scope="module")
def dev(subject_cache):
    return load_runtime("dev")


def _centroid(rt, name: str) -> np.ndarray:
    k, j, i = np.nonzero(rt.labels == rt.label_id(name))
    return np.asarray(rt.origin_mm) + np.asarray(rt.spacing_mm) * np.array([i.mean(), j.mean(), k.mean()])


def _mask(rt, image: mi.MRImage, names, margin_mm: float = 3.0) -> np.ndarray:
    """Pixels whose label is in `names` at the centre plane and margin_mm either side, eroded 2 px:
    free of partial volume with any other tissue."""
    ids = [rt.label_id(n) for n in names]
    g = image.grid
    m = np.ones(g.shape, bool)
    for w in (-margin_mm, 0.0, margin_mm):
        shifted = mi.ResliceGrid(g.pose.translated(w * g.pose.normal), g.shape, g.pixel_mm)
        m &= np.isin(reslice(rt.labels, rt.origin_mm, rt.spacing_mm, shifted, order=0), ids)
    return ndimage.binary_erosion(m, iterations=2)


def _mean(rt, image, names) -> float:
    m = _mask(rt, image, names)
    assert m.sum() >= 30, f"too few pixels of {names} in this slice ({m.sum()})"
    return float(image.pixels[m].mean())


def _axial(rt, seq_name: str, z: float, seed: int = 0) -> mi.MRImage:
    g = mi.SliceGroup(PlanePose.axial((0.0, -120.0, z)), fov_read_mm=400.0, fov_phase_mm=300.0, matrix_read=256,
                      thickness_mm=3.0)
    return mi.acquire_series(rt, g, PRESETS[seq_name], seed=seed)[0]


# ---- contrast ------------------------------------------------------------------------------------
def test_t1_spoiled_gre_fat_bright_fluid_dark(dev):
    gb = _centroid(dev, "gallbladder")
    im = _axial(dev, "t1_spoiled_gre", gb[2])
    fat, liver, muscle, bile = (_mean(dev, im, n) for n in (FAT, ["liver"], ["muscle"], ["gallbladder"]))
    assert fat > 1.4 * liver > 1.4 * bile  # fat brightest, liver above fluid (T1: 343 < 586 < 2500 ms)
    assert fat > 2.0 * muscle and bile < muscle
    bl = _axial(dev, "t1_spoiled_gre", _centroid(dev, "bladder")[2])
    assert _mean(dev, bl, ["bladder"]) < 0.3 * _mean(dev, bl, FAT)


def test_t2_haste_fluid_bright(dev):
    gb = _centroid(dev, "gallbladder")
    im = _axial(dev, "t2_haste", gb[2])
    bile, liver, fat, muscle = (_mean(dev, im, n) for n in (["gallbladder"], ["liver"], FAT, ["muscle"]))
    assert bile > 3.0 * liver and bile > 2.0 * fat and bile > 10 * muscle
    bl = _axial(dev, "t2_haste", _centroid(dev, "bladder")[2])
    urine = _mean(dev, bl, ["bladder"])
    assert urine > 2.0 * _mean(dev, bl, FAT) and urine > 10 * _mean(dev, bl, ["muscle"])
    others = [n for n in LABEL_NAMES.values() if n not in ("air", "bladder", "ureter_left", "ureter_right")]
    assert urine > 1.5 * np.percentile(bl.pixels[_mask(dev, bl, others)], 99)  # the brightest tissue here


def test_bssfp_blood_and_fat_bright(dev):
    lv = _centroid(dev, "lv_blood")
    im = _axial(dev, "cine_bssfp", lv[2])
    blood, myo = _mean(dev, im, ["lv_blood"]), _mean(dev, im, ["lv_myocardium"])
    fat, muscle = _mean(dev, im, FAT), _mean(dev, im, ["muscle"])
    assert blood > 2.0 * myo  # the cine look: bright pool, dark myocardium
    assert fat > 2.0 * muscle and blood > 2.0 * muscle
    liver_slice = _axial(dev, "cine_bssfp", _centroid(dev, "liver")[2])
    assert _mean(dev, liver_slice, ["ivc"]) > 1.3 * _mean(dev, liver_slice, ["liver"])


def test_t2_haste_shows_flow_voids_where_bssfp_shows_bright_blood(dev):
    z = _centroid(dev, "aorta_descending")[2]
    haste, ssfp = _axial(dev, "t2_haste", z), _axial(dev, "cine_bssfp", z)
    aorta = _mean(dev, haste, ["aorta_descending"])
    assert aorta < _mean(dev, haste, ["muscle"]) and aorta < 0.25 * _mean(dev, haste, FAT)  # black
    assert _mean(dev, ssfp, ["aorta_descending"]) > 2.0 * _mean(dev, ssfp, ["muscle"])


# ---- sampling --------------------------------------------------------------------------------------
def _sphere_runtime() -> SubjectRuntime:
    """64^3 voxels of 2 mm: muscle with a fat sphere of radius 40 mm (a smooth boundary, staircased)."""
    n, s = 64, 2.0
    origin = (-63.0, -127.0, -63.0)
    c = np.arange(n) * s
    z, y, x = np.meshgrid(c + origin[2], c + origin[1], c + origin[0], indexing="ij")
    labels = np.full((n, n, n), L["muscle"], np.uint8)
    labels[(x ** 2 + (y + 64.0) ** 2 + z ** 2) <= 40.0 ** 2] = L["fat_subcutaneous"]
    return SubjectRuntime(id="sphere", version="t", labels=labels, spacing_mm=(s, s, s), origin_mm=origin,
                          label_names=dict(LABEL_NAMES), tissues=default_table())


def _transition_violations(img: np.ndarray, lo: float, hi: float) -> list[str]:
    """Radial profiles from the image centre outwards must fall smoothly from hi (fat) to lo (muscle):
    several samples inside the 10-90% band, strictly decreasing there (no plateaus), no big jump."""
    rows, cols = img.shape
    r0, c0 = rows // 2, cols // 2
    bad = []
    for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1)):
        k = np.arange(min(rows, cols) // 2 - 1)
        prof = img[r0 + dr * k, c0 + dc * k]
        t = (prof - lo) / (hi - lo)
        band = np.flatnonzero((t > 0.1) & (t < 0.9))
        if len(band) < 4:
            bad.append(f"ray {dr, dc}: only {len(band)} samples in the transition")
            continue
        seg = prof[band[0] - 1: band[-1] + 2]
        if not np.all(np.diff(seg) < 0):
            bad.append(f"ray {dr, dc}: plateau or reversal inside the transition")
        if np.max(np.abs(np.diff(t))) > 0.3:
            bad.append(f"ray {dr, dc}: a jump of {np.max(np.abs(np.diff(t))):.2f} of the contrast")
    return bad


def test_oblique_zoomed_slices_have_no_voxel_steps():
    rt = _sphere_runtime()
    seq = PRESETS["t1_spoiled_gre"]
    # double-oblique, rotated in plane, 0.25 mm pixels (8 per voxel), thinner than a voxel
    g = mi.SliceGroup.from_normal((0.0, -64.0, 0.0), (0.3, 0.5, 0.81), 17.0, fov_read_mm=100.0,
                                  fov_phase_mm=100.0, matrix_read=400, thickness_mm=1.0)
    img = mi.acquire_series(rt, g, seq, noise=False, shading=False)[0].pixels
    lut = signal_lut(rt.tissues, seq, 1.5)
    hi, lo = float(lut[L["fat_subcutaneous"]]), float(lut[L["muscle"]])
    assert _transition_violations(img, lo, hi) == []
    # negative control: the same plane rendered from nearest labels through the LUT is all steps
    nearest = lut[reslice(rt.labels, rt.origin_mm, rt.spacing_mm, g.grid(0), order=0)]
    assert len(_transition_violations(nearest, lo, hi)) == 8


def test_thick_slice_equals_the_mean_of_thin_slices(dev):
    pose = PlanePose.from_normal((10.0, -120.0, -200.0), (0.2, 0.45, 0.87), 25.0)
    kw = dict(fov_read_mm=300.0, fov_phase_mm=260.0, matrix_read=192)
    thick = mi.acquire_series(dev, mi.SliceGroup(pose, thickness_mm=6.0, **kw), PRESETS["t2_haste"], noise=False)
    thin = mi.acquire_series(dev, mi.SliceGroup(pose, thickness_mm=2.0, n_slices=3, **kw), PRESETS["t2_haste"],
                             noise=False)
    mean_thin = thin.stack().mean(axis=0)
    assert np.allclose(thick[0].pixels, mean_thin, rtol=1e-5, atol=1e-7)
    # and thickness matters: the thick slice is not just its centre plane
    assert np.abs(thick[0].pixels - thin[1].pixels).max() > 0.05


def test_skipping_air_gives_the_same_bytes_as_interpolating_everything(dev):
    vol = mi.signal_volume(dev, PRESETS["cine_bssfp"])
    for normal, centre in (((0.3, 0.8, 0.2), (0, -120, -250)), ((0, 0, 1), (0, -120, -690)), ((1, 0, 0), (185, -120, 0))):
        g = mi.SliceGroup.from_normal(centre, normal, 11.0, fov_read_mm=450.0, matrix_read=128,
                                      thickness_mm=10.0).grid(0)
        a = mi._sample_slice(vol, dev, g, 10.0, skip_empty=True)
        b = mi._sample_slice(vol, dev, g, 10.0, skip_empty=False)
        assert a.tobytes() == b.tobytes()


# ---- noise and determinism --------------------------------------------------------------------------
def test_background_noise_is_rician(dev):
    g = mi.SliceGroup(PlanePose.axial((0.0, -120.0, -250.0)), fov_read_mm=500.0, fov_phase_mm=500.0,
                      matrix_read=256, thickness_mm=5.0, n_slices=4, gap_mm=5.0)
    s = mi.acquire_series(dev, g, PRESETS["t2_haste"], seed=3)
    air = np.stack([~ndimage.binary_dilation(
        reslice(dev.labels, dev.origin_mm, dev.spacing_mm, im.grid, order=0) != 0, iterations=8)
        for im in s.images])
    bg = s.stack()[air]
    assert bg.size > 50_000
    sigma = s.noise_sigma
    assert sigma == pytest.approx(mi.noise_sigma(g.voxel_mm3))
    assert bg.mean() == pytest.approx(sigma * math.sqrt(math.pi / 2), rel=0.02)  # Rayleigh, not zero-mean
    assert bg.std() == pytest.approx(sigma * math.sqrt(2 - math.pi / 2), rel=0.03)
    assert bg.min() >= 0.0


def test_same_seed_identical_bytes_other_seed_other_noise(dev):
    g = mi.SliceGroup.from_normal((0.0, -110.0, -150.0), (0.1, -0.3, 0.95), 5.0, fov_read_mm=350.0,
                                  fov_phase_mm=350.0, matrix_read=128, thickness_mm=8.0, n_slices=3, gap_mm=2.0)
    seq = PRESETS["cine_bssfp"]
    a = mi.acquire_series(dev, g, seq, seed=(7, "series-1")).stack()
    b = mi.acquire_series(dev, g, seq, seed=(7, "series-1")).stack()
    mi.clear_cache()  # recomputing the signal volume changes nothing
    c = mi.acquire_series(dev, g, seq, seed=(7, "series-1")).stack()
    d = mi.acquire_series(dev, g, seq, seed=(7, "series-2")).stack()
    assert a.tobytes() == b.tobytes() == c.tobytes()
    assert a.tobytes() != d.tobytes()
    sigma = mi.noise_sigma(g.voxel_mm3)
    diff = np.abs(a - d)
    assert 0.5 * sigma < float(diff.mean()) < 3.0 * sigma  # only the noise differs
    la = mi.acquire_localizer(dev, (0.0, -120.0, -150.0), seed=1).stack()
    lb = mi.acquire_localizer(dev, (0.0, -120.0, -150.0), seed=1).stack()
    lc = mi.acquire_localizer(dev, (0.0, -120.0, -150.0), seed=2).stack()
    assert la.tobytes() == lb.tobytes() != lc.tobytes()


def test_snr_model_scales_with_voxel_averages_and_field():
    s0 = mi.noise_sigma(mi.REF_VOXEL_MM3)
    assert s0 == pytest.approx(mi.SIGMA_REF)
    assert mi.noise_sigma(2 * mi.REF_VOXEL_MM3) == pytest.approx(s0 / 2)
    assert mi.noise_sigma(mi.REF_VOXEL_MM3, averages=4) == pytest.approx(s0 / 2)
    assert mi.noise_sigma(mi.REF_VOXEL_MM3, field_t=3.0) == pytest.approx(s0 / 2)
    with pytest.raises(ValueError):
        mi.noise_sigma(0.0)


def test_coil_shading_is_mild_and_brightest_near_the_coils():
    n, s = 48, 2.0
    labels = np.zeros((n, n, n), np.uint8)
    labels[:, 4:, 4:-4] = L["liver"]  # a homogeneous block from y = -90 mm to the table top
    rt = SubjectRuntime(id="block", version="t", labels=labels, spacing_mm=(s, s, s), origin_mm=(-47.0, -95.0, -47.0),
                        label_names=dict(LABEL_NAMES), tissues=default_table())
    g = mi.SliceGroup(PlanePose.axial((0.0, -48.0, 0.0)), fov_read_mm=80.0, fov_phase_mm=80.0, matrix_read=80,
                      thickness_mm=2.0)
    img = mi.acquire_series(rt, g, PRESETS["t2_haste"], noise=False)[0].pixels
    col = img[:, 40]  # AP profile through the middle: row 0 anterior
    body = col[col > 0][2:-2]  # without the partial-volume edge pixels
    assert body.max() / body.min() < 1.25  # mild
    mid = body[len(body) // 2]
    assert body[2] > mid and body[-3] > mid  # anterior array and spine array both brighter than the centre
    flat = mi.acquire_series(rt, g, PRESETS["t2_haste"], noise=False, shading=False)[0].pixels
    assert np.ptp(flat[5:-5, 5:-5]) < 1e-6  # shading off: the block is flat away from its edges


# ---- geometry -----------------------------------------------------------------------------------------
def test_multi_slice_localizer_stacks_its_planes_about_the_isocentre(dev):
    """Several parallel slices per plane, grouped and ordered per plane, the middle one through the isocentre;
    its middle slices are the single-slice localizer's images (same sampling), each image its own noise."""
    iso = np.array([5.0, -118.0, -140.0])
    stacks = ((3, 20.0), (5, 15.0), (1, 8.0))
    s = mi.acquire_localizer(dev, iso, seed=0, matrix=64, stacks=stacks)
    assert len(s) == 9 and [im.index for im in s.images] == list(range(9))
    planes = mi.localizer_planes(s)
    assert planes == {"sagittal": [0, 1, 2], "coronal": [3, 4, 5, 6, 7], "transverse": [8]}
    for (name, ks), (n, spacing), axis in zip(planes.items(), stacks, range(3)):
        offs = np.array([s[k].pose.centre for k in ks]) - iso
        assert np.allclose(np.delete(offs, axis, axis=1), 0.0)
        assert np.allclose(offs[:, axis], (np.arange(n) - (n - 1) / 2) * spacing * np.sign(offs[-1, axis] or 1))
        assert all(np.allclose(np.abs(s[k].pose.normal), np.eye(3)[axis]) for k in ks)
    clean = mi.acquire_localizer(dev, iso, noise=False, matrix=64, stacks=stacks)
    single = mi.acquire_localizer(dev, iso, noise=False, matrix=64)
    for k_multi, k_single in ((1, 0), (5, 1), (8, 2)):
        assert clean[k_multi].pixels.tobytes() == single[k_single].pixels.tobytes()
    # outer slices show other anatomy; the noise is the localizer's (voxel-based) sigma on every image
    assert not np.array_equal(clean[3].pixels, clean[7].pixels)
    assert s.noise_sigma == pytest.approx(mi.noise_sigma((450 / 64) ** 2 * 8.0))
    again = mi.acquire_localizer(dev, iso, seed=0, matrix=64, stacks=stacks)
    assert again.stack().tobytes() == s.stack().tobytes()  # deterministic
    # one slice per plane: exactly the single-slice localizer, noise included
    one = mi.acquire_localizer(dev, iso, seed=0, matrix=64, stacks=((1, 8.0),) * 3)
    assert one.stack().tobytes() == mi.acquire_localizer(dev, iso, seed=0, matrix=64).stack().tobytes()


def test_localizer_images_are_formed_when_first_used_whatever_the_order(dev):
    """A console that shows three of the localizer's slices forms those three (and the window from them); an
    image's bytes do not depend on which images were formed before it."""
    iso = np.array([5.0, -118.0, -140.0])
    stacks = ((5, 15.0), (5, 15.0), (5, 15.0))
    a = mi.acquire_localizer(dev, iso, seed=3, matrix=64, stacks=stacks)
    assert not any(im.formed for im in a.images)
    level, width = a.auto_window
    assert [k for k, im in enumerate(a.images) if im.formed] == [2, 7, 12]  # each plane's middle slice
    assert width > 0 and a[4].shape == (64, 64) and not a[4].formed
    b = mi.acquire_localizer(dev, iso, seed=3, matrix=64, stacks=stacks)
    first_b = b[4].pixels.tobytes()  # formed first here, after the middles in a
    assert first_b == a[4].pixels.tobytes() and b.stack().tobytes() == a.stack().tobytes()
    assert not np.array_equal(a[3].pixels - mi.noise_free_image(dev, a, 3), a[4].pixels - mi.noise_free_image(dev, a, 4))
    other = mi.acquire_localizer(dev, iso, seed=4, matrix=64, stacks=stacks)
    assert other[4].pixels.tobytes() != first_b  # the episode's seed draws the noise
    with pytest.raises(ValueError, match="one stack per plane"):
        mi.localizer_groups(iso, stacks=((3, 15.0),) * 2)


def test_localizer_is_three_orthogonal_planes_through_the_isocentre(dev):
    iso = np.array([5.0, -118.0, -140.0])
    s = mi.acquire_localizer(dev, iso, seed=0)
    assert [im.name for im in s.images] == ["sagittal", "coronal", "transverse"]
    normals = [im.pose.normal for im in s.images]
    assert np.allclose(np.abs(normals), np.eye(3), atol=1e-12)
    for a in range(3):
        assert np.allclose(s[a].pose.centre, iso)
        assert s[a].pixels.shape == (256, 256) and s[a].pixel_mm == pytest.approx((450 / 256, 450 / 256))
        for b in range(a + 1, 3):
            assert plane_angle_deg(s[a].pose, s[b].pose) == pytest.approx(90.0)
    # something of the body in every plane, and air in the corners
    for im in s.images:
        assert np.percentile(im.pixels, 90) > 10 * s.noise_sigma
        assert im.pixels[:8, :8].mean() < 3 * s.noise_sigma


def test_slice_group_geometry():
    pose = PlanePose.from_normal((10.0, -100.0, -50.0), (0.0, 0.6, 0.8), 30.0)
    g = mi.SliceGroup(pose, fov_read_mm=400.0, fov_phase_mm=300.0, matrix_read=256, thickness_mm=5.0, gap_mm=1.0,
                      n_slices=4)
    assert g.shape == (192, 256) and g.pixel_mm == pytest.approx((400 / 256, 300 / 192))
    assert np.allclose(g.offsets_mm(), [-9.0, -3.0, 3.0, 9.0])
    centres = np.array([g.slice_pose(k).centre for k in range(4)])
    assert np.allclose(np.diff(centres, axis=0), 6.0 * pose.normal)
    assert np.allclose(centres.mean(axis=0), pose.centre)
    assert g.grid(2).pose.inplane_deg() == pytest.approx(30.0)
    assert g.slab().half_sizes == pytest.approx((200.0, 150.0, 11.5))
    with pytest.raises(ValueError):
        mi.SliceGroup(pose, thickness_mm=0.0)
    with pytest.raises(ValueError):
        mi.SliceGroup(pose, n_slices=0)


def test_series_placement_matches_its_grid(dev):
    g = mi.SliceGroup(PlanePose.coronal((0.0, -100.0, -200.0)), fov_read_mm=380.0, fov_phase_mm=380.0,
                      matrix_read=190, thickness_mm=6.0, n_slices=2, gap_mm=4.0)
    s = mi.acquire_series(dev, g, PRESETS["t2_haste"], seed=0)
    assert len(s) == 2 and s.noise_sigma > 0
    for k, im in enumerate(s.images):
        assert im.index == k and im.thickness_mm == 6.0
        assert im.placement() == pytest.approx(g.grid(k).placement())
        assert np.allclose(im.pose.centre, g.slice_pose(k).centre)
    level, width = s.auto_window
    assert width > 0 and level == pytest.approx(width / 2)


def test_signal_volume_is_cached_per_contrast(dev):
    a = mi.signal_volume(dev, PRESETS["t2_haste"])
    assert mi.signal_volume(dev, PRESETS["t2_haste"]) is a
    b = mi.signal_volume(dev, PRESETS["t1_spoiled_gre"])
    assert b is not a and not a.flags.writeable
    assert mi.signal_volume(dev, PRESETS["t2_haste"], field_t=3.0) is not a
