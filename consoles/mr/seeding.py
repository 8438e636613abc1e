"""Task seeding of the MR console's initial state (a mixin of MRModel; no Qt).

- The card's queue may be shuffled and its row names drawn per episode; judgement tasks draw their hidden truth
  (ECG signal, scanner busy, prior series clipped, clinical indication, localizer order) balanced over the seeds
  of a subject (balanced_choice).
- Planning tasks' seeded starts: a row flagged `plan_error` has its geometry tilted (plan_tilt_deg) and shifted
  (plan_shift_mm) in seeded directions (a pending plan to correct, or an acquired plane with its error); a row
  fitted to organs (`cover_labels`, acquired or pending) may get a `coverage_fault` (too few or too thin
  slices, an F/H FOV too short), or be clipped (`prior_clipped`, from the card or drawn). What was seeded is
  in the dump's start["seeded"] for the oracles; never shown.
- Patient: positioned with the exam's landmark at the isocentre (protocols.LANDMARK_Z_MM plus a seeded shift
  and a seeded offset off the midline); mapping faults' amounts drawn per episode.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from consoles.common.balance import balanced_choice, cohort_balanced_choice, subject_index
from consoles.common.model_base import PerturbationDraws
from consoles.mr import mapping
from consoles.mr.param_card import PARAM
from consoles.mr.protocols import PROTOCOLS
from consoles.mr.queue import PRIORITY_ROW_DONE, STATUSES, QueueRow
from consoles.mr.row_params import RowParams
from rendering.geometry import PlanePose
from rendering.subjects.labels import ORGANS

__all__ = ["TaskSeeding", "CLIP_MARGIN_MM", "FAULT_SLAB_SHARE"]

CLIP_MARGIN_MM = 15.0  # a prior series fitted to organs (cover_labels) leaves this much around them
DEFAULT_CLIP_MM = (18.0, 30.0)
FAULT_SLAB_SHARE = 0.6  # a seeded slab fault leaves a slab of this share of the organs' A/P extent
# per-subject anatomy caches, keyed by SubjectRuntime.cache_key (id, generator version, bundle folder)
_LABEL_BOXES: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}  # (subject, prefixes) -> box
# mapping faults (MRModel._apply_mapping_fault): a shim box 12 cm off the slice centre along read, 9 x 9 x 6 cm
# (it misses most of the heart); a 450 ms window ending 200 ms into the next beat (systole); a slice moved
# 30 % of the LV's length towards the base (into the basal third, partial volume with the atrium). Cards may
# draw the shim offset (perturbations.shim_fault_offset_mm, in a seeded in-plane direction) and the basal
# share (basal_fault_share) per episode instead (MRModel._draw_fault_amounts).
SHIM_FAULT_OFFSET_MM = (120.0, 0.0, 0.0)
SHIM_FAULT_SIZE_MM = (90.0, 90.0, 60.0)
HEART_SHIM_MARGIN_MM = 10.0  # a staged cardiac row's adjust volume (heart_shim): the heart plus 1 cm on every face
_HEART_POINTS: dict[Any, np.ndarray] = {}  # subject -> heart voxel centres (subject mm)
RR_FAULT_WINDOW_MS = 450.0
RR_FAULT_OVERRUN_MS = 200.0
BASAL_FAULT_SHARE = 0.3
STOP_FAULT_FRACTION = (0.3, 0.7)


def _valve_voxels(lab: np.ndarray, la_ids: Sequence[int], lv_ids: Sequence[int]) -> tuple[np.ndarray, ...]:
    """(k, j, i) indices, in C order, of the LV blood voxels within a 2-voxel dilation of the left atrium.
    The dilation runs on the atrium's bounding box grown by its reach (bit for bit what a whole-volume
    dilation gives there, and nothing exists outside it), a few % of the volume."""
    from scipy import ndimage

    la = np.isin(lab, la_ids)
    reach = 2  # iterations of the cross-shaped dilation
    where = np.nonzero(la)
    if where[0].size == 0:
        return where
    lo = [max(0, int(w.min()) - reach) for w in where]
    hi = [min(n, int(w.max()) + reach + 1) for w, n in zip(where, lab.shape)]
    box = tuple(slice(a, b) for a, b in zip(lo, hi))
    valve = ndimage.binary_dilation(la[box], iterations=reach) & np.isin(lab[box], lv_ids)
    return tuple(idx + off for idx, off in zip(np.nonzero(valve), lo))


class TaskSeeding:
    """The episode's draws applied to the card's initial state: rows from their specs, fitted and spoiled."""

    def _balanced(self, key: str, options: Sequence[Any]) -> Any:
        # issue 21: keys the card names in perturbations.cohort_balanced are balanced over the cohort too
        if key in (self.draws.perturbations.get("cohort_balanced") or ()):
            return cohort_balanced_choice(self.task_id, self.subject.id, self.seed, key, list(options))
        return balanced_choice(self.task_id, self.subject.id, self.seed, key, list(options))

    def _optional_rows_present(self, specs: Sequence[Mapping[str, Any]]) -> list[bool]:
        """Which of the card's queue rows this episode has: every row, except that each `optional` one (an
        earlier acquisition) is present with probability 1/2, drawn from the episode's own "optional_rows"
        stream (one draw per optional row, so no other draw moves). The rows after it then sit at other list
        places, so a fixed click on a list place misses the row a remedy acts on (issue 21).

        The public dev subject's seed 0 (the episode whose start screen and success media are published, and
        whose script a tuned agent could learn) lists every optional row: its remedy then acts on the last of
        the possible places, and a replayed click there lands on a pending row wherever fewer earlier
        acquisitions are listed. Were dev's queue shorter, the click would land on a done row elsewhere, a
        row no remedy can change, and the script would degrade to a plain Go that passes every episode
        whose answer is "start" (as cohort_balanced_choice gives dev seed 0 the card's first option)."""
        rng = self.rng("optional_rows")
        draws = [bool(rng.random() < 0.5) for spec in specs if spec.get("optional")]  # drawn on dev too
        if subject_index(self.subject.id) == 0 and self.seed == 0:
            draws = [True] * len(draws)
        it = iter(draws)
        present = [not spec.get("optional") or next(it) for spec in specs]
        absent = [k + 1 for k, p in enumerate(present) if not p]
        if any(spec.get("optional") for spec in specs):
            self.seeded["absent_optional_rows"] = absent  # card queue indices (1-based), for the dump's start
        return present

    def _card_row(self, index: int) -> QueueRow:
        """The row the card's queue lists at 1-based `index` (wherever a seeded shuffle put it)."""
        self._require(1 <= index <= len(self._spec_uid), f"There is no row {index} in the card's queue.")
        uid = self._spec_uid[index - 1]
        self._require(uid is not None, f"Row {index} of the card's queue is an optional row absent here.")
        return self.row(uid)

    # ---- patient positioning and fault amounts --------------------------------------------------
    def _isocentre(self, z_mm: float) -> tuple[float, float, float]:
        """The landmark at the isocentre: midline (x = 0), AP middle of the body at that level."""
        z = self.subject.world_z()
        k = int(np.argmin(np.abs(z - z_mm)))
        rows = np.nonzero((self.subject.labels[k] != 0).any(axis=1))[0]
        y = self.subject.world_y()
        yc = float((y[rows[0]] + y[rows[-1]]) / 2.0) if rows.size else 0.0
        return (0.0, round(yc, 1), round(float(z_mm), 1))

    def _draw_fault_amounts(self, draws: PerturbationDraws) -> tuple[tuple[float, float, float], float]:
        """How far a seeded mapping fault is off (issue 21: a fix that moves with the episode): the shim box's
        offset from the slice centre, shim_fault_offset_mm [lo, hi] in a seeded in-plane direction, and the basal
        slice's shift as a share of the LV's length, basal_fault_share [lo, hi]; the fixed amounts without the
        keys. Drawn from the episode's own "mapping_fault_amount" stream, so no other draw moves."""
        rng = self.rng("mapping_fault_amount")
        r = float(rng.uniform(*(draws.perturbations["shim_fault_offset_mm"] if draws.has("shim_fault_offset_mm")
                                else (SHIM_FAULT_OFFSET_MM[0],) * 2)))
        theta = float(rng.uniform(0.0, 2.0 * math.pi)) if draws.has("shim_fault_offset_mm") else 0.0
        share = float(rng.uniform(*(draws.perturbations["basal_fault_share"] if draws.has("basal_fault_share")
                                    else (BASAL_FAULT_SHARE,) * 2)))
        offset = (round(r * math.cos(theta), 1) + 0.0, round(r * math.sin(theta), 1) + 0.0, 0.0)
        return offset, round(share, 3)

    def _isocentre_offset(self, draws: PerturbationDraws) -> tuple[float, float, float]:
        """Where the isocentre lies off the body's midline and A/P middle (subject mm, x left, y posterior;
        z is the landmark shift): the patient lies a little to one side of the table's centre line and higher
        or lower in the bore (body size, pads), so the anatomy lands at other scanner coordinates and other
        localizer pixels. Card keys isocentre_lr_mm / isocentre_ap_mm ([lo, hi], uniform); drawn from the
        episode's "patient_position" stream, so cards without them keep every other draw."""
        rng = self.rng("patient_position")
        out = [0.0, 0.0, 0.0]
        for k, key in ((0, "isocentre_lr_mm"), (1, "isocentre_ap_mm")):
            lo, hi = draws.perturbations[key] if draws.has(key) else (0.0, 0.0)
            value = float(rng.uniform(lo, hi))  # always drawn: adding one key never moves the other
            out[k] = round(value, 1) + 0.0
        return out[0], out[1], out[2]

    # ---- initial state --------------------------------------------------------------------------
    def _row_from_spec(self, spec: dict[str, Any], draws: PerturbationDraws | None = None) -> QueueRow:
        """A row of the card's initial queue: {"protocol", "name"?, "status"?, "params"?, "remaining_s"?,
        "cover_labels"?, "lr_on_isocentre"?, "ap_on_isocentre"?}.

        "done" rows were acquired before the session (their series exist, prior); a "running" row has
        `remaining_s` left at t = 0 (perturbation "running_remaining_s" draws it), or is done already when
        the perturbation "scanner_busy" drew False. `cover_labels` fits a done row's slice group around
        those organs (label-name prefixes); with "prior_clipped" drawn True one organ end is left outside
        the FOV by "prior_clip_mm"."""
        row = self._new_row(str(spec["protocol"]), spec.get("name"))
        for name, value in (spec.get("params") or {}).items():
            self._apply_param(row, name, value)
        status = str(spec.get("status", "pending"))
        if spec.get("coverage_fault") and draws is not None:
            self._seed_slab_variant(row, draws)
        if spec.get("cover_labels"):
            self._fit_to_labels(row, list(spec["cover_labels"]), draws, clip=status == "done",
                                lr_on_isocentre=bool(spec.get("lr_on_isocentre")),
                                ap_on_isocentre=bool(spec.get("ap_on_isocentre")))
        if spec.get("coverage_fault") and self.coverage_fault is not None:
            self._apply_coverage_fault(row, list(spec["cover_labels"]))
        if spec.get("plan_error"):
            self._seed_plan_error(row, draws)
        if spec.get("mid_sax"):
            self._plan_mid_sax(row)
        if spec.get("heart_shim"):
            self._fit_shim_to_heart(row)
        if self.copied_params and mapping.is_mapping(row.proto):  # issue 21: over the staged plan's timing
            for name, value in self.copied_params.items():
                if name != "scheme" or row.params.scheme is not None:  # a T2 map has no MOLLI scheme
                    self._apply_param(row, name, value)
        if spec.get("mapping_fault") and self.mapping_fault is not None:
            self._apply_mapping_fault(row)
        self._require(status in STATUSES, f"unknown row status {status!r}")
        remaining = float(spec.get("remaining_s", self.duration_s(row)))
        if status == "running" and draws is not None and draws.has("running_remaining_s"):
            remaining = round(draws.uniform("running_remaining_s", (remaining, remaining)), 1)  # drawn busy or not
        if status == "running" and not self.scanner_busy:
            status = "done"
        if status == "done":
            dur = self.duration_s(row)
            row.t_start, row.t_end = -dur, 0.0
            self._finish(row.uid, prior=True)
        elif status == "running":
            dur = max(self.duration_s(row), remaining)
            self._start(row, t_end=remaining, t_start=remaining - dur)
            if spec.get("stop_fault"):
                frac = draws.uniform("stop_fault_fraction", STOP_FAULT_FRACTION) if draws is not None \
                    else STOP_FAULT_FRACTION[0]
                t_fault = round(max(1.0, frac * remaining), 1)
                self.schedule(t_fault, lambda uid=row.uid: self._fault_stop(uid), PRIORITY_ROW_DONE - 1, "row_fault")
                self.seeded.update({"stop_fault_row": row.uid, "stop_fault_t": t_fault})
        else:
            row.status = status
        return row

    def _label_box(self, prefixes: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) subject mm corners of the voxels whose label name starts with any prefix (the
        simulator's own anatomy, as the CT console fits its prior exam); memoised per subject."""
        key = (self.subject.cache_key, tuple(prefixes))
        if key[0] is None:
            return self._label_box_uncached(prefixes)
        if key not in _LABEL_BOXES:
            _LABEL_BOXES[key] = self._label_box_uncached(prefixes)
        lo, hi = _LABEL_BOXES[key]
        return lo.copy(), hi.copy()

    def _label_box_uncached(self, prefixes: list[str]) -> tuple[np.ndarray, np.ndarray]:
        ids = [k for k, n in self.subject.label_names.items() if any(n.startswith(p) for p in prefixes)]
        self._require(bool(ids), f"no labels named {prefixes}")
        k, j, i = np.nonzero(np.isin(self.subject.labels, ids))
        lo = np.array([self.subject.world_x()[i.min()], self.subject.world_y()[j.min()], self.subject.world_z()[k.min()]])
        hi = np.array([self.subject.world_x()[i.max()], self.subject.world_y()[j.max()], self.subject.world_z()[k.max()]])
        return lo, hi

    def _fit_to_labels(self, row: QueueRow, prefixes: list[str], draws: PerturbationDraws | None,
                       clip: bool = True, lr_on_isocentre: bool = False, ap_on_isocentre: bool = False) -> None:
        """Centre a coronal row on the organs and size its slab over their AP extent; clipped (an acquired
        row, `clip`, with prior_clipped): move the FOV along F/H so the highest top (or lowest bottom) of the
        organs lies `clip` mm outside it. `lr_on_isocentre` (card key of a row spec) leaves the row's L/R
        centre on the isocentre, as a slab placed in F/H and A/P only is: its wide default FOV still holds
        the organs, but where they lie sideways follows the patient's position on the table.
        `ap_on_isocentre` likewise leaves the slab's A/P centre at the isocentre (the table-height landmark,
        the protocol's default): where the kidneys lie in depth in it follows the patient's height in the bore
        and habitus (issue 21: a plan replayed from another patient's drags or typed positions misses them in
        A/P). An acquired row (`clip`) was given the slices to hold the organs from there, with the margin on
        each side, so only its clipped pole is missing; a pending row keeps the site's slice count for the
        organs' depth plus the margins (its coverage is what the task corrects)."""
        lo, hi = self._label_box(prefixes)
        c = (lo + hi) / 2.0
        if lr_on_isocentre:
            c[0] = self.isocentre_mm[0]
        p = row.params
        step = p.thickness_mm + p.gap_mm
        depth = float(hi[1] - lo[1])
        if ap_on_isocentre:
            c[1] = self.isocentre_mm[1]
            if clip:
                depth = 2.0 * max(float(hi[1]) - c[1], c[1] - float(lo[1]))
        p.n_slices = int(math.ceil((depth + 2 * self.slab_margin_mm) / step))
        half_fov = p.fov_phase_mm / 2.0
        clip_mm = draws.uniform("prior_clip_mm", DEFAULT_CLIP_MM) if draws is not None else DEFAULT_CLIP_MM[0]
        if self.prior_clipped and clip:  # the clip is drawn either way, so later draws do not depend on it
            if self.rng("prior_clip_end").random() < 0.5:
                c[2] = hi[2] - clip_mm - half_fov  # the FOV's top edge cuts the upper pole
                self.seeded["prior_clip_end"] = "upper"
            else:
                c[2] = lo[2] + clip_mm + half_fov
                self.seeded["prior_clip_end"] = "lower"
            self.seeded["prior_clip_mm"] = round(clip_mm, 1)
        p.centre_mm = (round(float(c[0]), 1), round(float(c[1]), 1), round(float(c[2]), 1))

    def _seed_slab_variant(self, row: QueueRow, draws: PerturbationDraws) -> None:
        """The site's variant of a coverage_fault row's slab (issue 21: the right number to type follows it):
        slice thickness slab_thickness_mm [lo, hi] (0.5 mm steps) and gap slab_gap_share [lo, hi] of it (0.1 mm);
        the fitted slice count follows from them and from the margin the site's slab leaves on each side of the
        organs, slab_margin_mm [lo, hi] (CLIP_MARGIN_MM without it). Drawn from the episode's own "slab_variant"
        stream (appended draws last), so no other draw moves; without the keys the protocol's slab stays."""
        rng = self.rng("slab_variant")
        t = float(rng.uniform(*draws.perturbations.get("slab_thickness_mm", (0.0, 0.0))))
        g = float(rng.uniform(*draws.perturbations.get("slab_gap_share", (0.0, 0.0))))
        share = float(rng.uniform(*draws.perturbations.get("fault_slab_share", (0.0, 0.0))))
        margin = float(rng.uniform(*draws.perturbations.get("slab_margin_mm", (0.0, 0.0))))
        if draws.has("fault_slab_share"):
            self.fault_slab_share = round(share, 3)
        if draws.has("slab_margin_mm"):
            self.slab_margin_mm = round(margin, 1)
        if draws.has("slab_thickness_mm"):
            row.params.thickness_mm = round(2.0 * t) / 2.0
            row.params.gap_mm = round(g * row.params.thickness_mm, 1) + 0.0 if draws.has("slab_gap_share") else 0.0

    def _apply_coverage_fault(self, row: QueueRow, prefixes: list[str]) -> None:
        """Spoil one numeric parameter of a row fitted to organs (self.coverage_fault), so its slab or FOV
        clips them: too few slices or too thin slices for a slab of FAULT_SLAB_SHARE (or the card's drawn
        fault_slab_share) of the organs' A/P extent, or an F/H FOV 60 mm short of the organs."""
        p = row.params
        name = self.coverage_fault
        before = getattr(p, name)
        lo, hi = self._label_box(prefixes)
        slab = self.fault_slab_share * float(hi[1] - lo[1])
        if name == "n_slices":
            p.n_slices = max(2, int(math.floor((slab + p.gap_mm) / (p.thickness_mm + p.gap_mm))))
        elif name == "thickness_mm":
            t = (slab - (p.n_slices - 1) * p.gap_mm) / p.n_slices
            p.thickness_mm = max(PARAM["thickness_mm"].lo, math.floor(2.0 * t) / 2.0)
        else:  # fov_phase_mm: the phase direction of a coronal group is F/H
            p.fov_phase_mm = float(max(PARAM["fov_phase_mm"].lo, 10.0 * math.floor((hi[2] - lo[2] - 60.0) / 10.0)))
        self.seeded.update({"coverage_fault": name, "coverage_fault_row": row.uid,
                            "coverage_fault_from": before, "coverage_fault_to": getattr(p, name),
                            "coverage_fault_slab_share": self.fault_slab_share})

    def _seed_plan_error(self, row: QueueRow, draws: PerturbationDraws) -> None:
        """Tilt a row's normal by the drawn plan_tilt_deg about a seeded in-plane axis and shift its centre by
        plan_shift_mm in a seeded direction (a pending row's geometry off, or an acquired plane's error)."""
        tilt = draws.uniform("plan_tilt_deg", (0.0, 0.0))
        shift = draws.uniform("plan_shift_mm", (0.0, 0.0))
        rng = self.rng("plan_error", row.uid)
        pose = row.params.pose()
        phi = float(rng.uniform(0.0, 2.0 * math.pi))
        axis = math.cos(phi) * pose.u + math.sin(phi) * pose.v
        d = rng.normal(size=3)
        d = d / float(np.linalg.norm(d))
        row.params.set_pose(pose.rotated(axis, tilt).translated(shift * d))
        self.seeded.setdefault("plan_errors", {})[str(row.uid)] = {"tilt_deg": round(tilt, 2),
                                                                   "shift_mm": round(shift, 2)}

    def _draw_library_plans(self, draws: PerturbationDraws) -> None:
        """The saved geometry of each mapping protocol of the library: its default short-axis orientation at the
        isocentre tilted by plan_tilt_deg about a seeded in-plane axis and shifted by plan_shift_mm in a seeded
        direction (the last patient's plan, whose long axis is 15-25 deg off this one's). Every mapping row
        added starts from it; the start record's seeded["library_plans"] holds each pose for the oracles."""
        for proto in PROTOCOLS:
            if not mapping.is_mapping(proto):
                continue
            tilt = draws.uniform("plan_tilt_deg", (0.0, 0.0))
            shift = draws.uniform("plan_shift_mm", (0.0, 0.0))
            rng = self.rng("library_plan", proto.id)
            pose = RowParams.from_protocol(proto, self.isocentre_mm, self.field_t).pose()
            phi = float(rng.uniform(0.0, 2.0 * math.pi))
            axis = math.cos(phi) * pose.u + math.sin(phi) * pose.v
            d = rng.normal(size=3)
            pose = pose.rotated(axis, tilt).translated(shift * d / float(np.linalg.norm(d)))
            self.library_plans[proto.id] = {"pose": pose, "tilt_deg": round(tilt, 2), "shift_mm": round(shift, 2)}
            params = RowParams.from_protocol(proto, self.isocentre_mm, self.field_t)
            params.set_pose(pose)  # as the row will hold it (its fields' convention)
            self.seeded.setdefault("library_plans", {})[proto.id] = {
                "normal": [round(float(x), 6) for x in params.normal()], "centre_mm": list(params.centre_mm),
                "tilt_deg": round(tilt, 2), "shift_mm": round(shift, 2)}

    def _lv_axis(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(unit axis base -> apex, the base point, extent lo, hi along it) of the left ventricle from its
        labels: the base where the LV blood pool meets the left atrium (the mitral valve), the apex the LV
        voxel farthest from it; memoised per subject."""
        key = (self.subject.cache_key, ("__lv_axis__",))
        if key not in _LABEL_BOXES or key[0] is None:
            names = self.subject.label_names

            def points(wanted: tuple[str, ...]) -> np.ndarray:
                ids = [k for k, n in names.items() if n in wanted]
                self._require(bool(ids), f"this subject has no {' / '.join(wanted)} labels")
                k, j, i = np.nonzero(np.isin(self.subject.labels, ids))
                return np.stack([self.subject.world_x()[i], self.subject.world_y()[j], self.subject.world_z()[k]],
                                axis=1)

            lv = points(("lv_myocardium", "lv_blood"))
            k, j, i = _valve_voxels(self.subject.labels, [k for k, n in names.items() if n == "la_blood"],
                                    [k for k, n in names.items() if n == "lv_blood"])  # LV blood touching the atrium
            self._require(bool(k.size), "this subject's LV blood pool does not meet the left atrium")
            base = np.array([self.subject.world_x()[i].mean(), self.subject.world_y()[j].mean(),
                             self.subject.world_z()[k].mean()])
            apex = lv[int(np.argmax(np.linalg.norm(lv - base, axis=1)))]
            axis = (apex - base) / np.linalg.norm(apex - base)
            _LABEL_BOXES[key] = (np.concatenate([axis, base]), np.array([0.0, float(np.linalg.norm(apex - base))]))
        ac, ext = _LABEL_BOXES[key]
        return ac[:3].copy(), ac[3:].copy(), float(ext[0]), float(ext[1])

    def _plan_mid_sax(self, row: QueueRow) -> None:
        """Plan a mapping row on the LV's short axis at mid-ventricle (from the labels, as the console's own
        fits are: a staged plan that an agent may still refine)."""
        axis, c, lo, hi = self._lv_axis()
        centre = c + axis * (lo + hi) / 2.0
        row.params.set_pose(PlanePose.from_normal(centre, axis, 0.0))
        # a row set up for this patient is timed for the heart rate too (issue 21: over 50-100 bpm no one
        # delay fits every rate, so the protocol's default would leave fast hearts' staged maps blurred)
        row.params.trigger_delay_ms, row.params.acq_window_ms = mapping.recommended_timing(
            row.params, row.proto, self.heart_rate_bpm)

    def _fit_shim_to_heart(self, row: QueueRow) -> None:
        """Fit a row's adjust volume around the heart on the group's axes with HEART_SHIM_MARGIN_MM on every face
        (a cardiac protocol set up for this patient shims over the heart, not over the slab); the heart's voxels
        are read once per subject."""
        key = self.subject.cache_key
        heart = _HEART_POINTS.get(key) if key is not None else None
        if heart is None:
            ids = [k for k, n in self.subject.label_names.items() if n in ORGANS["heart"]]
            self._require(bool(ids), "this subject has no heart labels")
            k, j, i = np.nonzero(np.isin(self.subject.labels, ids))
            heart = np.stack([self.subject.world_x()[i], self.subject.world_y()[j], self.subject.world_z()[k]], axis=1)
            if key is not None:
                _HEART_POINTS[key] = heart
        pose = row.params.pose()
        axes = np.stack([pose.u, pose.v, pose.normal])
        pts = heart @ axes.T
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        row.params.shim_centre_mm = tuple(round(float(x), 3) + 0.0 for x in ((lo + hi) / 2.0) @ axes)
        row.params.shim_size_mm = tuple(round(float(x), 1) for x in hi - lo + 2.0 * HEART_SHIM_MARGIN_MM)

    def _apply_mapping_fault(self, row: QueueRow, record: bool = True) -> None:
        """Spoil a mapping row with self.mapping_fault: its shim box moved off the heart, a trigger delay plus
        window overrunning the RR interval, its slice moved towards the base, or its trigger off. `record`
        lists the row in the start record's seeded faults (rows of the initial queue; rows added from a
        faulty library later are not part of the start)."""
        name = self.mapping_fault
        p = row.params
        if name == "shim_off_heart":
            mapping.offset_shim(p, self.shim_fault_offset_mm, SHIM_FAULT_SIZE_MM)
        elif name == "window_exceeds_rr":
            rr = 60000.0 / self.heart_rate_bpm
            p.acq_window_ms = RR_FAULT_WINDOW_MS
            p.trigger_delay_ms = float(10.0 * round((rr - RR_FAULT_WINDOW_MS + RR_FAULT_OVERRUN_MS) / 10.0))
        elif name == "basal_slice":
            axis, c, lo, hi = self._lv_axis()
            pose = p.pose()
            p.set_pose(pose.translated(-self.basal_fault_share * (hi - lo) * axis))
        elif name == "untriggered":
            p.trigger = "none"
        if record:
            self.seeded["mapping_fault"] = name
            self.seeded.setdefault("mapping_fault_rows", []).append(row.uid)
            if name == "shim_off_heart":
                self.seeded["shim_fault_offset_mm"] = list(self.shim_fault_offset_mm)
            elif name == "basal_slice":
                self.seeded["basal_fault_share"] = self.basal_fault_share
