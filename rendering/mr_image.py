"""MR image formation: slice groups and the 3-plane localizer sampled from a subject (numpy/scipy only).

How one series is formed (shared/reference/physics.md, MR section):
1. signal volume: the sequence's per-label signal LUT (rendering/mr_physics.py) mapped through the
   label volume, times a mild receive-coil shading; float32, computed once per (subject, LUT) and cached;
2. each slice of the slice group is sampled with linear interpolation of that *signal* (never of labels,
   so oblique and zoomed images show no voxel steps), averaged over sub-planes spread across the slice
   thickness;
3. seeded Rician noise: magnitude of (signal + complex Gaussian noise), sigma from a simple SNR model
   (voxel volume, sqrt(averages), field strength).

Slice group geometry: centre c, pose (normal and in-plane rotation), FOV read x phase, matrix, thickness,
gap and N slices; slice centres c + (k - (N-1)/2)(thickness + gap) n, i.e. the group is centred on c as
on a scanner's planning card. Read runs along the pose's u (image columns), phase along v (rows).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Sequence

import numpy as np

from .geometry import OrientedBox, PlanePose, ResliceGrid, reslice_indices
from .memo import reusable
from .mr_physics import PRESETS, SequenceParams, signal_lut
from .seeding import seeded_rng

# ---- SNR model ------------------------------------------------------------------------------------
# SNR ~ voxel volume x sqrt(averages) x B0 [G]. Calibrated so a 1.5 x 1.5 x 6 mm voxel at 1.5 T with one
# average has sigma = 0.5% of fully relaxed water: cine bSSFP blood/myocardium SNR ~ 35/12, HASTE liver ~ 20.
SIGMA_REF = 0.005
REF_VOXEL_MM3 = 1.5 * 1.5 * 6.0
REF_FIELD_T = 1.5

# ---- receive-coil shading ---------------------------------------------------------------------------
# Anterior body array on the body's front surface plus the spine array in the table top: sensitivity
# falls with depth from either, so the middle of a thick abdomen is ~10% darker than its surfaces.
SHADING_FLOOR = 0.8
SHADING_GAIN = 0.2
SHADING_DEPTH_MM = 100.0

# ---- localizer defaults [G]: 8 mm slices, 450 mm FOV, 256 matrix (the stacks per plane: consoles/mr/protocols.py)
LOCALIZER_FOV_MM = 450.0
LOCALIZER_MATRIX = 256
LOCALIZER_THICKNESS_MM = 8.0

_CACHE_SIZE = 4  # signal volumes kept (33 MB each for the 2 mm procedural subjects)
# Half of a torso image is air, whose signal is exactly 0. Blocks of 4^3 voxels record where signal
# exists, so only pixels that can see some are interpolated (same bytes, about half the work).
_BLOCK = 4
_lock = threading.Lock()
_volumes: "OrderedDict[tuple, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_shading: "OrderedDict[int, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_support: "OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray]]" = OrderedDict()


# ---- geometry ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SliceGroup:
    """A stack of parallel slices: pose (group centre; u = read/columns, v = phase/rows), FOV, matrix,
    slice thickness, gap and count. `matrix_phase` None keeps pixels square."""

    pose: PlanePose
    fov_read_mm: float = 350.0
    fov_phase_mm: float = 350.0
    matrix_read: int = 256
    matrix_phase: int | None = None
    thickness_mm: float = 6.0
    gap_mm: float = 0.0
    n_slices: int = 1

    def __post_init__(self) -> None:
        if self.fov_read_mm <= 0 or self.fov_phase_mm <= 0:
            raise ValueError("FOV must be > 0 mm")
        if self.matrix_read < 1 or (self.matrix_phase is not None and self.matrix_phase < 1):
            raise ValueError("matrix must be >= 1")
        if self.thickness_mm <= 0:
            raise ValueError("slice thickness must be > 0 mm")
        if self.n_slices < 1:
            raise ValueError("a slice group has at least one slice")
        if self.gap_mm <= -self.thickness_mm:
            raise ValueError("gap must be larger than -thickness (slices may overlap, not coincide)")

    @classmethod
    def from_normal(cls, centre: Any, normal: Any, inplane_deg: float = 0.0, **kw: Any) -> "SliceGroup":
        """A group from its centre, slice normal and in-plane rotation (PlanePose.from_normal conventions)."""
        return cls(PlanePose.from_normal(centre, normal, inplane_deg), **kw)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) = (phase, read) matrix of each image."""
        mp = self.matrix_phase
        if mp is None:
            mp = max(1, int(round(self.matrix_read * self.fov_phase_mm / self.fov_read_mm)))
        return mp, self.matrix_read

    @property
    def pixel_mm(self) -> tuple[float, float]:
        """(du, dv): pixel spacing along read (columns) and phase (rows)."""
        rows, cols = self.shape
        return self.fov_read_mm / cols, self.fov_phase_mm / rows

    @property
    def voxel_mm3(self) -> float:
        du, dv = self.pixel_mm
        return du * dv * self.thickness_mm

    def offsets_mm(self) -> np.ndarray:
        """Signed distance of each slice centre from the group centre along the normal."""
        k = np.arange(self.n_slices, dtype=float) - (self.n_slices - 1) / 2.0
        return k * (self.thickness_mm + self.gap_mm)

    def slice_pose(self, k: int) -> PlanePose:
        return self.pose.translated(self.offsets_mm()[k] * self.pose.normal)

    def grid(self, k: int) -> ResliceGrid:
        """Pixel grid of slice k (row 0 at the top), for placing the image in a viewport."""
        return ResliceGrid(self.slice_pose(k), self.shape, self.pixel_mm)

    def slab(self) -> OrientedBox:
        """The box the whole group covers (FOV x total extent including gaps)."""
        extent = self.n_slices * self.thickness_mm + (self.n_slices - 1) * self.gap_mm
        return OrientedBox(self.pose, (self.fov_read_mm / 2.0, self.fov_phase_mm / 2.0, extent / 2.0))


