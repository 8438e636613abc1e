"""One truth per value and status lines about the present, on the real CT console (issue 34 items 3-4), by OCR.

Values: on `dev` with the scouts acquired, the range (Start), tube current, pitch and tube voltage are typed into
their fields like an agent (X input); on the next screenshot every copy of each derived value reads the same and
what the model holds: the scan length (the plan's Length read-out and the status line), CTDIvol (the dose read-out
and the status line) and DLP (the dose read-out and the status line).
Status: the named stale lines are gone: after Confirm plan the bolus page no longer says "Confirm the plan, then start
the injection"; while the scan reconstructs (progress "Reconstructing 100 %") the status line does not say
"Scanning...". Screenshots go to the fixture's tmp folder.
"""
from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from consoles.common.numeric import format_number
from tests.consoles.console_driver import Driver, run_script, write_card
from tests.ocr import readings, require_tesseract

pytestmark = pytest.mark.display
EDITS = (("start", "start_field", "0"), ("mas", "mas_field", "150"), ("pitch", "pitch_field", "1.2"),
         ("kv", "kv_field", "100"))
# the number after each value's name, as the read-outs and the status line write it
PATTERNS = {"length": r"ength\s*(-?\d+\.\d)", "ctdi": r"CTDI\s*vol\s*(\d+\.\d\d)", "dlp": r"DLP\s*(\d+)"}


def _record(d: Driver, name: str) -> None:
    d.facts[f"{name}_geo"] = d.geometry()["geometry"]
    d.facts[f"{name}_state"] = d.con.state()
    d.shot(name)


def _values_script(d: Driver) -> None:
    d.click("acquire_scout")
    d.con.settle(5.0)
    for name, field, text in EDITS:
        d.type_into(field, text)
        _record(d, name)


def _status_script(d: Driver) -> None:
    d.click("acquire_scout")
    d.con.settle(5.0)
    d.click("tab_bolus")
    d.click("monitor_reference")
    d.click("monitor_view")  # the ROI: where is not the point here, that it is placed
    _record(d, "roi_placed")
    d.click("confirm_plan")
    _record(d, "confirmed")
    d.click("scan")
    d.con.settle(d.con.state()["scan"]["remaining_s"] + 0.5)  # past the rotation: 1.5 s of reconstruction left
    _record(d, "reconstructing")


def _run(display, tmp_path_factory, name: str, script, initial: dict) -> Driver:
    tmp = tmp_path_factory.mktemp(name)
    card = write_card(tmp, f"{name}_probe", "ct", "CT values", "Plan a scan.", initial)
    d, con = run_script(display, "ct", card, script)
    con.stop()
    for shot, png in d.shots.items():
        (tmp / f"{shot}.png").write_bytes(png)
    return d


@pytest.fixture(scope="module")
def values(display, tmp_path_factory) -> Driver:
    return _run(display, tmp_path_factory, "ct_values", _values_script, {"protocol": "chest_routine"})


@pytest.fixture(scope="module")
def status(display, tmp_path_factory) -> Driver:
    return _run(display, tmp_path_factory, "ct_status", _status_script, {"protocol": "ccta"})


def _crop(d: Driver, shot: str, widget: str, pad: int = 2) -> Image.Image:
    x, y, w, h = d.facts[f"{shot}_geo"][widget]
    return Image.open(io.BytesIO(d.shots[shot])).crop((x - pad, y - pad, x + w + pad, y + h + pad))


def _texts(d: Driver, shot: str, widget: str) -> list[str]:
    return list(readings(_crop(d, shot, widget), single_line=False))


def _expected(state: dict) -> dict[str, str]:
    plan, dose = state["plan"], state["dose"]
    return {"length": format_number(plan["length_mm"], 1, ""), "ctdi": f"{dose['ctdi_vol_mgy']:.2f}",
            "dlp": f"{dose['dlp_mgycm']:.0f}"}


def _read(texts: list[str], key: str) -> list[str]:
    return [m.group(1) for t in texts for m in [re.search(PATTERNS[key], t)] if m]


@pytest.mark.parametrize("edit", [e[0] for e in EDITS])
def test_every_copy_of_length_and_dose_reads_the_models_value(values, edit):
    require_tesseract()
    want = _expected(values.facts[f"{edit}_state"])
    copies = {"length": {"length_readout": [f"length {t}" for t in _texts(values, edit, "length_readout")],
                         "message": _texts(values, edit, "message")},
              "ctdi": {"dose_readout": _texts(values, edit, "dose_readout"), "message": _texts(values, edit, "message")},
              "dlp": {"dose_readout": _texts(values, edit, "dose_readout"), "message": _texts(values, edit, "message")}}
    # which copies the status line carries after each edit (the range: length and DLP; technique: CTDIvol and DLP)
    in_message = {"start": ("length", "dlp"), "mas": ("ctdi", "dlp"), "pitch": ("ctdi", "dlp"), "kv": ("ctdi", "dlp")}
    bad = []
    for key, where in copies.items():
        for widget, texts in where.items():
            if widget == "message" and key not in in_message[edit]:
                continue
            got = _read(texts, key)
            if want[key] not in got:
                bad.append(f"{edit}: {widget} {key} read {got} in {texts}, the model holds {want[key]}")
    assert not bad, "\n".join(bad)


def test_bolus_advice_follows_the_confirmation(status):
    require_tesseract()
    before = " ".join(_texts(status, "roi_placed", "bolus_status"))
    after = " ".join(_texts(status, "confirmed", "bolus_status"))
    assert "Confirm the plan" in before, before  # the advice was there: the reading can see it
    assert status.facts["confirmed_state"]["plan"]["confirmed"]
    assert "Confirm the plan" not in after and "plan confirmed" in after, after


def test_no_scanning_message_while_reconstructing(status):
    require_tesseract()
    st = status.facts["reconstructing_state"]
    assert st["scan"]["status"] == "reconstructing", st["scan"]
    progress = " ".join(_texts(status, "reconstructing", "scan_progress"))
    message = " ".join(_texts(status, "reconstructing", "message"))
    assert "Reconstructing 100" in progress, progress
    assert "Scanning" not in message and "Reconstructing series 1" in message, message
