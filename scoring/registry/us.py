"""The ultrasound task registry: per task id, its oracle family, what the oracle checks and the solver's inputs.

Read by the ultrasound oracles (scoring/oracles/us.py) and the reference planner (runner/agents/reference/us.py).
The kidney a task is about comes from the dump (`exam.kidney`, set by the card or drawn per seed), never from
here. Thresholds are judged from what a sonographer would accept (a kidney length quoted to within a few mm,
a long-axis view that shows both poles and the hilum), not from the reference solver's results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scoring.checks import STATED, TOLERANCE, Check

CONTROL = "us_control"
MEASURE = "us_measure"
SAVE = "us_save"
VIEW = "us_view"
OPTIMIZE = "us_optimize"
CONTACT = "us_contact"
Family = Literal["us_control", "us_measure", "us_save", "us_view", "us_optimize", "us_contact"]
Kind = Literal["set_acquisition", "set_display", "measure", "preset_save", "long_axis", "optimize",
               "contact_vs_gain"]

# ---- thresholds -----------------------------------------------------------------------------------
# Values typed into a field: the console stores them at the field's precision (0.1 MHz, 1 dB).
VALUE_TOLERANCE = 0.05
# A kidney length is reported to the nearest few mm; 5% (~5.5 mm of an 11 cm kidney) is the figure.
CALIPER_LENGTH_TOLERANCE = 0.05
# Each caliper end lies on a pole of the kidney as cut by the image: within 1 cm of the section's tip.
CALIPER_END_MAX_MM = 10.0
# Long-axis view: the plane within 15 deg of the kidney's long axis (MR's coarse planning tolerance), the
# visible in-plane length at least 90% of the true length (physics.md: oblique cuts under-estimate), and the
# hilum within 1 cm of the plane and inside the displayed sector.
LONG_AXIS_MAX_DEG = 15.0
LONG_AXIS_MIN_LENGTH_FRACTION = 0.90
HILUM_MAX_MM = 10.0
# The kidney stays in view where a task starts on it and is not about finding it (80% of its length shown).
IN_VIEW_MIN_LENGTH_FRACTION = 0.80
# A saved item "of the kidney" shows at least half its length.
SAVED_VIEW_MIN_LENGTH_FRACTION = 0.50
# Depth fills sensibly: the whole kidney shown with 5-40 mm of tissue below its deepest point (the goal of
# us_kidney_acquisition_optimization_v1 says "0.5 to 4 cm"): sonographers set the depth so the organ under
# study fills the image with just the tissue behind it in view; 8 cm of liver or muscle under a 12 cm-deep
# kidney leaves the kidney small in the upper half of the sector. (Issue 32: an unstated second rule, the
# kidney's bottom at >= 60 % of the depth, bound only kidneys under 6 cm deep -- 1 of 67 cohort starts -- and
# was dropped rather than told: the stated margin is what a sonographer works to.)
DEPTH_MARGIN_MIN_MM = 5.0
DEPTH_MARGIN_MAX_MM = 40.0
# The focal zone at the kidney: within 15 mm of the depth of the kidney's centre (about half its
# antero-posterior extent from the flank; told in the goal as "within 1.5 cm").
FOCUS_MAX_OFF_MM = 15.0
# "Otherwise keep the probe where it is" (optimisation; issue 32): only the probe's rotation about its beam may
# change (turning it round); its footprint stays within 2 mm on the skin and its tilt and rock within 2 deg
# (told in the goal). The pose fields commit at 0.1 mm / 1 deg, so a field retyped with its own value moves the
# probe by less than that; a field step (5 mm, 1 deg of tilt) of deliberate re-aiming does not.
PROBE_KEPT_MAX_MM = 2.0
PROBE_KEPT_MAX_DEG = 2.0
# Mean grey level (0-255) of the kidney on the displayed image: mid-grey renal parenchyma, neither so dark
# that the cortex merges with the noise nor so bright that the sinus saturates (told in the goals of the
# optimisation and dark-image cards as "its mean grey level 70 to 150 on the 0-255 display scale").
KIDNEY_GREY_RANGE = (70.0, 150.0)
# Contact restored: the gel film whole and at most 10% of the scan lines without contact (the edges of the
# convex array on a curved flank: a firm hold on the kidney view couples at least 93% of the lines on every
# cohort subject, a lifted probe at most ~75%).
CONTACT_MIN_LINE_MEAN = 0.90
CONTACT_MIN_FRACTION = 0.90
# Gain not pushed to compensate for poor contact: the goal says to leave the gain and the TGC alone, so the
# overall gain and the TGC pots end where they started (half a field step: the fields commit whole units). A "fix" that
# also sets the gain to some usual value is a compensation the goal ruled out, and it would let a blind
# "fix everything" policy pass every seed.
GAIN_MAX_CHANGE = 0.5
TGC_MAX_CHANGE_DB = 0.5


@dataclass(frozen=True)
class USTask:
    """One ultrasound task: what the oracle checks and what the reference planner aims at."""

    id: str
    family: Family
    kind: Kind
    control: str | None = None  # the control the goal names (a USModel parameter or choice)
    value: float | str | None = None  # the value the goal asks for
    preset: str | None = None  # the preset the goal names
    annotation: str | None = None  # the annotation text the goal asks for

    def checks(self) -> list[Check]:
        """Every threshold the ultrasound oracles (scoring/oracles/us.py) hold this task to, from the fields and
        thresholds above (workflow stages and "nothing else changed" guards carry none)."""
        out = [Check(f, getattr(self, f), "", STATED, what) for f, what in (
            ("preset", "the preset the goal names"), ("annotation", "the annotation text the goal asks for"))
            if getattr(self, f) is not None]
        if self.value is not None:
            unit = next((u for suffix, u in (("_mhz", "MHz"), ("_db", "dB"), ("_mm", "mm"))
                         if str(self.control).endswith(suffix)), "")
            out += [Check("value", self.value, unit, STATED, f"{self.control} set to this"),
                    Check("value_precision", VALUE_TOLERANCE, unit, TOLERANCE, "the field's stored precision")]
        if self.kind == "measure":
            out += [Check("caliper_length", round(100.0 * CALIPER_LENGTH_TOLERANCE, 2), "%", STATED,
                          "the caliper length within this of the kidney's length on the image"),
                    Check("caliper_ends", CALIPER_END_MAX_MM, "mm", STATED, "each caliper end within this of a pole")]
        if self.kind == "preset_save":
            out.append(Check("saved_view", round(100.0 * SAVED_VIEW_MIN_LENGTH_FRACTION, 2), "%", STATED,
                             "the saved item shows at least this share of the kidney's length",
                             said_as=("half of the kidney's length",) if SAVED_VIEW_MIN_LENGTH_FRACTION == 0.5 else ()))
        if self.kind == "long_axis":
            out += [Check("plane_angle", LONG_AXIS_MAX_DEG, "deg", STATED, "the image plane within this of the kidney's long axis"),
                    Check("length_shown", round(100.0 * LONG_AXIS_MIN_LENGTH_FRACTION, 2), "%", STATED,
                          "the kidney shown pole to pole: at least this share of its length"),
                    Check("hilum", HILUM_MAX_MM, "mm", STATED, "the hilum within this of the image plane")]
        if self.kind in ("optimize", "contact_vs_gain"):
            # told on the dark-image card ("keep the probe on the kidney"); on the optimisation card the probe
            # stays put, so it measures "the whole kidney fills the image"
            out.append(Check("kidney_in_view", round(100.0 * IN_VIEW_MIN_LENGTH_FRACTION, 2), "%",
                             STATED if self.kind == "contact_vs_gain" else TOLERANCE,
                             "the kidney kept in view: at least this share of its length"))
        if self.kind == "optimize":
            out += [Check("long_axis_kept", LONG_AXIS_MAX_DEG, "deg", STATED, "the long-axis view kept"),
                    Check("depth_margin", (DEPTH_MARGIN_MIN_MM, DEPTH_MARGIN_MAX_MM), "mm", STATED,
                          "tissue shown under the kidney's deepest point"),
                    Check("focus", FOCUS_MAX_OFF_MM, "mm", STATED, "the focus within this of the kidney's centre depth"),
                    Check("probe_kept_mm", PROBE_KEPT_MAX_MM, "mm", STATED,
                          "the probe's footprint on the skin within this of where it started"),
                    Check("probe_kept_deg", PROBE_KEPT_MAX_DEG, "deg", STATED,
                          "the probe's tilt and rock within this of where they started (its rotation is free)")]
        if self.kind in ("optimize", "contact_vs_gain"):
            out.append(Check("kidney_grey", KIDNEY_GREY_RANGE, "", STATED,
                             "the kidney's mean grey level (0-255) at a normal brightness"
                             + (" (when the gain was the cause)" if self.kind == "contact_vs_gain" else "")))
        if self.kind == "contact_vs_gain":
            out += [Check("contact_lines", round(100.0 * CONTACT_MIN_FRACTION, 2), "%", STATED,
                          "contact restored: at least this share of the scan lines coupled",
                          said_as=("a tenth of its scan lines without contact",) if CONTACT_MIN_FRACTION == 0.9 else ()),
                    Check("contact_mean", round(100.0 * CONTACT_MIN_LINE_MEAN, 2), "%", TOLERANCE,
                          "contact restored: the scan lines' mean coupling at least this"),
                    Check("gain_kept", GAIN_MAX_CHANGE, "", TOLERANCE, "the gain left alone (when contact was the cause)"),
                    Check("tgc_kept", TGC_MAX_CHANGE_DB, "dB", TOLERANCE, "the TGC left alone (when contact was the cause)")]
        return out


def _entries(*tasks: USTask) -> dict[str, USTask]:
    return {t.id: t for t in tasks}


REGISTRY: dict[str, USTask] = _entries(
    USTask("us_kidney_set_acquisition_v1", CONTROL, "set_acquisition", control="frequency_mhz", value=5.0),
    USTask("us_kidney_set_display_v1", CONTROL, "set_display", control="dynamic_range_db", value=50.0),
    USTask("us_kidney_measure_annotate_save_v1", MEASURE, "measure", annotation="RT KIDNEY"),
    USTask("us_kidney_preset_acquire_save_v1", SAVE, "preset_save", preset="Renal"),
    USTask("us_kidney_long_axis_search_v1", VIEW, "long_axis"),
    USTask("us_kidney_acquisition_optimization_v1", OPTIMIZE, "optimize"),
    USTask("us_kidney_contact_vs_gain_v1", CONTACT, "contact_vs_gain"),
)