LOCALIZER_PLANES = ("sagittal", "coronal", "transverse")


def localizer_groups(isocentre: Any, fov_mm: float = LOCALIZER_FOV_MM, matrix: int = LOCALIZER_MATRIX,
                     thickness_mm: float = LOCALIZER_THICKNESS_MM,
                     stacks: Sequence[tuple[int, float]] | None = None) -> list[tuple[str, SliceGroup]]:
    """The 3-plane localizer: a sagittal, a coronal and a transverse stack of parallel slices, each centred on
    the isocentre. `stacks` gives (slice count, centre-to-centre spacing mm) per plane in that order (slices
    thicker than the spacing lie contiguous); None (the default) is one slice per plane through the isocentre."""
    stacks = [(1, thickness_mm)] * 3 if stacks is None else [(int(n), float(sp)) for n, sp in stacks]
    if len(stacks) != 3:
        raise ValueError("a 3-plane localizer has one stack per plane (sagittal, coronal, transverse)")
    poses = (PlanePose.sagittal(isocentre), PlanePose.coronal(isocentre), PlanePose.axial(isocentre))
    out = []
    for plane, pose, (n, spacing) in zip(LOCALIZER_PLANES, poses, stacks):
        # slices thicker than the spacing (a repeated row's thickness edit) are stacked contiguously
        out.append((plane, SliceGroup(pose, fov_read_mm=fov_mm, fov_phase_mm=fov_mm, matrix_read=matrix,
                                      thickness_mm=thickness_mm, gap_mm=max(0.0, spacing - thickness_mm),
                                      n_slices=n)))
    return out


def localizer_planes(series: "MRSeries") -> dict[str, list[int]]:
    """A localizer's images grouped by plane: {plane name: 0-based image indices in slice order}, planes in the
    order the series holds them (sagittal, coronal, transverse)."""
    out: dict[str, list[int]] = {}
    for k, im in enumerate(series.images):
        out.setdefault(im.name, []).append(k)
    return out


