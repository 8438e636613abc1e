"""Ultrasound console model: probe pose, controls, live/frozen B-mode, calipers, annotation, exam strip; no Qt.

- Probe: a ProbePose on the body surface (rendering.us_image): height z along the body and azimuth around it,
  rotation about the beam (marker to the head at 0), tilt/fan, rock/heel-toe, and pressure; the image
  plane follows (ProbeGeometry: footprint, beam axis, plane pose in the subject frame, dumped for oracles).
  The rotation field holds whole degrees 0-359 of the bed frame (`shown_rotation_deg`) and keeps them while
  the footprint moves; the subject-frame rotation is derived from it (issue 34: a field never changes by
  itself). Every edit leaves a one-line status; a value the console adjusts is named with what it became and
  the setting that limits it; depth, focus and gain also step by their console increment (`step_param`).
- Controls: declared Parameters (depth and focus in cm, gain 0-100, frequency in MHz, dynamic range, 8 TGC
  pots) and choices (preset, grey map, spatial compounding: "Compound" Off or the number of steered looks,
  rendering.us_physics.COMPOUND_LOOKS, on in every preset), clamped; acquisition controls and the pose are
  refused while frozen, display controls (dynamic range, grey map) re-map a frozen image without touching the
  acquisition.
- Frames: `frame()` forms the image when the pose, an acquisition control or the coupling changed (cached
  otherwise); frozen, it returns the frozen acquisition under the current display controls.
- Calipers (image mm: x right of the centre line, y down from the footprint), click-click on a frozen image;
  annotations (allowlisted characters); Save image / Save clip record what an oracle needs into the exam
  strip (pose, plane, controls, calipers with lengths and subject-frame end points, annotations).
- Tasks: the card names the kidney of the exam (or it is drawn per seed) and may start the probe on it
  (`aim`: its long-axis view through the hilum, or turned 90 deg to a transverse one), a pose found from the
  subject's labels alone (consoles/us/aim.py; cached per subject); the dump's "exam" names the kidney and its
  "start" records the pose, controls and coupling the session began with, so oracles see what changed.
- Bed frame (issue 21): the probe's height and position around the body are shown and typed as a bed
  tracker reads them, with the patient lying a seeded `patient_z_mm` along the bed and rolled
  `patient_roll_deg` and turned `patient_yaw_deg` on it (consoles/us/bed.py: the rotation is read from the
  bed's head direction); the dump's "pose" stays in the subject frame, "probe_display" is what the fields show
  and "patient" records the placement, the acoustic window the task starts in and the TGC offset (drawn
  from their own "placement" stream, so the older draws below are unchanged).
- Seeded perturbations (PerturbationDraws, order fixed: append only): the starting pose offsets, control
  values a card asks to draw (a range, or a list of ranges one of which each seed takes, balanced; the
  gain's, with `gain_band_follows`, at the place of the TGC pots' range, so a start gain never makes up for
  the pots and the start is always off), options
  drawn balanced over the seeds of a subject (kidney, preset, frequency, grey map), and the L6 dark-image
  cause, balanced over each subject's seeds and over the cohort by the rule MR's judgements use too
  (consoles.common.balance.cohort_balanced_choice; "contact": a lifted probe or missing gel, "gain": a low
  gain), so that neither "raise the gain" nor "fix the contact" passes more than half.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from consoles.common.balance import balanced_choice, cohort_balanced_choice
from consoles.common.model_base import ConsoleActionError, ConsoleModelBase, PerturbationDraws, Rule
from consoles.common.numeric import format_number, range_text
from consoles.common.params import Parameter
from consoles.us import aim, bed
from consoles.us.contact import CONTACT_FAULTS, Coupling
from rendering import us_image as U
from rendering import us_physics as P
from rendering.seeding import seeded_rng

__all__ = ["USModel", "ConsoleActionError", "PARAMETERS", "PARAM", "CHOICES", "COMPOUND_OPTIONS", "compound_looks",
           "compound_option", "ANNOTATION_CHARS", "Caliper",
           "Annotation", "SavedItem", "DEFAULT_POSE", "FIELD_LABELS", "STEPPED", "shown_text"]

ANNOTATION_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,:;-_/()+#%'")
MAX_ANNOTATION_CHARS = 40
MAX_ANNOTATIONS = 8
MAX_CALIPERS = 4
MAX_SAVED = 64
CLIP_SECONDS = (1.0, 10.0)
DEFAULT_CLIP_S = 3.0
Z_MARGIN_MM = 40.0  # the footprint stays this far inside the subject's grid along z
DEFAULT_POSE = U.ProbePose(z_mm=-280.0, azimuth_deg=0.0, rotation_deg=0.0, tilt_deg=0.0, rock_deg=0.0,
                           pressure=0.6)
DEFAULT_PRESET = "Abdomen"
DARK_CAUSES = ("none", "contact", "gain")
KIDNEY_SIDES = ("left", "right")
# Views a task may start on (initial state "aim"): the probe turned this much about its beam from the
# kidney's long-axis view through the hilum (consoles/us/aim.py).
AIM_VIEWS: dict[str, float] = {"long_axis": 0.0, "transverse": 90.0}
AIM_PRESSURE = 0.85  # a firm hold: on the convex flank the array's edges lift below about 0.8


_KIDNEYS: dict[tuple, tuple[Any, tuple]] = {}


def _kidney(subject: Any, side: str) -> tuple:
    """(centre, long axis, hilum) of a kidney from the subject's labels (cached per label volume: every
    episode on a subject starts from it)."""
    key = (id(subject.labels), subject.id, side)
    hit = _KIDNEYS.get(key)
    if hit is None or hit[0] is not subject.labels:  # an id reused by another volume
        if len(_KIDNEYS) > 64:
            _KIDNEYS.clear()
        hit = _KIDNEYS[key] = (subject.labels, aim.kidney_from_labels(subject, side))
    return hit[1]


def aimed_pose(subject: Any, side: str, rotation_offset_deg: float = 0.0, window_deg: float = 0.0) -> U.ProbePose:
    """The pose of a task that starts on a kidney (from the subject's labels only, as the console knows it):
    its long-axis view through the hilum, the image plane first turned `window_deg` about the long axis
    (aim.long_axis_pose's about_axis_deg: + a more anterior window through the liver or spleen, - a more
    posterior one through the back muscles), then the probe turned `rotation_offset_deg` about its beam."""
    c, a, h = _kidney(subject, side)
    return aim.long_axis_pose(subject, c, a, h, side, pressure=AIM_PRESSURE, rotation_offset_deg=rotation_offset_deg,
                              about_axis_deg=window_deg)


# ---- rules ---------------------------------------------------------------------------------------------
LIVE = Rule((lambda m: not m.frozen, "The image is frozen: press Freeze again to scan live."))
FROZEN = Rule((lambda m: m.frozen, "Freeze the image first."))
ALWAYS = Rule()

# Which kind each control is: the oracle checks that display changes leave the acquisition alone.
KIND_POSE, KIND_ACQ, KIND_DISPLAY = "pose", "acquisition", "display"


def _p(name: str, label: str, unit: str, lo: float, hi: float, decimals: int, step: float, rule: Rule,
       widget: str = "") -> Parameter:
    return Parameter(name, label, unit, lo, hi, decimals, step, rule, get=lambda m, n=name: m.value(n),
                     set=lambda m, v, n=name: m.set_param(n, v), widget=widget)


PARAMETERS: tuple[Parameter, ...] = (
    # probe (the pose panel)
    _p("probe_z_mm", "Probe height", "mm", -700.0, 200.0, 1, 5.0, LIVE),
    _p("probe_azimuth_deg", "Probe position around the body", "deg", -135.0, 135.0, 1, 5.0, LIVE),
    _p("probe_rotation_deg", "Probe rotation", "deg", 0.0, 359.0, 0, 5.0, LIVE),  # whole degrees: 360 is 0
    _p("probe_tilt_deg", "Tilt (fan)", "deg", -45.0, 45.0, 0, 1.0, LIVE),
    _p("probe_rock_deg", "Rock (heel-toe)", "deg", -30.0, 30.0, 0, 1.0, LIVE),
    _p("pressure_pct", "Pressure", "%", 0.0, 100.0, 0, 5.0, LIVE),
    # acquisition / receive
    # steps as a cart scanner's keys step them (one press: Up/Down in the field, or the -/+ buttons)
    _p("depth_cm", "Depth", "cm", P.DEPTH_RANGE_MM[0] / 10, P.DEPTH_RANGE_MM[1] / 10, 1, P.DEPTH_STEP_MM / 10, LIVE),
    _p("focus_cm", "Focus", "cm", P.FOCUS_MIN_MM / 10, P.DEPTH_RANGE_MM[1] / 10, 1, P.FOCUS_STEP_MM / 10, LIVE),
    _p("frequency_mhz", "Frequency", "MHz", P.FREQUENCIES_MHZ[0], P.FREQUENCIES_MHZ[-1], 1, 0.5, LIVE),
    _p("gain", "Gain", "%", P.GAIN_RANGE[0], P.GAIN_RANGE[1], 0, P.GAIN_STEP, LIVE),
    *(_p(f"tgc_{i + 1}", f"TGC {i + 1}", "dB", P.TGC_RANGE_DB[0], P.TGC_RANGE_DB[1], 0, 1.0, LIVE)
      for i in range(P.TGC_BANDS)),
    # display (post-processing: also on a frozen image)
    _p("dynamic_range_db", "Dynamic range", "dB", P.DYNAMIC_RANGE_DB[0], P.DYNAMIC_RANGE_DB[1], 0, 3.0, ALWAYS),
)
PARAM: dict[str, Parameter] = {p.name: p for p in PARAMETERS}
# The names the console's fields carry (the status line names a value as its field does).
FIELD_LABELS: dict[str, str] = {
    "probe_z_mm": "Height", "probe_azimuth_deg": "Around body", "probe_rotation_deg": "Rotation",
    "probe_tilt_deg": "Tilt (fan)", "probe_rock_deg": "Rock", "pressure_pct": "Pressure", "depth_cm": "Depth",
    "focus_cm": "Focus", "frequency_mhz": "Frequency", "gain": "Gain", "dynamic_range_db": "Dyn. range",
    **{f"tgc_{i + 1}": f"TGC {i + 1}" for i in range(P.TGC_BANDS)}}
# The controls with -/+ keys on the console (one press, one step)
STEPPED = ("depth_cm", "focus_cm", "gain")
PARAM_KIND: dict[str, str] = {**{n: KIND_POSE for n in PARAM if n.startswith("probe_") or n == "pressure_pct"},
                              **{n: KIND_ACQ for n in PARAM if n in ("depth_cm", "focus_cm", "frequency_mhz", "gain")
                                 or n.startswith("tgc_")},
                              "dynamic_range_db": KIND_DISPLAY}

# Spatial compounding as the console offers it: Off, or the number of steered looks averaged.
COMPOUND_OPTIONS: tuple[str, ...] = tuple("Off" if n == 1 else str(n) for n in P.COMPOUND_LOOKS)


def compound_option(looks: int) -> str:
    """The Compound choice of a number of looks (1: "Off")."""
    return "Off" if int(looks) == 1 else str(int(looks))


def compound_looks(option: str) -> int:
    """The number of looks of a Compound choice ("Off": 1)."""
    return 1 if option == "Off" else int(option)


# Settings chosen from a list: name -> (options, enable rule, kind).
CHOICES: dict[str, tuple[tuple[str, ...], Rule, str]] = {
    "preset": (P.PRESET_NAMES, LIVE, KIND_ACQ),
    "grey_map": (P.GREY_MAPS, ALWAYS, KIND_DISPLAY),
    "compound": (COMPOUND_OPTIONS, LIVE, KIND_ACQ),  # the steered looks are acquired: refused while frozen
}

_POSE_FIELD = {"probe_z_mm": "z_mm", "probe_azimuth_deg": "azimuth_deg", "probe_rotation_deg": "rotation_deg",
               "probe_tilt_deg": "tilt_deg", "probe_rock_deg": "rock_deg"}


def shown_text(name: str, value: float) -> str:
    """A value as its field shows it, with the unit ('13.0 cm', '52 %', '0 deg')."""
    p = PARAM[name]
    return format_number(value, p.decimals, p.unit)


def whole_turn(deg: float) -> float:
    """A rotation at the field's whole degrees, 0-359 (359.6 is 0, never 360)."""
    return float(round(float(deg)) % 360)


def _r(a: Any, d: int = 3) -> list[float]:
    return [round(float(x), d) + 0.0 for x in np.asarray(a, float).ravel()]


# ---- measurements and the exam strip ---------------------------------------------------------------------
@dataclass
class Caliper:
    """A distance between two points of the (frozen) image, in image mm; `ends_subject` are the same points in
    the subject frame (through the image plane of the frozen frame)."""

    p1: tuple[float, float]
    p2: tuple[float, float]
    ends_subject: tuple[tuple[float, float, float], tuple[float, float, float]]

    @property
    def length_mm(self) -> float:
        return float(math.hypot(self.p2[0] - self.p1[0], self.p2[1] - self.p1[1]))

    def to_dict(self) -> dict[str, Any]:
        return {"p1_mm": _r(self.p1, 2), "p2_mm": _r(self.p2, 2), "length_mm": round(self.length_mm, 2),
                "p1_subject_mm": _r(self.ends_subject[0], 2), "p2_subject_mm": _r(self.ends_subject[1], 2)}


@dataclass
class Annotation:
    text: str
    x_mm: float
    y_mm: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "x_mm": round(float(self.x_mm), 2), "y_mm": round(float(self.y_mm), 2)}


