"""Quantitative cardiac T1 (MOLLI) and T2 (T2-prepared bSSFP) mapping: acquisition and per-pixel fits.

Pure numpy/scipy (no Qt/VTK). Numbers from shared/reference/physics.md (MR section) unless marked [G].

    s = acquire_t1_map(subject, slice_group, "5(3)3", heart_rate_bpm, field_t=1.5, trigger="ecg",
                       trigger_delay_ms=..., acq_window_ms=..., shim_box=OrientedBox | None, seed=...)
    s.sources (MRImage per TI, sorted), s.times_ms, s.map_ms (float32), s.fit_ok, s.meta (causes)
    roi_stats(s.map_ms, mask, s.fit_ok) -> mean, SD (ms);  myocardial_roi(...) for the oracle

How a map is formed
1. Slice sampling: the slice is sampled exactly where rendering.mr_image samples it
   (mr_image.slice_sampling: centre-plane indices, sub-planes across the thickness); the trilinear
   weights of every sample are accumulated per *tissue class* (labels sharing T1, T2, PD), so each pixel
   holds its partial-volume mixture (slice position, thickness and tilt act through it). Every source
   image is then a small product (class signals -> pixels) instead of a full-volume gather per image;
   W @ lut reproduces mr_image's interpolated signal (test).
2. Magnetisation: a Bloch simulation (4x4 homogeneous matrices, vectorised over tissue class x
   off-resonance bin) of the protocol timeline over heartbeats: adiabatic inversions (MOLLI), T2
   preparations (exp(-TE_prep/T2), ideal MLEV refocusing) after a dummy shot, free T1 recovery, and every
   single-shot bSSFP readout (alpha/2 catalyst, alternating +-alpha, TR). The image value is |Mxy|
   averaged over the lines around the k-space centre. The readout saturates Mz, so the apparent MOLLI
   recovery T1* < T1, and the fit's Look-Locker correction T1 = T1* (B/A - 1) recovers T1.
   The tissue table's cardiac values are mapping measurements ("myocardium native T1 (MOLLI)"), so the
   simulation runs on the underlying T1/T2 that an ideal 5(3)3 / T2-prep acquisition at 60 bpm reports
   as the table's value (`true_relaxation`); heart rate, scheme, flip, off-resonance and motion keep
   their physical bias against it (e.g. 4(1)3(1)2 reads native T1 lower as the heart rate rises).
3. Off-resonance df (Hz) per pixel from the shim (`b0_offresonance_hz`): a residual inside the shim box
   (physics.md: +-20-50 Hz), growing with the distance outside it and near the heart-lung interface,
   doubled at 3 T. The readout is simulated per bin of the phase per TR; the image takes the bSSFP
   steady-state profile (flat, dark bands at phi = +-pi) from the same operators. The transient's
   dependence on phi biases the fitted T1 next to the bands (~10 % low), and the bands themselves make
   the fit fail or scatter.
4. Cardiac motion: a displacement field (bulk translation along a seeded direction plus a radial
   contraction about the LV centre, tethered to the tissue around the heart) scaled by a cardiac-cycle
   excursion curve (systole, rapid filling, diastasis, atrial kick). Every phase-encoding row of k-space
   is taken from the image warped to the excursion at that row's acquisition time (line mixing), so
   motion during a shot blurs and ghosts along phase encoding, and shots at different phases are
   misregistered (T1 scatters). An ECG-triggered shot inside diastasis sees a still heart.
5. Seeded Rician noise (mr_image._add_rician; sigma from mr_image.noise_sigma, raised for the few lines
   of a single shot), receive-coil shading (mr_image.coil_shading).
6. Per-pixel fits, vectorised: MOLLI 3-parameter fit with polarity restoration (grid over T1* with
   closed-form least squares for A, B via projections, then Gauss-Newton); T2 mono-exponential
   (grid + projection, then Gauss-Newton). A 192 x 192 MOLLI fit takes ~35 ms of CPU.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .geometry import OrientedBox, ResliceGrid, reslice
from .memo import reusable
from .mr_image import MRImage, SliceGroup, _add_rician, coil_shading, noise_sigma, slice_sampling
from .mr_physics import relaxation
from .seeding import seeded_rng

# ---- protocols ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Readout:
    """Single-shot bSSFP readout of one source image (times in ms, flip in degrees).

    n_lines phase-encoding lines are acquired (partial Fourier + parallel imaging, [G]); the k-space
    centre is line `centre_line` (1-based), so the effective TI / prep time is measured to it."""

    flip_deg: float = 35.0
    tr_ms: float = 2.7
    n_lines: int = 72
    centre_line: int = 24

    def __post_init__(self) -> None:
        if not (0 < self.flip_deg < 180 and self.tr_ms > 0 and 1 <= self.centre_line <= self.n_lines):
            raise ValueError("readout: flip in (0, 180), TR > 0 and 1 <= centre line <= lines")

    @property
    def shot_ms(self) -> float:
        """Duration of the shot: catalyst (TR/2) plus n_lines TRs."""
        return (self.n_lines + 0.5) * self.tr_ms

    @property
    def centre_ms(self) -> float:
        """From the start of the shot to the echo of the centre line."""
        return self.centre_line * self.tr_ms


# MOLLI [G]: bSSFP, 35 deg, TR ~2.7 ms; T2-prep bSSFP [G] (Giri 2009): 70 deg. 192 phase rows with 6/8
# partial Fourier and 2x parallel imaging: 72 lines; MOLLI centre after 24 (linear), T2-prep early (8).
PARTIAL_FOURIER = 0.75
ACCELERATION = 2
MOLLI_READOUT = Readout(35.0, 2.7, 72, 24)
T2PREP_READOUT = Readout(70.0, 2.7, 72, 8)


def readout_for(kind: str, phase_rows: int) -> Readout:
    """The default readout of a map with this many phase-encoding rows (192 gives MOLLI_READOUT /
    T2PREP_READOUT): more rows, more lines, a longer shot."""
    n = max(8, int(round(phase_rows * PARTIAL_FOURIER / ACCELERATION)))
    if kind == "t1":
        return Readout(MOLLI_READOUT.flip_deg, MOLLI_READOUT.tr_ms, n,
                       max(1, n - int(round(phase_rows / (2 * ACCELERATION)))))
    return Readout(T2PREP_READOUT.flip_deg, T2PREP_READOUT.tr_ms, n, max(1, int(round(n / 9))))


@dataclass(frozen=True)
class MolliScheme:
    """A MOLLI scheme: inversion blocks, images per block (one per heartbeat), recovery heartbeats
    after each block but the last, and the first TI of each block (inversion -> centre line, ms)."""

    name: str
    images: tuple[int, ...]
    recovery_beats: tuple[int, ...]
    ti0_ms: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (len(self.images) == len(self.ti0_ms) == len(self.recovery_beats) + 1):
            raise ValueError(f"scheme {self.name}: blocks, TI0s and recovery beats do not match")

    @property
    def n_images(self) -> int:
        return int(sum(self.images))

    @property
    def n_beats(self) -> int:
        return int(sum(self.images) + sum(self.recovery_beats))

    def beats(self) -> list[tuple[int, int, int]]:
        """(block, index within block, heartbeat) of every image."""
        out, beat = [], 0
        for b, n in enumerate(self.images):
            out += [(b, j, beat + j) for j in range(n)]
            beat += n + (self.recovery_beats[b] if b < len(self.recovery_beats) else 0)
        return out


@dataclass(frozen=True)
class T2PrepScheme:
    """T2-prepared bSSFP: one image per preparation time, `recovery_beats` heartbeats between images."""

    name: str
    prep_ms: tuple[float, ...] = (0.0, 25.0, 55.0)
    recovery_beats: int = 3

    @property
    def n_images(self) -> int:
        return len(self.prep_ms)

    @property
    def n_beats(self) -> int:
        """Heartbeats of the breath-hold, with the dummy shot's recovery period."""
        return 1 + len(self.prep_ms) * (self.recovery_beats + 1)


# physics.md: 5(3)3, 11 heartbeats, first TI ~120 ms, second ~200 ms; 4(1)3(1)2 (Kellman) [G].
MOLLI_SCHEMES: dict[str, MolliScheme] = {
    "5(3)3": MolliScheme("5(3)3", (5, 3), (3,), (120.0, 200.0)),
    "4(1)3(1)2": MolliScheme("4(1)3(1)2", (4, 3, 2), (1, 1), (100.0, 180.0, 260.0)),
}
T2_SCHEMES: dict[str, T2PrepScheme] = {"t2prep_0_25_55": T2PrepScheme("t2prep_0_25_55", (0.0, 25.0, 55.0), 3)}
TRIGGERS = ("ecg", "pulse", "none")
NOMINAL_CYCLE_MS = 1000.0  # untriggered: the sequence runs on a nominal 1 s "heartbeat" (as consoles/mr)
HRV_FRACTION = 0.04  # beat-to-beat RR variability (SD / RR) at rest [G]
PULSE_DELAY_MS = 250.0  # peripheral pulse wave arrives ~200-300 ms after the R wave [G]