# ---- results ----------------------------------------------------------------------------------------
class MRImage:
    """One magnitude image: float32 (rows, cols) with row 0 at the top of the screen, in units of fully
    relaxed water; `grid` holds its plane pose and pixel spacing.

    `pixels` may be given, or formed on first use by `form` (a pure function of the acquisition: the localizer's
    33 slices are formed as a viewport, a thumbnail or a measurement first asks for each, so a console that shows
    three of them never pays for thirty; the bytes do not depend on the order of asking)."""

    def __init__(self, pixels: np.ndarray | None, grid: ResliceGrid, thickness_mm: float, index: int = 0,
                 name: str = "", *, form: Callable[[], np.ndarray] | None = None) -> None:
        if pixels is None and form is None:
            raise ValueError("an MR image needs its pixels or the function that forms them")
        self._pixels = pixels
        self._form = form
        self.grid = grid
        self.thickness_mm = thickness_mm
        self.index = index
        self.name = name

    @property
    def pixels(self) -> np.ndarray:
        if self._pixels is None:
            self._pixels = self._form()
            self._form = None  # the signal volume it holds is no longer needed
        return self._pixels

    @property
    def formed(self) -> bool:
        """Whether the pixels exist yet (tests: a console start forms only what it shows)."""
        return self._pixels is not None

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols), without forming the pixels."""
        return self.grid.shape

    @property
    def pose(self) -> PlanePose:
        return self.grid.pose

    @property
    def pixel_mm(self) -> tuple[float, float]:
        return self.grid.pixel_mm

    def placement(self) -> tuple[float, float, float, float]:
        """(u0, v_top, du, dv) for ImageViewport.set_image."""
        return self.grid.placement()


@dataclass(frozen=True, eq=False)
class MRSeries:
    """An acquired series: images in slice order plus what formed them."""

    images: tuple[MRImage, ...]
    sequence: SequenceParams
    field_t: float
    noise_sigma: float
    seed: Any = 0
    window_images: tuple[int, ...] | None = field(default=None, kw_only=True)  # set auto_window (None: all)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, k: int) -> MRImage:
        return self.images[k]

    def stack(self) -> np.ndarray:
        """float32 (n, rows, cols)."""
        return np.stack([im.pixels for im in self.images])

    @cached_property
    def auto_window(self) -> tuple[float, float]:
        """(level, width) a scanner would open the series with: 0 to the 99.5th percentile of its images (of
        the localizer: of each plane's middle slice, the three it opens on; computed once: every viewport the
        series is loaded into asks for it)."""
        ks = range(len(self.images)) if self.window_images is None else self.window_images
        hi = float(np.percentile(np.concatenate([self.images[k].pixels.ravel() for k in ks]), 99.5))
        hi = max(hi, 1e-6)
        return hi / 2.0, hi


# ---- signal volume ------------------------------------------------------------------------------------
def noise_sigma(voxel_mm3: float, averages: float = 1.0, field_t: float = REF_FIELD_T) -> float:
    """Noise sigma (units of fully relaxed water): SNR ~ voxel volume x sqrt(averages) x B0."""
    if voxel_mm3 <= 0 or averages <= 0 or field_t <= 0:
        raise ValueError("voxel volume, averages and field strength must be > 0")
    return SIGMA_REF * (REF_VOXEL_MM3 / voxel_mm3) / math.sqrt(averages) * (REF_FIELD_T / field_t)


def coil_shading(subject: Any) -> np.ndarray:
    """float32 (nz, ny, 1) receive sensitivity: anterior array on the body's front, spine array at the
    table top (cached per label volume)."""
    labels = subject.labels
    with _lock:
        hit = _shading.get(id(labels))
        if hit is not None and hit[0] is labels:
            return hit[1]
    nz, ny, _ = labels.shape
    y = subject.origin_mm[1] + subject.spacing_mm[1] * np.arange(ny)
    body_rows = np.any(labels != 0, axis=2)  # (nz, ny): which AP rows hold body at each z
    has_body = body_rows.any(axis=1)
    table_y = float(getattr(subject, "table_top_y_mm", 0.0))
    # The anterior array lies on the most anterior body point of each z (y grows posteriorly).
    y_front = np.where(has_body, y[np.argmax(body_rows, axis=1)], table_y)
    d_ant = np.clip(y[None, :] - y_front[:, None], 0.0, None)
    d_post = np.clip(table_y - y[None, :], 0.0, None)
    s = SHADING_FLOOR + SHADING_GAIN * (np.exp(-d_ant / SHADING_DEPTH_MM) + np.exp(-d_post / SHADING_DEPTH_MM))
    out = s.astype(np.float32)[:, :, None]
    out.setflags(write=False)
    with _lock:
        _shading[id(labels)] = (labels, out)
        while len(_shading) > _CACHE_SIZE:
            _shading.popitem(last=False)
    return out


def signal_volume(subject: Any, seq: SequenceParams, field_t: float = 1.5, shading: bool = True) -> np.ndarray:
    """float32 signal per voxel (nz, ny, nx) for this sequence and field: LUT[labels] x coil shading.

    Cached per label volume and LUT, so repeated series with the same contrast reuse it; read-only."""
    lut = signal_lut(subject.tissues, seq, field_t)
    labels = subject.labels
    key = (id(labels), lut.tobytes(), bool(shading))
    with _lock:
        hit = _volumes.get(key)
        if hit is not None and hit[0] is labels:
            _volumes.move_to_end(key)
            return hit[1]
    # one gather over the label volume: cheaper than any per-label loop. Indexing, not np.take: take
    # first casts the uint8 labels to a full-volume intp array (several times slower, same values)
    vol = lut[labels]
    if shading:
        np.multiply(vol, coil_shading(subject), out=vol)
    vol.setflags(write=False)
    with _lock:
        _volumes[key] = (labels, vol)
        while len(_volumes) > _CACHE_SIZE:
            _volumes.popitem(last=False)
    return vol


def clear_cache() -> None:
    with _lock:
        _volumes.clear()
        _shading.clear()
        _support.clear()


def subplane_offsets_mm(thickness_mm: float, voxel_mm: float) -> np.ndarray:
    """Where across the slice thickness to sample: M = ceil(thickness / voxel) planes, evenly spread.

    Linear interpolation already spreads each sample over +-1 voxel (a tent); tents one voxel apart sum
    to a flat top, so M planes give a slice profile with a FWHM of the thickness, at the least cost.
    """
    m = max(1, int(math.ceil(thickness_mm / voxel_mm - 1e-6)))
    return -thickness_mm / 2.0 + (np.arange(m) + 0.5) * thickness_mm / m


def _support_blocks(volume: np.ndarray, radius: int) -> np.ndarray:
    """bool blocks (padded by `radius` blocks on every side): True where a block or one within
    `radius` blocks (Chebyshev) holds non-zero signal. Cached per signal volume and radius."""
    key = (id(volume), radius)
    with _lock:
        hit = _support.get(key)
        if hit is not None and hit[0] is volume:
            return hit[1]
    from scipy import ndimage

    b = _BLOCK
    nz = volume != 0
    pads = [(0, (-n) % b) for n in nz.shape]
    nz = np.pad(nz, pads)
    blocks = nz.reshape(nz.shape[0] // b, b, nz.shape[1] // b, b, nz.shape[2] // b, b)
    # the same OR as .any(axis=(1, 3, 5)), one axis at a time from the outermost: each step reduces whole
    # contiguous runs (about 5x faster than numpy's strided multi-axis reduction)
    occ = blocks.max(axis=1).max(axis=2).max(axis=3)
    occ = np.pad(occ, radius)
    if radius > 0:
        occ = ndimage.maximum_filter(occ, size=2 * radius + 1, mode="constant", cval=False)
    with _lock:
        _support[key] = (volume, occ)
        while len(_support) > 2 * _CACHE_SIZE:
            _support.popitem(last=False)
    return occ


def slice_sampling(subject: Any, grid: ResliceGrid, thickness_mm: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a slice samples the volume: (base (3, rows*cols) centre-plane voxel indices in (k, j, i)
    order, step (3,) index change per mm along the normal, offsets (M,) mm of the sub-planes).
    Sample point m of pixel p is base[:, p] + step * offsets[m] (rendering.mr_mapping reuses this)."""
    spacing = np.asarray(subject.spacing_mm, float)
    idx = reslice_indices(grid, subject.origin_mm, spacing)  # (3, rows, cols), (k, j, i) order
    offs = subplane_offsets_mm(thickness_mm, float(spacing.min()))
    step = (grid.pose.normal / spacing)[::-1]  # voxel index change per mm along the normal
    return idx.reshape(3, -1), step, offs


