"""MR T1/T2 mapping oracle (family "mr_mapping"): the LAST maps acquired, scored against the subject's anatomy,
the heart rate and the tissue table; and the L6 recovery of a row a fault stopped.

Pure: (state dump, subject oracle, task card) -> OracleResult. Thresholds: scoring/registry/mr.py (MAP_*).

Measures per acquired map (the last series of each mapping protocol in this session, so a corrected
re-acquisition replaces a faulty one):
- geometry: angle between the slice normal and the LV long axis (mitral valve centre -> epicardial apex),
  the slice centre's position along that axis as a share of its length (mid third = mid-ventricular);
- parameters at acquisition (the series' mapping record): trigger, trigger delay + window against the RR
  interval at the subject's heart rate, window against one single-shot image, scheme, slice thickness;
- artefact causes recorded at acquisition (series[].mapping.causes: shim off the heart, banding, window over
  RR, motion, untriggered);
- quantitative: the map re-formed from the dump (the same deterministic physics, rendering.mr_mapping, with
  the series' slice pose, parameters, heart rate, shim box and noise seed -- the oracle never trusts a number
  the console reports) and its mean in the oracle's mid-ventricular myocardial ROI
  (rendering.mr_mapping.myocardial_roi) against the tissue table's myocardial T1 / T2.

Inspection (L5 feedback tasks, "measure the myocardium of each map with the ROI tool"): on each final map an
ROI with at least MAP_ROI_MIN_MYOCARDIUM of its pixels on the LV myocardium of that slice; and where the goal
says "plan both maps on one slice" (MAP_ONE_SLICE_TASKS) the two final slices within MAP_SAME_SLICE_MAX_ANGLE_DEG
and MAP_SAME_SLICE_MAX_MM of each other. Neither changes whether a map is diagnostic.

Outcome of the L5 feedback tasks: their result is a diagnostic map, so an episode whose every acquired map
still fails an artefact, timing or geometry check (what acquiring without correcting the seeded fault
gives) is FAIL, not PARTIAL; one diagnostic map and a missing or off second one is PARTIAL.

L6 (stopped_row_retry): the row the seeded fault stopped was started again after the stop and finished;
no other row was started, deleted, added or changed.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from scoring.oracles import register
from scoring.oracles.mr import events, session_events, start_rows
from scoring.oracles.mr_planning import acquired_series, angle_deg, aq_term, planned_then_acquired, series_centre
from scoring.registry import entry_for_card
from scoring.registry.mr import (MAP_MAX_ANGLE_DEG, MAP_MAX_REL_ERROR, MAP_MID_RANGE, MAP_ONE_SLICE_TASKS,
                                 MAP_PROTOCOLS, MAP_ROI_MIN_MYOCARDIUM, MAP_SAME_SLICE_MAX_ANGLE_DEG,
                                 MAP_SAME_SLICE_MAX_MM, MAP_THICKNESS_MM, MAP_TRIGGER, MAPPING, MRTask)
from scoring.verdict import OracleResult
from scoring.workflow import checks_verdict
from tasks.card import TaskCard

KIND_OF = {"t1_map_molli": "t1", "t2_map_t2prep": "t2"}
MOLLI_SCHEMES = ("5(3)3", "4(1)3(1)2")  # rendering.mr_mapping.MOLLI_SCHEMES (tests check they agree)


def stage_names(task: MRTask) -> list[str]:
    """The oracle's stage names for a mapping task, in verdict order (the card's workflow_stages)."""
    if task.kind == "mapping_geometry":
        return ["slice_planned", "map_acquired"]
    if task.kind == "mapping_parameters":
        return ["parameters_set", "t1_map_acquired", "t2_map_acquired"]
    if task.kind == "mapping_feedback":
        return ["t1_map_acquired", "t2_map_acquired", "map_inspected"]
    return ["row_resumed", "row_completed"]  # stopped_row_retry


# ---- measures (shared with the reference planner and the tests) ---------------------------------------
def geometry_measures(series: dict[str, Any], oracle) -> dict[str, Any]:
    """Angle of the slice to the LV long axis and its centre's share of the mitral -> apex distance."""
    base, apex = (np.asarray(x, float) for x in oracle.lv_long_axis)
    axis = apex - base
    length = float(np.linalg.norm(axis))
    n = np.asarray(series["images"][0]["normal"], float)
    s = float((series_centre(series) - base) @ axis) / length ** 2
    return {"angle_to_long_axis_deg": round(angle_deg(n, axis), 3), "position_share": round(s, 4),
            "lv_length_mm": round(length, 2)}