# ---- cardiac motion [G] ------------------------------------------------------------------------------
HEART_DISPLACEMENT_MM = 6.0  # peak in-plane bulk translation of the heart in systole
SYSTOLE_MS_AT_60 = 300.0  # systole ~ 0.3 s at 60 bpm, scaling with sqrt(RR) (Bazett)
FILLING_MS_AT_60 = 160.0  # rapid filling
ATRIAL_MS = 150.0  # atrial kick before the next R wave
ATRIAL_FRACTION = 0.2

# ---- off-resonance model [G] (physics.md: +-20-50 Hz inside the shim box, growing outside, more at 3 T) ----
RESIDUAL_HZ_PER_MM = 0.25  # residual linear gradient inside the shim volume (+-25 Hz over +-100 mm) at 1.5 T
OUTSIDE_HZ_PER_MM = 4.0  # growth of the off-resonance with distance outside the shim volume at 1.5 T
LUNG_INTERFACE_HZ = 120.0  # unshimmed heart-lung susceptibility field at 1.5 T
LUNG_INTERFACE_MM = 12.0  # its fall-off into the tissue
SHIM_FALLOFF_MM = 25.0  # a shim over a volume also helps just outside it
# The Bloch readout is simulated per bin of the phase per TR. The catalyst and the echo are half a TR
# from a pulse, so the transient is periodic in 4 pi (not 2 pi) per TR: bins cover [-2 pi, 2 pi).
N_OFFRES_BINS = 192
BAND_HALF_WIDTH_RAD = 0.6  # a pixel is "in a band" within this of phi = +-pi (signal < ~half)
INTRAVOXEL_PHI_RAD = 0.15  # spread of phase per TR within a voxel (~+-10 Hz at TR 2.7 ms) [G]

NOISE_FLOOR_SIGMAS = 6.0  # the fit skips pixels whose brightest source image is below this (background)
INVERSION_EFFICIENCY = 1.0  # adiabatic inversion, ideal
HEART_LABELS = ("lv_blood", "lv_myocardium", "rv_blood", "la_blood", "ra_blood", "heart_wall", "heart_whole")
LUNG_LABELS = ("lung_left", "lung_right")


def _label_or(subject: Any, name: str) -> int:
    try:
        return subject.label_id(name)
    except KeyError:
        return -1


def rr_ms(heart_rate_bpm: float) -> float:
    """physics.md: RR = 60000 / HR."""
    if heart_rate_bpm <= 0:
        raise ValueError("heart rate must be > 0 bpm")
    return 60000.0 / float(heart_rate_bpm)


def readout_offset_ms(readout: Readout, trigger_delay_ms: float, acq_window_ms: float | None) -> float:
    """Start of the shot after the trigger: the shot ends at the end of the acquisition window
    (delay + window), the diastolic placement a scanner uses; a window shorter than the shot starts
    the shot at the trigger delay."""
    if acq_window_ms is None or acq_window_ms < readout.shot_ms:
        return float(trigger_delay_ms)
    return float(trigger_delay_ms + acq_window_ms - readout.shot_ms)


def heart_displacement(phase_ms: np.ndarray, rr: float) -> np.ndarray:
    """Relative in-plane heart excursion (0 = diastasis, 1 = end systole) at a time after the R wave."""
    t = np.mod(np.asarray(phase_ms, float), rr)
    s = SYSTOLE_MS_AT_60 * math.sqrt(rr / 1000.0)
    f = FILLING_MS_AT_60 * math.sqrt(rr / 1000.0)
    a = min(ATRIAL_MS, 0.2 * rr)
    g = np.zeros_like(t)
    m = t < s
    g[m] = 0.5 * (1.0 - np.cos(np.pi * t[m] / s))
    m = (t >= s) & (t < s + f)
    g[m] = 0.5 * (1.0 + np.cos(np.pi * (t[m] - s) / f))
    m = t > rr - a
    g[m] = np.maximum(g[m], ATRIAL_FRACTION * np.sin(np.pi * (t[m] - (rr - a)) / a) ** 2)
    return g


# ---- Bloch simulation -------------------------------------------------------------------------------
def _rx(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    m = np.eye(4)
    m[1, 1], m[1, 2], m[2, 1], m[2, 2] = c, -s, s, c
    return m


def _free(t_ms: float, t1: np.ndarray, t2: np.ndarray, phi_per_ms: np.ndarray) -> np.ndarray:
    """(K, 4, 4): precession by phi_per_ms * t about z and relaxation over t ms."""
    k = len(t1)
    e1, e2 = np.exp(-t_ms / t1), np.exp(-t_ms / t2)
    c, s = np.cos(phi_per_ms * t_ms), np.sin(phi_per_ms * t_ms)
    m = np.zeros((k, 4, 4))
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1] = e2 * c, -e2 * s, e2 * s, e2 * c
    m[:, 2, 2], m[:, 2, 3], m[:, 3, 3] = e1, 1.0 - e1, 1.0
    return m


def _apply(m: np.ndarray, state: np.ndarray) -> np.ndarray:
    return np.einsum("...ij,...j->...i", m, state)


WINDOW_LINES = 8  # the image value averages |Mxy| over the centre line +- this many lines (k-space centre)


@dataclass(frozen=True)
class _ReadoutOps:
    """Precomputed operators of one readout for K isochromats."""

    to_window: np.ndarray  # (K, 4, 4): from just before the catalyst to just before the window's first pulse
    first_line: int  # 1-based line of the window's first pulse
    n_window: int
    rx_neg: np.ndarray
    rx_pos: np.ndarray
    half: np.ndarray  # (K, 4, 4) TR/2 (pulse to echo)
    tr: np.ndarray  # (K, 4, 4) one TR
    full: np.ndarray  # (K, 4, 4): from just before the catalyst to the end of the shot
    band: np.ndarray  # (K,) steady-state off-resonance profile relative to on resonance


