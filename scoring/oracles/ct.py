"""CT oracle families. Pure functions of (state dump, subject oracle, task card).

The state dump gives table millimetres and the frame that maps them to the subject
(rendering.geometry.TableFrame). Coverage is measured on the hidden organ masks. What each task
covers, its protocol and its thresholds come from the CT task registry (scoring/registry/ct.py),
never from the cards.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from rendering import ct_contrast, ct_physics
from rendering.geometry import TableFrame, helical_time_at
from tasks.card import TaskCard
from scoring.oracles import register
from scoring.oracles.coverage import coverage_fraction, excess_mm, union_coverage_fraction
from scoring.registry import entry_for_card
from scoring.registry.ct import (  # noqa: F401  (thresholds re-exported for tests and reports)
    AQ_COVERAGE_FLOOR, CCTA_MIN_AORTA_HU, CCTA_MIN_HEART_COVERAGE, CCTA_MIN_ROI_IN_AORTA, CCTA_ROI_ORGAN, COVERAGE,
    COVERAGE_MIN, END_TOLERANCE_MM, KUB_MAX_NOISE_HU, RECOVERY, RECOVERY_EXTRA_ALLOWANCE_MM, RECOVERY_MAX_GAP_MM,
    RECOVERY_MAX_OVERLAP_MM, ROUTINE, CTTask)
from scoring.registry.ct import ALLOWED_MARGIN_MM
from scoring.verdict import OracleResult
from scoring.workflow import Stage, checks_verdict, event_in, event_is, events_before, ordered_stages, progress
from scoring.workflow import stage_names as _names


def subject_z(state: dict[str, Any], table_z: float) -> float:
    """Subject z of a table position, in the frame the state dump records."""
    return float(TableFrame.from_state(state).subject_z(float(table_z)))


# The range is planned once it is edited on the scout or accepted as it stands (confirmed): a
# default range that already fits this patient needs no edit, and its quality is judged by SR/AQ.
RANGE_PLANNED = Stage("range_planned", event_in("range_changed", "plan_confirmed"))
PLAN_CONFIRMED = Stage("plan_confirmed", event_is("plan_confirmed"), True)
SCAN_COMPLETED = Stage("scan_completed", event_is("scan_completed"))


def ordered_checks(task: CTTask) -> list[Stage]:
    """The ordered workflow stages of a CT task (recovery: after the prior series was reviewed)."""
    if task.family == RECOVERY:
        return [RANGE_PLANNED, PLAN_CONFIRMED, SCAN_COMPLETED]  # + recon of a new series, built per state
    checks = [Stage("protocol_loaded", event_is("protocol_loaded", protocol=task.protocol)),
              Stage("scout_acquired", event_is("scout_acquired")), RANGE_PLANNED, PLAN_CONFIRMED]
    if task.bolus_tracking:
        checks.append(Stage("injection_started", event_is("injection_started")))
    return checks + [SCAN_COMPLETED, Stage("recon_opened", event_is("recon_opened"))]


def unordered_stage_names(task: CTTask) -> list[str]:
    """Stages judged by presence before the scan rather than by order, after the ordered ones."""
    if task.family != COVERAGE:
        return []
    return (["isocentre_set"] if task.isocentre else []) + (["roi_placed"] if task.bolus_tracking else []) + (
        ["dose_adjusted"] if task.dose_limit else [])


def stage_names(task: CTTask) -> list[str]:
    """Every stage the oracle reports for this task, in verdict order."""
    if task.family == RECOVERY:
        return ["prior_reviewed", *_names(ordered_checks(task)), "recon_opened"]
    return _names(ordered_checks(task)) + unordered_stage_names(task)


def _series_interval(state: dict[str, Any], series: dict[str, Any]) -> tuple[float, float]:
    return subject_z(state, series["end_mm"]), subject_z(state, series["start_mm"])


def coverage_aq(cov: float, organ_len: float, scan_len: float) -> float:
    """0-100: coverage, discounted by scanning far more than the organ plus allowed margins."""
    efficiency = min(1.0, (organ_len + 2 * ALLOWED_MARGIN_MM) / max(scan_len, 1e-6))
    return round(100.0 * cov * efficiency, 2)


@register(ROUTINE)
def routine_workflow(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """ct_ui_smoke_routine: the chest workflow in order, and the scanned range covers the lungs from the
    apices to the bases (coverage and both ends reached) without scanning more than the goal's 2 cm beyond."""
    task: CTTask = entry_for_card(card)
    protocol, organ, min_cov = task.protocol, task.organs[0], task.min_coverage
    stages = ordered_stages(state.get("events", []), ordered_checks(task))
    pr = progress(stages)
    series = [s for s in state.get("series", []) if s.get("protocol") == protocol]
    details: dict[str, Any] = {"expected_protocol": protocol, "n_series": len(state.get("series", []))}
    if not series:
        return OracleResult(outcome="FAIL", sr=0.0, pr=pr, aq=0.0, stages=stages, details=details,
                            reason="no series was acquired with the routine chest protocol")
    s = series[-1]
    z_lo, z_hi = _series_interval(state, s)
    lung_z = oracle.organ_voxel_z(organ)
    zmin, zmax = oracle.organ_z_extent(organ)
    cov = coverage_fraction(lung_z, z_lo, z_hi)
    ex_top, ex_bottom = excess_mm(zmin, zmax, z_lo, z_hi)
    missed = missed_ends_mm(oracle, task.organs, [(z_lo, z_hi)])
    details.update({"series": s["uid"], "scan_subject_z": [round(z_lo, 1), round(z_hi, 1)],
                    "lung_z_extent": [round(zmin, 1), round(zmax, 1)], "lung_coverage": round(cov, 4),
                    "excess_top_mm": round(ex_top, 1), "excess_bottom_mm": round(ex_bottom, 1),
                    "missed_end_mm": missed, "threshold_lung_coverage": min_cov,
                    "threshold_max_excess_mm": task.max_excess_mm, "threshold_end_tolerance_mm": END_TOLERANCE_MM})
    aq = coverage_aq(cov, zmax - zmin, z_hi - z_lo)
    # "completely from the apices to the bases": voxel coverage alone let 70 mm of lung base go (issue 32)
    ok_coverage = cov >= min_cov and max(missed.values()) <= END_TOLERANCE_MM
    ok_excess = max(ex_top, ex_bottom) <= task.max_excess_mm
    ok_quality = ok_coverage and ok_excess
    if ok_quality and all(stages.values()):
        return OracleResult(outcome="PASS", sr=1.0, pr=pr, aq=aq, stages=stages, details=details,
                            reason="workflow complete in order; lungs covered, excess bounded")
    missing = [k for k, v in stages.items() if not v]
    why = []
    if missing:
        why.append("stages missing or out of order: " + ", ".join(missing))
    if not ok_coverage:
        why.append(f"lungs not covered from apices to bases: coverage {cov:.1%} (>= {min_cov:.0%} needed), "
                   f"{max(missed.values()):.0f} mm of an end missed (<= {END_TOLERANCE_MM:.0f} mm allowed)")
    if not ok_excess:
        why.append(f"scanned {max(ex_top, ex_bottom):.0f} mm beyond the lungs (> {task.max_excess_mm:.0f} mm)")
    return OracleResult(outcome="PARTIAL", sr=0.0, pr=pr, aq=aq, stages=stages, details=details,
                        reason="; ".join(why))


