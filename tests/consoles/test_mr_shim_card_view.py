"""The shim box on the MR parameter card, in the real console under Xvfb with X input (issue 34): on
L4_heart_shim_box (shim box shown, the short-axis stack open) the Geometry tab shows the box's centre and size
fields; a typed centre (F/H) and size (phase) read back by OCR from the fields on the next screenshot, the state
holds them, and the box's centre grip on the coronal localizer moved up by the typed F/H change at the viewport's
scale; an out-of-range size is refused (the state keeps the old box, the status line says so, read by OCR); every
shim grip lies inside its viewport. Screenshots go to the test's tmp_path."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.consoles.console_driver import ROOT, Driver, run_script
from tests.ocr import field_readings, first_reading, readings, require_tesseract

pytestmark = pytest.mark.display
CARD = str(ROOT / "tasks/mr/L4_heart_shim_box/task.json")
CORONAL_VP = 2  # the card's viewport 2 shows the coronal localizer (image 2 of the 3-plane localizer)
FH_STEP_MM = 12.0
PHASE_MM = 150.0
REFUSED = "Shim size read: 700.0 mm is outside 10.0-500.0 mm; not applied"


def _box(p: Driver) -> dict:
    return p.params()["shim_box"]


def _shim_grips_inside(p: Driver) -> list[str]:
    """Shim grips whose exported rect's centre lies outside their viewport."""
    g = p.geometry()
    bad = []
    for name, rect in g["geometry"].items():
        if ".handle:shim_" not in name:
            continue
        vx, vy, vw, vh = g["viewports"][name.split(".")[0]]["rect"]
        x, y = rect[0] + rect[2] / 2, rect[1] + rect[3] / 2
        if not (vx <= x <= vx + vw and vy <= y <= vy + vh):
            bad.append(name)
    return bad


def _script(p: Driver) -> None:
    p.click("tab_geometry")
    p.facts["box0"] = _box(p)
    p.facts["fh0"] = p.params()["shim_box"]["centre"][2] - p.con.state()["isocentre_mm"][2]
    p.facts["grip0"] = p.handle(CORONAL_VP, "shim_centre")
    p.facts["outside0"] = _shim_grips_inside(p)
    p.type_into("shim_fh_mm_field", f"{p.facts['fh0'] + FH_STEP_MM:.1f}")
    p.type_into("shim_phase_mm_field", f"{PHASE_MM:.0f}")
    p.home()
    p.facts["box1"] = _box(p)
    p.facts["grip1"] = p.handle(CORONAL_VP, "shim_centre")
    p.facts["ay"] = p.transform(CORONAL_VP)["ay"]
    p.facts["geo1"] = p.geo()
    p.shot("typed")
    p.type_into("shim_read_mm_field", "700")
    p.facts["box2"] = _box(p)
    p.facts["geo2"] = p.geo()
    p.facts["outside2"] = _shim_grips_inside(p)
    p.shot("refused")


@pytest.fixture(scope="module")
def run(display, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mr_shim_card")
    p, con = run_script(display, "mr", CARD, _script)
    con.stop()
    for name, png in p.shots.items():
        (tmp / f"{name}.png").write_bytes(png)
    return p


def _crop(png: bytes, rect: list[int]) -> Image.Image:
    x, y, w, h = rect
    return Image.open(io.BytesIO(png)).crop((x, y, x + w, y + h)).convert("RGB")


def test_typed_centre_and_size_read_back_and_move_the_box(run):
    require_tesseract()
    f = run.facts
    want_fh = f"{f['fh0'] + FH_STEP_MM:.1f}"
    for field, want in (("shim_fh_mm_field", want_fh), ("shim_phase_mm_field", f"{PHASE_MM:.1f}")):
        # the last field typed still has the caret after its number (read as "|", "]" or "1" at some scales)
        ok, got = first_reading(field_readings(_crop(run.shots["typed"], f["geo1"][field])),
                                lambda r: r == want or (r.startswith(want) and len(r) == len(want) + 1))
        assert ok, f"{field} read {got}, not {want}"
    c0, c1 = f["box0"]["centre"], f["box1"]["centre"]
    assert c1[2] - c0[2] == pytest.approx(FH_STEP_MM, abs=0.05) and c1[:2] == pytest.approx(c0[:2], abs=1e-3)
    assert f["box1"]["size_mm"] == pytest.approx([f["box0"]["size_mm"][0], PHASE_MM, f["box0"]["size_mm"][2]])
    # the coronal image's v is the head direction: the grip went up by the F/H change at the viewport's scale
    dy = f["grip1"][1] - f["grip0"][1]
    assert dy == pytest.approx(f["ay"] * FH_STEP_MM, abs=2), (f["grip0"], f["grip1"])


def test_out_of_range_size_is_refused_and_said(run):
    require_tesseract()
    f = run.facts
    assert f["box2"] == f["box1"]
    x, y, w, h = f["geo2"]["message"]
    shot = Image.open(io.BytesIO(run.shots["refused"])).crop((x, y, x + w, y + h)).convert("RGB")
    norm = lambda t: " ".join(t.split()).lower()  # noqa: E731
    ok, said = first_reading(readings(shot, single_line=False), lambda r: norm(REFUSED) in norm(r))
    assert ok, f"status line read {said!r}, not {REFUSED!r}"


def test_shim_grips_lie_inside_their_viewports(run):
    assert run.facts["outside0"] == [] and run.facts["outside2"] == []