def _lines_operator(n: int, pair: np.ndarray, neg: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Catalyst then n complete lines (pulse + TR each; odd lines -alpha, even +alpha)."""
    m = np.linalg.matrix_power(pair, n // 2) @ start
    return neg @ m if n % 2 else m


def _steady_state_xy(pair: np.ndarray, half: np.ndarray, rx_neg: np.ndarray) -> np.ndarray:
    """|Mxy| at TE of the bSSFP steady state (fixed point of the two-TR operator)."""
    a3, b3 = pair[:, :3, :3], pair[:, :3, 3]
    m = np.linalg.solve(np.eye(3)[None] - a3, b3[..., None])[..., 0]
    m4 = np.concatenate([m, np.ones((len(m), 1))], axis=1)
    e = _apply(half @ rx_neg, m4)
    return np.hypot(e[:, 0], e[:, 1])


def _readout_ops(ro: Readout, t1: np.ndarray, t2: np.ndarray, phi_per_ms: np.ndarray) -> _ReadoutOps:
    a = math.radians(ro.flip_deg)
    rx_neg, rx_pos = _rx(-a), _rx(a)

    def ops(phi: np.ndarray) -> tuple[np.ndarray, ...]:
        half = _free(ro.tr_ms / 2.0, t1, t2, phi)
        tr = _free(ro.tr_ms, t1, t2, phi)
        neg, pos = tr @ rx_neg, tr @ rx_pos  # line k: pulse (-1)^k alpha, then one TR
        return half, tr, neg, pos @ neg, half @ _rx(a / 2.0)  # alpha/2 catalyst, TR/2 to line 1

    half, tr, neg, pair, start = ops(phi_per_ms)
    first = max(1, ro.centre_line - WINDOW_LINES)
    last = min(ro.n_lines, ro.centre_line + WINDOW_LINES)
    to_window = _lines_operator(first - 1, pair, neg, start)
    full = _lines_operator(ro.n_lines, pair, neg, start)
    # Dark bands: a single shot reads the transient, whose oscillations near phi = +-pi smear into
    # ghosts rather than a clean band; the train approaches the steady state, whose profile (exact,
    # from the same operators) is flat with dark bands at phi = +-pi. The image takes that profile.
    _, _, _, pair0, _ = ops(np.zeros_like(phi_per_ms))
    band = _steady_state_xy(pair, half, rx_neg) / np.maximum(
        _steady_state_xy(pair0, _free(ro.tr_ms / 2.0, t1, t2, np.zeros_like(phi_per_ms)), rx_neg), 1e-12)
    return _ReadoutOps(to_window, first, last - first + 1, rx_neg, rx_pos, half, tr, full, band)


def _window_signal(ops: _ReadoutOps, state: np.ndarray) -> np.ndarray:
    """Mean |Mxy| at the echoes of the window's lines, starting just before the catalyst."""
    st = _apply(ops.to_window, state)
    acc = np.zeros(len(state))
    for k in range(ops.first_line, ops.first_line + ops.n_window):
        st = _apply(ops.rx_neg if k % 2 else ops.rx_pos, st)
        e = _apply(ops.half, st)
        acc += np.hypot(e[:, 0], e[:, 1])
        st = _apply(ops.tr, st)
    return acc / ops.n_window


def _simulate(events: list[tuple[float, str, float]], ro: Readout, t1: np.ndarray, t2: np.ndarray,
              phi_per_tr: np.ndarray) -> np.ndarray:
    """Run a timeline of ("inv" | "prep" | "read" | "dummy", time ms, prep ms) for K isochromats from
    equilibrium (a dummy is a shot whose data are discarded).

    Readout events are at the shot start. Returns (n_readouts, K): the image value per unit PD, i.e.
    |Mxy| averaged over the k-space centre lines, times the off-resonance profile (M0 = 1)."""
    phi_per_ms = phi_per_tr / ro.tr_ms
    ops = _readout_ops(ro, t1, t2, phi_per_ms)
    k = len(t1)
    state = np.zeros((k, 4))
    state[:, 2] = state[:, 3] = 1.0
    t_now, out = 0.0, []
    zero = np.zeros(k)
    for t, kind, prep in sorted(events, key=lambda e: e[0]):
        if t < t_now - 1e-9:
            raise ValueError("protocol events overlap: a preparation falls inside a readout")
        state = _apply(_free(t - t_now, t1, t2, zero), state)  # transverse already spoiled
        t_now = t
        if kind == "inv":
            state[:, 2] *= -INVERSION_EFFICIENCY
        elif kind == "prep":
            # ideal T2 preparation (90 - MLEV refocusing - -90): Mz scaled by exp(-TE/T2); its own T1
            # recovery is neglected (TE_prep << T1)
            state[:, 2] *= np.exp(-prep / t2)
        else:
            if kind == "read":
                out.append(_window_signal(ops, state) * ops.band)
            state = _apply(ops.full, state)
            state[:, 0] = state[:, 1] = 0.0  # the long gap to the next event dephases what is left
            t_now = t + ro.shot_ms
    return np.asarray(out)


# ---- slice sampling per tissue class -------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _ClassSlice:
    """Partial-volume weights of a slice: W (pixels, classes), the class T1/T2/PD, heart and lung
    fractions and the coil shading per pixel; `present`: the classes with weight in some pixel."""

    weights: np.ndarray
    t1: np.ndarray
    t2: np.ndarray
    pd: np.ndarray
    heart: np.ndarray
    lung: np.ndarray
    shading: np.ndarray
    present: np.ndarray


def _label_classes(subject: Any, field_t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                           np.ndarray, np.ndarray]:
    """class index per label and per class (T1, T2, PD, is_heart, is_lung)."""
    rel = relaxation(subject.tissues, field_t)
    n = len(rel.t1_ms)
    names = subject.label_names
    heart = np.array([names.get(i, "") in HEART_LABELS for i in range(n)])
    lung = np.array([names.get(i, "") in LUNG_LABELS for i in range(n)])
    keys = np.stack([rel.t1_ms, rel.t2_ms, rel.pd, heart, lung], axis=1)
    uniq, cls = np.unique(keys, axis=0, return_inverse=True)
    return (cls.reshape(-1).astype(np.int64), uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3] > 0.5,
            uniq[:, 4] > 0.5)


def _class_slice(subject: Any, grid: ResliceGrid, thickness_mm: float, field_t: float) -> _ClassSlice:
    """Trilinear weights of mr_image's slice samples accumulated per tissue class (so any per-class
    signal is a matrix product; sum over classes of W = 1 inside the volume)."""
    cls_of_label, t1, t2, pd, heart, lung = _label_classes(subject, field_t)
    nc = len(t1)
    base, step, offs = slice_sampling(subject, grid, thickness_mm)
    npix = base.shape[1]
    labels = subject.labels
    shape = np.asarray(labels.shape)
    coords = base[:, None, :] + step[:, None, None] * offs[None, :, None]  # (3, M, P)
    fl = np.floor(coords)
    fr = coords - fl
    fl = fl.astype(np.int64)
    # per axis and corner offset d (0, 1): the tent weight and whether the corner lies in the volume
    tent = [(1.0 - fr[a], fr[a]) for a in range(3)]
    ok = [tuple((fl[a] + d >= 0) & (fl[a] + d < shape[a]) for d in (0, 1)) for a in range(3)]
    n_s = fl[0].size  # samples per corner
    pix_nc = (np.broadcast_to(np.arange(npix, dtype=np.int64), coords.shape[1:]) * nc).ravel()
    flat_labels = labels.reshape(-1)
    # the 8 corners' (bin, weight) in the order (dz, dy, dx), as one bincount sums them
    w_all = np.empty(8 * n_s)
    idx_all = np.empty(8 * n_s, np.int64)
    corner = 0
    for dz in (0, 1):
        wz, okz = tent[0][dz], ok[0][dz]
        zrow = (fl[0] + dz) * shape[1]
        for dy in (0, 1):
            wzy = wz * tent[1][dy]
            okzy = okz & ok[1][dy]
            zyrow = (zrow + (fl[1] + dy)) * shape[2]
            for dx in (0, 1):
                inside = okzy & ok[2][dx]
                flat = zyrow + (fl[2] + dx)
                lab = np.where(inside, flat_labels.take(flat, mode="clip"), 0)
                part = slice(corner * n_s, (corner + 1) * n_s)
                np.multiply(wzy, tent[2][dx], out=w_all[part].reshape(fl[0].shape))
                w_all[part][~inside.ravel()] = 0.0
                np.add(pix_nc, cls_of_label[lab].ravel(), out=idx_all[part])
                corner += 1
    weights = np.bincount(idx_all, w_all, minlength=npix * nc)
    weights = (weights.reshape(npix, nc) / len(offs)).astype(np.float32)
    # coil shading is smooth: take it at the centre-plane voxel of each pixel
    sh = coil_shading(subject)[:, :, 0]
    kz = np.clip(np.rint(base[0]).astype(np.int64), 0, sh.shape[0] - 1)
    ky = np.clip(np.rint(base[1]).astype(np.int64), 0, sh.shape[1] - 1)
    return _ClassSlice(weights, t1, t2, pd, weights[:, heart].sum(axis=1), weights[:, lung].sum(axis=1),
                       sh[kz, ky].astype(np.float32), np.any(weights != 0, axis=0))


# An episode forms its T1 and T2 maps (and re-acquisitions) on one slice, and the oracle re-forms them:
# the class weights of a slice are reused, keyed by the slice's exact geometry (bytes of its floats).
_class_slices: "OrderedDict[tuple, tuple[np.ndarray, _ClassSlice]]" = OrderedDict()
CLASS_SLICE_CACHE_SIZE = 4  # ~4 MB each at 192 x 192 (25 classes)


def _class_slice_cached(subject: Any, grid: ResliceGrid, thickness_mm: float, field_t: float) -> _ClassSlice:
    """_class_slice, reused for the same label volume, tissue table, slice geometry and field (read-only)."""
    labels = subject.labels
    pose = grid.pose
    key = (id(labels), id(subject.tissues), np.asarray(subject.origin_mm, float).tobytes(),
           np.asarray(subject.spacing_mm, float).tobytes(), pose.centre.tobytes(), pose.u.tobytes(),
           pose.v.tobytes(), tuple(grid.shape), tuple(float(x) for x in grid.pixel_mm), float(thickness_mm),
           float(field_t))
    with _cache_lock:
        hit = _class_slices.get(key)
        if hit is not None and hit[0] is labels:
            _class_slices.move_to_end(key)
            return hit[1]
    cs = _class_slice(subject, grid, thickness_mm, field_t)
    for a in (cs.weights, cs.t1, cs.t2, cs.pd, cs.heart, cs.lung, cs.shading, cs.present):
        a.setflags(write=False)
    with _cache_lock:
        _class_slices[key] = (labels, cs)
        while len(_class_slices) > CLASS_SLICE_CACHE_SIZE:
            _class_slices.popitem(last=False)
    return cs


# ---- off-resonance --------------------------------------------------------------------------------------
def _box_distance_mm(box: OrientedBox, points: np.ndarray) -> np.ndarray:
    """Euclidean distance of points (..., 3) outside an oriented box (0 inside)."""
    local = np.abs(box.pose.to_plane(points)) - np.asarray(box.half_sizes, float)
    return np.linalg.norm(np.clip(local, 0.0, None), axis=-1)


