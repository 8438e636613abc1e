"""MR signal equations and per-label signal lookup tables (numpy only, no Qt/VTK).

Numbers and equations follow shared/reference/physics.md (MR section):
- T1/T2 (ms) and relative PD per label come from the subject's tissue table at 1.5 T or 3 T
  (rendering/subjects/tissues.py); T2* ~ T2/2, as the tissue table documents.
- bSSFP      S = PD sin(a)(1-E1) / (1 - (E1-E2)cos(a) - E1 E2) * exp(-TE/T2),  E = exp(-TR/T)
- spoiled GRE S = PD sin(a)(1-E1) / (1 - cos(a) E1) * exp(-TE/T2*)
- spin echo  S = PD (1 - exp(-TR/T1)) exp(-TE/T2)   (also multi-shot TSE, with TE = effective TE)
- HASTE (single-shot TSE): every slice is excited once, so longitudinal magnetisation starts fully
  relaxed: S = PD exp(-TE_eff/T2).
- inversion preparation (TI given): Mz(TI) = 1 - 2 exp(-TI/T1) + exp(-T_rep/T1) replaces the
  saturation-recovery term (magnitude images, so |Mz|). T_rep is TR for spin-echo sequences (one
  inversion per TR) and `prep_interval_ms` for prepared gradient-echo readouts (None = full recovery).
- bSSFP off-resonance banding factor (1-E2)/sqrt(1 - 2 E2 cos(phi) + E2^2), phi = 2 pi df TR.

Signals are in units of the fully relaxed magnetisation of water (PD = 1): a radiographer's image
contrast, not calibrated intensities. A signal LUT is computed once per (sequence, field) and
mapped through the label volume by rendering/mr_image.py.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .subjects.tissues import TissueTable, mr_flowing_blood_mask

SequenceKind = Literal["bssfp", "spoiled_gre", "spin_echo", "haste"]
SEQUENCE_KINDS: tuple[str, ...] = ("bssfp", "spoiled_gre", "spin_echo", "haste")
# Sequences whose signal is a spin echo: blood that moves out of the slice between the 90 and 180
# degree pulses is not refocused, so vessels and heart chambers are black ("flow void").
_SPIN_ECHO_KINDS = ("spin_echo", "haste")
FLOW_VOID_FACTOR = 0.02  # residual signal of flowing blood on spin-echo images: black, at noise level [G]
T2STAR_FRACTION = 0.5  # T2* ~ T2/2 unless given (tissues.py docstring)
_MIN_T_MS = 1e-3  # guards exp(-t/T) for placeholder tissues (air T2 = 1 ms)


@dataclass(frozen=True)
class SequenceParams:
    """Contrast parameters of one sequence (times in ms, flip in degrees).

    kind: "bssfp", "spoiled_gre", "spin_echo" (SE / multi-shot TSE) or "haste" (single-shot TSE).
    ti_ms: inversion time of an inversion-prepared sequence, None for none.
    prep_interval_ms: time between inversions of a prepared gradient-echo readout (None: full recovery).
    """

    kind: str
    tr_ms: float
    te_ms: float
    flip_deg: float = 90.0
    ti_ms: float | None = None
    prep_interval_ms: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in SEQUENCE_KINDS:
            raise ValueError(f"unknown sequence kind {self.kind!r}; expected one of {SEQUENCE_KINDS}")
        if self.tr_ms <= 0 or self.te_ms < 0:
            raise ValueError("TR must be > 0 and TE >= 0")
        if self.kind != "haste" and self.te_ms >= self.tr_ms:
            raise ValueError(f"TE ({self.te_ms} ms) must be shorter than TR ({self.tr_ms} ms)")
        if self.ti_ms is not None and self.ti_ms < 0:
            raise ValueError("TI must be >= 0")

    def with_(self, **kw) -> "SequenceParams":
        return replace(self, **kw)


# Typical parameter sets, for the console's protocol library, tests and benches. [V] physics.md, [G] general.
PRESETS: dict[str, SequenceParams] = {
    # bSSFP cine [V]: TR 3 ms, TE 1.5 ms, flip 60-70 deg at 1.5 T (40-45 deg at 3 T: see cine_bssfp_3t)
    "cine_bssfp": SequenceParams("bssfp", tr_ms=3.0, te_ms=1.5, flip_deg=60.0),
    "cine_bssfp_3t": SequenceParams("bssfp", tr_ms=3.0, te_ms=1.5, flip_deg=45.0),
    # 3-plane localizer: a fast bSSFP ("TrueFISP") as most vendors use [G]
    "localizer_bssfp": SequenceParams("bssfp", tr_ms=3.5, te_ms=1.75, flip_deg=50.0),
    # breath-hold 2D spoiled GRE (FLASH) T1 [G]: TR ~150 ms, in-phase TE 4.6 ms at 1.5 T, flip 70 deg
    "t1_spoiled_gre": SequenceParams("spoiled_gre", tr_ms=150.0, te_ms=4.6, flip_deg=70.0),
    # single-shot TSE (HASTE) T2 [G]: effective TE ~90 ms
    "t2_haste": SequenceParams("haste", tr_ms=1400.0, te_ms=90.0, flip_deg=180.0),
    # multi-shot TSE T2 [G]: TR ~4000 ms, TE_eff ~100 ms
    "t2_tse": SequenceParams("spin_echo", tr_ms=4000.0, te_ms=100.0, flip_deg=180.0),
    # STIR (inversion-recovery TSE): TI ~ T1_fat ln 2 nulls fat; fat T1 343 ms at 1.5 T [V] -> ~240 ms
    "stir_tse": SequenceParams("spin_echo", tr_ms=4000.0, te_ms=70.0, flip_deg=180.0, ti_ms=240.0),
}


@dataclass(frozen=True)
class Relaxation:
    """Per-label relaxation at one field strength (arrays indexed by label value)."""

    t1_ms: np.ndarray
    t2_ms: np.ndarray
    pd: np.ndarray
    field_t: float

    @property
    def t2star_ms(self) -> np.ndarray:
        return self.t2_ms * T2STAR_FRACTION


def relaxation(tissues: TissueTable, field_t: float) -> Relaxation:
    """T1, T2 and PD per label at the console's field strength (1.5 T or 3 T table)."""
    if field_t <= 0:
        raise ValueError("field strength must be > 0 T")
    t1 = np.maximum(np.asarray(tissues.mr_t1(field_t), np.float64), _MIN_T_MS)
    t2 = np.maximum(np.asarray(tissues.mr_t2(field_t), np.float64), _MIN_T_MS)
    return Relaxation(t1, t2, np.asarray(tissues.mr_pd, np.float64), float(field_t))


