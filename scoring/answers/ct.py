"""The correct answer of a CT episode as named parts (issue 21: how far it moves against the oracle's tolerance).

Moved out of scoring/registry/ct.py so the registry stays plain data: this hook reads the registry's
thresholds and the CT oracle's measures (organ extents, the isocentre reference).
"""
from __future__ import annotations

from scoring.registry.ct import CCTA_ROI_ORGAN, END_TOLERANCE_MM, KUB_MAX_NOISE_HU, RECOVERY_MAX_OVERLAP_MM, CTTask


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