def geometry_ok(m: dict[str, Any]) -> dict[str, bool]:
    lo, hi = MAP_MID_RANGE
    return {"perpendicular_to_long_axis": m["angle_to_long_axis_deg"] <= MAP_MAX_ANGLE_DEG,
            "mid_ventricular": lo <= m["position_share"] <= hi}


def parameter_measures(series: dict[str, Any], heart_rate_bpm: float) -> dict[str, Any]:
    """The mapping parameters at acquisition against their valid ranges for this heart rate."""
    rec = series["mapping"]
    rr = 60000.0 / float(heart_rate_bpm)
    end = float(rec["trigger_delay_ms"]) + float(rec["acq_window_ms"])
    lo, hi = MAP_THICKNESS_MM
    ok = {"trigger_ecg": rec["trigger"] == MAP_TRIGGER,
          "window_within_rr": end <= rr,
          "window_holds_one_shot": float(rec["acq_window_ms"]) + 1e-6 >= float(rec["shot_ms"]),
          "thickness_in_range": lo <= float(rec["thickness_mm"]) <= hi}
    if rec["kind"] == "t1":
        ok["scheme_valid"] = rec["scheme"] in MOLLI_SCHEMES
    return {"trigger": rec["trigger"], "trigger_delay_ms": rec["trigger_delay_ms"],
            "acq_window_ms": rec["acq_window_ms"], "delay_plus_window_ms": round(end, 1), "rr_ms": round(rr, 1),
            "shot_ms": rec["shot_ms"], "scheme": rec["scheme"], "thickness_mm": rec["thickness_mm"], "ok": ok}


def reformed_map(state: dict[str, Any], series: dict[str, Any], oracle):
    """The series' map formed again from the dump with rendering.mr_mapping (the slice pose of its
    images, its parameters, heart rate, field, shim box and noise seed): the console's deterministic
    physics, so the oracle measures pixels rather than trusting reported statistics. (Only rendering
    is used: scoring never imports console code.)"""
    from rendering import mr_mapping as mm
    from rendering.geometry import PlanePose
    from rendering.mr_image import SliceGroup

    cache = oracle.__dict__.setdefault("_reformed_maps", {})
    key = (state["task"], state["seed"], series["uid"], repr(sorted(series["params"].items())))
    if key not in cache:
        p, rec, im = series["params"], series["mapping"], series["images"][0]
        pose = PlanePose.from_axes(im["centre_mm"], im["u"], im["v"])
        group = SliceGroup(pose, fov_read_mm=float(p["fov_read_mm"]), fov_phase_mm=float(p["fov_phase_mm"]),
                           matrix_read=int(p["matrix"]), thickness_mm=float(p["thickness_mm"]),
                           gap_mm=float(p["gap_mm"]), n_slices=int(p["n_slices"]))
        lines = mm.readout_for(rec["kind"], group.shape[0])
        readout = mm.Readout(float(p["flip_deg"]), float(p["tr_ms"]), lines.n_lines, lines.centre_line)
        box = mm.shim_box_on_pose(pose, rec["shim_box"]["centre"], rec["shim_box"]["size_mm"])
        acquire = mm.acquire_t1_map if rec["kind"] == "t1" else mm.acquire_t2_map
        res = acquire(oracle.runtime, group, rec["scheme"], float(rec["heart_rate_bpm"]), field_t=float(rec["field_t"]),
                      trigger=p["trigger"], trigger_delay_ms=float(p["trigger_delay_ms"]),
                      acq_window_ms=float(p["acq_window_ms"]), shim_box=box, readout=readout,
                      averages=float(p["averages"]), seed=(state["task"], state["seed"], series["uid"]))
        if len(cache) > 16:
            cache.clear()
        cache[key] = res
    return cache[key]


def tissue_truth(oracle, kind: str, field_t: float) -> float:
    rt = oracle.runtime
    k = rt.label_id("lv_myocardium")
    table = rt.tissues.mr_t1(field_t) if kind == "t1" else rt.tissues.mr_t2(field_t)
    return float(table[k])


