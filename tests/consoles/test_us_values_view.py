"""Issue 34 on the US console's screen (real Xvfb, X input, OCR): the episode where rotation typed 0 read 360 and
drifted, the -/+ buttons and Up/Down keys that step depth, focus and gain in one action, and every copy of a
value the console shows (field, image settings line, header, depth scale, focus marker, body-map footprint, status
line) read on the screenshot right after the edit, agreeing with the model."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from consoles.us.model import PARAM
from runner.actions import Action
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import Driver, ROOT, driving, to_screen
from tests.ocr import field_readings, first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
CARD = str(ROOT / "tasks/us/us_kidney_long_axis_search_v1/task.json")
SHOTS = Path("/tmp/us_values_view_shots")  # kept for a person to look at
SUBJECT, SEED = "s12", 1  # the episode: the patient lies turned 22.9 deg on the bed


def _img(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def _crop(img: Image.Image, rect: list[int]) -> Image.Image:
    x, y, w, h = rect
    return img.crop((x, y, x + w, y + h))


def _field_reads(img: Image.Image, d: Driver, name: str, text: str) -> tuple[bool, list[str]]:
    """Whether the field reads `text` (the focused field's caret, a 2 px bar after the text, reads as '|' or ']')."""
    return first_reading(field_readings(_crop(img, d.geo()[f"{name}_field"])), lambda r: r.rstrip("|]") == text)


def _line_reads(img: Image.Image, d: Driver, widget: str, text: str, single_line: bool = True) -> tuple[bool, list[str]]:
    """Whether the label's OCR contains `text` (spaces ignored: Tesseract's word gaps are not reliable)."""
    want = "".join(text.split())
    return first_reading(readings(_trim(_crop(img, d.geo()[widget])), single_line),
                         lambda r: want in "".join(r.split()))


def _trim(img: Image.Image, pad: int = 6) -> Image.Image:
    """The crop cut to its text (with a margin): Tesseract reads a short message in a wide, mostly empty
    line as nothing ("Focus 7.5 cm." in the 780 px status line read blank at every scale)."""
    a = np.asarray(img.convert("L")).astype(int)
    inner = a[3:-3, 3:-3]  # inside the label's frame
    ink = np.abs(inner - np.median(inner)) > 60
    rows, cols = np.nonzero(ink)
    if rows.size == 0:
        return img
    return img.crop((max(0, cols.min() + 3 - pad), max(0, rows.min() + 3 - pad),
                     min(img.width, cols.max() + 3 + pad), min(img.height, rows.max() + 3 + pad)))


def _focus_marker_row(img: Image.Image, d: Driver) -> float:
    """The screen row of the yellow focus triangle on the depth scale (mean row of its yellow pixels)."""
    a = np.asarray(img).astype(int)
    x, y, w, h = d.geo()["us_image"]
    sub = a[y:y + h, x:x + 120]  # the depth scale's strip, left of the sector
    yellow = (sub[..., 0] > 200) & (sub[..., 1] > 170) & (sub[..., 2] < 120)
    rows, _ = np.nonzero(yellow)
    assert rows.size > 5, "no focus marker on the depth scale"
    return y + float(rows.mean())


def _depth_axis_bottom(img: Image.Image, d: Driver, depth_mm: float) -> int:
    """The lowest pixel of the depth scale's grey axis line (its column from the model's sector box)."""
    t = d.geometry()["transforms"]["us_image"]
    from rendering import us_image as U
    from consoles.us.view_graphics import SCALE_GAP_PX
    width, _, _ = U.sector_extent_mm(depth_mm)
    u = -width / 2.0 - SCALE_GAP_PX / t["ax"]
    col, _ = to_screen(t, u, 0.0)
    a = np.asarray(img).astype(int)
    x, y, w, h = d.geo()["us_image"]
    line = a[y:y + h, col - 1:col + 2].max(axis=1)
    grey = (line[:, 0] > 120) & (np.abs(line[:, 0] - line[:, 2]) < 40)
    return y + int(np.nonzero(grey)[0].max())


