"""Ultrasound oracle families. Pure functions of (state dump, subject oracle, task card) -> OracleResult.

What each task checks comes from the ultrasound registry (scoring/registry/us.py); the kidney from the dump
(`exam.kidney`). The anatomy is measured on the subject oracle's kidney mask, never on the console's image:

- the kidney's true length: the extent of its voxels along their first principal axis (PCA) plus one voxel
  (voxel centres span one voxel less than the organ); its long axis is that axis;
- the hilum: the construction's landmark (`kidney_<side>_hilum`) when the subject has it, otherwise the
  medial concavity estimated as the point half the kidney's width from its centre towards the midline;
- the kidney as cut by an image: the mask resliced on the image plane (rendering.geometry.reslice) inside
  the displayed sector (apex, fan angle and depth of the dumped plane and acquisition); its in-plane length
  is the section's largest diameter (Feret), its poles that diameter's ends, its depths those of its pixels;
- echo levels: the image the agent saw re-formed from the dump (rendering.us_image.frame_from_record), grey
  levels of the kidney's pixels.

Outcome: FAIL when nothing was done towards the task (no stage met), PASS when every stage and check holds,
PARTIAL otherwise. AQ (0-100) is the share of the task's checks met.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

import numpy as np

from rendering.geometry import PlanePose, ResliceGrid, reslice
from scoring.oracles import register
from scoring.registry import entry_for_card
from scoring.registry.us import (CALIPER_END_MAX_MM, CALIPER_LENGTH_TOLERANCE, CONTACT, CONTACT_MIN_FRACTION,
                                 CONTACT_MIN_LINE_MEAN, CONTROL, DEPTH_MARGIN_MAX_MM, DEPTH_MARGIN_MIN_MM,
                                 FOCUS_MAX_OFF_MM,
                                 GAIN_MAX_CHANGE, HILUM_MAX_MM, IN_VIEW_MIN_LENGTH_FRACTION, KIDNEY_GREY_RANGE,
                                 LONG_AXIS_MAX_DEG, LONG_AXIS_MIN_LENGTH_FRACTION, MEASURE, OPTIMIZE,
                                 PROBE_KEPT_MAX_DEG, PROBE_KEPT_MAX_MM, SAVE, SAVED_VIEW_MIN_LENGTH_FRACTION,
                                 TGC_MAX_CHANGE_DB, VALUE_TOLERANCE, VIEW, USTask)
from scoring.verdict import OracleResult
from scoring.workflow import checks_verdict
from tasks.card import TaskCard

SECTION_PIXEL_MM = 0.5
STAGES: dict[str, list[str]] = {
    "set_acquisition": ["value_set"],
    "set_display": ["value_set"],
    "measure": ["frozen", "caliper_placed", "annotated", "image_saved"],
    "preset_save": ["preset_selected", "item_saved"],
    "long_axis": ["probe_moved"],
    "optimize": ["depth_adjusted", "focus_adjusted", "gain_adjusted"],
    "contact_vs_gain": ["image_adjusted"],
}
ACQUISITION_CONTROLS = ("frequency_mhz", "depth_mm", "focus_mm", "gain", "tgc_db", "compound")
DISPLAY_CONTROLS = ("dynamic_range_db", "grey_map")


def stage_names(task: USTask) -> list[str]:
    """The oracle's stage names for a task, in verdict order (the card's workflow_stages)."""
    return list(STAGES[task.kind])


# ---- reading the dump -------------------------------------------------------------------------------
def session_events(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(state.get("events", []))[int(state["start"].get("n_events", 0)):]


def events(state: Mapping[str, Any], kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in session_events(state) if e["event"] == kind and all(e.get(k) == v for k, v in fields.items())]


def changed(state: Mapping[str, Any], *names: str) -> bool:
    """Whether a param_changed event names one of these controls (prefix match for tgc_)."""
    return any(e.get("name") in names or (e.get("name", "").startswith("tgc_") and "tgc" in names)
               for e in events(state, "param_changed"))


def control_changes(state: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every control (and the preset) whose end value differs from the start: name -> (start, end)."""
    a, b = state["start"]["controls"], state["controls"]
    out = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    if state["start"]["preset"] != state["controls"]["preset"]:
        out["preset"] = (state["start"]["preset"], state["controls"]["preset"])
    return out


