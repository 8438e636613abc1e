"""MR oracle families. Pure functions of (state dump, subject oracle, task card) -> OracleResult.

What each task checks comes from the MR registry (scoring/registry/mr.py). Targets are found by clinical
identity in the dump's `start` record (the queue and viewer as the session began), so a seeded row order
or name never changes what is scored. Every oracle also compares the whole end queue (names, protocols,
statuses, parameters, order) and, for viewer tasks, the viewports with the start: an operation the task did
not ask for fails the "nothing_else_changed" check, listed in the details.

Outcome: FAIL when the agent did nothing towards the task (no stage met), PASS when every stage and check
holds, PARTIAL otherwise. AQ (0-100) is the share of the task's checks met (judgement tasks: 100 for the
right consequence, else 0).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from scoring.oracles import register
from scoring.registry import entry_for_card
from scoring.registry.mr import (BUSY_START_MAX_S, IDLE_START_MAX_S, INDICATION_PROTOCOL, JUDGEMENT, KIDNEYS,
                                 QUEUE_RUN, RENAL_MIN_COVERAGE, ROW_EDIT, VIEWER, MRTask)
from scoring.verdict import OracleResult
from scoring.workflow import checks_verdict
from tasks.card import TaskCard

Change = dict[str, Any]
NATURAL = {("status", "running", "done")}  # a row that was running at the start finishes on its own

STAGES: dict[str, list[str]] = {
    "trigger": ["row_opened", "trigger_set"],
    "rename": ["row_renamed"],
    "repeat_open": ["row_repeated", "copy_opened"],
    "load_image": ["image_loaded"],
    "activate": ["viewport_activated"],
    "shim_box": ["shim_box_shown"],
    "graphics": ["graphics_mode_set"],
    "select_image": ["image_selected"],
    "first_acquisition": ["row_started", "row_completed"],
    "queue_order": ["row_added", "row_deleted", "order_matches"],
    "skip": ["row_skipped", "next_started", "next_completed"],
    "go_availability": ["row_started"],
    "idle_or_scanning": ["row_started"],
    "renal_adequacy": ["decision_made"],
    "select_sequence": ["row_opened", "row_started"],
}


def stage_names(task: MRTask) -> list[str]:
    """The oracle's stage names for a task, in verdict order (the card's workflow_stages)."""
    return list(STAGES[task.kind])


# ---- reading the dump -------------------------------------------------------------------------------
def start_rows(state: dict[str, Any]) -> list[dict[str, Any]]:
    return list(state["start"]["queue"])


def row_by_protocol(rows: list[dict[str, Any]], protocol: str) -> dict[str, Any] | None:
    """The (first) row of this protocol: tasks name rows by clinical identity, one row per protocol."""
    return next((r for r in rows if r["protocol"] == protocol), None)


def first_pending(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in rows if r["status"] == "pending"), None)


def end_row(state: dict[str, Any], uid: int | None) -> dict[str, Any] | None:
    return next((r for r in state["queue"] if r["uid"] == uid), None)


def session_events(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of this session (the console logs its initial state, e.g. a row already running, first)."""
    return state.get("events", [])[int(state["start"].get("n_events", 0)):]


def events(state: dict[str, Any], kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in session_events(state) if e["event"] == kind and all(e.get(k) == v for k, v in fields.items())]


def started_rows(state: dict[str, Any]) -> list[int]:
    """Rows started in this session, in order."""
    return [e["row"] for e in events(state, "row_started")]


def queue_changes(state: dict[str, Any]) -> list[Change]:
    """Every difference between the start queue and the end queue: per row its name, protocol, status,
    copy_of and each parameter; deleted and added rows; the order of the rows both hold."""
    start = {r["uid"]: r for r in start_rows(state)}
    end = {r["uid"]: r for r in state["queue"]}
    out: list[Change] = []
    for uid, a in start.items():
        b = end.get(uid)
        if b is None:
            out.append({"row": uid, "field": "deleted", "before": a["protocol"], "after": None})
            continue
        for f in ("name", "protocol", "status", "copy_of"):
            if a[f] != b[f]:
                out.append({"row": uid, "field": f, "before": a[f], "after": b[f]})
        for k, v in a["params"].items():
            if b["params"].get(k) != v:
                out.append({"row": uid, "field": f"params.{k}", "before": v, "after": b["params"].get(k)})
    for uid, b in end.items():
        if uid not in start:
            out.append({"row": uid, "field": "added", "before": None, "after": b["protocol"]})
    kept_start = [u for u in start if u in end]
    kept_end = [r["uid"] for r in state["queue"] if r["uid"] in start]
    if kept_start != kept_end:
        out.append({"row": None, "field": "order", "before": kept_start, "after": kept_end})
    return [c for c in out if not (c["field"] == "status" and (c["field"], c["before"], c["after"]) in NATURAL)]


