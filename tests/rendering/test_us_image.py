"""Ultrasound B-mode formation on the dev subject: echogenicity a sonographer expects (kidney cortex below liver
at matched depth, bright renal sinus, fluid dark), rib shadow, poor contact vs low gain, frequency, focus,
determinism and the subject-fixed speckle (no display)."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy import ndimage

from rendering import us_image as U
from rendering import us_physics as P
from rendering.subjects import load_runtime
from rendering.subjects.labels import LABEL_NAMES, L as LABEL_NAMES_INV

# Right kidney long axis from the right flank (found by searching pose space for the longest in-plane kidney
# on dev; the kidney's long axis is within 1 deg of this plane).
KIDNEY_VIEW = dict(azimuth_deg=-85.0, rotation_deg=5.0, tilt_deg=-15.0)


@pytest.fixture(scope="module")
def dev(subject_cache):
    return load_runtime("dev")


def _centroid(rt, names) -> np.ndarray:
    k, j, i = np.nonzero(np.isin(rt.labels, [rt.label_id(n) for n in names]))
    return np.asarray(rt.origin_mm) + np.asarray(rt.spacing_mm) * np.array([i.mean(), j.mean(), k.mean()])


@pytest.fixture(scope="module")
def kidney_pose(dev) -> U.ProbePose:
    c = _centroid(dev, ["kidney_right_cortex", "kidney_right_medulla", "kidney_right_sinus"])
    return U.ProbePose(z_mm=float(c[2]), **KIDNEY_VIEW)


@pytest.fixture(scope="module")
def kidney(dev, kidney_pose) -> U.USFrame:
    return U.form_frame(dev, kidney_pose, U.Acquisition(), U.Display(), with_labels=True)


def _ids(rt, names) -> list[int]:
    return [rt.label_id(n) for n in names]


def _clear_lines(rt, beam: U.BeamData) -> np.ndarray:
    """bool (samples, lines): nothing that shadows (bone, gas, lung) lies above the sample on its line."""
    table = U.subject_table(rt)
    blocker = np.take(table.impedance, beam.labels) > 5.0
    blocker |= np.take(table.impedance, beam.labels) < 0.1
    return ~np.maximum.accumulate(blocker, axis=0)


def _level_by_depth(rt, beam: U.BeamData, names, bins_mm: float = 10.0, erode: int = 3) -> dict[int, float]:
    """Mean echo level (dB) of shadow-free samples of `names` per depth bin, away from their boundaries."""
    m = np.isin(beam.labels, _ids(rt, names))
    m = ndimage.binary_erosion(m, iterations=erode) & _clear_lines(rt, beam)
    rows, _ = np.nonzero(m)
    out = {}
    bins = (beam.depths_mm[rows] // bins_mm).astype(int)
    for b in np.unique(bins):
        sel = bins == b
        if sel.sum() >= 200:
            out[int(b)] = float(beam.db[rows[sel], np.nonzero(m)[1][sel]].mean())
    return out


# ---- tables ----------------------------------------------------------------------------------------------
def test_every_generator_label_has_an_acoustic_tissue():
    unmapped = [n for n in LABEL_NAMES.values() if n not in P.LABEL_TISSUE and not n.startswith("vertebra_")]
    assert unmapped == []
    t = P.acoustic_table()
    assert t.impedance[t.gel_label] == pytest.approx(1.38)  # physics.md: gel 1.38 MRayl
    liver = LABEL_NAMES_INV["liver"]
    assert t.row(liver)["name"] == "liver" and t.impedance[liver] == pytest.approx(1.65)  # physics.md
    # bone and gas are the strong reflectors that shadow; fluid is anechoic and attenuates little
    for name in ("rib", "vertebra_L1", "pelvis"):
        assert P.tissue_of(name).impedance_mrayl > 5.0 and P.tissue_of(name).attenuation_db_cm_mhz >= 5.0
    assert P.tissue_of("bowel_gas").impedance_mrayl < 0.01
    for name in ("bladder", "gallbladder", "ivc"):
        tis = P.tissue_of(name)
        assert tis.echo_db is None and tis.attenuation_db_cm_mhz < P.tissue_of("liver").attenuation_db_cm_mhz


def test_presets_are_within_the_control_ranges():
    for p in P.PRESETS.values():
        assert p.frequency_mhz in P.FREQUENCIES_MHZ
        assert P.DEPTH_RANGE_MM[0] <= p.focus_mm <= p.depth_mm <= P.DEPTH_RANGE_MM[1]
        assert P.DYNAMIC_RANGE_DB[0] <= p.dynamic_range_db <= P.DYNAMIC_RANGE_DB[1]
        assert p.grey_map in P.GREY_MAPS and len(p.tgc_db) == P.TGC_BANDS


def test_lateral_beam_width_is_narrowest_at_the_focus():
    d = np.linspace(10, 200, 400)
    for focus in (40.0, 80.0, 140.0):
        w = P.lateral_fwhm_mm(d, focus, 3.5)
        assert abs(d[np.argmin(w)] - focus) < 1.0
    assert P.lateral_fwhm_mm(80.0, 80.0, 5.0) < P.lateral_fwhm_mm(80.0, 80.0, 2.5)  # finer at high frequency


def test_focal_gain_peaks_at_the_focus_and_vanishes_where_the_beam_is_widest():
    d = np.linspace(10, 240, 461)
    for focus in (50.0, 100.0, 125.0):
        g = P.focal_gain_db(d, focus, 3.5)
        assert abs(d[np.argmax(g)] - focus) < 1.0 and g.max() == pytest.approx(10 * np.log10(P.LATERAL_WIDTH_CAP))
        assert g.min() >= 0.0
    # the aperture opens with the focal depth: a focus at 12.5 cm makes the beam there narrower than a focus at
    # 10 cm does (a fixed aperture would make the deeper focus the wider beam)
    assert P.lateral_fwhm_mm(125.0, 125.0, 3.5) < 0.8 * P.lateral_fwhm_mm(125.0, 100.0, 3.5)


def _band(fr: U.USFrame, depth_mm: float, half_mm: float = 7.5) -> np.ndarray:
    """bool image: the sector's pixels within half_mm of a depth along the beam (radially from the array)."""
    r, c = np.nonzero(fr.sector)
    x, y = fr.pixel_to_mm(r, c)
    d = np.hypot(x, y + U.CURVILINEAR.radius_mm) - U.CURVILINEAR.radius_mm
    m = np.zeros(fr.sector.shape, bool)
    m[r, c] = np.abs(d - depth_mm) < half_mm
    return m


