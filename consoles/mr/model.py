"""MR console model: MRModel composes the exam queue, series store, parameter card, graphical planning,
viewer and task seeding, each its own module (one job each, like a Slicer module's logic; serializable, no Qt):

- consoles.mr.queue: rows, queue editing, Go/Stop in simulated time (ExamQueue).
- consoles.mr.series: acquired series and the series list (SeriesStore).
- consoles.mr.param_card: the declared parameters, choices and tabs, and their setters (ParameterCard).
- consoles.mr.plan_tools: graphical planning on a displayed image (PlanningTools, plan_grips, apply_resize).
- consoles.mr.image_layout: layout, viewports, captions (Viewer).
- consoles.mr.measure: slice positions, the pointer read-out and the distance tool (MeasureTools).
- consoles.mr.seeding: the card's initial state and the episode's seeded draws (TaskSeeding).
- consoles.mr.mapping: T1/T2 mapping's model side (MappingTools).

This module holds what ties them together: construction (the order of the draws), the patient's physiology, the
header and the state dump. The dump's "start" records the queue and viewer as the session began, so oracles can
tell what the agent changed. Every name the console's other modules and the tests import from here still is.
"""
from __future__ import annotations

from typing import Any, Mapping

# the balanced draws live in consoles/common/balance.py (shared with the US console); imported here under
# the names this module has always exported
from consoles.common.balance import balanced_choice, cohort_balanced_choice, subject_index  # noqa: F401
from consoles.common.layout_state import LayoutState
from consoles.common.model_base import ConsoleActionError, ConsoleModelBase, PerturbationDraws, ScheduledEvent
from consoles.mr import mapping
from consoles.mr.measure import MeasureTools
from consoles.mr.param_card import (CARD, CHOICES, GEOMETRY, PARAM, PARAMETERS, READ_ONLY,  # noqa: F401
                                    ROW_EDITABLE, ParameterCard)
from consoles.mr.plan_tools import SHIM_GRIP_OFFSET_PX, PlanningTools, apply_resize, plan_grips  # noqa: F401
from consoles.mr.plan_tools import planning_rotated  # noqa: F401
from consoles.mr.protocols import LANDMARK_Z_MM
from consoles.mr.queue import STATUSES, ExamQueue, QueueRow  # noqa: F401
from consoles.mr.row_params import rr_ms, temporal_resolution_ms
from consoles.mr.seeding import CLIP_MARGIN_MM, FAULT_SLAB_SHARE, TaskSeeding
from consoles.mr.series import LOCALIZER_SHORT, Series, SeriesEntry, SeriesStore  # noqa: F401
from consoles.mr.image_layout import Viewer

__all__ = ["MRModel", "ConsoleActionError", "QueueRow", "Series", "SeriesEntry", "PARAMETERS", "CHOICES", "CARD",
           "STATUSES", "LOCALIZER_SHORT"]

DEFAULT_QUEUE = ("localizer_3plane", "cine_2ch", "cine_4ch", "cine_sax")
DEFAULT_HEART_RATE_BPM = (60.0, 80.0)


class MRModel(TaskSeeding, ExamQueue, SeriesStore, ParameterCard, PlanningTools, Viewer, MeasureTools,
              mapping.MappingTools, ConsoleModelBase):
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
        self._init_measure()
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
        self.localizer_order: list[int] | None = None  # 0-based localizer planes, in list / viewport-fill order
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

    def _snapshot(self) -> dict[str, Any]:
        """What the session started with (the dump's "start"): oracles compare the end with it."""
        return {"queue": [{"uid": r.uid, "name": r.name, "protocol": r.protocol, "status": r.status,
                           "copy_of": r.copy_of, "params": r.params.to_dict()} for r in self.rows],
                "open_row": self._open_uid, "layout": self._layout_dict(), "indication": self.indication,
                "ecg_signal": self.ecg_signal, "scanner_busy": self.running_row is not None,
                "prior_clipped": self.prior_clipped, "seeded": dict(self.seeded), "n_events": len(self.events)}

    # ---- patient --------------------------------------------------------------------------------
    def shown_heart_rate(self) -> int | None:
        """The heart rate the header shows (from the ECG; None without an ECG signal)."""
        return self.heart_rate_bpm if self.ecg_signal else None

    def _signal(self, trigger: str) -> bool:
        return {"none": True, "ecg": self.ecg_signal, "pulse": self.pulse_signal}[trigger]

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
            "measure": self.measure_dict(),
            "message": self.message,
        }
