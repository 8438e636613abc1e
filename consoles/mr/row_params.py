"""The editable parameters of one exam-queue row, their scan time and their conflicts (pure: no Qt).

RowParams holds what the parameter card shows (Routine, Contrast, Physio, Geometry). From it follow:
- the slice group (rendering.mr_image.SliceGroup) and the sequence (rendering.mr_physics.SequenceParams)
  that form the images;
- the nominal scan time (`scan_time_s`, physics.md: 2D TR x Ny x NSA / ETL; cine in heartbeats);
- conflicts in words (`conflicts`): what blocks Go until the user changes a parameter.

Orientation is stored as a scanner does: the main orientation (T, C or S) and two tilts towards fixed
secondary axes (SECONDARY), so editing one tilt never relabels the others; `orientation_text` shows it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from rendering.geometry import PlanePose, normal_from_orientation_text, orientation_text
from rendering.mr_image import SliceGroup
from rendering.mr_physics import SequenceParams

from consoles.mr import mapping
from consoles.mr.protocols import MRProtocol

AXIS_INDEX = {"S": 0, "C": 1, "T": 2}
# Tilt axes per main orientation: tilt a towards the first, tilt b towards the second.
SECONDARY = {"T": ("C", "S"), "C": ("T", "S"), "S": ("C", "T")}
# The sign of the normal of a canonical view (viewer side), as rendering.geometry uses it.
_VIEW_SIGN = {"T": 1.0, "C": 1.0, "S": -1.0}
NOMINAL_CYCLE_MS = 1000.0  # untriggered cine: phases spread over a nominal 1 s "cycle"
SHIM_MODES = ("tune_up", "standard", "advanced")
GRADIENT_ECHO = ("bssfp", "spoiled_gre")


@dataclass
class RowParams:
    """Everything the parameter card of a row holds. Times in ms, lengths in mm, angles in degrees."""

    kind: str  # sequence kind (rendering.mr_physics.SEQUENCE_KINDS); fixed by the protocol
    n_slices: int
    thickness_mm: float
    gap_mm: float
    fov_read_mm: float
    fov_phase_mm: float
    matrix: int
    averages: int
    tr_ms: float
    te_ms: float
    ti_ms: float | None  # None: the sequence has no inversion pulse (TI disabled)
    flip_deg: float
    trigger: str
    trigger_delay_ms: float
    acq_window_ms: float
    centre_mm: tuple[float, float, float]  # slice-group centre (subject frame: +x left, +y posterior, +z head)
    main: str  # main orientation T, C or S
    tilt_a_deg: float  # towards SECONDARY[main][0]
    tilt_b_deg: float  # towards SECONDARY[main][1]
    inplane_deg: float
    shim_mode: str = "standard"
    shim_size_mm: tuple[float, float, float] | None = None  # adjust volume (read, phase, slice); None = slab
    shim_centre_mm: tuple[float, float, float] | None = None  # adjust volume centre; None = the group's
    scheme: str | None = None  # mapping rows: MOLLI scheme or T2-prep scheme (consoles.mr.mapping); else None

    @classmethod
    def from_protocol(cls, p: MRProtocol, centre: Any, field_t: float = 1.5) -> "RowParams":
        seq = p.sequence(field_t) or SequenceParams("spoiled_gre", 10.0, 2.0, 10.0)  # placeholders
        s = p.slices
        main, a, b = tilts_from_normal(normal_from_orientation_text(s.orientation))
        row = cls(seq.kind, s.n_slices, s.thickness_mm, s.gap_mm, s.fov_read_mm, s.fov_phase_mm, s.matrix,
                  s.averages, seq.tr_ms, seq.te_ms, seq.ti_ms, seq.flip_deg, p.trigger, p.trigger_delay_ms,
                  p.acq_window_ms, tuple(float(c) for c in centre), main, a, b, s.inplane_deg)
        if p.map_kind:  # mapping: its scheme and single-shot readout's TR / TE / flip
            row = replace(row, **mapping.default_params(p, seq))
        return row

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RowParams":
        """Back from `to_dict` (a dump's row params), e.g. for a solver planning grips offline."""
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        for k in ("centre_mm", "shim_size_mm", "shim_centre_mm"):
            if kw.get(k) is not None:
                kw[k] = tuple(float(x) for x in kw[k])
        return cls(**kw)

    def copy(self) -> "RowParams":
        return replace(self)

    # ---- geometry --------------------------------------------------------------------------------
    def normal(self) -> np.ndarray:
        """Unit slice normal from main orientation and tilts (main component positive)."""
        return normal_from_tilts(self.main, self.tilt_a_deg, self.tilt_b_deg)

    def pose(self) -> PlanePose:
        """The group's plane pose, viewed from the side its main orientation is viewed from."""
        return PlanePose.from_normal(self.centre_mm, _VIEW_SIGN[self.main] * self.normal(), self.inplane_deg)

    def set_pose(self, pose: PlanePose) -> None:
        """Take centre, orientation and in-plane rotation from a pose (graphical planning)."""
        self.main, self.tilt_a_deg, self.tilt_b_deg = tilts_from_normal(pose.normal)
        self.centre_mm = tuple(float(c) for c in pose.centre)
        canonical = PlanePose.from_normal(pose.centre, _VIEW_SIGN[self.main] * self.normal(), 0.0)
        self.inplane_deg = round(float(np.rad2deg(np.arctan2(np.dot(pose.u, canonical.v),
                                                             np.dot(pose.u, canonical.u)))), 4) + 0.0

    def orientation_text(self) -> str:
        return orientation_text(self.normal())

    def slice_group(self) -> SliceGroup:
        return SliceGroup(self.pose(), fov_read_mm=self.fov_read_mm, fov_phase_mm=self.fov_phase_mm,
                          matrix_read=int(self.matrix), thickness_mm=self.thickness_mm, gap_mm=self.gap_mm,
                          n_slices=int(self.n_slices))

    def phase_lines(self) -> int:
        return self.slice_group().shape[0]

    def shim_box(self) -> dict[str, Any]:
        """The adjust volume: an oriented box on the group's pose (default: the slab of the group)."""
        slab = self.slice_group().slab()
        half = slab.half_sizes if self.shim_size_mm is None else tuple(s / 2.0 for s in self.shim_size_mm)
        centre = slab.pose.centre if self.shim_centre_mm is None else self.shim_centre_mm
        return {"centre": [round(float(c), 3) for c in centre],
                "size_mm": [round(2.0 * float(h), 3) for h in half],
                "follows_slab": self.shim_size_mm is None and self.shim_centre_mm is None}

    def sequence(self) -> SequenceParams:
        """Contrast parameters for image formation (only valid when there is no TR/TE conflict)."""
        return SequenceParams(self.kind, self.tr_ms, self.te_ms, self.flip_deg, self.ti_ms)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["centre_mm"] = [round(c, 3) for c in self.centre_mm]
        if self.shim_centre_mm is not None:
            d["shim_centre_mm"] = [round(c, 3) for c in self.shim_centre_mm]
        d["orientation"] = self.orientation_text()
        d["normal"] = [round(float(c), 6) for c in self.normal()]
        d["shim_box"] = self.shim_box()
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()}