def _lateral_sharpness(fr: U.USFrame, band: np.ndarray) -> float:
    """Mean grey step between side-by-side pixels over the band's grey spread: finer lateral speckle is larger."""
    px = fr.pixels.astype(float)
    both = band[:, 1:] & band[:, :-1]
    return float(np.abs(np.diff(px, axis=1))[both].mean() / px[band].std())


def test_moving_the_focus_deeper_brightens_and_sharpens_the_image_about_the_new_focus(dev, kidney_pose):
    """Issue 34: focus 10 -> 12.5 cm changes the rendered image, not only the marker: the band about 12.5 cm
    gets brighter (also relative to the band about 10 cm), and the band about 10 cm loses lateral sharpness."""
    frames = {f: U.form_frame(dev, kidney_pose, U.Acquisition(depth_mm=160.0, focus_mm=f), U.Display())
              for f in (100.0, 125.0)}
    old, new = _band(frames[100.0], 100.0), _band(frames[100.0], 125.0)
    grey = {f: (float(fr.pixels[old].mean()), float(fr.pixels[new].mean())) for f, fr in frames.items()}
    assert grey[125.0][1] > grey[100.0][1] + 4.0  # brighter about the new focus (grey levels of 255)
    assert grey[125.0][1] / grey[125.0][0] > grey[100.0][1] / grey[100.0][0] + 0.05
    assert grey[125.0][0] < grey[100.0][0]  # and dimmer about the old one
    sharp = {f: _lateral_sharpness(fr, old) for f, fr in frames.items()}
    assert sharp[125.0] < 0.95 * sharp[100.0]


