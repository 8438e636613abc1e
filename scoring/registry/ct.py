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

ROUTINE = "ct_routine_workflow"
COVERAGE = "ct_coverage_isocentre"
RECOVERY = "ct_recovery_coverage"
Family = Literal["ct_routine_workflow", "ct_coverage_isocentre", "ct_recovery_coverage"]

# ---- thresholds -----------------------------------------------------------------------------------
ROUTINE_MIN_LUNG_COVERAGE = 0.95
ALLOWED_MARGIN_MM = 30.0  # routine task: per end, for the efficiency term of AQ
COVERAGE_MIN = 0.98  # per organ, voxel-centre coverage
# Thin organ ends (costophrenic recesses, kidney poles) hold few voxels, so a range can miss 40 mm of
# lung base at 99 % voxel coverage; the range must also reach each organ's extreme slices.
END_TOLERANCE_MM = 6.0
CCTA_MIN_HEART_COVERAGE = 0.999  # "100 %": allows a stray voxel at a 2 mm grid edge
MAX_EXCESS_MM = {"lungs": 30.0, "liver": 40.0, "kidneys": 40.0, "heart": 30.0, "kub": 45.0}
ISOCENTRE_TOL_MM = 15.0  # |y_iso - mean body centre y over the organ range|
CCTA_ISOCENTRE_TOL_MM = 20.0  # vs the heart centroid (AP)
CCTA_MIN_AORTA_HU = 250.0  # aortic blood HU at the first and at the last image of the scan
CCTA_MIN_ROI_IN_AORTA = 0.5  # share of the ROI disc inside the aorta (and the centre inside)
KUB_MAX_NOISE_HU = 35.0  # image noise ceiling for stone detection
RECOVERY_EXTRA_ALLOWANCE_MM = 60.0  # new scanned length may exceed the missing length by this much
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

    @property
    def organs(self) -> tuple[str, ...]:
        return ANATOMY[self.anatomy]

    @property
    def max_excess_mm(self) -> float:
        return MAX_EXCESS_MM[self.anatomy]

    @property
    def recovery(self) -> bool:
        return self.family == RECOVERY

    def stage_names(self) -> list[str]:
        """The oracle's stage names for this task, in verdict order."""
        from scoring.oracles.ct import stage_names

        return stage_names(self)


def _entries(*tasks: CTTask) -> dict[str, CTTask]:
    return {t.id: t for t in tasks}


REGISTRY: dict[str, CTTask] = _entries(
    CTTask("ct_ui_smoke_routine", ROUTINE, "chest_routine", "lungs", min_coverage=ROUTINE_MIN_LUNG_COVERAGE),
    CTTask("ct_lung_coverage_isocenter", COVERAGE, "chest_routine", "lungs", isocentre="body"),
    CTTask("ct_liver_coverage_isocenter", COVERAGE, "abdomen_liver", "liver", isocentre="body",
           margin_top_mm=15.0, margin_bottom_mm=15.0),
    CTTask("ct_renal_bilateral_coverage", COVERAGE, "renal", "kidneys", margin_top_mm=15.0, margin_bottom_mm=15.0),
    CTTask("ccta_heart_coverage_isocenter", COVERAGE, "ccta", "heart", min_coverage=CCTA_MIN_HEART_COVERAGE,
           isocentre="heart", isocentre_tol_mm=CCTA_ISOCENTRE_TOL_MM, bolus_tracking=True),
    CTTask("ct_kub_low_dose_constraint", COVERAGE, "kub_low_dose", "kub", dose_limit=True,
           margin_top_mm=15.0, margin_bottom_mm=10.0),
    CTTask("ct_undercoverage_recovery", RECOVERY, "chest_routine", "lungs"),
    CTTask("ct_renal_undercoverage_recovery", RECOVERY, "renal", "kidneys"),
)