# ---- signal equations (vectorised: t1, t2, pd may be arrays of any matching shape) ---------------
def bssfp_signal(pd, t1, t2, tr_ms: float, te_ms: float, flip_deg: float):
    """Balanced SSFP steady state on resonance (physics.md), with T2 decay to the echo at TE."""
    a = np.deg2rad(flip_deg)
    e1, e2 = np.exp(-tr_ms / t1), np.exp(-tr_ms / t2)
    return pd * np.sin(a) * (1.0 - e1) / (1.0 - (e1 - e2) * np.cos(a) - e1 * e2) * np.exp(-te_ms / t2)


def spoiled_gre_signal(pd, t1, t2star, tr_ms: float, te_ms: float, flip_deg: float):
    """Spoiled gradient echo (FLASH) steady state (physics.md): Ernst-angle T1 weighting, T2* decay."""
    a = np.deg2rad(flip_deg)
    e1 = np.exp(-tr_ms / t1)
    return pd * np.sin(a) * (1.0 - e1) / (1.0 - np.cos(a) * e1) * np.exp(-te_ms / t2star)


def spin_echo_signal(pd, t1, t2, tr_ms: float, te_ms: float):
    """Spin echo / multi-shot TSE (physics.md): PD (1 - exp(-TR/T1)) exp(-TE/T2)."""
    return pd * (1.0 - np.exp(-tr_ms / t1)) * np.exp(-te_ms / t2)


