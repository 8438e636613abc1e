"""One truth per value and status lines about the present, on the real MR console (issue 34 items 3-4), by OCR.

On `dev`, with the localizer done and a SAX cine stack open (2x2: the three localizer planes and the sagittal again),
the trigger is switched (none, then ECG) and the slice count, slice thickness and gap are typed, like an agent (X
input). On the next screenshot every copy of the scan time (the open row's Time cell in the queue, the Go line, the
card's Scan time, the status line) reads the m:ss of the model's duration, and every viewport's plan info reads the
slab thickness of the model's parameters. Then the named status sequences: a queue Move up leaves a status (the
line kept "... deleted." before), and after the last pending row's scan ends with no Go pressed the Go line reads
"Row 2 done; no pending rows." (not "Go blocked: There is no pending row to start." in amber).
"""
from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from consoles.common.numeric import duration_text
from consoles.mr import planning
from tests.consoles.console_driver import Driver, probe_once
from tests.ocr import first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
SMALL = {"matrix": 64, "fov_read_mm": 320, "fov_phase_mm": 320}
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_sax"},
                     {"protocol": "t2_haste_cor", "name": "T2 SSFSE coronal", "params": SMALL}], "open": 2,
           "layout": {"layout": "2x2", "viewports": [{"row": 1, "image": 1}, {"row": 1, "image": 2},
                                                      {"row": 1, "image": 3}, {"row": 1, "image": 1}]}}
EDITS = (("trigger_none", "tab_physio", "trigger:none", None), ("trigger_ecg", "tab_physio", "trigger:ecg", None),
         ("slices", "tab_routine", "n_slices_field", "6"), ("thickness", "tab_routine", "thickness_mm_field", "10"),
         ("gap", "tab_routine", "gap_mm_field", "4"))
MSS = re.compile(r"\d+:\d\d")
TIME_CELL_PX = 60  # the queue's Time column, at a row's right end


def _record(d: Driver, name: str) -> None:
    d.facts[f"{name}_geo"] = d.geometry()["geometry"]
    d.facts[f"{name}_state"] = d.con.state()
    d.shot(name)


def _script(d: Driver) -> None:
    for name, tab, target, text in EDITS:
        d.click(tab)
        if text is None:
            d.click(target)
        else:
            d.type_into(target, text)
        _record(d, name)
    # the named status sequences: a Move up; then the last pending row scanned to its end, no Go pressed after
    d.click("queue_row:3", button="right")
    d.click("queue_menu:move_up")
    _record(d, "moved")
    d.click("queue_row:2", button="right")  # the SAX stack, now row 3: skipped, so the T2 row is the last to run
    d.click("queue_menu:skip")
    d.click("go")
    st = d.con.state()
    d.con.settle(max(r["duration_s"] for r in st["queue"] if r["status"] == "running") + 1.0)
    _record(d, "finished")


@pytest.fixture(scope="module")
def run(display, tmp_path_factory) -> Driver:
    return probe_once(display, tmp_path_factory.mktemp("mr_values"), "mr_values_probe",
                      "MR values", "Plan a SAX stack.", INITIAL, _script)


def _crop(d: Driver, shot: str, rect: list[int], pad: int = 2) -> Image.Image:
    x, y, w, h = rect
    return Image.open(io.BytesIO(d.shots[shot])).crop((x - pad, y - pad, x + w + pad, y + h + pad))


def _open_row(state: dict) -> dict:
    return next(r for r in state["queue"] if r["uid"] == state["open_row"])


def _scan_time_copies(d: Driver, shot: str) -> dict[str, Image.Image]:
    geo = d.facts[f"{shot}_geo"]
    x, y, w, h = geo[f"queue_row:{d.facts[f'{shot}_state']['open_row']}"]
    return {"queue Time": _crop(d, shot, [x + w - TIME_CELL_PX, y, TIME_CELL_PX, h], 0),
            "Go line": _crop(d, shot, geo["go_status"]), "card": _crop(d, shot, geo["scan_time"]),
            "status line": _crop(d, shot, geo["message"])}


@pytest.mark.parametrize("edit", [e[0] for e in EDITS])
def test_every_copy_of_the_scan_time_reads_the_models(run, edit):
    require_tesseract()
    state = run.facts[f"{edit}_state"]
    want = duration_text(_open_row(state)["duration_s"])
    bad = []
    for where, img in _scan_time_copies(run, edit).items():
        ok, got = first_reading(readings(img, single_line=where != "Go line"), lambda r: want in MSS.findall(r))
        if not ok:
            bad.append(f"{where}: read {got}, the model's scan time is {want}")
    assert not bad, f"after {edit}:\n" + "\n".join(bad)


@pytest.mark.parametrize("edit", ["slices", "thickness", "gap"])
def test_every_viewports_plan_info_reads_the_models_slab(run, edit):
    require_tesseract()
    p = _open_row(run.facts[f"{edit}_state"])["params"]
    n = int(p["n_slices"])
    slab = f"{planning.stack_extent_mm(n, p['thickness_mm'], p['gap_mm']):.0f}"
    geo = run.facts[f"{edit}_geo"]
    shown = [k for k in geo if re.fullmatch(r"viewport\d\.label:plan_info\d", k) and "slices" in _words(run, edit, k)]
    assert len(shown) >= 2, f"the slab is drawn on {shown}: fewer than two copies to compare"
    bad = []
    for k in shown:
        ok, got = first_reading(readings(_crop(run, edit, geo[k])), lambda r: numbers(r) == [str(n), slab])
        if not ok:
            bad.append(f"{k}: read {got}, the model's stack is {n} slices, slab {slab} mm")
    assert not bad, "\n".join(bad)


def _words(d: Driver, shot: str, label: str) -> str:
    return " ".join(readings(_crop(d, shot, d.facts[f"{shot}_geo"][label])))


def test_a_move_up_and_the_end_of_the_last_scan_read_as_what_happened(run):
    require_tesseract()
    geo = run.facts["moved_geo"]
    moved = " ".join(readings(_crop(run, "moved", geo["message"])))
    assert "T2 SSFSE coronal moved up to row 2" in moved, moved
    st = run.facts["finished_state"]
    assert [r["status"] for r in st["queue"]] == ["done", "done", "skipped"] and st["go"]["target"] is None
    go = " ".join(readings(_crop(run, "finished", run.facts["finished_geo"]["go_status"]), single_line=False))
    assert "Row 2 done; no pending rows." in go and "blocked" not in go, go
    message = " ".join(readings(_crop(run, "finished", run.facts["finished_geo"]["message"])))
    assert "Row 2 done" in message and "no pending rows" in message, message
