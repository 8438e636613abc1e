"""T1/T2 maps on the MR console's Qt view on a real X display, driven like an agent (XTEST input, runner
settles): maps show in colour with a labelled colour bar (ms), the ROI tool draws an ellipse by a drag
and its read-out (on the viewport and in the "roi_readout" label) equals the model's stats, the sources
page by scroll; screenshots are byte-identical over two fresh launches and a reset in place.
Screenshots are kept in pytest's temp folder (mr_map_shots*) for a person to look at."""
from __future__ import annotations


import pytest

from runner.actions import Action
from tests.consoles.console_driver import (Driver, assert_same_screenshots, fresh_twice_and_reset, on_screen,
                                           to_screen, write_card)

pytestmark = pytest.mark.display
CARD_ID = "mr_mapping_view_probe"


def _geometry_params(subject_id: str) -> dict:
    """Card parameters that put a row on the subject's short-axis reference plane (the test reads the
    oracle; the console never does)."""
    from consoles.mr.protocols import get_protocol
    from consoles.mr.row_params import RowParams
    from rendering.geometry import PlanePose
    from scoring.subject_oracle import load_oracle

    orc = load_oracle(subject_id)
    p = orc.reference_planes["sax"]
    rp = RowParams.from_protocol(get_protocol("t1_map_molli"), (0.0, 0.0, 0.0))
    rp.set_pose(PlanePose.from_axes(p["centre"], p["row"], -p["col"]))
    # the Position fields are mm from the isocentre: the heart landmark's, on a card without positioning draws
    from consoles.mr.model import MRModel
    from rendering.subjects import load_runtime

    iso = MRModel(load_runtime(subject_id), CARD_ID, 0, {"queue": []}).isocentre_mm
    c = [a - b for a, b in zip(rp.centre_mm, iso)]
    return {"pos_lr_mm": c[0], "pos_ap_mm": c[1], "pos_fh_mm": c[2], "main": rp.main, "tilt_a_deg": rp.tilt_a_deg,
            "tilt_b_deg": rp.tilt_b_deg, "inplane_deg": rp.inplane_deg}


@pytest.fixture(scope="module")
def card_path(tmp_path_factory, subject_cache) -> str:
    """Three mapping rows acquired before the session on dev's short axis (ideal T1, ideal T2, T1 with a
    trigger window past the RR interval) shown 2x2 with a T1 source image."""
    geo = _geometry_params("dev")
    loc = {"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}}
    queue = [loc, {"protocol": "t1_map_molli", "status": "done", "params": geo},
             {"protocol": "t2_map_t2prep", "status": "done", "params": geo},
             {"protocol": "t1_map_molli", "status": "done", "name": "T1 map late trigger",
              "params": dict(geo, trigger_delay_ms=900, acq_window_ms=500)}]
    layout = {"layout": "2x2", "viewports": [{"series": 2, "image": 1}, {"series": 3, "image": 1},
                                             {"series": 4, "image": 1}, {"series": 2, "image": 2}]}
    return write_card(tmp_path_factory.mktemp("mrmapcard"), CARD_ID, "mr", "MR mapping view probe",
                      "Probe the MR mapping view.", {"queue": queue, "layout": layout})


def _script(d: Driver) -> None:
    d.shot("view_maps_2x2")
    g = d.geo()
    d.facts["missing"] = d.missing(["roi_tool", "roi_readout"] + [f"viewport{i}.label:colorbar.{k}"
                                                                  for i in (1, 2, 3) for k in ("min", "max", "title")])
    d.facts["no_bar_on_source"] = not any(k.startswith("viewport4.label:colorbar") for k in g)
    d.facts["captions"] = [vp["caption"] for vp in d.con.state()["layout"]["viewports"]]
    d.click("roi_tool")
    d.facts["roi_tool"] = d.con.state()["roi_tool"]
    t = d.transform(1)
    (x0, y0), (x1, y1) = to_screen(t, -14.0, 10.0), to_screen(t, 14.0, -10.0)
    d.act(Action("drag", x=x0, y=y0, x2=x1, y2=y1), 1.0)
    st = d.con.state()
    d.facts["rois"] = st["rois"]
    d.facts["ui_readout"] = st["ui"]["roi_readout"]
    d.facts["press_release_mm"] = [((x0 - t["bx"]) / t["ax"], (y0 - t["by"]) / t["ay"]),
                                   ((x1 - t["bx"]) / t["ax"], (y1 - t["by"]) / t["ay"])]
    d.facts["roi_label_on_screen"] = on_screen(d.geo().get("viewport1.label:roi_readout", [0, 0, 0, 0]))
    d.shot("view_roi")
    x, y = d.centre("viewport4")
    d.act(Action("scroll", x=x, y=y, clicks=2))  # two source images on
    d.facts["paged"] = d.con.state()["layout"]["viewports"][3]["caption"]
    d.shot("view_source_paged")
    d.click("layout_1x1")
    d.shot("view_map_1x1")


@pytest.fixture(scope="module")
def runs(display, card_path, tmp_path_factory) -> tuple[Driver, Driver, Driver]:
    """The script on two fresh consoles and one reset in place (screenshots kept in the test's own tmp folder,
    `mr_map_shots*` under pytest's base temp, for a person to look at)."""
    return fresh_twice_and_reset(display, "mr", card_path, _script, tmp_path_factory.mktemp("mr_map_shots"))


def test_maps_show_with_a_labelled_colour_bar_and_captions(runs):
    f = runs[0].facts
    assert f["missing"] == [] and f["no_bar_on_source"]
    caps = f["captions"]
    assert caps[0][1] == "T1 map (ms)  5(3)3" and caps[1][1] == "T2 map (ms)  prep 0/25/55"
    assert caps[0][2] == "Image 1/9" and caps[3][1].startswith("T1 source TI ")


def test_roi_drag_reads_the_models_stats(runs):
    f = runs[0].facts
    assert f["roi_tool"] is True
    assert len(f["rois"]) == 1
    r = f["rois"][0]
    (u0, v0), (u1, v1) = f["press_release_mm"]
    assert r["viewport"] == 1 and r["series"] == 2 and r["kind"] == "t1" and r["n"] > 20
    assert r["centre_mm"] == pytest.approx([(u0 + u1) / 2, (v0 + v1) / 2], abs=0.01)
    assert r["radii_mm"] == pytest.approx([abs(u1 - u0) / 2, abs(v1 - v0) / 2], abs=0.01)
    assert f["ui_readout"] == f"T1 ROI mean {r['mean_ms']:.0f} ms  SD {r['sd_ms']:.0f} ms  n {r['n']}"
    assert f["roi_label_on_screen"]
    assert f["paged"][1].startswith("T1 source TI ") and f["paged"][2] == "Image 4/9"


def test_screenshots_identical_across_fresh_launches_and_a_reset_in_place(runs):
    first, second, reset = runs
    assert_same_screenshots(first, second, reset)
    assert first.facts == second.facts == reset.facts
