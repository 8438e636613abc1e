"""CT console model: all state and simulator logic, serializable, no Qt.

Coordinates: the console works in table millimetres (rendering.geometry.TableFrame): table z =
subject z - laser_z + shift, where laser_z = 0 is the subject's jugular notch and `shift` is the seeded
craniocaudal offset of where the patient lies on the couch (table z = 0 is the couch reference position,
not a landmark set on this patient). On the chest and renal cards the episode's breath-hold also moves
the diaphragm dome and everything below it along the table against the fixed apices (TableFrame's
breath-hold warp). Start is the superior (top) edge of the range, End the inferior edge (start > end).
Table height H (mm) sets where the gantry isocentre lies in the subject: the subject frame has
y = 0 at the patient's back and the body at y < 0; the back lies `pad_mm` (mattress and positioning
pads, seeded) above the couch top, the isocentre is ISO_HEIGHT_MM above the lowest couch position, so
y_iso = H - ISO_HEIGHT_MM + pad. Raising the table lifts the patient, moving the isocentre toward the
couch (posterior). The seeded offset perturbs the initial height. The patient lies `lateral_offset_mm`
(seeded) to the left of the couch midline: gantry x = subject x + lateral offset.
Scouts are acquired over their protocol's fixed table window (table z rows, gantry x columns on the
AP scout, height against the couch top on the lateral one), air where the body is not: a scout pixel
is the same table millimetre on every patient, and the anatomy moves on it with the patient's position.

Numeric settings are declared Parameters (PARAMETERS here, bolus.PARAMETERS for bolus tracking):
their bounds, decimals and enable rules are the ones the view shows and the model enforces.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consoles.common.model_base import ConsoleActionError, ConsoleModelBase, PerturbationDraws, Rule
from consoles.common.numeric import format_number
from consoles.common.params import Parameter
from consoles.ct import bolus as bolus_module
from consoles.ct.bolus import MONITOR_DELAY_S, MONITOR_TIMEOUT_S, BolusTracking  # noqa: F401 (re-exported)
from consoles.ct.protocols import PROTOCOLS, Protocol, get_protocol
from rendering import ct_contrast, ct_physics
from rendering.geometry import TableFrame, helical_duration_s, helical_time_at

__all__ = ["CTModel", "ConsoleActionError", "Series", "PARAMETERS", "ISO_HEIGHT_MM", "MONITOR_DELAY_S",
           "MONITOR_TIMEOUT_S"]

SCOUT_SECONDS = 4.0
RECON_SECONDS = 2.0
MIN_RANGE_MM = 10.0
TABLE_HEIGHT_LIMITS = (0.0, 260.0)  # couch travel; low enough for a thick pad under a thin patient
NOMINAL_TABLE_HEIGHT = 160.0
SCOUT_GANTRY_X_MM = (-260.0, 260.0)  # AP scout columns: gantry x (patient right on the left of the screen)
SCOUT_COUCH_Y_MM = (-440.0, 30.0)  # lateral scout columns: height against the couch top (anterior first)
SCOUT_PIXEL_MM = 2.0
# The skeleton, which the breath-hold never moves (issue 33): on the scouts it stays where the rigid table frame
# puts it while the diaphragm and the organs under it move (rendering.geometry.TableFrame's warp). Where a bone
# moves out of the breathing rows, soft tissue of this HU (muscle-like, reference/physics.md) takes its place.
BONE_LABELS = frozenset({"rib", "costal_cartilage", "sternum", "clavicle", "pelvis", "sacrum", "femur", "bone_other",
                         "intervertebral_disc", "spinal_cord"})
BONE_DISPLACES_HU = 40.0
DW_REFERENCE_MM = 300.0  # size-specific dose limits are stated for this water-equivalent diameter
ISO_HEIGHT_MM = 270.0  # isocentre above the lowest table position: y_iso = H - 270
# Scheduler priorities: which of the scanner's events runs first when two fall on one instant.
PRIORITY_SCOUT, PRIORITY_ROTATION_END, PRIORITY_RECON_DONE = 0, 1, 2


PLAN_EDITABLE = Rule(
    (lambda m: m.scout_status == "done", "Acquire the scout before planning."),
    (lambda m: m.scan_status == "idle", "Cannot change the plan while scanning."),
)
ACQUISITION_EDITABLE = Rule(
    (lambda m: m.protocol is not None, "Load a protocol first."),
    (lambda m: m.scan_status == "idle", "Cannot change parameters while scanning."),
    (lambda m: m.scout_status != "acquiring", "The scanner is busy."),
)
# The workflow buttons: the same Rule refuses the action in the model and greys the button in the view.
CAN_SCOUT = Rule(
    (lambda m: m.protocol is not None, "Load a protocol before acquiring the scout."),
    (lambda m: m.scan_status == "idle" and m.scout_status != "acquiring", "The scanner is busy."),
)
CAN_SCAN = Rule(
    (lambda m: m.protocol is not None, "Load a protocol first."),
    (lambda m: m.scout_status == "done", "Acquire the scout first."),
    (lambda m: m.scan_status == "idle", "A scan is already running."),
    (lambda m: m.confirmed, "Confirm the plan before scanning."),
)

PARAMETERS = (
    Parameter("start_mm", "Start (top)", "mm", -2000, 2000, 1, 5.0, PLAN_EDITABLE,
              set=lambda m, v: m.set_range(v, None), widget="start_field"),
    Parameter("end_mm", "End (bottom)", "mm", -2000, 2000, 1, 5.0, PLAN_EDITABLE,
              set=lambda m, v: m.set_range(None, v), widget="end_field"),
    Parameter("table_height_mm", "Table height", "mm", *TABLE_HEIGHT_LIMITS, 1, 1.0, PLAN_EDITABLE,
              set=lambda m, v: m.set_table_height(v), widget="table_height_field"),
    Parameter("kv", "Tube voltage", "kV", 70, 150, 0, 10, ACQUISITION_EDITABLE,
              set=lambda m, v: m.set_param("kv", v)),
    Parameter("mas", "Tube current", "mAs", 10, 600, 0, 10, ACQUISITION_EDITABLE,
              set=lambda m, v: m.set_param("mas", v)),
    Parameter("pitch", "Pitch", "", 0.2, 1.5, 2, 0.05, ACQUISITION_EDITABLE,
              set=lambda m, v: m.set_param("pitch", v)),
    # set by protocols; no field on the console, but set_param accepts them
    Parameter("fov_mm", "FOV", "mm", 150, 500, 1, 10, ACQUISITION_EDITABLE,
              set=lambda m, v: m.set_param("fov_mm", v)),
    Parameter("slice_mm", "Slice", "mm", 0.5, 10.0, 2, 0.25, ACQUISITION_EDITABLE,
              set=lambda m, v: m.set_param("slice_mm", v)),
)
ACQUISITION_PARAMS = ("kv", "mas", "pitch", "fov_mm", "slice_mm")


@dataclass
class Series:
    uid: int
    protocol: str
    start_mm: float
    end_mm: float
    subject_z_top: float
    subject_z_bottom: float
    table_height_mm: float
    y_iso_subject: float
    kv: float
    mas: float
    pitch: float
    slice_mm: float
    t_start: float
    t_end: float
    ctdi_vol_mgy: float
    dlp_mgycm: float
    effective_msv: float
    n_images: int
    noise_hu: float
    prior: bool = False  # acquired before this session (exam history), not by the user
    t_injection: float | None = None
    arterial_hu_start: float | None = None  # aortic blood HU when the first / last image was acquired
    arterial_hu_end: float | None = None
    images: np.ndarray | None = field(default=None, repr=False)  # (n, ny, nx) HU, top slice first

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "images"}
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


class CTModel(ConsoleModelBase):
    """The scanner console's logic. Methods raise ConsoleActionError when the action is not allowed."""

    modality = "ct"

    def __init__(self, subject, task_id: str, seed: int, initial_state: dict | None = None,
                 perturbations: dict | None = None) -> None:
        super().__init__(task_id, subject.id, seed)
        self.subject = subject
        self._world_z = subject.world_z()  # slice z (subject mm): read on every drag motion
        self._world_z.setflags(write=False)
        initial_state = dict(initial_state or {})
        # the order of these draws is part of every episode's identity: append, never reorder
        draws = PerturbationDraws.for_episode(task_id, subject.id, seed, perturbations)
        self.patient_shift_mm = draws.offset_mm("patient_shift")
        self.table_height_offset_mm = draws.offset_mm("table_height_offset")
        self.heart_rate_bpm = int(round(draws.uniform("heart_rate_bpm", [70, 70])))
        self.ctdi_limit_mgy: float | None = initial_state.get("ctdi_limit_mgy")
        limit = draws.uniform_if_present("ctdi_limit_mgy")
        if limit is not None:
            self.ctdi_limit_mgy = round(limit * 2) / 2  # whole half-mGy, as a policy states
        prior_spec = initial_state.get("prior_exam")
        prior_clip = self._draw_prior_clip(draws) if prior_spec else None
        # issue 21 draws, after all earlier ones: lateral offset on the couch, pad under the back, and a
        # size-specific dose limit's reference value
        self.lateral_offset_mm = draws.offset_mm("patient_lateral_offset")
        self.pad_mm = draws.offset_mm("table_pad")
        limit_ref = draws.uniform_if_present("ctdi_limit_ref_mgy")
        # issue 21, second round: this episode's breath-hold level (chest and renal cards), drawn last
        breath = draws.uniform_if_present("breath_hold_mm")
        self.breath_hold_mm = 0.0 if breath is None else round(breath, 1)
        self.contrast = ct_contrast.contrast_params(subject.id, seed, self.heart_rate_bpm)
        self.t_injection: float | None = None
        self.frame = TableFrame(laser_z_subject_mm=0.0, patient_shift_mm=self.patient_shift_mm,
                                iso_height_mm=ISO_HEIGHT_MM, pad_mm=self.pad_mm,
                                lateral_offset_mm=self.lateral_offset_mm, **self._breath_hold_warp())
        self.ctdi_limit_dw_mm: float | None = None
        self.protocol: Protocol | None = None
        self.selected_protocol: str | None = None
        self.scout_status = "none"  # none | acquiring | done
        self.scout_t_end = 0.0
        self.scouts: dict[str, ct_physics.Scout] = {}
        self.scout_window: tuple[float, float] | None = None  # (top, bottom) table mm of the acquired scout
        self.dw_mm: np.ndarray | None = None
        self.start_mm = 0.0
        self.end_mm = 0.0
        self.table_height_mm = round(NOMINAL_TABLE_HEIGHT + self.table_height_offset_mm, 1)
        self.kv, self.mas, self.pitch = 120.0, 100.0, 1.0
        self.rotation_s, self.collimation_mm, self.slice_mm, self.fov_mm = 0.5, 40.0, 5.0, 400.0
        self.confirmed = False
        self.scan_status = "idle"  # idle | scanning | reconstructing
        self.scan_t_start = self.scan_t_end = 0.0
        self.series: list[Series] = []
        self.recon_open: int | None = None
        self.recon_index = 0
        self.message = "Select a protocol and press Load protocol."
        self._hu_lut = subject.ct_hu_lut().astype(np.float32)
        self._enh_lut = subject.hu_enhancement_lut().astype(np.float32)
        self._comp_lut = subject.ct_compartment_lut().astype(np.int64)
        if limit_ref is not None:  # needs the HU table for the patient's size (drawn above, in order)
            self._set_size_specific_limit(limit_ref, list(initial_state.get("ctdi_limit_labels") or []))
        self.bolus = BolusTracking(self)
        self.declare(PARAMETERS)
        self.declare(bolus_module.PARAMETERS)
        self.start_page = initial_state.get("start_page", "planning")
        if initial_state.get("protocol"):
            self.load_protocol(initial_state["protocol"], log=False)
        if prior_spec:
            self._load_prior_exam(prior_spec, *prior_clip)

    def _breath_hold_warp(self) -> dict[str, float]:
        """The TableFrame breath-hold fields: nothing above the jugular notch (the laser level, where the
        apices and shoulders sit) moves, everything from the right diaphragm dome down (the liver's top, read
        from the runtime labels) moves by the episode's breath_hold_mm, the chest between is stretched."""
        if not self.breath_hold_mm:
            return {}
        dome = self._label_z_extent(["liver"])[1]
        return {"breath_hold_mm": self.breath_hold_mm, "breath_fixed_z_mm": 0.0,
                "breath_dome_z_mm": round(dome, 1)}

    @staticmethod
    def _draw_prior_clip(draws: PerturbationDraws) -> tuple[str, float]:
        """Which end the prior series missed and by how much: perturbations "prior_clip_end" (choices
        "top" / "bottom") and "prior_clip_mm" [lo, hi]."""
        clip_end = str(draws.choice("prior_clip_end", ["bottom"]))
        return clip_end, round(draws.uniform("prior_clip_mm", [30.0, 50.0]), 1)

    def _set_size_specific_limit(self, ref_mgy: float, labels: list[str]) -> None:
        """CTDIvol limit scaled from `ref_mgy` (stated for DW_REFERENCE_MM) to this patient's median
        water-equivalent diameter over the labels' z extent, at equal image noise (noise ~
        exp(mu_w Dw / 2) / sqrt(CTDIvol)): the size-specific limit a department states for a low-dose
        protocol (AAPM Report 204 / 220 size metrics)."""
        if not labels:
            raise ValueError("a size-specific dose limit (ctdi_limit_ref_mgy) needs initial_state.ctdi_limit_labels")
        proj = self._projections()
        dw = ct_physics.water_equivalent_diameter_mm(proj["ap"], proj["lateral"], self.subject.spacing_mm)
        zmin, zmax = self._label_z_extent(labels)
        sel = (self._world_z >= zmin) & (self._world_z <= zmax)
        self.ctdi_limit_dw_mm = round(float(np.median(dw[sel])), 1)
        scale = float(np.exp(ct_physics.MU_WATER_PER_MM * (self.ctdi_limit_dw_mm - DW_REFERENCE_MM)))
        self.ctdi_limit_mgy = round(ref_mgy * scale, 2)

    def _load_prior_exam(self, spec: dict, clip_end: str, clip: float) -> None:
        """An earlier series of this exam whose range clipped one end of the organ (recovery tasks).

        spec: {"protocol", "labels": [label names], "margin_mm"}; `clip_end` and `clip` (mm) are the
        seeded end that was missed and by how much (_draw_prior_clip).
        """
        self.load_protocol(spec["protocol"], log=False)
        self._finish_scout(log=False)
        zmin, zmax = self._label_z_extent(list(spec["labels"]))
        margin = float(spec.get("margin_mm", 10.0))
        top, bottom = zmax + margin, zmin - margin
        if clip_end == "top":
            top = zmax - clip
        else:
            bottom = zmin + clip
        self.start_mm = round(float(self.table_from_subject_z(top)), 1)
        self.end_mm = round(float(self.table_from_subject_z(bottom)), 1)
        self.prior_clip = {"end": clip_end, "clip_mm": clip}
        self.t = -60.0  # the prior series was acquired a minute before this session starts
        self.scan_t_start = self.t
        self._finish_scan(prior=True)
        self.t = 0.0
        self.recon_open = None
        self.message = (f"Exam in progress: series {self.series[-1].uid} ({self.protocol.name}) was acquired "
                        "before you took over. Review it in the Review page before continuing.")

    # ---- geometry ---------------------------------------------------------------------
    @property
    def laser_z(self) -> float:
        return self.frame.laser_z_subject_mm

    @property
    def busy(self) -> bool:
        """The scanner is acquiring (scout or scan) or reconstructing."""
        return self.scan_status != "idle" or self.scout_status == "acquiring"

    def table_from_subject_z(self, z: float | np.ndarray) -> float | np.ndarray:
        return self.frame.table_z(z)

    def subject_from_table_z(self, zt: float | np.ndarray) -> float | np.ndarray:
        return self.frame.subject_z(zt)

    def y_iso_subject(self, height: float | None = None) -> float:
        return self.frame.y_iso_subject(self.table_height_mm if height is None else height)

    def table_height_for(self, y_iso: float) -> float:
        """Table height putting the isocentre at subject y `y_iso` (this patient's pad)."""
        return float(self.frame.table_height_for(y_iso))

    def iso_couch_y(self, height: float | None = None) -> float:
        """The isocentre's height against the couch top (the lateral scout's horizontal axis)."""
        return float(self.frame.couch_y(self.y_iso_subject(height)))

    def table_height_for_couch_y(self, u: float) -> float:
        """Table height putting the isocentre at couch height `u` (a point on the lateral scout)."""
        return self.table_height_for(u + self.pad_mm)

    def table_limits(self) -> tuple[float, float]:
        """(top, bottom) of the plannable table range in table mm: the acquired scout's window (else the
        loaded protocol's), fixed in table mm whatever the patient's position."""
        if self.scout_window is not None:
            return self.scout_window
        if self.protocol is not None:
            return self.protocol.scout_top_mm, self.protocol.scout_bottom_mm
        z = self._world_z
        return float(self.table_from_subject_z(z[-1])), float(self.table_from_subject_z(z[0]))

    def _label_z_extent(self, label_names: list[str]) -> tuple[float, float]:
        """(zmin, zmax) in subject mm of the slices holding any of these labels (the simulator's own anatomy)."""
        ids = [self.subject.label_id(n) for n in label_names]
        ks = np.nonzero(np.isin(self.subject.labels, ids).any(axis=(1, 2)))[0]
        z = self._world_z
        return float(z[ks[0]]), float(z[ks[-1]])

    # ---- protocol ---------------------------------------------------------------------
    @staticmethod
    def protocols() -> tuple[Protocol, ...]:
        return PROTOCOLS

    def select_protocol(self, pid: str) -> None:
        get_protocol(pid)
        self.selected_protocol = pid
        self._changed("protocol_selection")

    def load_protocol(self, pid: str | None = None, log: bool = True) -> None:
        pid = pid or self.selected_protocol
        self._require(pid is not None, "Select a protocol in the list first.")
        self._require(self.scan_status == "idle", "Cannot change protocol while scanning.")
        p = get_protocol(pid)
        self.protocol, self.selected_protocol = p, p.id
        self.kv, self.mas, self.pitch = float(p.kv), float(p.mas), float(p.pitch)
        self.rotation_s, self.collimation_mm = p.rotation_s, p.collimation_mm
        self.slice_mm, self.fov_mm = p.slice_mm, float(p.fov_mm)
        self.start_mm, self.end_mm = p.default_start_mm, p.default_end_mm
        self.confirmed = False
        if log:
            self._log("protocol_loaded", protocol=p.id)
        self.message = f"Protocol '{p.name}' loaded. Acquire the scout."
        self._changed("protocol")

    # ---- scout ------------------------------------------------------------------------
    def acquire_scout(self) -> None:
        self._require_rule(CAN_SCOUT)
        self.scout_status = "acquiring"
        self.scout_t_end = self.t + SCOUT_SECONDS
        self.schedule(self.scout_t_end, self._finish_scout, PRIORITY_SCOUT, "scout_done")
        self._log("scout_started")
        self.message = "Acquiring scout (AP and lateral)..."
        self._changed("scout")

    def _projections(self) -> dict[str, np.ndarray]:
        """Noise-free AP and lateral line integrals (the subject does not move: computed once)."""
        if getattr(self, "_proj", None) is None:
            # per label, then looked up: one float32 volume (4 bytes a voxel, not kept) instead of the
            # three temporaries of converting a HU volume; mu_from_hu is elementwise, so the values match
            mu_lut = ct_physics.mu_from_hu(self._hu_lut)
            mu = mu_lut[self.subject.labels]
            sp = self.subject.spacing_mm
            self._proj = {v: ct_physics.scout_projection(mu, sp, v) for v in ("ap", "lateral")}
            if self.breath_hold_mm:
                # breathing moves organs, not bones (issue 33): the skeleton's own share of the line integrals
                # (bone less the soft tissue it displaces), imaged at its rigid place (_scout_grid)
                del mu
                bone = self._bone_label_mask()
                rel = np.where(bone, mu_lut - np.float32(ct_physics.mu_from_hu(
                    np.asarray([BONE_DISPLACES_HU], np.float32))[0]), np.float32(0.0))[self.subject.labels]
                self._proj.update({f"{v}_bone": ct_physics.scout_projection(rel, sp, v) for v in ("ap", "lateral")})
        return self._proj

    def _bone_label_mask(self) -> np.ndarray:
        """bool per label value: the skeleton (BONE_LABELS and every vertebra), which breathing never moves."""
        if getattr(self, "_bone_mask", None) is not None:
            return self._bone_mask
        m = np.zeros(self._hu_lut.shape[0], bool)
        for value, name in self.subject.tissues.label_names.items():
            if 0 <= int(value) < m.size and (name in BONE_LABELS or name.startswith("vertebra_")):
                m[int(value)] = True
        m.setflags(write=False)
        self._bone_mask = m
        return m

    def scout_grid_indices(self, view: str, top: float, bottom: float, rigid: bool = False
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """Which subject voxel row (k) and column (i on the AP view, j on the lateral one) each pixel of a
        scout over the table window (`top`, `bottom`) shows: rows are table z from `top` down, columns gantry
        x or couch height; nearest voxel (the positions are 0.1 mm draws on a 2 mm grid). Returns (k, i,
        rows_inside, cols_inside, u0); pixels outside the subject volume are air. The scout and the
        visibility figure (scoring.visibility) both map through here, so they show the same anatomy.
        `rigid`: the rows of the skeleton, which the breath-hold does not move (no breath-hold warp)."""
        sx, sy, sz = self.subject.spacing_mm
        ox, oy, oz = self.subject.origin_mm
        nz, ny, nx = self.subject.labels.shape
        d = SCOUT_PIXEL_MM
        zt = top - d * np.arange(int(round((top - bottom) / d)) + 1)
        z_subject = self.frame.rigid_subject_z(zt) if rigid else self.subject_from_table_z(zt)
        k = np.rint((z_subject - oz) / sz).astype(int)
        lo, hi = SCOUT_GANTRY_X_MM if view == "ap" else SCOUT_COUCH_Y_MM
        u = lo + d * np.arange(int(round((hi - lo) / d)) + 1)
        if view == "ap":
            i = np.rint((u - self.lateral_offset_mm - ox) / sx).astype(int)
            n_cols = nx
        else:  # couch height -> subject y: the back lies pad_mm above the couch top
            i = np.rint((u + self.pad_mm - oy) / sy).astype(int)
            n_cols = ny
        return k, i, (k >= 0) & (k < nz), (i >= 0) & (i < n_cols), float(lo)

    def _scout_grid(self, view: str, top: float, bottom: float) -> tuple[np.ndarray, float]:
        """The noise-free line integrals of one view resampled onto the scout's fixed grid
        (scout_grid_indices), zero (air) where the subject volume is not. Returns (p, u0)."""
        projections = self._projections()
        proj = projections[view]  # (nz, n_cols), row 0 at the lowest z
        k, i, rows, cols, lo = self.scout_grid_indices(view, top, bottom)
        p = np.zeros((k.size, i.size), np.float32)
        p[np.ix_(rows, cols)] = proj[np.ix_(k[rows], i[cols])]
        if self.breath_hold_mm:  # the skeleton out of the breathing rows, back in at its rigid rows
            bone = projections[f"{view}_bone"]
            p[np.ix_(rows, cols)] -= bone[np.ix_(k[rows], i[cols])]
            kr, _, rows_r, _, _ = self.scout_grid_indices(view, top, bottom, rigid=True)
            p[np.ix_(rows_r, cols)] += bone[np.ix_(kr[rows_r], i[cols])]
            np.maximum(p, 0.0, out=p)
        return p, lo

    def _finish_scout(self, log: bool = True) -> None:
        spacing = self.subject.spacing_mm
        rng = self.rng("scout")
        top, bottom = self.protocol.scout_top_mm, self.protocol.scout_bottom_mm
        proj = self._projections()
        for view in ("ap", "lateral"):
            p, u0 = self._scout_grid(view, top, bottom)
            noisy = ct_physics.add_scout_noise(p, rng)
            self.scouts[view] = ct_physics.Scout(view, noisy, u0, SCOUT_PIXEL_MM, top, SCOUT_PIXEL_MM)
        self.scout_window = (float(top), float(bottom))
        self.dw_mm = ct_physics.water_equivalent_diameter_mm(proj["ap"], proj["lateral"], spacing)
        self.scout_status = "done"
        self.bolus.on_scout_acquired()
        if log:
            self._log("scout_acquired")
        self.message = "Scout ready. Plan the scan range on the scout, then Confirm plan."
        self._changed("scout")

    # ---- planning ---------------------------------------------------------------------
    def _editable(self) -> None:
        self._require_rule(PLAN_EDITABLE)

    def set_range(self, start_mm: float | None = None, end_mm: float | None = None) -> None:
        """Set the top (start) and/or bottom (end) edge in table mm, kept inside the table limits."""
        self._editable()
        top, bottom = self.table_limits()
        s = self.start_mm if start_mm is None else self.parameters["start_mm"].bound(start_mm)
        e = self.end_mm if end_mm is None else self.parameters["end_mm"].bound(end_mm)
        s = min(top, max(bottom + MIN_RANGE_MM, s))
        e = max(bottom, min(top - MIN_RANGE_MM, e))
        if s - e < MIN_RANGE_MM:
            if start_mm is not None and end_mm is None:
                e = s - MIN_RANGE_MM
            else:
                s = e + MIN_RANGE_MM
        s, e = round(s, 1), round(e, 1)
        if (s, e) != (self.start_mm, self.end_mm):
            self.start_mm, self.end_mm = s, e
            was_confirmed = self._unconfirm()
            self._log("range_changed", start_mm=s, end_mm=e)
            self.message = self._plan_message(f"Range {format_number(s, 1, '')} to {format_number(e, 1, 'mm')}: "
                                              f"length {self.length_text()}, {self.dlp_text()}.", was_confirmed)
        self._changed("plan")

    def move_range(self, delta_mm: float) -> None:
        length = self.start_mm - self.end_mm
        top, bottom = self.table_limits()
        s = min(top, max(bottom + length, self.start_mm + delta_mm))
        self.set_range(s, s - length)

    def set_table_height(self, h: float) -> None:
        self._editable()
        h = self.parameters["table_height_mm"].clamp(h)
        if h != self.table_height_mm:
            self.table_height_mm = h
            was_confirmed = self._unconfirm()
            self._log("table_height_changed", table_height_mm=h)
            self.message = self._plan_message(f"Table height {format_number(h, 1, 'mm')}.", was_confirmed)
        self._changed("plan")

    def set_param(self, name: str, value: float) -> None:
        """An acquisition parameter (kV, mAs, pitch, FOV, slice), clamped and rounded by its Parameter."""
        self._require(name in ACQUISITION_PARAMS, f"unknown parameter {name}")
        p = self.parameters[name]
        self._require_rule(p.enabled_when)
        value = p.clamp(value)
        if getattr(self, name) != value:
            setattr(self, name, value)
            was_confirmed = self._unconfirm()
            self._log("param_changed", name=name, value=value)
            self.message = self._plan_message(
                f"{p.label} {format_number(value, p.decimals, p.unit)}: {self.ctdi_text()}, {self.dlp_text()}.",
                was_confirmed)
        self._changed("params")

    def _unconfirm(self) -> bool:
        """Drop the plan's confirmation; whether it was confirmed."""
        was = self.confirmed
        self.confirmed = False
        return was

    @staticmethod
    def _plan_message(what: str, was_confirmed: bool) -> str:
        """The status line after a plan or parameter edit: what it set, and that the plan needs confirming again
        when the edit unconfirmed it."""
        return f"{what} Plan changed: confirm it again before scanning." if was_confirmed else what

    def confirm(self) -> None:
        self._editable()
        self.confirmed = True
        self._log("plan_confirmed", start_mm=self.start_mm, end_mm=self.end_mm,
                  table_height_mm=self.table_height_mm)
        if self.protocol is not None and self.protocol.contrast and self.bolus.status in ("off", "ready"):
            self.message = "Plan confirmed. Start the injection (Bolus tracking), or press Scan."
        else:
            self.message = "Plan confirmed. Press Scan to start the acquisition."
        self._changed("plan")

    def current_dose(self) -> ct_physics.Dose:
        region = self.protocol.region if self.protocol else "chest"
        return ct_physics.dose(self.kv, self.mas, self.pitch, self.length_mm, region)

    # One text per derived value: the panel's read-outs and the status line both show these (issue 34).
    @property
    def length_mm(self) -> float:
        """The planned range's length (start - end), table mm."""
        return round(self.start_mm - self.end_mm, 1)

    def length_text(self) -> str:
        return format_number(self.length_mm, 1, "mm")

    def ctdi_text(self) -> str:
        return f"CTDIvol {self.current_dose().ctdi_vol_mgy:.2f} mGy"

    def dlp_text(self) -> str:
        return f"DLP {self.current_dose().dlp_mgycm:.0f} mGy\u00b7cm"

    def effective_dose_text(self) -> str:
        return f"Effective dose {self.current_dose().effective_msv:.2f} mSv"

    def dose_limit_exceeded(self) -> bool:
        return self.ctdi_limit_mgy is not None and self.current_dose().ctdi_vol_mgy > self.ctdi_limit_mgy + 1e-9

    def planned_dw_mm(self) -> float:
        """Median water-equivalent diameter over the planned range (size term of the noise model)."""
        if self.dw_mm is None:
            return 300.0
        z = self._world_z
        lo, hi = self.subject_from_table_z(self.end_mm), self.subject_from_table_z(self.start_mm)
        sel = (z >= lo) & (z <= hi)
        return float(np.median(self.dw_mm[sel])) if sel.any() else float(np.median(self.dw_mm))

    def expected_noise_hu(self) -> float:
        return ct_physics.noise_sigma_hu(self.kv, self.mas, self.pitch, self.planned_dw_mm(), self.slice_mm)

    # ---- scanning ---------------------------------------------------------------------
    def scan(self) -> None:
        self._require_rule(CAN_SCAN)
        self.bolus.on_manual_scan()
        self._start_scan()

    def _start_scan(self) -> None:
        length = self.start_mm - self.end_mm
        self.scan_status = "scanning"
        self.scan_t_start = self.t
        self.scan_t_end = self.t + helical_duration_s(length, self.pitch, self.collimation_mm, self.rotation_s)
        self.schedule(self.scan_t_end, self._end_of_rotation, PRIORITY_ROTATION_END, "rotation_end")
        self._log("scan_started", start_mm=self.start_mm, end_mm=self.end_mm)
        self.message = f"Scanning series {len(self.series) + 1}..."
        self._changed("scan")

    def scan_progress(self) -> float:
        if self.scan_status == "scanning":
            span = max(1e-6, self.scan_t_end - self.scan_t_start)
            return min(1.0, (self.t - self.scan_t_start) / span)
        if self.scan_status == "reconstructing":
            return 1.0
        return 0.0

    def hu_lut_at(self, t: float) -> np.ndarray:
        """Per-label HU at simulated time t (enhanced after an injection)."""
        if self.t_injection is None:
            return self._hu_lut
        return ct_contrast.hu_lut_at(self._hu_lut, self._enh_lut, self._comp_lut, self.contrast,
                                     t - self.t_injection)

    def _hu_slab(self, z0_subject: float, z1_subject: float, lut: np.ndarray | None = None) -> np.ndarray:
        z = self._world_z
        k = np.nonzero((z >= z0_subject - 1e-6) & (z <= z1_subject + 1e-6))[0]
        lut = self._hu_lut if lut is None else lut
        if k.size == 0:
            zc, half = (z0_subject + z1_subject) / 2, (z[1] - z[0]) / 2
            if zc < z[0] - half or zc > z[-1] + half:  # beyond the phantom (the scout window is wider): air
                return np.full((1, *self.subject.labels.shape[1:]), lut[0], np.float32)
            k = np.array([int(np.argmin(np.abs(z - zc)))])  # thinner than a voxel: nearest plane
        return lut[self.subject.labels[k[0]:k[-1] + 1]]

    def axial_hu(self, zt_top: float, zt_bottom: float, lut: np.ndarray | None = None) -> np.ndarray:
        """The noise-free slab-mean HU (ny, nx, float32, on the subject grid) of the table slab [zt_bottom,
        zt_top] before the in-plane blur (ct_physics.slab_mean_hu: linearly interpolated along z, never the
        nearest label). With a breath-hold the soft tissue is imaged where the warp puts it and the skeleton at
        its rigid place, as on the scouts (_scout_grid): the bones' voxels in the warped slab become soft tissue
        of BONE_DISPLACES_HU, and the rigid slab's bone replaces, by its partial-volume fraction, what the warped
        soft tissue put there (in an image a bone occupies its voxels; the scouts' line integrals add the
        skeleton's excess over that soft tissue, which is the same where nothing else moved in)."""
        lut = self._hu_lut if lut is None else lut
        labels, oz, sz = self.subject.labels, float(self.subject.origin_mm[2]), float(self.subject.spacing_mm[2])
        z0, z1 = self.subject_from_table_z(zt_bottom), self.subject_from_table_z(zt_top)
        if not self.frame.breath_hold_mm:
            return ct_physics.slab_mean_hu(labels, lut, z0, z1, oz, sz, float(lut[0]))
        bone = self._bone_label_mask()
        soft = ct_physics.slab_mean_hu(labels, np.where(bone, np.float32(BONE_DISPLACES_HU), lut), z0, z1, oz, sz,
                                       float(lut[0]))
        r0, r1 = self.frame.rigid_subject_z(zt_bottom), self.frame.rigid_subject_z(zt_top)
        frac = ct_physics.slab_mean_hu(labels, bone.astype(np.float32), r0, r1, oz, sz, 0.0)
        bone_hu = ct_physics.slab_mean_hu(labels, np.where(bone, lut, np.float32(0.0)), r0, r1, oz, sz, 0.0)
        return soft * (np.float32(1.0) - frac) + bone_hu

    def arterial_hu(self, t: float) -> float:
        ti = None if self.t_injection is None else t - self.t_injection
        return ct_contrast.arterial_hu(self.contrast, ti)

    def _finish_scan(self, prior: bool = False) -> None:
        p = self.protocol
        assert p is not None
        d = self.current_dose()
        sz_top = float(self.subject_from_table_z(self.start_mm))
        sz_bottom = float(self.subject_from_table_z(self.end_mm))
        n = max(1, int(round((self.start_mm - self.end_mm) / self.slice_mm)))
        # image centres evenly spaced on the table; each image is the table slab of the slice thickness about it
        zt = self.start_mm - (np.arange(n) + 0.5) * (self.start_mm - self.end_mm) / n
        if self.frame.breath_hold_mm:  # the breath-hold warp's subject z of each centre (the enhancement's time)
            z_centres = np.asarray(self.subject_from_table_z(zt), dtype=float)
        else:
            z_centres = sz_top - (np.arange(n) + 0.5) * (sz_top - sz_bottom) / n
        sigma = self.expected_noise_hu()
        rng = self.rng("recon", len(self.series))
        t0 = self.scan_t_start

        def t_of(zc: float) -> float:
            # helical: the top is imaged first. Positions are subject z on both sides (only their
            # difference enters), exactly the arithmetic the recorded episodes were made with.
            return helical_time_at(zc, sz_top, t0, self.pitch, self.collimation_mm, self.rotation_s)

        half = self.slice_mm / 2.0

        def hu_image(i: int) -> np.ndarray:  # each image shows the enhancement when the table passed its centre
            lut = None if self.t_injection is None else self.hu_lut_at(t_of(z_centres[i]))
            return self.axial_hu(float(zt[i]) + half, float(zt[i]) - half, lut)
        sx, sy, _ = self.subject.spacing_mm
        images = ct_physics.reconstruct_axial_stack(hu_image, n, (float(sx), float(sy)), sigma, rng)
        t_first, t_last = t_of(z_centres[0]), t_of(z_centres[-1])
        s = Series(len(self.series) + 1, p.id, self.start_mm, self.end_mm, sz_top, sz_bottom,
                   self.table_height_mm, self.y_iso_subject(), self.kv, self.mas, self.pitch, self.slice_mm,
                   self.scan_t_start, self.t, d.ctdi_vol_mgy, d.dlp_mgycm, d.effective_msv, n,
                   round(sigma, 2), prior, self.t_injection,
                   round(self.arterial_hu(t_first), 1), round(self.arterial_hu(t_last), 1), images)
        self.series.append(s)
        self.scan_status = "idle"
        self.confirmed = False
        if prior:
            self._log("prior_series_loaded", series=s.uid)
        else:
            self._log("scan_completed", series=s.uid)
        self.message = f"Series {s.uid} reconstructed ({n} images). Open it in Review."
        self._changed("series")

    # ---- bolus tracking (consoles.ct.bolus) ----------------------------------------------------
    @property
    def monitor_image(self) -> np.ndarray | None:
        """The last monitoring (or reference) image of bolus tracking."""
        return self.bolus.image

    def set_monitor_z(self, z_mm: float) -> None:
        """Table position (mm) of the monitoring slice; a new reference image is needed after a move."""
        self.bolus.set_monitor_z(z_mm)

    def acquire_monitor_reference(self) -> None:
        self.bolus.acquire_reference()

    def set_roi(self, x_mm: float, y_mm: float) -> None:
        """ROI centre in subject mm (x patient left, y posterior) on the monitoring slice."""
        self.bolus.set_roi(x_mm, y_mm)

    def set_bolus_param(self, name: str, value: float) -> None:
        self.bolus.set_param(name, value)

    def roi_hu(self, img: np.ndarray) -> float:
        return self.bolus.roi_hu(img)

    def start_bolus_tracking(self) -> None:
        """Start the injection and the monitoring scans; the scan follows the trigger automatically."""
        self.bolus.start()

    # ---- review -----------------------------------------------------------------------
    def open_recon(self, series_index: int | None = None) -> None:
        self._require(bool(self.series), "No reconstructed series yet: scan first.")
        idx = len(self.series) - 1 if series_index is None else int(series_index)
        self._require(0 <= idx < len(self.series), "No such series.")
        self.recon_open = idx
        self.recon_index = self.series[idx].n_images // 2
        self._log("recon_opened", series=self.series[idx].uid)
        self.message = f"Reviewing series {self.series[idx].uid}. Scroll to page through the images."
        self._changed("recon")

    def scroll_recon(self, delta: int) -> None:
        if self.recon_open is None:
            return
        n = self.series[self.recon_open].n_images
        new = min(n - 1, max(0, self.recon_index + int(delta)))
        if new != self.recon_index:
            self.recon_index = new
            self._changed("recon_slice")

    def recon_image(self) -> np.ndarray | None:
        if self.recon_open is None:
            return None
        return self.series[self.recon_open].images[self.recon_index]

    # ---- time -------------------------------------------------------------------------
    def _end_of_rotation(self) -> None:
        self.scan_status = "reconstructing"
        self.scan_t_end += RECON_SECONDS
        # the scanning message ends with the rotation (issue 34: "Scanning..." stayed beside "Reconstructing 100 %")
        self.message = f"Acquisition done. Reconstructing series {len(self.series) + 1}..."
        self.schedule(self.scan_t_end, self._finish_scan, PRIORITY_RECON_DONE, "recon_done")
        self._changed("scan")

    def _after_clock(self) -> None:
        if self.scan_status != "idle":
            self._changed("scan")

    # ---- dump -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        d = self.current_dose()
        return {
            "modality": "ct",
            "task": self.task_id,
            "subject": self.subject.id,
            "seed": self.seed,
            "protocol": self.protocol.id if self.protocol else None,
            "selected_protocol": self.selected_protocol,
            "frame": {"laser_z_subject_mm": round(self.laser_z, 3), "patient_shift_mm": self.patient_shift_mm,
                      "table_height_offset_mm": self.table_height_offset_mm, "iso_height_mm": ISO_HEIGHT_MM,
                      "pad_mm": self.pad_mm, "lateral_offset_mm": self.lateral_offset_mm,
                      "breath_hold_mm": self.frame.breath_hold_mm,
                      "breath_fixed_z_mm": self.frame.breath_fixed_z_mm,
                      "breath_dome_z_mm": self.frame.breath_dome_z_mm,
                      "table_z_equals": "subject_z - laser_z_subject_mm + patient_shift_mm"
                                        " + breath_hold_mm * clip((breath_fixed_z_mm - subject_z)"
                                        " / (breath_fixed_z_mm - breath_dome_z_mm), 0, 1)",
                      "y_iso_equals": "table_height_mm - iso_height_mm + pad_mm",
                      "gantry_x_equals": "subject_x + lateral_offset_mm"},
            "scout": {"status": self.scout_status, "views": sorted(self.scouts),
                      "window_mm": list(self.scout_window) if self.scout_window else None},
            "plan": {"start_mm": self.start_mm, "end_mm": self.end_mm,
                     "length_mm": round(self.start_mm - self.end_mm, 1),
                     "table_height_mm": self.table_height_mm, "y_iso_subject_mm": round(self.y_iso_subject(), 2),
                     "confirmed": self.confirmed, "fov_mm": self.fov_mm},
            "params": {"kv": self.kv, "mas": self.mas, "pitch": self.pitch, "rotation_s": self.rotation_s,
                       "collimation_mm": self.collimation_mm, "slice_mm": self.slice_mm},
            "dose": {"ctdi_vol_mgy": d.ctdi_vol_mgy, "dlp_mgycm": d.dlp_mgycm, "effective_msv": d.effective_msv,
                     "ctdi_limit_mgy": self.ctdi_limit_mgy, "limit_exceeded": self.dose_limit_exceeded(),
                     "ctdi_limit_dw_mm": self.ctdi_limit_dw_mm,
                     "expected_noise_hu": round(self.expected_noise_hu(), 2)},
            "heart_rate_bpm": self.heart_rate_bpm,
            "contrast": {"t_injection": self.t_injection, "params": self.contrast.to_dict()},
            "bolus": self.bolus.state(),
            "prior_clip": getattr(self, "prior_clip", None),
            "scan": {"status": self.scan_status, "progress": round(self.scan_progress(), 4),
                     "remaining_s": round(max(0.0, self.scan_t_end - self.t), 3) if self.scan_status != "idle" else 0.0},
            "scout_remaining_s": round(max(0.0, self.scout_t_end - self.t), 3) if self.scout_status == "acquiring" else 0.0,
            "series": [s.to_dict() for s in self.series],
            "recon": {"open_series": self.series[self.recon_open].uid if self.recon_open is not None else None,
                      "image_index": self.recon_index},
            "events": list(self.events),
            "message": self.message,
        }
