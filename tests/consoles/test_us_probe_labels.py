"""The ultrasound probe panel says on screen what its fields mean (issue 24, items 3 and 4), read by OCR from
real screenshots: every probe field's range and every angle's sign convention in words, and Apply gel's
state (the gel film and the share of scan lines in contact), changed on the screenshot after the press."""
from __future__ import annotations

import io
from contextlib import contextmanager

import pytest
from PIL import Image

from consoles.us.view import GEL_STATES, PROBE_HELP
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import ROOT, driving
from tests.ocr import first_reading, readings, require_tesseract

pytestmark = pytest.mark.display

CARD = "tasks/us/us_kidney_contact_vs_gain_v1/task.json"
# dev's seeds of that card whose dark image comes from gel missing under one side of the array
GEL_FAULT_SEED = 0  # dev, seed 0 starts without gel under the cohort-balance rule (consoles/common/balance.py)
# what each line must say: the field, its range and the words of its sign convention
HELP_WORDS = {
    "probe_z_mm": ("Height", "toward the head", "-700 to 200 mm"),
    "probe_azimuth_deg": ("Around body", "0 = up", "toward the patient's left", "-135 to 135 deg"),
    "probe_rotation_deg": ("Rotation", "marker to head", "anticlockwise from above", "0-359 deg"),
    "probe_tilt_deg": ("Tilt", "beam to your right", "marker away from you", "-45 to 45 deg"),
    "probe_rock_deg": ("Rock", "toward the marker end", "-30 to 30 deg"),
    "pressure_pct": ("Pressure", "0-100 %"),
}


def _squash(text: str) -> str:
    """Text compared without spaces or case (Tesseract's word gaps at 12 px are not reliable)."""
    return "".join(text.replace("\u2019", "'").split()).lower()


def _reads(shot: Image.Image, rect: list[int], words) -> tuple[bool, list[str]]:
    x, y, w, h = rect
    crop = shot.crop((x, y, x + w, y + h)).convert("RGB")
    want = [_squash(t) for t in words]
    return first_reading(readings(crop), lambda r: all(t in _squash(r) for t in want))


@contextmanager
def _us_console(display, card: str, seed: int):
    """The ultrasound console on dev with `card` and `seed`, started, driven through real X input from home."""
    require_console()
    require_tesseract()
    con = ConsoleProcess(display, "us", str(ROOT / card), "dev", seed)
    con.start()
    try:
        with driving(display, con) as d:
            d.home()
            yield con, d
    finally:
        con.stop()


def test_every_probe_field_shows_its_range_and_sign_convention(display):
    assert {n for n, _ in PROBE_HELP} == set(HELP_WORDS), "every probe field has a line saying what it means"
    with _us_console(display, CARD, GEL_FAULT_SEED) as (con, d):
        shot = Image.open(io.BytesIO(d.grab()))
        geo = d.geo()
        for name, words in HELP_WORDS.items():
            ok, got = _reads(shot, geo[f"probe_help:{name}"], words)
            assert ok, f"{name}: read {got!r}, not {words!r}"


def test_apply_gel_shows_the_gel_and_contact_before_and_after(display):
    with _us_console(display, CARD, GEL_FAULT_SEED) as (con, d):
        st = con.state()
        fault = st["contact"]["coupling"]["fault"]
        assert fault != "none", "the seed starts with gel missing"
        before = round(100.0 * st["contact"]["fraction_in_contact"])
        assert before < 90
        shot = Image.open(io.BytesIO(d.grab()))
        ok, got = _reads(shot, d.geo()["gel_state"], [f"Gel: {GEL_STATES[fault]}"])
        assert ok, f"gel state read {got!r}"
        ok, got = _reads(shot, d.geo()["contact_state"], [f"Contact: {before} % of lines"])
        assert ok, f"contact read {got!r}"
        d.click("apply_gel")
        st = con.state()
        after = round(100.0 * st["contact"]["fraction_in_contact"])
        assert st["contact"]["coupling"]["ok"] and after > before
        shot = Image.open(io.BytesIO(d.grab()))  # the next screenshot says what the press did
        ok, got = _reads(shot, d.geo()["gel_state"], ["Gel: applied"])
        assert ok, f"gel state read {got!r} after Apply gel"
        ok, got = _reads(shot, d.geo()["contact_state"], [f"Contact: {after} % of lines"])
        assert ok, f"contact read {got!r} after Apply gel"


def test_a_probe_turned_round_says_so_and_turning_it_back_says_head(display):
    """US optimisation 2.0.0: an episode that starts with the probe turned round shows "Marker: feet" over the
    image; the rotation typed half a turn on (real X input) shows "Marker: head" on the next screenshot."""
    from scoring.oracles.us import marker_towards_head

    card, seed = "tasks/us/us_kidney_acquisition_optimization_v1/task.json", 1  # dev seed 1 starts turned round
    with _us_console(display, card, seed) as (con, d):
        st = con.state()
        assert not marker_towards_head(st["plane"]), "dev seed 1 starts with the marker to the feet"
        ok, got = _reads(Image.open(io.BytesIO(d.grab())), d.geo()["marker_side"], ["Marker: feet"])
        assert ok, f"marker label read {got!r}"
        turned = round((st["probe_display"]["rotation_deg"] + 180.0) % 360.0)
        d.type_into("probe_rotation_deg_field", str(turned))
        assert marker_towards_head(con.state()["plane"])
        ok, got = _reads(Image.open(io.BytesIO(d.grab())), d.geo()["marker_side"], ["Marker: head"])
        assert ok, f"marker label read {got!r} after the turn"
