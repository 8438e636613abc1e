"""CT oracle families. Pure functions of (state dump, subject oracle, task card).

The state dump gives table millimetres and the frame that maps them to the subject
(subject z = table z + laser_z - patient_shift). Coverage is measured on the hidden organ
masks; thresholds are module constants, recorded here rather than in the cards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rendering import ct_contrast, ct_physics
from runner.taskcard import TaskCard
from scoring.oracles import register
from scoring.oracles.coverage import coverage_fraction, excess_mm, union_coverage_fraction
from scoring.verdict import OracleResult

ROUTINE_MIN_LUNG_COVERAGE = 0.95
ALLOWED_MARGIN_MM = 30.0  # per end, for the efficiency term of AQ
# The protocol each task's goal names (answers stay in scoring/, never in the cards).
EXPECTED_PROTOCOL = {"ct_ui_smoke_routine": "chest_routine"}


def subject_z(state: dict[str, Any], table_z: float) -> float:
    f = state["frame"]
    return float(table_z) + f["laser_z_subject_mm"] - f["patient_shift_mm"]


def ordered_stages(events: list[dict[str, Any]], checks: list[tuple]) -> dict[str, bool]:
    """Each stage is done if an event matching it occurs after the previous stage's event.

    A check is (name, match) or (name, match, True); with True the stage may be met by the same
    event as the previous one (confirming a plan both plans and confirms it)."""
    done: dict[str, bool] = {}
    pos = -1
    for name, match, *shares in checks:
        start = pos if shares and shares[0] else pos + 1
        found = next((i for i, e in enumerate(events) if i >= start and match(e)), None)
        if found is None or (done and not all(done.values())):
            done[name] = False
            continue
        done[name] = True
        pos = found
    return done


# The range is planned once it is edited on the scout or accepted as it stands (confirmed): a
# default range that already fits this patient needs no edit, and its quality is judged by SR/AQ.
RANGE_PLANNED = ("range_planned", lambda e: e["event"] in ("range_changed", "plan_confirmed"))
PLAN_CONFIRMED = ("plan_confirmed", lambda e: e["event"] == "plan_confirmed", True)


def _series_interval(state: dict[str, Any], series: dict[str, Any]) -> tuple[float, float]:
    return subject_z(state, series["end_mm"]), subject_z(state, series["start_mm"])


def coverage_aq(cov: float, organ_len: float, scan_len: float) -> float:
    """0-100: coverage, discounted by scanning far more than the organ plus allowed margins."""
    efficiency = min(1.0, (organ_len + 2 * ALLOWED_MARGIN_MM) / max(scan_len, 1e-6))
    return round(100.0 * cov * efficiency, 2)


@register("ct_routine_workflow")
def routine_workflow(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """ct_ui_smoke_routine: the chest workflow in order, and the scanned range covers the lungs."""
    protocol = EXPECTED_PROTOCOL[card.id]
    ev = state.get("events", [])
    checks = [
        ("protocol_loaded", lambda e: e["event"] == "protocol_loaded" and e.get("protocol") == protocol),
        ("scout_acquired", lambda e: e["event"] == "scout_acquired"),
        RANGE_PLANNED,
        PLAN_CONFIRMED,
        ("scan_completed", lambda e: e["event"] == "scan_completed"),
        ("recon_opened", lambda e: e["event"] == "recon_opened"),
    ]
    stages = ordered_stages(ev, checks)
    pr = sum(stages.values()) / len(stages)
    series = [s for s in state.get("series", []) if s.get("protocol") == protocol]
    details: dict[str, Any] = {"expected_protocol": protocol, "n_series": len(state.get("series", []))}
    if not series:
        return OracleResult(outcome="FAIL", sr=0.0, pr=pr, aq=0.0, stages=stages, details=details,
                            reason="no series was acquired with the routine chest protocol")
    s = series[-1]
    z_lo, z_hi = _series_interval(state, s)
    lung_z = oracle.organ_voxel_z("lungs")
    zmin, zmax = oracle.organ_z_extent("lungs")
    cov = coverage_fraction(lung_z, z_lo, z_hi)
    ex_top, ex_bottom = excess_mm(zmin, zmax, z_lo, z_hi)
    details.update({"series": s["uid"], "scan_subject_z": [round(z_lo, 1), round(z_hi, 1)],
                    "lung_z_extent": [round(zmin, 1), round(zmax, 1)], "lung_coverage": round(cov, 4),
                    "excess_top_mm": round(ex_top, 1), "excess_bottom_mm": round(ex_bottom, 1),
                    "threshold_lung_coverage": ROUTINE_MIN_LUNG_COVERAGE})
    aq = coverage_aq(cov, zmax - zmin, z_hi - z_lo)
    ok_quality = cov >= ROUTINE_MIN_LUNG_COVERAGE
    if ok_quality and all(stages.values()):
        return OracleResult(outcome="PASS", sr=1.0, pr=pr, aq=aq, stages=stages, details=details,
                            reason="workflow complete in order; lungs covered")
    missing = [k for k, v in stages.items() if not v]
    why = []
    if missing:
        why.append("stages missing or out of order: " + ", ".join(missing))
    if not ok_quality:
        why.append(f"lung coverage {cov:.1%} < {ROUTINE_MIN_LUNG_COVERAGE:.0%}")
    return OracleResult(outcome="PARTIAL", sr=0.0, pr=pr, aq=aq, stages=stages, details=details,
                        reason="; ".join(why))


# =====================================================================================
# Coverage / isocentre / bolus / dose families for the L3-L6 CT tasks.
# Thresholds (tuned so the reference passes on every subject and seed and a careless plan fails):
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


@dataclass(frozen=True)
class CoverageSpec:
    protocol: str
    organs: tuple[str, ...]  # each must be covered on its own
    excess_key: str
    isocentre: str | None = None  # "body" (mean body centre over the organ range) | "heart" | None
    min_coverage: float = COVERAGE_MIN


COVERAGE_TASKS: dict[str, CoverageSpec] = {
    "ct_lung_coverage_isocenter": CoverageSpec("chest_routine", ("lungs",), "lungs", "body"),
    "ct_liver_coverage_isocenter": CoverageSpec("abdomen_liver", ("liver",), "liver", "body"),
    "ct_renal_bilateral_coverage": CoverageSpec("renal", ("kidney_left", "kidney_right"), "kidneys"),
    "ccta_heart_coverage_isocenter": CoverageSpec("ccta", ("heart",), "heart", "heart", CCTA_MIN_HEART_COVERAGE),
    "ct_kub_low_dose_constraint": CoverageSpec("kub_low_dose", ("kidney_left", "kidney_right", "bladder"), "kub"),
}
RECOVERY_TASKS: dict[str, CoverageSpec] = {
    "ct_undercoverage_recovery": CoverageSpec("chest_routine", ("lungs",), "lungs"),
    "ct_renal_undercoverage_recovery": CoverageSpec("renal", ("kidney_left", "kidney_right"), "kidneys"),
}
EXPECTED_PROTOCOL.update({k: v.protocol for k, v in {**COVERAGE_TASKS, **RECOVERY_TASKS}.items()})


def organs_extent(oracle, organs: tuple[str, ...]) -> tuple[float, float]:
    ext = [oracle.organ_z_extent(o) for o in organs]
    return min(e[0] for e in ext), max(e[1] for e in ext)


def mean_body_centre_y(oracle, zmin: float, zmax: float) -> float:
    """AP body centre averaged over the organ's z range (2 mm steps)."""
    zs = np.arange(zmin, zmax + 1e-6, 2.0)
    return float(np.mean([oracle.body_centre_y(float(z)) for z in zs]))


