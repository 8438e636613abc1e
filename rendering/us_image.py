"""Ultrasound B-mode image formation from a subject's label volume, beam by beam (numpy/scipy only).

How one frame is formed (shared/reference/physics.md, Ultrasound section; tables in rendering/us_physics.py):

1. Probe pose -> geometry: the footprint sits on the body surface at (z, azimuth around the body); the beam
   axis starts along the inward surface normal, then rotation (about the beam), tilt/fan (about the array's
   long axis) and rock/heel-toe (within the image plane) turn it, all pivoting on the footprint. Scan lines
   radiate from the array's virtual apex, `radius_mm` behind the footprint.
2. Labels are sampled (nearest voxel) at n_samples depths along each of n_lines scan lines.
3. Contact: air between the array's arc and the skin is bridged by gel and skin indentation (pressure) up
   to the indentation depth; lines whose gap is larger lose their energy (a dark wedge), and an external
   per-line factor (e.g. a contact fault) multiplies each line's transmitted amplitude. Electronic noise is
   added at the receiver, so a line without contact still shows the noise floor where the TGC lifts it.
4. Along each line: two-way attenuation alpha f (dB/cm/MHz x MHz x cm) accumulated with depth, net of the
   scanner's automatic depth compensation (capped, so high frequencies lose the far field); intensity
   transmission prod(1 - R) over impedance steps, R = ((Z2 - Z1)/(Z2 + Z1))^2, so bone (Z 7.8, alpha 5) and
   gas (Z 0.0004) shadow what lies behind them; specular echoes sqrt(R) cos^n(incidence) at the steps.
5. Speckle: complex scatterers from a lattice fixed to the subject (hashed from the lattice node and the
   subject id: still when nothing moves, carried with the anatomy when the probe moves), scaled per tissue.
6. PSF: separable Gaussian convolution of the complex echo field, axially (~lambda) and across lines with a
   width lambda x f-number at the transmit focus that widens away from it (depth bands); the echoes about the
   focus are brighter by the focal gain (intensity ~ 1 / beam width, us_physics.focal_gain_db).
7. Spatial compounding (Acquisition.compound looks, us_physics.compound_angles_deg): steps 5-6 are formed once per
   steered look; each look sees the same scatterers at another angle, so its speckle phases are another draw,
   correlated with the neighbouring look's by us_physics.look_field_correlation, and its specular echoes follow
   cos^n of the incidence to the steered beam; the looks' echo levels (dB, after detection) are averaged.
   Shadows and the echo positions are the unsteered look's (a compounder partly fills in shadows: not modelled).
8. Envelope -> dB, + overall gain + TGC; then (display stage, us_display) log compression to the dynamic
   range, grey map, and scan conversion of the beam image to the sector (bilinear, precomputed per geometry).

The acquisition stage (`acquire_beam`) and the display stage (`display_frame`) are separate so display
controls (dynamic range, grey map) can change a frozen image without touching the acquisition.
Image coordinates: x_mm to the screen's right from the centre line, y_mm down from the footprint (depth at
the centre line); the plane pose has centre = footprint, u = screen right, v = screen up (-beam axis).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from .geometry import PlanePose
from .seeding import seeded_rng
from .us_physics import (AUTO_COMP_DB_CM_MHZ, CURVILINEAR, TGC_BANDS, AcousticTable, Probe, acoustic_table,
                         axial_fwhm_mm, compound_angles_deg, focal_gain_db, gain_db, grey_map_lut, lateral_fwhm_mm,
                         look_field_correlation, tgc_curve_db)

# ---- model constants [T]: tuned by looking at kidney, liver and bladder views of the dev subject ---------
REFLECTION_GAIN = 30.0  # specular echo amplitude per sqrt(R): a fat/organ capsule ~ +10 dB over liver speckle
SPECULAR_EXPONENT = 2.0  # cos^n(incidence) [V] (physics.md: cos^n(theta))
AUTO_COMP_MAX_DB = 60.0  # the receiver's depth compensation saturates: 5 MHz loses the far field [G]
NOISE_DB = -92.0  # receiver noise (dB re liver echo) before compensation: ~ -32 dB, dark grey, at full compensation
DISPLAY_MID_DB = -16.0  # mid grey: liver seen through ~3 cm of wall (~ -20 dB mean log level) just below it at gain 50
SCATTER_LATTICE_MM = 0.15  # scatterer lattice fixed to the subject: finer than the axial PSF (~0.19 mm at
# 3.5 MHz), else consecutive samples share nodes and the lattice shows as hatching in the near field
FASCIA_R = 0.008  # intensity reflection of an organ capsule / fascial plane between soft tissues [T]: outlines
# organs whose impedances nearly match (liver 1.65 / kidney 1.62 gives R ~ 1e-4 alone)
GEL_TOLERANCE_MM = 1.0  # an air gap this thin is filled by the gel film
CONTACT_RAMP_MM = 1.5  # gap beyond indentation + tolerance over which a line loses its contact
MAX_INDENTATION_MM = 20.0  # skin indentation at full probe pressure [G]
STRONG_REFLECTOR_R = 0.5  # soft tissue / gas (R ~ 1) and / lung (0.98) reverberate; bone (0.41) does not
RINGDOWN_MM = 12.0  # reverberation decay behind gas [T]
RINGDOWN_LEVEL = 0.15  # its start relative to the interface's specular echo [T]
LATERAL_BANDS = 16  # depth bands of constant lateral PSF width
DEFAULT_SAMPLES = 512
DEFAULT_OUT_SHAPE = (512, 512)

_lock = threading.Lock()
_tables: "OrderedDict[int, tuple[Any, AcousticTable]]" = OrderedDict()
_scan_maps: "OrderedDict[tuple, tuple]" = OrderedDict()
_noise: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_CACHE = 8


def _cached(store: OrderedDict, key: Any, make, size: int = _CACHE):
    with _lock:
        hit = store.get(key)
        if hit is not None:
            store.move_to_end(key)
            return hit
    value = make()
    with _lock:
        store[key] = value
        while len(store) > size:
            store.popitem(last=False)
    return value


def clear_cache() -> None:
    with _lock:
        _tables.clear()
        _scan_maps.clear()
        _noise.clear()


def subject_table(subject: Any) -> AcousticTable:
    """The acoustic table for a subject's label names (cached per label volume)."""
    labels = subject.labels
    hit = _cached(_tables, id(labels), lambda: (labels, acoustic_table(subject.label_names)))
    if hit[0] is not labels:  # an id reused by a new volume
        with _lock:
            _tables.pop(id(labels), None)
        return subject_table(subject)
    return hit[1]