# ---- geometry --------------------------------------------------------------------------------------------
def test_probe_sits_on_the_skin_and_looks_into_the_body(dev, kidney_pose):
    g = U.ProbeGeometry.from_pose(dev, kidney_pose)
    assert dev.label_at(g.footprint + 3.0 * g.axis) != 0  # just inside: body
    assert dev.label_at(g.footprint - 3.0 * g.axis) == 0  # just outside: air
    pose = g.plane_pose()
    assert np.allclose(pose.v, -g.axis) and abs(np.dot(pose.u, g.axis)) < 1e-9
    # rotation 0 puts the marker (screen left) towards the head
    g0 = U.ProbeGeometry.from_pose(dev, U.ProbePose(-250.0, 0.0, 0.0))
    assert g0.marker[2] > 0.95 and g0.axis[1] > 0.9  # anterior probe looks posteriorly
    g90 = U.ProbeGeometry.from_pose(dev, U.ProbePose(-250.0, 0.0, 90.0))
    assert g90.marker[0] < -0.95  # transverse: marker to the patient's right (-x)
    xy = g.subject_to_image(g.image_to_subject(12.0, 70.0))
    assert np.allclose(xy, [12.0, 70.0, 0.0])


# ---- echogenicity ----------------------------------------------------------------------------------------
def test_kidney_cortex_is_hypoechoic_to_liver_at_matched_depth(dev, kidney):
    liver = _level_by_depth(dev, kidney.beam, ["liver"])
    cortex = _level_by_depth(dev, kidney.beam, ["kidney_right_cortex"], erode=2)
    common = sorted(set(liver) & set(cortex))
    assert common, "no depth where both liver and cortex are seen"
    diffs = [cortex[b] - liver[b] for b in common]
    assert np.mean(diffs) < -2.0 and max(diffs) < 0.0


def test_renal_sinus_brighter_than_cortex_and_medulla_darkest(dev, kidney):
    b = kidney.beam
    lvl = {n: np.mean(list(_level_by_depth(dev, b, [f"kidney_right_{n}"], erode=2).values()))
           for n in ("sinus", "cortex", "medulla")}
    assert lvl["sinus"] > lvl["cortex"] + 6.0
    assert lvl["medulla"] < lvl["cortex"] - 3.0
    # the same order on the screen
    grey = {n: kidney.pixels[ndimage.binary_erosion(kidney.labels == dev.label_id(f"kidney_right_{n}"),
                                                    iterations=4)].mean() for n in ("sinus", "cortex", "medulla")}
    assert grey["sinus"] > grey["cortex"] + 20 > grey["medulla"] + 20


def test_fluid_is_dark_with_enhancement_behind_it(dev):
    gb = _centroid(dev, ["gallbladder"])
    fr = U.form_frame(dev, U.ProbePose(float(gb[2]), -30.0, 60.0), with_labels=True)
    b = fr.beam
    bile = np.isin(b.labels, _ids(dev, ["gallbladder"]))
    liver = np.isin(b.labels, _ids(dev, ["liver"]))
    assert bile.sum() > 2000
    assert b.db[ndimage.binary_erosion(bile, iterations=3)].mean() < b.db[liver].mean() - 15.0
    # liver just behind the gallbladder vs liver at the same depths on lines that miss it
    behind = liver & np.maximum.accumulate(bile, axis=0) & ~bile
    rows = np.nonzero(behind.any(axis=1))[0]
    beside = liver & ~np.maximum.accumulate(bile, axis=0) & _clear_lines(dev, b)
    beside[~np.isin(np.arange(len(b.depths_mm)), rows)] = False
    assert behind.sum() > 500 and beside.sum() > 500
    assert b.db[behind].mean() > b.db[beside].mean() + 3.0


def test_rib_casts_a_dark_shadow(dev, kidney):
    b = kidney.beam
    rib = np.isin(b.labels, _ids(dev, ["rib"]))
    lines = np.nonzero(rib.any(axis=0))[0]
    assert lines.size >= 3, "the kidney view should cross a rib"
    below = np.maximum.accumulate(rib, axis=0) & ~rib
    soft = np.take(U.subject_table(dev).impedance, b.labels) < 2.0
    shadow = below & soft
    rows = np.nonzero(shadow.any(axis=1))[0]
    beside = soft & _clear_lines(dev, b)
    beside[~np.isin(np.arange(len(b.depths_mm)), rows)] = False
    assert b.db[shadow].mean() < b.db[beside].mean() - 15.0
    # and a bright echo at the rib's surface (8 dB: the rib, 4 cm above the default 8 cm focus, meets the beam at
    # its widest, while the soft tissue beside the shadow lies about the focus and gains up to 4.8 dB from it;
    # 12.4 dB before the focal gain of issue 34, 9.6 dB with it)
    top = rib & ~np.vstack([np.zeros((1, rib.shape[1]), bool), rib[:-1]])
    assert b.db[top].mean() > b.db[beside].mean() + 8.0