def _sample_slice(volume: np.ndarray, subject: Any, grid: ResliceGrid, thickness_mm: float,
                  skip_empty: bool = True) -> np.ndarray:
    """Noise-free slice: mean of linearly interpolated sub-planes across the thickness.

    With `skip_empty`, pixels whose sub-plane samples cannot reach a non-zero voxel are left at 0
    without interpolating them; the result is byte-identical to interpolating every pixel."""
    from scipy import ndimage

    spacing = np.asarray(subject.spacing_mm, float)
    base, step, offs = slice_sampling(subject, grid, thickness_mm)
    sel: np.ndarray | None = None
    if skip_empty:
        # A sample within |w| <= thickness/2 of the centre-plane pixel reads voxels at most
        # reach voxels away (+ sqrt(3) for the trilinear neighbourhood); dilate the blocks that far.
        reach = float(np.max(np.abs(offs)) / spacing.min()) + math.sqrt(3.0)
        radius = int(math.ceil(reach / _BLOCK))
        occ = _support_blocks(volume, radius)
        blk = np.floor(base / _BLOCK).astype(np.int64) + radius
        inside = np.all((blk >= 0) & (blk < np.asarray(occ.shape)[:, None]), axis=0)
        sel = np.flatnonzero(inside)
        sel = sel[occ[blk[0, sel], blk[1, sel], blk[2, sel]]]
        base = base[:, sel]
    coords = base[:, None, :] + step[:, None, None] * offs[None, :, None]
    # order=1 needs no spline prefilter: sampling the float32 volume directly keeps it a few ms per plane.
    planes = ndimage.map_coordinates(volume, coords, order=1, mode="constant", cval=0.0,
                                     output=np.float32, prefilter=False)
    vals = planes.mean(axis=0, dtype=np.float32) if len(offs) > 1 else planes[0]
    if sel is None:
        return vals.reshape(grid.shape)
    out = np.zeros(grid.shape[0] * grid.shape[1], np.float32)
    out[sel] = vals
    return out.reshape(grid.shape)