# ---- pose and geometry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbePose:
    """Where the probe is and how it is held (subject frame).

    z_mm: footprint height along the body (subject z); azimuth_deg: around the body seen from the feet,
    0 = anterior midline, -90 = the patient's right flank, +90 the left flank (180 = back);
    rotation_deg: about the beam, 0 = marker to the head (longitudinal), 90 = marker to the patient's right
    on an anterior probe (transverse); tilt_deg (fan): about the array's long axis, + swings the beam towards
    marker x beam (towards the patient's left on a longitudinal anterior view, to the head on a transverse
    one); rock_deg (heel-toe): in the image plane, + swings the beam towards the marker side;
    pressure: 0-1, skin indentation up to MAX_INDENTATION_MM.
    """

    z_mm: float
    azimuth_deg: float
    rotation_deg: float = 0.0
    tilt_deg: float = 0.0
    rock_deg: float = 0.0
    pressure: float = 0.6

    @property
    def indentation_mm(self) -> float:
        return float(np.clip(self.pressure, 0.0, 1.0)) * MAX_INDENTATION_MM

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ProbePose":
        """Inverse of to_dict (missing fields keep their defaults)."""
        return cls(**{k: float(d[k]) for k in cls.__dataclass_fields__ if k in d})

    def to_dict(self) -> dict[str, float]:
        return {"z_mm": float(self.z_mm), "azimuth_deg": float(self.azimuth_deg),
                "rotation_deg": float(self.rotation_deg), "tilt_deg": float(self.tilt_deg),
                "rock_deg": float(self.rock_deg), "pressure": float(self.pressure)}


def _unit(a: np.ndarray) -> np.ndarray:
    return a / float(np.linalg.norm(a))


def _body_slab(subject: Any, k0: int, k1: int) -> np.ndarray:
    lab = subject.labels[max(0, k0):max(0, k1)]
    return (lab != 0).astype(np.float32)


def body_centre(subject: Any, z_mm: float) -> tuple[float, float]:
    """(x, y) centre of the body outline's bounding box at z (the axis azimuths turn about)."""
    nz = subject.labels.shape[0]
    k = int(np.clip(round((z_mm - subject.origin_mm[2]) / subject.spacing_mm[2]), 0, nz - 1))
    m = subject.labels[k] != 0
    if not m.any():
        raise ValueError(f"no body at z = {z_mm:.1f} mm")
    rows, cols = np.nonzero(m.any(axis=1))[0], np.nonzero(m.any(axis=0))[0]
    o, s = subject.origin_mm, subject.spacing_mm
    return (o[0] + s[0] * (cols[0] + cols[-1]) / 2.0, o[1] + s[1] * (rows[0] + rows[-1]) / 2.0)


def _surface_points(subject: Any, centre_xy: tuple[float, float], zs: np.ndarray, azs_deg: np.ndarray,
                    max_r: float = 420.0, step: float = 0.5) -> np.ndarray:
    """Outermost body point along rays from the body axis (x, y = centre) at each (z, azimuth); (n, 3)."""
    from scipy import ndimage

    o, s = np.asarray(subject.origin_mm, float), np.asarray(subject.spacing_mm, float)
    kz = (zs - o[2]) / s[2]
    k0, k1 = int(np.floor(kz.min())) - 1, int(np.ceil(kz.max())) + 2
    slab = _body_slab(subject, k0, k1)
    k0 = max(0, k0)
    r = np.arange(0.0, max_r, step)
    a = np.deg2rad(azs_deg)
    dx, dy = np.sin(a), -np.cos(a)  # azimuth 0 = anterior (-y), +90 = patient left (+x)
    px = centre_xy[0] + r[None, :] * dx[:, None]
    py = centre_xy[1] + r[None, :] * dy[:, None]
    pz = np.broadcast_to(zs[:, None], px.shape)
    coords = np.stack([(pz - o[2]) / s[2] - k0, (py - o[1]) / s[1], (px - o[0]) / s[0]])
    ind = ndimage.map_coordinates(slab, coords.reshape(3, -1), order=1, mode="constant", cval=0.0,
                                  prefilter=False).reshape(px.shape)
    inside = ind >= 0.5
    if not inside.any(axis=1).all():
        raise ValueError("a surface ray found no body")
    last = ind.shape[1] - 1 - np.argmax(inside[:, ::-1], axis=1)  # outermost sample inside
    nxt = np.minimum(last + 1, ind.shape[1] - 1)
    i0, i1 = ind[np.arange(len(last)), last], ind[np.arange(len(last)), nxt]
    frac = np.where(i0 > i1, (i0 - 0.5) / np.maximum(i0 - i1, 1e-6), 0.0)
    rr = r[last] + step * np.clip(frac, 0.0, 1.0)
    return np.stack([centre_xy[0] + rr * dx, centre_xy[1] + rr * dy, zs], axis=1)