def normal_from_tilts(main: str, a_deg: float, b_deg: float) -> np.ndarray:
    """n_main = cos a cos b, n_second = sin a cos b, n_third = sin b (rendering.geometry's convention)."""
    sec, third = SECONDARY[main]
    a, b = math.radians(a_deg), math.radians(b_deg)
    n = np.zeros(3)
    n[AXIS_INDEX[main]] = math.cos(a) * math.cos(b)
    n[AXIS_INDEX[sec]] = math.sin(a) * math.cos(b)
    n[AXIS_INDEX[third]] = math.sin(b)
    return n


def tilts_from_normal(normal: Any) -> tuple[str, float, float]:
    """(main, tilt a, tilt b) of a normal, main = its largest component (made positive)."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    main = "SCT"[int(np.argmax(np.abs(n)))]
    if n[AXIS_INDEX[main]] < 0:
        n = -n
    sec, third = SECONDARY[main]
    b = math.degrees(math.asin(max(-1.0, min(1.0, n[AXIS_INDEX[third]]))))
    a = math.degrees(math.atan2(n[AXIS_INDEX[sec]], n[AXIS_INDEX[main]]))
    return main, round(a, 4) + 0.0, round(b, 4) + 0.0


# ---- timing ------------------------------------------------------------------------------------------
def rr_ms(heart_rate_bpm: float | None) -> float | None:
    """RR interval (physics.md: RR = 60000 / HR)."""
    return None if not heart_rate_bpm else 60000.0 / float(heart_rate_bpm)


def min_tr_ms(p: RowParams) -> float:
    """Shortest TR the sequence allows for its TE (and TI): a symmetric echo needs TR >= 2 TE; an
    inversion-recovery spin echo also fits its inversion time into every TR."""
    m = 2.0 * p.te_ms
    if p.ti_ms is not None and p.kind == "spin_echo":
        m += p.ti_ms
    return round(m, 1)


def _concatenations(p: RowParams, slice_time_ms: float) -> int:
    """Interleaved 2D: as many slices as fit in one TR share it; the rest need further passes."""
    per_tr = max(1, int(math.floor(p.tr_ms / max(slice_time_ms, 1e-6))))
    return int(math.ceil(p.n_slices / per_tr))


def cycle_ms(p: RowParams, heart_rate_bpm: float | None, signal: bool) -> float:
    """The cardiac cycle a triggered acquisition waits for (nominal 1 s without trigger or signal)."""
    rr = rr_ms(heart_rate_bpm)
    return rr if p.trigger != "none" and signal and rr else NOMINAL_CYCLE_MS


def scan_time_s(p: RowParams, protocol: MRProtocol, heart_rate_bpm: float | None = None,
                signal: bool = True) -> float:
    """Nominal scan time (s) of a row: protocol overhead plus the readout's formula, rounded to 0.1 s.

    localizer      slices of its 3 stacks x Ny x TR x NSA (single-shot bSSFP, one slice after the other)
    single_shot    slices x TR x NSA (HASTE: one shot per slice, TR between shots)
    multi_shot     TR x ceil(Ny / ETL) x NSA x concatenations (TSE; slice time ETL x echo spacing)
    gre            TR x Ny x NSA x concatenations (2D spoiled GRE; slice time 2 TE)
    segmented_cine slices x ceil(Ny / segments) x NSA heartbeats of RR (nominal 1 s untriggered)
    """
    t = protocol.timing
    if t.readout == mapping.READOUT:
        return mapping.scan_time_s(p, protocol, heart_rate_bpm, signal)
    ny = p.phase_lines()
    nsa = max(1, int(p.averages))
    if t.readout == "localizer":
        ms = protocol.localizer_slices * ny * p.tr_ms * nsa
    elif t.readout == "single_shot":
        ms = p.n_slices * p.tr_ms * nsa
    elif t.readout == "multi_shot":
        ms = p.tr_ms * math.ceil(ny / max(1, t.etl)) * nsa * _concatenations(p, t.etl * t.echo_spacing_ms)
    elif t.readout == "gre":
        ms = p.tr_ms * ny * nsa * _concatenations(p, 2.0 * p.te_ms)
    elif t.readout == "segmented_cine":
        ms = p.n_slices * math.ceil(ny / max(1, t.segments)) * nsa * cycle_ms(p, heart_rate_bpm, signal)
    else:  # placeholder protocols: no acquisition
        return 0.0
    return round(t.overhead_s + ms / 1000.0, 1)


def temporal_resolution_ms(p: RowParams, protocol: MRProtocol) -> float | None:
    """Cine: time per cardiac phase = segments x TR."""
    if protocol.timing.readout != "segmented_cine":
        return None
    return round(protocol.timing.segments * p.tr_ms, 1)


def conflicts(p: RowParams, protocol: MRProtocol, heart_rate_bpm: float | None, signal: bool) -> list[str]:
    """Parameter conflicts in words, in the order the card lists them (empty: none)."""
    out: list[str] = []
    if not protocol.acquirable:
        return out
    m = min_tr_ms(p)
    if p.tr_ms + 1e-9 < m:
        what = f"TE {p.te_ms:.1f} ms" + (f" and TI {p.ti_ms:.0f} ms" if p.ti_ms is not None and p.kind == "spin_echo"
                                         else "")
        out.append(f"TR {p.tr_ms:.1f} ms is shorter than the minimum {m:.1f} ms for {what}.")
    if mapping.is_mapping(protocol):  # an RR overrun is a warning there (mapping.warnings): scanners acquire
        return out + mapping.conflicts(p, protocol)
    res = temporal_resolution_ms(p, protocol)
    if p.trigger != "none":
        rr = rr_ms(heart_rate_bpm)
        if signal and rr is not None and p.trigger_delay_ms + p.acq_window_ms > rr + 1e-9:
            out.append(f"Trigger delay {p.trigger_delay_ms:.0f} ms plus acquisition window {p.acq_window_ms:.0f} ms "
                       f"exceed the RR interval of {rr:.0f} ms (heart rate {heart_rate_bpm:.0f} bpm).")
        if res is not None and p.acq_window_ms + 1e-9 < res:
            out.append(f"Acquisition window {p.acq_window_ms:.0f} ms is shorter than one cardiac phase "
                       f"({res:.0f} ms).")
    return out