def _rng(subject: Any, seed: Any) -> np.random.Generator:
    parts = seed if isinstance(seed, (tuple, list)) else (seed,)
    return seeded_rng("mr_noise", getattr(subject, "id", "?"), *parts)


def _add_rician(images: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Magnitude of signal plus complex white Gaussian noise (real and imaginary sigma each)."""
    n = rng.standard_normal((2,) + images.shape, dtype=np.float32)
    n *= np.float32(sigma)
    n[0] += images
    return np.hypot(n[0], n[1])


@reusable
def acquire_series(subject: Any, group: SliceGroup, seq: SequenceParams, *, field_t: float = 1.5,
                   averages: float = 1.0, seed: Any = 0, noise: bool = True, shading: bool = True,
                   names: Sequence[str] | None = None) -> MRSeries:
    """Form every slice of a slice group. Deterministic: the same seed gives identical bytes.

    `seed` may be any value or tuple (e.g. (episode seed, series number), so a repeated series gets new
    noise); `noise=False` returns the noise-free magnitude (tests, oracles)."""
    vol = signal_volume(subject, seq, field_t, shading)
    grids = [group.grid(k) for k in range(group.n_slices)]
    clean = np.stack([_sample_slice(vol, subject, g, group.thickness_mm) for g in grids])
    sigma = noise_sigma(group.voxel_mm3, averages, field_t)
    pixels = _add_rician(clean, sigma, _rng(subject, seed)) if noise else clean
    images = tuple(MRImage(pixels[k], grids[k], group.thickness_mm, k, names[k] if names else "")
                   for k in range(group.n_slices))
    return MRSeries(images, seq, float(field_t), sigma if noise else 0.0, seed)


@reusable
def acquire_localizer(subject: Any, isocentre: Any, seq: SequenceParams | None = None, *, field_t: float = 1.5,
                      fov_mm: float = LOCALIZER_FOV_MM, matrix: int = LOCALIZER_MATRIX,
                      thickness_mm: float = LOCALIZER_THICKNESS_MM, averages: float = 1.0, seed: Any = 0,
                      noise: bool = True, shading: bool = True,
                      stacks: Sequence[tuple[int, float]] | None = None) -> MRSeries:
    """The 3-plane localizer about the isocentre: every slice of the sagittal, then the coronal, then the
    transverse stack (`localizer_groups`), each in slice order along its plane's normal. Each image is named by
    its plane (`localizer_planes` groups them) and formed when first used, with its own noise draw (seeded by
    the episode's seed and its index); the series opens with the window of each plane's middle slice."""
    seq = PRESETS["localizer_bssfp"] if seq is None else seq
    groups = localizer_groups(isocentre, fov_mm, matrix, thickness_mm, stacks)
    vol = signal_volume(subject, seq, field_t, shading)
    named = [(plane, g.grid(k)) for plane, g in groups for k in range(g.n_slices)]
    sigma = noise_sigma(groups[0][1].voxel_mm3, averages, field_t)

    def former(k: int, grid: ResliceGrid) -> Callable[[], np.ndarray]:
        def form() -> np.ndarray:  # each image its own noise draw, so no image depends on another's
            clean = _sample_slice(vol, subject, grid, thickness_mm)
            return _add_rician(clean, sigma, _rng(subject, ("localizer", seed, k))) if noise else clean
        return form

    images = tuple(MRImage(None, gr, thickness_mm, k, plane, form=former(k, gr)) for k, (plane, gr) in enumerate(named))
    middles, k0 = [], 0
    for _, g in groups:
        middles.append(k0 + g.n_slices // 2)
        k0 += g.n_slices
    return MRSeries(images, seq, float(field_t), sigma if noise else 0.0, seed, window_images=tuple(middles))


def noise_free_images(subject: Any, series: MRSeries, shading: bool = True) -> np.ndarray:
    """float32 (n, rows, cols): every image of an acquired series formed again without noise (same
    sequence, field, grids and slice thickness), e.g. to measure the pixel noise of the displayed image."""
    vol = signal_volume(subject, series.sequence, series.field_t, shading)
    return np.stack([_sample_slice(vol, subject, im.grid, im.thickness_mm) for im in series.images])


def noise_free_image(subject: Any, series: MRSeries, k: int, shading: bool = True) -> np.ndarray:
    """float32 (rows, cols): image k of an acquired series formed again without noise (noise_free_images, one
    image: the same bytes as its row there)."""
    vol = signal_volume(subject, series.sequence, series.field_t, shading)
    im = series.images[k]
    return _sample_slice(vol, subject, im.grid, im.thickness_mm)


def display_grey(pixels: np.ndarray, level: float, width: float) -> np.ndarray:
    """The 8-bit grey a viewport shows for `pixels` at (level, width): the linear window from level - width/2
    (black) to level + width/2 (white), rounded to 0-255, as float64."""
    if width <= 0:
        raise ValueError(f"window width must be > 0, got {width}")
    g = (np.asarray(pixels, np.float64) - (level - width / 2.0)) / width * 255.0
    return np.rint(np.clip(g, 0.0, 255.0))