def body_surface(subject: Any, z_mm: float, azimuth_deg: float, span_mm: float = 10.0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(skin point, outward unit normal) at (z, azimuth). The normal comes from surface points span_mm
    away along z and around the body, which smooths the 2 mm voxel steps of the outline."""
    c = body_centre(subject, z_mm)
    p0 = _surface_points(subject, c, np.array([z_mm]), np.array([azimuth_deg]))[0]
    rad = max(20.0, float(np.hypot(p0[0] - c[0], p0[1] - c[1])))
    da = np.rad2deg(span_mm / rad)
    zs = np.array([z_mm + span_mm, z_mm - span_mm, z_mm, z_mm])
    azs = np.array([azimuth_deg, azimuth_deg, azimuth_deg + da, azimuth_deg - da])
    p = _surface_points(subject, c, zs, azs)
    tz, ta = p[0] - p[1], p[2] - p[3]
    n = np.cross(ta, tz)  # azimuth grows clockwise from the feet: ta x tz points outwards
    radial = np.array([p0[0] - c[0], p0[1] - c[1], 0.0])
    if np.dot(n, radial) < 0:
        n = -n
    return p0, _unit(n)


@dataclass(frozen=True, eq=False)
class ProbeGeometry:
    """The scan plane of a curvilinear probe: footprint (skin contact of the centre element), beam axis,
    screen-right axis `u` (= minus the marker direction: the marker side is shown on the screen's left)."""

    footprint: np.ndarray
    axis: np.ndarray
    u: np.ndarray
    probe: Probe = CURVILINEAR

    @property
    def apex(self) -> np.ndarray:
        return self.footprint - self.probe.radius_mm * self.axis

    @property
    def marker(self) -> np.ndarray:
        return -self.u

    def plane_pose(self) -> PlanePose:
        """The image plane: centre = footprint, u = screen right, v = screen up (towards the probe)."""
        return PlanePose.from_axes(self.footprint, self.u, -self.axis)

    def translated(self, delta: Any) -> "ProbeGeometry":
        return replace(self, footprint=self.footprint + np.asarray(delta, float))

    def image_to_subject(self, x_mm: Any, y_mm: Any) -> np.ndarray:
        """Image mm (x right, y down from the footprint) -> subject points (..., 3)."""
        x, y = (np.asarray(a, float)[..., None] for a in (x_mm, y_mm))
        return self.footprint + x * self.u + y * self.axis

    def subject_to_image(self, points: Any) -> np.ndarray:
        """Subject points -> (..., 3) of (x_mm, y_mm, out-of-plane mm)."""
        d = np.asarray(points, float) - self.footprint
        return np.stack([d @ self.u, d @ self.axis, d @ np.cross(self.u, self.axis)], axis=-1)

    def to_dict(self) -> dict[str, Any]:
        pose = self.plane_pose()
        r = lambda a: [round(float(x), 6) + 0.0 for x in a]  # noqa: E731
        return {"footprint_mm": r(self.footprint), "beam_axis": r(self.axis), "u": r(pose.u), "v": r(pose.v),
                "normal": r(pose.normal), "apex_mm": r(self.apex), "radius_mm": self.probe.radius_mm,
                "fov_deg": self.probe.fov_deg}

    @classmethod
    def from_pose(cls, subject: Any, pose: ProbePose, probe: Probe = CURVILINEAR) -> "ProbeGeometry":
        s, n_out = body_surface(subject, pose.z_mm, pose.azimuth_deg)
        b0 = -n_out
        head = np.array([0.0, 0.0, 1.0])
        l0 = head - np.dot(head, b0) * b0
        if np.linalg.norm(l0) < 1e-6:  # beam along z (never on the torso's sides)
            l0 = np.array([1.0, 0.0, 0.0]) - b0[0] * b0
        l0 = _unit(l0)
        th = np.deg2rad(pose.rotation_deg)
        m = math.cos(th) * l0 + math.sin(th) * np.cross(l0, b0)  # 90 deg: patient right on an anterior probe
        e = _unit(np.cross(b0, m))
        t = np.deg2rad(pose.tilt_deg)
        b1 = math.cos(t) * b0 + math.sin(t) * e
        rk = np.deg2rad(pose.rock_deg)
        b2 = math.cos(rk) * b1 + math.sin(rk) * m
        m2 = math.cos(rk) * m - math.sin(rk) * b1
        return cls(np.asarray(s, float), _unit(b2), _unit(-m2), probe)


# ---- settings and results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Acquisition:
    """Acquisition (and receive) controls of one frame."""

    frequency_mhz: float = 3.5
    depth_mm: float = 160.0
    focus_mm: float = 80.0
    gain: float = 50.0
    tgc_db: tuple[float, ...] = (0.0,) * TGC_BANDS
    indentation_mm: float = 12.0
    n_lines: int = CURVILINEAR.n_lines
    n_samples: int = DEFAULT_SAMPLES
    noise_seed: int = 0  # electronic noise realisation (a fixed pattern unless the console varies it)
    compound: int = 1  # spatial compounding: steered looks averaged (1 = off; us_physics.COMPOUND_LOOKS)


@dataclass(frozen=True)
class Display:
    """Display (post-processing) controls: never change the acquisition."""

    dynamic_range_db: float = 60.0
    grey_map: str = "B"
    shape: tuple[int, int] = DEFAULT_OUT_SHAPE


@dataclass(frozen=True, eq=False)
class BeamData:
    """One acquired frame in beam space: echo level in dB (after gain and TGC) per (sample, line)."""

    db: np.ndarray  # float32 (n_samples, n_lines)
    labels: np.ndarray  # label per sample (n_samples, n_lines), gel = table.gel_label
    depths_mm: np.ndarray  # (n_samples,) depth of each sample below the array face
    line_contact: np.ndarray  # (n_lines,) transmitted amplitude factor per line (0 = no contact)
    geometry: ProbeGeometry
    acquisition: Acquisition


@dataclass(frozen=True, eq=False)
class USFrame:
    """A scan-converted B-mode image: uint8 (rows, cols), row 0 at the top; pixel (r, c) shows image mm
    x = x0_mm + c px, y = y_top_mm + r px (y down from the footprint)."""

    pixels: np.ndarray
    pixel_mm: float
    x0_mm: float
    y_top_mm: float
    sector: np.ndarray  # bool (rows, cols): inside the sector
    beam: BeamData
    display: Display
    labels: np.ndarray | None = None  # nearest label per pixel (tests, oracles), when asked for

    @property
    def geometry(self) -> ProbeGeometry:
        return self.beam.geometry

    def pixel_to_mm(self, row: Any, col: Any) -> tuple[np.ndarray, np.ndarray]:
        return self.x0_mm + np.asarray(col, float) * self.pixel_mm, self.y_top_mm + np.asarray(row, float) * self.pixel_mm

    def mm_to_pixel(self, x_mm: Any, y_mm: Any) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) (fractional) of image mm."""
        return (np.asarray(y_mm, float) - self.y_top_mm) / self.pixel_mm, (np.asarray(x_mm, float) - self.x0_mm) / self.pixel_mm


# ---- the scatterer lattice -------------------------------------------------------------------------------
_M1, _M2, _M3 = np.uint32(0x8DA6B343), np.uint32(0xD8163841), np.uint32(0xCB1AB31F)
_TABLE_BITS = 12


def _subject_seed(subject: Any) -> np.uint32:
    return np.uint32(seeded_rng("us_scatterers", getattr(subject, "id", "?")).integers(0, 2 ** 32, dtype=np.uint64))


_phasors = np.exp(2j * np.pi * np.random.default_rng(20261201).random(1 << _TABLE_BITS)).astype(np.complex64)
_normals = np.random.default_rng(20261202).standard_normal(1 << _TABLE_BITS).astype(np.float32)


def _hash3(qx: np.ndarray, qy: np.ndarray, qz: np.ndarray, seed: np.uint32) -> np.ndarray:
    """A well-mixed uint32 per integer lattice node (murmur3 finaliser over a spatial hash)."""
    h = (qx.astype(np.uint32) * _M1) ^ (qy.astype(np.uint32) * _M2) ^ (qz.astype(np.uint32) * _M3) ^ seed
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


# ---- acquisition -----------------------------------------------------------------------------------------
def _gaussian_kernel(sigma: float) -> np.ndarray:
    if sigma < 0.2:
        return np.ones(1, np.float32)
    r = int(math.ceil(3.0 * sigma))
    x = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return (k / k.sum()).astype(np.float32)


def _convolve_axis(a: np.ndarray, k: np.ndarray, axis: int) -> np.ndarray:
    if len(k) == 1:
        return a
    from scipy import ndimage

    return ndimage.correlate1d(a, k, axis=axis, mode="nearest")


def _receiver_noise(shape: tuple[int, int], seed: int, look: int = 0) -> np.ndarray:
    """The receiver's noise (complex, as (..., 2)) of one frame; each steered look of a compound frame is its own
    transmit-receive event with its own noise (look 0 keeps the uncompounded frame's draw)."""
    def make() -> np.ndarray:
        rng = seeded_rng("us_noise", seed, *shape) if look == 0 else seeded_rng("us_noise", seed, *shape, "look", look)
        n = rng.standard_normal((*shape, 2), dtype=np.float32) * np.float32(10.0 ** (NOISE_DB / 20.0) / math.sqrt(2))
        n.setflags(write=False)
        return n
    return _cached(_noise, (shape, int(seed), int(look)), make, size=2 * _CACHE)


def _look_phasors(h: np.ndarray, angles_deg: Sequence[float], f_number: float) -> list[np.ndarray]:
    """The scatterers' echo phasors seen by each steered look (complex, unit mean power): look 0 from the
    lattice hash `h` as an uncompounded frame sees them; each next look mixes its own draw (the hash remixed
    with the look's index) with the previous look's phasors at the field correlation of their angle step
    (us_physics.look_field_correlation; a chain, so looks two steps apart correlate at its square, no less
    than the aperture model gives, so visibility is not overstated)."""
    mask = np.uint32((1 << _TABLE_BITS) - 1)
    out = [np.take(_phasors, h & mask)]
    for k in range(1, len(angles_deg)):
        rho = look_field_correlation(float(angles_deg[k]) - float(angles_deg[k - 1]), f_number)
        hk = h ^ np.uint32((0x9E3779B9 * k) & 0xFFFFFFFF)
        hk *= np.uint32(0x85EBCA6B)
        hk ^= hk >> np.uint32(13)
        hk *= np.uint32(0xC2B2AE35)
        hk ^= hk >> np.uint32(16)
        own = np.take(_phasors, hk & mask)
        out.append((np.float32(rho) * out[-1] + np.float32(math.sqrt(max(0.0, 1.0 - rho * rho))) * own)
                   .astype(np.complex64) if rho > 0.0 else own)
    return out


def acquire_beam(subject: Any, geometry: ProbeGeometry, acq: Acquisition,
                 line_contact: Sequence[float] | np.ndarray | float | None = None) -> BeamData:
    """Form one frame in beam space (see the module notes). `line_contact` multiplies each line's
    transmitted amplitude (a scalar, or one value per line; None = 1)."""
    table = subject_table(subject)
    gel = table.gel_label
    n_lines, m = int(acq.n_lines), int(acq.n_samples)
    probe = geometry.probe
    f = float(acq.frequency_mhz)
    dd = acq.depth_mm / m
    depths = ((np.arange(m) + 0.5) * dd).astype(np.float32)
    phi = probe.line_angles_rad(n_lines)
    dirs = np.cos(phi)[:, None] * geometry.axis[None, :] + np.sin(phi)[:, None] * geometry.u[None, :]
    radii = (probe.radius_mm + depths).astype(np.float32)

    # 1. labels at every sample (nearest voxel); outside the volume is air
    o, s = np.asarray(subject.origin_mm, float), np.asarray(subject.spacing_mm, float)
    pts = geometry.apex.astype(np.float32)[None, None, :] + radii[:, None, None] * dirs.astype(np.float32)[None, :, :]
    nz, ny, nx = subject.labels.shape
    ijk = np.rint((pts - o.astype(np.float32)) / s.astype(np.float32)).astype(np.int32)
    i, j, k = ijk[..., 0], ijk[..., 1], ijk[..., 2]
    ok = (i >= 0) & (i < nx) & (j >= 0) & (j < ny) & (k >= 0) & (k < nz)
    flat = np.where(ok, (k * ny + j) * nx + i, 0)
    lab = np.take(subject.labels.reshape(-1), flat)
    lab = np.where(ok, lab, 0).astype(np.int16)

    # 2. contact: the gap between the array's arc and the skin along each line
    body = lab != 0
    has_body = body.any(axis=0)
    first = np.where(has_body, np.argmax(body, axis=0), m)
    gap = np.where(has_body, first * dd, np.inf)
    slack = gap - acq.indentation_mm - GEL_TOLERANCE_MM
    c_geo = np.clip(1.0 - slack / CONTACT_RAMP_MM, 0.0, 1.0)
    lead = np.arange(m)[:, None] < first[None, :]
    lab = np.where(lead, np.int16(gel), lab)  # gel and indented skin fill the gap (zero energy where c_geo = 0)
    ext = np.ones(n_lines) if line_contact is None else np.broadcast_to(np.asarray(line_contact, float), (n_lines,))
    contact = (c_geo * np.clip(ext, 0.0, 1.0)).astype(np.float32)

    # 3. per-sample properties
    z = np.take(table.impedance, lab)
    alpha = np.take(table.attenuation, lab)
    # two-way attenuation to the middle of each sample, net of the capped automatic compensation
    att_db = 2.0 * f * (np.cumsum(alpha, axis=0) - 0.5 * alpha) * (dd / 10.0)
    comp_db = np.minimum(2.0 * f * AUTO_COMP_DB_CM_MHZ * depths / 10.0, AUTO_COMP_MAX_DB).astype(np.float32)
    net_amp = np.power(np.float32(10.0), (comp_db[:, None] - att_db) / np.float32(20.0))
    # impedance steps: intensity reflection R between consecutive samples, transmission through them
    z_prev = np.vstack([np.full((1, n_lines), table.impedance[gel], np.float32), z[:-1]])
    refl = ((z - z_prev) / (z + z_prev)) ** 2
    grp = np.take(table.organ_group, lab)
    capsule = np.zeros_like(refl, dtype=bool)
    capsule[1:] = (grp[1:] != grp[:-1]) & (z[1:] > 1.3) & (z[1:] < 2.1) & (z[:-1] > 1.3) & (z[:-1] < 2.1)
    capsule &= lab != gel
    refl = np.where(capsule, np.maximum(refl, np.float32(FASCIA_R)), refl)
    log_step = np.log1p(-np.minimum(refl, np.float32(0.999999)))
    log_t = np.cumsum(log_step, axis=0)
    t_before = np.exp(log_t - log_step)  # one-way intensity up to the step
    # two-way amplitude: the intensity factor one way equals the amplitude factor there and back
    t_two_way = np.exp(log_t)

    # 4. incidence: angle between the beam and the impedance gradient (smoothed log Z, physical mm); per look
    angles = compound_angles_deg(acq.compound)
    grads = _impedance_gradient(np.log(z), refl, radii, dd, phi)

    # 5. speckle from the subject-fixed scatterer lattice
    q = np.floor(pts * np.float32(1.0 / SCATTER_LATTICE_MM)).astype(np.int32)
    h = _hash3(q[..., 0], q[..., 1], q[..., 2], _subject_seed(subject))
    mask = np.uint32((1 << _TABLE_BITS) - 1)
    dens = np.take(table.density, lab)
    present = (h >> np.uint32(20)).astype(np.float32) * np.float32(1.0 / 4096.0) < dens
    strength = np.take(table.echo_amp, lab) * np.maximum(
        0.0, 1.0 + np.take(table.sigma, lab) * np.take(_normals, (h >> np.uint32(8)) & mask))
    norm = 1.0 / np.sqrt(np.maximum(dens, 1e-3) * (1.0 + np.take(table.sigma, lab) ** 2))
    scat = np.where(present, strength * norm, 0.0).astype(np.float32)

    # 6. the complex echo field, then the PSF (axial, and lateral per depth band)
    ax_sigma = axial_fwhm_mm(f) / 2.355 / dd
    k_ax = _gaussian_kernel(ax_sigma)
    lat_sigma_mm = lateral_fwhm_mm(depths, acq.focus_mm, f, probe) / 2.355
    line_mm = radii * float(phi[1] - phi[0]) if n_lines > 1 else radii
    lat_sigma = lat_sigma_mm / line_mm  # in lines, per sample
    bands = np.array_split(np.arange(m), LATERAL_BANDS)
    k_lat = [_gaussian_kernel(float(lat_sigma[b].mean())) for b in bands]
    # speckle intensity must not depend on the PSF size: scale by 1 / sqrt(sum k^2) of both kernels
    speck_norm = np.empty(m, np.float32)
    for b, kl in zip(bands, k_lat):
        speck_norm[b] = 1.0 / math.sqrt(float((k_ax ** 2).sum()) * float((kl ** 2).sum()))
    # the transmit focus brings more energy to the depths about it (the echoes, not the receiver's noise)
    focal_amp = np.power(10.0, focal_gain_db(depths, acq.focus_mm, f, probe) / 20.0).astype(np.float32)
    net_amp = net_amp * focal_amp[:, None]
    amp = (net_amp * t_two_way * contact[None, :]).astype(np.float32)
    n_looks = len(angles)
    field_c = np.empty((m, n_lines, 2 * n_looks), np.float32)  # (real, imag) of each look
    f_number = max(probe.f_number_min, acq.focus_mm / probe.aperture_mm)
    looks = _look_phasors(h, angles, f_number)
    sc = scat * speck_norm[:, None] * amp
    amp_before = net_amp * t_before * contact[None, :]
    ring = _ringdown(refl, depths, amp_before)
    for k, (theta, ph) in enumerate(zip(angles, looks)):
        spec = _specular_look(grads, theta)
        field_c[..., 2 * k] = sc * ph.real + REFLECTION_GAIN * spec * amp_before
        field_c[..., 2 * k + 1] = sc * ph.imag
        if ring is not None:  # gas and lung: a "dirty" shadow of reverberations, unlike bone's clean one
            field_c[..., 2 * k] += ring * ph.real
            field_c[..., 2 * k + 1] += ring * ph.imag
    field_c = _convolve_axis(field_c, k_ax, 0)
    out = np.empty_like(field_c)
    for b, kl in zip(bands, k_lat):
        out[b[0]:b[-1] + 1] = _convolve_axis(field_c[b[0]:b[-1] + 1], kl, 1)

    # 8. receiver noise (before the depth compensation, so it rises with depth), envelope, gain, TGC; the looks'
    # echo levels averaged after detection and log compression (a geometric mean: fully developed speckle keeps
    # the mean log level a single frame has, so a tissue's grey is the same with compounding on or off)
    comp_amp = np.power(np.float32(10.0), comp_db / np.float32(20.0))[:, None, None]
    db = np.zeros((m, n_lines), np.float32)
    for k in range(n_looks):
        o = out[..., 2 * k:2 * k + 2]
        o += _receiver_noise((m, n_lines), acq.noise_seed, k) * comp_amp
        db += 10.0 * np.log10(o[..., 0] ** 2 + o[..., 1] ** 2 + np.float32(1e-20))
    if n_looks > 1:
        db *= np.float32(1.0 / n_looks)
    db += (gain_db(acq.gain) + tgc_curve_db(depths, acq.depth_mm, acq.tgc_db)).astype(np.float32)[:, None]
    return BeamData(db.astype(np.float32), lab, depths, contact, geometry, acq)


def _ringdown(refl: np.ndarray, depths: np.ndarray, amp_before: np.ndarray) -> np.ndarray | None:
    """Reverberation amplitude behind the first near-total reflector (gas, lung) of each line: decays over
    RINGDOWN_MM from the interface echo's level [G]; None when no line meets one."""
    strong = refl > STRONG_REFLECTOR_R
    hit = strong.any(axis=0)
    if not hit.any():
        return None
    j0 = np.argmax(strong, axis=0)
    lines = np.nonzero(hit)[0]
    d0 = depths[j0[lines]]
    level = REFLECTION_GAIN * RINGDOWN_LEVEL * amp_before[j0[lines], lines]
    dist = depths[:, None] - d0[None, :]
    ring = np.zeros_like(refl)
    ring[:, lines] = np.where(dist > 0.0, level[None, :] * np.exp(-np.maximum(dist, 0.0) / RINGDOWN_MM), 0.0)
    return ring


def _impedance_gradient(log_z: np.ndarray, refl: np.ndarray, radii: np.ndarray, dd: float, phi: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(axial gradient, lateral gradient, sqrt(R) at the impedance steps and 0 elsewhere) of the smoothed log Z
    (physical mm), or None when no line meets a step."""
    steps = refl > 1e-7
    if not steps.any():
        return None
    from scipy import ndimage

    sm = ndimage.uniform_filter(log_z, size=(max(1, int(round(2.0 / dd))) | 1, 3), mode="nearest")
    g_ax = np.empty_like(sm)
    g_ax[1:-1] = (sm[2:] - sm[:-2]) / (2.0 * dd)
    g_ax[0], g_ax[-1] = g_ax[1], g_ax[-2]
    g_lat = np.empty_like(sm)
    dphi = float(phi[1] - phi[0]) if len(phi) > 1 else 1.0
    g_lat[:, 1:-1] = (sm[:, 2:] - sm[:, :-2]) / (2.0 * dphi)
    g_lat[:, 0], g_lat[:, -1] = g_lat[:, 1], g_lat[:, -2]
    g_lat /= radii[:, None]
    return g_ax, g_lat, np.where(steps, np.sqrt(refl), 0.0).astype(np.float32)


def _specular_look(grads: tuple[np.ndarray, np.ndarray, np.ndarray] | None, steer_deg: float = 0.0
                   ) -> np.ndarray | float:
    """Specular echo amplitude sqrt(R) cos^n(incidence) at each impedance step (0 elsewhere), the incidence taken
    between the impedance gradient and the beam steered `steer_deg` towards the screen's right."""
    if grads is None:
        return 0.0
    g_ax, g_lat, r = grads
    if steer_deg == 0.0:
        cos2 = g_ax ** 2 / (g_ax ** 2 + g_lat ** 2 + 1e-12)
    else:
        t = math.radians(steer_deg)
        cos2 = (g_ax * math.cos(t) + g_lat * math.sin(t)) ** 2 / (g_ax ** 2 + g_lat ** 2 + 1e-12)
    return (r * cos2 ** (SPECULAR_EXPONENT / 2.0)).astype(np.float32)


# ---- coupling (gel) ---------------------------------------------------------------------------------------
# The gel film under the array (the console's contact faults): missing under one end of the array (a dark
# wedge on that side) or under all of it (a dim sector whose receiver noise still shows at depth).
GEL_FAULTS = ("none", "no_gel_left", "no_gel_right", "no_gel")
DRY_LINE_FACTOR = 0.0  # an air film reflects everything (Z 0.0004 MRayl vs skin 1.99, physics.md)
DRY_ALL_FACTOR = 0.06  # a dry probe still couples through a few wet spots: a dim sector, not a black one
DRY_EDGE_LINES = 6  # a dry patch's edge is soft over a few lines (a film thinning out)


def coupling_line_factors(fault: str, fraction: float, n_lines: int) -> np.ndarray:
    """Transmitted amplitude factor per scan line (screen left to right) for a gel fault; `fraction` of the
    lines are dry for the one-sided faults, counted from that edge of the screen."""
    if fault not in GEL_FAULTS:
        raise ValueError(f"unknown coupling fault {fault!r}; expected one of {GEL_FAULTS}")
    f = np.ones(n_lines)
    if fault == "no_gel":
        f[:] = DRY_ALL_FACTOR
    elif fault in ("no_gel_left", "no_gel_right"):
        k = int(round(float(np.clip(fraction, 0.0, 1.0)) * n_lines))
        ramp = np.clip((np.arange(n_lines) - k) / DRY_EDGE_LINES + 0.5, 0.0, 1.0)
        f = DRY_LINE_FACTOR + (1.0 - DRY_LINE_FACTOR) * ramp
        if fault == "no_gel_right":
            f = f[::-1].copy()
    return f


# ---- display ---------------------------------------------------------------------------------------------
def sector_extent_mm(depth_mm: float, probe: Probe = CURVILINEAR) -> tuple[float, float, float]:
    """(width, y_top, y_bottom) of the sector in image mm (y down from the footprint)."""
    h = np.deg2rad(probe.fov_deg) / 2.0
    r1 = probe.radius_mm + depth_mm
    return 2.0 * r1 * math.sin(h), probe.radius_mm * math.cos(h) - probe.radius_mm, depth_mm


def _scan_map(depth_mm: float, probe: Probe, m: int, n_lines: int, shape: tuple[int, int]):
    """Bilinear scan-conversion tables: flat beam indices (4, P), weights (4, P), flat pixel indices (P,),
    the sector mask, pixel size and placement."""
    def make():
        rows, cols = shape
        width, y_top, y_bot = sector_extent_mm(depth_mm, probe)
        px = max(width / cols, (y_bot - y_top) / rows)
        x0 = -(cols - 1) / 2.0 * px
        xs = x0 + px * np.arange(cols)
        ys = y_top + px * np.arange(rows)
        xx, yy = np.meshgrid(xs, ys)
        rr = np.hypot(xx, yy + probe.radius_mm)
        ph = np.arctan2(xx, yy + probe.radius_mm)
        h = np.deg2rad(probe.fov_deg) / 2.0
        fi = (rr - probe.radius_mm) / (depth_mm / m) - 0.5  # fractional sample index
        fj = (ph + h) / (2.0 * h) * (n_lines - 1)  # fractional line index
        sector = (fi >= -0.5) & (fi <= m - 0.5) & (fj >= 0.0) & (fj <= n_lines - 1)
        fi = np.clip(fi, 0.0, m - 1.000001)
        fj = np.clip(fj, 0.0, n_lines - 1.000001)
        pix = np.flatnonzero(sector)
        i0, j0 = np.floor(fi.ravel()[pix]).astype(np.int32), np.floor(fj.ravel()[pix]).astype(np.int32)
        wi, wj = (fi.ravel()[pix] - i0).astype(np.float32), (fj.ravel()[pix] - j0).astype(np.float32)
        idx = np.stack([i0 * n_lines + j0, i0 * n_lines + j0 + 1, (i0 + 1) * n_lines + j0,
                        (i0 + 1) * n_lines + j0 + 1])
        w = np.stack([(1 - wi) * (1 - wj), (1 - wi) * wj, wi * (1 - wj), wi * wj])
        nearest = np.rint(fi.ravel()[pix]).astype(np.int32) * n_lines + np.rint(fj.ravel()[pix]).astype(np.int32)
        for a in (idx, w, pix, sector, nearest):
            a.setflags(write=False)
        return idx, w, pix, sector, nearest, px, x0, y_top
    key = (round(float(depth_mm), 6), probe, m, n_lines, tuple(shape))
    return _cached(_scan_maps, key, make)


def compress(db: np.ndarray, dynamic_range_db: float) -> np.ndarray:
    """Log-compressed level 0-1: DISPLAY_MID_DB at mid grey, the dynamic range spanning black to white."""
    return np.clip(0.5 + (db - DISPLAY_MID_DB) / float(dynamic_range_db), 0.0, 1.0)


def display_frame(beam: BeamData, display: Display = Display(), with_labels: bool = False) -> USFrame:
    """Log compression, grey map and scan conversion of an acquired beam frame."""
    m, n_lines = beam.db.shape
    idx, w, pix, sector, nearest, px, x0, y_top = _scan_map(beam.acquisition.depth_mm, beam.geometry.probe,
                                                            m, n_lines, tuple(display.shape))
    level = compress(beam.db, display.dynamic_range_db).astype(np.float32).ravel()
    v = w[0] * np.take(level, idx[0])
    for q in range(1, 4):
        v += w[q] * np.take(level, idx[q])
    grey = np.zeros(display.shape[0] * display.shape[1], np.uint8)
    grey[pix] = np.take(grey_map_lut(display.grey_map), np.rint(v * 255.0).astype(np.int32))
    labels = None
    if with_labels:
        lab = np.full(display.shape[0] * display.shape[1], -1, np.int16)
        lab[pix] = np.take(beam.labels.ravel(), nearest)
        labels = lab.reshape(display.shape)
    return USFrame(grey.reshape(display.shape), float(px), float(x0), float(y_top), sector, beam, display, labels)


def form_frame(subject: Any, pose: ProbePose | ProbeGeometry, acq: Acquisition = Acquisition(),
               display: Display = Display(), line_contact: Any = None, with_labels: bool = False) -> USFrame:
    """Acquire and display one frame. A ProbePose is placed on the body surface (its pressure sets the
    skin indentation unless `acq` is given one explicitly through the pose)."""
    if isinstance(pose, ProbePose):
        geometry = ProbeGeometry.from_pose(subject, pose)
        acq = replace(acq, indentation_mm=pose.indentation_mm)
    else:
        geometry = pose
    return display_frame(acquire_beam(subject, geometry, acq, line_contact), display, with_labels)


def frame_from_record(subject: Any, record: Mapping[str, Any], shape: Sequence[int] = DEFAULT_OUT_SHAPE,
                      with_labels: bool = False) -> USFrame:
    """Re-form the image a console showed from its dump (or a saved item's record): "pose", the acquisition
    under "acquisition" or "controls", the display under "display" or "controls", the gel film under
    "contact" -> "coupling". Oracles use it to measure what the agent saw (echo levels, organ depth)."""
    pose = ProbePose.from_dict(record["pose"])
    acq_src = record.get("acquisition") or record["controls"]
    disp_src = record.get("display") or record["controls"]
    acq = Acquisition(frequency_mhz=float(acq_src["frequency_mhz"]), depth_mm=float(acq_src["depth_mm"]),
                      focus_mm=float(acq_src["focus_mm"]), gain=float(acq_src["gain"]),
                      tgc_db=tuple(float(v) for v in acq_src["tgc_db"]), indentation_mm=pose.indentation_mm,
                      compound=int(acq_src.get("compound", 1)))  # records from before compounding: off
    disp = Display(float(disp_src["dynamic_range_db"]), str(disp_src["grey_map"]), (int(shape[0]), int(shape[1])))
    coupling = (record.get("contact") or {}).get("coupling") or {"fault": "none", "fraction": 0.0}
    contact = coupling_line_factors(str(coupling["fault"]), float(coupling["fraction"]), acq.n_lines)
    geometry = ProbeGeometry.from_pose(subject, pose)
    return display_frame(acquire_beam(subject, geometry, acq, contact), disp, with_labels)


__all__ = ["ProbePose", "ProbeGeometry", "Acquisition", "Display", "BeamData", "USFrame", "acquire_beam",
           "display_frame", "form_frame", "body_surface", "body_centre", "sector_extent_mm", "compress",
           "subject_table", "clear_cache", "coupling_line_factors", "frame_from_record", "GEL_FAULTS"]