def b0_offresonance_hz(subject: Any, grid: ResliceGrid, field_t: float, shim_box: OrientedBox | None,
                       lung_fraction: np.ndarray, centre_offset_hz: float = 0.0) -> np.ndarray:
    """Off-resonance (Hz) per pixel (rows, cols) after shimming over `shim_box` (None: a shim volume
    that covers the slice, i.e. only the residual).

    A seeded (per subject) residual linear gradient inside the box; outside it the field grows with the
    distance from the box and the heart-lung susceptibility field (blurred lung fraction) is no longer
    compensated. Everything scales with B0 (physics.md: more at 3 T). `centre_offset_hz` is an error
    of the centre frequency (shifts all of it)."""
    from scipy import ndimage

    scale = field_t / 1.5
    pts = grid.points()
    rng = seeded_rng("mr_b0_field", getattr(subject, "id", "?"))
    g = rng.standard_normal(3)
    g *= RESIDUAL_HZ_PER_MM / np.linalg.norm(g)
    centre = grid.pose.centre if shim_box is None else shim_box.pose.centre
    df = (pts - centre) @ g
    if shim_box is not None:
        d = _box_distance_mm(shim_box, pts)
        du, dv = grid.pixel_mm
        lung = lung_fraction.reshape(grid.shape)
        near = ndimage.gaussian_filter(lung, (LUNG_INTERFACE_MM / dv, LUNG_INTERFACE_MM / du), mode="nearest")
        unshimmed = 1.0 - np.exp(-d / SHIM_FALLOFF_MM)
        df = df + OUTSIDE_HZ_PER_MM * d + LUNG_INTERFACE_HZ * near * unshimmed
    return (scale * df + centre_offset_hz).astype(np.float32)


# ---- results ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MappingSeries:
    """An acquired map: source images (with their TI / prep time), the fitted map (ms, float32, 0 where
    the fit failed or background), the mask of valid fits, and what formed it (`meta`: timing, motion,
    off-resonance; for the oracle's record of artefact causes)."""

    kind: str  # "t1" (MOLLI) or "t2" (T2-prep)
    sources: tuple[MRImage, ...]
    times_ms: np.ndarray  # effective TI (MOLLI) or T2-prep time per source image
    map_ms: np.ndarray
    fit_ok: np.ndarray
    grid: ResliceGrid
    thickness_mm: float
    field_t: float
    noise_sigma: float
    offresonance_hz: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def source_labels(self) -> list[str]:
        what = "TI" if self.kind == "t1" else "T2p"
        return [f"{what} {t:.0f} ms" for t in self.times_ms]

    @property
    def source_window(self) -> tuple[float, float]:
        """(level, width) to page the source images with: 0 to their 99.5th percentile."""
        hi = max(float(np.percentile(np.stack([im.pixels for im in self.sources]), 99.5)), 1e-6)
        return hi / 2.0, hi

    @property
    def map_window_ms(self) -> tuple[float, float]:
        """Default display window of the map (MAP_WINDOWS_MS)."""
        return MAP_WINDOWS_MS[self.kind, self.field_t >= 2.25]


@dataclass(frozen=True)
class RoiStats:
    mean_ms: float
    sd_ms: float
    n: int


def roi_stats(map_ms: np.ndarray, mask: np.ndarray, fit_ok: np.ndarray | None = None) -> RoiStats:
    """Mean and SD (ms) of a map in a ROI (only pixels with a valid fit when fit_ok is given)."""
    m = np.asarray(mask, bool)
    if fit_ok is not None:
        m = m & np.asarray(fit_ok, bool)
    v = np.asarray(map_ms, np.float64)[m]
    if v.size == 0:
        return RoiStats(float("nan"), float("nan"), 0)
    return RoiStats(float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0, int(v.size))


# ---- acquisition -----------------------------------------------------------------------------------------
# Caches of the Bloch results (per protocol, timing and tissue set) and of the calibrated relaxation
# times; a console may acquire from a worker thread, so they are guarded like mr_image's caches.
_cache_lock = threading.Lock()
_sim_cache: "OrderedDict[tuple, tuple[np.ndarray, np.ndarray]]" = OrderedDict()  # -> (signals, simulated)
# One shortcut-detector card check meets ~40 protocol timings (17 subjects' heart rates x T1 / T2 x
# staged and re-planned rows, each also re-formed by the oracle); 16 entries evicted a third of them
# before their reuse. An entry is (images, classes, bins) float32, ~0.2 MB.
SIM_CACHE_SIZE = 64


def _bin_phases() -> np.ndarray:
    return 4.0 * np.pi * np.arange(N_OFFRES_BINS) / N_OFFRES_BINS - 2.0 * np.pi


def _phase_bins(phi: np.ndarray) -> np.ndarray:
    """Nearest bin of _bin_phases for phases per TR (wrapped into [-2 pi, 2 pi))."""
    k = np.rint((np.asarray(phi, float) + 2.0 * np.pi) / (4.0 * np.pi) * N_OFFRES_BINS).astype(np.int64)
    return k % N_OFFRES_BINS


def _timeline(kind: str, scheme: MolliScheme | T2PrepScheme, ro: Readout, cycle: float, offset: float
              ) -> tuple[list[tuple[float, str, float]], np.ndarray, np.ndarray]:
    """Events, effective times (TI or prep) and shot start times (ms) of every source image."""
    events: list[tuple[float, str, float]] = []
    eff, starts = [], []
    if kind == "t1":
        first = cycle  # one heartbeat of lead-in before the first inversion's beat
        blocks = scheme.beats()
        for b, j, beat in blocks:
            t_start = first + beat * cycle + offset
            tc = t_start + ro.centre_ms
            if j == 0:
                t_inv = tc - scheme.ti0_ms[b]
                events.append((t_inv, "inv", 0.0))
                t_inv_b = t_inv
            events.append((t_start, "read", 0.0))
            eff.append(tc - t_inv_b)
            starts.append(t_start)
    else:
        # a dummy shot one recovery period before the first image: every image then starts from the
        # same partly recovered Mz, so incomplete recovery at high heart rates scales all images alike
        # (the mono-exponential fit is scale invariant) instead of biasing T2
        period = (scheme.recovery_beats + 1) * cycle
        events.append((cycle + offset, "dummy", 0.0))
        for i, te in enumerate(scheme.prep_ms):
            t_start = cycle + (i + 1) * period + offset
            if te > 0:
                events.append((t_start - 1e-6, "prep", float(te)))
            events.append((t_start, "read", 0.0))
            eff.append(float(te))
            starts.append(t_start)
    return events, np.asarray(eff), np.asarray(starts)


_truth_cache: "OrderedDict[tuple, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
CALIBRATION_HR_BPM = 60.0


def _calibration_ratio(fit: np.ndarray, ok: np.ndarray, value: np.ndarray) -> np.ndarray:
    ratio = np.where(ok, fit / np.maximum(value, 1e-9), 1.0)
    return np.where((ratio > 0.7) & (ratio < 1.3), ratio, 1.0)  # placeholders (air: T2 1 ms) stay