def viewer_changes(state: dict[str, Any]) -> list[Change]:
    """Differences of what the viewports show (layout, series, image, graphics mode) and of the shim box."""
    a, b = state["start"]["layout"], state["layout"]
    out: list[Change] = []
    if a["layout"] != b["layout"]:
        out.append({"viewport": None, "field": "layout", "before": a["layout"], "after": b["layout"]})
    for va, vb in zip(a["viewports"], b["viewports"]):
        for f in ("series", "image", "graphics_mode"):
            if va.get(f) != vb.get(f):
                out.append({"viewport": va["index"], "field": f, "before": va.get(f), "after": vb.get(f)})
    if a["shim_box_visible"] != b["shim_box_visible"]:
        out.append({"viewport": None, "field": "shim_box_visible", "before": a["shim_box_visible"],
                    "after": b["shim_box_visible"]})
    return out


def unexpected(changes: list[Change], allowed: Callable[[Change], bool]) -> list[Change]:
    return [c for c in changes if not allowed(c)]


def localizer_viewports(layout: dict[str, Any], series: list[dict[str, Any]], image: str) -> list[int]:
    """1-based indices of the shown viewports that show this localizer plane."""
    loc = {s["uid"] for s in series if s.get("localizer")}
    return [v["index"] for v in layout["viewports"] if v["visible"] and v.get("series") in loc
            and v.get("image_name") == image]


