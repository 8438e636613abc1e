"""Cardiac T1 (MOLLI) and T2 (T2-prep bSSFP) mapping on the MR console: the model side (pure, no Qt).

A mapping row (protocols with `map_kind`) acquires one ECG-triggered, breath-held short-axis slice with
rendering.mr_mapping: its geometry, trigger, trigger delay, acquisition window, TR / flip, shim box
(row_params.shim_box) and the episode's heart rate and seed form the source images and the fitted map.

- Scan time: the protocol's heartbeats at the subject's heart rate (mr_mapping.acquisition_duration_ms).
- Conflicts (block Go): more than one slice, an acquisition window shorter than one single-shot readout.
- Warnings (Go still acquires, as a scanner does; the artefact then shows on the map): trigger delay plus
  window longer than the RR interval, an untriggered map.
- The series (MapSeriesData) holds the map as image 1 (ms) and the sources (TI / prep labelled) after it;
  the dump records scheme, timing, geometry, shim coverage and the artefact causes, never pixels.
- ROI tool (MappingTools, mixed into MRModel): an ellipse on a viewport's map, centre and radii in the
  image plane's mm (u right, v up, about the image centre, as the viewport's plane coordinates), mean and
  SD in ms (mr_mapping.roi_stats over pixels with a valid fit).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rendering import mr_mapping as mm
from rendering.geometry import reslice
from rendering.mr_image import MRImage, MRSeries
from rendering.mr_physics import SequenceParams

if TYPE_CHECKING:  # row_params imports this module
    from consoles.mr.protocols import MRProtocol
    from consoles.mr.row_params import RowParams

READOUT = "mapping"  # protocols.Timing.readout of a mapping protocol
KIND_TITLE = {"t1": "T1", "t2": "T2"}
METHOD = {"t1": "MOLLI", "t2": "T2-prep"}
MOTION_CAUSE_MM = 2.0  # endocardial excursion across the shots above which the map is motion-corrupted
BANDING_CAUSE_FRACTION = 0.01  # heart pixels in a bSSFP band above which the map is banded
SHIM_COVERAGE_CAUSE = 0.95  # heart pixels of the slice inside the shim box below which the shim misses it


def is_mapping(protocol: "MRProtocol") -> bool:
    return protocol.timing.readout == READOUT


def scheme_of(p: "RowParams", protocol: "MRProtocol") -> str:
    """The row's scheme (MOLLI scheme name, or the T2-prep scheme)."""
    return p.scheme or protocol.map_scheme or ""


def readout(p: "RowParams", kind: str) -> mm.Readout:
    """The single-shot readout: lines from the matrix (mr_mapping.readout_for), TR and flip from the card."""
    ro = mm.readout_for(kind, p.phase_lines())
    return mm.Readout(float(p.flip_deg), float(p.tr_ms), ro.n_lines, ro.centre_line)


def scan_time_s(p: "RowParams", protocol: "MRProtocol", heart_rate_bpm: float | None, signal: bool) -> float:
    """Protocol overhead plus the breath-hold's heartbeats (nominal 1 s cycle untriggered / no signal)."""
    trig = p.trigger if signal and heart_rate_bpm else "none"
    ms = mm.acquisition_duration_ms(protocol.map_kind, scheme_of(p, protocol), float(heart_rate_bpm or 60.0), trig)
    return round(protocol.timing.overhead_s + ms / 1000.0, 1)


def conflicts(p: "RowParams", protocol: "MRProtocol") -> list[str]:
    """What blocks Go on a mapping row, in words."""
    out: list[str] = []
    if int(p.n_slices) != 1:
        out.append(f"A {KIND_TITLE[protocol.map_kind]} map acquires a single slice: set Slices to 1.")
    shot = readout(p, protocol.map_kind).shot_ms
    if p.trigger != "none" and p.acq_window_ms + 1e-9 < shot:
        out.append(f"Acquisition window {p.acq_window_ms:.0f} ms is shorter than one single-shot image "
                   f"({shot:.0f} ms).")
    return out


def warnings(p: "RowParams", protocol: "MRProtocol", heart_rate_bpm: float | None) -> list[str]:
    """What a scanner warns about but still acquires (the map then shows the artefact)."""
    if not is_mapping(protocol):
        return []
    out: list[str] = []
    rr = mm.rr_ms(heart_rate_bpm) if heart_rate_bpm else None
    if p.trigger == "none":
        out.append("Untriggered map: the images are read at random cardiac phases (motion, scattered values).")
    elif rr is not None and p.trigger_delay_ms + p.acq_window_ms > rr + 1e-9:
        out.append(f"Trigger delay {p.trigger_delay_ms:.0f} ms plus acquisition window {p.acq_window_ms:.0f} ms "
                   f"exceed the RR interval of {rr:.0f} ms (heart rate {heart_rate_bpm:.0f} bpm): "
                   f"images will be read in systole.")
    return out