def true_relaxation(t1_table: np.ndarray, t2_table: np.ndarray, iterations: int = 4
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The underlying (T1, T2) whose ideal MOLLI and T2-prep maps report the tissue table's values.

    The table's cardiac values are mapping measurements (physics.md: "myocardium native T1 (MOLLI)
    1189", T2 from T2-prepared bSSFP maps). MOLLI reads ~4-8 % below the true T1 (its Look-Locker
    correction is approximate for a readout that runs in one part of each heartbeat) and the T2-prep
    fit a few % above the true T2 (the readout's approach to the steady state adds an offset). So the
    Bloch simulation runs on the values that an ideal 5(3)3 and 0/25/55 ms acquisition at 60 bpm, on
    resonance and without noise, report as the table's; other heart rates, schemes, flips, off-resonance
    and motion keep their own physical bias against it."""
    key = (t1_table.tobytes(), t2_table.tobytes())
    with _cache_lock:
        hit = _truth_cache.get(key)
    if hit is not None:
        return hit
    rr = rr_ms(CALIBRATION_HR_BPM)
    runs = []
    for kind, sch, ro in (("t1", MOLLI_SCHEMES["5(3)3"], MOLLI_READOUT),
                          ("t2", T2_SCHEMES["t2prep_0_25_55"], T2PREP_READOUT)):
        offset = readout_offset_ms(ro, diastolic_trigger_delay_ms(CALIBRATION_HR_BPM, ro), None)
        events, times, _ = _timeline(kind, sch, ro, rr, offset)
        runs.append((events, times, ro))
    t1 = np.asarray(t1_table, float).copy()
    t2 = np.asarray(t2_table, float).copy()
    zero = np.zeros(len(t1))
    for _ in range(iterations):
        (ev1, ti, ro1), (ev2, te, ro2) = runs
        fit, ok = fit_molli(_simulate(ev1, ro1, t1, t2, zero).T.astype(np.float32), ti, iterations=10)
        t1 = t1_table / _calibration_ratio(fit, ok, t1)
        fit, ok = fit_t2(_simulate(ev2, ro2, t1, t2, zero).T.astype(np.float32), te, iterations=10)
        t2 = t2_table / _calibration_ratio(fit, ok, t2)
    with _cache_lock:
        _truth_cache[key] = (t1, t2)
        while len(_truth_cache) > 8:
            _truth_cache.popitem(last=False)
    return t1, t2


def _simulate_classes(events: list[tuple[float, str, float]], ro: Readout, t1_true: np.ndarray,
                      t2_true: np.ndarray, n_img: int) -> np.ndarray:
    """(images, len(t1_true), bins) float32 |Mxy| per unit PD of these classes over the off-resonance bins.
    Every isochromat evolves on its own, so a subset of classes gives bit for bit the rows a simulation of
    all of them gives (checked in tests/rendering/test_mr_mapping.py)."""
    kk = len(t1_true)
    T1 = np.repeat(t1_true, N_OFFRES_BINS)
    T2 = np.repeat(t2_true, N_OFFRES_BINS)
    ph = np.tile(_bin_phases(), kk)
    # bSSFP with alternating +-alpha: on resonance is phi = 0; banding at phi = pi (physics.md)
    sig = _simulate(events, ro, T1, T2, ph).reshape(n_img, kk, N_OFFRES_BINS)
    # intravoxel spread of the off-resonance (over a pixel and the slice thickness) averages the
    # transient's fast oscillation with phi: a periodic Gaussian along the bins
    from scipy import ndimage
    sig = ndimage.gaussian_filter1d(sig, INTRAVOXEL_PHI_RAD / (4.0 * np.pi / N_OFFRES_BINS), axis=2, mode="wrap")
    return sig.astype(np.float32)


def _class_signals(kind: str, scheme: Any, ro: Readout, cycle: float, offset: float, t1: np.ndarray,
                   t2: np.ndarray, present: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(images, classes, bins) |Mxy| per unit PD, effective times, shot starts (cached, read-only).

    Only the classes in `present` (bool per class; None: all) are simulated: a slice holds about half of
    the tissue classes, and a class it does not hold has weight 0 in every pixel, so the row it gets (0
    until a slice that holds it asks) never reaches an image. The cache entry of a protocol timing
    collects the classes its slices have asked for."""
    events, eff, starts = _timeline(kind, scheme, ro, cycle, offset)
    key = (kind, scheme, ro, round(cycle, 6), round(offset, 6), t1.tobytes(), t2.tobytes())
    want = np.ones(len(t1), bool) if present is None else np.asarray(present, bool)
    with _cache_lock:
        hit = _sim_cache.get(key)
        if hit is not None:
            _sim_cache.move_to_end(key)
    if hit is not None and not np.any(want & ~hit[1]):
        return hit[0], eff, starts
    done = np.zeros(len(t1), bool) if hit is None else hit[1]
    todo = np.flatnonzero(want & ~done)
    t1_true, t2_true = true_relaxation(t1, t2)
    sig = np.zeros((len(starts), len(t1), N_OFFRES_BINS), np.float32) if hit is None else hit[0].copy()
    sig[:, todo] = _simulate_classes(events, ro, t1_true[todo], t2_true[todo], len(starts))
    done = done.copy()
    done[todo] = True
    sig.setflags(write=False)
    done.setflags(write=False)
    with _cache_lock:
        _sim_cache[key] = (sig, done)
        while len(_sim_cache) > SIM_CACHE_SIZE:
            _sim_cache.popitem(last=False)
    return sig, eff, starts


def _motion_fields(rows: int, shot_phase: np.ndarray, ro: Readout, rr: float) -> np.ndarray:
    """(images, rows) relative heart excursion at the acquisition time of each k-space row, in fft row
    order: linear ordering, ky from -rows/2 up, the centre row acquired at the centre line."""
    ky = np.arange(rows) - rows // 2
    half = rows / 2.0
    # the centre_line - 1 lines before the centre span ky < 0, the rest ky > 0
    line = np.where(ky < 0, (ro.centre_line - 1) * (1 + ky / half),
                    (ro.centre_line - 1) + (ro.n_lines - ro.centre_line) * ky / half)
    t_line = ro.tr_ms + line * ro.tr_ms  # echo of each line after the shot start (catalyst TR/2 + TE)
    g = heart_displacement(shot_phase[:, None] + t_line[None, :], rr)
    return np.fft.ifftshift(g, axes=1)


@dataclass(frozen=True, eq=False)
class _HeartMotion:
    """Systolic displacement field of the slice (pixels, (2, rows, cols) as (d_row, d_col)) at full
    excursion: a bulk translation plus a radial contraction about the LV centre (the cavity shrinks by
    CONTRACTION_MM at the endocardium, the epicardium moves less, so the wall thickens), weighted by
    how much of the heart (softened into the tissue around it) each pixel holds."""

    field: np.ndarray


CONTRACTION_MM = 7.0  # endocardial inward excursion at end systole [G]
ENDO_RADIUS_MM = 22.0  # where the radial contraction peaks
TETHER_MM = 10.0  # surrounding tissue follows the heart over this distance
PEAK_MOTION_MM = HEART_DISPLACEMENT_MM + CONTRACTION_MM


def _heart_motion(heart: np.ndarray, lv_centre_px: np.ndarray, translation_mm: np.ndarray,
                  pixel_mm: tuple[float, float]) -> _HeartMotion:
    from scipy import ndimage

    du, dv = pixel_mm
    rows, cols = heart.shape
    w = np.clip(ndimage.gaussian_filter(heart, (TETHER_MM / dv / 2.0, TETHER_MM / du / 2.0)) * 2.0, 0.0, 1.0)
    w = np.maximum(w, heart)
    rr, cc = np.meshgrid(np.arange(rows, dtype=float), np.arange(cols, dtype=float), indexing="ij")
    y_mm, x_mm = (rr - lv_centre_px[0]) * dv, (cc - lv_centre_px[1]) * du
    r = np.hypot(y_mm, x_mm) + 1e-6
    r0 = ENDO_RADIUS_MM
    inward = CONTRACTION_MM * np.where(r < r0, r / r0, (r0 / r) ** 2)
    # an image pixel at p shows the tissue from p + delta: the heart is pulled to the centre, so the
    # pixel samples outwards (+ radial), and shows what the translation brought there (- translation)
    d_row_mm = (inward * y_mm / r - translation_mm[0]) * w
    d_col_mm = (inward * x_mm / r - translation_mm[1]) * w
    return _HeartMotion(np.stack([d_row_mm / dv, d_col_mm / du]))


MOTION_LEVELS = 12  # excursions are quantised to this many warps per image (k-space rows share them)


def _apply_motion(img: np.ndarray, motion: _HeartMotion, excursion_rows: np.ndarray) -> np.ndarray:
    """k-space line mixing: each phase-encoding row (axis 0, fft order) comes from the image warped to
    the heart's excursion at the time that row was acquired. Returns the magnitude image.

    Bit for bit the full-image form (warp every pixel, fft2 every warp), with less work: a pixel the field
    does not move samples itself at an integer position (the warp returns it unchanged), so only moving
    pixels are interpolated; and fft2 is a row pass then a column pass, so rows without a moving pixel
    keep the unwarped image's row transforms."""
    if not np.any(excursion_rows > 1e-6):
        return img
    from scipy import ndimage

    rows, cols = img.shape
    level = np.rint(np.clip(excursion_rows, 0.0, 1.0) * MOTION_LEVELS).astype(int)
    k = np.zeros((rows, cols), np.complex128)
    moving = (motion.field[0] != 0.0) | (motion.field[1] != 0.0)
    moving_rows = np.flatnonzero(moving.any(axis=1))
    points = np.stack(np.nonzero(moving)).astype(float)  # (2, N): row, col of each moving pixel
    shift = motion.field[:, moving]
    row_ffts = np.fft.fft(img, axis=-1)  # fft2's first pass (axis -1), then axis -2 (numpy's order)
    for lv in np.unique(level):
        sel = level == lv
        if lv == 0:
            spectrum = np.fft.fft(row_ffts, axis=-2)
        else:
            warped = img.copy()
            warped[moving] = ndimage.map_coordinates(img, points + (lv / MOTION_LEVELS) * shift, order=1,
                                                     mode="nearest", prefilter=False)
            part = row_ffts.copy()
            part[moving_rows] = np.fft.fft(warped[moving_rows], axis=-1)
            spectrum = np.fft.fft(part, axis=-2)
        k[sel] = spectrum[sel]
    return np.abs(np.fft.ifft2(k)).astype(np.float32)


def _pixels_per_bin(bins: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(bin, ascending pixel indices in it) for every occupied bin, in ascending bin order: what
    `np.flatnonzero(bins == b)` gives for each b of np.unique(bins), from one stable sort instead of a
    full-image comparison per bin (a slice holds ~150 distinct bins)."""
    order = np.argsort(bins, kind="stable")
    sorted_bins = bins[order]
    cuts = np.flatnonzero(sorted_bins[1:] != sorted_bins[:-1]) + 1
    lo = np.concatenate([[0], cuts])
    hi = np.concatenate([cuts, [len(bins)]])
    return [(int(sorted_bins[a]), order[a:b]) for a, b in zip(lo.tolist(), hi.tolist())]


def _acquire(kind: str, subject: Any, group: SliceGroup, scheme: Any, heart_rate_bpm: float, *, field_t: float,
             trigger: str, trigger_delay_ms: float, acq_window_ms: float | None, shim_box: OrientedBox | None,
             centre_offset_hz: float, readout: Readout, averages: float, seed: Any, noise: bool,
             motion: bool) -> tuple[np.ndarray, np.ndarray, float, ResliceGrid, np.ndarray, dict]:
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}; expected one of {TRIGGERS}")
    if group.n_slices != 1:
        raise ValueError("mapping acquires a single slice")
    rr = rr_ms(heart_rate_bpm)
    grid = group.grid(0)
    rows, cols = grid.shape
    cs = _class_slice_cached(subject, grid, group.thickness_mm, field_t)
    offset = readout_offset_ms(readout, trigger_delay_ms, acq_window_ms)
    cycle = rr if trigger != "none" else NOMINAL_CYCLE_MS
    sig, eff, starts = _class_signals(kind, scheme, readout, cycle, offset, cs.t1, cs.t2, cs.present)
    # off-resonance -> bin of the phase per TR
    df = b0_offresonance_hz(subject, grid, field_t, shim_box, cs.lung, centre_offset_hz).reshape(-1)
    bins = _phase_bins(2.0 * np.pi * df * readout.tr_ms * 1e-3)
    wpd = cs.weights * cs.pd[None, :].astype(np.float32)
    n_img = sig.shape[0]
    clean = np.zeros((rows * cols, n_img), np.float32)
    for b, sel in _pixels_per_bin(bins):
        clean[sel] = np.einsum("pc,ic->pi", wpd[sel], sig[:, :, b])  # not BLAS: see _grid_best
    clean *= cs.shading[:, None]
    clean = clean.T.reshape(n_img, rows, cols)
    # cardiac phase (ms after the R wave) of each shot start: ECG triggers on the R wave, the pulse
    # wave arrives ~PULSE_DELAY_MS later; untriggered shots are unrelated to it (seeded per shot)
    parts = seed if isinstance(seed, (tuple, list)) else (seed,)
    if trigger == "ecg":
        shot_phase = np.full(n_img, offset)
    elif trigger == "pulse":
        shot_phase = np.full(n_img, offset + PULSE_DELAY_MS)
    else:
        # R waves at the true heart rate with beat-to-beat variability, at a seeded phase: the shots,
        # timed by the nominal cycle, land anywhere in the cardiac cycle
        rng = seeded_rng("mr_mapping_motion", kind, getattr(subject, "id", "?"), *parts)
        n_r = int(starts.max() / (0.5 * rr)) + 4
        r_waves = -rng.uniform(0.0, rr) + np.concatenate(
            [[0.0], np.cumsum(rr * (1.0 + HRV_FRACTION * rng.standard_normal(n_r)))])
        last = r_waves[np.searchsorted(r_waves, starts, side="right") - 1]
        shot_phase = starts - last
    exc = _motion_fields(rows, shot_phase, readout, rr)
    if motion and np.any(exc > 1e-6):
        ang = seeded_rng("mr_heart_motion", getattr(subject, "id", "?")).uniform(0.0, 2.0 * np.pi)
        translation = HEART_DISPLACEMENT_MM * np.array([math.sin(ang), math.cos(ang)])
        lab = reslice(subject.labels, subject.origin_mm, subject.spacing_mm, grid, order=0)
        lv = np.argwhere(lab == _label_or(subject, "lv_blood"))
        heart = np.clip(cs.heart.reshape(rows, cols), 0.0, 1.0)
        centre = lv.mean(axis=0) if len(lv) else (np.argwhere(heart > 0.5).mean(axis=0) if (heart > 0.5).any()
                                                  else np.array([rows / 2.0, cols / 2.0]))
        hm = _heart_motion(heart, centre, translation, grid.pixel_mm)
        clean = np.stack([_apply_motion(clean[i], hm, exc[i]) for i in range(n_img)])
    # single-shot with partial Fourier and parallel imaging: fewer lines than the matrix -> less SNR
    sigma = noise_sigma(group.voxel_mm3, averages, field_t) * math.sqrt(rows / readout.n_lines)
    pixels = _add_rician(clean, sigma, seeded_rng("mr_mapping_noise", kind, getattr(subject, "id", "?"), *parts)) \
        if noise else clean
    meta = {"rr_ms": round(rr, 3), "cycle_ms": round(cycle, 3), "trigger": trigger,
            "shot_ms": round(readout.shot_ms, 3), "shot_offset_ms": round(offset, 3),
            "window_fits_rr": bool(trigger_delay_ms + (acq_window_ms or readout.shot_ms) <= rr + 1e-9),
            # excursion of the endocardium (translation + contraction, at most) over each shot / all shots
            "max_excursion_mm": [round(float(PEAK_MOTION_MM * np.ptp(e)) + 0.0, 3) for e in exc]
            if motion else [0.0] * n_img,
            "motion_range_mm": round(float(PEAK_MOTION_MM * (exc.max() - exc.min())), 3) if motion else 0.0}
    # off-resonance over the heart (pixels at least half heart): what the oracle records as a shim cause
    in_heart = cs.heart > 0.5
    phi = np.angle(np.exp(2j * np.pi * df[in_heart] * readout.tr_ms * 1e-3))  # phase per TR in (-pi, pi]
    meta["offres_heart_hz_max"] = round(float(np.abs(df[in_heart]).max()), 1) if in_heart.any() else 0.0
    meta["banding_heart_fraction"] = round(float(np.mean(np.abs(phi) > np.pi - BAND_HALF_WIDTH_RAD)), 4) \
        if in_heart.any() else 0.0
    return pixels.astype(np.float32), eff, sigma if noise else 0.0, grid, df.reshape(rows, cols), meta


@reusable
def acquire_t1_map(subject: Any, group: SliceGroup, scheme: str | MolliScheme = "5(3)3",
                   heart_rate_bpm: float = 60.0, *, field_t: float = 1.5, trigger: str = "ecg",
                   trigger_delay_ms: float | None = None, acq_window_ms: float | None = None,
                   shim_box: OrientedBox | None = None, centre_offset_hz: float = 0.0,
                   readout: Readout | None = None, averages: float = 1.0, seed: Any = 0, noise: bool = True,
                   motion: bool = True) -> MappingSeries:
    """MOLLI T1 map of one slice (the group's single slice). Deterministic: same seed, same bytes.

    trigger_delay_ms None: a mid-diastolic delay for this heart rate (`diastolic_trigger_delay_ms`);
    acq_window_ms None: the shot itself (the shot ends at delay + window: `readout_offset_ms`).
    shim_box None: the shim volume covers the slice; centre_offset_hz: a centre-frequency error.
    readout None: `readout_for("t1", phase rows)`. seed: any value or tuple (new noise per series).
    noise=False / motion=False: the noise-free / still-heart map (tests, oracles)."""
    sch = MOLLI_SCHEMES[scheme] if isinstance(scheme, str) else scheme
    readout = readout_for("t1", group.shape[0]) if readout is None else readout
    if trigger_delay_ms is None:
        trigger_delay_ms = diastolic_trigger_delay_ms(heart_rate_bpm, readout)
    px, ti, sigma, grid, df, meta = _acquire("t1", subject, group, sch, heart_rate_bpm, field_t=field_t,
                                             trigger=trigger, trigger_delay_ms=trigger_delay_ms,
                                             acq_window_ms=acq_window_ms, shim_box=shim_box,
                                             centre_offset_hz=centre_offset_hz, readout=readout,
                                             averages=averages, seed=seed, noise=noise, motion=motion)
    order = np.argsort(ti, kind="stable")  # scanners present MOLLI sources sorted by TI
    px, ti = px[order], ti[order]
    t1, ok = fit_molli(px.reshape(len(ti), -1).T, ti, floor=NOISE_FLOOR_SIGMAS * max(sigma, 1e-4))
    sources = tuple(MRImage(px[i], grid, group.thickness_mm, i, f"TI {ti[i]:.0f} ms") for i in range(len(ti)))
    meta.update(scheme=sch.name)
    return MappingSeries("t1", sources, ti, t1.reshape(grid.shape), ok.reshape(grid.shape), grid,
                         group.thickness_mm, float(field_t), sigma, df, meta)


@reusable
def acquire_t2_map(subject: Any, group: SliceGroup, scheme: str | T2PrepScheme = "t2prep_0_25_55",
                   heart_rate_bpm: float = 60.0, *, field_t: float = 1.5, trigger: str = "ecg",
                   trigger_delay_ms: float | None = None, acq_window_ms: float | None = None,
                   shim_box: OrientedBox | None = None, centre_offset_hz: float = 0.0,
                   readout: Readout | None = None, averages: float = 1.0, seed: Any = 0, noise: bool = True,
                   motion: bool = True) -> MappingSeries:
    """T2-prepared bSSFP T2 map of one slice (same conventions as acquire_t1_map)."""
    sch = T2_SCHEMES[scheme] if isinstance(scheme, str) else scheme
    readout = readout_for("t2", group.shape[0]) if readout is None else readout
    if trigger_delay_ms is None:
        trigger_delay_ms = diastolic_trigger_delay_ms(heart_rate_bpm, readout)
    px, te, sigma, grid, df, meta = _acquire("t2", subject, group, sch, heart_rate_bpm, field_t=field_t,
                                             trigger=trigger, trigger_delay_ms=trigger_delay_ms,
                                             acq_window_ms=acq_window_ms, shim_box=shim_box,
                                             centre_offset_hz=centre_offset_hz, readout=readout,
                                             averages=averages, seed=seed, noise=noise, motion=motion)
    t2, ok = fit_t2(px.reshape(len(te), -1).T, te, floor=NOISE_FLOOR_SIGMAS * max(sigma, 1e-4))
    sources = tuple(MRImage(px[i], grid, group.thickness_mm, i, f"T2p {te[i]:.0f} ms") for i in range(len(te)))
    meta.update(scheme=sch.name)
    return MappingSeries("t2", sources, te, t2.reshape(grid.shape), ok.reshape(grid.shape), grid,
                         group.thickness_mm, float(field_t), sigma, df, meta)


def acquisition_duration_ms(kind: str, scheme: str | MolliScheme | T2PrepScheme, heart_rate_bpm: float,
                            trigger: str = "ecg") -> float:
    """Simulated time of one breath-hold acquisition: its heartbeats (plus the lead-in beat), at the
    RR interval when triggered, at the nominal 1 s cycle when not."""
    if isinstance(scheme, str):
        scheme = MOLLI_SCHEMES[scheme] if kind == "t1" else T2_SCHEMES[scheme]
    cycle = rr_ms(heart_rate_bpm) if trigger != "none" else NOMINAL_CYCLE_MS
    return float((scheme.n_beats + 1) * cycle)


def diastolic_trigger_delay_ms(heart_rate_bpm: float, readout: Readout = MOLLI_READOUT) -> float:
    """A trigger delay that puts the shot in diastasis: it ends just before the atrial kick."""
    rr = rr_ms(heart_rate_bpm)
    return max(0.0, rr - min(ATRIAL_MS, 0.2 * rr) - readout.shot_ms - 10.0)


# ---- fits ----------------------------------------------------------------------------------------------------
_T1STAR_GRID = np.geomspace(30.0, 4000.0, 48)
_T2_GRID = np.geomspace(5.0, 500.0, 48)


# Fits of maps with the same source times (one protocol timing: the console's map and the oracle's
# re-formed one, every subject at one heart rate) share their grid projectors: 48 QRs each.
_projectors: "OrderedDict[tuple, np.ndarray]" = OrderedDict()


# The fits work on (n, pixels) arrays: sums over the n images are then adds of contiguous rows, several
# times faster than numpy's reductions over a short last axis.


def _grid_projectors(t: np.ndarray, taus: np.ndarray, offset: bool) -> np.ndarray:
    """(G*q, n) orthonormal bases of span{1, exp(-t/tau)} (offset, q = 2) or span{exp(-t/tau)} (q = 1)
    per grid tau, as rows (cached, read-only)."""
    key = (t.dtype.str, t.tobytes(), taus.tobytes(), bool(offset))
    with _cache_lock:
        hit = _projectors.get(key)
        if hit is not None:
            _projectors.move_to_end(key)
            return hit
    out = _grid_projectors_uncached(t, taus, offset)
    out.setflags(write=False)
    with _cache_lock:
        _projectors[key] = out
        while len(_projectors) > 64:
            _projectors.popitem(last=False)
    return out


def _grid_projectors_uncached(t: np.ndarray, taus: np.ndarray, offset: bool) -> np.ndarray:
    rows = []
    for tau in taus:
        e = np.exp(-t / tau)
        basis = np.stack([np.ones_like(t), -e], axis=1) if offset else e[:, None]
        q, _ = np.linalg.qr(basis)
        rows.append(q.T)
    return np.concatenate(rows, axis=0)


def _grid_best(y: np.ndarray, proj: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Best grid tau per pixel of y (n, P) and its residual sum of squares: the least-squares residual
    for a fixed tau is |y|^2 - |Q^T y|^2 (Q: orthonormal basis of the model's linear part)."""
    # einsum, not BLAS: for an inner dimension of a few images a threaded GEMM only adds thread
    # hand-offs (several times slower on a loaded 2-core machine)
    p = np.einsum("gk,kp->gp", proj, y)
    p *= p
    # running maximum over the grid rows (argmax along axis 0 of a wide array is strided and slow)
    best_p = p[0] + p[1] if q == 2 else p[0].copy()
    best = np.zeros(y.shape[1], np.int64)
    for g in range(1, len(p) // q):
        cur = p[q * g] + p[q * g + 1] if q == 2 else p[g]
        better = cur > best_p
        best[better] = g
        np.maximum(best_p, cur, out=best_p)
    return best, _colsum(y * y) - best_p


def _colsum(a: np.ndarray) -> np.ndarray:
    out = a[0].copy()
    for row in a[1:]:
        out += row
    return out


def fit_molli(y: np.ndarray, ti_ms: np.ndarray, floor: float = 0.0, iterations: int = 5
              ) -> tuple[np.ndarray, np.ndarray]:
    """Three-parameter Look-Locker fit S = A - B exp(-TI/T1*), T1 = T1* (B/A - 1), of magnitude data.

    y (pixels, n) magnitudes at ti_ms (n,) (any order); pixels whose brightest image is below `floor`
    are background and skipped. Polarity restoration as scanners do it: the images before the magnitude
    minimum are negated, and as other candidates one image fewer or more (noise can swap the two
    smallest magnitudes); the candidate with the smallest residual wins. Then Gauss-Newton from the best
    grid point. Returns (T1 ms float32, fit ok bool), 0 where not ok."""
    y = np.asarray(y, np.float32)
    t = np.asarray(ti_ms, np.float64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    npix, n = y.shape
    out = np.zeros(npix, np.float32)
    ok = np.zeros(npix, bool)
    sel = np.flatnonzero(y.max(axis=1) > floor)
    if sel.size == 0:
        return out, ok
    ys = np.ascontiguousarray(y[sel][:, order].T, dtype=np.float64)  # (n, P)
    proj = _grid_projectors(t, _T1STAR_GRID, True)
    imin = np.argmin(ys, axis=0)
    idx = np.arange(n)[:, None]
    best_y = best_g = best_rss = None
    for m in (np.maximum(imin - 1, 0), imin, imin + 1):
        yp = np.where(idx < m[None, :], -ys, ys)
        g, rss = _grid_best(yp, proj, 2)
        if best_y is None:
            best_y, best_g, best_rss = yp, g, rss
        else:
            better = rss < best_rss
            best_y = np.where(better[None, :], yp, best_y)
            best_g = np.where(better, g, best_g)
            best_rss = np.where(better, rss, best_rss)
    tau = _T1STAR_GRID[best_g]
    a, b = _linear_ab(best_y, t, tau)
    tc = t[:, None]
    for _ in range(iterations):  # Gauss-Newton on (A, B, T1*); normal equations from explicit sums
        e = np.exp(-tc / tau[None, :])
        r = best_y - (a[None, :] - b[None, :] * e)
        et = e * tc
        c = b / tau ** 2  # d(model)/d(T1*) = -B e t / T1*^2 = -c e t
        se, see, set_ = _colsum(e), _colsum(e * e), _colsum(et)
        seet, seett = _colsum(e * et), _colsum(et * et)
        # symmetric 3x3 normal equations [[n, -se, -c st], [., see, c seet], [., ., c^2 seett]] solved
        # by Cramer's rule (a stacked np.linalg.solve costs several times more)
        m00, m01, m02 = float(n), -se, -c * set_
        m11, m12, m22 = see, c * seet, c * c * seett + 1e-12
        r0, r1, r2 = _colsum(r), -_colsum(e * r), -c * _colsum(et * r)
        c00, c01, c02 = m11 * m22 - m12 * m12, m02 * m12 - m01 * m22, m01 * m12 - m02 * m11
        det = m00 * c00 + m01 * c01 + m02 * c02
        det = np.where(np.abs(det) < 1e-300, 1e-300, det)
        c11, c12, c22 = m00 * m22 - m02 * m02, m01 * m02 - m00 * m12, m00 * m11 - m01 * m01
        a = a + (c00 * r0 + c01 * r1 + c02 * r2) / det
        b = b + (c01 * r0 + c11 * r1 + c12 * r2) / det
        dtau = (c02 * r0 + c12 * r1 + c22 * r2) / det
        tau = np.clip(tau + np.clip(dtau, -0.5 * tau, 0.5 * tau), 1.0, 20000.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = tau * (b / a - 1.0)
    good = np.isfinite(t1) & (a > 0) & (b > a) & (t1 > 0) & (t1 < 6000.0)
    out[sel[good]] = t1[good]
    ok[sel[good]] = True
    return out, ok


def _linear_ab(y: np.ndarray, t: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form least squares of y = A - B e per pixel (column of y (n, P)), e = exp(-t/tau)."""
    e = np.exp(-t[:, None] / tau[None, :])
    n = y.shape[0]
    se, see = _colsum(e), _colsum(e * e)
    sy, sey = _colsum(y), _colsum(e * y)
    det = n * see - se * se
    det = np.where(np.abs(det) < 1e-12, 1e-12, det)
    a = (see * sy - se * sey) / det
    b = (se * sy - n * sey) / det
    return a, b


def fit_t2(y: np.ndarray, te_ms: np.ndarray, floor: float = 0.0, iterations: int = 5
           ) -> tuple[np.ndarray, np.ndarray]:
    """Mono-exponential fit S = A exp(-TE/T2) of y (pixels, n) at te_ms (n,) (grid + projection, then
    Gauss-Newton on (A, T2)). Returns (T2 ms float32, ok), 0 where not ok or background (< floor)."""
    y = np.asarray(y, np.float32)
    t = np.asarray(te_ms, np.float64)
    npix = len(y)
    out = np.zeros(npix, np.float32)
    ok = np.zeros(npix, bool)
    sel = np.flatnonzero(y.max(axis=1) > floor)
    if sel.size == 0:
        return out, ok
    ys = np.ascontiguousarray(y[sel].T, dtype=np.float64)  # (n, P)
    g, _ = _grid_best(ys, _grid_projectors(t, _T2_GRID, False), 1)
    tau = _T2_GRID[g]
    tc = t[:, None]
    e = np.exp(-tc / tau[None, :])
    a = _colsum(e * ys) / _colsum(e * e)
    for _ in range(iterations):
        e = np.exp(-tc / tau[None, :])
        r = ys - a[None, :] * e
        j2 = a[None, :] * e * tc / tau[None, :] ** 2
        s11, s12, s22 = _colsum(e * e), _colsum(e * j2), _colsum(j2 * j2) + 1e-12
        r1, r2 = _colsum(e * r), _colsum(j2 * r)
        det = s11 * s22 - s12 * s12
        det = np.where(np.abs(det) < 1e-18, 1e-18, det)
        da, dt = (s22 * r1 - s12 * r2) / det, (s11 * r2 - s12 * r1) / det
        a = a + da
        tau = np.clip(tau + np.clip(dt, -0.5 * tau, 0.5 * tau), 1.0, 5000.0)
    good = np.isfinite(tau) & (a > 0) & (tau < 2000.0)
    out[sel[good]] = tau[good]
    ok[sel[good]] = True
    return out, ok


# ---- helpers for the console ----------------------------------------------------------------------------
def shim_box_on_pose(pose: Any, centre_mm: Any, size_mm: Sequence[float]) -> OrientedBox:
    """The console's shim box (centre, size along the group's read, phase and slice axes, as
    consoles/mr row_params.shim_box() reports it) as an OrientedBox for acquire_*_map(shim_box=...)."""
    from .geometry import PlanePose

    p = PlanePose.from_axes(centre_mm, pose.u, pose.v)
    return OrientedBox(p, tuple(float(x) / 2.0 for x in size_mm))


#: default display windows (ms) of the maps: (low, high) per (kind, field >= 2.25 T)
MAP_WINDOWS_MS: dict[tuple[str, bool], tuple[float, float]] = {
    ("t1", False): (0.0, 2000.0), ("t1", True): (0.0, 2200.0), ("t2", False): (0.0, 100.0), ("t2", True): (0.0, 100.0)}

# colour maps as control points (position, r, g, b): T1 maps blue -> cyan -> green -> yellow -> red, as
# vendors show MOLLI maps [G]; T2 maps dark -> blue -> green -> yellow (perceptually ordered, viridis-like)
_CMAPS: dict[str, tuple[tuple[float, int, int, int], ...]] = {
    "t1": ((0.0, 0, 0, 80), (0.2, 0, 40, 255), (0.4, 0, 220, 255), (0.55, 40, 230, 60), (0.7, 255, 240, 0),
           (0.85, 255, 110, 0), (1.0, 170, 0, 0)),
    "t2": ((0.0, 68, 1, 84), (0.25, 59, 82, 139), (0.5, 33, 145, 140), (0.75, 94, 201, 98), (1.0, 253, 231, 37)),
}


def colour_lut(kind: str, n: int = 256) -> np.ndarray:
    """uint8 (n, 3) colour table of a T1 ("t1") or T2 ("t2") map, low to high."""
    pts = np.asarray(_CMAPS[kind], float)
    x = np.linspace(0.0, 1.0, n)
    return np.stack([np.interp(x, pts[:, 0], pts[:, c]) for c in (1, 2, 3)], axis=1).round().astype(np.uint8)


def colourise(map_ms: np.ndarray, fit_ok: np.ndarray, kind: str, window_ms: tuple[float, float]) -> np.ndarray:
    """uint8 (rows, cols, 3) RGB of a map in a window; failed fits and background black."""
    lut = colour_lut(kind)
    lo, hi = window_ms
    idx = np.clip((np.asarray(map_ms, float) - lo) / max(hi - lo, 1e-9) * (len(lut) - 1), 0, len(lut) - 1)
    rgb = lut[np.rint(idx).astype(np.int64)]
    rgb[~np.asarray(fit_ok, bool)] = 0
    return rgb


def ellipse_mask(shape: tuple[int, int], centre_rc: Sequence[float], radii_rc: Sequence[float]) -> np.ndarray:
    """bool (rows, cols): pixels whose centres lie inside an axis-aligned ellipse (the ROI tool's shape)."""
    r, c = np.ogrid[0:shape[0], 0:shape[1]]
    return ((r - centre_rc[0]) / max(radii_rc[0], 1e-9)) ** 2 + ((c - centre_rc[1]) / max(radii_rc[1], 1e-9)) ** 2 <= 1.0


# ---- ROI for the oracle and the console ------------------------------------------------------------------
SEPTUM_MM = 15.0  # septal ROI: myocardium within this of the RV blood pool


def myocardial_roi(subject: Any, grid: ResliceGrid, base_mm: Any, apex_mm: Any, *, mid_third: bool = True,
                   erode_px: int = 1, septum: bool = False) -> np.ndarray:
    """bool (rows, cols): LV myocardium at the slice's centre plane, optionally only where it lies in the
    middle third between base (mitral-valve centre) and apex along the LV long axis, eroded in plane by
    erode_px (a reader's ROI keeps off the blood and epicardial fat), optionally only the septum (the
    wall within SEPTUM_MM of the RV blood pool: where readers measure native T1, away from the lateral
    wall's susceptibility artefacts). The scorer passes the subject oracle's lv_long_axis; rendering
    never reads the oracle."""
    from scipy import ndimage

    lab = reslice(subject.labels, subject.origin_mm, subject.spacing_mm, grid, order=0)
    m = lab == subject.label_id("lv_myocardium")
    if erode_px > 0:
        m = ndimage.binary_erosion(m, iterations=erode_px)
    if mid_third:
        base, apex = np.asarray(base_mm, float), np.asarray(apex_mm, float)
        axis = apex - base
        length = float(np.linalg.norm(axis))
        s = (grid.points() - base) @ (axis / length)
        m &= (s >= length / 3.0) & (s <= 2.0 * length / 3.0)
    if septum:
        rv = lab == _label_or(subject, "rv_blood")
        if not rv.any():
            return np.zeros_like(m)
        du, dv = grid.pixel_mm
        m &= ndimage.distance_transform_edt(~rv, sampling=(dv, du)) <= SEPTUM_MM
    return m