def isocentre_target_y(oracle, spec: CoverageSpec) -> float | None:
    if spec.isocentre == "body":
        return mean_body_centre_y(oracle, *organs_extent(oracle, spec.organs))
    if spec.isocentre == "heart":
        return float(oracle.organ_centroid("heart")[1])
    return None


def coverage_term(cov: float) -> float:
    return float(np.clip((cov - AQ_COVERAGE_FLOOR) / (1.0 - AQ_COVERAGE_FLOOR), 0.0, 1.0))


def _event_index(events, pred, after: int = -1) -> int | None:
    return next((i for i, e in enumerate(events) if i > after and pred(e)), None)


def _verdict(stages: dict[str, bool], checks: dict[str, bool], aq: float, details: dict, has_series: bool,
             why_fail: str) -> OracleResult:
    pr = sum(stages.values()) / max(1, len(stages))
    details["checks"] = checks
    aq = round(float(np.clip(aq, 0, 100)), 2)
    if not has_series:
        return OracleResult(outcome="FAIL", sr=0.0, pr=pr, aq=0.0, stages=stages, details=details, reason=why_fail)
    if all(stages.values()) and all(checks.values()):
        return OracleResult(outcome="PASS", sr=1.0, pr=pr, aq=aq, stages=stages, details=details,
                            reason="workflow complete; " + ", ".join(checks) + " met")
    why = []
    missing = [k for k, v in stages.items() if not v]
    if missing:
        why.append("stages missing or out of order: " + ", ".join(missing))
    bad = [k for k, v in checks.items() if not v]
    if bad:
        why.append("failed: " + ", ".join(bad))
    return OracleResult(outcome="PARTIAL", sr=0.0, pr=pr, aq=aq, stages=stages, details=details,
                        reason="; ".join(why))


