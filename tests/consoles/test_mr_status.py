"""MR status lines describe the present (issue 34), from the model alone (no Qt): the Go line after the last scan,
the messages of queue and parameter edits, and one scan-time text for every place that shows it."""
from __future__ import annotations

import pytest

from consoles.common.numeric import duration_text
from consoles.mr.model import MRModel
from rendering.subjects import load_runtime

SMALL = {"matrix": 64, "n_slices": 2}  # a short row: its scan ends in a few seconds


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, queue):
    return MRModel(rt, "mr_status_test", 0, {"queue": queue}, None)


def _finish_running(m, t0=0.0):
    t = t0
    while m.running_row is not None:
        m.on_clock(t, t + 5.0)
        t += 5.0
    return t


def test_the_end_of_the_last_scan_reads_as_done_not_as_a_refused_go(rt):
    m = _model(rt, [{"protocol": "localizer_3plane", "status": "done"},
                    {"protocol": "t2_haste_cor", "params": SMALL}])
    assert m.go_status().kind == "ready" and m.go_status().text.startswith("Ready: Go starts row 2")
    m.go()
    assert m.go_status().kind == "scanning"
    _finish_running(m)
    go = m.go_status()
    assert (go.kind, go.text) == ("finished", "Row 2 done; no pending rows.")
    assert "Go blocked" not in go.text and m.go_blocker() == "There is no pending row to start."  # a press is refused
    assert m.message.startswith("Row 2 done: ") and m.message.endswith("no pending rows.")


def test_a_finished_row_with_more_to_do_says_what_go_starts_next(rt):
    m = _model(rt, [{"protocol": "localizer_3plane", "status": "done"},
                    {"protocol": "t2_haste_cor", "params": SMALL}, {"protocol": "t2_haste_cor", "params": SMALL}])
    m.go()
    _finish_running(m)
    assert m.message.endswith("Go starts row 3 next.") and m.go_status().kind == "ready"


def test_a_refusal_that_is_a_real_block_still_reads_as_one(rt):
    m = _model(rt, [{"protocol": "t2_haste_cor", "params": SMALL}])  # planned on a localizer never acquired
    go = m.go_status()
    assert go.kind == "blocked" and go.text.startswith("Go blocked: ") and "localizer" in go.text


def test_queue_and_parameter_edits_each_leave_a_status(rt):
    m = _model(rt, [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_2ch"},
                    {"protocol": "t2_haste_cor", "name": "T2 SSFSE coronal"}])
    name = m.row_at(2).name
    m.delete(m.row_at(2).uid)
    assert m.message == f"{name} deleted."
    uid = m.row_at(2).uid
    m.move_up(uid)
    assert m.message == "T2 SSFSE coronal moved up to row 1."
    m.move_down(uid)
    assert m.message == "T2 SSFSE coronal moved down to row 2."
    m.add_protocol("cine_4ch")
    m.open(m.row_at(3).uid)
    before = m.message
    m.set_param("trigger", "ecg")
    row = m.open_row
    assert m.message == f"Row 3: Trigger ECG; scan time {m.scan_time_text(row)}." and m.message != before
    m.set_param("n_slices", 3)
    assert m.message == f"Row 3: Slices 3; scan time {m.scan_time_text(row)}."
    m.close_row()
    assert m.message.endswith(" closed.")


def test_every_copy_of_a_scan_time_is_one_text(rt):
    """The queue's Time column, the Go line, the card and the status line all read scan_time_text: m:ss of
    duration_s, rounded once (the queue once read 0:17 beside the card's 0:16)."""
    m = _model(rt, [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_4ch"}])
    row = m.row_at(2)
    m.open(row.uid)
    for name, value in (("trigger", "ecg"), ("n_slices", 5), ("trigger", "none"), ("n_slices", 1)):
        m.set_param(name, value)
        text = m.scan_time_text(row)
        assert text == duration_text(m.duration_s(row))
        assert f"scan time {text}." in m.message and f"({text})." in m.go_status().text
    assert duration_text(16.5) == "0:16" and duration_text(17.5) == "0:18" and duration_text(75.0) == "1:15"