# =====================================================================================
# Coverage / isocentre / bolus / dose families for the L3-L6 CT tasks (thresholds: scoring/registry/ct.py).


def organs_extent(oracle, organs: tuple[str, ...]) -> tuple[float, float]:
    ext = [oracle.organ_z_extent(o) for o in organs]
    return min(e[0] for e in ext), max(e[1] for e in ext)


def mean_body_centre_y(oracle, zmin: float, zmax: float) -> float:
    """AP body centre averaged over the organ's z range (2 mm steps)."""
    zs = np.arange(zmin, zmax + 1e-6, 2.0)
    return float(np.mean([oracle.body_centre_y(float(z)) for z in zs]))


def isocentre_target_y(oracle, task: CTTask) -> float | None:
    """Subject y the isocentre should be at for this task (None when the task does not ask)."""
    if task.isocentre == "body":
        return mean_body_centre_y(oracle, *organs_extent(oracle, task.organs))
    if task.isocentre == "heart":
        return float(oracle.organ_centroid("heart")[1])
    return None


def coverage_term(cov: float) -> float:
    return float(np.clip((cov - AQ_COVERAGE_FLOOR) / (1.0 - AQ_COVERAGE_FLOOR), 0.0, 1.0))


def missed_ends_mm(oracle, organs: tuple[str, ...], intervals: list[tuple[float, float]]) -> dict[str, float]:
    """Per organ, the largest length (mm) of its top or bottom end left outside every interval."""
    out = {}
    for o in organs:
        zmin, zmax = oracle.organ_z_extent(o)
        top = min(max(0.0, zmax - hi) if lo <= zmax else zmax - zmin for lo, hi in intervals)
        bottom = min(max(0.0, lo - zmin) if hi >= zmin else zmax - zmin for lo, hi in intervals)
        out[o] = round(max(top, bottom), 1)
    return out


