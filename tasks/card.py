"""The task-card contract: the agent-visible definition of one task (tasks/<modality>/<id>/task.json).

A card holds what the agent is told and what the runner needs; never thresholds or answers. It is a
union discriminated on `modality`: each modality's card types its `initial_state` and `perturbations`
with exactly the keys that modality's console reads, so a misspelled key is a load error naming the
card file and the key instead of a silent default. Loading validates the card and names the offending
field on error.

This module is the bottom layer of the package graph: it imports nothing else of ours, so consoles,
scoring and the runner can all depend on it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError,
                      field_validator, model_serializer, model_validator)

Modality = Literal["ct", "mr", "us"]
MODALITIES: tuple[str, ...] = ("ct", "mr", "us")
ACTION_TYPES = ("click", "double_click", "drag", "scroll", "move", "type", "key", "wait", "done")
SHIPPED_CARD_NAME = "task.json"  # a shipped card lives in tasks/<modality>/<id>/task.json


class TaskCardError(ValueError):
    """A task card that is missing, unreadable or invalid."""


class ObservationProfile(BaseModel):
    """The screen the agent sees."""

    model_config = ConfigDict(extra="forbid")
    width: int = Field(1280, ge=320, le=3840)
    height: int = Field(800, ge=240, le=2160)
    format: Literal["png"] = "png"


class ActionProfile(BaseModel):
    """Which actions and keys an agent may use, and the bounds on them."""

    model_config = ConfigDict(extra="forbid")
    allowed_actions: list[str] = Field(default_factory=lambda: list(ACTION_TYPES))
    allowed_keys: list[str] = Field(
        default_factory=lambda: ["Enter", "Tab", "Escape", "BackSpace", "Delete", "Up", "Down",
                                 "Left", "Right", "Home", "End", "Page_Up", "Page_Down", "ctrl+a"]
    )
    max_text_length: int = Field(32, ge=1, le=1024)
    max_wait_seconds: float = Field(60.0, gt=0, le=600)

    @field_validator("allowed_actions")
    @classmethod
    def _known_actions(cls, v: list[str]) -> list[str]:
        unknown = [a for a in v if a not in ACTION_TYPES]
        if unknown:
            raise ValueError(f"unknown action types {unknown}; known: {list(ACTION_TYPES)}")
        return v


class Budgets(BaseModel):
    """Limits of one episode."""

    model_config = ConfigDict(extra="forbid")
    max_steps: int = Field(..., ge=1, le=1000)


# ---- console inputs: initial state and perturbation ranges, typed per modality ----------------------
class ConsoleInputs(BaseModel, Mapping):
    """Keys a console reads from the card; unknown keys are an error (extra="forbid").

    Every field is optional and None means "not given": the console applies its own default. The
    model reads like a plain read-only mapping of the keys the card gives (values as JSON: lists,
    dicts, numbers, strings), and that is what consoles receive (``dict(card.perturbations)``), so a
    console's code and its seeded draws do not depend on these classes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler) -> dict[str, Any]:
        # keys not given stay absent (not null), so a written card reads back exactly as it was
        return {k: v for k, v in handler(self).items() if v is not None}

    def as_dict(self) -> dict[str, Any]:
        """The keys the card gives, as plain JSON values."""
        return self.model_dump(mode="json")

    # Mapping protocol over as_dict(): dict(inputs), inputs.get(k), `k in inputs`, bool(inputs)
    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override] - keys, as a Mapping iterates
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())

    def keys(self):  # noqa: D102 - Mapping.keys; dict(x) calls it
        return self.as_dict().keys()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _range(lo_min: float | None = None):
    """A [lo, hi] uniform range with lo <= hi (and lo >= lo_min when given)."""

    def check(v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if lo > hi:
            raise ValueError(f"range [{lo}, {hi}] has lo > hi")
        if lo_min is not None and lo < lo_min:
            raise ValueError(f"range [{lo}, {hi}] must not go below {lo_min} (a magnitude)")
        return v

    return check


Range = tuple[float, float]


class CTPriorExam(BaseModel):
    """An earlier series of the exam that clipped one end of the organ (recovery tasks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    protocol: str
    labels: list[str] = Field(..., min_length=1)
    margin_mm: float | None = Field(None, ge=0)

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class CTInitialState(ConsoleInputs):
    """What the CT console starts with (consoles/ct/model.py: CTModel.__init__)."""

    protocol: str | None = None
    start_page: Literal["planning", "review", "bolus"] | None = None
    ctdi_limit_mgy: float | None = Field(None, gt=0)
    prior_exam: CTPriorExam | None = None
    ctdi_limit_labels: list[str] | None = Field(
        None, min_length=1, description="with perturbations.ctdi_limit_ref_mgy: the labels over whose z extent the "
        "console measures the patient's median water-equivalent diameter for the size-specific dose limit")


class CTPerturbations(ConsoleInputs):
    """Seeded perturbation ranges the CT console draws from (CTModel.__init__ and _load_prior_exam).

    `<name>_mm: [lo, hi]` draws uniformly; `<name>_abs_mm: [lo, hi]` draws a magnitude with a random sign.
    patient_shift_mm is the craniocaudal offset of where the patient lies on the couch against the couch's
    table-z reference: where an adult's jugular notch lands varies with stature, the headrest and how the
    patient got onto the couch; cards draw it uniformly in [-120, 120] mm (an assumed spread of the order of
    a head length, several times the scout margins, so the range edges move with the patient), the chest and
    renal cards in [-250, 250] mm (their protocols' scouts are long enough for it: a patient may lie anywhere
    along the couch's travel, and a range typed from memory must not fall on the organ by chance).
    """

    patient_shift_mm: Range | None = None
    patient_shift_abs_mm: Range | None = None
    table_height_offset_mm: Range | None = None
    table_height_offset_abs_mm: Range | None = None
    heart_rate_bpm: Range | None = None
    ctdi_limit_mgy: Range | None = None
    prior_clip_end: list[Literal["top", "bottom"]] | None = Field(None, min_length=1)
    prior_clip_mm: Range | None = None
    # issue 21: patient position and a size-specific dose limit (drawn after all the keys above)
    patient_lateral_offset_mm: Range | None = Field(
        None, description="the patient's offset from the couch midline (mm, + = to the patient's left). Patients "
        "are centred on the sagittal laser by eye; lateral off-centring of a few cm is common (Toth et al., Med "
        "Phys 34:3093, 2007; Kaasalainen et al., Eur Radiol 2014). It moves the anatomy across the AP scout and "
        "the monitoring and review images; cards draw it uniformly in [-20, 20]")
    table_pad_mm: Range | None = Field(
        None, description="mattress and positioning pads between the couch top and the patient's back (mm): "
        "moves the body centre, and so the table height that isocentres it, with the pad. A couch mattress is a "
        "few cm; cushions, vacuum mattresses and wedges add more (assumed range, no single published figure); "
        "cards draw it uniformly in [10, 60]")
    ctdi_limit_ref_mgy: Range | None = Field(
        None, description="size-specific CTDIvol limit stated for a 300 mm water-equivalent diameter (mGy); the "
        "console scales it to the patient's Dw at equal image noise (AAPM Reports 204 and 220 size metrics; "
        "ultra-low-dose KUB CT runs at about 1-2 mGy for an average adult). Needs "
        "initial_state.ctdi_limit_labels")
    breath_hold_mm: Range | None = Field(
        None, description="this episode's breath-hold level: how far the diaphragm dome lies above (+) or below "
        "(-) the subject's own (mm, uniform). The liver, kidneys and lung bases move with it, the apices do not, "
        "the chest between stretches (rendering.geometry.TableFrame). Told to breathe in and hold, a patient holds "
        "anywhere from a moderate to a full inspiration: the supine diaphragm's forced excursion averages 44-48 mm "
        "(Harris et al., Radiology 146:141, 1983, ultrasound; Gierada et al., Radiology 194:879, 1995, MR) against "
        "11-15 mm in tidal breathing, and the dome drifts a few mm more during the hold (Khot et al., Br J Radiol "
        "93:20190549, 2020); chest and renal cards draw it uniformly in [-25, 25] (a 5 cm span). "
        "Drawn after all other keys")

    @field_validator("patient_shift_mm", "table_height_offset_mm", "patient_lateral_offset_mm", "breath_hold_mm")
    @classmethod
    def _signed(cls, v: Range | None) -> Range | None:
        return None if v is None else _range()(v)

    @field_validator("patient_shift_abs_mm", "table_height_offset_abs_mm", "heart_rate_bpm",
                     "ctdi_limit_mgy", "prior_clip_mm", "table_pad_mm", "ctdi_limit_ref_mgy")
    @classmethod
    def _magnitude(cls, v: Range | None) -> Range | None:
        return None if v is None else _range(0.0)(v)


class _Spec(BaseModel):
    """A nested part of a card's console inputs: unknown keys are errors, keys not given stay absent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


MRRowStatus = Literal["pending", "running", "done", "stopped", "skipped"]
GraphicsMode = Literal["all", "outer", "off"]


# the console's mapping protocols (consoles/mr/protocols.py; tests/tasks/test_mr_card.py checks them)
MR_MAPPING_PROTOCOLS = ("t1_map_molli", "t2_map_t2prep")
# what a seeded mapping fault spoils (consoles/mr/model.py: MRModel._apply_mapping_fault); "none" leaves it right
MRMappingFault = Literal["none", "shim_off_heart", "window_exceeds_rr", "basal_slice", "untriggered"]


class MRQueueRow(_Spec):
    """One row of the MR console's initial exam queue (consoles/mr/model.py: MRModel._row_from_spec).

    `names`: the console picks one per episode (seeded), `name` fixes it; `params`: parameter-card values
    by name (numbers, or the choice for trigger / main / shim_mode); `cover_labels`: fit an acquired row's
    slice group around the organs whose label names start with these prefixes."""

    protocol: str = Field(..., pattern=r"^[a-z0-9_]+$")
    name: str | None = Field(None, min_length=1, max_length=40)
    names: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(None, min_length=1)
    status: MRRowStatus | None = None
    params: dict[str, float | str] | None = None
    remaining_s: float | None = Field(None, gt=0)
    cover_labels: list[str] | None = Field(None, min_length=1)
    lr_on_isocentre: bool | None = Field(None, description="a cover_labels row keeps its L/R centre on the "
                                         "isocentre (a slab placed in F/H and A/P only), so where the organs "
                                         "lie sideways in it follows the patient's position")
    ap_on_isocentre: bool | None = Field(None, description="a cover_labels row keeps its A/P (slab) centre on the "
                                         "isocentre, with the slices to hold the organs from there, so where "
                                         "they lie in depth in it follows the patient's height in the bore")
    plan_error: bool | None = Field(None, description="seed an error into this row's geometry: its normal "
                                    "tilted by perturbations.plan_tilt_deg and its centre shifted by "
                                    "perturbations.plan_shift_mm, in seeded directions")
    coverage_fault: bool | None = Field(None, description="apply the seeded perturbations.coverage_fault (one "
                                        "numeric parameter set so the fitted slab or FOV clips the organs)")
    mid_sax: bool | None = Field(None, description="a mapping row planned on the heart's short axis at mid-ventricle "
                                 "(fitted to the LV labels as the console sees them)")
    heart_shim: bool | None = Field(None, description="the row's adjust volume fitted around the heart (1 cm margins "
                                    "on the group's axes), as a cardiac row set up for this patient is shimmed")
    mapping_fault: bool | None = Field(None, description="apply the seeded perturbations.mapping_fault to this "
                                       "mapping row (shim box off the heart, window overrunning the RR interval, "
                                       "slice too basal, trigger off)")
    stop_fault: bool | None = Field(None, description="this running row stops partway with a hardware fault "
                                    "(perturbations.stop_fault_fraction of its scan time); Go resumes it")
    optional: bool | None = Field(None, description="an earlier acquisition present in about half the episodes "
                                  "(the console's own seeded stream, so no other draw moves): the rows after it "
                                  "sit at other list places, so a fixed click on a list place misses the row a "
                                  "remedy acts on (issue 21). A done row; never named by open, layout or "
                                  "shuffle_rows")

    @model_validator(mode="after")
    def _consistent(self) -> "MRQueueRow":
        if self.name is not None and self.names is not None:
            raise ValueError("give either name or names (options drawn per episode), not both")
        if self.remaining_s is not None and self.status != "running":
            raise ValueError("remaining_s is only meaningful for a running row")
        if self.cover_labels is not None and self.status not in ("done", "pending", None):
            raise ValueError("cover_labels fits an acquired or a pending row: its status must be done or pending")
        if (self.lr_on_isocentre or self.ap_on_isocentre) and self.cover_labels is None:
            raise ValueError("lr_on_isocentre / ap_on_isocentre place a row fitted to organs: give cover_labels too")
        if self.coverage_fault and self.cover_labels is None:
            raise ValueError("coverage_fault spoils a row fitted to organs: give cover_labels too")
        if self.stop_fault and self.status != "running":
            raise ValueError("stop_fault stops the running row: its status must be running")
        if self.optional and self.status != "done":
            raise ValueError("an optional row is an earlier acquisition: its status must be done")
        seeded = [k for k in ("cover_labels", "plan_error", "coverage_fault", "mid_sax", "heart_shim",
                              "mapping_fault") if getattr(self, k)]
        if self.optional and seeded:
            # a row's seeded draws come from the episode's shared stream: were they made only when the row is
            # present, every later draw would depend on which optional rows the episode lists
            raise ValueError(f"an optional row cannot take seeded geometry or faults ({', '.join(seeded)})")
        if (self.mid_sax or self.mapping_fault) and self.protocol not in MR_MAPPING_PROTOCOLS:
            raise ValueError(f"mid_sax / mapping_fault apply to a mapping row ({', '.join(MR_MAPPING_PROTOCOLS)}), "
                             f"not {self.protocol}")
        return self


class MRViewportSpec(_Spec):
    """What one viewport shows at the start: an image of the series of a row (1-based card queue index)
    or of a series by uid."""

    row: int | None = Field(None, ge=1)
    series: int | None = Field(None, ge=1)
    image: int | None = Field(None, ge=1)
    graphics_mode: GraphicsMode | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "MRViewportSpec":
        if (self.row is None) == (self.series is None):
            raise ValueError("a viewport shows either a row's series (row) or a series (series): give exactly one")
        return self


class MRLayoutSpec(_Spec):
    """The viewer at the start: layout, contents (null = empty), active viewport (1-based), graphics."""

    layout: Literal["1x1", "1x2", "2x2"] | None = None
    viewports: list[MRViewportSpec | None] | None = Field(None, max_length=4)
    active: int | None = Field(None, ge=1, le=4)
    graphics_mode: GraphicsMode | None = None
    shim_box_visible: bool | None = None


class MRInitialState(ConsoleInputs):
    """What the MR console starts with (consoles/mr/model.py: MRModel.__init__)."""

    queue: list[MRQueueRow] | None = None
    open: int | None = Field(None, ge=1, description="1-based index of the card's queue row opened at the start")
    layout: MRLayoutSpec | None = None
    autoload_localizer: bool | None = None
    labels_hidden: bool | None = None
    ecg_signal: bool | None = None
    pulse_signal: bool | None = None
    field_t: Literal[1.5, 3.0] | None = None
    landmark: Literal["heart", "liver", "kidneys"] | None = None
    indication: str | None = Field(None, min_length=3)
    prior_clipped: bool | None = Field(None, description="a done row fitted to organs (cover_labels) leaves one "
                                       "organ end outside its FOV (seeded end); perturbations.prior_clipped "
                                       "draws it per seed instead")
    library_mapping_fault: bool | None = Field(None, description="the library's mapping protocols carry the "
                                               "seeded perturbations.mapping_fault: every mapping row added during "
                                               "the session gets it (an empty-queue task's fault)")
    library_plan_error: bool | None = Field(None, description="the library's mapping protocols carry a plan saved "
                                            "on another patient: every mapping row added during the session "
                                            "starts tilted by perturbations.plan_tilt_deg and shifted by "
                                            "plan_shift_mm (seeded directions, one per protocol and episode)")

    @model_validator(mode="after")
    def _rows_exist(self) -> "MRInitialState":
        n = len(self.queue) if self.queue is not None else 4  # the console's default queue has 4 rows
        refs = [("open", self.open)] + [(f"layout.viewports[{i}].row", v.row) for i, v in
                                          enumerate((self.layout.viewports or []) if self.layout else []) if v]
        for where, k in refs:
            if k is not None and k > n:
                raise ValueError(f"{where} = {k}, but the queue has {n} rows")
            if k is not None and self.queue is not None and self.queue[k - 1].optional:
                raise ValueError(f"{where} = {k} names an optional row, which half the episodes do not have")
        if self.queue is not None and any(r.optional for r in self.queue) and self.layout is not None and \
                any(v is not None and v.series is not None for v in self.layout.viewports or []):
            raise ValueError("layout.viewports name a series by uid, but optional rows move series uids: name "
                             "the row instead")
        if self.queue is not None and sum(r.status == "running" for r in self.queue) > 1:
            raise ValueError("at most one queue row can be running")
        if self.queue is not None and sum(bool(r.coverage_fault) for r in self.queue) > 1:
            raise ValueError("at most one queue row carries the seeded coverage fault")
        if self.queue is not None and sum(bool(r.stop_fault) for r in self.queue) > 1:
            raise ValueError("at most one queue row stops with a fault")
        return self


# the numeric parameters a seeded coverage fault may spoil (MRModel._apply_coverage_fault)
MRCoverageFault = Literal["n_slices", "thickness_mm", "fov_phase_mm"]


def _permutation_of_1_to_3(v: list[int]) -> list[int]:
    if sorted(v) != [1, 2, 3]:
        raise ValueError(f"localizer_order option {v} is not an order of the localizer's images 1, 2, 3")
    return v


class MRPerturbations(ConsoleInputs):
    """Seeded perturbations the MR console draws (MRModel.__init__). Lists of options are drawn balanced
    over the seeds of a subject (every block of len(options) seeds takes each option once); ranges
    uniformly."""

    heart_rate_bpm: Range | None = None
    landmark_shift_mm: Range | None = Field(None, description="craniocaudal offset (mm, + head) of the landmark the "
                                            "technologist set on the patient from the nominal level: several cm")
    landmark_shift_abs_mm: Range | None = None
    shuffle_rows: list[Annotated[int, Field(ge=1)]] | None = Field(None, min_length=2)
    indication: list[Annotated[str, Field(min_length=3)]] | None = Field(None, min_length=2)
    ecg_signal: list[bool] | None = Field(None, min_length=2)
    scanner_busy: list[bool] | None = Field(None, min_length=2)
    running_remaining_s: Range | None = None
    prior_clipped: list[bool] | None = Field(None, min_length=2)
    prior_clip_mm: Range | None = None
    localizer_order: list[list[int]] | None = Field(None, min_length=1)
    plan_tilt_deg: Range | None = Field(None, description="magnitude of the tilt seeded into plan_error rows")
    plan_shift_mm: Range | None = Field(None, description="magnitude of the shift seeded into plan_error rows")
    coverage_fault: list[MRCoverageFault] | None = Field(None, min_length=2, description="the parameter a "
                                                          "coverage_fault row gets wrong, balanced over seeds")
    mapping_fault: list[MRMappingFault] | None = Field(None, min_length=2, description="the fault seeded into "
                                                        "mapping_fault rows, balanced over seeds (include none)")
    stop_fault_fraction: Range | None = Field(None, description="share of the stop_fault row's scan time after "
                                              "which it stops")
    # ---- issue 21 (MR judgements and mapping): appended fields ----
    # Ranges the MR mapping cards draw (issue 21, the real-world variation they follow):
    # - heart_rate_bpm [50, 100]: adult resting heart rate (AHA normal 60-100 bpm; 50-60 common in fit or
    #   beta-blocked CMR patients). The trigger delay that puts the shot in diastasis moves from ~690 ms at
    #   50 bpm to ~330 ms at 100 bpm (rendering.mr_mapping's cardiac cycle), so the typed delay must follow it.
    # - landmark_shift_mm [-25, 25]: where the radiographer's laser landmark (sternum / nipple line) puts the
    #   isocentre relative to the heart, +-2-3 cm craniocaudally between patients and operators; the localizer
    #   and a new row's plan start at the isocentre, so the heart sits elsewhere on screen and in mm.
    # - plan_tilt_deg [14, 25] on unplanned mapping rows (from_boot): the protocol's stored geometry comes from
    #   the last patient, whose long axis is 15-25 deg off this one's (inter-patient LV axis spread).
    cohort_balanced: list[Literal["ecg_signal", "scanner_busy", "prior_clipped", "localizer_order", "indication",
                                  "mapping_fault", "stop_fault", "copied_params"]] | None = Field(
        None, min_length=1, description="option keys drawn balanced over subjects as well as seeds "
        "(consoles/common/balance.cohort_balanced_choice): option (subject index + seed) mod n, in the card's "
        "order, so "
        "each subject's seeds 0-2 see more than one answer, the cohort sees each option equally often and dev "
        "(index 0) seed 0 takes the first option, never a majority")
    copied_params: list[dict[str, float | str]] | None = Field(
        None, min_length=2, description="parameter sets the initial queue's mapping rows were copied with from "
        "another exam (one set per episode, balanced over seeds; over the card's row params): which parameters "
        "are wrong for this patient varies, so a script that fixes one episode's leaves another's standing")
    # ---- issue 21: how far a seeded mapping fault is off (MRModel._draw_fault_amounts) ----
    shim_fault_offset_mm: Range | None = Field(None, description="a shim_off_heart fault's shim box this far (mm) "
                                               "from the slice centre, in a seeded in-plane direction (default "
                                               "120 mm along read)")
    basal_fault_share: Range | None = Field(None, description="a basal_slice fault moves the slice this share of "
                                            "the LV's length towards the base (default 0.3)")
    # ---- issue 21: a coverage_fault row's slab (MRModel._seed_slab_variant) ----
    # The renal cards' ranges: slab_thickness_mm [2.5, 9] spans sites' coronal single-shot T2 (HASTE / SSFSE)
    # kidney protocols, from thin 2.5-3 mm cyst work to 8-9 mm survey slabs (4-6 mm most often); slab_gap_share
    # [0, 0.3] their 0-30 % gaps; slab_margin_mm [10, 25] the slab a site's slice count leaves on each side of the
    # kidneys (breathing, adrenals). The slice count, and so the thickness to type, moves by a factor ~4 with them.
    # isocentre_ap_mm [-30, 30] on the recovery card: the isocentre is the bore's centre, a fixed height above the
    # table, while the body's A/P middle lies half the body's thickness (adult abdomen 18-32 cm A/P) plus the spine
    # coil and pads above it: +-3 cm between patients.
    slab_thickness_mm: Range | None = Field(None, description="the coverage_fault row's slice thickness (mm, 0.5 mm "
                                            "steps): the site's protocol variant, its slice count fitted to it")
    slab_gap_share: Range | None = Field(None, description="the coverage_fault row's gap as a share of its thickness")
    fault_slab_share: Range | None = Field(None, description="the spoilt slab's length as a share of the organs' "
                                           "A/P extent (default 0.6)")
    slab_margin_mm: Range | None = Field(None, description="the coverage_fault row's slab, before the fault, holds "
                                         "the organs with this margin (mm) on each side (default 15): the site's "
                                         "slice count for its variant (1-3.5 cm: breathing, adrenals)")
    # ---- issue 21: patient positioning (MRModel._isocentre_offset; signed ranges, uniform) ----
    # Most cards draw the A/P offset over +-20 mm; L4_heart_shim_box (1.3.0) over +-40 mm. An MR table does not
    # rise inside the bore: the patient's back rests at the tabletop's fixed height under the isocentre, so the
    # chest's A/P middle sits half the chest depth (plus the posterior pads) above it. Adult chest depths of
    # about 18-30 cm and 0-2 cm of pads move that middle some +-3-4 cm against the isocentre (an estimate from
    # the depth range, not a published distribution; drawn independently of the subject's own depth, a stated
    # simplification). On that card the cine stack's phase direction is mostly F/H (0.87 F/H, 0.38 L/R, 0.32
    # A/P), so at +-20 mm the heart centre's phase position moved only 1.9x its tolerance over the shortcut
    # sample; at +-40 mm it moves 2.2x there (3.6x over the cohort).
    isocentre_lr_mm: Range | None = Field(None, description="isocentre left(+)/right of the body midline (mm): "
                                          "patients lie off the table's centre line by up to 2-3 cm")
    isocentre_ap_mm: Range | None = Field(None, description="isocentre posterior(+)/anterior of the body's A/P "
                                          "middle (mm): bore height, body size and pads, about +-2-3 cm (+-4 cm "
                                          "on the shim-box card)")

    @field_validator("mapping_fault")
    @classmethod
    def _faults_with_none(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and "none" not in v:
            raise ValueError("mapping_fault options must include none (seeds without a fault), so that always "
                             "changing something is not a policy that passes")
        return v

    @field_validator("stop_fault_fraction")
    @classmethod
    def _fraction(cls, v: Range | None) -> Range | None:
        v = None if v is None else _range(0.0)(v)
        if v is not None and not (0.0 < v[0] and v[1] < 1.0):
            raise ValueError("stop_fault_fraction lies strictly between 0 and 1")
        return v

    @field_validator("landmark_shift_mm", "isocentre_lr_mm", "isocentre_ap_mm")
    @classmethod
    def _signed(cls, v: Range | None) -> Range | None:
        return None if v is None else _range()(v)

    @field_validator("heart_rate_bpm", "landmark_shift_abs_mm", "running_remaining_s", "prior_clip_mm",
                     "plan_tilt_deg", "plan_shift_mm", "shim_fault_offset_mm", "basal_fault_share",
                     "slab_thickness_mm", "slab_gap_share", "fault_slab_share", "slab_margin_mm")
    @classmethod
    def _magnitude(cls, v: Range | None) -> Range | None:
        return None if v is None else _range(0.0)(v)

    @field_validator("shuffle_rows")
    @classmethod
    def _distinct_rows(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and len(set(v)) != len(v):
            raise ValueError(f"shuffle_rows {v} names a row twice")
        return v

    @field_validator("localizer_order")
    @classmethod
    def _orders(cls, v: list[list[int]] | None) -> list[list[int]] | None:
        return None if v is None else [_permutation_of_1_to_3(o) for o in v]

    @field_validator("ecg_signal", "scanner_busy", "prior_clipped")
    @classmethod
    def _both_ways(cls, v: list[bool] | None) -> list[bool] | None:
        if v is not None and len(set(v)) < 2:
            raise ValueError(f"options {v} never vary: a balanced draw needs both true and false")
        return v


# Ultrasound console values a card may name (consoles/us/model.py, rendering/us_physics.py; card.py imports
# nothing of ours, so tests/tasks/test_us_card.py checks these equal the console's own tuples).
US_PRESETS = ("Abdomen", "Renal", "Bladder")
US_FREQUENCIES_MHZ = (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)
US_GREY_MAPS = ("A", "B", "C", "D")
US_DARK_CAUSES = ("none", "contact", "gain")
US_CONTACT_FAULTS = ("lifted", "no_gel_left", "no_gel_right", "no_gel")
USKidney = Literal["left", "right"]
USPreset = Literal["Abdomen", "Renal", "Bladder"]
USGreyMap = Literal["A", "B", "C", "D"]
# numeric controls a card may set (USModel PARAMETERS outside the probe pose) and the choice grey_map
US_CONTROL_NAMES = ("depth_cm", "focus_cm", "frequency_mhz", "gain", "dynamic_range_db",
                    *(f"tgc_{i}" for i in range(1, 9)))


class USPose(_Spec):
    """A probe pose (rendering/us_image.py ProbePose): footprint height and azimuth around the body, rotation
    about the beam, tilt (fan), rock (heel-toe), pressure 0-1."""

    z_mm: float | None = None
    azimuth_deg: float | None = Field(None, ge=-135, le=135)
    rotation_deg: float | None = Field(None, ge=0, lt=360)
    tilt_deg: float | None = Field(None, ge=-45, le=45)
    rock_deg: float | None = Field(None, ge=-30, le=30)
    pressure: float | None = Field(None, ge=0, le=1)


class USInitialState(ConsoleInputs):
    """What the ultrasound console starts with (consoles/us/model.py: USModel.__init__).

    `kidney`: the kidney the exam is about (or drawn per seed: perturbations.kidney); `aim`: start on that kidney's long-axis view through the hilum
    ("long_axis") or turned 90 deg from it ("transverse"), computed per subject; `pose` fields override the
    aimed (or default) pose; `controls`: control values by parameter name (after the preset loads)."""

    preset: USPreset | None = None
    kidney: USKidney | None = None
    aim: Literal["long_axis", "transverse"] | None = None
    pose: USPose | None = None
    controls: dict[str, float | str] | None = None
    frozen: bool | None = None

    @field_validator("controls")
    @classmethod
    def _known_controls(cls, v: dict[str, float | str] | None) -> dict[str, float | str] | None:
        for name, value in (v or {}).items():
            if name == "grey_map":
                if value not in US_GREY_MAPS:
                    raise ValueError(f"controls.grey_map {value!r} is not one of {list(US_GREY_MAPS)}")
            elif name not in US_CONTROL_NAMES:
                raise ValueError(f"unknown control {name!r}; known: {list(US_CONTROL_NAMES) + ['grey_map']} "
                                 "(the probe is set under 'pose', the preset under 'preset')")
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"controls.{name} must be a number, not {value!r}")
            elif name == "frequency_mhz" and value not in US_FREQUENCIES_MHZ:
                raise ValueError(f"controls.frequency_mhz {value} is not one of the probe's {list(US_FREQUENCIES_MHZ)}")
        return v


RangeOrRanges = Union[Range, list[Range]]


def _ranges(v: RangeOrRanges | None) -> RangeOrRanges | None:
    if v is None:
        return None
    if isinstance(v, list):
        if len(v) < 2:
            raise ValueError("a list of ranges is drawn balanced over seeds: give at least two")
        return [_range()(r) for r in v]
    return _range()(v)


class USPerturbations(ConsoleInputs):
    """Seeded perturbations the ultrasound console draws (USModel.__init__), in a fixed order.

    Probe offsets: `probe_z_mm` / `probe_z_abs_mm` (a magnitude with a random sign) and the angle ranges are
    added to the starting pose. Controls `gain`, `depth_cm`, `focus_cm`, `dynamic_range_db`: one [lo, hi]
    range drawn uniformly, or a list of ranges of which each seed takes one, balanced over the seeds of a
    subject (e.g. a gain too low or too high; `gain_band_follows` pairs the gain's range with another
    key's). Lists of options (`kidney`, `preset`, `frequency_mhz`,
    `grey_map`, `dark_cause`) are drawn balanced over seeds (`dark_cause` over the cohort too); when the dark
    cause is contact, `contact_fault`'s kind (gel missing | `lifted`, the probe held too lightly) is balanced
    over the cohort under it (consoles.common.balance, nested) and the gel fault drawn uniformly among the
    card's (then `lifted_pressure` or `dry_fraction`); `low_gain` when the cause is gain."""

    probe_z_mm: Range | None = None
    probe_z_abs_mm: Range | None = None
    probe_azimuth_deg: Range | None = None
    probe_rotation_deg: Range | None = None
    probe_tilt_deg: Range | None = None
    probe_rock_deg: Range | None = None
    kidney: list[USKidney] | None = Field(None, min_length=2)
    preset: list[USPreset] | None = Field(None, min_length=1)
    gain: RangeOrRanges | None = None
    depth_cm: RangeOrRanges | None = None
    focus_cm: RangeOrRanges | None = None
    dynamic_range_db: RangeOrRanges | None = None
    frequency_mhz: list[float] | None = Field(None, min_length=1)
    grey_map: list[USGreyMap] | None = Field(None, min_length=1)
    dark_cause: list[Literal["none", "contact", "gain"]] | None = Field(None, min_length=1)
    contact_fault: list[Literal["lifted", "no_gel_left", "no_gel_right", "no_gel"]] | None = Field(None, min_length=1)
    lifted_pressure: Range | None = None
    dry_fraction: Range | None = None
    low_gain: Range | None = None
    # ---- issue 21: where the patient lies and how the last exam left the console (drawn from their own
    # seeded stream, "placement", so the draws above are unchanged)
    patient_z_mm: Range | None = Field(None, description=(
        "Craniocaudal offset of the patient along the bed, mm, added to the probe height the console shows "
        "(the bed tracker's frame). Where an adult lies on a couch varies by several cm between exams; "
        "the tracker's origin is fixed to the couch and a patient may lie anywhere along it: +-150 mm."))
    patient_roll_deg: Range | None = Field(None, description=(
        "Roll of the patient about the body's long axis, deg (+: the left side up, so the left flank turns "
        "towards the ceiling; the probe's position around the body is shown as body angle - roll): renal "
        "scans are done supine and in posterior-oblique positions (a wedge under one side rolls the "
        "patient 15-45 deg; the left kidney from a right posterior oblique) and in the lateral decubitus "
        "position (90 deg: the patient on the other side, the kidney's flank up), so the flank window lies "
        "at another bed angle."))
    patient_yaw_deg: RangeOrRanges | None = Field(None, description=(
        "Turn of the patient on the bed about its vertical, deg (+: the head towards the bed's left), read by "
        "the probe's rotation field, which is measured from the bed's head direction on the skin "
        "(consoles/us/bed.py): a patient in a lateral decubitus or oblique position on a wedge lies "
        "obliquely on the couch rather than along its edge, by an assumed 10-30 deg either way (a "
        "judgement, not a published figure). A list of ranges: one per seed, balanced."))
    aim_window_deg: RangeOrRanges | None = Field(None, description=(
        "The acoustic window of a task that starts on a kidney: its long-axis plane turned this much about "
        "the kidney's axis (+ anterior, through the liver or spleen; - posterior, through the back "
        "muscles). Sonographers use posterolateral to anterolateral flank windows (about -30..+45 deg "
        "around the coronal plane); the kidney then lies at depths from about 4 to 15 cm. A list of ranges: "
        "one per seed, balanced."))
    gain_band_follows: Literal["tgc_offset_db"] | None = Field(None, description=(
        "With `gain` and the named key both lists of ranges of one length: the seed's gain range is the one at "
        "the place of that key's range (not drawn on its own), so the start's errors add up and never cancel "
        "(pots left pulled down with a gain left low, pushed up with a gain left high): a start gain that "
        "happened to make up for the pots would already show the kidney right, and a task that asks to set "
        "it up would have nothing to do."))
    tgc_offset_db: RangeOrRanges | None = Field(None, description=(
        "dB added to every TGC pot at the start (the pots as the previous exam left them, within the pots' "
        "+-20 dB), so the gain that shows the kidney at mid grey differs between episodes. A list of "
        "ranges: one per seed, balanced (e.g. pots left pulled down or pushed up)."))

    aim_rotation_deg: RangeOrRanges | None = Field(None, description=(
        "A task that starts on a kidney: the probe turned this much about its beam from the aimed view, deg "
        "(drawn after the keys above, from the placement stream). A list of ranges: one per seed, balanced; "
        "e.g. [[-3, 3], [177, 183]]: the probe held as the convention wants it (marker to the patient's "
        "head) or turned round (marker to the feet: the same plane, the image mirrored), as a previous "
        "user may leave it. Abdominal longitudinal images are shown cephalad on the screen's left by "
        "convention (the upper pole on the left, the probe marker to the head); an image the other way "
        "round is read with the poles swapped."))

    @field_validator("patient_z_mm", "patient_roll_deg")
    @classmethod
    def _placement(cls, v: Range | None) -> Range | None:
        return None if v is None else _range()(v)

    @field_validator("aim_window_deg", "tgc_offset_db", "patient_yaw_deg", "aim_rotation_deg")
    @classmethod
    def _windows(cls, v: RangeOrRanges | None) -> RangeOrRanges | None:
        return _ranges(v)

    @field_validator("probe_z_mm", "probe_azimuth_deg", "probe_rotation_deg", "probe_tilt_deg", "probe_rock_deg")
    @classmethod
    def _signed(cls, v: Range | None) -> Range | None:
        return None if v is None else _range()(v)

    @field_validator("probe_z_abs_mm")
    @classmethod
    def _magnitude(cls, v: Range | None) -> Range | None:
        return None if v is None else _range(0.0)(v)

    @field_validator("gain", "depth_cm", "focus_cm", "dynamic_range_db")
    @classmethod
    def _control_ranges(cls, v: RangeOrRanges | None) -> RangeOrRanges | None:
        return _ranges(v)

    @field_validator("lifted_pressure", "dry_fraction")
    @classmethod
    def _fractions(cls, v: Range | None) -> Range | None:
        if v is not None and (min(v) < 0 or max(v) > 1):
            raise ValueError(f"range {list(v)} must lie in [0, 1]")
        return None if v is None else _range()(v)

    @field_validator("low_gain")
    @classmethod
    def _gain(cls, v: Range | None) -> Range | None:
        if v is not None and (min(v) < 0 or max(v) > 100):
            raise ValueError(f"range {list(v)} must lie in the gain's 0-100")
        return None if v is None else _range()(v)

    @field_validator("frequency_mhz")
    @classmethod
    def _frequencies(cls, v: list[float] | None) -> list[float] | None:
        bad = [f for f in (v or []) if f not in US_FREQUENCIES_MHZ]
        if bad:
            raise ValueError(f"frequencies {bad} are not among the probe's {list(US_FREQUENCIES_MHZ)}")
        return v


# ---- the card -----------------------------------------------------------------------------------
class TaskCard(BaseModel):
    """One task card; the common fields of every modality's card.

    ``TaskCard(**fields)`` and ``TaskCard.model_validate(data)`` build the card class of the given
    modality (CTCard, MRCard, USCard). `source` is the file the card was read from (None for a card
    built or edited in memory); the runner never uses it to find the card: it writes the card it holds.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(..., pattern=r"^[A-Za-z0-9_]+$")
    version: str
    modality: Modality
    level: int = Field(..., ge=0, le=6)
    title: str
    goal: str = Field(..., min_length=10)
    budgets: Budgets
    observation: ObservationProfile = Field(default_factory=ObservationProfile)
    action_profile: ActionProfile = Field(default_factory=ActionProfile)
    initial_state: ConsoleInputs = Field(default_factory=ConsoleInputs)
    perturbations: ConsoleInputs = Field(default_factory=ConsoleInputs)
    oracle: str = Field(..., description="name of the oracle family in scoring.oracles")
    workflow_stages: list[str] = Field(default_factory=list)

    _source: Path | None = PrivateAttr(default=None)
    _by_modality: ClassVar[dict[str, type["TaskCard"]]] = {}

    def __new__(cls, *args: Any, **data: Any) -> "TaskCard":
        # The base class dispatches on modality so TaskCard(modality="ct", ...) is a CTCard.
        if cls is TaskCard:
            cls = TaskCard._by_modality.get(data.get("modality"), TaskCard)
        return super().__new__(cls)

    @classmethod
    def model_validate(cls, obj: Any, **kw: Any) -> "TaskCard":  # type: ignore[override]
        """Validate `obj` into the card class of its modality (when called on TaskCard itself)."""
        if cls is TaskCard:
            return CARD_ADAPTER.validate_python(obj, **kw)
        return super().model_validate(obj, **kw)

    @property
    def source(self) -> Path | None:
        """The task.json this card was read from, or None if it was built or edited in memory."""
        return self._source

    @property
    def path(self) -> Path:
        """The file this card was read from; an error for a card built or edited in memory."""
        if self._source is None:
            raise TaskCardError(f"task card {self.id!r} was built or edited in memory and has no file; "
                                "write it with write_card() to hand it to a console")
        return self._source

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> "TaskCard":
        """A copy; an edited copy (`update`) no longer claims the source file of the original."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy._source = None
        return copy

    def __eq__(self, other: object) -> bool:
        # a card is its content: where it was read from does not make it another card
        if not isinstance(other, TaskCard):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def to_json(self) -> str:
        """The card as JSON text (what write_card writes; reads back equal)."""
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"


class CTCard(TaskCard):
    """A CT task card."""

    modality: Literal["ct"]
    initial_state: CTInitialState = Field(default_factory=CTInitialState)
    perturbations: CTPerturbations = Field(default_factory=CTPerturbations)


class MRCard(TaskCard):
    """An MR task card."""

    modality: Literal["mr"]
    initial_state: MRInitialState = Field(default_factory=MRInitialState)
    perturbations: MRPerturbations = Field(default_factory=MRPerturbations)

    @model_validator(mode="after")
    def _shuffled_rows_present(self) -> "MRCard":
        queue = self.initial_state.queue
        for k in self.perturbations.shuffle_rows or ():
            if queue is not None and k <= len(queue) and queue[k - 1].optional:
                raise ValueError(f"perturbations.shuffle_rows names row {k}, an optional row (absent in half the "
                                 "episodes): shuffle rows every episode has")
        return self

    @model_validator(mode="after")
    def _library_fault_drawn(self) -> "MRCard":
        if self.initial_state.library_mapping_fault:
            faults = self.perturbations.mapping_fault
            if faults is None:
                raise ValueError("initial_state.library_mapping_fault needs perturbations.mapping_fault to draw "
                                 "the fault")
            if "basal_slice" in faults:
                raise ValueError("perturbations.mapping_fault: basal_slice cannot live in the library (the agent "
                                 "plans an added row's slice itself); use shim_off_heart, window_exceeds_rr, "
                                 "untriggered or none")
        if self.initial_state.library_plan_error and self.perturbations.plan_tilt_deg is None:
            raise ValueError("initial_state.library_plan_error needs perturbations.plan_tilt_deg to draw the "
                             "saved plan's tilt")
        return self


class USCard(TaskCard):
    """An ultrasound task card."""

    modality: Literal["us"]
    initial_state: USInitialState = Field(default_factory=USInitialState)
    perturbations: USPerturbations = Field(default_factory=USPerturbations)

    @model_validator(mode="after")
    def _one_kidney(self) -> "USCard":
        fixed, drawn = self.initial_state.kidney, self.perturbations.kidney
        if fixed is not None and drawn is not None:
            raise ValueError("initial_state.kidney and perturbations.kidney both name the kidney: give one")
        if self.initial_state.aim is not None and fixed is None and drawn is None:
            raise ValueError("initial_state.aim starts on a kidney: name it (initial_state.kidney) or draw it "
                             "(perturbations.kidney)")
        return self


TaskCard._by_modality.update({"ct": CTCard, "mr": MRCard, "us": USCard})
AnyCard = Annotated[Union[CTCard, MRCard, USCard], Field(discriminator="modality")]
CARD_ADAPTER: TypeAdapter = TypeAdapter(AnyCard)


# ---- validation and loading ----------------------------------------------------------------------
def _describe(exc: ValidationError) -> str:
    """One line per problem: the dotted field path and what is wrong (unknown keys named as such)."""
    problems = []
    for e in exc.errors():
        loc = [str(p) for p in e["loc"]]
        if loc and loc[0] in MODALITIES:  # the union's tag: not a field of the card
            loc = loc[1:]
        if e["type"] == "extra_forbidden" and loc:
            where = ".".join(loc[:-1]) or "the card"
            problems.append(f"unknown key {loc[-1]!r} in {where}")
        elif e["type"] == "union_tag_invalid":
            problems.append(f"modality: {e['input']!r} is not one of {list(MODALITIES)}")
        else:
            problems.append(f"{'.'.join(loc) or '<root>'}: {e['msg']}")
    return "; ".join(problems)


def parse_card(data: Any, where: str = "<memory>") -> TaskCard:
    """Validate card data (a dict, or a card) into the card class of its modality."""
    if isinstance(data, TaskCard):
        data = data.model_dump(mode="json", warnings=False)
    try:
        return CARD_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise TaskCardError(f"task card {where} is invalid: {_describe(exc)}") from exc


def load_card_file(path: Path) -> TaskCard:
    """Load and validate one card file; errors name the file and the field.

    A shipped card (task.json) must sit in a folder named after its id; any other file name (e.g. an
    episode's card.json) may sit anywhere.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise TaskCardError(f"task card not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise TaskCardError(f"task card {path} is not valid JSON: {exc}") from exc
    card = parse_card(data, str(path))
    if path.name == SHIPPED_CARD_NAME and card.id != path.parent.name:
        raise TaskCardError(f"task card {path}: id {card.id!r} does not match its folder name")
    card._source = path
    return card


def write_card(card: TaskCard, path: Path) -> TaskCard:
    """Validate `card` (it may have been edited in memory) and write it to `path` atomically.

    Returns the validated card as read from `path`: what a console given that file runs.
    """
    checked = parse_card(card, f"{card.id!r} (in memory)")
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(checked.to_json())
    os.replace(tmp, path)
    checked._source = path
    return checked


def tasks_root() -> Path:
    """Folder holding the shipped task cards (package data of `tasks`)."""
    return Path(str(resources.files("tasks")))


def shipped_card_path(root: Path, modality: str, task_id: str) -> Path:
    """Where the card `task_id` of `modality` lives under a tasks folder."""
    return Path(root) / modality / task_id / SHIPPED_CARD_NAME


def cards_in(root: Path) -> tuple[TaskCard, ...]:
    """Every card under a tasks folder (<root>/<modality>/<id>/task.json), sorted by modality then id."""
    cards = [load_card_file(p) for p in sorted(Path(root).glob(f"*/*/{SHIPPED_CARD_NAME}"))]
    for c in cards:
        if c.source is not None and c.source.parent.parent.name != c.modality:
            raise TaskCardError(f"task card {c.source}: modality {c.modality!r} does not match its folder "
                                f"{c.source.parent.parent.name!r}")
    return tuple(sorted(cards, key=lambda c: (c.modality, c.id)))


@lru_cache(maxsize=None)
def all_cards() -> tuple[TaskCard, ...]:
    """Every shipped card, sorted by modality then id."""
    return cards_in(tasks_root())


def load_card(task_id: str) -> TaskCard:
    """The shipped card with this id."""
    for card in all_cards():
        if card.id == task_id:
            return card
    known = ", ".join(c.id for c in all_cards())
    raise TaskCardError(f"unknown task {task_id!r}; known tasks: {known}")


def console_card(task: str) -> dict[str, Any]:
    """The validated card of `task` (a task id or a path to a card file, a console's --task) as JSON
    data: what the runner hands a console (`reset`'s card, and --card-json), so that the console
    process never imports pydantic."""
    card = load_card_file(Path(task)) if task.endswith(".json") else load_card(task)
    return card.model_dump(mode="json")


def console_card_json(task: str) -> str:
    """console_card(task) as compact JSON text (the console's --card-json)."""
    return json.dumps(console_card(task), separators=(",", ":"))


def select_cards(spec: str) -> list[TaskCard]:
    """Resolve a --tasks value: 'all', a modality ('ct', 'mr', 'us') or comma-separated ids."""
    cards = list(all_cards())
    if spec == "all":
        return cards
    if spec in MODALITIES:
        chosen = [c for c in cards if c.modality == spec]
        if not chosen:
            raise TaskCardError(f"no tasks exist yet for modality {spec!r}")
        return chosen
    return [load_card(t.strip()) for t in spec.split(",") if t.strip()]
