"""The ultrasound console's Qt view on a real X display, driven like an agent (XTEST input, runner settles).

One script of actions (a drag of the probe footprint on the body map, probe and imaging fields typed,
a preset, Freeze, two caliper clicks at given image mm and a caliper end dragged, an annotation typed
with Enter and one placed by a click, Save image, Save clip, Apply gel, a grey map, a TGC pot) runs on
two fresh consoles and once more on a console reset in place: every screenshot must be byte-identical
across the three, and the contract's names must be exported with an on-screen rect.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from runner.actions import Action
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import (Driver, assert_same_screenshots, comparable, driving,
                                           fresh_twice_and_reset, run_script, to_screen, write_card)
from tests.ocr import first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
CARD_ID = "us_view_probe"
SHOTS = Path("/tmp/us_view_shots")  # kept for a person to look at

PROBE_FIELDS = tuple(f"{p}_field" for p in ("probe_z_mm", "probe_azimuth_deg", "probe_rotation_deg",
                                            "probe_tilt_deg", "probe_rock_deg", "pressure_pct"))
IMAGING_FIELDS = tuple(f"{p}_field" for p in ("depth_cm", "focus_cm", "frequency_mhz", "gain", "dynamic_range_db"))
STATIC_NAMES = (("patient", "preset_readout", "frequency_readout", "frame_rate", "scanner_status", "exam_time",
                 "us_image", "live_indicator", "image_info", "marker_side", "exam_strip", "message", "probe_map",
                 "probe_footprint", "apply_gel", "freeze", "caliper", "clear_calipers", "caliper_readout",
                 "annotate", "annotation_field", "clear_annotations", "save_image", "save_clip",
                 "preset:Abdomen", "preset:Renal", "preset:Bladder", "grey_map:A", "grey_map:B", "grey_map:C",
                 "grey_map:D", "compound:Off", "compound:3", "compound:5", "us_image.label:depth_0")
                + PROBE_FIELDS + IMAGING_FIELDS + tuple(f"tgc_{k}_field" for k in range(1, 9)))


@pytest.fixture(scope="module")
def card_path(tmp_path_factory) -> str:
    """A US card with an empty initial state (the US task cards come with their own work)."""
    return write_card(tmp_path_factory.mktemp("uscard"), CARD_ID, "us", "US view probe", "Probe the US console view.")


def _crop(png: bytes, rect: list[int]) -> np.ndarray:
    x, y, w, h = rect
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))[y:y + h, x:x + w]


def _script(d: Driver) -> None:
    """The actions; facts the test checks are recorded in d.facts."""
    f = d.facts
    before = d.shot("fresh")
    f["missing_static"] = d.missing(STATIC_NAMES)
    st0 = d.con.state()
    # drag the footprint on the body map: 24 px to the right (around the body), 20 px up (to the head)
    image_rect = d.geo()["us_image"]
    x, y = d.centre("probe_footprint")
    d.act(Action("drag", x=x, y=y, x2=x + 24, y2=y - 20), 1.0)
    st1 = d.con.state()
    f["pose_before_drag"], f["pose_after_drag"] = st0["pose"], st1["pose"]
    f["drag_moves"] = [e["event"] for e in st1["events"]].count("probe_moved")
    after = d.shot("dragged")
    f["image_changed_by_drag"] = bool((_crop(before, image_rect) != _crop(after, image_rect)).any())
    f["footprint_followed"] = d.centre("probe_footprint")[0] - x
    # a solver's drag: from the footprint to a pose through the probe map's exported transform
    t = d.geometry()["transforms"]["probe_map"]
    x, y = d.centre("probe_footprint")
    target = (-60.0, -240.0)  # azimuth deg, height mm
    x2, y2 = to_screen(t, *target)
    d.act(Action("drag", x=x, y=y, x2=x2, y2=y2), 1.0)
    pose = d.con.state()["pose"]
    f["map_drag"] = (pose["azimuth_deg"] - target[0], pose["z_mm"] - target[1], 1.0 / t["ax"], -1.0 / t["ay"])
    # a right-kidney long axis from the flank, typed into the probe fields, then the renal preset
    for name, text in (("probe_z_mm_field", "-295"), ("probe_azimuth_deg_field", "-85"),
                       ("probe_rotation_deg_field", "5"), ("probe_tilt_deg_field", "-15")):
        d.type_into(name, text)
    d.click("preset:Renal")
    d.type_into("tgc_6_field", "-6")
    d.shot("kidney")
    st = d.con.state()
    f["kidney_pose"] = st["pose"]
    f["renal"] = (st["controls"]["preset"], st["controls"]["tgc_db"])
    # freeze, two caliper clicks at given image mm, then drag the second end 10 mm deeper
    d.click("freeze")
    d.click("caliper")
    d.click_at(d.image_point(-25.0, 55.0))
    d.click_at(d.image_point(25.0, 85.0))
    st = d.con.state()
    f["frozen"] = st["frozen"]
    f["caliper"] = st["calipers"]
    f["caliper_events"] = [(e["event"], e["t"]) for e in st["events"]][-4:] + [st["caliper_pending"], st["t"]]
    f["readout_png"] = d.shot("caliper")
    f["readout_rect"] = d.geo()["caliper_readout"]
    f["image_px_per_mm"] = d.geometry()["transforms"]["us_image"]["ax"]
    h = d.geometry()["viewports"]["us_image"]["handles"]["caliper1.p1"]
    x, y = int(round(h["x"])), int(round(h["y"]))
    dy = int(round(10.0 * d.geometry()["transforms"]["us_image"]["ax"]))
    d.act(Action("drag", x=x, y=y, x2=x, y2=y + dy), 1.0)
    f["caliper_dragged"] = d.con.state()["calipers"]
    # an annotation typed with Enter (default place), one placed by a click in annotate mode
    d.click("annotation_field")
    d.act(Action("type", text="RT KIDNEY"))
    d.act(Action("key", key="Enter"))
    d.click("annotation_field")
    d.act(Action("type", text="LONG AXIS"))
    d.click("annotate")
    d.click_at(d.image_point(10.0, 40.0))
    f["annotations"] = d.con.state()["annotations"]
    d.click("save_image")
    d.shot("saved_image")
    st = d.con.state()
    f["saved"] = [(s["uid"], s["kind"], len(s["calipers"]), [a["text"] for a in s["annotations"]]) for s in st["saved"]]
    f["strip_after_image"] = d.missing(["strip_item:1"])
    d.click("freeze")  # unfreeze: live again, the calipers go
    d.click("save_clip")
    d.click("apply_gel")
    d.click("grey_map:C")
    st = d.con.state()
    f["after_unfreeze"] = (st["frozen"], st["calipers"], [(s["uid"], s["kind"]) for s in st["saved"]],
                           st["controls"]["grey_map"], [e["event"] for e in st["events"]].count("gel_applied"))
    f["strip_after_clip"] = d.missing(["strip_item:1", "strip_item:2"])
    d.shot("end")
    f["end_state"] = {k: v for k, v in d.con.state().items() if k not in ("provenance",)}


@pytest.fixture(scope="module")
def runs(display, card_path) -> tuple[Driver, Driver, Driver]:
    """The script on two fresh consoles and one reset in place (screenshots kept in SHOTS)."""
    return fresh_twice_and_reset(display, "us", card_path, _script, SHOTS, prefix="test_")


def test_contract_names_are_exported_on_screen(runs):
    f = runs[0].facts
    assert f["missing_static"] == []
    assert f["strip_after_image"] == [] and f["strip_after_clip"] == []


def test_a_drag_of_the_probe_footprint_moves_the_probe_and_the_image(runs):
    f = runs[0].facts
    before, after = f["pose_before_drag"], f["pose_after_drag"]
    assert after["z_mm"] > before["z_mm"] + 10.0  # up the map: towards the head
    assert after["azimuth_deg"] > before["azimuth_deg"] + 10.0  # right on the map: to the patient's left
    assert after["rotation_deg"] == before["rotation_deg"] and after["pressure"] == before["pressure"]
    assert f["drag_moves"] == 1  # one step, one move: the drag's motion is coalesced
    assert f["image_changed_by_drag"]
    assert 20 <= f["footprint_followed"] <= 28
    d_az, d_z, deg_per_px, mm_per_px = f["map_drag"]
    assert abs(d_az) <= deg_per_px and abs(d_z) <= mm_per_px  # within a pixel of the map


def test_fields_and_preset_set_the_probe_and_controls(runs):
    f = runs[0].facts
    assert {k: f["kidney_pose"][k] for k in ("z_mm", "azimuth_deg", "rotation_deg", "tilt_deg")} == {
        "z_mm": -295.0, "azimuth_deg": -85.0, "rotation_deg": 5.0, "tilt_deg": -15.0}
    assert f["renal"][0] == "Renal" and f["renal"][1][5] == -6.0


def test_freeze_and_two_caliper_clicks_give_a_caliper_read_out_on_screen(runs):
    require_tesseract()
    f = runs[0].facts
    assert f["frozen"] is True and len(f["caliper"]) == 1, f["caliper_events"]
    cal = f["caliper"][0]
    # the clicks land within a pixel of the asked image mm
    k = f["image_px_per_mm"]
    assert np.allclose(cal["p1_mm"], [-25.0, 55.0], atol=1.0 / k) and np.allclose(cal["p2_mm"], [25.0, 85.0],
                                                                                     atol=1.0 / k)
    want = f"{cal['length_mm']:.1f}"
    crop = Image.open(io.BytesIO(f["readout_png"])).crop(_readout_box(f))
    ok, got = first_reading(readings(crop), lambda r: want in numbers(r))
    assert ok, f"caliper read-out reads {got}, the model's length is {cal['length_mm']} mm"
    moved = f["caliper_dragged"][0]
    assert moved["p1_mm"] == cal["p1_mm"] and moved["p2_mm"][1] == pytest.approx(cal["p2_mm"][1] + 10.0, abs=0.6)


def _readout_box(facts: dict) -> tuple[int, int, int, int]:
    x, y, w, h = facts["readout_rect"]
    return x, y, x + w, y + h


def test_annotations_and_saved_items_reach_the_state(runs):
    f = runs[0].facts
    texts = [a["text"] for a in f["annotations"]]
    assert texts == ["RT KIDNEY", "LONG AXIS"]
    placed = f["annotations"][1]
    assert placed["x_mm"] == pytest.approx(10.0, abs=0.6) and placed["y_mm"] == pytest.approx(40.0, abs=0.6)
    assert f["saved"] == [(1, "image", 1, ["RT KIDNEY", "LONG AXIS"])]
    frozen, calipers, saved, grey_map, gel = f["after_unfreeze"]
    assert frozen is False and calipers == [] and saved == [(1, "image"), (2, "clip")]
    assert grey_map == "C" and gel == 1


def test_screenshots_identical_across_fresh_launches_and_a_reset_in_place(runs):
    first, second, reset = runs
    assert_same_screenshots(first, second, reset)
    facts = [{k: v for k, v in r.facts.items() if k != "readout_png"} for r in runs]
    differ = {k: [f.get(k) for f in facts] for k in facts[0] if not facts[0][k] == facts[1].get(k) == facts[2].get(k)}
    assert facts[0].keys() == facts[1].keys() == facts[2].keys() and not differ, f"facts differ: {differ}"


def test_reset_from_a_busy_console_equals_a_fresh_launch(display, card_path):
    """A console left frozen in caliper mode with a pending caliper point, items in the strip and an
    annotation half-typed in annotate mode, reset in place: its first screen and state equal a fresh
    launch's (other seed, so the reset is a new episode)."""
    require_console()

    def first_screen(d: Driver) -> None:  # the pointer homed off every button (no hover)
        d.facts["fresh"] = (d.grab(), comparable(d.con.state()))

    d, con = run_script(display, "us", card_path, first_screen, seed=1)
    con.stop()
    fresh = d.facts["fresh"]
    con = ConsoleProcess(display, "us", card_path, "dev", 0)
    con.start()
    try:
        with driving(display, con) as d:
            d.click("save_clip")
            d.click("freeze")
            d.click("save_image")
            d.click("caliper")
            d.click_at(d.image_point(0.0, 50.0))  # a pending first point
            d.click("annotation_field")
            d.act(Action("type", text="HALF"))
            d.click("annotate")
            assert con.state()["ui"] == {"caliper_mode": False, "annotate_mode": True}
            d.act(Action("move", x=1270, y=790), 0.0)  # as at the fresh launch: no button under the pointer
            con.reset(card_path, "dev", 1)
            png = d.grab()
            if png != fresh[0]:
                SHOTS.mkdir(parents=True, exist_ok=True)
                (SHOTS / "test_reset_busy.png").write_bytes(png)
                (SHOTS / "test_fresh_seed1.png").write_bytes(fresh[0])
            assert png == fresh[0], "a reset console's first screen differs from a fresh one"
            assert comparable(con.state()) == fresh[1]
    finally:
        con.stop()