def quantitative_measures(state: dict[str, Any], series: dict[str, Any], oracle) -> dict[str, Any]:
    """Mean / SD of the re-formed map in the mid-ventricular myocardial ROI vs the tissue table."""
    from rendering import mr_mapping as mm

    res = reformed_map(state, series, oracle)
    base, apex = oracle.lv_long_axis
    roi = mm.myocardial_roi(oracle.runtime, res.grid, base, apex)
    st = mm.roi_stats(res.map_ms, roi, res.fit_ok)
    truth = tissue_truth(oracle, res.kind, float(series["mapping"]["field_t"]))
    rel = abs(st.mean_ms / truth - 1.0) if st.n > 0 else float("inf")
    return {"roi_mean_ms": None if st.n == 0 else round(st.mean_ms, 2),
            "roi_sd_ms": None if st.n == 0 else round(st.sd_ms, 2), "roi_n": st.n,
            "truth_ms": round(truth, 2), "rel_error": round(rel, 4) if math.isfinite(rel) else None}


def map_scores(state: dict[str, Any], oracle, protocol: str, hr: float, quantitative: bool
               ) -> tuple[dict[str, Any], dict[str, bool], list[float]]:
    """(details, checks, AQ terms) of the last map of a protocol (checks prefixed with t1_ / t2_)."""
    kind = KIND_OF[protocol]
    s = acquired_series(state, protocol)
    if s is None or not s.get("mapping"):
        return {}, {f"{kind}_map_acquired": False}, [0.0]
    g = geometry_measures(s, oracle)
    pm = parameter_measures(s, hr)
    causes = list(s["mapping"]["causes"])
    d: dict[str, Any] = {"series": s["uid"], "geometry": g, "parameters": pm, "causes": causes}
    checks = {f"{kind}_{k}": v for k, v in geometry_ok(g).items()}
    checks.update({f"{kind}_{k}": v for k, v in pm["ok"].items()})
    checks[f"{kind}_artefact_free"] = not causes
    lo, hi = MAP_MID_RANGE
    terms = [aq_term(g["angle_to_long_axis_deg"], MAP_MAX_ANGLE_DEG),
             aq_term(max(0.0, lo - g["position_share"], g["position_share"] - hi), 1.0 / 6.0),
             100.0 if not causes else 25.0]
    if quantitative:
        q = quantitative_measures(state, s, oracle)
        d["quantitative"] = q
        checks[f"{kind}_value_within_tolerance"] = q["rel_error"] is not None and q["rel_error"] <= MAP_MAX_REL_ERROR
        terms.append(aq_term(q["rel_error"] if q["rel_error"] is not None else float("inf"), MAP_MAX_REL_ERROR))
    return d, checks, terms


def diagnostic(kind: str, checks: dict[str, bool]) -> bool:
    """A map is diagnostic when it was acquired and every one of its checks holds except the quantitative
    tolerance and the operator's ROI: no artefact cause, valid trigger and timing, mid-ventricular and
    perpendicular."""
    skip = (f"{kind}_value_within_tolerance", f"{kind}_myocardium_measured")
    own = [v for k, v in checks.items() if k.startswith(f"{kind}_") and k not in skip]
    return bool(own) and all(own)  # a missing map has only "<kind>_map_acquired": False


def roi_mask(grid, roi: dict[str, Any]) -> np.ndarray:
    """bool (rows, cols) pixels of a map grid inside an ROI event's ellipse (plane mm about the image centre)."""
    from rendering import mr_mapping as mm

    du, dv = grid.pixel_mm
    c, r = roi["centre_mm"], roi["radii_mm"]
    return mm.ellipse_mask(grid.shape, ((grid.v_top - c[1]) / dv, (c[0] - grid.u0) / du),
                           (abs(r[1]) / dv, abs(r[0]) / du))


def roi_myocardium_share(state: dict[str, Any], series: dict[str, Any], oracle, roi: dict[str, Any]) -> float:
    """Share of an ROI's pixels (a roi_measured event: an ellipse in the map's plane mm about the image
    centre, u right, v up) that lie on the left-ventricular myocardium of the map's slice (the subject's
    labels resliced on the re-formed map's grid). The ellipse is rasterised as the console's ROI tool does
    (consoles/mr/mapping.ellipse_stats; a test checks that the pixel counts agree)."""
    from rendering import mr_mapping as mm

    g = reformed_map(state, series, oracle).grid
    mask = roi_mask(g, roi)
    if not mask.any():
        return 0.0
    base, apex = oracle.lv_long_axis
    myo = mm.myocardial_roi(oracle.runtime, g, base, apex, mid_third=False, erode_px=0)
    return float((mask & myo).sum()) / float(mask.sum())