def recommended_timing(p: "RowParams", protocol: "MRProtocol", heart_rate_bpm: float) -> tuple[float, float]:
    """(trigger delay, acquisition window) ms a radiographer would set for this heart rate: the window one
    shot long (rounded up to 10 ms) and the shot centred in diastasis, between the end of rapid filling and
    the atrial kick (rendering.mr_mapping's cardiac cycle: systole and filling scale with sqrt(RR), the kick
    takes the last 150 ms or a fifth of RR), the delay rounded to 10 ms. Centring keeps the shot still at
    fast rates too, where diastasis is barely a shot long (about 100 bpm). For reference solvers and tests."""
    import math

    ro = readout(p, protocol.map_kind)
    window = 10.0 * math.ceil(ro.shot_ms / 10.0)
    rr = mm.rr_ms(float(heart_rate_bpm))
    scale = math.sqrt(rr / 1000.0)
    diastasis = ((mm.SYSTOLE_MS_AT_60 + mm.FILLING_MS_AT_60) * scale, rr - min(mm.ATRIAL_MS, 0.2 * rr))
    shot_end = (diastasis[0] + diastasis[1] + ro.shot_ms) / 2.0  # the shot ends at delay + window
    delay = 10.0 * round(max(0.0, shot_end - window) / 10.0)
    return delay, window


def offset_shim(p: "RowParams", offset_mm: Any, size_mm: Any) -> None:
    """Put the row's shim box (adjust volume) `offset_mm` = (read, phase, slice) mm from the slice centre
    along the group's axes, with `size_mm` (read, phase, slice): how a task stages a shim off the heart
    (the console's own moves go through MRModel.set_shim_centre / set_shim_size)."""
    pose = p.pose()
    o = np.asarray(offset_mm, float).reshape(3)
    c = np.asarray(pose.centre, float) + o[0] * pose.u + o[1] * pose.v + o[2] * pose.normal
    p.shim_centre_mm = tuple(round(float(x), 3) + 0.0 for x in c)
    p.shim_size_mm = tuple(round(max(10.0, min(500.0, float(x))), 1) for x in np.asarray(size_mm, float).reshape(3))


def default_params(protocol: "MRProtocol", seq: SequenceParams) -> dict[str, Any]:
    """RowParams overrides of a mapping protocol: its scheme and the mapping readout's TR / TE / flip."""
    ro = {"t1": mm.MOLLI_READOUT, "t2": mm.T2PREP_READOUT}[protocol.map_kind]
    return {"scheme": protocol.map_scheme, "tr_ms": ro.tr_ms, "te_ms": round(ro.tr_ms / 2.0, 2),
            "flip_deg": ro.flip_deg}


# ---- the acquired series ------------------------------------------------------------------------------
def map_name(kind: str) -> str:
    return f"{KIND_TITLE[kind]} map {METHOD[kind]}"


def source_name(kind: str, t_ms: float) -> str:
    return f"T1 source TI {t_ms:.0f} ms" if kind == "t1" else f"T2 source prep {t_ms:.0f} ms"


@dataclass(frozen=True, eq=False)
class MapSeriesData(MRSeries):
    """A mapping series as the console keeps it: image 0 the map (pixels in ms, 0 where no fit), images
    1.. the sources in TI / prep order; `result` the full mr_mapping result, `record` the dump's part."""

    result: mm.MappingSeries | None = None
    record: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        assert self.result is not None
        return self.result.kind

    @property
    def auto_window(self) -> tuple[float, float]:  # type: ignore[override]
        """The sources' window (the map has its own, `map_window_ms`)."""
        assert self.result is not None
        return self.result.source_window

    @property
    def map_window_ms(self) -> tuple[float, float]:
        assert self.result is not None
        return self.result.map_window_ms

    def is_map(self, k: int) -> bool:
        return int(k) == 0


def shim_coverage(subject: Any, result: mm.MappingSeries, box: Any) -> float:
    """Fraction of the slice's heart pixels (centre plane) inside the shim box (1.0 with no heart)."""
    lab = reslice(subject.labels, subject.origin_mm, subject.spacing_mm, result.grid, order=0)
    ids = [k for k, n in subject.label_names.items() if n in mm.HEART_LABELS]
    heart = np.isin(lab, ids)
    if not heart.any():
        return 1.0
    inside = box.contains(result.grid.points()[heart])
    return round(float(np.mean(inside)), 4)


