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

    def stage_names(self) -> list[str]:
        """The oracle's stage names for this task, in verdict order."""
        from scoring.oracles.ct import stage_names

        return stage_names(self)


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


# ---- the correct answer of an episode (issue 21: how far it moves against the oracle's tolerance) -------
def _window(lo: float, hi: float):
    """An accepted interval [lo, hi] as an Answer: its centre, with half its width as the tolerance (a value
    passes exactly when it is within the tolerance of the centre)."""
    from scoring.answers import Answer

    return Answer(round(0.5 * (lo + hi), 2), round(0.5 * (hi - lo), 2))


def answers(task: CTTask, state: dict, ops: list) -> dict:
    """The episode's correct answer as named parts, each with the interval the oracle accepts (table mm,
    table height mm, mGy, subject mm), read from the subject's anatomy and the episode's frame and limit.

    - coverage tasks: the range's start and end edges (start in [organ top - END_TOLERANCE_MM, organ top +
      max excess], end likewise at the bottom), the table height putting the isocentre on the oracle's
      reference (+- the isocentre tolerance); CCTA the ROI centre on the monitoring image, in image mm (+- the
      descending aorta's equivalent radius there); KUB the CTDIvol between the noise ceiling and the stated limit;
    - recovery tasks: which end was clipped (a choice), the missed organ end's edge and the prior series'
      edge the new range must reach back to (table mm).
    """
    from rendering.geometry import TableFrame
    from scoring.answers import Answer
    from scoring.oracles.ct import isocentre_target_y, organs_extent
    from scoring.subject_oracle import load_oracle

    oracle = load_oracle(state["subject"])
    frame = TableFrame.from_state(state)
    zmin, zmax = organs_extent(oracle, task.organs)
    top, bottom = float(frame.table_z(zmax)), float(frame.table_z(zmin))
    out: dict = {}
    if task.recovery:
        prior = next(s for s in state["series"] if s.get("prior"))
        miss_top = zmax - prior["subject_z_top"]
        miss_bottom = prior["subject_z_bottom"] - zmin
        clipped = "top" if miss_top >= miss_bottom else "bottom"
        out["clipped_end"] = Answer(clipped)
        if clipped == "top":  # the new start must reach the organ top, its end the prior start (no gap)
            out["missed_edge_mm"] = _window(top - END_TOLERANCE_MM, top + task.max_excess_mm)
            out["overlap_edge_mm"] = _window(prior["start_mm"] - RECOVERY_MAX_OVERLAP_MM, prior["start_mm"])
        else:
            out["missed_edge_mm"] = _window(bottom - task.max_excess_mm, bottom + END_TOLERANCE_MM)
            out["overlap_edge_mm"] = _window(prior["end_mm"], prior["end_mm"] + RECOVERY_MAX_OVERLAP_MM)
        return out
    max_ex = task.max_excess_mm
    out["range_start_mm"] = _window(top - END_TOLERANCE_MM, top + max_ex)
    out["range_end_mm"] = _window(bottom - max_ex, bottom + END_TOLERANCE_MM)
    if task.isocentre:
        y = isocentre_target_y(oracle, task)
        out["table_height_mm"] = Answer(round(float(frame.table_height_for(y)), 2), task.isocentre_tol_mm)
    if task.dose_limit:
        limit = float(state["dose"]["ctdi_limit_mgy"])
        s = [x for x in state["series"] if not x.get("prior")][-1]
        # noise ~ 1/sqrt(CTDIvol) at a fixed slice and patient size (rendering.ct_physics.noise_sigma_hu)
        floor = float(s["ctdi_vol_mgy"]) * (float(s["noise_hu"]) / KUB_MAX_NOISE_HU) ** 2
        out["ctdi_vol_mgy"] = _window(floor, limit)
    if task.bolus_tracking:
        import numpy as np

        roi = state["bolus"]["roi"]
        mz = state["bolus"]["monitor_z_mm"]
        rt = oracle.runtime
        k = int(np.clip(np.rint((float(frame.subject_z(mz)) - rt.origin_mm[2]) / rt.spacing_mm[2]), 0,
                        rt.shape[0] - 1))
        # the descending aorta's section around the reference's ROI (the only aorta the oracle accepts)
        area = float(oracle.organ_mask(CCTA_ROI_ORGAN)[k].sum()) * rt.spacing_mm[0] * rt.spacing_mm[1]
        r = float(np.sqrt(area / np.pi))
        ix, iy = _roi_image_mm(state, roi)
        out["roi_x_mm"] = Answer(round(ix, 2), round(r, 2))
        out["roi_y_mm"] = Answer(round(iy, 2), round(r, 2))
    return out


def _roi_image_mm(state: dict, roi) -> tuple[float, float]:
    """Where the ROI centre lies on the monitoring image (the coordinates a click on the screen gives)."""
    b = state["bolus"]
    if b.get("roi_image_mm") is not None:
        return float(b["roi_image_mm"][0]), float(b["roi_image_mm"][1])
    return float(roi[0]), float(roi[1])