@dataclass
class SavedItem:
    """One item of the exam strip: what was on the screen when it was saved (never pixels in the dump)."""

    uid: int
    kind: str  # "image" | "clip"
    t: float
    record: dict[str, Any]
    pixels: np.ndarray | None = field(default=None, repr=False)  # the saved image, for the strip's thumbnail

    def to_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "kind": self.kind, "t": round(float(self.t), 3), **self.record}


class USModel(ConsoleModelBase):
    """The ultrasound console's logic. Methods raise ConsoleActionError (with the reason shown) when refused."""

    modality = "us"

    def __init__(self, subject: Any, task_id: str, seed: int, initial_state: Mapping[str, Any] | None = None,
                 perturbations: Mapping[str, Any] | None = None, out_shape: tuple[int, int] = U.DEFAULT_OUT_SHAPE
                 ) -> None:
        super().__init__(task_id, subject.id, seed)
        self.subject = subject
        self.out_shape = (int(out_shape[0]), int(out_shape[1]))
        st = dict(initial_state or {})
        self.declare(PARAMETERS)
        z = subject.world_z()
        self.z_limits = (float(z[0]) + Z_MARGIN_MM, float(z[-1]) - Z_MARGIN_MM)
        # the order of these draws is part of every episode's identity: append, never reorder
        draws = PerturbationDraws.for_episode(task_id, subject.id, seed, perturbations)
        self.draws = draws
        # Where the patient lies and how the session was left, from their own stream (issue 21: added after
        # the draws above existed, so it shifts none of them): the bed frame the probe fields show, the
        # acoustic window the task starts in, the TGC pots left by the previous exam.
        place = PerturbationDraws(seeded_rng(task_id, subject.id, seed, "placement"), perturbations)
        self.patient_z_mm = round(place.uniform("patient_z_mm", (0.0, 0.0)), 1)
        self.patient_roll_deg = round(place.uniform("patient_roll_deg", (0.0, 0.0)), 1)
        self.window_deg = round(self._placement_draw(place, "aim_window_deg"), 1)
        self.tgc_offset_db = round(self._placement_draw(place, "tgc_offset_db"))
        self.patient_yaw_deg = round(self._placement_draw(place, "patient_yaw_deg"), 1)
        self.aim_rotation_deg = round(self._placement_draw(place, "aim_rotation_deg"), 1)
        self._rotation_offset_key: tuple | None = None
        self._rotation_offset = 0.0
        # the kidney the exam is about (named by the goal, or drawn balanced over seeds)
        self.kidney: str | None = st.get("kidney")
        if draws.has("kidney"):
            self.kidney = str(self._balanced("kidney", draws.perturbations["kidney"]))
        self._require(self.kidney in (None,) + KIDNEY_SIDES, f"unknown kidney {self.kidney!r}")
        # controls: preset first (the card's, or one drawn), then explicit values of the card
        self.preset = str(st.get("preset", DEFAULT_PRESET))
        if draws.has("preset"):
            self.preset = str(self._balanced("preset", draws.perturbations["preset"]))
        self._require(self.preset in P.PRESETS, f"unknown preset {self.preset!r}")
        self.controls: dict[str, Any] = {}
        self._load_preset(self.preset)
        pose = DEFAULT_POSE.to_dict()
        aim_view = st.get("aim")
        if aim_view is not None:
            self._require(aim_view in AIM_VIEWS, f"unknown aim {aim_view!r}; expected one of {tuple(AIM_VIEWS)}")
            self._require(self.kidney is not None, "aim at a kidney: say which (kidney: left or right)")
            pose = aimed_pose(subject, self.kidney, AIM_VIEWS[aim_view] + self.aim_rotation_deg,
                              self.window_deg).to_dict()
        pose.update(st.get("pose") or {})
        self.coupling = Coupling()
        pose["z_mm"] += draws.offset_mm("probe_z")
        pose["azimuth_deg"] += draws.uniform("probe_azimuth_deg", (0.0, 0.0))
        pose["rotation_deg"] += draws.uniform("probe_rotation_deg", (0.0, 0.0))
        pose["tilt_deg"] += draws.uniform("probe_tilt_deg", (0.0, 0.0))
        pose["rock_deg"] += draws.uniform("probe_rock_deg", (0.0, 0.0))
        for name, value in (st.get("controls") or {}).items():
            self._require(name not in _POSE_FIELD and name != "pressure_pct", f"{name}: set the probe under 'pose'")
            self._require(name != "preset", "preset: give it as the initial state's 'preset'")
            self._apply(name, value)
        for name in ("gain", "depth_cm", "focus_cm", "dynamic_range_db"):
            v = self._draw_range(name)
            if v is not None:
                self._apply(name, v)
        if self.tgc_offset_db:  # every pot moved by the same amount (clamped to the pots' range)
            self.controls["tgc_db"] = [PARAM["tgc_1"].clamp(v + self.tgc_offset_db) for v in self.controls["tgc_db"]]
        for name in ("frequency_mhz", "grey_map"):  # options, balanced over seeds
            if draws.has(name):
                self._apply(name, self._balanced(name, draws.perturbations[name]))
        if draws.has("dark_cause"):  # balanced: neither "raise the gain" nor "fix the contact" always works
            self.dark_cause = str(self._cohort_balanced("dark_cause", draws.perturbations["dark_cause"]))
        else:
            self.dark_cause = "none"
        self._require(self.dark_cause in DARK_CAUSES, f"unknown dark cause {self.dark_cause!r}")
        self.contact_fault = "none"
        if self.dark_cause == "contact":
            self.contact_fault = self._contact_fault(draws)
            self._require(self.contact_fault in CONTACT_FAULTS, f"unknown contact fault {self.contact_fault!r}")
            if self.contact_fault == "lifted":
                pose["pressure"] = draws.uniform("lifted_pressure", (0.0, 0.08))
            else:
                fraction = round(draws.uniform("dry_fraction", (0.3, 0.5)), 3)  # as dumped: re-formable
                self.coupling = Coupling(self.contact_fault, fraction)
        elif self.dark_cause == "gain":
            low = draws.uniform("low_gain", (5.0, 20.0))
            # pots left pushed up would make up for a low gain: the gain is that much lower still (a dark start);
            # where the gain cannot go that low (its floor is 0), the pots are pushed up that much less instead, so
            # the start is as dark as drawn (with the focal gain, a pot offset the floor left standing gave s14 seed
            # 1 a kidney already at mid-grey)
            made_up = max(0.0, self.tgc_offset_db) / P.GAIN_DB_PER_UNIT
            self._apply("gain", max(0.0, low - made_up))
            excess_db = max(0.0, made_up - low) * P.GAIN_DB_PER_UNIT
            if excess_db:
                self.controls["tgc_db"] = [PARAM["tgc_1"].clamp(v - excess_db) for v in self.controls["tgc_db"]]
        self.draws.used |= place.used
        self._place(U.ProbePose(**pose))
        self.frozen = False
        self.frozen_t: float | None = None
        self._frozen_beam: U.BeamData | None = None
        self._frozen_record: dict[str, Any] | None = None
        self.calipers: list[Caliper] = []
        self.caliper_pending: tuple[float, float] | None = None
        self.annotations: list[Annotation] = []
        self.saved: list[SavedItem] = []
        self._geometry: U.ProbeGeometry | None = None
        self._geometry_key: tuple | None = None
        self._beam_key: tuple | None = None
        self._beam: U.BeamData | None = None
        self._frame_key: tuple | None = None
        self._frame: U.USFrame | None = None
        self.frames_formed = 0
        if st.get("frozen"):
            self.freeze()
        self.message = "Ready: place the probe and scan."
        self.start = self._snapshot()

    # ---- task draws -----------------------------------------------------------------------------------------
    def _balanced(self, key: str, options: Sequence[Any]) -> Any:
        """One option per seed, balanced over the seeds of a subject (every block of len(options) consecutive
        seeds takes each option once, in a seeded order), as the MR console draws its judgement tasks."""
        return self._balanced_in(self.task_id, self.subject.id, self.seed, key, options)

    def _cohort_balanced(self, key: str, options: Sequence[Any]) -> Any:
        """One option per seed, balanced over the seeds of a subject AND over the cohort (issue 21), by the
        rule every console shares (consoles.common.balance.cohort_balanced_choice: option (subject index +
        seed) mod n, in the card's order), so the shortcut detector's sample, balanced for that rule, sees
        each answer as often as the cohort does and dev seed 0 takes the card's first option."""
        options = list(options)
        self._require(len(options) > 0, f"{key}: no options to draw from")
        return cohort_balanced_choice(self.task_id, str(self.subject.id), self.seed, key, options)

    def _contact_fault(self, draws: PerturbationDraws) -> str:
        """The contact fault of a dark image whose cause is contact. With a cohort-balanced cause, its kind
        (gel missing | the probe held too lightly) is balanced too, nested under the cause
        (consoles.common.balance, period = the number of causes), so neither "apply gel" nor "press the
        probe" is the remedy in more than a quarter of the slots; which gel fault (one side or all) is drawn."""
        options = [str(f) for f in draws.options("contact_fault", CONTACT_FAULTS)]
        kinds = {"pressure": [f for f in options if f == "lifted"], "gel": [f for f in options if f != "lifted"]}
        kinds = {k: v for k, v in kinds.items() if v}
        if draws.has("dark_cause") and len(kinds) == 2:
            kind = cohort_balanced_choice(self.task_id, str(self.subject.id), self.seed, "contact_kind",
                                          ["gel", "pressure"], period=len(draws.perturbations["dark_cause"]))
            options = kinds[kind]
        return str(draws.pick(options))

    @staticmethod
    def _balanced_in(task_id: str, subject_id: str, seed: int, key: str, options: Sequence[Any]) -> Any:
        options = list(options)
        if not options:
            raise ConsoleActionError(f"{key}: no options to draw from")
        return balanced_choice(task_id, subject_id, seed, key, options)

    def _placement_draw(self, place: PerturbationDraws, key: str) -> float:
        """A [lo, hi] range or a list of ranges (one per seed, balanced) of the placement stream; 0 without
        the key (always one draw, so keys added later shift nothing)."""
        spec = place.perturbations.get(key) if place.has(key) else None
        if spec and isinstance(spec[0], (list, tuple)):
            spec = self._balanced_in(self.task_id, self.subject.id, self.seed, key, spec)
        return float(place.rng.uniform(*(spec or (0.0, 0.0))))

    def _draw_range(self, key: str) -> float | None:
        """A control drawn from the card: [lo, hi] uniformly, or a list of ranges, one picked balanced over
        seeds (e.g. a gain too low or too high) and then drawn uniformly; None when the card has no `key`."""
        if not self.draws.has(key):
            return None
        spec = self.draws.perturbations[key]
        if spec and isinstance(spec[0], (list, tuple)):
            tie = f"{key}_band_follows"
            follows = self.draws.perturbations.get(tie) if self.draws.has(tie) else None
            if follows:  # the range at the place of the other key's (balanced the same way): errors add up
                other = self.draws.perturbations.get(follows) or ()
                self._require(len(other) == len(spec) and all(isinstance(r, (list, tuple)) for r in other),
                              f"{key}_band_follows: {follows} needs as many ranges as {key}")
                spec = spec[self._balanced_in(self.task_id, self.subject.id, self.seed, follows, range(len(spec)))]
            else:
                spec = self._balanced(key, spec)
        lo, hi = spec
        return float(self.draws.rng.uniform(lo, hi))

    def _snapshot(self) -> dict[str, Any]:
        """What the session started with (the dump's "start"): oracles compare the end with it."""
        c = self.controls
        return {"pose": self._pose_dict(self.pose), "preset": self.preset, "frozen": self.frozen,
                "controls": {"frequency_mhz": c["frequency_mhz"], "depth_mm": c["depth_mm"],
                             "focus_mm": c["focus_mm"], "gain": c["gain"], "tgc_db": list(c["tgc_db"]),
                             "dynamic_range_db": c["dynamic_range_db"], "grey_map": c["grey_map"],
                             "compound": compound_looks(c["compound"])},
                "coupling": self.coupling.to_dict(), "dark_cause": self.dark_cause, "fault": self.contact_fault,
                "n_events": len(self.events)}

    # ---- controls -----------------------------------------------------------------------------------------
    def _load_preset(self, name: str) -> None:
        p = P.PRESETS[name]
        self.controls = {"frequency_mhz": p.frequency_mhz, "depth_mm": p.depth_mm, "focus_mm": p.focus_mm,
                         "gain": p.gain, "tgc_db": list(p.tgc_db), "dynamic_range_db": p.dynamic_range_db,
                         "grey_map": p.grey_map, "compound": compound_option(p.compound)}

    def value(self, name: str) -> float:
        """The shown value of a declared parameter."""
        c = self.controls
        if name == "probe_rotation_deg":
            return self.shown_rotation_deg
        if name in _POSE_FIELD:
            return float(getattr(self.pose, _POSE_FIELD[name])) + self._bed_offset(name)
        if name == "pressure_pct":
            return float(self.pose.pressure * 100.0)
        if name == "depth_cm":
            return c["depth_mm"] / 10.0
        if name == "focus_cm":
            return c["focus_mm"] / 10.0
        if name.startswith("tgc_"):
            return float(c["tgc_db"][int(name[4:]) - 1])
        return float(c[name])

    # ---- the bed frame ------------------------------------------------------------------------------------
    # The probe's height and its position around the body are shown (and typed) as the bed's tracker reads
    # them: height along the bed, angle about the body's long axis from the bed's vertical. The patient lies
    # `patient_z_mm` along the bed and rolled `patient_roll_deg` about the long axis (+: the left side up,
    # so the left flank turns towards the ceiling, bed angle = body angle - roll), so the same anatomy sits
    # at other field values in another episode. The patient may also lie turned `patient_yaw_deg` on the
    # bed: the rotation is read from the bed's head direction on the skin (consoles/us/bed.py), so it moves
    # with the yaw where the flank faces the ceiling; tilt and rock are about the probe itself.
    def _bed_offset(self, name: str, pose: U.ProbePose | None = None) -> float:
        if name == "probe_rotation_deg":
            return self.rotation_offset(pose)
        return {"probe_z_mm": self.patient_z_mm, "probe_azimuth_deg": -self.patient_roll_deg}.get(name, 0.0)

    def rotation_offset(self, pose: U.ProbePose | None = None) -> float:
        """Degrees from the subject-frame rotation to the one the field shows, at a pose's footprint."""
        p = pose or self.pose
        key = (round(p.z_mm, 3), round(p.azimuth_deg, 3))
        if key != self._rotation_offset_key:
            self._rotation_offset = bed.rotation_offset_deg(self.subject, p.z_mm, p.azimuth_deg,
                                                            self.patient_roll_deg, self.patient_yaw_deg)
            self._rotation_offset_key = key
        return self._rotation_offset

    def bed_z_limits(self) -> tuple[float, float]:
        """The heights along the bed the body spans (the probe map's range)."""
        return (self.z_limits[0] + self.patient_z_mm, self.z_limits[1] + self.patient_z_mm)

    def move_on_bed(self, z_mm: float, azimuth_deg: float) -> U.ProbePose:
        """Drag the footprint to a bed-frame height and angle (the probe map's coordinates); where the drag ends
        beyond the body's extent or the map's range, the status line says what limited the move."""
        pose = self.set_pose(z_mm=float(z_mm) - self.patient_z_mm, azimuth_deg=float(azimuth_deg) + self.patient_roll_deg)
        notes = []
        if abs(self.value("probe_z_mm") - float(z_mm)) >= 0.05:
            notes.append(f"the body ends at height {format_number(self.value('probe_z_mm'), 1, 'mm')}")
        if abs(self.value("probe_azimuth_deg") - float(azimuth_deg)) >= 0.05:
            p = PARAM["probe_azimuth_deg"]
            notes.append(f"around body is {range_text(p.lo, p.hi, 0, p.unit)}")
        if notes:
            self.message = self.message[:-1] + "; " + "; ".join(notes) + "."
        return pose

    def bed_pose(self, pose: U.ProbePose | None = None) -> dict[str, float]:
        """A pose as the fields show it (bed frame)."""
        d = self._pose_dict(pose or self.pose)
        d["z_mm"] = round(d["z_mm"] + self.patient_z_mm, 3) + 0.0
        d["azimuth_deg"] = round(d["azimuth_deg"] - self.patient_roll_deg, 3) + 0.0
        if pose is None or pose is self.pose:
            d["rotation_deg"] = self.shown_rotation_deg
        else:
            d["rotation_deg"] = round((d["rotation_deg"] + self._bed_offset("probe_rotation_deg", pose)) % 360.0, 3) + 0.0
        return d

    def _bounded_pose(self, pose: U.ProbePose, shown_rotation: float | None = None) -> tuple[U.ProbePose, float]:
        """(the pose inside the fields' ranges and the body's extent, the rotation its field shows).

        The rotation field holds whole degrees 0-359 of the bed frame. `shown_rotation` is that field's value
        to keep (typed, or held while the footprint moves: a field never changes by itself, issue 34); None
        reads it from the pose's subject-frame rotation. The subject-frame rotation is derived from it at the
        new footprint, never the other way round, so no edit re-rounds it."""
        lo, hi = self.z_limits
        dz, dr = self.patient_z_mm, -self.patient_roll_deg
        z = round(min(hi, max(lo, PARAM["probe_z_mm"].clamp(pose.z_mm + dz) - dz)), 1)
        az = PARAM["probe_azimuth_deg"].clamp(pose.azimuth_deg + dr) - dr
        try:
            off = self.rotation_offset(replace(pose, z_mm=z, azimuth_deg=az))
        except ValueError:  # off the body: _place refuses the pose
            off = 0.0
        shown = whole_turn(float(pose.rotation_deg) + off if shown_rotation is None else shown_rotation)
        rot = round((shown - off) % 360.0, 3) % 360.0 if off else shown
        return U.ProbePose(z_mm=z, azimuth_deg=az, rotation_deg=rot,
                           tilt_deg=PARAM["probe_tilt_deg"].clamp(pose.tilt_deg),
                           rock_deg=PARAM["probe_rock_deg"].clamp(pose.rock_deg),
                           pressure=round(PARAM["pressure_pct"].clamp(pose.pressure * 100.0) / 100.0, 2)), shown

    def _place(self, pose: U.ProbePose, shown_rotation: float | None = None) -> None:
        """Move the probe to a bounded pose, refusing (and staying put) where there is no body surface."""
        pose, shown = self._bounded_pose(pose, shown_rotation)
        try:
            U.ProbeGeometry.from_pose(self.subject, pose)
        except ValueError:
            self._require(False, "The probe must stay on the body.")
        self.pose = pose
        self.shown_rotation_deg = shown

    def _held_rotation(self) -> float | None:
        """The rotation field's value, kept while another pose value moves the probe (None before the first
        placement)."""
        return getattr(self, "shown_rotation_deg", None)

    def _apply(self, name: str, value: Any) -> Any:
        """Clamp and store one control or pose value (no rule check: initial state and set_param share it)."""
        if name in CHOICES:
            options = CHOICES[name][0]
            self._require(value in options, f"{name} must be one of {', '.join(options)}.")
            if name == "preset":
                self.preset = str(value)
                self._load_preset(self.preset)
            else:
                self.controls[name] = str(value)
            return value
        self._require(name in PARAM, f"unknown parameter {name}")
        self._require(value is not None and math.isfinite(float(value)), "Enter a number.")
        x = float(value)
        if name == "probe_rotation_deg":  # the dial turns round, in whole degrees
            self._place(self.pose, shown_rotation=whole_turn(x))
            return self.value(name)
        v = PARAM[name].clamp(x)
        if name in _POSE_FIELD or name == "pressure_pct":  # typed in the bed frame; the rotation field holds
            kw = {"pressure": v / 100.0} if name == "pressure_pct" else {_POSE_FIELD[name]: v - self._bed_offset(name)}
            self._place(replace(self.pose, **kw), shown_rotation=self._held_rotation())
            return self.value(name)
        c = self.controls
        if name == "frequency_mhz":
            v = min(P.FREQUENCIES_MHZ, key=lambda f: (abs(f - x), f))
            c["frequency_mhz"] = v
        elif name == "depth_cm":
            c["depth_mm"] = round(v * 10.0, 1)
            c["focus_mm"] = min(c["focus_mm"], c["depth_mm"])  # the focus marker stays inside the image
        elif name == "focus_cm":
            c["focus_mm"] = round(min(v * 10.0, c["depth_mm"]), 1)
        elif name.startswith("tgc_"):
            c["tgc_db"][int(name[4:]) - 1] = v
        else:
            c[name] = v
        return self.value(name)

    def kind_of(self, name: str) -> str:
        return CHOICES[name][2] if name in CHOICES else PARAM_KIND[name]

    def set_param(self, name: str, value: Any) -> Any:
        """Set a control, a pose value or a choice (clamped); returns the value now shown."""
        rule = CHOICES[name][1] if name in CHOICES else self.parameter(name).enabled_when
        self._require_rule(rule)
        before = self._shown_values()
        v = self._apply(name, value)
        kind = self.kind_of(name)
        self._log("param_changed", name=name, value=v, kind=kind)
        self.message = self._set_message(name, value, before)
        self._changed(kind)
        return v

    def step_param(self, name: str, steps: int) -> float:
        """Press a control's - (steps < 0) or + key: the value moves by its console increment per press."""
        self._require(name in STEPPED, f"{FIELD_LABELS.get(name, name)} has no -/+ keys.")
        p = PARAM[name]
        return self.set_param(name, p.clamp(self.value(name) + int(steps) * p.step))

    # ---- the status line of an edit (issue 34: it describes the present, and says why a value was adjusted) --
    def _shown_values(self) -> dict[str, str]:
        return {n: shown_text(n, self.value(n)) for n in PARAM}

    def _set_message(self, name: str, typed: Any, before: dict[str, str]) -> str:
        """'Depth 14.0 cm.'; an entry the console adjusted names the value, what it became and the setting
        that limits it; another field it moved (the focus by the depth) is named too."""
        if name in CHOICES:
            return f"{'Grey map' if name == 'grey_map' else name.capitalize()} {typed}."
        label, p = FIELD_LABELS[name], PARAM[name]
        got = shown_text(name, self.value(name))
        want = format_number(float(typed), p.decimals, p.unit)
        text = f"{label} {got}." if want == got else f"{label} {want} set as {got}: {self._limit_reason(name, typed)}."
        moved = [n for n, t in self._shown_values().items() if n != name and before.get(n) != t]
        for n in moved:  # a value this edit moved besides its own (the depth pulls the focus up with it)
            text += f" {FIELD_LABELS[n]} {before[n]} -> {shown_text(n, self.value(n))} (within the depth)."
        return text

    def _limit_reason(self, name: str, typed: Any) -> str:
        """Why `name` took another value than `typed` (which setting or range limits it)."""
        p, x = PARAM[name], float(typed)
        rng = range_text(p.lo, p.hi, p.decimals, p.unit)
        if name == "probe_rotation_deg":
            return f"the dial turns round, {rng}"
        if not p.lo <= round(x, p.decimals) <= p.hi:
            return f"the field's range is {rng}"
        if name == "probe_z_mm":
            lo, hi = self.bed_z_limits()
            return f"the body spans {format_number(lo, 1, '')} to {format_number(hi, 1, 'mm')} along the bed"
        if name == "focus_cm":
            return f"the focus stays within the depth ({shown_text('depth_cm', self.value('depth_cm'))})"
        if name == "frequency_mhz":
            return f"the probe's frequencies are {', '.join(f'{f:g}' for f in P.FREQUENCIES_MHZ)} MHz"
        return f"rounded to {p.decimals} decimals" if p.decimals else "rounded to a whole number"

    def set_preset(self, name: str) -> None:
        """Load a preset's controls (refused while frozen)."""
        self.set_param("preset", name)
        self.message = f"Preset {name}."

    def set_pose(self, **fields: float) -> U.ProbePose:
        """Move the probe: any of z_mm, azimuth_deg, rotation_deg, tilt_deg, rock_deg, pressure (one event)."""
        self._require_rule(LIVE)
        unknown = set(fields) - set(U.ProbePose.__dataclass_fields__)
        self._require(not unknown, f"unknown pose fields {sorted(unknown)}")
        for k, v in fields.items():
            self._require(v is not None and math.isfinite(float(v)), "Enter a number.")
        held = None if "rotation_deg" in fields else self._held_rotation()
        self._place(replace(self.pose, **{k: float(v) for k, v in fields.items()}), shown_rotation=held)
        self._log("probe_moved", **self.pose.to_dict())
        b = self.bed_pose()
        self.message = (f"Probe moved: height {format_number(b['z_mm'], 1, 'mm')}, around body "
                        f"{format_number(b['azimuth_deg'], 1, 'deg')}.")
        self._changed(KIND_POSE)
        return self.pose

    def move_probe(self, dz_mm: float = 0.0, dazimuth_deg: float = 0.0) -> U.ProbePose:
        """Drag the footprint over the body (relative)."""
        return self.set_pose(z_mm=self.pose.z_mm + dz_mm, azimuth_deg=self.pose.azimuth_deg + dazimuth_deg)

    def apply_gel(self) -> None:
        """Re-apply coupling gel: restores the film under the whole array."""
        self._require_rule(LIVE)
        was = self.coupling.fault
        self.coupling = Coupling()
        self._log("gel_applied", fault_before=was)
        self.message = "Gel applied."
        self._changed(KIND_POSE)

    # ---- image formation ----------------------------------------------------------------------------------
    def acquisition(self) -> U.Acquisition:
        c = self.controls
        return U.Acquisition(frequency_mhz=float(c["frequency_mhz"]), depth_mm=float(c["depth_mm"]),
                             focus_mm=float(c["focus_mm"]), gain=float(c["gain"]), tgc_db=tuple(c["tgc_db"]),
                             indentation_mm=self.pose.indentation_mm, compound=compound_looks(c["compound"]))

    def display_settings(self) -> U.Display:
        c = self.controls
        return U.Display(float(c["dynamic_range_db"]), str(c["grey_map"]), self.out_shape)

    def geometry(self) -> U.ProbeGeometry:
        """The live image plane (cached per pose)."""
        key = tuple(self.pose.to_dict().values())
        if self._geometry is None or self._geometry_key != key:
            self._geometry = U.ProbeGeometry.from_pose(self.subject, self.pose)
            self._geometry_key = key
        return self._geometry

    def line_contact(self) -> np.ndarray:
        return self.coupling.line_factors(U.CURVILINEAR.n_lines)

    def _live_beam(self) -> U.BeamData:
        acq = self.acquisition()
        key = (tuple(self.pose.to_dict().values()), acq, self.coupling.fault, round(self.coupling.fraction, 6))
        if self._beam is None or self._beam_key != key:
            self._beam = U.acquire_beam(self.subject, self.geometry(), acq, self.line_contact())
            self._beam_key = key
            self.frames_formed += 1
        return self._beam

    def beam(self) -> U.BeamData:
        """The acquisition shown: the frozen one, or the live one (formed when something changed)."""
        if self.frozen:
            assert self._frozen_beam is not None
            return self._frozen_beam
        return self._live_beam()

    def frame(self) -> U.USFrame:
        """The image on the screen now (re-formed only when the pose, a control or the coupling changed)."""
        beam, disp = self.beam(), self.display_settings()
        key = (id(beam), disp)
        if self._frame is None or self._frame_key != key or self._frame.beam is not beam:
            self._frame = U.display_frame(beam, disp)
            self._frame_key = key
        return self._frame

    def frame_rate_hz(self) -> float:
        return round(P.frame_rate_hz(self.controls["depth_mm"]), 1)

    # ---- freeze -------------------------------------------------------------------------------------------
    def _record(self, beam: U.BeamData) -> dict[str, Any]:
        """Pose, plane, controls and contact of an acquisition (for frozen images and saved items)."""
        a = beam.acquisition
        return {"pose": self._pose_dict(self.pose),  # pose edits are refused while frozen: it is the frozen one
                "plane": beam.geometry.to_dict(),
                "acquisition": {"frequency_mhz": a.frequency_mhz, "depth_mm": a.depth_mm, "focus_mm": a.focus_mm,
                                "gain": a.gain, "tgc_db": list(a.tgc_db), "preset": self.preset,
                                "compound": a.compound},
                "contact": self._contact_dict(beam)}

    def freeze(self) -> None:
        """Freeze the current image; pressing it again (`unfreeze`) scans live and clears the calipers."""
        if self.frozen:
            self.unfreeze()
            return
        beam = self._live_beam()
        self.frozen, self.frozen_t, self._frozen_beam = True, self.t, beam
        self._frozen_record = self._record(beam)
        self._log("frozen")
        self.message = "Frozen."
        self._changed("freeze")

    def unfreeze(self) -> None:
        self._require_rule(FROZEN)
        self.frozen, self.frozen_t, self._frozen_beam, self._frozen_record = False, None, None, None
        self.calipers.clear()
        self.caliper_pending = None
        self._log("unfrozen")
        self.message = "Live."
        self._changed("freeze")

    # ---- calipers -----------------------------------------------------------------------------------------
    def _inside_image(self, x_mm: float, y_mm: float) -> bool:
        fr = self.frame()
        r, c = fr.mm_to_pixel(x_mm, y_mm)
        ri, ci = int(round(float(r))), int(round(float(c)))
        return 0 <= ri < fr.sector.shape[0] and 0 <= ci < fr.sector.shape[1] and bool(fr.sector[ri, ci])

    def caliper_point(self, x_mm: float, y_mm: float) -> Caliper | None:
        """Click-click calipers on a frozen image: the first click starts a caliper, the second ends it."""
        self._require_rule(FROZEN)
        self._require(math.isfinite(float(x_mm)) and math.isfinite(float(y_mm)), "Enter a number.")
        self._require(self._inside_image(x_mm, y_mm), "Place calipers inside the image.")
        p = (round(float(x_mm), 2), round(float(y_mm), 2))
        if self.caliper_pending is None:
            self._require(len(self.calipers) < MAX_CALIPERS, f"At most {MAX_CALIPERS} calipers: clear one first.")
            self.caliper_pending = p
            self._log("caliper_started", p1_mm=list(p))
            self.message = f"Caliper {len(self.calipers) + 1}: click the second point."
            self._changed("calipers")
            return None
        cal = self._make_caliper(self.caliper_pending, p)
        self.calipers.append(cal)
        self.caliper_pending = None
        self._log("caliper_placed", index=len(self.calipers), length_mm=round(cal.length_mm, 2))
        self.message = f"Distance {cal.length_mm / 10.0:.2f} cm"
        self._changed("calipers")
        return cal

    def _make_caliper(self, p1: tuple[float, float], p2: tuple[float, float]) -> Caliper:
        g = self.beam().geometry
        e = g.image_to_subject(np.array([p1[0], p2[0]]), np.array([p1[1], p2[1]]))
        return Caliper(p1, p2, (tuple(map(float, e[0])), tuple(map(float, e[1]))))

    def move_caliper_end(self, index: int, end: int, x_mm: float, y_mm: float) -> Caliper:
        """Drag one end (1 or 2) of caliper `index` (1-based)."""
        self._require_rule(FROZEN)
        self._require(1 <= int(index) <= len(self.calipers), f"There is no caliper {index}.")
        self._require(int(end) in (1, 2), "A caliper has ends 1 and 2.")
        self._require(self._inside_image(x_mm, y_mm), "Place calipers inside the image.")
        old = self.calipers[int(index) - 1]
        p = (round(float(x_mm), 2), round(float(y_mm), 2))
        cal = self._make_caliper(p, old.p2) if int(end) == 1 else self._make_caliper(old.p1, p)
        self.calipers[int(index) - 1] = cal
        self._log("caliper_moved", index=int(index), length_mm=round(cal.length_mm, 2))
        self.message = f"Caliper {int(index)}: distance {cal.length_mm / 10.0:.2f} cm"
        self._changed("calipers")
        return cal

    def clear_calipers(self) -> None:
        self.calipers.clear()
        self.caliper_pending = None
        self._log("calipers_cleared")
        self.message = "Calipers cleared."
        self._changed("calipers")

    # ---- annotation ---------------------------------------------------------------------------------------
    def add_annotation(self, text: str, x_mm: float | None = None, y_mm: float | None = None) -> Annotation:
        """Place text on the image (default: near the top left of the sector)."""
        text = str(text).strip()
        self._require(text != "", "Type the annotation first.")
        self._require(len(text) <= MAX_ANNOTATION_CHARS, f"At most {MAX_ANNOTATION_CHARS} characters.")
        bad = sorted(set(text) - ANNOTATION_CHARS)
        self._require(not bad, f"These characters cannot be typed here: {''.join(bad)}")
        self._require(len(self.annotations) < MAX_ANNOTATIONS, f"At most {MAX_ANNOTATIONS} annotations.")
        if x_mm is None or y_mm is None:
            width, _, _ = U.sector_extent_mm(self.beam().acquisition.depth_mm)
            x_mm, y_mm = -0.35 * width, 0.1 * self.beam().acquisition.depth_mm
        a = Annotation(text, float(x_mm), float(y_mm))
        self.annotations.append(a)
        self._log("annotation_added", text=text)
        self.message = f"Annotation {text} placed."
        self._changed("annotations")
        return a

    def clear_annotations(self) -> None:
        self.annotations.clear()
        self._log("annotations_cleared")
        self.message = "Annotations cleared."
        self._changed("annotations")

    # ---- exam strip ---------------------------------------------------------------------------------------
    def _save(self, kind: str, extra: dict[str, Any]) -> SavedItem:
        self._require(len(self.saved) < MAX_SAVED, f"The exam holds at most {MAX_SAVED} items.")
        beam = self.beam()
        fr = self.frame()
        rec = self._frozen_record if self.frozen and self._frozen_record else self._record(beam)
        record = {**rec, "frozen": self.frozen, "display": self._display_dict(),
                  "calipers": [c.to_dict() for c in self.calipers],
                  "annotations": [a.to_dict() for a in self.annotations], **extra}
        item = SavedItem(len(self.saved) + 1, kind, self.t, record, fr.pixels.copy())
        self.saved.append(item)
        self._log("saved", kind=kind, uid=item.uid)
        self.message = f"{kind.capitalize()} {item.uid} saved."
        self._changed("saved")
        return item

    def save_image(self) -> SavedItem:
        """Store the image on the screen (with its calipers and annotations) in the exam strip."""
        return self._save("image", {})

    def save_clip(self, seconds: float = DEFAULT_CLIP_S) -> SavedItem:
        """Store the last `seconds` of live scanning (a retrospective cine clip) in the exam strip."""
        self._require_rule(LIVE)
        s = min(CLIP_SECONDS[1], max(CLIP_SECONDS[0], float(seconds)))
        return self._save("clip", {"duration_s": round(s, 2), "n_frames": int(round(s * self.frame_rate_hz()))})

    def delete_saved(self, uid: int) -> None:
        before = len(self.saved)
        self.saved = [s for s in self.saved if s.uid != int(uid)]
        self._require(len(self.saved) < before, f"There is no saved item {uid}.")
        self._log("saved_deleted", uid=int(uid))
        self.message = f"Item {int(uid)} deleted."
        self._changed("saved")

    # ---- dump ---------------------------------------------------------------------------------------------
    @staticmethod
    def _pose_dict(pose: U.ProbePose) -> dict[str, float]:
        return {k: round(v, 3) + 0.0 for k, v in pose.to_dict().items()}

    def _display_dict(self) -> dict[str, Any]:
        c = self.controls
        return {"dynamic_range_db": c["dynamic_range_db"], "grey_map": c["grey_map"]}

    def _contact_dict(self, beam: U.BeamData) -> dict[str, Any]:
        lc = beam.line_contact
        return {"pressure": round(self.pose.pressure, 3), "indentation_mm": round(beam.acquisition.indentation_mm, 2),
                "coupling": self.coupling.to_dict(), "line_contact_mean": round(float(lc.mean()), 4),
                "fraction_in_contact": round(float((lc > 0.5).mean()), 4)}

    def contact_state(self) -> dict[str, Any]:
        """Pressure, gel film and the share of scan lines in contact of the image on the screen."""
        return self._contact_dict(self.beam())

    def image_dict(self) -> dict[str, Any]:
        """Where the image sits on the screen's image area (no pixels)."""
        fr = self.frame()
        return {"shape": list(fr.pixels.shape), "pixel_mm": round(fr.pixel_mm, 6), "x0_mm": round(fr.x0_mm, 4),
                "y_top_mm": round(fr.y_top_mm, 4), "frame_rate_hz": self.frame_rate_hz()}

    def state(self) -> dict[str, Any]:
        """Everything an oracle needs (JSON-serialisable; no pixels)."""
        beam = self.beam()
        c = self.controls
        return {
            "modality": "us", "task": self.task_id, "subject": self.subject.id, "seed": self.seed,
            "t": round(float(self.t), 3), "exam": {"kidney": self.kidney}, "start": self.start,
            "probe": {"name": U.CURVILINEAR.name, "radius_mm": U.CURVILINEAR.radius_mm,
                      "fov_deg": U.CURVILINEAR.fov_deg, "n_lines": U.CURVILINEAR.n_lines},
            "pose": self._pose_dict(self.pose),  # the subject frame (what the image is formed from)
            "patient": {"z_offset_mm": self.patient_z_mm, "roll_deg": self.patient_roll_deg,
                        "yaw_deg": self.patient_yaw_deg,
                        "window_deg": self.window_deg, "tgc_offset_db": self.tgc_offset_db,
                        "aim_rotation_deg": self.aim_rotation_deg},
            "probe_display": self.bed_pose(),  # the probe fields as shown (bed frame)
            "plane": self.geometry().to_dict(),  # the image plane in the subject frame (frozen: unchanged)
            "controls": {"preset": self.preset, "frequency_mhz": c["frequency_mhz"], "depth_mm": c["depth_mm"],
                         "focus_mm": c["focus_mm"], "gain": c["gain"], "tgc_db": list(c["tgc_db"]),
                         "dynamic_range_db": c["dynamic_range_db"], "grey_map": c["grey_map"],
                         "compound": compound_looks(c["compound"])},
            "frozen": self.frozen, "frozen_t": None if self.frozen_t is None else round(float(self.frozen_t), 3),
            "frozen_image": self._frozen_record if self.frozen else None,
            "image": self.image_dict(),
            "calipers": [cal.to_dict() for cal in self.calipers],
            "caliper_pending": None if self.caliper_pending is None else list(self.caliper_pending),
            "annotations": [a.to_dict() for a in self.annotations],
            "saved": [s.to_dict() for s in self.saved],
            "contact": {**self._contact_dict(beam), "dark_cause": self.dark_cause, "fault": self.contact_fault},
            "events": list(self.events),
            "message": self.message,
        }
