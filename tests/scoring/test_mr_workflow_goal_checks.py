"""MR workflow oracles (mr_row_edit, mr_viewer, mr_queue_run, mr_judgement) against their goals (issue 32), on
dumped-state dicts built by hand (renal coverage from the subject's kidney voxels), never from a solver.

Per family: a state that does what the goal says passes, one that breaks what the goal states fails, and each
guard the goal now states ("change nothing else", kept rows' names and parameters, the 15 s start) is
enforced at its edge.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from scoring.oracles import get_oracle
from scoring.registry.mr import BUSY_START_MAX_S, IDLE_START_MAX_S, INDICATION_PROTOCOL
from scoring.subject_oracle import load_oracle
from tasks.card import load_card

SUBJECT = "s01"
PARAMS = {"trigger": "ecg", "n_slices": 1, "thickness_mm": 8.0, "averages": 1}
PLANES = ("sagittal", "coronal", "transverse")


@pytest.fixture(scope="module")
def oracle(subject_cache):
    return load_oracle(SUBJECT)


def row(uid: int, protocol: str, status: str = "pending", **kw) -> dict:
    r = {"uid": uid, "name": protocol.replace("_", " "), "protocol": protocol, "status": status, "copy_of": None,
         "series": 1 if protocol == "localizer_3plane" and status == "done" else None, "params": dict(PARAMS),
         "t_end": None}
    r.update(kw)
    return r


def viewport(i: int, image: int | None, mode: str = "outer") -> dict:
    return {"index": i, "visible": True, "series": None if image is None else 1, "image": image,
            "image_name": None if image is None else PLANES[image - 1], "graphics_mode": mode}


def state(tid: str, rows: list[dict], **start_extra) -> dict:
    """A session at its start: the queue, a localizer (sagittal, coronal, transverse), three viewports showing
    them and an empty fourth; the end equals the start until a test changes it."""
    layout = {"layout": "2x2", "active": 1, "shim_box_visible": False,
              "viewports": [viewport(1, 1), viewport(2, 2), viewport(3, 3), viewport(4, None)]}
    localizer = {"uid": 1, "row": 1, "protocol": "localizer_3plane", "localizer": True,
                 "images": [{"index": k + 1, "name": p} for k, p in enumerate(PLANES)]}
    start = {"queue": copy.deepcopy(rows), "layout": copy.deepcopy(layout), "n_events": 0, "seeded": {},
             "ecg_signal": True, "indication": None, **start_extra}
    return {"task": tid, "subject": SUBJECT, "seed": 0, "start": start, "queue": copy.deepcopy(rows),
            "layout": layout, "series": [localizer], "events": [], "open_row": None, "selected_image": None}


def end(st: dict, uid: int) -> dict:
    return next(r for r in st["queue"] if r["uid"] == uid)


def log(st: dict, event: str, t: float = 0.0, **fields) -> dict:
    st["events"].append({"t": t, "event": event, **fields})
    return st


def verdict(st: dict, oracle):
    card = load_card(st["task"])
    return get_oracle(card.oracle)(st, oracle, card)


def fails(v, check: str) -> bool:
    return v.outcome != "PASS" and v.details["checks"][check] is False


CINE = lambda: [row(1, "localizer_3plane", "done"), row(2, "cine_4ch"), row(3, "cine_2ch"),  # noqa: E731
                row(4, "cine_sax")]


# ---- mr_row_edit ----------------------------------------------------------------------------------------------
def test_trigger_row_edit(oracle):
    st = state("L0_physio_trigger", [dict(r, params={**r["params"], "trigger": "none"}) for r in CINE()])
    log(st, "row_opened", row=2)
    log(st, "param_changed", row=2, name="trigger", value="ecg")
    end(st, 2)["params"]["trigger"] = "ecg"
    assert verdict(st, oracle).outcome == "PASS"
    bad = copy.deepcopy(st)
    end(bad, 2)["params"]["averages"] = 2
    assert fails(verdict(bad, oracle), "nothing_else_changed")
    wrong = copy.deepcopy(st)
    end(wrong, 2)["params"]["trigger"] = "pulse"
    assert fails(verdict(wrong, oracle), "trigger")


def test_rename_and_repeat_row_edit(oracle):
    st = state("mr_rename_sequence_4ch_v1", CINE())
    end(st, 2)["name"] = "4ch"
    log(st, "row_renamed", row=2)
    assert verdict(st, oracle).outcome == "PASS"
    end(st, 3)["name"] = "2ch"
    assert fails(verdict(st, oracle), "nothing_else_changed")
    rp = state("mr_repeat_and_open_v1", CINE())
    rp["queue"].append(row(5, "cine_4ch", copy_of=2))
    rp["open_row"] = 5
    log(rp, "row_repeated", row=2)
    log(rp, "row_opened", row=5)
    assert verdict(rp, oracle).outcome == "PASS"
    log(rp, "row_started", row=5)
    assert fails(verdict(rp, oracle), "nothing_started")


# ---- mr_viewer ---------------------------------------------------------------------------------------------------
def test_viewer_kinds(oracle):
    st = state("mr_drag_coronal_to_viewport2_v1", CINE())
    st["start"]["layout"]["viewports"][1] = viewport(2, 1)
    st["layout"]["viewports"][1] = viewport(2, 2)
    log(st, "series_loaded", viewport=2, series=1, image=2)
    assert verdict(st, oracle).outcome == "PASS"
    st["layout"]["viewports"][2] = viewport(3, 1)
    assert fails(verdict(st, oracle), "other_viewports_unchanged")

    st = state("mr_select_transverse_viewport_v1", CINE())
    st["layout"]["active"] = 3
    log(st, "viewport_activated", viewport=3)
    assert verdict(st, oracle).outcome == "PASS"
    st["layout"]["active"] = 2
    assert fails(verdict(st, oracle), "active_shows_image")

    st = state("mr_show_shim_box_v1", CINE())
    st["layout"]["shim_box_visible"] = True
    log(st, "shim_box_shown")
    assert verdict(st, oracle).outcome == "PASS"
    end(st, 3)["status"] = "skipped"
    assert fails(verdict(st, oracle), "queue_unchanged")

    st = state("L2a_graphics_display_mode", CINE())
    st["layout"]["viewports"][2]["graphics_mode"] = "all"
    log(st, "graphics_mode_set", viewport=3, mode="all")
    assert verdict(st, oracle).outcome == "PASS"
    st["layout"]["viewports"][0]["graphics_mode"] = "all"
    assert fails(verdict(st, oracle), "other_viewports_unchanged")


def test_select_transverse_image_only_changes_nothing_else(oracle):
    """The goal says "change nothing else: leave the viewports and the queue as they are": a viewport change
    now fails like in the other viewer kinds (before issue 32 only the queue was compared)."""
    st = state("mr_select_transverse_image_only_v1", CINE(), )
    st["selected_image"] = {"series": 1, "image": 3}
    log(st, "image_selected", key="1.3", series=1, image=3)
    v = verdict(st, oracle)
    assert v.outcome == "PASS" and v.details["checks"]["viewports_unchanged"]
    for change in (lambda s: s["layout"]["viewports"][3].update(viewport(4, 3)),
                   lambda s: s["layout"]["viewports"][0].update(graphics_mode="all"),
                   lambda s: s["layout"].update(layout="1x1"),
                   lambda s: s["layout"].update(shim_box_visible=True)):
        bad = copy.deepcopy(st)
        change(bad)
        assert fails(verdict(bad, oracle), "viewports_unchanged")
    wrong = copy.deepcopy(st)
    wrong["selected_image"] = {"series": 1, "image": 2}
    assert fails(verdict(wrong, oracle), "selected_image")


# ---- mr_queue_run ---------------------------------------------------------------------------------------------
def test_first_acquisition(oracle):
    st = state("L2a_first_acquisition", [row(1, "localizer_3plane"), *CINE()[1:]])
    log(st, "row_started", row=1)
    log(st, "row_done", t=8.0, row=1, series=1)
    end(st, 1).update(status="done", series=1)
    assert verdict(st, oracle).outcome == "PASS"
    log(st, "row_started", t=9.0, row=2)
    end(st, 2)["status"] = "running"
    assert fails(verdict(st, oracle), "nothing_else_started")


def _queue_mutation(oracle):
    rows = [row(1, "localizer_3plane", "done"), row(2, "cine_4ch"), row(3, "cine_sax"), row(4, "t2_haste_cor")]
    st = state("L2a_queue_mutation", rows)
    st["queue"] = [end(st, 1), row(5, "cine_2ch"), end(st, 2), end(st, 3)]
    log(st, "row_added", row=5)
    log(st, "row_deleted", row=4)
    return st


@pytest.mark.parametrize("edit,ok", [(None, True), (("name", "4CH"), False), (("params", "n_slices"), False),
                                     (("params", "trigger"), False)])
def test_queue_mutation_keeps_the_kept_rows(edit, ok, oracle):
    """The goal now says: do not rename or change the parameters of the rows you keep."""
    st = _queue_mutation(oracle)
    if edit and edit[0] == "name":
        end(st, 2)["name"] = edit[1]
    elif edit:
        end(st, 3)["params"][edit[1]] = {"n_slices": 12, "trigger": "pulse"}[edit[1]]
    v = verdict(st, oracle)
    assert (v.outcome == "PASS") == ok, v.reason
    if not ok:
        assert fails(v, "kept_rows_unchanged")


def test_queue_mutation_order(oracle):
    st = _queue_mutation(oracle)
    st["queue"][2], st["queue"][3] = st["queue"][3], st["queue"][2]
    assert fails(verdict(st, oracle), "order")


def _skip(oracle):
    rows = [row(1, "localizer_3plane", "done"), row(2, "cine_2ch"), row(3, "cine_4ch"), row(4, "t2_haste_cor"),
            row(5, "cine_sax")]
    st = state("L2a_skip_row", rows)
    end(st, 2)["status"] = "skipped"
    end(st, 3).update(status="done", series=2)
    log(st, "row_skipped", row=2)
    log(st, "row_started", t=1.0, row=3)
    log(st, "row_done", t=12.0, row=3, series=2)
    return st


def test_skip_row_changes_nothing_else(oracle):
    st = _skip(oracle)
    assert verdict(st, oracle).outcome == "PASS"
    end(st, 4)["params"]["n_slices"] = 20  # the goal now says "change nothing else in the queue"
    assert fails(verdict(st, oracle), "nothing_else_changed")
    st = _skip(oracle)
    log(st, "row_started", t=13.0, row=4)
    assert fails(verdict(st, oracle), "nothing_else_started")


# ---- mr_judgement ---------------------------------------------------------------------------------------------
def test_go_availability(oracle):
    for ecg, trigger, ok in ((True, "ecg", True), (True, "pulse", False), (False, "pulse", True), (False, "none", False)):
        st = state("L1_go_availability", CINE(), ecg_signal=ecg)
        end(st, 2)["params"]["trigger"] = trigger
        end(st, 2)["status"] = "running"
        log(st, "row_started", row=2)
        assert (verdict(st, oracle).outcome == "PASS") == ok, (ecg, trigger)


def _idle_or_scanning(busy: bool, delay: float, oracle) -> dict:
    rows = [row(1, "localizer_3plane", "done"), row(2, "cine_2ch", "running" if busy else "done"),
            row(3, "cine_4ch"), row(4, "cine_sax")]
    st = state("L1_idle_or_scanning", rows)
    t_free = 40.0 if busy else 0.0
    end(st, 2).update(status="done", t_end=t_free)
    end(st, 3)["status"] = "running"
    log(st, "row_started", t=t_free + delay, row=3)
    return st


@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("delay,ok", [(0.5, True), (14.0, True), (16.0, False), (30.5, False)])
def test_start_within_15_s_of_the_scanner_being_free(busy, delay, ok, oracle):
    """The goal states the 15 s: a start 14 s after the scanner is free passes, 16 s fails, and so does one
    full 30 s wait past the end of the running sequence (the status line shows its seconds left)."""
    assert IDLE_START_MAX_S == BUSY_START_MAX_S == 15.0 and "within 15 s" in load_card("L1_idle_or_scanning").goal
    v = verdict(_idle_or_scanning(busy, delay, oracle), oracle)
    assert (v.outcome == "PASS") == ok, v.details
    if not ok:
        assert fails(v, "started_promptly")


def test_idle_or_scanning_guards(oracle):
    st = _idle_or_scanning(True, -5.0, oracle)  # started before the running one ended: it was stopped
    log(st, "row_stopped", t=34.0, row=2)
    v = verdict(st, oracle)
    assert fails(v, "nothing_stopped") and fails(v, "started_promptly")
    st = _idle_or_scanning(False, 3.0, oracle)
    end(st, 4)["params"]["averages"] = 2  # the goal now says "change nothing else"
    assert fails(verdict(st, oracle), "nothing_else_changed")


@pytest.mark.parametrize("indication", sorted(INDICATION_PROTOCOL))
def test_select_sequence(indication, oracle):
    protocols = list(dict.fromkeys(INDICATION_PROTOCOL.values()))
    rows = [row(1, "localizer_3plane", "done")] + [row(i + 2, p) for i, p in enumerate(protocols)]
    st = state("mr_select_sequence_v1", rows, indication=indication)
    uid = next(r["uid"] for r in rows if r["protocol"] == INDICATION_PROTOCOL[indication])
    end(st, uid)["status"] = "running"
    log(st, "row_opened", row=uid)
    log(st, "row_started", t=1.0, row=uid)
    assert verdict(st, oracle).outcome == "PASS"
    edited = copy.deepcopy(st)
    end(edited, uid)["params"]["n_slices"] = 3  # the goal now says "start it as it is ... change nothing else"
    assert fails(verdict(edited, oracle), "nothing_else_changed")
    other = next(r["uid"] for r in rows if r["uid"] not in (1, uid))
    wrong = state("mr_select_sequence_v1", rows, indication=indication)
    end(wrong, other)["status"] = "running"
    log(wrong, "row_opened", row=other)
    log(wrong, "row_started", t=1.0, row=other)
    assert fails(verdict(wrong, oracle), "right_row_started")


def coronal_series(oracle, clip_top_mm: float = 0.0) -> dict:
    """A coronal renal series (slices along A/P) planned by hand on the kidneys' voxels with a 10 mm margin;
    `clip_top_mm` lowers the top edge of its FOV below the upper poles by that much."""
    pts = np.concatenate([oracle.organ_voxels_mm(k) for k in ("kidney_left", "kidney_right")])
    lo, hi = pts.min(axis=0) - 10.0, pts.max(axis=0) + 10.0
    hi[2] -= 10.0 + clip_top_mm if clip_top_mm else 0.0
    centre = (lo + hi) / 2.0
    n_slices, thick = 12, float(np.ceil((hi[1] - lo[1]) / 12.0))
    cols, rows = 256, 256
    du, dv = (hi[0] - lo[0]) / cols, (hi[2] - lo[2]) / rows
    ys = centre[1] + thick * (np.arange(n_slices) - (n_slices - 1) / 2.0)
    images = [{"index": k + 1, "centre_mm": [float(centre[0]), float(y), float(centre[2])], "u": [1.0, 0.0, 0.0],
               "v": [0.0, 0.0, 1.0], "normal": [0.0, 1.0, 0.0], "shape": [rows, cols], "pixel_mm": [du, dv],
               "thickness_mm": thick} for k, y in enumerate(ys)]
    return {"uid": 5, "row": 5, "protocol": "t2_haste_cor", "localizer": False, "images": images}


def _renal(oracle, clip_top_mm: float, decision: str) -> dict:
    rows = [row(1, "localizer_3plane", "done"), row(5, "t2_haste_cor", "done", series=5), row(6, "t1_gre_tra"),
            row(7, "t2_tse_tra")]
    st = state("mr_renal_acquisition_adequacy_v2", rows)
    st["series"].append(coronal_series(oracle, clip_top_mm))
    if decision == "accept":
        end(st, 6)["status"] = "running"
        log(st, "row_started", t=1.0, row=6)
    else:
        st["queue"].append(row(8, "t2_haste_cor", copy_of=5))
        log(st, "row_repeated", row=5)
    return st


@pytest.mark.parametrize("clip,decision,ok", [(0.0, "accept", True), (0.0, "repeat", False),
                                              (20.0, "repeat", True), (20.0, "accept", False)])
def test_renal_adequacy_without_paging(clip, decision, ok, oracle):
    """The goal no longer asks for paging (nothing checked it): the decision the kidneys' coverage calls for
    passes with no paging event in the log, the other fails."""
    st = _renal(oracle, clip, decision)
    v = verdict(st, oracle)
    assert v.details["adequate"] == (clip == 0.0), v.details["kidney_coverage"]
    assert (v.outcome == "PASS") == ok, v.reason
    assert "paging" not in load_card("mr_renal_acquisition_adequacy_v2").goal
    if ok:  # the goal now says "change nothing else"
        end(st, 7)["params"]["n_slices"] = 30
        assert fails(verdict(st, oracle), "nothing_else_changed")