def localizer_image_index(state: dict[str, Any], image: str) -> tuple[int, int] | None:
    """(series uid, 1-based image) of a localizer plane (the last localizer acquired): the image its series-list
    entry shows, the plane's middle slice."""
    for s in reversed(state["series"]):
        if s.get("localizer"):
            ims = [im for im in s["images"] if im["name"] == image]
            if ims:
                return s["uid"], ims[len(ims) // 2]["index"]
    return None


# ---- renal coverage ---------------------------------------------------------------------------------
def series_coverage(series: dict[str, Any], points: np.ndarray) -> float:
    """Share of points (N, 3 subject mm) inside a series' FOV and slab (from its first to its last slice,
    gaps included, as a slab is planned)."""
    ims = series["images"]
    c0 = np.asarray(ims[0]["centre_mm"], float)
    u, v, n = (np.asarray(ims[0][k], float) for k in ("u", "v", "normal"))
    rows, cols = ims[0]["shape"]
    du, dv = ims[0]["pixel_mm"]
    offs = [float(np.dot(np.asarray(im["centre_mm"], float) - c0, n)) for im in ims]
    t = float(ims[0]["thickness_mm"])
    d = points - c0
    a, b, c = d @ u, d @ v, d @ n
    inside = ((np.abs(a) <= cols * du / 2.0) & (np.abs(b) <= rows * dv / 2.0)
              & (c >= min(offs) - t / 2.0) & (c <= max(offs) + t / 2.0))
    return float(inside.mean()) if len(points) else 0.0


def kidney_coverage(state: dict[str, Any], oracle, series_uid: int) -> dict[str, float]:
    s = next(s for s in state["series"] if s["uid"] == series_uid)
    return {k: round(series_coverage(s, oracle.organ_voxels_mm(k)), 4) for k in KIDNEYS}


# ---- verdict ----------------------------------------------------------------------------------------
def _verdict(task: MRTask, stages: dict[str, bool], checks: dict[str, bool], details: dict[str, Any],
             aq: float | None = None) -> OracleResult:
    stages = {k: bool(stages.get(k, False)) for k in stage_names(task)}
    if aq is None:
        aq = 100.0 * sum(checks.values()) / max(1, len(checks))
    return checks_verdict(stages, checks, aq, details, any(stages.values()),
                          "nothing was done towards the task")


def _after(state: dict[str, Any], first: Callable[[dict], bool], then: Callable[[dict], bool]) -> bool:
    """An event matching `then` occurs after one matching `first`."""
    ev = session_events(state)
    i = next((k for k, e in enumerate(ev) if first(e)), None)
    return i is not None and any(then(e) for e in ev[i + 1:])


def _no_other_changes(details: dict[str, Any], changes: list[Change], allowed: Callable[[Change], bool]) -> bool:
    extra = unexpected(changes, allowed)
    details["unexpected_changes"] = extra
    return not extra


# ---- families ---------------------------------------------------------------------------------------
@register(ROW_EDIT)
def row_edit(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Edit one named row: its trigger, its name, or a repeat of it opened for editing."""
    task: MRTask = entry_for_card(card)
    target = row_by_protocol(start_rows(state), task.protocol)
    uid = target["uid"]
    end = end_row(state, uid)
    changes = queue_changes(state)
    details: dict[str, Any] = {"target_row": uid, "target_protocol": task.protocol, "changes": changes}
    checks: dict[str, bool] = {}
    stages: dict[str, bool] = {}
    if task.kind == "trigger":
        trig = end["params"]["trigger"] if end else None
        details.update({"trigger_before": target["params"]["trigger"], "trigger_after": trig})
        checks["trigger"] = trig == task.value
        checks["nothing_else_changed"] = _no_other_changes(
            details, changes, lambda c: c["row"] == uid and c["field"] == "params.trigger")
        stages["row_opened"] = bool(events(state, "row_opened", row=uid))
        stages["trigger_set"] = _after(state, lambda e: e["event"] == "row_opened" and e.get("row") == uid,
                                       lambda e: e["event"] == "param_changed" and e.get("row") == uid
                                       and e.get("name") == "trigger" and e.get("value") == task.value)
    elif task.kind == "rename":
        name = end["name"] if end else None
        details.update({"name_before": target["name"], "name_after": name})
        checks["name"] = name == task.value
        checks["nothing_else_changed"] = _no_other_changes(details, changes,
                                                           lambda c: c["row"] == uid and c["field"] == "name")
        stages["row_renamed"] = bool(events(state, "row_renamed", row=uid))
    else:  # repeat_open
        start_uids = {r["uid"] for r in start_rows(state)}
        copies = [r for r in state["queue"] if r["copy_of"] == uid and r["uid"] not in start_uids]
        copy = copies[0] if copies else None
        details.update({"copies": [r["uid"] for r in copies], "open_row": state["open_row"],
                        "rows_started": started_rows(state)})
        checks["one_copy"] = len(copies) == 1
        checks["copy_is_pending_with_same_parameters"] = copy is not None and copy["status"] == "pending" and \
            copy["params"] == target["params"] and copy["protocol"] == target["protocol"]
        checks["copy_open"] = copy is not None and state["open_row"] == copy["uid"]
        checks["nothing_started"] = not started_rows(state)
        checks["nothing_else_changed"] = _no_other_changes(
            details, changes, lambda c: c["field"] == "added" and copy is not None and c["row"] == copy["uid"])
        stages["row_repeated"] = bool(events(state, "row_repeated", row=uid))
        stages["copy_opened"] = copy is not None and _after(
            state, lambda e: e["event"] == "row_repeated" and e.get("row") == uid,
            lambda e: e["event"] == "row_opened" and e.get("row") == copy["uid"])
    return _verdict(task, stages, checks, details)


@register(VIEWER)
def viewer(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Viewer tasks: an image into a viewport, the active viewport, the shim box, a viewport's graphics
    mode, or an image picked in the series list; the queue must not change."""
    task: MRTask = entry_for_card(card)
    lay, start_lay = state["layout"], state["start"]["layout"]
    qchanges, vchanges = queue_changes(state), viewer_changes(state)
    details: dict[str, Any] = {"queue_changes": qchanges, "viewer_changes": vchanges}
    checks: dict[str, bool] = {"queue_unchanged": not qchanges}
    stages: dict[str, bool] = {}
    if task.kind == "load_image":
        vp = lay["viewports"][task.viewport - 1]
        details.update({"viewport": task.viewport, "shows": vp.get("image_name"), "series": vp.get("series")})
        checks["image_in_viewport"] = task.viewport in localizer_viewports(lay, state["series"], task.image)
        checks["other_viewports_unchanged"] = _no_other_changes(
            details, vchanges, lambda c: c["viewport"] == task.viewport and c["field"] in ("series", "image"))
        stages["image_loaded"] = bool(events(state, "series_loaded", viewport=task.viewport)
                                      or events(state, "viewport_copied", dst=task.viewport))
    elif task.kind == "activate":
        showing = localizer_viewports(lay, state["series"], task.image)
        details.update({"active": lay["active"], "viewports_showing": showing})
        checks["active_shows_image"] = lay["active"] in showing
        checks["viewports_unchanged"] = _no_other_changes(details, vchanges, lambda c: False)
        stages["viewport_activated"] = bool(events(state, "viewport_activated"))
    elif task.kind == "shim_box":
        details["shim_box_visible"] = lay["shim_box_visible"]
        checks["shim_box_visible"] = bool(lay["shim_box_visible"])
        checks["viewports_unchanged"] = _no_other_changes(details, vchanges,
                                                          lambda c: c["field"] == "shim_box_visible")
        stages["shim_box_shown"] = bool(events(state, "shim_box_shown"))
    elif task.kind == "graphics":
        targets = localizer_viewports(start_lay, state["series"], task.image)
        modes = {v["index"]: v["graphics_mode"] for v in lay["viewports"]}
        details.update({"target_viewports": targets, "graphics_modes": modes})
        checks["mode_set_on_target"] = bool(targets) and all(modes[i] == task.value for i in targets)
        checks["other_viewports_unchanged"] = _no_other_changes(
            details, vchanges, lambda c: c["viewport"] in targets and c["field"] == "graphics_mode")
        stages["graphics_mode_set"] = any(e.get("viewport") in targets
                                          for e in events(state, "graphics_mode_set", mode=task.value))
    else:  # select_image
        want = localizer_image_index(state, task.image)
        sel = state.get("selected_image")
        details.update({"wanted": want, "selected": sel})
        checks["selected_image"] = sel is not None and want is not None and (sel["series"], sel["image"]) == want
        # "change nothing else": selecting in the list changes no viewport, so none may change (issue 32)
        checks["viewports_unchanged"] = _no_other_changes(details, vchanges, lambda c: False)
        stages["image_selected"] = bool(events(state, "image_selected"))
    return _verdict(task, stages, checks, details)


@register(QUEUE_RUN)
def queue_run(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Run, skip or rearrange queue rows as the goal states."""
    task: MRTask = entry_for_card(card)
    rows = start_rows(state)
    changes = queue_changes(state)
    started = started_rows(state)
    details: dict[str, Any] = {"changes": changes, "rows_started": started}
    checks: dict[str, bool] = {}
    stages: dict[str, bool] = {}
    if task.kind == "first_acquisition":
        target = rows[0]
        uid = target["uid"]
        end = end_row(state, uid)
        details.update({"target_row": uid, "status": end["status"] if end else None})
        checks["completed"] = end is not None and end["status"] == "done" and end["series"] is not None
        checks["nothing_else_started"] = started == [uid]
        checks["nothing_else_changed"] = _no_other_changes(details, changes,
                                                           lambda c: c["row"] == uid and c["field"] == "status")
        stages["row_started"] = uid in started
        stages["row_completed"] = bool(events(state, "row_done", row=uid))
    elif task.kind == "skip":
        target = row_by_protocol(rows, task.protocol)
        uid = target["uid"]
        nxt = rows[rows.index(target) + 1]["uid"]
        end, end_next = end_row(state, uid), end_row(state, nxt)
        details.update({"target_row": uid, "next_row": nxt, "target_status": end["status"] if end else None,
                        "next_status": end_next["status"] if end_next else None})
        checks["skipped"] = end is not None and end["status"] == "skipped"
        checks["next_completed"] = end_next is not None and end_next["status"] == "done"
        checks["nothing_else_started"] = started == [nxt]
        checks["nothing_else_changed"] = _no_other_changes(
            details, changes, lambda c: c["row"] in (uid, nxt) and c["field"] == "status")
        stages["row_skipped"] = bool(events(state, "row_skipped", row=uid))
        stages["next_started"] = _after(state, lambda e: e["event"] == "row_skipped" and e.get("row") == uid,
                                        lambda e: e["event"] == "row_started" and e.get("row") == nxt)
        stages["next_completed"] = stages["next_started"] and bool(events(state, "row_done", row=nxt))
    else:  # queue_order
        start_uids = {r["uid"] for r in rows}
        pending = [r["protocol"] for r in state["queue"] if r["status"] == "pending"]
        acquired_start = [r["uid"] for r in rows if r["status"] != "pending"]
        acquired_end = [r["uid"] for r in state["queue"] if r["status"] != "pending"]
        details.update({"pending_protocols": pending, "wanted": list(task.order)})
        checks["order"] = pending == list(task.order)
        checks["acquired_rows_kept_first"] = acquired_end == acquired_start and \
            [r["uid"] for r in state["queue"][:len(acquired_end)]] == acquired_end
        checks["nothing_started"] = not started
        # rows may be added, deleted and moved; a kept row's name and parameters stay as they were
        checks["kept_rows_unchanged"] = _no_other_changes(
            details, changes, lambda c: c["field"] in ("added", "deleted", "order") or c["row"] not in start_uids)
        stages["row_added"] = bool(events(state, "row_added"))
        stages["row_deleted"] = bool(events(state, "row_deleted"))
        stages["order_matches"] = checks["order"]
    return _verdict(task, stages, checks, details)


@register(JUDGEMENT)
def judgement(state: dict[str, Any], oracle, card: TaskCard) -> OracleResult:
    """Judgement by consequence: start or fix-then-start, wait for a free scanner, accept or repeat a
    series, choose the row for a clinical question."""
    task: MRTask = entry_for_card(card)
    rows = start_rows(state)
    changes = queue_changes(state)
    started = started_rows(state)
    start = state["start"]
    details: dict[str, Any] = {"changes": changes, "rows_started": started}
    checks: dict[str, bool] = {}
    stages: dict[str, bool] = {"row_started": bool(started)}
    if task.kind == "go_availability":
        target = first_pending(rows)
        uid = target["uid"]
        end = end_row(state, uid)
        blocked = not start["ecg_signal"] and target["params"]["trigger"] == "ecg"
        want = task.blocked_trigger if blocked else target["params"]["trigger"]
        trig = end["params"]["trigger"] if end else None
        details.update({"target_row": uid, "blocked_at_start": blocked, "trigger_wanted": want,
                        "trigger_after": trig})
        checks["target_started"] = started == [uid]
        checks["trigger"] = trig == want
        checks["nothing_else_changed"] = _no_other_changes(
            details, changes, lambda c: c["row"] == uid and (c["field"] == "status" or
                                                             (blocked and c["field"] == "params.trigger")))
    elif task.kind == "idle_or_scanning":
        target = first_pending(rows)
        uid = target["uid"]
        busy_row = next((r for r in rows if r["status"] == "running"), None)
        t_starts = [e["t"] for e in events(state, "row_started", row=uid)]
        stopped = events(state, "row_stopped")
        if busy_row is not None:
            t_free = end_row(state, busy_row["uid"])["t_end"]
            delay = None if not t_starts else round(t_starts[0] - t_free, 3)
            limit = BUSY_START_MAX_S
        else:
            t_free, delay, limit = 0.0, (t_starts[0] if t_starts else None), IDLE_START_MAX_S
        details.update({"busy_at_start": busy_row is not None, "target_row": uid, "scanner_free_at_s": t_free,
                        "start_delay_s": delay, "max_delay_s": limit, "stopped": stopped})
        checks["nothing_stopped"] = not stopped
        checks["next_started"] = started == [uid]
        checks["started_promptly"] = delay is not None and 0.0 <= delay <= limit
        checks["nothing_else_changed"] = _no_other_changes(details, changes,
                                                           lambda c: c["row"] == uid and c["field"] == "status")
    elif task.kind == "renal_adequacy":
        renal = next(r for r in rows if r["protocol"] == task.protocol and r["status"] == "done")
        ruid = renal["uid"]
        cov = kidney_coverage(state, oracle, end_row(state, ruid)["series"])
        adequate = min(cov.values()) >= RENAL_MIN_COVERAGE
        nxt = first_pending(rows)["uid"]
        start_uids = {r["uid"] for r in rows}
        copies = [r["uid"] for r in state["queue"] if r["copy_of"] == ruid and r["uid"] not in start_uids]
        details.update({"kidney_coverage": cov, "min_coverage": RENAL_MIN_COVERAGE, "adequate": adequate,
                        "renal_row": ruid, "next_row": nxt, "repeats": copies})
        if adequate:
            checks["accepted_next_started"] = started == [nxt]
            checks["not_repeated"] = not copies
        else:
            checks["repeated"] = len(copies) == 1
            checks["nothing_started"] = not started
        checks["nothing_else_changed"] = _no_other_changes(
            details, changes, lambda c: (c["row"] == nxt and c["field"] == "status") or
            (c["field"] == "added" and c["row"] in copies))
        stages = {"decision_made": bool(started or events(state, "row_repeated"))}
    else:  # select_sequence
        want = INDICATION_PROTOCOL.get(start["indication"])
        target = row_by_protocol(rows, want) if want else None
        uid = target["uid"] if target else None
        details.update({"indication": start["indication"], "wanted_protocol": want, "target_row": uid,
                        "started_protocols": [end_row(state, u)["protocol"] for u in started if end_row(state, u)]})
        checks["right_row_started"] = uid is not None and started == [uid]
        checks["nothing_else_changed"] = _no_other_changes(details, changes,
                                                           lambda c: c["row"] == uid and c["field"] == "status")
        stages["row_opened"] = uid is not None and bool(events(state, "row_opened", row=uid))
        stages["row_started"] = uid is not None and _after(
            state, lambda e: e["event"] == "row_opened" and e.get("row") == uid,
            lambda e: e["event"] == "row_started" and e.get("row") == uid)
    right = all(checks.values())
    return _verdict(task, stages, checks, details, aq=100.0 if right else 0.0)
