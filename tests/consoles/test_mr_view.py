"""The MR console's Qt view on a real X display, driven like an agent (XTEST input, runner settles).

One script of actions (Go for the localizer, double click, right-click menu and Repeat, inline rename,
a series dragged onto viewport 2, a protocol dragged onto a queue row, card tabs, layouts, graphics
modes, shim box) runs on two fresh consoles and once more on a console reset in place: every
screenshot must be byte-identical across the three, and at each step the contract's names must be
exported with an on-screen rect.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from runner.actions import Action
from runner.capture import ScreenCapture, encode_png
from runner.console_process import ConsoleProcess
from tests.conftest import require_console
from tests.consoles.console_driver import (Driver, assert_same_screenshots, comparable, driving,
                                           fresh_twice_and_reset, write_card)

pytestmark = pytest.mark.display
CARD_ID = "mr_view_probe"
SHOTS = Path("/tmp/mr_shots")  # kept for a person to look at

STATIC_NAMES = ("scanner_status", "exam_time", "heart_rate", "message", "queue", "go", "stop", "library",
                "series_list", "layout_1x1", "layout_1x2", "layout_2x2", "graphics_all", "graphics_outer",
                "graphics_off", "shim_box_toggle", "tab_routine", "tab_contrast", "tab_physio", "tab_geometry",
                "viewport1", "viewport2", "viewport3", "viewport4")
LIBRARY = ("localizer_3plane", "cine_2ch", "cine_4ch", "cine_sax", "t2_haste_cor", "t2_tse_tra", "t1_gre_tra",
           "t1_map_molli", "t2_map_t2prep")
TAB_NAMES = {
    "tab_routine": ("n_slices_field", "thickness_mm_field", "gap_mm_field", "fov_read_mm_field",
                    "fov_phase_mm_field", "matrix_field", "averages_field"),
    "tab_contrast": ("tr_ms_field", "te_ms_field", "ti_ms_field", "flip_deg_field"),
    "tab_physio": ("trigger:none", "trigger:ecg", "trigger:pulse", "trigger_delay_ms_field", "acq_window_ms_field",
                   "heart_rate_bpm_field"),
    "tab_geometry": ("pos_lr_mm_field", "pos_ap_mm_field", "pos_fh_mm_field", "position_convention", "main:T",
                     "main:C", "main:S",
                     "tilt_a_deg_field", "tilt_b_deg_field", "inplane_deg_field", "shim_mode:tune_up",
                     "shim_mode:standard", "shim_mode:advanced",
                     *(f"geometry_help:{n}" for n in ("position_range", "tilt_range", "tilt_a_sign", "tilt_b_sign",
                                                      "inplane_range", "inplane_sign"))),
}
for _tab, _n in (("tab_routine", 3), ("tab_contrast", 2), ("tab_physio", 2)):  # range lines (consoles.mr.card_help)
    TAB_NAMES[_tab] += tuple(f"{_tab[4:]}_ranges:{i}" for i in range(1, _n + 1))
MENU = tuple(f"queue_menu:{k}" for k in ("open", "rename", "repeat", "skip", "delete", "move_up", "move_down"))


@pytest.fixture(scope="module")
def card_path(tmp_path_factory) -> str:
    """An MR card with an empty initial state (the view's test needs no task of its own)."""
    return write_card(tmp_path_factory.mktemp("mrcard"), CARD_ID, "mr", "MR view probe", "Probe the MR console view.")


def _script(d: Driver) -> None:
    """The actions; facts the test checks are recorded in d.facts."""
    d.shot("fresh")
    d.facts["missing_static"] = d.missing(STATIC_NAMES + tuple(f"library_item:{p}" for p in LIBRARY)
                                          + tuple(f"queue_row:{u}" for u in (1, 2, 3, 4)))
    d.click("go")
    d.con.settle(40.0)  # the localizer (3 x 11 slices, 34.6 s) runs in simulated time
    st = d.con.state()
    d.facts["after_go"] = [r["status"] for r in st["queue"]]
    d.facts["series_items"] = sorted(k for k in d.geo() if k.startswith("series_item:"))
    d.shot("after_localizer")
    x, y = d.centre("viewport1")
    d.act(Action("scroll", x=x, y=y, clicks=1))  # one slice on in the sagittal stack: 7/11 (image 7 of 33)
    d.facts["viewport1_after_scroll"] = d.con.state()["layout"]["viewports"][0]["image"]
    d.click("series_item:1.3")
    d.facts["selected_entry"] = d.con.state()["selected_entry"]
    d.double_click("queue_row:3")
    d.facts["open_after_double_click"] = d.con.state()["open_row"]
    d.shot("row3_open")
    d.click("queue_row:2", button="right")
    d.facts["missing_menu"] = d.missing(MENU)
    d.shot("menu_open")
    d.click("queue_menu:repeat")
    d.facts["after_repeat"] = [(r["uid"], r["copy_of"]) for r in d.con.state()["queue"]]
    d.facts["menu_after_repeat"] = [k for k in d.geo() if k.startswith("queue_menu:")]
    d.shot("after_repeat")
    d.click("queue_row:5", button="right")  # the copy
    d.click("queue_menu:rename")
    d.facts["missing_rename"] = d.missing(["rename_field"])
    d.shot("renaming")
    d.act(Action("type", text="4ch cine"))
    d.act(Action("key", key="Enter"))
    d.facts["renamed"] = [r["name"] for r in d.con.state()["queue"] if r["uid"] == 5]
    d.click("queue_row:5", button="right")
    d.click("queue_menu:rename")
    d.act(Action("type", text="x"))
    d.act(Action("key", key="Escape"))  # cancels: the name stays
    d.facts["after_escape"] = [r["name"] for r in d.con.state()["queue"] if r["uid"] == 5]
    d.facts["rename_field_after_escape"] = "rename_field" in d.geo()
    d.drag("series_item:1.2", "viewport4")
    vp = d.con.state()["layout"]["viewports"][3]
    d.facts["viewport4"] = (vp["series"], vp["image"])
    d.shot("series_dragged")
    d.drag("library_item:t2_haste_cor", "queue_row:2")
    d.facts["after_library_drag"] = [r["protocol"] for r in d.con.state()["queue"]][:3]
    d.double_click("queue_row:4")
    missing = {}
    for tab, names in TAB_NAMES.items():
        d.click(tab)
        d.shot(tab)
        missing[tab] = d.missing(names)
    d.facts["missing_tabs"] = missing
    d.click("tab_contrast")
    d.click("tr_ms_field")
    d.act(Action("key", key="ctrl+a"))
    d.act(Action("type", text="7.5"))
    d.act(Action("key", key="Enter"))
    d.click("tab_physio")
    d.click("trigger:none")
    row = next(r for r in d.con.state()["queue"] if r["uid"] == d.con.state()["open_row"])
    d.facts["typed_and_chosen"] = (row["params"]["tr_ms"], row["params"]["trigger"])
    d.shot("typed_and_chosen")
    d.click("graphics_outer")
    d.click("shim_box_toggle")
    d.shot("outer_and_shim")
    d.click("layout_1x2")
    d.shot("layout_1x2")
    d.click("layout_2x2")
    d.facts["end_state"] = {k: v for k, v in d.con.state().items() if k in ("queue", "layout", "open_row")}


@pytest.fixture(scope="module")
def runs(display, card_path) -> tuple[Driver, Driver, Driver]:
    """The script on two fresh consoles and one reset in place (screenshots kept in SHOTS)."""
    return fresh_twice_and_reset(display, "mr", card_path, _script, SHOTS, prefix="test_")


def test_contract_names_are_exported_on_screen(runs):
    f = runs[0].facts
    assert f["missing_static"] == []
    assert f["missing_menu"] == [] and f["menu_after_repeat"] == []
    assert f["missing_rename"] == []
    assert f["missing_tabs"] == {tab: [] for tab in TAB_NAMES}


def test_queue_actions_through_menu_double_click_rename_and_drags(runs):
    f = runs[0].facts
    assert f["after_go"] == ["done", "pending", "pending", "pending"]
    assert f["series_items"] == ["series_item:1.1", "series_item:1.2", "series_item:1.3"]
    assert f["viewport1_after_scroll"] == 7 and f["selected_entry"] == "1.3"
    assert f["open_after_double_click"] == 3
    assert f["after_repeat"] == [(1, None), (2, None), (5, 2), (3, None), (4, None)]
    assert f["renamed"] == ["4ch cine"]
    assert f["after_escape"] == ["4ch cine"] and f["rename_field_after_escape"] is False
    assert f["typed_and_chosen"] == (7.5, "none")
    assert f["viewport4"] == (1, 17)  # the coronal localizer: its middle slice, image 17 of 33
    assert f["after_library_drag"] == ["localizer_3plane", "t2_haste_cor", "cine_2ch"]


def test_screenshots_identical_across_fresh_launches_and_a_reset_in_place(runs):
    first, second, reset = runs
    assert_same_screenshots(first, second, reset)
    assert first.facts == second.facts == reset.facts


SHIPPED = ("L2a_graphics_display_mode", "mr_select_transverse_image_only_v1", "L1_idle_or_scanning")


def test_reset_from_a_busy_console_to_shipped_cards_equals_fresh_launches(display, card_path):
    """A console left with a row open, the context menu shown and the rename field half-typed, reset
    to cards with other layouts, open rows, hidden labels or a running row: each first screen and
    state equal a fresh launch's."""
    require_console()
    fresh = {}
    for task in SHIPPED:
        con = ConsoleProcess(display, "mr", task, "dev", 1)
        con.start()
        cap = ScreenCapture(display.name)
        try:
            fresh[task] = (encode_png(cap.grab_rgb()), comparable(con.state()))
        finally:
            cap.close()
            con.stop()
    con = ConsoleProcess(display, "mr", card_path, "dev", 0)
    con.start()
    try:
        with driving(display, con) as d:
            d.click("go")
            con.settle(10.0)
            d.double_click("queue_row:2")
            d.click("queue_row:3", button="right")
            d.click("queue_menu:rename")
            d.act(Action("type", text="half"))
            for task in SHIPPED:
                d.click("queue_row:2", button="right")  # the menu is open when the reset comes
                con.reset(task, "dev", 1)
                png = d.grab()
                if png != fresh[task][0]:
                    (SHOTS / f"test_reset_{task}.png").write_bytes(png)
                    (SHOTS / f"test_fresh_{task}.png").write_bytes(fresh[task][0])
                assert png == fresh[task][0], f"{task}: a reset console's first screen differs from a fresh one"
                assert comparable(con.state()) == fresh[task][1]
    finally:
        con.stop()
