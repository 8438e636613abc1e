"""MR measurement aids on screen (issue 34), in the real console under Xvfb with X input, read back by OCR.

A card with the 3-plane localizer and a short-axis cine stack acquired and a second stack open (2x2: sagittal,
coronal, transverse localizer and the cine, scrolled two images off its middle, so its position is not the
stack's centre). On the transverse localizer and on the cine: the pointer is moved (an agent's `move`) to a pixel whose
patient coordinates follow from the exported plane-to-screen transform and the dumped image pose; Tesseract must
read those coordinates in the pointer read-out, the image's slice position ("Tra F 12.3": orientation and mm from
the isocentre, from the dump), and the scale bar's length, whose white bar on the screenshot must be that many mm
long at the viewport's pixels per mm. The distance tool measures between two clicks 100 mm apart (by the same
transform) on the coronal localizer of `dev`: the dumped and the drawn length agree with it within one pixel
spacing of the image. Screenshots go to the test's tmp_path.
"""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from consoles.mr.measure import patient_text, slice_position_text
from rendering.geometry import PlanePose
from runner.actions import Action
from tests.consoles.console_driver import Driver, probe_once
from tests.ocr import first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_sax", "status": "done"},
                     {"protocol": "cine_sax"}], "open": 3,
           "layout": {"layout": "2x2", "viewports": [{"row": 1, "image": 1}, {"row": 1, "image": 2},
                                                      {"row": 1, "image": 3}, {"row": 2}]}}
LOCALIZER_VP, CINE_VP, DISTANCE_VP = 3, 4, 2  # transverse localizer, cine, coronal localizer (1-based)
POINTER_AT = (0.35, 0.6)  # where in the viewport the pointer goes (share of width, height)
KNOWN_MM = 100.0


def _pose(state: dict, vp: int) -> tuple[PlanePose, dict]:
    """The plane pose (and image record) of what viewport `vp` (1-based) shows, from the dump."""
    lay = state["layout"]["viewports"][vp - 1]
    s = next(x for x in state["series"] if x["uid"] == lay["series"])
    im = s["images"][lay["image"] - 1]
    return PlanePose.from_axes(im["centre_mm"], im["u"], im["v"]), im


def _crop(png: bytes, rect: list[int], pad: int = 2) -> Image.Image:
    x, y, w, h = rect
    return Image.open(io.BytesIO(png)).crop((x - pad, y - pad, x + w + pad, y + h + pad))


