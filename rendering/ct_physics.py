"""CT image formation and dose from a subject's label volume (numpy only, no Qt/VTK).

Numbers follow shared/reference/physics.md:
- attenuation mu = MU_WATER * (1 + HU/1000), MU_WATER = 0.0192 /mm (~70 keV effective at 120 kVp);
- scout (topogram) = line integral of mu along the beam with Poisson noise on I0 exp(-p);
- CTDIvol = nCTDIw(kV) * mAs / pitch, nCTDIw = 0.07 mGy/mAs at 120 kV scaled by (kV/120)^2.5;
  DLP = CTDIvol * length_cm; E = k * DLP with k per body region;
- image noise sigma ~ 1/sqrt(mAs_eff), growing with water-equivalent diameter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rendering.geometry import helical_duration_s

MU_WATER_PER_MM = 0.0192
NCTDIW_120KV_MGY_PER_MAS = 0.07
K_FACTOR_MSV_PER_MGYCM = {"head": 0.0021, "neck": 0.0059, "chest": 0.014, "abdomen": 0.015, "pelvis": 0.015}
# Detected photons per 2 mm scout pixel behind the couch, in air (generator 1.5.0, issue 33; 2.0e4 before, about
# 200x too few: the scouts were far noisier than a topogram). Derived, each figure [G] unless marked:
# - a topogram's technique: 120 kV, 35 mA (a common vendor default; 10-50 mA across vendors), a single narrow
#   detector row (~0.6 mm at the isocentre) swept at ~100 mm/s: each point is in the beam ~6 ms, 0.21 mAs;
# - free-in-air kerma at the isocentre ~0.2 mGy/mAs at 120 kV (of the order of the CTDI per mAs in
#   reference/physics.md, 0.10 mGy/mAs in the phantom); photons per air kerma at the beam's ~60 keV mean energy:
#   1 / (E (mu_en/rho)_air) = 1 / (9.6e-15 J x 3.04 cm^2/kg) = 3.4e4 photons/mm^2/uGy (NIST mu_en/rho of air);
#   so 0.21 mAs x 200 uGy/mAs x 3.4e4 / mm^2 x 4 mm^2 = 5.7e6 photons through a 2 x 2 mm pixel (the entrance
#   air kerma this implies, ~0.05-0.1 mGy, is the order published for CT localizer radiographs);
# - x 0.9 detector efficiency x 0.83 for the couch (~1 cm water equivalent: Br J Radiol 75:140, 2002)
#   = 4.3e6; half of it is used (the bowtie filter thins the beam off-centre; the estimate's margin), 2e6.
SCOUT_I0 = 2.0e6
NOISE_REF_HU = 11.0  # sigma at 100 effective mAs, 120 kV, 300 mm water-equivalent diameter
NOISE_REF_MAS = 100.0
NOISE_REF_DW_MM = 300.0


# The scouts' display window (width, level) in line-integral units, as the CT console shows them (fixed: the
# planning page offers no window control for the scouts). The lateral paths are longer: a wider window keeps
# the abdomen readable.
SCOUT_DISPLAY_WINDOW: dict[str, tuple[float, float]] = {"ap": (6.0, 3.2), "lateral": (9.0, 4.6)}


def scout_display_grey(p: np.ndarray, view: str) -> np.ndarray:
    """The 8-bit grey a scout pixel shows on the screen: the viewport's linear window/level (VTK's
    vtkImageMapToWindowLevelColors: (p - (level - width/2)) / width, clipped to 0-255, truncated)."""
    width, level = SCOUT_DISPLAY_WINDOW[view]
    g = (np.asarray(p, np.float64) - (level - width / 2.0)) / width * 255.0
    return np.floor(np.clip(g, 0.0, 255.0))


def mu_from_hu(hu: np.ndarray) -> np.ndarray:
    """Linear attenuation (/mm) from HU, clipped at 0 (air)."""
    return np.maximum(0.0, MU_WATER_PER_MM * (1.0 + hu / 1000.0)).astype(np.float32)


@dataclass(frozen=True)
class Scout:
    """A projection image: rows top (superior) -> bottom, cols left -> right in image-plane mm."""

    view: str  # "ap" or "lateral"
    pixels: np.ndarray  # line integral estimate p (dimensionless), float32 (rows, cols)
    u0: float  # image-plane mm of column 0 centre
    du: float
    v_top: float  # image-plane mm (table z) of row 0 centre
    dv: float


def scout_projection(mu: np.ndarray, spacing_mm: tuple[float, float, float], view: str) -> np.ndarray:
    """Noise-free line integrals; returns (nz, n_cols) with row 0 at the lowest z."""
    sx, sy, _ = spacing_mm
    if view == "ap":
        return mu.sum(axis=1, dtype=np.float32) * sy  # integrate along y (AP beam): (nz, nx)
    if view == "lateral":
        return mu.sum(axis=2, dtype=np.float32) * sx  # integrate along x: (nz, ny)
    raise ValueError(f"unknown scout view {view!r}; expected 'ap' or 'lateral'")


def add_scout_noise(p: np.ndarray, rng: np.random.Generator, i0: float = SCOUT_I0) -> np.ndarray:
    """Poisson counting noise on I = I0 exp(-p); returns the measured -log(I/I0)."""
    counts = rng.poisson(i0 * np.exp(-p.astype(np.float64)))
    return (-np.log(np.maximum(counts, 1) / i0)).astype(np.float32)


def water_equivalent_diameter_mm(p_ap: np.ndarray, p_lat: np.ndarray | None, spacing_mm) -> np.ndarray:
    """Per-z water-equivalent diameter from the AP scout (and lateral if given), AAPM TG-220 style.

    Area-equivalent: A_w = sum(p) * pixel_width / mu_w over the projection row; D_w = 2 sqrt(A_w / pi).
    """
    sx, sy, _ = spacing_mm
    area = p_ap.sum(axis=1) * sx / MU_WATER_PER_MM
    if p_lat is not None:
        area = 0.5 * (area + p_lat.sum(axis=1) * sy / MU_WATER_PER_MM)
    return 2.0 * np.sqrt(np.maximum(area, 0.0) / np.pi)


@dataclass(frozen=True)
class Dose:
    ctdi_vol_mgy: float
    dlp_mgycm: float
    effective_msv: float


def ctdi_vol(kv: float, mas: float, pitch: float) -> float:
    """CTDIvol (mGy) for tube voltage kV, tube current-time product per rotation mAs, and pitch."""
    if pitch <= 0:
        raise ValueError("pitch must be > 0")
    return NCTDIW_120KV_MGY_PER_MAS * (kv / 120.0) ** 2.5 * mas / pitch


def dose(kv: float, mas: float, pitch: float, length_mm: float, region: str) -> Dose:
    c = ctdi_vol(kv, mas, pitch)
    dlp = c * max(0.0, length_mm) / 10.0
    return Dose(round(c, 3), round(dlp, 2), round(dlp * K_FACTOR_MSV_PER_MGYCM[region], 3))


def noise_sigma_hu(kv: float, mas: float, pitch: float, dw_mm: float, slice_mm: float = 5.0) -> float:
    """Image noise (HU): ~1/sqrt(effective mAs * kV^2.5 * thickness), exp growth with body size."""
    eff = max(1e-3, mas / pitch * (kv / 120.0) ** 2.5 * slice_mm / 5.0)
    size = np.exp(MU_WATER_PER_MM * (dw_mm - NOISE_REF_DW_MM) / 2.0)
    return float(NOISE_REF_HU * np.sqrt(NOISE_REF_MAS / eff) * size)


def scan_duration_s(length_mm: float, pitch: float, collimation_mm: float, rotation_s: float) -> float:
    """Helical acquisition time: length / table feed per second (rendering.geometry's formula)."""
    return helical_duration_s(length_mm, pitch, collimation_mm, rotation_s)


def box2_filter(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """A 2-sample box filter along each of `axes`, in that order: the same bytes as
    scipy.ndimage.uniform_filter with size 2 on those axes (mode 'reflect', origin 0).

    Written out because importing scipy.ndimage cost each CT console 28 MiB PSS for this one
    filter. It follows scipy's C loop exactly: the line in float64, reflected by one sample at
    the start, a running sum (first window's mean, then (x[i] - x[i-2]) / 2 added per sample,
    summed left to right as np.cumsum does), each pass cast back to the input's dtype.
    """
    out = np.asarray(x)
    for axis in axes:
        line = np.moveaxis(out, axis, -1).astype(np.float64)
        ext = np.concatenate([line[..., :1], line], axis=-1)  # reflect: x[-1] -> x[0]
        inc = np.empty_like(line)
        inc[..., 0] = (0.0 + ext[..., 0] + ext[..., 1]) / 2.0
        inc[..., 1:] = (ext[..., 2:] - ext[..., :-2]) / 2.0
        out = np.moveaxis(np.cumsum(inc, axis=-1).astype(x.dtype), -1, axis)
    return out


# ---- axial image formation (issue 33: partial-volume edges, no voxel staircases) ------------------------------
# An axial image pixel is the mean attenuation over its voxel (pixel area x slice thickness) of the body,
# blurred by the reconstruction kernel. The body is known as HU on the subject's 2 mm grid; between grid points it
# is read by linear interpolation (trilinear), never as the nearest label, so a boundary crossing a voxel gives the
# intermediate value partial volume gives on a real scanner. Along z: the slice-thickness mean of the linearly
# interpolated planes (slice_profile_weights: the exact integral, so thin slices fall between planes and thick ones
# average several); in the plane: the pixel's area mean of the interpolated image (the 2 mm box over the 2 mm tent
# sampled at the pixel centres: the taps [1, 6, 1] / 8, variance 1 mm^2) and the kernel's point-spread function.
# Kernel PSF [G]: a standard soft-tissue body kernel has MTF 50 % at about 3.5 lp/cm (AAPM TG-233 / vendor kernel
# sheets: 3-4 lp/cm for standard kernels); a Gaussian PSF with that MTF50 has sigma = sqrt(ln 2 / 2) / (pi f50)
# = 0.54 mm. The written-out taps (no scipy.ndimage in the console: see box2_filter) are deterministic numpy sums.
KERNEL_MTF50_LP_PER_MM = 0.35
KERNEL_PSF_SIGMA_MM = float(np.sqrt(np.log(2.0) / 2.0) / (np.pi * KERNEL_MTF50_LP_PER_MM))


def slice_profile_weights(z0_mm: float, z1_mm: float, origin_z_mm: float, spacing_z_mm: float, nz: int
                          ) -> tuple[int, np.ndarray, float]:
    """Weights of the voxel planes in the mean over [z0, z1] of the volume linearly interpolated along z.

    Returns (k0, w, w_outside): planes k0 .. k0 + len(w) - 1 weigh w (float64), and `w_outside` is the share of
    the slab lying beyond the volume's first or last plane (imaged as what is outside, e.g. air). The weights sum
    to 1. A slab thinner than a voxel (z0 == z1 included) is the interpolated plane at its centre."""
    lo, hi = (float(z0_mm) - origin_z_mm) / spacing_z_mm, (float(z1_mm) - origin_z_mm) / spacing_z_mm
    if hi < lo:
        lo, hi = hi, lo
    if hi - lo < 1e-9:  # a plane: the linear interpolation weights themselves
        k = math.floor(lo)
        ks, ws = [k, k + 1], [1.0 - (lo - k), lo - k]
    else:
        def tent_integral(u: float) -> float:  # integral of max(0, 1 - |t|) from -inf to u
            u = min(1.0, max(-1.0, u))
            return 0.5 * (1.0 + u) ** 2 if u < 0.0 else 1.0 - 0.5 * (1.0 - u) ** 2
        ks = list(range(math.floor(lo), math.ceil(hi) + 1))
        ws = [(tent_integral(hi - k) - tent_integral(lo - k)) / (hi - lo) for k in ks]
    w_out = math.fsum(w for k, w in zip(ks, ws) if not 0 <= k < nz)
    inside = [(k, w) for k, w in zip(ks, ws) if 0 <= k < nz]
    if not inside:
        return 0, np.zeros(0), 1.0
    return inside[0][0], np.array([w for _, w in inside]), float(w_out)


def slab_mean_hu(labels: np.ndarray, lut: np.ndarray, z0_mm: float, z1_mm: float, origin_z_mm: float,
                 spacing_z_mm: float, outside_hu: float) -> np.ndarray:
    """float32 (ny, nx): the mean over [z0, z1] of lut[labels] linearly interpolated along z (the slice
    thickness's partial volume), `outside_hu` beyond the volume's ends."""
    k0, w, w_out = slice_profile_weights(z0_mm, z1_mm, origin_z_mm, spacing_z_mm, labels.shape[0])
    out: np.ndarray | None = None
    for j, wk in enumerate(w):
        if wk > 0.0:
            term = lut[labels[k0 + j]] * np.float32(wk)
            out = term if out is None else np.add(out, term, out=out)
    if out is None:
        return np.full(labels.shape[1:], float(outside_hu), np.float32)
    if w_out > 0.0:
        out += np.float32(w_out * float(outside_hu))
    return out


def _inplane_taps(pixel_mm: float) -> np.ndarray:
    """The in-plane taps [b, 1 - 2b, b] on a grid of `pixel_mm`: the pixel's area mean of the linearly
    interpolated image ([1, 6, 1] / 8, variance 1/4 pixel^2) convolved with the kernel PSF, as the 3 taps with
    the two's summed variance (2b = 1/4 + (sigma_psf / pixel)^2; their 5-tap product differs only beyond it)."""
    b = 0.125 + 0.5 * (KERNEL_PSF_SIGMA_MM / pixel_mm) ** 2
    return np.array([b, 1.0 - 2.0 * b, b])


def axial_psf(stack: np.ndarray, pixel_mm: tuple[float, float]) -> np.ndarray:
    """The in-plane partial volume and kernel blur of axial images (n, ny, nx), separable along y then x
    (edges replicated), float32 sums in a fixed order (deterministic)."""
    x = np.asarray(stack, np.float32)
    for axis, mm in ((1, pixel_mm[1]), (2, pixel_mm[0])):
        b, c, _ = (np.float32(t) for t in _inplane_taps(mm))
        src = np.moveaxis(x, axis, -1)
        acc = src * c
        acc[..., 1:] += src[..., :-1] * b
        acc[..., :1] += src[..., :1] * b
        acc[..., :-1] += src[..., 1:] * b
        acc[..., -1:] += src[..., -1:] * b
        x = np.moveaxis(acc, -1, axis)
    return np.ascontiguousarray(x)


def reconstruct_axial_stack(hu_image_fn, n_images: int, pixel_mm: tuple[float, float], sigma_hu: float,
                            rng: np.random.Generator) -> np.ndarray:
    """Axial images: `hu_image_fn(i)` gives image i's slab-mean HU (ny, nx) (slab_mean_hu: the caller maps the
    table slab to subject coordinates, keeps the skeleton rigid and applies contrast); the in-plane partial volume
    and kernel blur (axial_psf) and noise are added here. The noise is white Gaussian smoothed once so its texture
    looks like CT noise rather than salt and pepper."""
    stack = axial_psf(np.stack([hu_image_fn(i) for i in range(n_images)]), pixel_mm)
    noise = rng.standard_normal(stack.shape).astype(np.float32)
    noise = box2_filter(noise, axes=(1, 2)) * 2.0  # 2x2 box keeps sigma ~ 1 at 2x2 correlation
    return stack + sigma_hu * noise