def inspection_measures(state: dict[str, Any], oracle) -> tuple[dict[str, Any], dict[str, bool]]:
    """Per final map (the last series of each mapping protocol, the one scored): the best myocardial share
    of the ROIs drawn on it, and whether one reaches MAP_ROI_MIN_MYOCARDIUM ("measure the myocardium of
    each map")."""
    details: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    for protocol in MAP_PROTOCOLS:
        kind = KIND_OF[protocol]
        s = acquired_series(state, protocol)
        rois = [] if s is None else events(state, "roi_measured", series=s["uid"])
        shares = [round(roi_myocardium_share(state, s, oracle, e), 3) for e in rois]
        details[kind] = {"series": None if s is None else s["uid"], "roi_myocardium_shares": shares}
        checks[f"{kind}_myocardium_measured"] = any(x >= MAP_ROI_MIN_MYOCARDIUM for x in shares)
    return details, checks


def same_slice_measures(state: dict[str, Any]) -> dict[str, Any] | None:
    """Angle between the final T1 and T2 map slices' normals and the larger distance of either slice's
    centre from the other's plane (None unless both maps were acquired)."""
    a, b = (acquired_series(state, p) for p in MAP_PROTOCOLS)
    if a is None or b is None:
        return None
    ia, ib = a["images"][0], b["images"][0]
    na, nb = (np.asarray(im["normal"], float) for im in (ia, ib))
    ca, cb = series_centre(a), series_centre(b)
    dist = max(abs(float((cb - ca) @ na)), abs(float((ca - cb) @ nb)))
    return {"angle_deg": round(angle_deg(na, nb), 3), "offset_mm": round(dist, 2)}  # angle_deg is sign-free


def same_slice_ok(m: dict[str, Any] | None) -> bool:
    return m is not None and m["angle_deg"] <= MAP_SAME_SLICE_MAX_ANGLE_DEG and m["offset_mm"] <= MAP_SAME_SLICE_MAX_MM


def _roi_measured(state: dict[str, Any]) -> bool:
    return bool(events(state, "roi_measured"))


def _stopped_row_retry(state: dict[str, Any]) -> tuple[dict[str, bool], dict[str, bool], dict[str, Any], float]:
    seeded = state["start"].get("seeded") or {}
    uid = seeded.get("stop_fault_row")
    ev = session_events(state)
    i_stop = next((i for i, e in enumerate(ev) if e["event"] == "row_fault_stopped" and e.get("row") == uid), None)
    i_restart = next((i for i, e in enumerate(ev) if i_stop is not None and i > i_stop and e["event"] == "row_started"
                      and e.get("row") == uid), None)
    i_done = next((i for i, e in enumerate(ev) if i_restart is not None and i > i_restart and e["event"] == "row_done"
                   and e.get("row") == uid), None)
    stages = {"row_resumed": i_restart is not None, "row_completed": i_done is not None}
    start = {r["uid"]: r for r in start_rows(state)}
    end = {r["uid"]: r for r in state["queue"]}
    others_started = sorted({e["row"] for e in ev if e["event"] == "row_started" and e.get("row") != uid})
    changed = sorted(k for k, r in start.items() if k != uid and (
        k not in end or end[k]["status"] != r["status"] or end[k]["params"] != r["params"] or end[k]["name"] != r["name"]))
    added = sorted(set(end) - set(start))
    checks = {"fault_happened": i_stop is not None, "stopped_row_done": end.get(uid, {}).get("status") == "done",
              "no_other_row_started": not others_started, "other_rows_unchanged": not changed and not added}
    details = {"stopped_row": uid, "fault_t": seeded.get("stop_fault_t"), "other_rows_started": others_started,
               "rows_changed": changed, "rows_added": added}
    aq = 100.0 * float(np.mean([checks["stopped_row_done"], checks["no_other_row_started"],
                                checks["other_rows_unchanged"]]))
    return stages, checks, details, aq


