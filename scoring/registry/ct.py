"""The CT task registry: per task id, its oracle family, anatomy, thresholds and the solver's inputs.

Read by the CT oracles (scoring/oracles/ct.py) and the CT reference solver (runner/agents/reference/ct.py,
and through it the headless driver). Thresholds were tuned so the reference passes on every subject and
seed and a careless plan fails; they are independent of the solver's margins (an oracle is never tuned to
a solver's output). Adding a CT task: its card, one entry here, and, only if its workflow is new, a
branch in the solver's policy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scoring.checks import STATED, TOLERANCE, Check

ROUTINE = "ct_routine_workflow"
COVERAGE = "ct_coverage_isocentre"
RECOVERY = "ct_recovery_coverage"
Family = Literal["ct_routine_workflow", "ct_coverage_isocentre", "ct_recovery_coverage"]

# ---- thresholds -----------------------------------------------------------------------------------
# Every bound a technologist would plan differently for is stated in its card's goal with this number
# (issue 32); only the measurement tolerances on "completely" (COVERAGE_MIN, END_TOLERANCE_MM) stay unstated.
ALLOWED_MARGIN_MM = 30.0  # per end: the margin the AQ efficiency term (coverage_aq) does not count as waste
COVERAGE_MIN = 0.98  # per organ, voxel-centre coverage
# Thin organ ends (costophrenic recesses, kidney poles) hold few voxels, so a range can miss 40 mm of
# lung base at 99 % voxel coverage (70 mm at the routine chest's former 95 %); the range must also reach
# each organ's extreme slices.
END_TOLERANCE_MM = 6.0
CCTA_MIN_HEART_COVERAGE = 0.999  # "100 %": allows a stray voxel at a 2 mm grid edge
# per end, the anatomy's bound where a card does not set its own (goal: "no more than 3 cm beyond the heart")
MAX_EXCESS_MM = {"lungs": 30.0, "liver": 40.0, "kidneys": 40.0, "heart": 30.0, "kub": 45.0}
# The planned-range cards (routine chest, lung, liver, renal, low-dose KUB, and the recovery cards' new range)
# bound the excess at 20 mm per end, and their goals say so: twice the 1 cm per border that Zanca et al. (Eur
# Radiol, 2012) allowed for respiration before counting a chest or abdominal CT range as over-scanned
# (overscanning is common: Campbell et al., AJR, 2005, extra images beyond the lungs in 97-98 % of chest CTs;
# Yar et al., Eur Radiol 31:4358, 2021, 66 % of body CTs). With the anatomy's +-250 mm couch position, the
# anatomy's 30-45 mm windows let the cohort median of a range, typed blind, pass up to 10 % of the cohort
# (routine chest 9 of 90 episodes at 30 mm, KUB 4 of 90 at 45 mm; lung and renal 1.6 and 0.7 of 16 in
# expectation, redrawing the sample's couch positions, breath-holds and pads 4000 times). The liver card's
# "small margin but no more" was 40 mm until issue 32 stated its siblings' 2 cm; the heart keeps 30 mm.
TIGHT_EXCESS_MM = 20.0
ISOCENTRE_TOL_MM = 15.0  # |y_iso - mean body centre y over the organ range| (goal: "within 1.5 cm")
CCTA_ISOCENTRE_TOL_MM = 20.0  # vs the heart centroid, AP (goal: "within 2 cm")
CCTA_MIN_AORTA_HU = 250.0  # descending-aorta blood HU at the first and at the last image of the scan
CCTA_MIN_ROI_IN_AORTA = 0.5  # share of the ROI disc inside the descending aorta (and the centre inside)
CCTA_ROI_ORGAN = "aorta_descending"  # the goal's "descending aorta": not the ascending aorta, arch or abdominal
KUB_MAX_NOISE_HU = 35.0  # image noise ceiling for stone detection (goal: the noise readout "below 35 HU")
# Recovery: the new range goes at most this far beyond the missed organ end ...
RECOVERY_MAX_EXCESS_MM = TIGHT_EXCESS_MM
# ... and re-scans at most this much of the first series (goal: "no more than 2 cm of overlap")
RECOVERY_MAX_OVERLAP_MM = 20.0
RECOVERY_MAX_GAP_MM = 0.0  # "no gap": the new range reaches the first series' edge
# the new scanned length may exceed the missing length by at most the two stated bounds together (one range
# at both edges); a second range over the same missing part is what "only the missing part" excludes
RECOVERY_EXTRA_ALLOWANCE_MM = RECOVERY_MAX_EXCESS_MM + RECOVERY_MAX_OVERLAP_MM
AQ_COVERAGE_FLOOR = 0.5  # coverage at or below this earns no quality

# ---- anatomy: what each task covers, as organ groups of the subject oracle ---------------------------
ANATOMY: dict[str, tuple[str, ...]] = {
    "lungs": ("lungs",), "liver": ("liver",), "kidneys": ("kidney_left", "kidney_right"),
    "heart": ("heart",), "kub": ("kidney_left", "kidney_right", "bladder"),
}

# ---- solver inputs shared by every CT task ----------------------------------------------------------
POSITION_TOLERANCE_MM = 2.5  # the solver re-plans a range edge further than this from its target
HEIGHT_TOLERANCE_MM = 2.0
DOSE_TARGET_FRACTION = 0.88  # of the CTDIvol limit: under it with room, not far below
RECOVERY_OVERLAP_MM = 5.0  # the recovery scan overlaps the prior series by this much


@dataclass(frozen=True)
class CTTask:
    """One CT task: what the oracle checks and what the reference solver aims at."""

    id: str
    family: Family
    protocol: str  # the protocol the goal names (and the scored series must use)
    anatomy: str  # key of ANATOMY: each organ must be covered on its own
    min_coverage: float = COVERAGE_MIN
    isocentre: Literal["body", "heart"] | None = None  # body: mean body centre over the organ range
    isocentre_tol_mm: float = ISOCENTRE_TOL_MM
    bolus_tracking: bool = False  # ROI in the aorta and scan at arterial enhancement
    dose_limit: bool = False  # CTDIvol under the console's stated limit, noise under a ceiling
    margin_top_mm: float = 10.0  # solver: planned range beyond the organ's top / bottom
    margin_bottom_mm: float = 10.0
    excess_mm: float | None = None  # the task's own bound on the excess per end (else its anatomy's)

    @property
    def organs(self) -> tuple[str, ...]:
        return ANATOMY[self.anatomy]

    @property
    def max_excess_mm(self) -> float:
        return MAX_EXCESS_MM[self.anatomy] if self.excess_mm is None else self.excess_mm

    @property
    def recovery(self) -> bool:
        return self.family == RECOVERY

    def checks(self) -> list[Check]:
        """Every threshold the CT oracle (scoring/oracles/ct.py) holds this task to, from the fields above."""
        what = ", ".join(o.replace("_", " ") for o in self.organs)
        out = [Check("coverage", round(100.0 * self.min_coverage, 2), "%", TOLERANCE,
                     f"each organ ({what}) covered completely: share of its voxels inside the range")]
        out.append(Check("ends_covered", END_TOLERANCE_MM, "mm", TOLERANCE,
                         "the range reaches each organ's top and bottom end (may fall short by this)"))
        out.append(Check("excess_per_end", self.max_excess_mm, "mm", STATED,
                         f"scan no more than this beyond the {what} at either end"))
        if self.recovery:
            out += [Check("overlap", RECOVERY_MAX_OVERLAP_MM, "mm", STATED,
                          "the new range re-scans at most this much of the first series"),
                    Check("gap", "no gap", "", STATED, "the new range reaches the first series' edge"
                          f" (a gap of at most {RECOVERY_MAX_GAP_MM:g} mm)"),
                    Check("extra_length", RECOVERY_EXTRA_ALLOWANCE_MM, "mm", TOLERANCE,
                          "the new scan is at most the missing length plus the stated excess and overlap together")]
        if self.isocentre:
            ref = "the heart's centre" if self.isocentre == "heart" else "the body's centre"
            out.append(Check("isocentre", self.isocentre_tol_mm, "mm", STATED,
                             f"isocentre within this of {ref}, front to back"))
        if self.bolus_tracking:
            out += [Check("roi_in_aorta", round(100.0 * CCTA_MIN_ROI_IN_AORTA, 2), "%", TOLERANCE,
                          "the ROI disc inside the aorta (its centre too)"),
                    Check("aorta_hu", CCTA_MIN_AORTA_HU, "HU", STATED,
                          "aortic enhancement at least this from the first to the last image")]
        if self.dose_limit:
            out += [Check("dose_limit", "limit", "", STATED, "CTDIvol at or below the limit shown under the dose"),
                    Check("noise", KUB_MAX_NOISE_HU, "HU", STATED, "image noise at most this (stones visible)")]
        return out


def _entries(*tasks: CTTask) -> dict[str, CTTask]:
    return {t.id: t for t in tasks}


REGISTRY: dict[str, CTTask] = _entries(
    CTTask("ct_ui_smoke_routine", ROUTINE, "chest_routine", "lungs", excess_mm=TIGHT_EXCESS_MM),
    CTTask("ct_lung_coverage_isocenter", COVERAGE, "chest_routine", "lungs", isocentre="body",
           excess_mm=TIGHT_EXCESS_MM),
    CTTask("ct_liver_coverage_isocenter", COVERAGE, "abdomen_liver", "liver", isocentre="body",
           margin_top_mm=15.0, margin_bottom_mm=15.0, excess_mm=TIGHT_EXCESS_MM),
    CTTask("ct_renal_bilateral_coverage", COVERAGE, "renal", "kidneys", margin_top_mm=15.0, margin_bottom_mm=15.0,
           excess_mm=TIGHT_EXCESS_MM),
    CTTask("ccta_heart_coverage_isocenter", COVERAGE, "ccta", "heart", min_coverage=CCTA_MIN_HEART_COVERAGE,
           isocentre="heart", isocentre_tol_mm=CCTA_ISOCENTRE_TOL_MM, bolus_tracking=True),
    CTTask("ct_kub_low_dose_constraint", COVERAGE, "kub_low_dose", "kub", dose_limit=True,
           margin_top_mm=15.0, margin_bottom_mm=10.0, excess_mm=TIGHT_EXCESS_MM),
    CTTask("ct_undercoverage_recovery", RECOVERY, "chest_routine", "lungs", excess_mm=RECOVERY_MAX_EXCESS_MM),
    CTTask("ct_renal_undercoverage_recovery", RECOVERY, "renal", "kidneys", excess_mm=RECOVERY_MAX_EXCESS_MM),
)