def largest_gap_mm(zmin: float, zmax: float, intervals: list[tuple[float, float]]) -> float:
    """Longest stretch of [zmin, zmax] lying between scanned intervals and inside none of them (mm); the
    organ's ends are missed_ends_mm's."""
    iv = sorted((min(a, b), max(a, b)) for a, b in intervals)
    gap, reach = 0.0, iv[0][1]
    for lo, hi in iv[1:]:
        if lo > reach:
            gap = max(gap, min(lo, zmax) - max(reach, zmin))
        reach = max(reach, hi)
    return round(max(0.0, gap), 1)


def extent_fraction(oracle, organs: tuple[str, ...], intervals: list[tuple[float, float]]) -> float:
    """Smallest share of an organ's z extent covered by the union of the intervals (2 mm sampling)."""
    fr = []
    for o in organs:
        zmin, zmax = oracle.organ_z_extent(o)
        zs = np.arange(zmin, zmax + 1e-6, 1.0)
        inside = np.zeros(zs.shape, bool)
        for lo, hi in intervals:
            inside |= (zs >= lo) & (zs <= hi)
        fr.append(float(inside.mean()))
    return min(fr)


def _series_coverage(state, oracle, spec: CTTask, series: dict) -> tuple[dict, float, float]:
    z_lo, z_hi = _series_interval(state, series)
    covs = {o: round(coverage_fraction(oracle.organ_voxel_z(o), z_lo, z_hi), 4) for o in spec.organs}
    return covs, z_lo, z_hi