def missed_ends_mm(oracle, organs: tuple[str, ...], intervals: list[tuple[float, float]]) -> dict[str, float]:
    """Per organ, the largest length (mm) of its top or bottom end left outside every interval."""
    out = {}
    for o in organs:
        zmin, zmax = oracle.organ_z_extent(o)
        top = min(max(0.0, zmax - hi) if lo <= zmax else zmax - zmin for lo, hi in intervals)
        bottom = min(max(0.0, lo - zmin) if hi >= zmin else zmax - zmin for lo, hi in intervals)
        out[o] = round(max(top, bottom), 1)
    return out


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


def _series_coverage(state, oracle, spec: CoverageSpec, series: dict) -> tuple[dict, float, float]:
    z_lo, z_hi = _series_interval(state, series)
    covs = {o: round(coverage_fraction(oracle.organ_voxel_z(o), z_lo, z_hi), 4) for o in spec.organs}
    return covs, z_lo, z_hi


@register("ct_coverage_isocentre")
def coverage_isocentre(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Lung / liver / renal / CCTA / KUB: the scored series covers every organ with bounded excess,
    isocentred where the task asks; CCTA adds ROI-in-aorta and bolus timing, KUB the dose limit and noise."""
    spec = COVERAGE_TASKS[card.id]
    ev = state.get("events", [])
    is_ccta, is_kub = spec.protocol == "ccta", card.id == "ct_kub_low_dose_constraint"
    core = [
        ("protocol_loaded", lambda e: e["event"] == "protocol_loaded" and e.get("protocol") == spec.protocol),
        ("scout_acquired", lambda e: e["event"] == "scout_acquired"),
        RANGE_PLANNED,
        PLAN_CONFIRMED,
    ]
    if is_ccta:
        core.append(("injection_started", lambda e: e["event"] == "injection_started"))
    core += [("scan_completed", lambda e: e["event"] == "scan_completed"),
             ("recon_opened", lambda e: e["event"] == "recon_opened")]
    stages = ordered_stages(ev, core)
    i_scan = _event_index(ev, lambda e: e["event"] == "scan_completed")
    before_scan = ev[:i_scan] if i_scan is not None else ev
    if spec.isocentre:
        stages["isocentre_set"] = any(e["event"] == "table_height_changed" for e in before_scan)
    if is_ccta:
        stages["roi_placed"] = any(e["event"] == "roi_placed" for e in before_scan)
    if is_kub:
        stages["dose_adjusted"] = any(e["event"] == "param_changed" for e in before_scan)
    series = [s for s in state.get("series", []) if s.get("protocol") == spec.protocol and not s.get("prior")]
    details: dict[str, Any] = {"expected_protocol": spec.protocol, "n_series": len(state.get("series", []))}
    if not series:
        return _verdict(stages, {}, 0.0, details, False, f"no series was acquired with the {spec.protocol} protocol")
    s = series[-1]
    covs, z_lo, z_hi = _series_coverage(state, oracle, spec, s)
    zmin, zmax = organs_extent(oracle, spec.organs)
    ex_top, ex_bottom = excess_mm(zmin, zmax, z_lo, z_hi)
    max_ex = MAX_EXCESS_MM[spec.excess_key]
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
        tol = CCTA_ISOCENTRE_TOL_MM if is_ccta else ISOCENTRE_TOL_MM
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
    return _verdict(stages, checks, aq, details, True, "")


def _ccta_checks(state, oracle, s: dict, details: dict, checks: dict) -> float:
    """ROI inside the aorta on the monitoring slice; aortic HU >= threshold over the whole scan."""
    b = state.get("bolus", {})
    roi, mz = b.get("roi"), b.get("monitor_z_mm")
    rt = oracle.runtime
    frac, centre_in = 0.0, False
    if roi is not None and mz is not None:
        zs = subject_z(state, mz)
        k = int(np.clip(np.rint((zs - rt.origin_mm[2]) / rt.spacing_mm[2]), 0, rt.shape[0] - 1))
        mask = oracle.organ_mask("aorta")[k]
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
    feed = float(s["pitch"]) * float(p.get("collimation_mm", 40.0)) / float(p.get("rotation_s", 0.5))
    t0 = float(s["t_start"])
    t1 = t0 + (float(s["start_mm"]) - float(s["end_mm"])) / feed
    lab = rt.label_id("aorta_descending")
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
    spec = RECOVERY_TASKS[card.id]
    ev = state.get("events", [])
    all_series = [s for s in state.get("series", []) if s.get("protocol") == spec.protocol]
    prior = [s for s in all_series if s.get("prior")]
    new = [s for s in all_series if not s.get("prior")]
    prior_uids = {s["uid"] for s in prior}
    i_first_scan = _event_index(ev, lambda e: e["event"] == "scan_started")
    pre = ev[:i_first_scan] if i_first_scan is not None else ev
    stages = {"prior_reviewed": any(e["event"] == "recon_opened" and e.get("series") in prior_uids for e in pre)}
    stages.update(ordered_stages(ev, [
        RANGE_PLANNED,
        PLAN_CONFIRMED,
        ("scan_completed", lambda e: e["event"] == "scan_completed"),
        ("recon_opened", lambda e: e["event"] == "recon_opened" and e.get("series") not in prior_uids)]))
    details: dict[str, Any] = {"expected_protocol": spec.protocol, "n_series": len(state.get("series", []))}
    if not prior:
        return _verdict(stages, {}, 0.0, details, False, "no prior series in the exam history (console fault?)")
    zmin, zmax = organs_extent(oracle, spec.organs)
    p_lo, p_hi = _series_interval(state, prior[0])
    miss_top, miss_bottom = max(0.0, zmax - p_hi), max(0.0, p_lo - zmin)
    clipped = "top" if miss_top >= miss_bottom else "bottom"
    missing = max(miss_top, miss_bottom)
    details.update({"organ_z_extent": [round(zmin, 1), round(zmax, 1)], "prior_subject_z": [round(p_lo, 1), round(p_hi, 1)],
                    "clipped_end": clipped, "missing_mm": round(missing, 1)})
    if not new:
        return _verdict(stages, {}, 0.0, details, False, "no new series was acquired to recover the clipped end")
    intervals = [_series_interval(state, s) for s in all_series]
    covs = {o: round(union_coverage_fraction(oracle.organ_voxel_z(o), intervals), 4) for o in spec.organs}
    p_mid = 0.5 * (p_lo + p_hi)
    ends = []
    extra_len = extra_dlp = 0.0
    for s in new:
        lo, hi = _series_interval(state, s)
        ends.append("top" if 0.5 * (lo + hi) > p_mid else "bottom")
        extra_len += hi - lo
        extra_dlp += float(s["dlp_mgycm"])
    u_lo, u_hi = min(i[0] for i in intervals), max(i[1] for i in intervals)
    ex_top, ex_bottom = excess_mm(zmin, zmax, u_lo, u_hi)
    max_ex = MAX_EXCESS_MM[spec.excess_key]
    allowed = missing + RECOVERY_EXTRA_ALLOWANCE_MM
    details.update({"union_coverage": covs, "extended_ends": ends, "extra_length_mm": round(extra_len, 1),
                    "extra_dlp_mgycm": round(extra_dlp, 1), "prior_dlp_mgycm": prior[0]["dlp_mgycm"],
                    "excess_top_mm": round(ex_top, 1), "excess_bottom_mm": round(ex_bottom, 1),
                    "thresholds": {"coverage": spec.min_coverage, "max_extra_length_mm": round(allowed, 1),
                                   "max_excess_mm": max_ex}})
    missed_after = missed_ends_mm(oracle, spec.organs, intervals)
    ext_frac = extent_fraction(oracle, spec.organs, intervals)
    details.update({"missed_end_mm": missed_after, "extent_covered_fraction": round(ext_frac, 4)})
    checks = {"union_coverage": min(covs.values()) >= spec.min_coverage,
              "ends_covered": max(missed_after.values()) <= END_TOLERANCE_MM,
              "extended_clipped_end": all(e == clipped for e in ends),
              "extra_dose_bounded": extra_len <= allowed,
              "excess": max(ex_top, ex_bottom) <= max_ex}
    aq = 100.0 * coverage_term(min(min(covs.values()), ext_frac)) * min(1.0, allowed / max(extra_len, 1e-6))
    if not checks["extended_clipped_end"]:
        aq *= 0.5
    return _verdict(stages, checks, aq, details, True, "")
