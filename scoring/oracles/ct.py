"""CT oracle families. Pure functions of (state dump, subject oracle, task card).

The state dump gives table millimetres and the frame that maps them to the subject
(subject z = table z + laser_z - patient_shift). Coverage is measured on the hidden organ
masks; thresholds are module constants, recorded here rather than in the cards.
"""
from __future__ import annotations

from typing import Any

from runner.taskcard import TaskCard
from scoring.oracles import register
from scoring.oracles.coverage import coverage_fraction, excess_mm
from scoring.verdict import OracleResult

ROUTINE_MIN_LUNG_COVERAGE = 0.95
ALLOWED_MARGIN_MM = 30.0  # per end, for the efficiency term of AQ
# The protocol each task's goal names (answers stay in scoring/, never in the cards).
EXPECTED_PROTOCOL = {"ct_ui_smoke_routine": "chest_routine"}


def subject_z(state: dict[str, Any], table_z: float) -> float:
    f = state["frame"]
    return float(table_z) + f["laser_z_subject_mm"] - f["patient_shift_mm"]


def ordered_stages(events: list[dict[str, Any]], checks: list[tuple[str, Any]]) -> dict[str, bool]:
    """Each stage is done if an event matching it occurs after the previous stage's event."""
    done: dict[str, bool] = {}
    pos = -1
    for name, match in checks:
        found = next((i for i, e in enumerate(events) if i > pos and match(e)), None)
        if found is None or (done and not all(done.values())):
            done[name] = False
            continue
        done[name] = True
        pos = found
    return done


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
        ("range_planned", lambda e: e["event"] == "range_changed"),
        ("plan_confirmed", lambda e: e["event"] == "plan_confirmed"),
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