def inversion_mz(t1, ti_ms: float, t_rep_ms: float | None):
    """Longitudinal magnetisation at TI after an inversion, relative to M0 (signed)."""
    rep = 0.0 if t_rep_ms is None else np.exp(-t_rep_ms / t1)
    return 1.0 - 2.0 * np.exp(-ti_ms / t1) + rep


def bssfp_offres_factor(df_hz, tr_ms: float, t2_ms):
    """Off-resonance banding factor of bSSFP (physics.md): 1 on resonance, ~0 at phi = pi (dark bands)."""
    phi = 2.0 * np.pi * np.asarray(df_hz, float) * tr_ms * 1e-3
    e2 = np.exp(-tr_ms / np.asarray(t2_ms, float))
    return (1.0 - e2) / np.sqrt(1.0 - 2.0 * e2 * np.cos(phi) + e2 ** 2)


def signal(rel: Relaxation, seq: SequenceParams) -> np.ndarray:
    """Magnitude signal per entry of `rel` (no flow effects; see signal_lut)."""
    pd, t1, t2 = rel.pd, rel.t1_ms, rel.t2_ms
    if seq.kind == "bssfp":
        s = bssfp_signal(pd, t1, t2, seq.tr_ms, seq.te_ms, seq.flip_deg)
        if seq.ti_ms is not None:
            # Inversion-prepared single-shot readout: the centre of k-space is read early in the
            # train, so the prepared Mz rather than the steady state sets the contrast.
            s = pd * np.sin(np.deg2rad(seq.flip_deg)) * np.abs(inversion_mz(t1, seq.ti_ms, seq.prep_interval_ms)) \
                * np.exp(-seq.te_ms / t2)
    elif seq.kind == "spoiled_gre":
        s = spoiled_gre_signal(pd, t1, rel.t2star_ms, seq.tr_ms, seq.te_ms, seq.flip_deg)
        if seq.ti_ms is not None:  # prepared (turbo-FLASH) readout, as for bSSFP above
            s = pd * np.sin(np.deg2rad(seq.flip_deg)) * np.abs(inversion_mz(t1, seq.ti_ms, seq.prep_interval_ms)) \
                * np.exp(-seq.te_ms / rel.t2star_ms)
    elif seq.kind == "spin_echo":
        if seq.ti_ms is None:
            s = spin_echo_signal(pd, t1, t2, seq.tr_ms, seq.te_ms)
        else:  # one inversion per TR
            s = pd * np.abs(inversion_mz(t1, seq.ti_ms, seq.tr_ms)) * np.exp(-seq.te_ms / t2)
    else:  # haste: single shot, fully relaxed before its only excitation
        mz = 1.0 if seq.ti_ms is None else np.abs(inversion_mz(t1, seq.ti_ms, None))
        s = pd * mz * np.exp(-seq.te_ms / t2)
    return np.asarray(s, np.float64)


def signal_lut(tissues: TissueTable, seq: SequenceParams, field_t: float) -> np.ndarray:
    """float32 (n_labels,): magnitude signal per label value, usable as lut[labels].

    Spin-echo sequences (SE, TSE, HASTE) show flowing blood as a flow void; gradient-echo ones keep
    the equation's value (bSSFP blood is bright through its high T2/T1, as on a clinical cine).
    """
    s = signal(relaxation(tissues, field_t), seq)
    if seq.kind in _SPIN_ECHO_KINDS:
        s = np.where(mr_flowing_blood_mask(tissues.label_names, len(s)), s * FLOW_VOID_FACTOR, s)
    return np.clip(s, 0.0, None).astype(np.float32)