def acquire(subject: Any, p: "RowParams", protocol: "MRProtocol", heart_rate_bpm: float, field_t: float,
            seed: Any, t_start: float) -> MapSeriesData:
    """Form a mapping row's series with its parameters (deterministic in seed)."""
    kind = protocol.map_kind
    box_d = p.shim_box()
    box = mm.shim_box_on_pose(p.pose(), box_d["centre"], box_d["size_mm"])
    fn = mm.acquire_t1_map if kind == "t1" else mm.acquire_t2_map
    res = fn(subject, p.slice_group(), scheme_of(p, protocol), float(heart_rate_bpm), field_t=field_t,
             trigger=p.trigger, trigger_delay_ms=float(p.trigger_delay_ms), acq_window_ms=float(p.acq_window_ms),
             shim_box=box, readout=readout(p, kind), averages=float(p.averages), seed=seed)
    map_img = MRImage(res.map_ms.astype(np.float32), res.grid, res.thickness_mm, 0, map_name(kind))
    sources = tuple(MRImage(im.pixels, im.grid, im.thickness_mm, i + 1, source_name(kind, t))
                    for i, (im, t) in enumerate(zip(res.sources, res.times_ms)))
    meta = res.meta
    coverage = shim_coverage(subject, res, box)
    causes = []
    if p.trigger == "none":
        causes.append("untriggered")
    elif not meta["window_fits_rr"]:
        causes.append("window_exceeds_rr")
    if meta["motion_range_mm"] > MOTION_CAUSE_MM:
        causes.append("motion")
    if coverage < SHIM_COVERAGE_CAUSE:
        causes.append("shim_off_heart")
    if meta["banding_heart_fraction"] > BANDING_CAUSE_FRACTION:
        causes.append("banding")
    ok = res.fit_ok
    record = {
        "kind": kind, "method": METHOD[kind], "scheme": scheme_of(p, protocol), "unit": "ms",
        "times_ms": [round(float(t), 3) for t in res.times_ms], "n_sources": len(sources),
        "heart_rate_bpm": float(heart_rate_bpm), "rr_ms": meta["rr_ms"], "trigger": p.trigger,
        "trigger_delay_ms": float(p.trigger_delay_ms), "acq_window_ms": float(p.acq_window_ms),
        "shot_ms": meta["shot_ms"], "shot_offset_ms": meta["shot_offset_ms"], "window_fits_rr": meta["window_fits_rr"],
        "motion_range_mm": meta["motion_range_mm"], "flip_deg": float(p.flip_deg), "tr_ms": float(p.tr_ms),
        "thickness_mm": float(p.thickness_mm), "field_t": float(field_t),
        "shim_box": box_d, "shim_heart_coverage": coverage, "offres_heart_hz_max": meta["offres_heart_hz_max"],
        "banding_heart_fraction": meta["banding_heart_fraction"], "causes": causes,
        "fit_fraction": round(float(np.mean(ok)), 4), "map_window_ms": list(res.map_window_ms),
        "t_start": round(float(t_start), 3),
    }
    seq = SequenceParams("bssfp", float(p.tr_ms), float(p.te_ms), float(p.flip_deg))
    return MapSeriesData((map_img, *sources), seq, float(field_t), float(res.noise_sigma), seed, res, record)


def is_map_series(s: Any) -> bool:
    """Whether a model Series holds a mapping acquisition."""
    return isinstance(getattr(s, "data", None), MapSeriesData)


def series_entries(s: Any) -> list[tuple[str, int, int, str, str]]:
    """(key, series, image, title, count text) of a mapping series' two series-list entries: the map,
    then its sources (opening on the first; scroll pages through them)."""
    d: MapSeriesData = s.data
    kind = d.kind
    n = len(d) - 1
    what = "TI" if kind == "t1" else "prep"
    return [(f"{s.uid}.1", s.uid, 0, f"{s.uid}  {map_name(kind)}", "map, ms"),
            (f"{s.uid}.2", s.uid, 1, f"{s.uid}  {KIND_TITLE[kind]} sources {METHOD[kind]}", f"{n} {what} images")]


def caption(s: Any, k: int, orientation: str) -> list[str]:
    """Viewport corner text of image k (0-based) of a mapping series: series, image with unit, k/N."""
    d: MapSeriesData = s.data
    name = d[k].name
    if d.is_map(k):  # the series name says MOLLI / T2-prep already: type, unit and scheme
        sch = d.record["scheme"]
        name = f"{KIND_TITLE[d.kind]} map (ms)  " + (sch if d.kind == "t1" else "prep " + "/".join(
            f"{t:.0f}" for t in d.record["times_ms"]))
    return [s.name, name, f"Image {k + 1}/{len(d)}", orientation]