@register("ct_coverage_isocentre")
def coverage_isocentre(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Lung / liver / renal / CCTA / KUB: the scored series covers every organ with bounded excess,
    isocentred where the task asks; CCTA adds ROI-in-aorta and bolus timing, KUB the dose limit and noise."""
    spec: CTTask = entry_for_card(card)
    ev = state.get("events", [])
    is_ccta, is_kub = spec.bolus_tracking, spec.dose_limit
    stages = ordered_stages(ev, ordered_checks(spec))
    before_scan = events_before(ev, event_is("scan_completed"))
    if spec.isocentre:
        stages["isocentre_set"] = any(e["event"] == "table_height_changed" for e in before_scan)
    if is_ccta:
        stages["roi_placed"] = any(e["event"] == "roi_placed" for e in before_scan)
    if is_kub:
        stages["dose_adjusted"] = any(e["event"] == "param_changed" for e in before_scan)
    series = [s for s in state.get("series", []) if s.get("protocol") == spec.protocol and not s.get("prior")]
    details: dict[str, Any] = {"expected_protocol": spec.protocol, "n_series": len(state.get("series", []))}
    if not series:
        return checks_verdict(stages, {}, 0.0, details, False, f"no series was acquired with the {spec.protocol} protocol")
    s = series[-1]
    covs, z_lo, z_hi = _series_coverage(state, oracle, spec, s)
    zmin, zmax = organs_extent(oracle, spec.organs)
    ex_top, ex_bottom = excess_mm(zmin, zmax, z_lo, z_hi)
    max_ex = spec.max_excess_mm
    details.update({"series": s["uid"], "scan_subject_z": [round(z_lo, 1), round(z_hi, 1)],
                    "organ_z_extent": [round(zmin, 1), round(zmax, 1)], "coverage": covs,
                    "excess_top_mm": round(ex_top, 1), "excess_bottom_mm": round(ex_bottom, 1),
                    "scan_length_mm": round(z_hi - z_lo, 1),
                    "thresholds": {"coverage": spec.min_coverage, "max_excess_mm": max_ex}})
    missed = missed_ends_mm(oracle, spec.organs, [(z_lo, z_hi)])
    ext_frac = extent_fraction(oracle, spec.organs, [(z_lo, z_hi)])
    details.update({"missed_end_mm": missed, "extent_covered_fraction": round(ext_frac, 4)})
    details["thresholds"]["end_tolerance_mm"] = END_TOLERANCE_MM
    checks = {"coverage": min(covs.values()) >= spec.min_coverage,
              "ends_covered": max(missed.values()) <= END_TOLERANCE_MM,
              "excess": max(ex_top, ex_bottom) <= max_ex}
    eff = min(1.0, (zmax - zmin + 2 * max_ex) / max(z_hi - z_lo, 1e-6))
    aq = 100.0 * coverage_term(min(min(covs.values()), ext_frac)) * eff
    if spec.isocentre:
        target = isocentre_target_y(oracle, spec)
        err = abs(float(s["y_iso_subject"]) - target)
        tol = spec.isocentre_tol_mm
        details.update({"isocentre_y_mm": s["y_iso_subject"], "isocentre_target_y_mm": round(target, 1),
                        "isocentre_error_mm": round(err, 1), "isocentre_reference": spec.isocentre})
        details["thresholds"]["isocentre_tol_mm"] = tol
        checks["isocentre"] = err <= tol
        # a start height that happens to be right needs no change: the stage is the isocentre being set
        stages["isocentre_set"] = stages["isocentre_set"] or err <= tol
        aq *= 1.0 if err <= tol else max(0.0, 1.0 - (err - tol) / (2 * tol))
    if is_ccta:
        aq *= _ccta_checks(state, oracle, s, details, checks)
    if is_kub:
        limit = state.get("dose", {}).get("ctdi_limit_mgy")
        ctdi = ct_physics.ctdi_vol(s["kv"], s["mas"], s["pitch"])
        noise = float(s["noise_hu"])
        details.update({"ctdi_vol_mgy": round(ctdi, 3), "ctdi_limit_mgy": limit, "dlp_mgycm": s["dlp_mgycm"],
                        "noise_hu": noise})
        details["thresholds"]["max_noise_hu"] = KUB_MAX_NOISE_HU
        checks["dose_limit"] = limit is not None and ctdi <= float(limit) + 1e-6
        checks["noise"] = noise <= KUB_MAX_NOISE_HU
        if not checks["dose_limit"]:
            aq *= 0.5
        if not checks["noise"]:
            aq *= max(0.0, 1.0 - (noise - KUB_MAX_NOISE_HU) / KUB_MAX_NOISE_HU)
    return checks_verdict(stages, checks, aq, details, True, "")


def _ccta_checks(state, oracle, s: dict, details: dict, checks: dict) -> float:
    """ROI inside the descending aorta on the monitoring slice (the goal's vessel: an ROI in the ascending aorta
    or arch does not count); descending-aortic HU >= threshold at the first and the last image."""
    b = state.get("bolus", {})
    roi, mz = b.get("roi"), b.get("monitor_z_mm")
    rt = oracle.runtime
    frac, centre_in = 0.0, False
    if roi is not None and mz is not None:
        zs = subject_z(state, mz)
        k = int(np.clip(np.rint((zs - rt.origin_mm[2]) / rt.spacing_mm[2]), 0, rt.shape[0] - 1))
        mask = oracle.organ_mask(CCTA_ROI_ORGAN)[k]
        xs, ys = rt.world_x(), rt.world_y()
        r = float(b.get("roi_radius_mm", 5.0))
        disc = (xs[None, :] - roi[0]) ** 2 + (ys[:, None] - roi[1]) ** 2 <= r * r
        frac = float(mask[disc].mean()) if disc.any() else 0.0
        j, i = int(np.argmin(np.abs(ys - roi[1]))), int(np.argmin(np.abs(xs - roi[0])))
        centre_in = bool(mask[j, i])
    details.update({"roi": roi, "monitor_z_mm": mz, "roi_in_aorta_fraction": round(frac, 3),
                    "roi_centre_in_aorta": centre_in})
    checks["roi_in_aorta"] = centre_in and frac >= CCTA_MIN_ROI_IN_AORTA
    t_inj = s.get("t_injection")
    p = state.get("params", {})
    t0 = float(s["t_start"])
    # the last image is acquired when the helix reaches the range's end
    t1 = helical_time_at(float(s["end_mm"]), float(s["start_mm"]), t0, float(s["pitch"]),
                         float(p.get("collimation_mm", 40.0)), float(p.get("rotation_s", 0.5)))
    lab = rt.label_id(CCTA_ROI_ORGAN)
    base, enh = float(rt.ct_hu_lut()[lab]), float(rt.hu_enhancement_lut()[lab])
    if t_inj is None:
        hu0 = hu1 = base
    else:
        cp = ct_contrast.contrast_params(state["subject"], int(state["seed"]), float(state.get("heart_rate_bpm", 70)))
        hu0 = ct_contrast.arterial_hu(cp, t0 - t_inj, base, enh)
        hu1 = ct_contrast.arterial_hu(cp, t1 - t_inj, base, enh)
    details.update({"aorta_hu_at_scan_start": round(hu0, 1), "aorta_hu_at_scan_end": round(hu1, 1),
                    "scan_t_since_injection_s": None if t_inj is None else [round(t0 - t_inj, 2), round(t1 - t_inj, 2)],
                    "bolus_triggered": any(e["event"] == "bolus_triggered" for e in state.get("events", []))})
    details["thresholds"].update({"min_aorta_hu": CCTA_MIN_AORTA_HU, "min_roi_in_aorta": CCTA_MIN_ROI_IN_AORTA})
    checks["bolus_timing"] = min(hu0, hu1) >= CCTA_MIN_AORTA_HU
    timing = float(np.clip((min(hu0, hu1) - 100.0) / (CCTA_MIN_AORTA_HU - 100.0), 0.0, 1.0))
    return timing * (1.0 if checks["roi_in_aorta"] else 0.8)


@register("ct_recovery_coverage")
def recovery_coverage(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """A prior series clipped one end; the union of prior and new series must cover the organs, the new
    scan must extend the clipped end (not the other), and the extra scanned length stays bounded."""
    spec: CTTask = entry_for_card(card)
    ev = state.get("events", [])
    all_series = [s for s in state.get("series", []) if s.get("protocol") == spec.protocol]
    prior = [s for s in all_series if s.get("prior")]
    new = [s for s in all_series if not s.get("prior")]
    prior_uids = {s["uid"] for s in prior}
    pre = events_before(ev, event_is("scan_started"))
    stages = {"prior_reviewed": any(e["event"] == "recon_opened" and e.get("series") in prior_uids for e in pre)}
    new_recon = Stage("recon_opened", lambda e: e["event"] == "recon_opened" and e.get("series") not in prior_uids)
    stages.update(ordered_stages(ev, [*ordered_checks(spec), new_recon]))
    details: dict[str, Any] = {"expected_protocol": spec.protocol, "n_series": len(state.get("series", []))}
    if not prior:
        return checks_verdict(stages, {}, 0.0, details, False, "no prior series in the exam history (console fault?)")
    zmin, zmax = organs_extent(oracle, spec.organs)
    p_lo, p_hi = _series_interval(state, prior[0])
    miss_top, miss_bottom = max(0.0, zmax - p_hi), max(0.0, p_lo - zmin)
    clipped = "top" if miss_top >= miss_bottom else "bottom"
    missing = max(miss_top, miss_bottom)
    details.update({"organ_z_extent": [round(zmin, 1), round(zmax, 1)], "prior_subject_z": [round(p_lo, 1), round(p_hi, 1)],
                    "clipped_end": clipped, "missing_mm": round(missing, 1)})
    if not new:
        return checks_verdict(stages, {}, 0.0, details, False, "no new series was acquired to recover the clipped end")
    intervals = [_series_interval(state, s) for s in all_series]
    covs = {o: round(union_coverage_fraction(oracle.organ_voxel_z(o), intervals), 4) for o in spec.organs}
    p_mid = 0.5 * (p_lo + p_hi)
    ends = []
    extra_len = extra_dlp = overlap = 0.0
    for s in new:
        lo, hi = _series_interval(state, s)
        ends.append("top" if 0.5 * (lo + hi) > p_mid else "bottom")
        extra_len += hi - lo
        extra_dlp += float(s["dlp_mgycm"])
        overlap += max(0.0, min(hi, p_hi) - max(lo, p_lo))  # first-series range scanned again
    u_lo, u_hi = min(i[0] for i in intervals), max(i[1] for i in intervals)
    ex_top, ex_bottom = excess_mm(zmin, zmax, u_lo, u_hi)
    max_ex = spec.max_excess_mm
    allowed = missing + RECOVERY_EXTRA_ALLOWANCE_MM
    details.update({"union_coverage": covs, "extended_ends": ends, "extra_length_mm": round(extra_len, 1),
                    "overlap_mm": round(overlap, 1),
                    "extra_dlp_mgycm": round(extra_dlp, 1), "prior_dlp_mgycm": prior[0]["dlp_mgycm"],
                    "excess_top_mm": round(ex_top, 1), "excess_bottom_mm": round(ex_bottom, 1),
                    "thresholds": {"coverage": spec.min_coverage, "max_extra_length_mm": round(allowed, 1),
                                   "max_excess_mm": max_ex, "max_overlap_mm": RECOVERY_MAX_OVERLAP_MM}})
    missed_after = missed_ends_mm(oracle, spec.organs, intervals)
    ext_frac = extent_fraction(oracle, spec.organs, intervals)
    gap = largest_gap_mm(zmin, zmax, intervals)
    details.update({"missed_end_mm": missed_after, "extent_covered_fraction": round(ext_frac, 4), "gap_mm": gap})
    details["thresholds"]["max_gap_mm"] = RECOVERY_MAX_GAP_MM
    checks = {"union_coverage": min(covs.values()) >= spec.min_coverage,
              "ends_covered": max(missed_after.values()) <= END_TOLERANCE_MM,
              "no_gap": gap <= RECOVERY_MAX_GAP_MM,  # the goal's "no gap" with the first series
              "extended_clipped_end": all(e == clipped for e in ends),
              "overlap": overlap <= RECOVERY_MAX_OVERLAP_MM,  # the goal's "no more than 2 cm of overlap"
              "extra_dose_bounded": extra_len <= allowed,
              "excess": max(ex_top, ex_bottom) <= max_ex}
    aq = 100.0 * coverage_term(min(min(covs.values()), ext_frac)) * min(1.0, allowed / max(extra_len, 1e-6))
    if not checks["extended_clipped_end"]:
        aq *= 0.5
    return checks_verdict(stages, checks, aq, details, True, "")
