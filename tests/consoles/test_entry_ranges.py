"""An entry outside its range is never silently changed (issue 24), in the GUI of every console: a
double-click on a field selects its whole number (the unit is a label beside it), typing replaces it,
and an out-of-range value is refused (the field keeps the text, the state keeps the old value) or, for
a full-turn angle, wrapped; the status line of the next screenshot says so, read by OCR."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from runner.actions import Action
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import ROOT, driving
from tests.ocr import field_readings, first_reading, readings, require_tesseract

pytestmark = pytest.mark.display


def _ct_ready(d) -> None:
    d.click(sorted(k for k in d.geo() if k.startswith("protocol_item:"))[0])
    d.click("load_protocol")


# (modality, card, preparation, field, in-range entry, its value, out-of-range entry, value read from the
# state, the value the state must then hold (None: unchanged), words the status line must show)
CASES = {
    "ct": ("tasks/ct/ct_kub_low_dose_constraint/task.json", _ct_ready, "kv_field", "100", 100.0, "200",
           lambda st: st["params"]["kv"], None, "Tube voltage: 200 kV is outside 70-150 kV; not applied"),
    "mr": ("tasks/mr/L4_4ch/task.json", None, "fov_read_mm_field", "320", 320.0, "50",
           lambda st: next(r for r in st["queue"] if r["uid"] == st["open_row"])["params"]["fov_read_mm"], None,
           "FOV read: 50 mm is outside 100-500 mm; not applied"),
    "us": ("tasks/us/us_kidney_set_acquisition_v1/task.json", None, "probe_rotation_deg_field", "90", 90.0, "-20",
           lambda st: st["pose"]["rotation_deg"], 340.0, "Rotation -20 deg set as 340 deg"),
}


def _words(text: str) -> str:
    return " ".join(text.replace("\u2014", "-").split()).lower()


@pytest.mark.parametrize("modality", sorted(CASES))
def test_out_of_range_entry_is_refused_or_wrapped_and_said_on_screen(display, modality):
    require_console()
    require_tesseract()
    card, prepare, field, good, good_value, bad, read, after, words = CASES[modality]
    con = ConsoleProcess(display, modality, str(ROOT / card), "dev", 0)
    con.start()
    try:
        with driving(display, con) as d:
            d.home()
            if prepare is not None:
                prepare(d)
            assert d.geo().get(f"{field}_unit"), "the unit is a label beside the field"
            # double-click selects the whole number: typing replaces it
            d.double_click(field)
            d.act(Action("type", text=good))
            d.act(Action("key", key="Enter"))
            assert read(con.state()) == pytest.approx(good_value)
            # out of range: refused (or wrapped), never silently changed
            d.double_click(field)
            d.act(Action("type", text=bad))
            d.act(Action("key", key="Enter"))
            st = con.state()
            assert read(st) == pytest.approx(good_value if after is None else after)
            shot = Image.open(io.BytesIO(d.grab()))
            x, y, w, h = d.geo()["message"]
            ok, said = first_reading(readings(shot.crop((x, y, x + w, y + h)).convert("RGB"), single_line=False),
                                     lambda r: _words(words) in _words(r))
            assert ok, f"status line read {said!r}, not {words!r}"
            if after is None:  # the refused text stays in the field
                fx, fy, fw, fh = d.geo()[field]
                # the caret still stands after it (read as "|" or "1" at some scales)
                ok, got = first_reading(field_readings(shot.crop((fx, fy, fx + fw, fy + fh)).convert("RGB")),
                                        lambda r: r == bad or (r.startswith(bad) and len(r) == len(bad) + 1))
                assert ok, f"field read {got!r}"
    finally:
        con.stop()