# ---- ROI tool --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoiResult:
    """One ellipse ROI measured on a map (plane mm about the image centre: u right, v up)."""

    viewport: int  # 0-based
    series: int
    kind: str
    centre_mm: tuple[float, float]
    radii_mm: tuple[float, float]
    mean_ms: float
    sd_ms: float
    n: int
    t: float

    def text(self) -> str:
        if self.n == 0:
            return "ROI: no fitted pixels"
        return f"ROI mean {self.mean_ms:.0f} ms  SD {self.sd_ms:.0f} ms  n {self.n}"

    def to_dict(self) -> dict[str, Any]:
        r = lambda x: None if not np.isfinite(x) else round(float(x), 2)  # noqa: E731
        return {"viewport": self.viewport + 1, "series": self.series, "kind": self.kind,
                "centre_mm": [round(float(c), 3) for c in self.centre_mm],
                "radii_mm": [round(float(c), 3) for c in self.radii_mm],
                "mean_ms": r(self.mean_ms), "sd_ms": r(self.sd_ms), "n": self.n, "t": round(float(self.t), 3)}


def ellipse_stats(d: MapSeriesData, centre_mm: tuple[float, float], radii_mm: tuple[float, float]) -> mm.RoiStats:
    """Stats of the map's valid fits inside an ellipse given in plane mm."""
    assert d.result is not None
    g = d.result.grid
    du, dv = g.pixel_mm
    rc = ((g.v_top - centre_mm[1]) / dv, (centre_mm[0] - g.u0) / du)
    mask = mm.ellipse_mask(g.shape, rc, (abs(radii_mm[1]) / dv, abs(radii_mm[0]) / du))
    return mm.roi_stats(d.result.map_ms, mask, d.result.fit_ok)


MIN_ROI_MM = 1.0


class MappingTools:
    """The ROI tool, mixed into MRModel (uses its _viewport, viewport_series, viewport_image, _log,
    _require, _changed and t)."""

    @property
    def roi_tool(self) -> bool:
        """Whether a left drag on a map draws an ROI (instead of moving planning graphics)."""
        return bool(self.__dict__.get("_roi_tool", False))

    def set_roi_tool(self, active: bool) -> None:
        self.__dict__["_roi_tool"] = bool(active)
        self._log("roi_tool_on" if active else "roi_tool_off")  # type: ignore[attr-defined]
        self._changed("layout")  # type: ignore[attr-defined]

    @property
    def rois(self) -> list[RoiResult]:
        # created on first use: MRModel.__init__ belongs to the initial-state staging
        return self.__dict__.setdefault("_map_rois", [])

    def measure_roi(self, viewport: int, centre_mm: Any, radii_mm: Any) -> RoiResult:
        """Draw an ellipse ROI on the map viewport `viewport` (0-based) shows; its mean and SD in ms."""
        i = self._viewport(viewport)  # type: ignore[attr-defined]
        s = self.viewport_series(i)  # type: ignore[attr-defined]
        k = self.viewport_image[i]  # type: ignore[attr-defined]
        self._require(s is not None and is_map_series(s) and s.data.is_map(k),  # type: ignore[attr-defined]
                      "The ROI tool measures a T1 or T2 map: show a map in this viewport first.")
        c = tuple(float(x) for x in np.asarray(centre_mm, float).reshape(2))
        r = tuple(abs(float(x)) for x in np.asarray(radii_mm, float).reshape(2))
        self._require(all(np.isfinite(c + r)) and min(r) >= MIN_ROI_MM,  # type: ignore[attr-defined]
                      f"An ROI needs radii of at least {MIN_ROI_MM:.0f} mm: drag across the region.")
        st = ellipse_stats(s.data, c, r)
        res = RoiResult(i, s.uid, s.data.kind, c, r, st.mean_ms, st.sd_ms, st.n, float(self.t))  # type: ignore
        self.rois.append(res)
        self._log("roi_measured", **res.to_dict())  # type: ignore[attr-defined]
        self.message = f"ROI measured on viewport {i + 1} ({KIND_TITLE[res.kind]} map, series {s.uid})."  # type: ignore
        self._changed("layout")  # type: ignore[attr-defined]
        return res

    def viewport_roi(self, i: int) -> RoiResult | None:
        """The last ROI drawn on viewport i (0-based) while it still shows that map."""
        s = self.viewport_series(i)  # type: ignore[attr-defined]
        if s is None or not is_map_series(s) or not s.data.is_map(self.viewport_image[i]):  # type: ignore
            return None
        for r in reversed(self.rois):
            if r.viewport == i:
                return r if r.series == s.uid else None
        return None

    def roi_dump(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rois]