# ---- contact vs gain -------------------------------------------------------------------------------------
def test_poor_contact_darkens_only_its_lines_low_gain_dims_everything(dev, kidney_pose, kidney):
    base = kidney.beam
    lc = np.ones(base.db.shape[1])
    lc[:80] = 0.0
    poor = U.form_frame(dev, kidney_pose, line_contact=lc).beam
    low = U.form_frame(dev, kidney_pose, U.Acquisition(gain=20.0)).beam
    d_poor = (poor.db - base.db).mean(axis=0)
    assert d_poor[:60].max() < -20.0  # the affected lines lose their echoes
    assert np.abs(d_poor[100:]).max() < 0.5  # the rest is untouched
    d_low = low.db - base.db
    assert np.allclose(d_low, P.gain_db(20.0), atol=1e-3)  # gain: the same dB everywhere, noise included
    # the lost lines still show the receiver's noise floor where the depth compensation lifts it
    deep, shallow = poor.db[-100:, :60].mean(), poor.db[20:120, :60].mean()
    assert deep > shallow + 20.0
    fr = U.display_frame(poor)
    r, c = np.nonzero(fr.sector)
    x, y = fr.pixel_to_mm(r, c)
    deep_lost = (y > 0.8 * base.acquisition.depth_mm) & (x < -60.0)
    assert deep_lost.sum() > 100 and fr.pixels[r[deep_lost], c[deep_lost]].mean() > 5  # not pure black