def _bar_px(png: bytes, vp_rect: list[int]) -> int:
    """The longest run of near-white pixels on the scale bar's row (10 px above the viewport's bottom edge)."""
    x, y, w, h = vp_rect
    row = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[y + h - 10, x:x + w // 2].astype(int)
    white = (row > 225).all(axis=1)
    best = run = 0
    for on in white:
        run = run + 1 if on else 0
        best = max(best, run)
    return best


def _script(p: Driver) -> None:
    x, y, w, h = p.geometry()["viewports"][f"viewport{CINE_VP}"]["rect"]
    p.act(Action("scroll", x=x + w // 2, y=y + h // 2, clicks=2))  # two images further down the stack
    for vp in (LOCALIZER_VP, CINE_VP):
        x, y, w, h = p.geometry()["viewports"][f"viewport{vp}"]["rect"]
        px, py = x + int(w * POINTER_AT[0]), y + int(h * POINTER_AT[1])
        p.act(Action("move", x=px, y=py))
        p.facts[f"pointer{vp}"] = (px, py)
        p.facts[f"geo{vp}"] = p.geometry()
        p.facts[f"state{vp}"] = p.con.state()
        p.shot(f"pointer{vp}")
    # the distance tool: two clicks KNOWN_MM apart along the coronal image's u axis
    p.click("distance_tool")
    t = p.transform(DISTANCE_VP)
    x, y, w, h = p.geometry()["viewports"][f"viewport{DISTANCE_VP}"]["rect"]
    u0, v0 = (x + w * 0.25 - t["bx"]) / t["ax"], (y + h * 0.7 - t["by"]) / t["ay"]
    a = (int(round(t["ax"] * u0 + t["bx"])), int(round(t["ay"] * v0 + t["by"])))
    b = (int(round(t["ax"] * (u0 + KNOWN_MM) + t["bx"])), a[1])
    for xy in (a, b):
        p.click_at(xy)
    p.facts["distance_clicks"] = (a, b, t)
    p.facts["distance_geo"] = p.geometry()
    p.facts["distance_state"] = p.con.state()
    p.shot("distance")


@pytest.fixture(scope="module")
def run(display, tmp_path_factory):
    return probe_once(display, tmp_path_factory.mktemp("mr_measure"), "mr_measure_probe",
                      "MR measurement aids", "Measure on the images.", INITIAL, _script)


def _read(img: Image.Image, accept) -> tuple[bool, list[str]]:
    return first_reading(readings(img), accept)


def _close(got: list[str], want: list[str], tol: float) -> bool:
    return len(got) == len(want) and all(abs(float(a) - float(b)) <= tol for a, b in zip(got, want))


@pytest.mark.parametrize("vp", [LOCALIZER_VP, CINE_VP], ids=["localizer", "cine"])
def test_ocr_reads_the_pointer_slice_position_and_scale_bar(run, vp):
    require_tesseract()
    state, geo = run.facts[f"state{vp}"], run.facts[f"geo{vp}"]
    png = run.shots[f"pointer{vp}"]
    pose, im = _pose(state, vp)
    iso = state["isocentre_mm"]
    t = geo["viewports"][f"viewport{vp}"]["transform"]
    px, py = run.facts[f"pointer{vp}"]
    u, v = (px - t["bx"]) / t["ax"], (py - t["by"]) / t["ay"]
    # the pointer: the subject point under it, in scanner mm (from the transform and the dumped pose)
    want = patient_text(pose.to_subject(u, v), iso)
    rect = geo["geometry"][f"viewport{vp}.label:pointer_readout"]
    ok, got = _read(_crop(png, rect), lambda r: _close(numbers(r), numbers(want), 0.11))
    assert ok, f"pointer read-out read {got}, the pointer is at {want}"
    # the slice position of the image shown
    want = slice_position_text(pose, iso)
    if vp == CINE_VP:  # off the stack's centre (the localizer's planes are through the isocentre: 0.0)
        assert state["layout"]["viewports"][vp - 1]["image"] != state["layout"]["viewports"][vp - 1]["n_images"] // 2 + 1
        assert abs(float(numbers(want)[0])) > 5.0, want
    rect = geo["geometry"][f"viewport{vp}.label:slice_position"]
    ok, got = _read(_crop(png, rect), lambda r: r.split()[:1] == want.split()[:1]
                    and _close(numbers(r), numbers(want), 0.06))
    assert ok, f"slice position read {got}, the image lies at {want}"
    # the scale bar: its text, and its drawn length at the viewport's scale
    rect = geo["geometry"][f"viewport{vp}.label:scale_bar_text"]
    ok, got = _read(_crop(png, rect), lambda r: len(numbers(r)) == 1 and "mm" in r)
    assert ok, f"scale bar label read {got}"
    mm = float(numbers(got[-1])[0])
    drawn = _bar_px(png, geo["viewports"][f"viewport{vp}"]["rect"])
    assert abs(drawn - mm * t["ax"]) <= 3, f"the {mm:g} mm bar is {drawn} px, {mm * t['ax']:.1f} px at this scale"
    assert mm * t["ax"] >= 20  # long enough to measure with


def test_the_distance_tool_measures_a_known_length_within_a_pixel_spacing(run):
    require_tesseract()
    (a, b, t) = run.facts["distance_clicks"]
    known = math.hypot((b[0] - a[0]) / t["ax"], (b[1] - a[1]) / t["ay"])
    assert abs(known - KNOWN_MM) < 1.0  # the clicks are whole pixels
    state = run.facts["distance_state"]
    _, im = _pose(state, DISTANCE_VP)
    spacing = max(im["pixel_mm"])
    d = state["measure"]["distances"]
    assert len(d) == 1, d
    assert abs(d[0]["length_mm"] - known) <= spacing, (d[0]["length_mm"], known, spacing)
    rect = run.facts["distance_geo"]["geometry"][f"viewport{DISTANCE_VP}.label:distance0_text"]
    ok, got = _read(_crop(run.shots["distance"], rect),
                    lambda r: len(numbers(r)) == 1 and abs(float(numbers(r)[0]) - known) <= spacing)
    assert ok, f"the distance label read {got}; the clicks are {known:.1f} mm apart"


def test_slice_one_of_the_open_stack_is_marked_on_the_localizers(run):
    """The open stack's slice 1 carries a "1" beside its line on each localizer that cuts it (near the line's end)."""
    geo = run.facts[f"geo{LOCALIZER_VP}"]["geometry"]
    marks = [k for k in geo if k.endswith(".label:slice1_mark")]
    assert marks, sorted(k for k in geo if ".label:" in k)