# ---- the family ---------------------------------------------------------------------------------------
@register(MAPPING)
def mapping_oracle(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """T1/T2 mapping tasks (geometry, parameters, acquire-inspect-correct) and the stopped-row recovery."""
    task: MRTask = entry_for_card(card)
    details: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    stages: dict[str, bool] = {}
    terms: list[float] = []
    hr = float(state["physio"]["heart_rate_bpm"])
    details["thresholds"] = {"angle_deg": MAP_MAX_ANGLE_DEG, "mid_range": list(MAP_MID_RANGE),
                             "thickness_mm": list(MAP_THICKNESS_MM), "rel_error": MAP_MAX_REL_ERROR,
                             "roi_min_myocardium": MAP_ROI_MIN_MYOCARDIUM,
                             "same_slice": [MAP_SAME_SLICE_MAX_ANGLE_DEG, MAP_SAME_SLICE_MAX_MM]}
    details["seeded"] = state["start"].get("seeded") or {}
    if task.kind == "mapping_geometry":
        planned, acquired = planned_then_acquired(state, task.protocol)
        stages.update({"slice_planned": planned, "map_acquired": acquired})
        s = acquired_series(state, task.protocol)
        if s is None:
            checks["map_acquired"] = False
            terms = [0.0]
        else:
            g = geometry_measures(s, oracle)
            details["geometry"] = g
            checks.update(geometry_ok(g))
            lo, hi = MAP_MID_RANGE
            terms = [aq_term(g["angle_to_long_axis_deg"], MAP_MAX_ANGLE_DEG),
                     aq_term(max(0.0, lo - g["position_share"], g["position_share"] - hi), 1.0 / 6.0)]
    elif task.kind in ("mapping_parameters", "mapping_feedback"):
        for protocol in MAP_PROTOCOLS:
            d, c, t = map_scores(state, oracle, protocol, hr, quantitative=task.kind == "mapping_feedback")
            kind = KIND_OF[protocol]
            details[kind] = d
            if task.kind == "mapping_parameters":  # L4 scores the parameters; geometry was staged
                c = {k: v for k, v in c.items() if not k.endswith(("perpendicular_to_long_axis", "mid_ventricular"))}
            checks.update(c)
            terms += t
            stages[f"{kind}_map_acquired"] = acquired_series(state, protocol) is not None
        if task.kind == "mapping_parameters":
            stages["parameters_set"] = any(e["event"] == "param_changed" for e in session_events(state))
        else:
            stages["map_inspected"] = _roi_measured(state)
            details["inspection"], c = inspection_measures(state, oracle)
            checks.update(c)
            if task.id in MAP_ONE_SLICE_TASKS:
                details["same_slice"] = same_slice_measures(state)
                checks["maps_on_one_slice"] = same_slice_ok(details["same_slice"])
    else:
        stages, checks, details2, aq = _stopped_row_retry(state)
        details.update(details2)
        terms = [aq]
    stages = {k: bool(stages.get(k, False)) for k in stage_names(task)}
    aq = float(np.mean(terms)) if terms else 0.0
    if task.kind == "mapping_feedback" and any(stages.values()):
        good = [KIND_OF[p] for p in MAP_PROTOCOLS if diagnostic(KIND_OF[p], checks)]
        details["diagnostic_maps"] = good
        if not good:
            bad = sorted(k for k, v in checks.items() if not v)
            return checks_verdict(stages, checks, aq, details, False,
                                  "no diagnostic map: every acquired map fails " + ", ".join(bad))
    return checks_verdict(stages, checks, aq, details, any(stages.values()), "nothing was done towards the task")


# ---- issue 21: the episode's correct answer as named parts (scoring/registry/mr.answers) ------------------
# feedback tasks whose rows start on the mid short axis (consoles/mr: mid_sax): no rotation is part of the answer
STAGED_PLAN_TASKS = ("mr_t1t2_mapping_staged",)
MOTION_MAX_MM = 2.0  # consoles/mr/mapping.MOTION_CAUSE_MM: the motion cause the oracle fails (artefact_free)
DELAY_STEP_MS = 5.0


def valid_delay_range(series: dict[str, Any]) -> tuple[float, float] | None:
    """(lo, hi) ms of ECG trigger delays that the oracle accepts for a map's acquisition window at its heart
    rate: delay + window inside the RR interval and the shot's endocardial excursion within the motion cause's
    limit (rendering.mr_mapping's motion model, as the acquisition records it); None when none is."""
    from rendering import mr_mapping as mm

    rec = series["mapping"]
    ro = mm.readout_for(rec["kind"], int(series["images"][0]["shape"][0]))
    rr = mm.rr_ms(float(rec["heart_rate_bpm"]))
    window = float(rec["acq_window_ms"])
    rows = int(series["images"][0]["shape"][0])
    ok = []
    for delay in np.arange(0.0, rr - window + 1e-6, DELAY_STEP_MS):
        offset = mm.readout_offset_ms(ro, float(delay), window)
        exc = mm._motion_fields(rows, np.array([offset]), ro, rr)
        if mm.PEAK_MOTION_MM * float(exc.max() - exc.min()) <= MOTION_MAX_MM:
            ok.append(float(delay))
    return (min(ok), max(ok)) if ok else None


def _basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing n to an orthonormal frame, fixed per n (x or y projected)."""
    ref = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = ref - (ref @ n) * n
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def geometry_parts(state: dict[str, Any], oracle, protocol: str) -> dict[str, tuple[float, float]]:
    """The mid-ventricular SAX target relative to where the map's row started (its start pose; a row added
    during the session starts at the isocentre, transverse): the LV long axis' tilt about the start plane's
    two in-plane axes (deg, tolerance MAP_MAX_ANGLE_DEG) and the target centre's offset from the start
    centre along the axis (mm, tolerance the mid third's half-width). A row added from a library with a saved
    plan (the start record's seeded["library_plans"]) starts from that plan."""
    base, apex = (np.asarray(x, float) for x in oracle.lv_long_axis)
    length = float(np.linalg.norm(apex - base))
    axis = (apex - base) / length
    row = next((r for r in state["start"]["queue"] if r["protocol"] == protocol), None)
    saved = ((state["start"].get("seeded") or {}).get("library_plans") or {}).get(protocol)
    if row is not None:
        n0, c0 = np.asarray(row["params"]["normal"], float), np.asarray(row["params"]["centre_mm"], float)
    elif saved is not None:  # a row added from a library that holds another patient's saved plan
        n0, c0 = np.asarray(saved["normal"], float), np.asarray(saved["centre_mm"], float)
    else:
        n0, c0 = np.array([0.0, 0.0, 1.0]), np.asarray(state["isocentre_mm"], float)
    n0 = n0 / np.linalg.norm(n0)
    a = axis if axis @ n0 >= 0 else -axis
    u0, v0 = _basis(n0)
    half_third = (MAP_MID_RANGE[1] - MAP_MID_RANGE[0]) / 2.0 * length
    centre = (base + apex) / 2.0
    return {"tilt_u_deg": (math.degrees(math.atan2(a @ u0, a @ n0)), MAP_MAX_ANGLE_DEG),
            "tilt_v_deg": (math.degrees(math.atan2(a @ v0, a @ n0)), MAP_MAX_ANGLE_DEG),
            "axial_offset_mm": (float((centre - c0) @ axis), half_third)}


def timing_parts(state: dict[str, Any], protocol: str) -> dict[str, tuple[float, float]]:
    """The trigger delay the oracle accepts for the last map of `protocol` (its window, heart rate): the
    valid range's midpoint, tolerance its half-width."""
    s = acquired_series(state, protocol)
    rng = None if s is None or not s.get("mapping") else valid_delay_range(s)
    if rng is None:
        return {}
    lo, hi = rng
    return {f"{KIND_OF[protocol]}_trigger_delay_ms": ((lo + hi) / 2.0, max(DELAY_STEP_MS, (hi - lo) / 2.0))}


def answer_parts(task: MRTask, state: dict[str, Any]) -> dict[str, tuple[Any, float | None]]:
    """{name: (value, tolerance)} of one episode of a mapping task (tolerance None: a categorical part)."""
    from scoring.subject_oracle import load_oracle

    seeded = state["start"].get("seeded") or {}
    if task.kind == "stopped_row_retry":  # which row to open and resume: its place in the queue
        uids = [r["uid"] for r in state["start"]["queue"]]
        return {"stopped_row_position": (str(uids.index(seeded["stop_fault_row"]) + 1), None)}
    oracle = load_oracle(state["subject"])
    out: dict[str, tuple[Any, float | None]] = {}
    if task.kind == "mapping_geometry":
        out.update(geometry_parts(state, oracle, task.protocol))
        return out
    if task.kind == "mapping_feedback":
        g = geometry_parts(state, oracle, MAP_PROTOCOLS[0])
        if task.id in STAGED_PLAN_TASKS:  # the staged plan's angle is right: only a seeded basal slice moves it
            g = {"axial_offset_mm": g["axial_offset_mm"]}
        out.update(g)
        out["fault"] = (str(seeded.get("mapping_fault", "none")), None)
    for protocol in MAP_PROTOCOLS:
        out.update(timing_parts(state, protocol))
    return out
