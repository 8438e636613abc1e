"""The MR parameter card says on screen what its fields take and which way its angles turn (issue 24,
item 3), read by OCR from real screenshots: the Geometry tab's position ranges, the tilts' and the in-plane
rotation's ranges and sign conventions for each main orientation (they follow the Tra / Cor / Sag choice on
the next screenshot), and the other tabs' range lines; the lines are laid out without covering a control.
The words come from consoles.mr.card_help, whose truth tests/consoles/test_mr_card_help.py checks."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from consoles.mr import card_help
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import ROOT, driving, on_screen
from tests.ocr import first_reading, readings, require_tesseract

pytestmark = pytest.mark.display

CARD = "tasks/mr/L4_4ch/task.json"  # the 4ch row is open, main orientation transverse
# the Geometry tab's controls the help lines sit among: none may be covered or pushed off the card
GEOMETRY_CONTROLS = ("pos_lr_mm_field", "pos_ap_mm_field", "pos_fh_mm_field", "position_convention", "main:T",
                     "main:C", "main:S", "tilt_a_deg_field", "tilt_b_deg_field", "inplane_deg_field",
                     "shim_mode:tune_up", "shim_mode:standard", "shim_mode:advanced", "orientation_readout",
                     "scan_time")


def _squash(text: str) -> str:
    """Text compared without spaces or case (Tesseract's word gaps at 12 px are not reliable)."""
    return "".join(text.replace("\u2019", "'").split()).lower()


def _reads(shot: Image.Image, rect: list[int], text: str) -> tuple[bool, list[str]]:
    x, y, w, h = rect
    crop = shot.crop((x, y, x + w, y + h)).convert("RGB")
    return first_reading(readings(crop), lambda r: _squash(text) == _squash(r))


def _overlap(a: list[int], b: list[int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _grab(d) -> Image.Image:
    return Image.open(io.BytesIO(d.grab()))


def test_geometry_ranges_and_sign_conventions_read_back_and_follow_the_main_orientation(display):
    require_console()
    require_tesseract()
    con = ConsoleProcess(display, "mr", str(ROOT / CARD), "dev", 0)
    con.start()
    try:
        with driving(display, con) as d:
            d.home()
            d.click("tab_geometry")
            st = con.state()
            assert next(r for r in st["queue"] if r["uid"] == st["open_row"])["params"]["main"] == "T"
            geo = d.geo()
            # the card's width is its tab row's; its bottom lies above the console's status line
            left, right = geo["tab_routine"][0], geo["tab_geometry"][0] + geo["tab_geometry"][2]
            bottom = geo["message"][1]
            helps = {n: geo[f"geometry_help:{n}"] for n in card_help.geometry_lines("T")}
            for name, rect in helps.items():
                assert on_screen(rect) and rect[0] >= left and rect[0] + rect[2] <= right, name
                for other in GEOMETRY_CONTROLS:
                    assert not _overlap(rect, geo[other]), f"{name} covers {other}"
            for other in GEOMETRY_CONTROLS:  # nothing pushed off the card
                x, y, w, h = geo[other]
                assert on_screen(geo[other]) and x + w <= right and y + h < bottom, f"{other} is off the card"
            for main in ("T", "C", "S"):
                if main != "T":
                    d.click(f"main:{main}")
                    d.home()
                shot = _grab(d)  # the screenshot after the choice shows its convention
                for name, text in card_help.geometry_lines(main).items():
                    ok, got = _reads(shot, helps[name], text)
                    assert ok, f"{main} {name}: read {got!r}, not {text!r}"
            for tab in card_help.RANGE_LINES:
                d.click(f"tab_{tab.lower()}")
                d.home()
                shot, geo = _grab(d), d.geo()
                for i, text in enumerate(card_help.range_lines(tab)):
                    ok, got = _reads(shot, geo[f"{tab.lower()}_ranges:{i + 1}"], text)
                    assert ok, f"{tab} line {i + 1}: read {got!r}, not {text!r}"
    finally:
        con.stop()