def _snapshot(d: Driver, tag: str) -> dict:
    png = d.shot(tag)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"{tag}.png").write_bytes(png)
    return {"img": _img(png), "state": d.con.state(), "geo": d.geometry()}


@pytest.fixture(scope="module")
def episode(display):
    """The episode, with a snapshot after each edit: (driver, {tag: snapshot})."""
    require_console()
    require_tesseract()
    con = ConsoleProcess(display, "us", CARD, SUBJECT, SEED)
    con.start()
    snaps: dict[str, dict] = {}
    try:
        with driving(display, con) as d:
            d.home()
            snaps["start"] = _snapshot(d, "start")
            d.type_into("probe_rotation_deg_field", "0")
            snaps["rotation"] = _snapshot(d, "rotation")
            z = d.con.state()["probe_display"]["z_mm"]
            d.type_into("probe_z_mm_field", f"{z + 20:.1f}")
            snaps["height"] = _snapshot(d, "height")
            az = d.con.state()["probe_display"]["azimuth_deg"]
            d.type_into("probe_azimuth_deg_field", f"{az + 10:.1f}")
            snaps["around"] = _snapshot(d, "around")
            d.click("depth_cm_field")
            d.act(Action("key", key="Up"))  # one key press, one step
            snaps["depth_up"] = _snapshot(d, "depth_up")
            d.click("focus_cm_plus")
            snaps["focus_plus"] = _snapshot(d, "focus_plus")
            d.click("gain_minus")
            snaps["gain_minus"] = _snapshot(d, "gain_minus")
            d.click("focus_cm_field")
            d.act(Action("key", key="Down"))
            snaps["focus_down"] = _snapshot(d, "focus_down")
            d.type_into("frequency_mhz_field", "3.0")
            snaps["frequency"] = _snapshot(d, "frequency")
            d.type_into("dynamic_range_db_field", "72")
            snaps["dr"] = _snapshot(d, "dr")
            d.type_into("tgc_3_field", "-4")
            snaps["tgc"] = _snapshot(d, "tgc")
            d.click("freeze")
            d.click("gain_plus")  # greyed while frozen, as the gain field is
            snaps["frozen_plus"] = _snapshot(d, "frozen_plus")
            yield d, snaps
    finally:
        con.stop()


def test_rotation_typed_0_reads_0_and_stays_0_through_height_and_around_body_edits(episode):
    d, snaps = episode
    for tag in ("rotation", "height", "around"):
        s = snaps[tag]
        assert s["state"]["probe_display"]["rotation_deg"] == 0.0, tag
        ok, got = _field_reads(s["img"], d, "probe_rotation_deg", "0")
        assert ok, f"after {tag} the rotation field reads {got}"
    ok, got = _line_reads(snaps["rotation"]["img"], d, "message", "Rotation 0 deg.")
    assert ok, f"status line reads {got}"
    for tag, name in (("height", "Height"), ("around", "Around body")):
        ok, got = _line_reads(snaps[tag]["img"], d, "message", name)
        assert ok and snaps[tag]["state"]["message"].startswith(name), f"{tag}: status line reads {got}"


def test_one_key_or_button_press_steps_depth_focus_and_gain(episode):
    _, snaps = episode
    c = {tag: snaps[tag]["state"]["controls"] for tag in snaps}
    assert c["depth_up"]["depth_mm"] == c["around"]["depth_mm"] + 10.0
    assert c["focus_plus"]["focus_mm"] == c["depth_up"]["focus_mm"] + 5.0
    assert c["gain_minus"]["gain"] == c["focus_plus"]["gain"] - PARAM["gain"].step
    assert c["focus_down"]["focus_mm"] == c["gain_minus"]["focus_mm"] - 5.0
    for tag in ("depth_up", "focus_plus", "gain_minus", "focus_down"):
        events = [e for e in snaps[tag]["state"]["events"] if e["event"] == "param_changed"]
        prev = [e for e in snaps[list(snaps)[list(snaps).index(tag) - 1]]["state"]["events"]
                if e["event"] == "param_changed"]
        assert len(events) == len(prev) + 1, f"{tag}: one press, one change"


