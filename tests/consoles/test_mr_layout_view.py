"""MR viewer layouts and controls in the real console under Xvfb with X input (issue 34). Four different series in
2x2 and a pending row:
- a click activates viewport 4; 1x2 then shows viewports 3 and 4 side by side, viewport 4 still active;
- 1x1 on viewport 3, two wheel steps, back to 2x2: every viewport shows the series it showed (viewport 3 two
  images on), read from the dump and from viewport 3's caption by OCR;
- a double-click on a series thumbnail opens it in the active viewport;
- Go is greyed (its pixels no longer the primary blue) while the scan it started runs.
Screenshots go to the test's tmp_path."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from runner.actions import Action
from tests.consoles.console_driver import Driver, probe_once
from tests.ocr import first_reading, readings, require_tesseract

pytestmark = pytest.mark.display
SMALL = {"matrix": 64}
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done", "params": SMALL},
                     {"protocol": "t2_haste_cor", "status": "done", "params": dict(SMALL, n_slices=5)},
                     {"protocol": "t2_tse_tra", "status": "done", "params": dict(SMALL, n_slices=5)},
                     {"protocol": "cine_sax", "status": "done", "params": dict(SMALL, n_slices=5)},
                     {"protocol": "t2_haste_cor", "params": dict(SMALL, n_slices=20)}],
           "layout": {"layout": "2x2", "viewports": [{"row": 1, "image": 1}, {"row": 2}, {"row": 3}, {"row": 4}]}}
PRIMARY_BLUE = (0x2E, 0x6D, 0xB0)


def _shown(p: Driver) -> list[tuple]:
    return [(v["series"], v["image"]) for v in p.con.state()["layout"]["viewports"]]


def _blue_share(png: bytes, rect: list[int]) -> float:
    """Share of the button's pixels in the primary button's blue."""
    x, y, w, h = rect
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB").crop((x, y, x + w, y + h))).astype(int)
    return float((np.abs(a - np.array(PRIMARY_BLUE)).sum(axis=2) < 20).mean())


def _viewport_corner(p: Driver, vp: int) -> tuple[int, int]:
    """A point near viewport `vp`'s lower left corner (clear of planning graphics)."""
    x, y, w, h = p.geometry()["viewports"][f"viewport{vp}"]["rect"]
    return x + w // 10, y + h - h // 10


def _script(p: Driver) -> None:
    p.facts["before"] = _shown(p)
    p.click_at(_viewport_corner(p, 4))
    p.click("layout_1x2")
    p.facts["1x2_active"] = p.con.state()["layout"]["active"]
    p.facts["1x2_visible"] = [v["index"] for v in p.con.state()["layout"]["viewports"] if v["visible"]]
    p.facts["1x2_rects"] = {i: p.geometry()["viewports"][f"viewport{i}"]["rect"] for i in (3, 4)}
    p.shot("layout_1x2")
    p.click("layout_2x2")
    p.click_at(_viewport_corner(p, 3))
    p.click("layout_1x1")
    x, y, w, h = p.geometry()["viewports"]["viewport3"]["rect"]
    p.act(Action("scroll", x=x + w // 2, y=y + h // 2, clicks=2))
    p.click("layout_2x2")
    p.facts["after"] = _shown(p)
    p.facts["caption3"] = p.geo()["viewport3.label:caption1"]
    p.shot("back_to_2x2")
    # a double-click on the cine's thumbnail opens it in the active viewport (3)
    key = next(e["key"] for e in p.con.state()["series_list"] if e["key"] == "4")
    p.double_click(f"series_item:{key}")
    p.facts["after_double"] = _shown(p)
    p.facts["go_rect"] = p.geo()["go"]
    p.shot("idle_go")
    p.click("go")
    p.facts["running"] = p.con.state()["queue"][4]["status"]
    p.shot("scanning_go")


@pytest.fixture(scope="module")
def run(display, tmp_path_factory):
    return probe_once(display, tmp_path_factory.mktemp("mr_layout"), "mr_layout_probe",
                      "MR layouts", "Look at the images.", INITIAL, _script)


def test_1x2_shows_the_active_viewport_and_its_neighbour(run):
    f = run.facts
    assert f["1x2_active"] == 4 and f["1x2_visible"] == [3, 4]
    (x3, y3, w3, h3), (x4, y4, w4, h4) = f["1x2_rects"][3], f["1x2_rects"][4]
    assert y3 == y4 and x3 + w3 <= x4 and w3 > 0 and w4 > 0  # side by side, 3 left of 4


def test_paging_in_1x1_and_back_swaps_nothing(run):
    require_tesseract()
    before, after = run.facts["before"], run.facts["after"]
    assert [s for s, _ in after] == [s for s, _ in before]
    assert after[0] == before[0] and after[1] == before[1] and after[3] == before[3]
    assert after[2][1] == before[2][1] + 2
    x, y, w, h = run.facts["caption3"]
    crop = Image.open(io.BytesIO(run.shots["back_to_2x2"])).crop((x - 2, y - 2, x + w + 2, y + h + 2)).convert("RGB")
    want = f"Image {after[2][1]}/5"
    ok, got = first_reading(readings(crop), lambda r: r.replace(" ", "") == want.replace(" ", ""))
    assert ok, f"viewport 3's caption read {got}, not {want}"


def test_thumbnail_double_click_opens_the_series_in_the_active_viewport(run):
    f = run.facts
    assert f["after_double"][2][0] == 4 and f["after_double"][2][0] != f["after"][2][0]
    assert [f["after_double"][i] for i in (0, 1, 3)] == [f["after"][i] for i in (0, 1, 3)]


def test_go_is_greyed_while_scanning(run):
    f = run.facts
    assert f["running"] == "running"
    assert _blue_share(run.shots["idle_go"], f["go_rect"]) > 0.5
    assert _blue_share(run.shots["scanning_go"], f["go_rect"]) < 0.05
