"""The plane-aware viewer on a real X display: layout and active frame, a resliced image in its
plane, colour map with a legible colour bar, new overlay kinds, and the geometry export."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from tests.consoles.probe_process import run_probe
from tests.ocr import first_reading, readings, require_tesseract

pytestmark = pytest.mark.display


@pytest.fixture(scope="module")
def probe(display, tmp_path_factory):
    out = run_probe(display, "viewer_probe", tmp_path_factory.mktemp("viewer"))
    steps = {s["name"]: s for s in json.loads((out / "manifest.json").read_text())}
    shots = {name: np.asarray(Image.open(out / f"{name}.png").convert("RGB")) for name in steps}
    return steps, shots


def _ocr(shot: np.ndarray, rect: list[int], want: str) -> list[str]:
    """Readings of a text's screen rectangle, cropped exactly and then with a 1 px margin, stopping at the
    first that reads `want`; a frame edge read as a leading '|' or '[' is dropped (Tesseract's usual border
    artefact). The readings taken, for the message."""
    x, y, w, h = rect
    crops = (Image.fromarray(shot[y - m:y + h + m, x - m:x + w + m]) for m in (0, 1))
    lines = (r.lstrip("|[ ") for crop in crops for r in readings(crop))
    return first_reading(lines, lambda r: r == want)[1]


def _px(shot: np.ndarray, geo: dict, u: float, v: float) -> np.ndarray:
    t = geo["transform"]
    x, y = t["ax"] * u + t["bx"], t["ay"] * v + t["by"]
    return shot[int(round(y)), int(round(x))].astype(int)


def test_quad_layout_frames_the_active_viewport(probe):
    steps, shots = probe
    s, shot = steps["quad"], shots["quad"]
    assert s["state"]["layout"] == "2x2" and s["state"]["active"] == 2 and set(s["viewports"]) == {
        "vp1", "vp2", "vp3", "vp4"}
    x, y, w, h = s["frames"]["vp2"]
    assert tuple(shot[y + h // 2, x]) == (0xFF, 0xD9, 0x4D)  # the active frame's bright border
    x, y, w, h = s["frames"]["vp1"]
    assert tuple(shot[y + h // 2, x]) == (0x3A, 0x3F, 0x47)


def test_resliced_image_lies_in_its_plane(probe):
    steps, shots = probe
    geo, shot = steps["quad"]["viewports"]["vp1"], shots["quad"]
    assert np.allclose(geo["pose"]["u"], [1, 0, 0]) and np.allclose(geo["pose"]["v"], [0, -1, 0])
    # patient left (x > 20 mm) holds 100, shown right of the centre at W/L 200/100: mid grey
    assert abs(_px(shot, geo, 40.0, 0.0) - 128).max() <= 2
    assert (_px(shot, geo, -40.0, 0.0) <= 16).all()  # value 10 of 200: near black


def test_colour_map_colours_and_labelled_bar(probe):
    require_tesseract()
    steps, shots = probe
    s, shot = steps["quad"], shots["quad"]
    geo = s["viewports"]["vp2"]
    assert geo["color_map"] == "hot" and geo["window_level"] == [100.0, 50.0]
    b = s["blocks"]
    assert tuple(_px(shot, geo, *b["black"])) == (0, 0, 0)
    assert abs(_px(shot, geo, *b["red"]) - (255, 0, 0)).max() <= 2  # 37.5 %: the hot map's pure red
    assert tuple(_px(shot, geo, *b["white"])) == (255, 255, 255)
    labels = geo["labels"]
    for name, want in (("colorbar.max", "100 ms"), ("colorbar.min", "0 ms"), ("colorbar.title", "T1 map")):
        got = _ocr(shot, labels[name], want)
        assert want in got, f"{name}: read {got}, shows {want!r}"
    # without the map the same image is grey again and the bar is gone
    g, grey = steps["quad_grey"]["viewports"]["vp2"], shots["quad_grey"]
    assert g["color_map"] is None and not any(k.startswith("colorbar") for k in g["labels"])
    r, gr, bl = _px(grey, g, *b["red"])
    assert r == gr == bl and abs(r - 96) <= 2  # 37.5 of 0..100


def test_new_overlay_kinds_are_drawn_and_their_handles_exported(probe):
    require_tesseract()
    steps, shots = probe
    s, shot = steps["quad"], shots["quad"]
    geo = s["viewports"]["vp1"]
    cu, cv, r = s["circle"]
    ring = _px(shot, geo, cu + r, cv)
    assert ring[1] > 150 and ring[1] > ring[0] + 60  # green
    handles = geo["handles"]
    assert handles["shim.rotate"]["role"] == "rotate" and handles["shim.right"]["role"] == "resize"
    assert handles["len.p0"]["target"] == "len"
    # the caliper's distance text is legible
    assert s["caliper_text"] in _ocr(shot, geo["labels"]["len.text"], s["caliper_text"])
    # a rotated box corner is drawn where the plane maps it
    u, v = s["box_corners"][0]
    assert _px(shot, geo, u, v)[2] > 150  # cyan


def test_single_layout_shows_one_large_viewport_and_keeps_contents(probe):
    steps, _ = probe
    s = steps["single"]
    # 1x1 shows the active viewport (issue 24): here viewport 2, the T1 map; viewport 1 keeps its contents hidden
    assert list(s["viewports"]) == ["vp2"] and s["state"]["active"] == 2
    assert s["viewports"]["vp2"]["rect"][2] > 1200
    assert s["state"]["viewports"][1]["content"] == "t1map" and s["state"]["viewports"][1]["visible"] is True
    assert s["state"]["viewports"][0]["visible"] is False
