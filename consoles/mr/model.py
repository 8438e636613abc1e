"""MR console model: exam queue, series, parameter card and viewer layout; serializable, no Qt.

- Exam queue: rows (one sequence each) with a stable `uid`, a name, a protocol, a status (pending,
  running, done, stopped, skipped) and RowParams. Go starts the open row when it can run (pending or
  stopped), otherwise the first pending row; rows run one at a time in simulated time (a scheduler
  event at t_start + duration finishes the row and forms its series). After a row the scanner pauses:
  the user presses Go again, as on a clinical console with auto-continue off.
- Go is refused, with the reason in words, when something blocks it (go_blocker): the scanner is
  busy, nothing is pending, the protocol is a placeholder, no localizer has been acquired for a row
  planned on one, a trigger without its physiological signal, a parameter conflict.
- Series: every finished row's images (rendering.mr_image), kept in memory; the dump holds their
  geometry, never pixels.
- Parameter card: declared Parameters (PARAMETERS, grouped by CARD) and choices (CHOICES) of the open
  row, clamped and enabled by Rules; the scan time and conflicts follow from them (row_params).
- Graphical planning (consoles.mr.planning): the open row's slice group translated in a displayed
  image's plane, turned about its normal (double oblique from oblique images), FOV / stack / shim box
  sizes from resize grips, the shim box moved; every change through set_pose / set_param /
  set_shim_size / set_shim_centre, so it is logged and refused like a typed field.
- Viewer: a LayoutState (1/2/4 viewports, active one, window/level, a graphics mode per viewport) plus
  which image of the series each viewport shows (with its corner caption), and whether the shim box is drawn.
- Series list: one thumbnail per series, one per image for localizers (SeriesEntry); with labels hidden
  (tasks that ask the agent to recognise views) localizer images are listed unnamed in a seeded order.
- Tasks: the card's queue may be shuffled and its row names drawn per episode; judgement tasks draw their
  hidden truth (ECG signal, scanner busy, prior series clipped, clinical indication, localizer order)
  balanced over the seeds of a subject (balanced_choice). The dump's "start" records the queue and viewer
  as the session began, so oracles can tell what the agent changed.
- Planning tasks' seeded starts: a row flagged `plan_error` has its geometry tilted (plan_tilt_deg) and shifted
  (plan_shift_mm) in seeded directions (a pending plan to correct, or an acquired plane with its error); a row
  fitted to organs (`cover_labels`, acquired or pending) may get a `coverage_fault` (too few or too thin
  slices, an F/H FOV too short), or be clipped (`prior_clipped`, from the card or drawn). What was seeded is
  in the dump's start["seeded"] for the oracles; never shown.
- Patient: positioned with the exam's landmark at the isocentre (protocols.LANDMARK_Z_MM plus a
  seeded shift); heart rate seeded per episode, shown while the ECG signal is present.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

# the balanced draws live in consoles/common/balance.py (shared with the US console); imported here under
# the names this module has always exported
from consoles.common.balance import balanced_choice, cohort_balanced_choice, subject_index  # noqa: F401
from consoles.common.layout_state import LayoutState, ViewportContent
from consoles.common.model_base import ConsoleActionError, ConsoleModelBase, PerturbationDraws, Rule, ScheduledEvent
from consoles.common.params import Parameter
from consoles.mr import mapping, planning
from consoles.mr.protocols import LANDMARK_Z_MM, PROTOCOLS, TRIGGERS, MRProtocol, get_protocol, library_tree
from consoles.mr.row_params import SHIM_MODES, RowParams, conflicts, rr_ms, scan_time_s, temporal_resolution_ms
from rendering.geometry import PlanePose, orientation_text
from rendering.mr_image import MRImage, MRSeries, acquire_localizer, acquire_series
from rendering.subjects.labels import ORGANS

__all__ = ["MRModel", "ConsoleActionError", "QueueRow", "Series", "SeriesEntry", "PARAMETERS", "CHOICES", "CARD",
           "STATUSES", "LOCALIZER_SHORT"]

STATUSES = ("pending", "running", "done", "stopped", "skipped")
DEFAULT_QUEUE = ("localizer_3plane", "cine_2ch", "cine_4ch", "cine_sax")
MAX_NAME_CHARS = 40
PRIORITY_ROW_DONE = 0
DEFAULT_HEART_RATE_BPM = (60.0, 80.0)
LOCALIZER_SHORT = {"sagittal": "sag", "coronal": "cor", "transverse": "tra"}
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
STOP_FAULT_REASON = "RF amplifier fault"
SHIM_GRIP_OFFSET_PX = 20.0  # the shim box's move grip, up-left of its centre (off the group's centre grip)


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


# ---- queue rows and series ---------------------------------------------------------------------------
@dataclass
class QueueRow:
    """One sequence of the exam queue."""

    uid: int
    name: str
    protocol: str
    params: RowParams
    status: str = "pending"
    copy_of: int | None = None  # uid of the row this one repeats
    series: int | None = None  # uid of the series it acquired
    t_start: float | None = None
    t_end: float | None = None

    @property
    def proto(self) -> MRProtocol:
        return get_protocol(self.protocol)


@dataclass
class Series:
    """An acquired series: geometry and parameters for the dump, images kept in memory."""

    uid: int
    name: str
    row: int
    protocol: str
    t_start: float
    t_end: float
    params: dict[str, Any]
    data: MRSeries = field(repr=False)
    localizer: bool = False
    prior: bool = False  # acquired before this session started (initial state)

    @property
    def n_images(self) -> int:
        return len(self.data)

    def image_dict(self, k: int) -> dict[str, Any]:
        im = self.data[k]
        pose = im.pose
        return {"index": k + 1, "name": im.name, "orientation": orientation_text(pose.normal),
                "centre_mm": _r(pose.centre), "u": _r(pose.u, 6), "v": _r(pose.v, 6), "normal": _r(pose.normal, 6),
                "shape": list(im.pixels.shape), "pixel_mm": _r(im.pixel_mm, 4), "thickness_mm": im.thickness_mm}

    def to_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "name": self.name, "row": self.row, "protocol": self.protocol,
                "localizer": self.localizer, "prior": self.prior, "n_images": self.n_images,
                "t_start": round(float(self.t_start), 3), "t_end": round(float(self.t_end), 3),
                "noise_sigma": round(float(self.data.noise_sigma), 6), "params": self.params,
                "images": [self.image_dict(k) for k in range(self.n_images)],
                "mapping": self.data.record if mapping.is_map_series(self) else None}


@dataclass(frozen=True)
class SeriesEntry:
    """One thumbnail of the series list: a whole series, or one image of a localizer series.

    `key` is "<series uid>" or "<series uid>.<k>" (k 1-based); `image` is 0-based (None: whole series)."""

    key: str
    series: int
    image: int | None
    title: str
    count_text: str


def _r(a: Any, d: int = 3) -> list[float]:
    return [round(float(x), d) + 0.0 for x in np.asarray(a, float).ravel()]


# ---- rules -------------------------------------------------------------------------------------------
ROW_OPEN = Rule((lambda m: m.open_row is not None, "Open a row of the queue first."))
ROW_EDITABLE = ROW_OPEN & Rule(
    (lambda m: m.open_row.status != "running", "This row is running: stop it to change its parameters."),
    (lambda m: m.open_row.status != "done", "This row has been acquired: repeat it to change its parameters."),
    (lambda m: m.open_row.proto.acquirable, "This protocol is a placeholder: it cannot be acquired yet."),
)
NOT_LOCALIZER = Rule((lambda m: not m.open_row.proto.is_localizer,
                      "The localizer's three planes are fixed through the isocentre."))
HAS_INVERSION = Rule((lambda m: m.open_row.params.ti_ms is not None, "This sequence has no inversion pulse."))
TRIGGERABLE = Rule((lambda m: m.open_row.proto.triggerable, "This sequence is not triggered."))
TRIGGERED = Rule((lambda m: m.open_row.params.trigger != "none", "Set the trigger to ECG or pulse first."))
READ_ONLY = Rule((lambda m: False, "The heart rate is measured from the ECG."))
IS_MOLLI = Rule((lambda m: m.open_row.params.scheme in mapping.mm.MOLLI_SCHEMES,
                 "Only a MOLLI T1 map has an inversion scheme."))

GEOMETRY = ROW_EDITABLE & NOT_LOCALIZER
PHYSIO = ROW_EDITABLE & TRIGGERABLE & TRIGGERED

# name -> (RowParams attribute, index into it for tuples or None)
_ATTR: dict[str, tuple[str, int | None]] = {
    "pos_lr_mm": ("centre_mm", 0), "pos_ap_mm": ("centre_mm", 1), "pos_fh_mm": ("centre_mm", 2),
}
# The Position fields are in the scanner frame, as real consoles show them: mm of the slice group's centre
# from the isocentre, + = left, posterior, head (the subject frame's axes, so only the origin differs). A typed
# position therefore lands on other anatomy when the patient lies elsewhere (seeded landmark and isocentre
# offsets), as on a scanner; RowParams.centre_mm stays in subject mm. Card params name them the same way.
_SCANNER_FRAME = ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")
_INT_PARAMS = ("n_slices", "matrix", "averages")


def _p(name: str, label: str, unit: str, lo: float, hi: float, decimals: int, step: float, rule: Rule) -> Parameter:
    return Parameter(name, label, unit, lo, hi, decimals, step, rule, get=lambda m, n=name: m.open_value(n),
                     set=lambda m, v, n=name: m.set_param(n, v))


PARAMETERS: tuple[Parameter, ...] = (
    # Routine
    _p("n_slices", "Slices", "", 1, 64, 0, 1, ROW_EDITABLE & NOT_LOCALIZER),
    _p("thickness_mm", "Slice thickness", "mm", 1.0, 20.0, 1, 0.5, ROW_EDITABLE),
    _p("gap_mm", "Gap", "mm", 0.0, 30.0, 1, 0.5, ROW_EDITABLE & NOT_LOCALIZER),
    _p("fov_read_mm", "FOV read", "mm", 100, 500, 0, 10, ROW_EDITABLE),
    _p("fov_phase_mm", "FOV phase", "mm", 50, 500, 0, 10, ROW_EDITABLE),
    _p("matrix", "Matrix", "", 64, 512, 0, 16, ROW_EDITABLE),
    _p("averages", "Averages", "", 1, 8, 0, 1, ROW_EDITABLE),
    # Contrast
    _p("tr_ms", "TR", "ms", 2.0, 10000.0, 1, 0.1, ROW_EDITABLE),
    _p("te_ms", "TE", "ms", 1.0, 300.0, 1, 0.1, ROW_EDITABLE),
    _p("ti_ms", "TI", "ms", 10, 3000, 0, 10, ROW_EDITABLE & HAS_INVERSION),
    _p("flip_deg", "Flip angle", "deg", 1, 180, 0, 5, ROW_EDITABLE),
    # Physio
    _p("trigger_delay_ms", "Trigger delay", "ms", 0, 2000, 0, 10, PHYSIO),
    _p("acq_window_ms", "Acquisition window", "ms", 20, 2000, 0, 10, PHYSIO),
    Parameter("heart_rate_bpm", "Heart rate", "bpm", 20, 250, 0, 1, READ_ONLY,
              get=lambda m: m.shown_heart_rate() or float("nan")),
    # Geometry
    _p("pos_lr_mm", "Position L/R", "mm", -500, 500, 1, 1, GEOMETRY),
    _p("pos_ap_mm", "Position A/P", "mm", -500, 500, 1, 1, GEOMETRY),
    _p("pos_fh_mm", "Position F/H", "mm", -1000, 1000, 1, 1, GEOMETRY),
    _p("tilt_a_deg", "Tilt 1", "deg", -90, 90, 1, 1, GEOMETRY),
    _p("tilt_b_deg", "Tilt 2", "deg", -90, 90, 1, 1, GEOMETRY),
    _p("inplane_deg", "In-plane rotation", "deg", -180, 180, 1, 1, GEOMETRY),
)
PARAM = {p.name: p for p in PARAMETERS}

# Settings chosen from a list: name -> (options, enable rule).
CHOICES: dict[str, tuple[tuple[str, ...], Rule]] = {
    "trigger": (TRIGGERS, ROW_EDITABLE & TRIGGERABLE),
    "main": (("T", "C", "S"), GEOMETRY),
    "shim_mode": (SHIM_MODES, ROW_EDITABLE),
    "scheme": (tuple(mapping.mm.MOLLI_SCHEMES), ROW_OPEN & IS_MOLLI & ROW_EDITABLE),
}

# The parameter card's tabs and their fields, in screen order.
CARD: dict[str, tuple[str, ...]] = {
    "Routine": ("n_slices", "thickness_mm", "gap_mm", "fov_read_mm", "fov_phase_mm", "matrix", "averages"),
    "Contrast": ("tr_ms", "te_ms", "ti_ms", "flip_deg", "scheme"),
    "Physio": ("trigger", "trigger_delay_ms", "acq_window_ms", "heart_rate_bpm"),
    "Geometry": ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm", "main", "tilt_a_deg", "tilt_b_deg", "inplane_deg",
                 "shim_mode"),
}


class MRModel(mapping.MappingTools, ConsoleModelBase):
    """The MR console's logic. Methods raise ConsoleActionError (with the reason shown) when refused.

    Rows are addressed by their stable `uid`; `row_at(index)` maps a 1-based queue position to a row.
    Viewports are 0-based here (the dump numbers them from 1, as on screen).
    """

    modality = "mr"

    def __init__(self, subject: Any, task_id: str, seed: int, initial_state: Mapping[str, Any] | None = None,
                 perturbations: Mapping[str, Any] | None = None) -> None:
        super().__init__(task_id, subject.id, seed)
        self.subject = subject
        st = dict(initial_state or {})
        # the order of these draws is part of every episode's identity: append, never reorder
        draws = PerturbationDraws.for_episode(task_id, subject.id, seed, perturbations)
        self.heart_rate_bpm = int(round(draws.uniform("heart_rate_bpm", DEFAULT_HEART_RATE_BPM)))
        self.landmark_shift_mm = draws.offset_mm("landmark_shift")
        self.draws = draws  # tasks' own draws follow these (unused_keys reports typos)
        draws.has("cohort_balanced")  # read by _balanced (no draw: the rng sequence is unchanged)
        self.field_t = float(st.get("field_t", 1.5))
        self.ecg_signal = bool(st.get("ecg_signal", True))
        self.pulse_signal = bool(st.get("pulse_signal", True))
        self.landmark = str(st.get("landmark", "heart"))
        self._require(self.landmark in LANDMARK_Z_MM, f"unknown landmark {self.landmark!r}")
        self.isocentre_mm = self._isocentre(LANDMARK_Z_MM[self.landmark] + self.landmark_shift_mm)
        # ---- issue 21: patient positioning (drawn from its own stream, so no other draw moves) ----
        self.isocentre_offset_mm = self._isocentre_offset(draws)
        self.isocentre_mm = tuple(round(a + b, 1) + 0.0 for a, b in zip(self.isocentre_mm, self.isocentre_offset_mm))
        self.rows: list[QueueRow] = []
        self.series: list[Series] = []
        self._next_row_uid = 1
        self._open_uid: int | None = None
        self._running_uid: int | None = None
        self._done_event: ScheduledEvent | None = None
        self.autoload_localizer = bool(st.get("autoload_localizer", True))
        self.labels_hidden = bool(st.get("labels_hidden", False))
        self.layout = LayoutState()
        self.viewport_image = [0] * len(self.layout.viewports)  # image index each viewport shows
        self.shim_box_visible = False
        self.selected_image: tuple[int, int | None] | None = None  # (series uid, image index) picked in the list
        self.selected_entry: str | None = None
        self._rotate_ends: dict[int, tuple[float, float, float]] = {}  # row uid -> the end its rotate grip keeps
        # Task draws (seeded; judgement tasks draw balanced over seeds), in a fixed order: append only.
        self.indication: str | None = st.get("indication")
        if draws.has("indication"):
            self.indication = str(self._balanced("indication", draws.perturbations["indication"]))
        if draws.has("ecg_signal"):
            self.ecg_signal = bool(self._balanced("ecg_signal", draws.perturbations["ecg_signal"]))
        self.scanner_busy = bool(self._balanced("scanner_busy", draws.perturbations["scanner_busy"])) \
            if draws.has("scanner_busy") else True
        self.prior_clipped = bool(self._balanced("prior_clipped", draws.perturbations["prior_clipped"])) \
            if draws.has("prior_clipped") else bool(st.get("prior_clipped", False))
        self.localizer_order: list[int] | None = None  # 0-based image indices, in list / viewport-fill order
        if draws.has("localizer_order"):
            self.localizer_order = [int(k) - 1 for k in self._balanced("localizer_order",
                                                                        draws.perturbations["localizer_order"])]
        # planning tasks: which numeric parameter a coverage_fault row gets wrong (balanced over seeds)
        self.coverage_fault: str | None = str(self._balanced("coverage_fault", draws.perturbations["coverage_fault"])) \
            if draws.has("coverage_fault") else None
        # mapping tasks: the fault seeded into mapping_fault rows (balanced over seeds, "none" among them)
        self.mapping_fault: str | None = str(self._balanced("mapping_fault", draws.perturbations["mapping_fault"])) \
            if draws.has("mapping_fault") else None
        self.shim_fault_offset_mm, self.basal_fault_share = self._draw_fault_amounts(draws)
        self.fault_slab_share = FAULT_SLAB_SHARE  # a card's drawn fault_slab_share replaces it (_seed_slab_variant)
        self.slab_margin_mm = CLIP_MARGIN_MM  # a card's drawn slab_margin_mm replaces it (_seed_slab_variant)
        # issue 21: the parameter set the initial queue's mapping rows were copied with (balanced over seeds)
        self.copied_params: dict[str, Any] | None = dict(self._balanced("copied_params",
                                                                         draws.perturbations["copied_params"])) \
            if draws.has("copied_params") else None
        # an empty-queue task's fault lives in the library: every mapping row added during the session
        # carries it (a site protocol saved with a stale shim box, timing or trigger)
        self.library_mapping_fault = bool(st.get("library_mapping_fault", False)) and self.mapping_fault is not None
        self.seeded: dict[str, Any] = {}  # seeded errors of the initial state, for the dump's "start" (oracles)
        if self.library_mapping_fault:
            self.seeded.update({"mapping_fault": self.mapping_fault, "mapping_fault_source": "library"})
        # issue 21: an empty-queue task's library carries mapping plans saved on another patient (drawn here,
        # once per protocol, so what the agent adds when does not change the draws)
        self.library_plans: dict[str, dict[str, Any]] = {}
        if st.get("library_plan_error"):
            self._draw_library_plans(draws)
        self.declare(PARAMETERS)
        specs = [dict(spec) for spec in st.get("queue", [{"protocol": pid} for pid in DEFAULT_QUEUE])]
        names_rng = self.rng("row_names")
        for spec in specs:  # names first: a row's name is part of its series' title
            if spec.get("names"):
                spec["name"] = spec["names"][int(names_rng.integers(len(spec["names"])))]
        order = list(range(len(specs)))
        if draws.has("shuffle_rows"):
            pos = [int(i) - 1 for i in draws.perturbations["shuffle_rows"]]
            self._require(all(0 <= i < len(specs) for i in pos), "shuffle_rows names a row the queue does not have")
            perm = self.rng("shuffle_rows").permutation(len(pos))
            for i, j in zip(pos, perm):
                order[i] = pos[int(j)]
        present = self._optional_rows_present(specs)
        by_spec: dict[int, int | None] = {}  # card queue index (0-based) -> row uid (None: an absent optional row)
        for k in order:
            by_spec[k] = self._row_from_spec(specs[k], draws).uid if present[k] else None
        self._spec_uid = [by_spec[k] for k in range(len(specs))]
        # series formed in queue order; uids stay in card order for rows, so layout specs can name rows
        if st.get("open") is not None:
            self._open_uid = self._card_row(int(st["open"])).uid
        self._apply_layout_spec(st.get("layout") or {})
        self.message = "Exam ready. Open a row or press Go to start the next pending one."
        self.start = self._snapshot()

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

    def _snapshot(self) -> dict[str, Any]:
        """What the session started with (the dump's "start"): oracles compare the end with it."""
        return {"queue": [{"uid": r.uid, "name": r.name, "protocol": r.protocol, "status": r.status,
                           "copy_of": r.copy_of, "params": r.params.to_dict()} for r in self.rows],
                "open_row": self._open_uid, "layout": self._layout_dict(), "indication": self.indication,
                "ecg_signal": self.ecg_signal, "scanner_busy": self.running_row is not None,
                "prior_clipped": self.prior_clipped, "seeded": dict(self.seeded), "n_events": len(self.events)}

    # ---- patient --------------------------------------------------------------------------------
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

    def shown_heart_rate(self) -> int | None:
        """The heart rate the header shows (from the ECG; None without an ECG signal)."""
        return self.heart_rate_bpm if self.ecg_signal else None

    def _signal(self, trigger: str) -> bool:
        return {"none": True, "ecg": self.ecg_signal, "pulse": self.pulse_signal}[trigger]

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

    def _fault_stop(self, uid: int) -> None:
        """A hardware fault stops the running row partway (no series); Go on the open stopped row resumes it."""
        row = self.row(uid)
        if self._running_uid != uid:
            return
        self.scheduler.cancel(self._done_event)
        self._done_event = None
        row.status, row.t_end = "stopped", self.t
        self._running_uid = None
        self._log("row_fault_stopped", row=uid, reason=STOP_FAULT_REASON)
        self.message = f"Row stopped: {STOP_FAULT_REASON} ({row.name}). Open the row and press Go to resume."
        self._changed("scan")

    def _apply_layout_spec(self, spec: Mapping[str, Any]) -> None:
        """{"layout", "active" (1-based), "graphics_mode" (every viewport), "shim_box_visible",
        "viewports": [{"row": card queue index or "series": uid, "image": 1-based (default: the middle one),
        "graphics_mode"} or null]}.

        With a seeded `localizer_order`, a localizer's image k goes where the card put image order[k]."""
        if "layout" in spec:
            self.layout.set_layout(str(spec["layout"]))
        if "graphics_mode" in spec:
            self.layout.set_all_graphics_modes(str(spec["graphics_mode"]))
        for i, vp in enumerate(spec.get("viewports") or []):
            if vp is None:
                self.layout.viewports[i] = ViewportContent(graphics_mode=self.layout.viewports[i].graphics_mode)
                continue
            uid = vp["series"] if "series" in vp else self._card_row(int(vp["row"])).series
            self._require(uid is not None, f"viewport {i + 1}: that row has no series")
            s = self.series_by_uid(int(uid))
            k = int(vp["image"]) - 1 if vp.get("image") else s.n_images // 2  # a whole series opens in the middle
            if self.localizer_order is not None and s.localizer:
                k = self.localizer_order[k]
            self._load(i, int(uid), k)
            if vp.get("graphics_mode"):
                self.layout.viewports[i] = replace(self.layout.viewports[i], graphics_mode=str(vp["graphics_mode"]))
        if "active" in spec:
            self.layout.activate(int(spec["active"]) - 1)
        self.shim_box_visible = bool(spec.get("shim_box_visible", self.shim_box_visible))

    # ---- lookup ---------------------------------------------------------------------------------
    @staticmethod
    def protocols() -> tuple[MRProtocol, ...]:
        return PROTOCOLS

    @staticmethod
    def library() -> dict[str, Any]:
        return library_tree().to_dict()

    def row(self, uid: int) -> QueueRow:
        for r in self.rows:
            if r.uid == uid:
                return r
        self._require(False, f"There is no row {uid} in the queue.")
        raise AssertionError  # unreachable: _require raised

    def row_at(self, index: int) -> QueueRow:
        """The row at 1-based queue position `index`."""
        self._require(1 <= index <= len(self.rows), f"There is no row {index} in the queue.")
        return self.rows[index - 1]

    def index_of(self, uid: int) -> int:
        """1-based queue position of a row."""
        return self.rows.index(self.row(uid)) + 1

    @property
    def open_row(self) -> QueueRow | None:
        return None if self._open_uid is None else self.row(self._open_uid)

    @property
    def running_row(self) -> QueueRow | None:
        return None if self._running_uid is None else self.row(self._running_uid)

    def series_by_uid(self, uid: int) -> Series:
        for s in self.series:
            if s.uid == uid:
                return s
        self._require(False, f"There is no series {uid}.")
        raise AssertionError

    def localizer_done(self) -> bool:
        return any(s.localizer for s in self.series)

    def duration_s(self, row: QueueRow) -> float:
        """The row's scan time: fixed once it started, otherwise what its parameters give now."""
        if row.status in ("running", "done") and row.t_start is not None and row.t_end is not None:
            return round(row.t_end - row.t_start, 3)
        return scan_time_s(row.params, row.proto, self.heart_rate_bpm, self._signal(row.params.trigger))

    def row_conflicts(self, row: QueueRow) -> list[str]:
        return conflicts(row.params, row.proto, self.heart_rate_bpm, self._signal(row.params.trigger))

    # ---- queue editing --------------------------------------------------------------------------
    def _new_row(self, pid: str, name: str | None = None, position: int | None = None) -> QueueRow:
        try:
            p = get_protocol(pid)
        except KeyError as exc:
            self._require(False, str(exc.args[0]))
            raise
        row = QueueRow(self._next_row_uid, self._clean_name(name) if name is not None else p.name, p.id,
                       RowParams.from_protocol(p, self.isocentre_mm, self.field_t))
        self._next_row_uid += 1
        pos = len(self.rows) if position is None else max(0, min(len(self.rows), int(position)))
        self.rows.insert(pos, row)
        return row

    def _clean_name(self, name: str) -> str:
        text = " ".join(str(name).split())
        self._require(bool(text), "A row name cannot be empty.")
        self._require(len(text) <= MAX_NAME_CHARS, f"A row name has at most {MAX_NAME_CHARS} characters.")
        return text

    def add_protocol(self, pid: str, position: int | None = None) -> int:
        """Add a protocol of the library to the queue (at 0-based `position`, default the end); its uid."""
        row = self._new_row(pid, position=position)
        if pid in self.library_plans:  # the saved plan first: a seeded shim fault sits relative to the slice
            row.params.set_pose(self.library_plans[pid]["pose"])
        if self.library_mapping_fault and mapping.is_mapping(get_protocol(pid)):
            self._apply_mapping_fault(row, record=False)
        self._log("row_added", row=row.uid, protocol=pid, index=self.index_of(row.uid))
        self.message = f"{row.name} added to the queue."
        self._changed("queue")
        return row.uid

    def open(self, uid: int) -> None:
        """Open a row: its parameters show in the card and its planning graphics on the images."""
        row = self.row(uid)
        self._open_uid = uid
        self._log("row_opened", row=uid)
        self.message = f"{row.name} opened."
        self._changed("open")

    def close_row(self) -> None:
        self._open_uid = None
        self._changed("open")

    def rename(self, uid: int, name: str) -> None:
        row = self.row(uid)
        new = self._clean_name(name)
        old, row.name = row.name, new
        self._log("row_renamed", row=uid, old=old, name=new)
        self.message = f"Row {self.index_of(uid)} renamed to {new}."
        self._changed("queue")

    def repeat(self, uid: int) -> int:
        """A pending copy of the row (same protocol, name and parameters) right after it; its uid."""
        src = self.row(uid)
        row = self._new_row(src.protocol, src.name, position=self.index_of(uid))
        row.params = src.params.copy()
        row.copy_of = src.uid
        self._log("row_repeated", row=uid, copy=row.uid, index=self.index_of(row.uid))
        self.message = f"{src.name} repeated as row {self.index_of(row.uid)}."
        self._changed("queue")
        return row.uid

    def skip(self, uid: int) -> None:
        """Skip a pending or stopped row (Go passes it by); skipping a skipped row makes it pending again."""
        row = self.row(uid)
        self._require(row.status not in ("running", "done"), f"{row.name} is {row.status}: it cannot be skipped.")
        row.status = "pending" if row.status == "skipped" else "skipped"
        self._log("row_skipped" if row.status == "skipped" else "row_unskipped", row=uid)
        self.message = f"{row.name} {'skipped' if row.status == 'skipped' else 'will be acquired again'}."
        self._changed("queue")

    def delete(self, uid: int) -> None:
        row = self.row(uid)
        self._require(row.status != "running", f"{row.name} is running: stop it before deleting it.")
        self._require(row.status != "done", f"{row.name} has been acquired: its series stays in the exam.")
        index = self.index_of(uid)
        self.rows.remove(row)
        if self._open_uid == uid:
            self._open_uid = None
        self._log("row_deleted", row=uid, index=index)
        self.message = f"{row.name} deleted."
        self._changed("queue")

    def move(self, uid: int, delta: int) -> None:
        """Move a row up (delta -1) or down (+1) by one place."""
        row = self.row(uid)
        i = self.index_of(uid) - 1
        j = i + (1 if delta > 0 else -1)
        self._require(row.status != "running", f"{row.name} is running: it cannot be moved.")
        self._require(0 <= j < len(self.rows), f"{row.name} is already {'last' if delta > 0 else 'first'}.")
        self.rows[i], self.rows[j] = self.rows[j], self.rows[i]
        self._log("row_moved", row=uid, index=j + 1)
        self._changed("queue")

    def move_up(self, uid: int) -> None:
        self.move(uid, -1)

    def move_down(self, uid: int) -> None:
        self.move(uid, +1)

    # ---- Go / Stop ------------------------------------------------------------------------------
    def go_target(self) -> QueueRow | None:
        """The row Go would start: the open row if it can run, otherwise the first pending one."""
        r = self.open_row
        if r is not None and r.status in ("pending", "stopped"):
            return r
        return next((r for r in self.rows if r.status == "pending"), None)

    def go_blocker(self) -> str | None:
        """Why Go is refused now, in words (None: Go is available)."""
        running = self.running_row
        if running is not None:
            return f"The scanner is busy: {running.name} is running ({self.remaining_s():.0f} s left)."
        row = self.go_target()
        if row is None:
            return "There is no pending row to start."
        p = row.proto
        if not p.acquirable:
            return f"{row.name} cannot be acquired: mapping is not available on this console yet."
        if p.needs_localizer and not self.localizer_done():
            return f"{row.name} is planned on localizer images: acquire the localizer first."
        trig = row.params.trigger
        if trig != "none" and not self._signal(trig):
            what = "ECG" if trig == "ecg" else "pulse"
            return (f"{row.name} is triggered by {what}, but there is no {what} signal: check the "
                    f"{'ECG leads' if trig == 'ecg' else 'pulse sensor'} or set Trigger to none.")
        found = self.row_conflicts(row)
        if found:
            return f"{row.name}: {found[0]}"
        return None

    def can_go(self) -> bool:
        return self.go_blocker() is None

    def go(self) -> int:
        """Start the next row (see go_target); returns its uid."""
        reason = self.go_blocker()
        if reason is not None:
            self._log("go_refused", reason=reason)
        self._require(reason is None, reason or "")
        row = self.go_target()
        assert row is not None
        self._start(row)
        return row.uid

    def _start(self, row: QueueRow, t_end: float | None = None, t_start: float | None = None) -> None:
        dur = self.duration_s(row)  # not started yet: what its parameters give now
        row.t_start = self.t if t_start is None else float(t_start)
        row.t_end = row.t_start + dur if t_end is None else float(t_end)
        row.status = "running"
        self._running_uid = row.uid
        self._done_event = self.schedule(row.t_end, lambda uid=row.uid: self._finish(uid), PRIORITY_ROW_DONE,
                                         "row_done")
        self._log("row_started", row=row.uid, name=row.name, duration_s=round(row.t_end - row.t_start, 3))
        self.message = f"Scanning {row.name}..."
        self._changed("scan")

    def stop(self) -> None:
        """Stop the running row: no series; it may be started again with Go."""
        row = self.running_row
        self._require(row is not None, "Nothing is running.")
        assert row is not None
        self.scheduler.cancel(self._done_event)
        self._done_event = None
        row.status, row.t_end = "stopped", self.t
        self._running_uid = None
        self._log("row_stopped", row=row.uid)
        self.message = f"{row.name} stopped."
        self._changed("scan")

    def remaining_s(self) -> float:
        row = self.running_row
        return 0.0 if row is None or row.t_end is None else max(0.0, row.t_end - self.t)

    def _finish(self, uid: int, prior: bool = False) -> None:
        """The row's last line was read: form its series and mark it done."""
        row = self.row(uid)
        s = self._form_series(row, prior)
        self.series.append(s)
        row.status, row.series = "done", s.uid
        if self._running_uid == uid:
            self._running_uid, self._done_event = None, None
        self._log("prior_series_loaded" if prior else "row_done", row=uid, series=s.uid, n_images=s.n_images)
        if s.localizer and self.autoload_localizer:
            for k in range(min(3, len(self.layout.viewports))):  # sagittal, coronal, transverse into 1-3
                self._load(k, s.uid, k)
        self.message = f"{row.name} done: series {s.uid} ({s.n_images} image{'' if s.n_images == 1 else 's'})."
        self._changed("series")

    def _form_series(self, row: QueueRow, prior: bool) -> Series:
        p, pr = row.params, row.proto
        uid = len(self.series) + 1
        seed = (self.task_id, self.seed, uid)  # a repeated row gets new noise
        if mapping.is_mapping(pr):
            assert row.t_start is not None
            data = mapping.acquire(self.subject, p, pr, self.heart_rate_bpm, self.field_t, seed, row.t_start)
        elif pr.is_localizer:
            data = acquire_localizer(self.subject, self.isocentre_mm, p.sequence(), field_t=self.field_t,
                                     fov_mm=p.fov_read_mm, matrix=int(p.matrix), thickness_mm=p.thickness_mm,
                                     averages=p.averages, seed=seed)
        else:
            data = acquire_series(self.subject, p.slice_group(), p.sequence(), field_t=self.field_t,
                                  averages=p.averages, seed=seed)
        assert row.t_start is not None and row.t_end is not None
        return Series(uid, row.name, row.uid, row.protocol, row.t_start, row.t_end, p.to_dict(), data,
                      pr.is_localizer, prior)

    # ---- parameter card -------------------------------------------------------------------------
    def open_value(self, name: str) -> float:
        """Value of parameter `name` of the open row (NaN with no row open or no such value)."""
        row = self.open_row
        if row is None:
            return float("nan")
        attr, i = _ATTR.get(name, (name, None))
        v = getattr(row.params, attr)
        v = v[i] if i is not None else v
        if v is not None and name in _SCANNER_FRAME:
            v = round(float(v) - self.isocentre_mm[i], 3)
        return float("nan") if v is None else float(v)

    def _apply_param(self, row: QueueRow, name: str, value: Any) -> Any:
        """Clamp and store one value on a row (no rule check: initial state and set_param share it)."""
        if name in CHOICES:
            options = CHOICES[name][0]
            self._require(value in options, f"{name} must be one of {', '.join(options)}.")
            setattr(row.params, name, value)
            return value
        self._require(name in PARAM and PARAM[name].set is not None, f"unknown parameter {name}")
        self._require(value is not None and math.isfinite(float(value)), "Enter a number.")
        v: Any = PARAM[name].clamp(float(value))
        if name in _INT_PARAMS:
            v = int(v)
        attr, i = _ATTR.get(name, (name, None))
        if i is None:
            setattr(row.params, attr, v)
        else:
            t = list(getattr(row.params, attr))
            t[i] = round(v + self.isocentre_mm[i], 3) + 0.0 if name in _SCANNER_FRAME else v
            setattr(row.params, attr, tuple(t))
        return v

    def set_param(self, name: str, value: Any) -> Any:
        """Set a numeric parameter or a choice of the open row (clamped); returns the stored value."""
        rule = CHOICES[name][1] if name in CHOICES else self.parameter(name).enabled_when
        self._require_rule(rule)
        row = self.open_row
        assert row is not None
        v = self._apply_param(row, name, value)
        self._log("param_changed", row=row.uid, name=name, value=v)
        found = self.row_conflicts(row)
        self.message = found[0] if found else f"Scan time {self.duration_s(row):.0f} s."
        self._changed("params")
        return v

    def set_pose(self, pose: Any) -> None:
        """Graphical planning: centre, orientation and in-plane rotation of the open row from a PlanePose."""
        self._require_rule(GEOMETRY)
        row = self.open_row
        assert row is not None
        row.params.set_pose(pose)
        self._log("geometry_changed", row=row.uid, centre_mm=list(row.params.centre_mm),
                  orientation=row.params.orientation_text(), inplane_deg=row.params.inplane_deg)
        self._changed("params")

    def set_shim_size(self, size_mm: tuple[float, float, float] | None) -> None:
        """Adjust volume size (read, phase, slice mm) of the open row; None follows the slab."""
        self._require_rule(ROW_EDITABLE)
        row = self.open_row
        assert row is not None
        row.params.shim_size_mm = None if size_mm is None else tuple(round(max(10.0, min(500.0, float(s))), 1)
                                                                      for s in size_mm)
        self._log("shim_box_changed", row=row.uid, size_mm=row.params.shim_size_mm)
        self._changed("params")

    def set_shim_centre(self, centre_mm: Any | None) -> None:
        """Adjust volume centre (subject mm) of the open row; None follows the slice group."""
        self._require_rule(ROW_EDITABLE)
        row = self.open_row
        assert row is not None
        if centre_mm is not None:
            c = np.asarray(centre_mm, float).reshape(3)
            self._require(bool(np.all(np.isfinite(c))), "Enter a number.")
            centre_mm = tuple(round(max(-1000.0, min(1000.0, float(x))), 3) + 0.0 for x in c)
        row.params.shim_centre_mm = centre_mm
        self._log("shim_box_moved", row=row.uid, centre_mm=None if centre_mm is None else list(centre_mm))
        self._changed("params")

    # ---- graphical planning on a displayed image (consoles.mr.planning) --------------------------
    def row_editable(self) -> bool:
        """Whether the open row's parameters (and so its planning grips) can be changed now."""
        return ROW_EDITABLE(self)

    def _editable_params(self, rule: Rule = GEOMETRY) -> RowParams:
        self._require_rule(rule)
        row = self.open_row
        assert row is not None
        return row.params

    def translate_group(self, display: PlanePose, du: float, dv: float) -> None:
        """Move the open row's slice group by (du, dv) mm in the displayed image's plane."""
        p = self._editable_params()
        self.set_pose(planning.translated(p.pose(), display, float(du), float(dv)))

    def rotate_group(self, display: PlanePose, deg: float, start: RowParams | None = None,
                     grip_uv: tuple[float, float] | None = None) -> None:
        """Turn the open row's slice group about the displayed plane's normal through its centre grip
        (counter-clockwise on screen positive): planning on an oblique image gives a double oblique.

        `start`: the parameters the turn is measured from (a drag's press-time row; default the row as it
        is); `grip_uv`: where on the display the rotate grip was grabbed (default where it sits). The grip
        then keeps that end of the group after the turn (issue 24: it used to jump to the other end when
        the row's parameters re-derived the group's in-plane axes turned by 180 deg): the model remembers
        the grabbed end as a subject direction turned with the group."""
        p = self._editable_params()  # refused unless the open row's geometry is editable
        p = p if start is None else start
        row = self.open_row
        g = planning.find_grip(plan_grips(p, display, 1.0, with_shim=False,
                                          rotate_end=self._rotate_ends.get(row.uid)), "rotate")
        assert g is not None and g.pivot is not None
        gu, gv = grip_uv if grip_uv is not None else (g.u, g.v)
        d3 = (gu - g.pivot[0]) * np.asarray(display.u) + (gv - g.pivot[1]) * np.asarray(display.v)
        if float(np.linalg.norm(d3)) > 1e-9:
            self._rotate_ends[row.uid] = tuple(float(x) for x in planning.turned(display, d3, float(deg)))
        self.set_pose(planning_rotated(p, display, float(deg)))

    def rotate_grip_end(self, uid: int) -> tuple[float, float, float] | None:
        """The end of a row's group its rotate grip keeps (a subject direction from the group's centre, set by
        the last turn; None: not turned yet, the grip sits at the far end)."""
        return self._rotate_ends.get(uid)

    def grips(self, display: PlanePose, px_per_mm: float = 1.0) -> list[planning.Grip]:
        """The open row's grips on a displayed plane: the group's (not for a localizer) and the shim box's
        (consoles.mr.planning); rotate grip placement depends on the viewport's pixels per mm and the end
        the grip was last released at."""
        row = self.open_row
        if row is None:
            return []
        return plan_grips(row.params, display, px_per_mm, with_group=not row.proto.is_localizer,
                          rotate_end=self._rotate_ends.get(row.uid))

    def drag_grip(self, display: PlanePose, name: str, amount_mm: float) -> None:
        """A resize grip (fov_*, stack_*, shim_<axis>_*) dragged `amount_mm` outwards along its axis on
        the displayed plane: that size changes symmetrically by 2 x amount x the grip's factor (the
        stack's through the slice count)."""
        rule = ROW_EDITABLE if name.startswith("shim_") or name.startswith("fov_") else GEOMETRY
        p = self._editable_params(rule)
        g = planning.find_grip(self.grips(display), name)
        self._require(g is not None and g.role == "resize",
                      f"There is no {name.replace('_', ' ')} grip on this image: the edge is seen end-on here.")
        assert g is not None
        apply_resize(self, p, g, float(amount_mm))

    def move_shim(self, display: PlanePose, du: float, dv: float) -> None:
        """Move the adjust volume by (du, dv) mm in the displayed plane."""
        p = self._editable_params(ROW_EDITABLE)
        c = np.asarray(p.shim_box()["centre"], float)
        self.set_shim_centre(c + float(du) * display.u + float(dv) * display.v)

    def card(self) -> dict[str, list[dict[str, Any]]]:
        """The open row's card as the view shows it: per tab, each field's value, unit and why it is greyed."""
        out: dict[str, list[dict[str, Any]]] = {}
        for tab, names in CARD.items():
            fields = []
            for n in names:
                if n in CHOICES:
                    options, rule = CHOICES[n]
                    row = self.open_row
                    fields.append({"name": n, "options": list(options), "value": getattr(row.params, n) if row else None,
                                   "enabled": rule(self), "reason": rule.reason(self)})
                else:
                    p = PARAM[n]
                    v = p.value(self)
                    fields.append({"name": n, "label": p.label, "unit": p.unit,
                                   "value": None if math.isnan(v) else round(v, p.decimals),
                                   "enabled": p.enabled(self), "reason": p.refusal(self)})
            out[tab] = fields
        return out

    # ---- viewer ---------------------------------------------------------------------------------
    def _viewport(self, i: int) -> int:
        self._require(int(i) in self.layout.visible(), f"Viewport {int(i) + 1} is not shown in this layout.")
        return int(i)

    def _load(self, i: int, series_uid: int, image: int) -> None:
        s = self.series_by_uid(series_uid)
        k = max(0, min(s.n_images - 1, int(image)))
        level, width = s.data.auto_window
        # the viewport keeps its graphics mode; an initial state may fill viewports its layout hides
        self.layout.viewports[i] = replace(self.layout.viewports[i], content=f"series {s.uid}",
                                           window=round(width, 4), level=round(level, 4))
        self.viewport_image[i] = k

    def load_series(self, viewport: int, series_uid: int, image: int | None = None) -> None:
        """Drop a series (or one of its images, 0-based) onto a viewport; a whole series opens in the middle."""
        i = self._viewport(viewport)
        s = self.series_by_uid(series_uid)
        k = s.n_images // 2 if image is None else int(image)
        self._require(0 <= k < s.n_images, f"Series {series_uid} has {s.n_images} images.")
        self._load(i, series_uid, k)
        self._log("series_loaded", viewport=i + 1, series=series_uid, image=k + 1)
        self._changed("layout")

    def viewport_series(self, i: int) -> Series | None:
        c = self.layout.viewports[i].content
        return None if c is None else self.series_by_uid(int(c.split()[1]))

    def page(self, viewport: int, delta: int) -> None:
        """Scroll through the images of the series a viewport shows (clamped at the ends)."""
        i = self._viewport(viewport)
        s = self.viewport_series(i)
        if s is None:
            return
        k = max(0, min(s.n_images - 1, self.viewport_image[i] + int(delta)))
        if k != self.viewport_image[i]:
            self.viewport_image[i] = k
            self._changed("layout")

    def set_layout(self, layout: str) -> None:
        try:
            self.layout.set_layout(layout)
        except ValueError as exc:
            self._require(False, str(exc))
        self._log("layout_set", layout=layout)
        self._changed("layout")

    def activate_viewport(self, viewport: int) -> None:
        i = self._viewport(viewport)
        self.layout.activate(i)
        self._log("viewport_activated", viewport=i + 1)
        self._changed("layout")

    def move_viewport_content(self, src: int, dst: int) -> None:
        """Drag what one viewport shows onto another (the source keeps it)."""
        a, b = self._viewport(src), self._viewport(dst)
        self.layout.move_content(a, b)
        self.viewport_image[b] = self.viewport_image[a]
        self._log("viewport_copied", src=a + 1, dst=b + 1)
        self._changed("layout")

    def set_window_level(self, viewport: int, window: float, level: float) -> None:
        """Display only."""
        self.layout.set_window_level(self._viewport(viewport), window, level)
        self._changed("layout")

    def set_graphics_mode(self, mode: str, viewport: int | None = None) -> None:
        """How a viewport (default: the active one; 0-based) draws the open row's planning graphics."""
        i = self.layout.active if viewport is None else self._viewport(viewport)
        try:
            self.layout.set_graphics_mode(mode, i)
        except ValueError as exc:
            self._require(False, str(exc))
        self._log("graphics_mode_set", viewport=i + 1, mode=mode)
        self._changed("layout")

    def graphics_mode(self, i: int) -> str:
        """Graphics mode of viewport i (0-based): "all", "outer" or "off"."""
        return self.layout.viewports[i].graphics_mode

    def set_shim_box_visible(self, visible: bool) -> None:
        self.shim_box_visible = bool(visible)
        self._log("shim_box_shown" if visible else "shim_box_hidden")
        self._changed("layout")

    def select_image(self, series_uid: int, image: int) -> None:
        """Pick one image (0-based) of a series in the series list."""
        s = self.series_by_uid(series_uid)
        self._require(0 <= int(image) < s.n_images, f"Series {series_uid} has {s.n_images} images.")
        self.selected_image = (s.uid, int(image))
        self._log("image_selected", series=s.uid, image=int(image) + 1)
        self._changed("selection")

    # ---- series list ----------------------------------------------------------------------------
    def _image_order(self, s: Series) -> list[int]:
        """The order a localizer's images are listed in: the seeded order when labels are hidden."""
        n = s.n_images
        if not self.labels_hidden:
            return list(range(n))
        if self.localizer_order is not None and sorted(self.localizer_order) == list(range(n)):
            return list(self.localizer_order)
        return [int(k) for k in self.rng("series_list", s.uid).permutation(n)]

    def _image_title(self, s: Series, k: int) -> str:
        if self.labels_hidden:
            return f"Image {self._image_order(s).index(k) + 1}"
        name = s.data[k].name
        return f"{s.uid}  Localizer {LOCALIZER_SHORT.get(name, name)}"

    def series_entries(self) -> list[SeriesEntry]:
        """The series list's thumbnails in screen order: one per image for localizers, else one per series."""
        out: list[SeriesEntry] = []
        for s in self.series:
            if mapping.is_map_series(s):
                out += [SeriesEntry(*e) for e in mapping.series_entries(s)]
            elif s.localizer:
                out += [SeriesEntry(f"{s.uid}.{k + 1}", s.uid, k, self._image_title(s, k), "")
                        for k in self._image_order(s)]
            else:
                n = s.n_images
                out.append(SeriesEntry(str(s.uid), s.uid, None, f"{s.uid}  {s.name}",
                                       f"{n} image{'s' if n != 1 else ''}"))
        return out

    def _entry(self, key: str) -> SeriesEntry:
        for e in self.series_entries():
            if e.key == key:
                return e
        self._require(False, f"There is no entry {key} in the series list.")
        raise AssertionError

    def entry_image(self, key: str) -> MRImage:
        """The thumbnail image of a series-list entry: that image, or the middle image of the series."""
        e = self._entry(key)
        s = self.series_by_uid(e.series)
        return s.data[s.n_images // 2 if e.image is None else e.image]

    def load_entry(self, viewport: int, key: str) -> None:
        """Drag a series-list entry onto a viewport (0-based)."""
        e = self._entry(key)
        self.load_series(viewport, e.series, e.image)

    def select_entry(self, key: str) -> None:
        """Click an entry of the series list: it becomes the selected image (or series)."""
        e = self._entry(key)
        self.selected_image = (e.series, e.image)
        self.selected_entry = key
        self._log("image_selected", key=key, series=e.series, image=None if e.image is None else e.image + 1)
        self._changed("selection")

    def select_list_item(self, position: int) -> None:
        """Click the series list's `position`-th thumbnail (1-based, screen order): what a click on the list
        picks, whatever image the seeded order put there."""
        entries = self.series_entries()
        self._require(1 <= int(position) <= len(entries), f"The series list has no entry {position}.")
        self.select_entry(entries[int(position) - 1].key)

    def viewport_caption(self, i: int) -> list[str]:
        """The corner text of viewport i: series title, image k/N and orientation ([] when empty). With
        labels hidden a localizer image shows only its list position, nothing that names the plane."""
        s = self.viewport_series(i)
        if s is None:
            return []
        k = self.viewport_image[i]
        if mapping.is_map_series(s):
            return mapping.caption(s, k, orientation_text(s.data[k].pose.normal))
        if s.localizer:
            if self.labels_hidden:
                return [self._image_title(s, k), "1/1"]
            name = s.data[k].name
            title = f"Localizer {LOCALIZER_SHORT.get(name, name)}"
        else:
            title = s.name
        return [title, f"Image {k + 1}/{s.n_images}", orientation_text(s.data[k].pose.normal)]

    def viewport_image_data(self, i: int):
        """The MRImage viewport i shows (None when empty)."""
        s = self.viewport_series(i)
        return None if s is None else s.data[self.viewport_image[i]]

    # ---- time -----------------------------------------------------------------------------------
    def _after_clock(self) -> None:
        if self._running_uid is not None:
            self._changed("scan")

    # ---- dump -----------------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        """What the header shows: scanner status, exam time, heart rate."""
        row = self.running_row
        scanner = {"status": "idle", "row": None, "name": None, "remaining_s": 0.0}
        if row is not None:
            scanner = {"status": "scanning", "row": row.uid, "name": row.name,
                       "remaining_s": round(self.remaining_s(), 3)}
        return {"scanner": scanner, "exam_time_s": round(float(self.t), 3), "heart_rate_bpm": self.shown_heart_rate(),
                "indication": self.indication}

    def _row_dict(self, row: QueueRow) -> dict[str, Any]:
        p = row.proto
        return {"uid": row.uid, "index": self.index_of(row.uid), "name": row.name, "protocol": row.protocol,
                "status": row.status, "copy_of": row.copy_of, "series": row.series,
                "duration_s": self.duration_s(row),
                "t_start": None if row.t_start is None else round(float(row.t_start), 3),
                "t_end": None if row.t_end is None else round(float(row.t_end), 3),
                "needs_localizer": p.needs_localizer, "acquirable": p.acquirable,
                "temporal_resolution_ms": temporal_resolution_ms(row.params, p),
                "conflicts": self.row_conflicts(row), "params": row.params.to_dict(),
                "warnings": mapping.warnings(row.params, p, self.shown_heart_rate())}

    def _layout_dict(self) -> dict[str, Any]:
        d = self.layout.to_dict()
        for i, vp in enumerate(d["viewports"]):
            vp["window"], vp["level"] = round(vp["window"], 4), round(vp["level"], 4)
            s = self.viewport_series(i)
            k = self.viewport_image[i]
            vp.update({"caption": self.viewport_caption(i),
                       "series": None if s is None else s.uid, "image": None if s is None else k + 1,
                       "n_images": None if s is None else s.n_images,
                       "image_name": None if s is None else s.data[k].name,
                       "orientation": None if s is None else orientation_text(s.data[k].pose.normal)})
        d["shim_box_visible"] = self.shim_box_visible
        return d

    def state(self) -> dict[str, Any]:
        """Everything an oracle needs (JSON-serialisable; no pixels)."""
        target = self.go_target()
        return {
            "modality": "mr", "task": self.task_id, "subject": self.subject.id, "seed": self.seed,
            "t": round(float(self.t), 3), "field_t": self.field_t,
            "landmark": self.landmark, "landmark_shift_mm": self.landmark_shift_mm,
            "isocentre_offset_mm": list(self.isocentre_offset_mm),
            "isocentre_mm": list(self.isocentre_mm),
            "physio": {"heart_rate_bpm": self.heart_rate_bpm, "rr_ms": round(rr_ms(self.heart_rate_bpm) or 0.0, 3),
                       "ecg_signal": self.ecg_signal, "pulse_signal": self.pulse_signal},
            "header": self.header(),
            "go": {"ready": self.can_go(), "reason": self.go_blocker(), "target": None if target is None else target.uid},
            "open_row": self._open_uid,
            "queue": [self._row_dict(r) for r in self.rows],
            "series": [s.to_dict() for s in self.series],
            "layout": self._layout_dict(),
            "selected_image": None if self.selected_image is None else
            {"series": self.selected_image[0],
             "image": None if self.selected_image[1] is None else self.selected_image[1] + 1},
            "selected_entry": self.selected_entry,
            "series_list": [{"key": e.key, "series": e.series, "image": None if e.image is None else e.image + 1,
                             "title": e.title, "count_text": e.count_text} for e in self.series_entries()],
            "labels_hidden": self.labels_hidden, "indication": self.indication,
            "start": self.start,
            "events": list(self.events),
            "rois": self.roi_dump(), "roi_tool": self.roi_tool,
            "message": self.message,
        }


# ---- planning helpers shared by the model and the view's drags ----------------------------------------
def plan_grips(p: RowParams, display: PlanePose, px_per_mm: float, with_group: bool = True,
               with_shim: bool = True, free: Any = None, rotate_end: Any = None) -> list[planning.Grip]:
    """The grips of row parameters `p` on a displayed plane (group first, then the shim box); `free`
    (u, v) -> bool tells where the rotate grip may go, `rotate_end` (a subject direction) the end of the
    group it keeps (MRModel.rotate_grip_end; planning.group_grips)."""
    out: list[planning.Grip] = []
    if with_group:
        extent = planning.stack_extent_mm(int(p.n_slices), p.thickness_mm, p.gap_mm)
        out += planning.group_grips(display, p.pose(), (p.fov_read_mm, p.fov_phase_mm), extent, px_per_mm, free,
                                    rotate_end)
    if with_shim:
        box = p.shim_box()
        off = SHIM_GRIP_OFFSET_PX / px_per_mm
        out += planning.shim_grips(display, p.pose(), box["centre"], tuple(float(s) for s in box["size_mm"]),
                                   (-off, off))
    return out


def planning_rotated(p: RowParams, display: PlanePose, deg: float) -> PlanePose:
    """The group of `p` turned on a display about its centre grip (planning.group_grips)."""
    g = planning.find_grip(plan_grips(p, display, 1.0, with_shim=False), "rotate")
    assert g is not None
    return planning.rotated(p.pose(), display, deg, g.pivot_mm)


def apply_resize(m: "MRModel", p0: RowParams, g: planning.Grip, amount_mm: float) -> None:
    """Set the size a resize grip acts on, from the parameters `p0` it was found on (press time)."""
    row = m.open_row
    assert row is not None
    cur = row.params
    if g.name.startswith("fov_"):
        key = f"fov_{g.group_axis}_mm"
        par = PARAM[key]
        value = planning.resized(getattr(p0, key), g, amount_mm, par.lo, par.hi)
        if par.clamp(value) != getattr(cur, key):
            m.set_param(key, value)
    elif g.name.startswith("stack_"):
        par = PARAM["n_slices"]
        n = planning.stack_resized(int(p0.n_slices), p0.thickness_mm, p0.gap_mm, g, amount_mm, int(par.lo),
                                   int(par.hi))
        if n != cur.n_slices:
            m.set_param("n_slices", n)
    elif g.name.startswith("shim_"):
        k = planning.AXES.index(str(g.group_axis))
        size = [float(s) for s in p0.shim_box()["size_mm"]]
        size[k] = planning.resized(size[k], g, amount_mm, 10.0, 500.0)
        if [round(s, 1) for s in size] != [float(s) for s in cur.shim_box()["size_mm"]]:
            m.set_shim_size(tuple(size))