def pose_changes(state: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    a, b = state["start"]["pose"], state["pose"]
    return {k: (a[k], b[k]) for k in a if abs(float(a[k]) - float(b[k])) > 1e-6}


def shown(state: Mapping[str, Any]) -> dict[str, Any]:
    """The record of the image on the screen: the frozen acquisition, or the live one."""
    if state.get("frozen") and state.get("frozen_image"):
        return {**state["frozen_image"], "display": {k: state["controls"][k] for k in DISPLAY_CONTROLS}}
    return {"pose": state["pose"], "plane": state["plane"], "controls": state["controls"], "contact": state["contact"]}


def record_depth(record: Mapping[str, Any]) -> float:
    return float((record.get("acquisition") or record["controls"])["depth_mm"])


def record_focus(record: Mapping[str, Any]) -> float:
    return float((record.get("acquisition") or record["controls"])["focus_mm"])


# ---- kidney anatomy -----------------------------------------------------------------------------------
def kidney_anatomy(oracle, side: str) -> dict[str, Any]:
    """Centre, long axis (lower -> upper pole), true length (mm) and hilum of one kidney (cached on the
    oracle: every check of an episode reads it)."""
    cache = oracle._mask_cache
    key = ("us_kidney_anatomy", side)
    if key in cache:
        return cache[key]
    pts = oracle.organ_voxels_mm(f"kidney_{side}")
    c = pts.mean(axis=0)
    _, _, vt = np.linalg.svd(pts - c, full_matrices=False)
    axis = vt[0] if vt[0, 2] >= 0 else -vt[0]
    proj = (pts - c) @ axis
    spacing = float(np.mean(oracle.runtime.spacing_mm))
    length = float(proj.max() - proj.min()) + spacing
    hilum = oracle.landmarks.get(f"kidney_{side}_hilum")
    if hilum is None:  # the medial concavity: half the width from the centre towards the midline
        med = np.array([-c[0], 0.0, 0.0])
        med -= np.dot(med, axis) * axis
        med /= max(1e-9, float(np.linalg.norm(med)))
        hilum = c + med * 0.5 * float(np.ptp((pts - c) @ med))
    out = {"centre": c, "axis": axis, "length_mm": length, "hilum": np.asarray(hilum, float), "points": pts}
    cache[key] = out
    return out


def _plane_vectors(plane: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(footprint, u = screen right, beam axis = image y, normal) of a dumped plane."""
    f = np.asarray(plane["footprint_mm"], float)
    u = np.asarray(plane["u"], float)
    b = np.asarray(plane["beam_axis"], float)
    return f, u, b, np.cross(u, b)


def in_sector(plane: Mapping[str, Any], depth_mm: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether image points (x right, y down from the footprint, mm) lie inside the displayed sector."""
    r0 = float(plane["radius_mm"])
    h = math.radians(float(plane["fov_deg"])) / 2.0
    r = np.hypot(x, y + r0)
    ang = np.arctan2(x, y + r0)
    return (r >= r0) & (r <= r0 + depth_mm) & (np.abs(ang) <= h)


def kidney_section(oracle, side: str, plane: Mapping[str, Any], depth_mm: float) -> dict[str, Any]:
    """The kidney as the image cuts it: the mask resliced on the image plane inside the sector.

    Returns the section's area (mm^2), its in-plane length (largest diameter), the diameter's ends (image mm
    and subject mm), and the depth of its top, centre and bottom (image y); length 0 when the image misses it."""
    f, u, b, n = _plane_vectors(plane)
    r0 = float(plane["radius_mm"])
    h = math.radians(float(plane["fov_deg"])) / 2.0
    half_w = (r0 + depth_mm) * math.sin(h)
    y_top = r0 * math.cos(h) - r0
    # reslice only around the kidney's voxels near the plane (the rest of the sector cannot hold it)
    d = kidney_anatomy(oracle, side)["points"] - f
    near = np.abs(d @ n) <= 2.0 * float(np.max(oracle.runtime.spacing_mm))
    x0, x1, y0, y1 = -1.0, 1.0, 0.0, 2.0  # a token patch when the plane misses the kidney
    if near.any():
        kx, ky = d[near] @ u, d[near] @ b
        bx0, bx1 = max(-half_w, float(kx.min()) - 3.0), min(half_w, float(kx.max()) + 3.0)
        by0, by1 = max(y_top, float(ky.min()) - 3.0), min(depth_mm, float(ky.max()) + 3.0)
        if bx1 > bx0 and by1 > by0:
            x0, x1, y0, y1 = bx0, bx1, by0, by1
    xc, yc = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    pose = PlanePose.from_axes(f + xc * u + yc * b, u, -b)
    mask = oracle.organ_mask(f"kidney_{side}").astype(np.uint8)
    rt = oracle.runtime
    grid = ResliceGrid.centred(pose, (x1 - x0 + 1.0, y1 - y0 + 1.0), SECTION_PIXEL_MM)
    cut = reslice(mask, rt.origin_mm, rt.spacing_mm, grid, order=0) > 0
    uu, vv = grid.uv()
    x, y = xc + uu, yc - vv
    cut &= in_sector(plane, depth_mm, x, y)
    out: dict[str, Any] = {"area_mm2": round(float(cut.sum()) * SECTION_PIXEL_MM ** 2, 1), "length_mm": 0.0,
                           "ends_mm": None, "ends_subject_mm": None, "top_mm": None, "centre_mm": None,
                           "bottom_mm": None}
    if cut.sum() < 3:
        return out
    px, py = x[cut], y[cut]
    pts = np.stack([px, py], axis=1)
    i, j = _farthest_pair(pts)
    ends = pts[[i, j]]
    ends = ends[np.argsort(ends[:, 0])]  # left end first
    out.update({"length_mm": round(float(np.linalg.norm(ends[1] - ends[0])) + SECTION_PIXEL_MM, 2),
                "ends_mm": [[round(float(v), 2) for v in e] for e in ends],
                "ends_subject_mm": [[round(float(v), 2) for v in (f + e[0] * u + e[1] * b)] for e in ends],
                "top_mm": round(float(py.min()), 2), "centre_mm": round(float(py.mean()), 2),
                "bottom_mm": round(float(py.max()), 2)})
    return out


def _farthest_pair(pts: np.ndarray) -> tuple[int, int]:
    """Indices of the two points farthest apart (on the convex hull)."""
    if len(pts) > 3:
        try:
            from scipy.spatial import ConvexHull

            hull = ConvexHull(pts).vertices
        except Exception:  # degenerate (collinear) sections
            hull = np.arange(len(pts))
    else:
        hull = np.arange(len(pts))
    q = pts[hull]
    d = ((q[:, None, :] - q[None, :, :]) ** 2).sum(-1)
    a, b = np.unravel_index(int(np.argmax(d)), d.shape)
    return int(hull[a]), int(hull[b])


def view_measures(oracle, side: str, plane: Mapping[str, Any], depth_mm: float) -> dict[str, Any]:
    """How a plane shows the kidney: angle to its long axis, visible in-plane length against the true
    length, hilum distance from the plane and whether the hilum is in the sector."""
    an = kidney_anatomy(oracle, side)
    f, u, b, n = _plane_vectors(plane)
    sec = kidney_section(oracle, side, plane, depth_mm)
    hd = an["hilum"] - f
    hx, hy = float(hd @ u), float(hd @ b)
    return {"kidney": side, "true_length_mm": round(an["length_mm"], 2), "section": sec,
            "length_fraction": round(sec["length_mm"] / an["length_mm"], 4),
            "angle_to_long_axis_deg": round(math.degrees(math.asin(min(1.0, abs(float(n @ an["axis"]))))), 2),
            "hilum_off_plane_mm": round(abs(float(hd @ n)), 2), "hilum_image_mm": [round(hx, 2), round(hy, 2)],
            "hilum_in_sector": bool(in_sector(plane, depth_mm, np.array(hx), np.array(hy)))}


def shown_frame(oracle, record: Mapping[str, Any], shape: Any):
    """The image a record shows, re-formed (with its labels) as the console formed it."""
    from rendering.us_image import frame_from_record

    key = ("frame", json.dumps(record, sort_keys=True), tuple(shape))
    return _memo(oracle, key, lambda: frame_from_record(oracle.runtime, record, tuple(shape), with_labels=True))


def kidney_grey(oracle, side: str, record: Mapping[str, Any], shape: Any) -> float | None:
    """Mean grey level (0-255) of the kidney's pixels on the image re-formed from a record (None: not shown)."""
    fr = shown_frame(oracle, record, shape)
    ids = oracle.organ_labels(f"kidney_{side}")
    sel = np.isin(fr.labels, ids)
    return round(float(fr.pixels[sel].mean()), 2) if sel.any() else None


# ---- verdict ----------------------------------------------------------------------------------------
def _verdict(task: USTask, stages: dict[str, bool], checks: dict[str, bool], details: dict[str, Any]
             ) -> OracleResult:
    stages = {k: bool(stages.get(k, False)) for k in stage_names(task)}
    aq = 100.0 * sum(checks.values()) / max(1, len(checks))
    return checks_verdict(stages, checks, aq, details, any(stages.values()), "nothing was done towards the task")


def _side(state: Mapping[str, Any]) -> str:
    side = (state.get("exam") or {}).get("kidney")
    if side not in ("left", "right"):
        raise ValueError("the dump names no kidney (exam.kidney): the card must give one")
    return side


# ---- families ---------------------------------------------------------------------------------------
@register(CONTROL)
def control(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Set one named control to the stated value; nothing else changes (a display task: the acquisition and
    the probe stay exactly as they were)."""
    task: USTask = entry_for_card(card)
    name = task.control
    end = state["controls"][name]
    changes = control_changes(state)
    moved = pose_changes(state)
    details: dict[str, Any] = {"control": name, "wanted": task.value, "start": state["start"]["controls"][name],
                               "end": end, "control_changes": changes, "pose_changes": moved}
    if isinstance(task.value, str):
        ok = end == task.value
    else:
        ok = abs(float(end) - float(task.value)) <= VALUE_TOLERANCE
    checks = {"value_set": ok}
    others = {k: v for k, v in changes.items() if k != name}
    if task.kind == "set_display":
        acq = {k: v for k, v in others.items() if k in ACQUISITION_CONTROLS or k == "preset"}
        details["acquisition_changes"] = acq
        checks["acquisition_unchanged"] = not acq and not moved and \
            state["contact"]["coupling"] == state["start"]["coupling"]
        checks["other_display_unchanged"] = not (set(others) - set(acq))
    else:
        checks["nothing_else_changed"] = not others and not moved
    stages = {"value_set": any(e.get("name") == name for e in events(state, "param_changed"))}
    return _verdict(task, stages, checks, details)


def _caliper_result(oracle, side: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The best caliper of a saved image against the kidney as its plane cuts it."""
    sec = kidney_section(oracle, side, item["plane"], record_depth(item))
    out: dict[str, Any] = {"uid": item["uid"], "in_plane_length_mm": sec["length_mm"], "calipers": []}
    if not sec["ends_subject_mm"]:
        return out
    poles = np.asarray(sec["ends_subject_mm"], float)
    for cal in item["calipers"]:
        e = np.asarray([cal["p1_subject_mm"], cal["p2_subject_mm"]], float)
        d_same = np.linalg.norm(e - poles, axis=1)
        d_swap = np.linalg.norm(e - poles[::-1], axis=1)
        ends = d_same if d_same.max() <= d_swap.max() else d_swap
        rel = cal["length_mm"] / sec["length_mm"] - 1.0
        out["calipers"].append({"length_mm": cal["length_mm"], "relative_error": round(rel, 4),
                                "end_to_pole_mm": [round(float(v), 2) for v in ends],
                                "length_ok": abs(rel) <= CALIPER_LENGTH_TOLERANCE,
                                "ends_ok": float(ends.max()) <= CALIPER_END_MAX_MM})
    return out


def _text(s: str) -> str:
    return " ".join(str(s).upper().split())


@register(MEASURE)
def measure(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Freeze, measure the kidney's length pole to pole with a caliper, annotate, save the image: judged on
    the saved frozen images (the best one)."""
    task: USTask = entry_for_card(card)
    side = _side(state)
    images = [s for s in state["saved"] if s["kind"] == "image" and s.get("frozen")]
    results = []
    for item in images:
        r = _caliper_result(oracle, side, item)
        r["annotations"] = [a["text"] for a in item["annotations"]]
        r["annotation_ok"] = any(_text(a) == _text(task.annotation) for a in r["annotations"])
        r["caliper_ok"] = any(c["length_ok"] and c["ends_ok"] for c in r["calipers"])
        results.append(r)
    best = max(results, key=lambda r: (r["caliper_ok"] and r["annotation_ok"], r["caliper_ok"],
                                       r["annotation_ok"], r["uid"]), default=None)
    details: dict[str, Any] = {"kidney": side, "wanted_annotation": task.annotation, "saved_images": results,
                               "judged_item": best["uid"] if best else None}
    cals = best["calipers"] if best else []
    checks = {"frozen_image_saved": best is not None,
              "caliper_length": any(c["length_ok"] for c in cals),
              "caliper_on_poles": any(c["length_ok"] and c["ends_ok"] for c in cals),
              "annotation": bool(best and best["annotation_ok"])}
    ev = session_events(state)
    stages = {"frozen": bool(events(state, "frozen")), "caliper_placed": bool(events(state, "caliper_placed")),
              "annotated": bool(events(state, "annotation_added")),
              "image_saved": any(e["event"] == "saved" and e.get("kind") == "image" for e in ev)}
    return _verdict(task, stages, checks, details)


@register(SAVE)
def save(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Choose the named preset, then save an image or a clip of the kidney with it."""
    task: USTask = entry_for_card(card)
    side = _side(state)
    items = []
    for item in state["saved"]:
        vm = view_measures(oracle, side, item["plane"], record_depth(item))
        items.append({"uid": item["uid"], "kind": item["kind"], "preset": item["acquisition"]["preset"],
                      "kidney_length_fraction": vm["length_fraction"]})
    good = [i for i in items if i["preset"] == task.preset
            and i["kidney_length_fraction"] >= SAVED_VIEW_MIN_LENGTH_FRACTION]
    details: dict[str, Any] = {"kidney": side, "wanted_preset": task.preset, "start_preset": state["start"]["preset"],
                               "saved": items, "min_length_fraction": SAVED_VIEW_MIN_LENGTH_FRACTION}
    checks = {"saved_with_preset": any(i["preset"] == task.preset for i in items),
              "saved_shows_kidney": bool(good)}
    stages = {"preset_selected": bool(events(state, "param_changed", name="preset", value=task.preset)),
              "item_saved": bool(events(state, "saved"))}
    return _verdict(task, stages, checks, details)


@register(VIEW)
def view(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """A long-axis view of the kidney on the screen at the end: the plane along the long axis, the whole
    length shown, the hilum in the plane."""
    task: USTask = entry_for_card(card)
    side = _side(state)
    rec = shown(state)
    vm = view_measures(oracle, side, rec["plane"], record_depth(rec))
    details: dict[str, Any] = {**vm, "max_angle_deg": LONG_AXIS_MAX_DEG,
                               "min_length_fraction": LONG_AXIS_MIN_LENGTH_FRACTION, "max_hilum_mm": HILUM_MAX_MM}
    checks = {"plane_along_long_axis": vm["angle_to_long_axis_deg"] <= LONG_AXIS_MAX_DEG,
              "length_shown": vm["length_fraction"] >= LONG_AXIS_MIN_LENGTH_FRACTION,
              "hilum_in_plane": vm["hilum_off_plane_mm"] <= HILUM_MAX_MM and vm["hilum_in_sector"]}
    stages = {"probe_moved": bool(events(state, "probe_moved"))
              or any(e.get("kind") == "pose" for e in events(state, "param_changed"))}
    return _verdict(task, stages, checks, details)


def _memo(oracle, key: tuple, make):
    """A few recent results per oracle (the planner and the oracle of one episode ask about the same image)."""
    store = oracle._mask_cache.setdefault("us_memo", {})
    if key not in store:
        if len(store) >= 8:
            store.pop(next(iter(store)))
        store[key] = make()
    return store[key]


def image_quality(oracle, side: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """Depth, focus and brightness of the image on the screen against the kidney it shows."""
    rec = shown(state)
    key = ("quality", side, json.dumps(rec, sort_keys=True), tuple(state["image"]["shape"]))
    return _memo(oracle, key, lambda: _image_quality(oracle, side, rec, state["image"]["shape"]))


def kidney_depths(oracle, side: str, plane: Mapping[str, Any], depth_mm: float) -> dict[str, Any]:
    """The kidney's section on a plane not clipped by the image's depth (a sector deep enough for every kidney
    voxel): the depths of its top, centre and bottom as they would be with the depth set right."""
    f, _, b, _ = _plane_vectors(plane)
    reach = float(((kidney_anatomy(oracle, side)["points"] - f) @ b).max()) + 10.0
    key = ("depths", side, json.dumps(plane, sort_keys=True), max(depth_mm, min(400.0, reach)))
    return _memo(oracle, key, lambda: kidney_section(oracle, side, plane, key[-1]))


def _image_quality(oracle, side: str, rec: Mapping[str, Any], shape: Any) -> dict[str, Any]:
    depth, focus = record_depth(rec), record_focus(rec)
    vm = view_measures(oracle, side, rec["plane"], depth)
    sec = vm["section"]
    grey = kidney_grey(oracle, side, rec, shape)
    full = kidney_depths(oracle, side, rec["plane"], depth)
    return {"kidney": side, "depth_mm": depth, "focus_mm": focus, "kidney_length_fraction": vm["length_fraction"],
            "angle_to_long_axis_deg": vm["angle_to_long_axis_deg"],
            "kidney_top_mm": full["top_mm"], "kidney_centre_mm": full["centre_mm"],
            "kidney_bottom_mm": full["bottom_mm"], "kidney_grey": grey, "grey_range": list(KIDNEY_GREY_RANGE),
            "shown_section": sec}


def marker_towards_head(plane: Mapping[str, Any]) -> bool:
    """Whether the probe marker (the screen's left end of the image: minus the plane's u) points towards the
    patient's head: the long-axis convention, upper pole on the screen's left."""
    return -float(plane["u"][2]) > 0.0


def _depth_ok(q: Mapping[str, Any]) -> bool:
    b = q["kidney_bottom_mm"]
    return b is not None and DEPTH_MARGIN_MIN_MM <= q["depth_mm"] - b <= DEPTH_MARGIN_MAX_MM


def probe_shift(oracle, state: Mapping[str, Any]) -> dict[str, float]:
    """How far the probe moved from where the session started, other than about its beam: its footprint on
    the skin (mm, from the body surface at the start and end heights and positions around the body) and its
    tilt and rock (deg). The rotation and the pressure are not counted."""
    from rendering.us_image import ProbeGeometry, ProbePose

    a, b = state["start"]["pose"], state["pose"]
    feet = [ProbeGeometry.from_pose(oracle.runtime, ProbePose.from_dict(p)).footprint for p in (a, b)]
    return {"footprint_mm": round(float(np.linalg.norm(feet[1] - feet[0])), 2),
            "tilt_deg": round(abs(float(b["tilt_deg"]) - float(a["tilt_deg"])), 2),
            "rock_deg": round(abs(float(b["rock_deg"]) - float(a["rock_deg"])), 2)}


def _grey_ok(q: Mapping[str, Any]) -> bool:
    g = q["kidney_grey"]
    return g is not None and KIDNEY_GREY_RANGE[0] <= g <= KIDNEY_GREY_RANGE[1]


@register(OPTIMIZE)
def optimize(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """The kidney's long-axis view kept, shown the conventional way round (marker to the head), and depth,
    focus and gain set for it, on the screen at the end; the probe turned about its beam at most (its place on
    the skin, tilt and rock kept)."""
    task: USTask = entry_for_card(card)
    side = _side(state)
    q = image_quality(oracle, side, state)
    c = q["kidney_centre_mm"]
    moved = probe_shift(oracle, state)
    details: dict[str, Any] = {**q, "min_margin_mm": DEPTH_MARGIN_MIN_MM, "max_margin_mm": DEPTH_MARGIN_MAX_MM,
                               "max_focus_off_mm": FOCUS_MAX_OFF_MM, "max_angle_deg": LONG_AXIS_MAX_DEG,
                               "marker_towards_head": marker_towards_head(shown(state)["plane"]),
                               "probe_shift": moved, "max_probe_shift_mm": PROBE_KEPT_MAX_MM,
                               "max_probe_turn_deg": PROBE_KEPT_MAX_DEG}
    checks = {"kidney_in_view": q["kidney_length_fraction"] >= IN_VIEW_MIN_LENGTH_FRACTION,
              "long_axis_kept": q["angle_to_long_axis_deg"] <= LONG_AXIS_MAX_DEG,
              "marker_to_head": details["marker_towards_head"],
              "probe_kept": moved["footprint_mm"] <= PROBE_KEPT_MAX_MM
              and max(moved["tilt_deg"], moved["rock_deg"]) <= PROBE_KEPT_MAX_DEG,
              "depth_fits_kidney": _depth_ok(q),
              "focus_at_kidney": c is not None and abs(q["focus_mm"] - c) <= FOCUS_MAX_OFF_MM,
              "brightness": _grey_ok(q)}
    # the goal asks for the depth, focus and gain controls: a preset reloaded does not adjust them to the view
    stages = {"depth_adjusted": changed(state, "depth_cm"), "focus_adjusted": changed(state, "focus_cm"),
              "gain_adjusted": changed(state, "gain", "tgc")}
    return _verdict(task, stages, checks, details)


@register(CONTACT)
def contact(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """A dark image: poor contact is fixed at the probe (gel, pressure) with the gain and TGC left alone; a low
    gain is raised until the kidney is seen at a normal brightness."""
    task: USTask = entry_for_card(card)
    side = _side(state)
    start = state["start"]
    cause = start["dark_cause"]
    con = state["contact"]
    q = image_quality(oracle, side, state)
    c0, c1 = start["controls"], state["controls"]
    tgc_change = max(abs(float(b) - float(a)) for a, b in zip(c0["tgc_db"], c1["tgc_db"]))
    details: dict[str, Any] = {"dark_cause": cause, "fault": start["fault"], "contact": con,
                               "gain_start": c0["gain"], "gain_end": c1["gain"], "max_tgc_change_db": tgc_change,
                               "kidney_grey": q["kidney_grey"], "grey_range": list(KIDNEY_GREY_RANGE),
                               "kidney_length_fraction": q["kidney_length_fraction"]}
    checks = {"contact_ok": bool(con["coupling"]["ok"]) and con["line_contact_mean"] >= CONTACT_MIN_LINE_MEAN
              and con["fraction_in_contact"] >= CONTACT_MIN_FRACTION,
              "kidney_in_view": q["kidney_length_fraction"] >= IN_VIEW_MIN_LENGTH_FRACTION}
    if cause == "contact":
        checks["gain_not_compensating"] = abs(float(c1["gain"]) - float(c0["gain"])) <= GAIN_MAX_CHANGE \
            and tgc_change <= TGC_MAX_CHANGE_DB
    else:
        checks["brightness"] = _grey_ok(q)
    stages = {"image_adjusted": bool(events(state, "gel_applied")) or changed(state, "pressure_pct", "gain", "tgc")
              or any(e.get("pressure") is not None for e in events(state, "probe_moved"))}
    return _verdict(task, stages, checks, details)
