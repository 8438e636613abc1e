"""Iodinated contrast enhancement over time, per tissue compartment (numpy only, no Qt/VTK).

Model (shared/reference/physics.md, "Enhancement curve"):
- each compartment's impulse response is a gamma variate h(t) = (t - t0)^alpha exp(-(t - t0)/beta)
  with a compartment-specific delay and width, plus a small recirculation term (a second, later and
  broader gamma variate);
- the injected bolus is a box of INJECTION_S seconds, so the enhancement curve is the box convolved
  with h; each curve is normalised to peak 1, and HU(label, t) = ct_hu + hu_enhancement_max * g_c(t)
  (the convention of rendering/subjects/tissues.py);
- the arterial arrival t0 (12-18 s at 70 bpm), width and peak scale are seeded per (subject, seed) and
  scaled by heart rate (faster circulation at higher rates), so a fixed scan delay does not fit everyone.
Time is seconds since the injection started; before that every g is 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rendering.seeding import seeded_rng
from rendering.subjects.tissues import COMPARTMENTS

INJECTION_S = 14.0  # e.g. 70 ml at 5 ml/s
DT_S = 0.1
T_MAX_S = 180.0
RECIRCULATION = 0.22
# compartment -> (extra delay after arterial arrival s, beta multiplier, alpha)
_COMPARTMENT_SHAPE = {
    "arterial": (0.0, 1.0, 3.0),
    "right_heart": (-4.0, 0.9, 3.0),
    "myocardium": (1.5, 1.6, 3.0),
    "kidney_cortex": (4.0, 1.8, 3.0),
    "spleen": (4.0, 2.0, 3.0),
    "bowel_wall": (8.0, 2.5, 3.0),
    "soft_tissue": (12.0, 4.0, 3.0),
    "portal_organ": (18.0, 4.5, 3.0),
    "kidney_medulla": (25.0, 4.0, 3.0),
    "venous": (22.0, 4.0, 3.0),
}


@dataclass(frozen=True)
class ContrastParams:
    t0_s: float  # arterial arrival after injection start
    beta_s: float
    peak_scale: float  # multiplies hu_enhancement_max (patient size / cardiac output)
    heart_rate_bpm: float

    def to_dict(self) -> dict:
        return {k: round(v, 3) for k, v in self.__dict__.items()}


def contrast_params(subject_id: str, seed: int, heart_rate_bpm: float = 70.0) -> ContrastParams:
    """Seeded circulation parameters of one subject in one episode."""
    rng = seeded_rng("ct_contrast", subject_id, seed)
    t0 = float(rng.uniform(12.0, 18.0)) * (70.0 / heart_rate_bpm) ** 0.5
    beta = float(rng.uniform(1.5, 3.0))
    scale = float(rng.uniform(0.95, 1.2))
    return ContrastParams(round(t0, 3), round(beta, 3), round(scale, 3), float(heart_rate_bpm))


def _gamma(t: np.ndarray, t0: float, alpha: float, beta: float) -> np.ndarray:
    s = np.clip(t - t0, 0.0, None)
    return s ** alpha * np.exp(-s / beta)


def _gamma_n(t: np.ndarray, t0: float, alpha: float, beta: float) -> np.ndarray:
    """Gamma variate scaled to peak 1 (peak at t0 + alpha * beta)."""
    return _gamma(t, t0, alpha, beta) / ((alpha * beta) ** alpha * np.exp(-alpha))


@lru_cache(maxsize=64)
def _curves(params: ContrastParams) -> np.ndarray:
    """(n_compartments, n_t) normalised enhancement on the DT_S grid."""
    t = np.arange(0.0, T_MAX_S + DT_S, DT_S)
    box = np.ones(int(round(INJECTION_S / DT_S)))
    out = np.zeros((len(COMPARTMENTS), t.size))
    for ci, name in enumerate(COMPARTMENTS):
        shape = _COMPARTMENT_SHAPE.get(name)
        if shape is None:
            continue
        delay, bmul, alpha = shape
        beta = params.beta_s * bmul
        t0 = max(1.0, params.t0_s + delay)
        h = _gamma_n(t, t0, alpha, beta) + RECIRCULATION * _gamma_n(t, t0 + 10.0 + 2 * beta, alpha, 2.5 * beta)
        g = np.convolve(h, box)[: t.size]
        out[ci] = g / g.max()
    out.setflags(write=False)
    return out


def enhancement(params: ContrastParams, t_since_injection: float) -> np.ndarray:
    """Normalised enhancement g_c (peak 1) of every compartment at one time; zeros before injection."""
    if t_since_injection <= 0:
        return np.zeros(len(COMPARTMENTS))
    c = _curves(params)
    x = min(t_since_injection, T_MAX_S) / DT_S
    i = int(x)
    if i >= c.shape[1] - 1:
        return c[:, -1].copy()
    f = x - i
    return c[:, i] * (1 - f) + c[:, i + 1] * f


def hu_lut_at(base_hu: np.ndarray, enh_max: np.ndarray, compartments: np.ndarray, params: ContrastParams | None,
              t_since_injection: float | None) -> np.ndarray:
    """Per-label HU lookup table at a time (no injection: the unenhanced table)."""
    if params is None or t_since_injection is None:
        return base_hu.astype(np.float32)
    g = enhancement(params, t_since_injection)
    return (base_hu + enh_max * params.peak_scale * g[compartments]).astype(np.float32)


def arterial_hu(params: ContrastParams | None, t_since_injection: float | None, base_hu: float = 40.0,
                enh_max: float = 300.0) -> float:
    """Aortic blood HU at a time (the bolus-timing number the CCTA oracle checks)."""
    if params is None or t_since_injection is None:
        return float(base_hu)
    g = enhancement(params, t_since_injection)[COMPARTMENTS.index("arterial")]
    return float(base_hu + enh_max * params.peak_scale * g)