def test_low_pressure_lifts_the_array_edges(dev, kidney_pose):
    firm = U.form_frame(dev, replace(kidney_pose, pressure=0.8)).beam
    light = U.form_frame(dev, replace(kidney_pose, pressure=0.05)).beam
    assert firm.line_contact.min() == 1.0
    c = light.line_contact
    n = len(c)
    assert c[n // 2] == 1.0 and c[0] == 0.0 and c[-1] == 0.0  # a convex array touches in the middle first
    assert light.db[:, :10].mean() < firm.db[:, :10].mean() - 20.0


# ---- controls --------------------------------------------------------------------------------------------
def test_high_frequency_loses_the_far_field(dev, kidney_pose):
    """Echo above the receiver's noise floor (the same frame without contact) in the far field: 2.5 MHz
    reaches 15-20 cm, 5 MHz sinks into the noise there while the near field stays well above it at both."""
    margin = {}
    for f in (2.5, 5.0):
        acq = U.Acquisition(frequency_mhz=f, depth_mm=200.0)
        sig = U.form_frame(dev, kidney_pose, acq).beam
        noise = U.form_frame(dev, kidney_pose, acq, line_contact=0.0).beam
        soft = (np.take(U.subject_table(dev).impedance, sig.labels) < 2.0) & _clear_lines(dev, sig)
        far = soft & (sig.depths_mm[:, None] > 150.0)
        near = soft & (sig.depths_mm[:, None] > 20.0) & (sig.depths_mm[:, None] < 60.0)
        margin[f] = {k: float(sig.db[m].mean() - noise.db[m].mean()) for k, m in (("far", far), ("near", near))}
    assert margin[2.5]["near"] > 20.0 and margin[5.0]["near"] > 20.0
    assert margin[2.5]["far"] > 10.0 and margin[5.0]["far"] < 5.0


def test_tgc_band_changes_only_its_depths(dev, kidney_pose, kidney):
    tgc = (0.0,) * 7 + (-10.0,)
    b = U.form_frame(dev, kidney_pose, U.Acquisition(tgc_db=tgc)).beam
    d = (b.db - kidney.beam.db).mean(axis=1)
    depth = kidney.beam.depths_mm
    assert np.allclose(d[depth < 0.75 * 160.0], 0.0, atol=1e-3)
    assert np.allclose(d[depth > 150.0], -10.0, atol=1e-3)


def test_display_controls_leave_the_acquisition_alone(kidney):
    b = kidney.beam
    f40 = U.display_frame(b, U.Display(dynamic_range_db=40.0))
    f90 = U.display_frame(b, U.Display(dynamic_range_db=90.0))
    assert f40.beam is f90.beam
    assert f40.pixels[f40.sector].std() > f90.pixels[f90.sector].std()  # narrower range: more contrast
    fa, fd = U.display_frame(b, U.Display(grey_map="A")), U.display_frame(b, U.Display(grey_map="D"))
    assert fd.pixels[fd.sector].mean() < fa.pixels[fa.sector].mean()


def test_scan_conversion_places_the_sector(kidney):
    fr = kidney
    rows, cols = fr.pixels.shape
    # the centre line's top is the footprint (y = 0); the pixels outside the sector are black
    r0, c0 = fr.mm_to_pixel(0.0, 0.0)
    assert abs(c0 - (cols - 1) / 2) < 1e-6 and 0 <= r0 < 0.1 * rows
    assert fr.pixels[~fr.sector].max() == 0
    width, y_top, y_bot = U.sector_extent_mm(160.0)
    assert fr.sector.sum() * fr.pixel_mm ** 2 == pytest.approx(
        np.deg2rad(65.0) / 2 * ((45.0 + 160.0) ** 2 - 45.0 ** 2), rel=0.03)


# ---- determinism and the scatterer field -----------------------------------------------------------------
def test_same_inputs_same_bytes(dev, kidney_pose, kidney):
    U.clear_cache()
    again = U.form_frame(dev, kidney_pose, U.Acquisition(), U.Display(), with_labels=True)
    assert np.array_equal(again.pixels, kidney.pixels)
    assert np.array_equal(again.beam.db, kidney.beam.db)
    other = U.form_frame(dev, replace(kidney_pose, z_mm=kidney_pose.z_mm + 0.7))
    assert not np.array_equal(other.pixels, kidney.pixels)


def test_speckle_is_fixed_to_the_subject(dev, kidney_pose):
    """Turning the probe about its apex by k line steps shows the same scatterers k lines over, while a
    different subject seed gives unrelated speckle."""
    g = U.ProbeGeometry.from_pose(dev, kidney_pose)
    n = 256
    k = 12
    dphi = np.deg2rad(g.probe.fov_deg) / (n - 1)
    t = k * dphi
    # rotate (axis, u) in the image plane about the apex: line j of the new frame = line j + k of the old
    axis = np.cos(t) * g.axis + np.sin(t) * g.u
    u = np.cos(t) * g.u - np.sin(t) * g.axis
    turned = U.ProbeGeometry(g.apex + g.probe.radius_mm * axis, axis, u, g.probe)
    acq = U.Acquisition()
    a = U.acquire_beam(dev, g, acq).db
    b = U.acquire_beam(dev, turned, acq).db
    rows = slice(60, 480)
    same = np.corrcoef(a[rows, 60 + k:200 + k].ravel(), b[rows, 60:200].ravel())[0, 1]
    unshifted = np.corrcoef(a[rows, 60:200].ravel(), b[rows, 60:200].ravel())[0, 1]
    assert same > 0.95
    assert unshifted < same - 0.2


def test_geometry_dict_is_json(dev, kidney_pose):
    d = U.ProbeGeometry.from_pose(dev, kidney_pose).to_dict()
    json.dumps(d)
    assert abs(np.dot(d["normal"], d["beam_axis"])) < 1e-6


def test_gas_shadow_is_dirty(dev, monkeypatch):
    """Behind bowel gas the reverberation ring-down keeps the first centimetre grey; without it, only the noise
    floor would be there."""
    gb = _centroid(dev, ["gallbladder"])
    pose = U.ProbePose(float(gb[2]), -30.0, 60.0)
    b = U.form_frame(dev, pose).beam
    gas = np.isin(b.labels, _ids(dev, ["bowel_gas"]))
    lines = np.nonzero(gas.any(axis=0))[0]
    assert lines.size >= 5, "the view should cross bowel gas"
    j0 = np.argmax(gas, axis=0)
    near = np.zeros_like(gas)
    for j in lines:
        near[j0[j] + 5:j0[j] + 5 + int(8.0 / (b.depths_mm[1] - b.depths_mm[0])), j] = True
    monkeypatch.setattr(U, "RINGDOWN_LEVEL", 0.0)
    clean = U.form_frame(dev, pose).beam
    assert b.db[near].mean() > clean.db[near].mean() + 6.0