def test_the_minus_plus_keys_rest_while_frozen(episode):
    _, snaps = episode
    st = snaps["frozen_plus"]["state"]
    assert st["frozen"] and st["controls"]["gain"] == snaps["tgc"]["state"]["controls"]["gain"]
    assert [e["event"] for e in st["events"]][-1] == "frozen"


INFO = {"depth_cm": "Depth {:.1f} cm", "focus_cm": "Focus {:.1f} cm", "gain": "Gain {:.0f}",
        "frequency_mhz": "{:.1f} MHz", "dynamic_range_db": "DR {:.0f} dB"}


@pytest.mark.parametrize("tag, name", [("depth_up", "depth_cm"), ("focus_plus", "focus_cm"), ("gain_minus", "gain"),
                                       ("focus_down", "focus_cm"), ("frequency", "frequency_mhz"),
                                       ("dr", "dynamic_range_db"), ("tgc", "tgc_3")])
def test_every_copy_of_an_edited_value_agrees_on_the_next_screenshot(episode, tag, name):
    d, snaps = episode
    s = snaps[tag]
    img, st = s["img"], s["state"]
    c = st["controls"]
    value = {"depth_cm": c["depth_mm"] / 10.0, "focus_cm": c["focus_mm"] / 10.0, "gain": c["gain"],
             "frequency_mhz": c["frequency_mhz"], "dynamic_range_db": c["dynamic_range_db"],
             "tgc_3": c["tgc_db"][2]}[name]
    p = PARAM[name]
    text = f"{value:.{p.decimals}f}"
    ok, got = _field_reads(img, d, name, text)
    assert ok, f"{name} field reads {got}, the model holds {text}"
    if name in INFO:  # the image's settings line
        ok, got = first_reading(readings(_crop(img, d.geo()["image_info"]), False),
                                lambda r: "".join(INFO[name].format(value).split()) in "".join(r.split()))
        assert ok, f"image settings read {got}, want {INFO[name].format(value)}"
    if name == "frequency_mhz":  # and the header
        ok, got = _line_reads(img, d, "frequency_readout", f"{value:.1f} MHz")
        assert ok, f"header reads {got}"
    # the status line names the edit
    label = {"depth_cm": "Depth", "focus_cm": "Focus", "gain": "Gain", "frequency_mhz": "Frequency",
             "dynamic_range_db": "Dyn. range", "tgc_3": "TGC 3"}[name]
    assert st["message"].startswith(f"{label} {text}"), st["message"]
    ok, got = _line_reads(img, d, "message", f"{label} {text}")
    assert ok, f"status line reads {got}"
    if name in ("depth_cm", "focus_cm"):  # the depth scale's end and the focus marker, where the model puts them
        t = s["geo"]["transforms"]["us_image"]
        _, y_focus = to_screen(t, 0.0, -c["focus_mm"])
        assert abs(_focus_marker_row(img, d) - y_focus) <= 1.5
        _, y_depth = to_screen(t, 0.0, -c["depth_mm"])
        assert abs(_depth_axis_bottom(img, d, c["depth_mm"]) - y_depth) <= 1


@pytest.mark.parametrize("tag", ["start", "rotation", "height", "around"])
def test_pose_fields_and_the_body_map_footprint_agree(episode, tag):
    d, snaps = episode
    s = snaps[tag]
    disp = s["state"]["probe_display"]
    for name, key, fmt in (("probe_z_mm", "z_mm", "{:.1f}"), ("probe_azimuth_deg", "azimuth_deg", "{:.1f}"),
                           ("probe_rotation_deg", "rotation_deg", "{:.0f}")):
        ok, got = _field_reads(s["img"], d, name, fmt.format(disp[key]))
        assert ok, f"{tag}: {name} reads {got}, the model shows {disp[key]}"
    t = s["geo"]["transforms"]["probe_map"]
    x, y, w, h = s["geo"]["geometry"]["probe_footprint"]
    want = to_screen(t, disp["azimuth_deg"], disp["z_mm"])
    assert abs(x + w / 2 - want[0]) <= 1.0 and abs(y + h / 2 - want[1]) <= 1.0
