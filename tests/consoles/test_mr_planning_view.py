"""Graphical slice planning on the MR console's viewports, driven like an agent (XTEST, runner settles).

A card with the localizer done and a short-axis cine row open (2x2: sagittal, coronal, transverse
localizer images): every grip is dragged on the exported handle rects and transforms, and the model's
geometry must change by what the transform predicts; typing a field moves the grips; screenshots are
byte-identical over two fresh runs and a reset in place; 1,000 random actions (drags on the
viewports among them) end without a crash or hang. Screenshots go to pytest's temp folder (mr_plan_shots*).
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from runner.actions import Action
from runner.console_process import ConsoleProcess
from runner.xinput import open_input
from tests.conftest import SOAK_ACTIONS, require_console
from tests.consoles.console_driver import Driver, assert_same_screenshots, fresh_twice_and_reset, write_card

pytestmark = pytest.mark.display
CARD_ID = "mr_planning_probe"
INITIAL = {
    "queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_sax"},
              {"protocol": "cine_2ch"}],
    "open": 2,
    "layout": {"layout": "2x2"},
}


@pytest.fixture(scope="module")
def card_path(tmp_path_factory) -> str:
    """An MR card with the localizer done and the short-axis cine row open, 2x2."""
    return write_card(tmp_path_factory.mktemp("mrplan"), CARD_ID, "mr", "MR planning probe", "Probe MR planning.",
                      INITIAL)


def _px_mm(p: Driver, vp: int, px: int) -> float:
    """What a whole-pixel drag moves in plane mm on a viewport."""
    return px / p.transform(vp)["ax"]


def _script(p: Driver) -> None:
    """The actions; facts the test checks are recorded in p.facts."""
    f = p.facts
    p.shot("stack_on_localizers")
    g = p.geo()
    f["handles"] = sorted(k.split(":", 1)[1] for k in g if k.startswith("viewport3.handle:"))
    # centre on the transverse localizer (viewport 3): +10 mm in u -> +10 mm in x (u = patient left)
    t = p.transform(3)
    c0 = p.params()["centre_mm"]
    x, y = p.handle(3, "centre")
    dx = int(round(t["ax"] * 10.0))
    p.act(Action("drag", x=x, y=y, x2=x + dx, y2=y))
    c1 = p.params()["centre_mm"]
    f["centre_du"] = (round(c1[0] - c0[0], 3), round(c1[1] - c0[1], 3), round(c1[2] - c0[2], 3))
    f["centre_du_want"] = round(dx / t["ax"], 3)
    before = p.params()
    p.drag_handle(2, "centre", 0.0, 0.0)  # a press and release without motion changes nothing
    f["still"] = p.params() == before
    # the stack on the sagittal localizer (viewport 1): the solver's recipe (grips from the dump and
    # the viewport's pose, consoles.mr.model.plan_grips): +pitch / factor screen mm adds two slices
    n0 = before["n_slices"]
    pitch = before["thickness_mm"] + before["gap_mm"]
    g = solver_grip(p, 1, "stack_hi")
    amount = pitch / g.factor
    t = p.transform(1)
    x, y = p.handle(1, "stack_hi")
    p.act(Action("drag", x=x, y=y, x2=int(round(x + t["ax"] * amount * g.axis[0])),
                 y2=int(round(y + t["ay"] * amount * g.axis[1]))))
    f["stack_n"] = (n0, p.params()["n_slices"])
    hs = p.geometry()["viewports"]["viewport1"]["handles"]
    f["geo1_role"] = (hs["stack_hi"]["role"], hs["centre"]["role"], hs["rotate"]["role"])
    # the read edge on the coronal localizer: drag it outwards by 10 screen mm
    g = solver_grip(p, 2, next(n for n in ("fov_read_hi", "fov_read_lo", "fov_phase_hi", "fov_phase_lo")
                              if f"viewport2.handle:{n}" in p.geo()))
    key = f"fov_{g.group_axis}_mm"
    fov0 = p.params()[key]
    p.drag_handle(2, g.name, 10.0 * g.axis[0], 10.0 * g.axis[1])
    f["fov"] = (key, round(p.params()[key] - fov0), round(20.0 * g.factor))
    p.shot("after_stack_drag")
    # rotation on the transverse image: 30 deg counter-clockwise about the centre
    x, y = p.handle(3, "rotate")
    cx, cy = p.handle(3, "centre")
    a = math.radians(30.0)
    rx, ry = x - cx, y - cy
    x2, y2 = cx + rx * math.cos(a) + ry * math.sin(a), cy - rx * math.sin(a) + ry * math.cos(a)
    n_before = np.array(p.params()["normal"])
    p.act(Action("drag", x=x, y=y, x2=int(round(x2)), y2=int(round(y2))))
    n_after = np.array(p.params()["normal"])
    # the normal's horizontal part turns by the drag's angle (clockwise in x, y: the screen's v is -y)
    turn = math.degrees(math.atan2(n_after[1], n_after[0]) - math.atan2(n_before[1], n_before[0]))
    f["rotation_about_z"] = (round((turn + 90.0) % 180.0 - 90.0, 1),  # a normal's sign is a convention
                             round(abs(float(n_before[2])), 3) == round(abs(float(n_after[2])), 3))
    p.shot("after_rotation")
    # typing a field moves the graphics
    p.click("tab_geometry")
    before_c = p.handle(3, "centre")
    p.click("pos_lr_mm_field")
    p.act(Action("key", key="ctrl+a"))
    p.act(Action("type", text=f"{p.params()['centre_mm'][0] + 20.0:.1f}"))
    p.act(Action("key", key="Enter"))
    after_c = p.handle(3, "centre")
    f["typed_moves_centre_px"] = (after_c[0] - before_c[0], after_c[1] - before_c[1])
    f["typed_want_px"] = round(20.0 * p.transform(3)["ax"])
    p.shot("after_typing")
    # the shim box
    p.click("shim_box_toggle")
    p.shot("shim_box")
    sb0 = p.params()["shim_box"]
    p.drag_handle(2, "shim_centre", 10.0, -6.0)
    sb1 = p.params()["shim_box"]
    f["shim_moved"] = [round(b - a_, 1) for a_, b in zip(sb0["centre"], sb1["centre"])]
    f["shim_move_want"] = [round(_px_mm(p, 2, round(10.0 * p.transform(2)["ax"])), 1), 0.0,
                           round(-_px_mm(p, 2, round(6.0 * p.transform(2)["ax"])), 1)]
    p.shot("shim_moved")
    # double oblique: acquire the 2ch row, show it in viewport 4, plan the SAX stack on it
    p.click("shim_box_toggle")
    p.double_click("queue_row:3")
    p.click("go")
    p.con.settle(30.0)
    p.drag("series_item:2", "viewport4")
    p.double_click("queue_row:2")
    p.shot("sax_on_2ch_before")
    two_ch = p.geometry()["viewports"]["viewport4"]["pose"]
    n2 = np.array(two_ch["normal"])
    n_before = np.array(p.params()["normal"])
    x, y = p.handle(4, "rotate")
    cx, cy = p.handle(4, "centre")
    a = math.radians(-20.0)
    rx, ry = x - cx, y - cy
    p.act(Action("drag", x=x, y=y, x2=int(round(cx + rx * math.cos(a) + ry * math.sin(a))),
                 y2=int(round(cy - rx * math.sin(a) + ry * math.cos(a)))))
    n_after = np.array(p.params()["normal"])
    f["angle_to_2ch"] = (round(float(np.degrees(np.arcsin(min(1.0, abs(n_before @ n2))))), 2),
                         round(float(np.degrees(np.arcsin(min(1.0, abs(n_after @ n2))))), 2))
    f["turned"] = round(float(np.degrees(np.arccos(min(1.0, abs(n_before @ n_after))))), 1)
    f["orientation_after"] = p.params()["orientation"]
    p.shot("sax_on_2ch_rotated")
    # empty image area: a left drag there changes nothing
    before = p.params()
    vpr = p.geometry()["viewports"]["viewport4"]["rect"] if "viewport4" in p.geometry()["viewports"] else None
    x0, y0, w0, h0 = p.geometry()["viewports"]["viewport1"]["rect"]
    p.act(Action("drag", x=x0 + 12, y=y0 + h0 - 40, x2=x0 + 60, y2=y0 + h0 - 80))
    f["empty_drag_still"] = p.params() == before
    f["vp4"] = vpr is not None


def solver_grip(p: Driver, vp: int, name: str):
    """A grip as a reference solver finds it: the open row's params from the dump, the viewport's
    plane pose from the geometry export, consoles.mr.model.plan_grips."""
    from consoles.mr.model import plan_grips
    from consoles.mr.row_params import RowParams
    from rendering.geometry import PlanePose

    v = p.geometry()["viewports"][f"viewport{vp}"]
    grips = plan_grips(RowParams.from_dict(p.params()), PlanePose.from_dict(v["pose"]), v["transform"]["ax"])
    return next(g for g in grips if g.name == name)


@pytest.fixture(scope="module")
def runs(display, card_path, tmp_path_factory) -> tuple[Driver, Driver, Driver]:
    """The script on two fresh consoles and one reset in place (screenshots kept in the test's own tmp folder,
    `mr_plan_shots*` under pytest's base temp, for a person to look at)."""
    return fresh_twice_and_reset(display, "mr", card_path, _script, tmp_path_factory.mktemp("mr_plan_shots"))


def test_every_grip_is_exported(runs):
    """The SAX group is edge-on on the transverse localizer: centre, rotate, both stack edges and an
    FOV grip at each end of its centre line."""
    names = runs[0].facts["handles"]
    assert {"centre", "rotate", "stack_lo", "stack_hi"} <= set(names)
    assert len([n for n in names if n.startswith("fov_")]) == 2, names


def test_drags_change_the_geometry_by_what_the_transform_predicts(runs):
    f = runs[0].facts
    du, dy, dz = f["centre_du"]
    assert du == pytest.approx(f["centre_du_want"], abs=0.05) and abs(dy) < 0.05 and abs(dz) < 0.05
    assert f["still"] and f["empty_drag_still"]
    n0, n1 = f["stack_n"]
    assert n1 == n0 + 2
    assert f["geo1_role"] == ("resize", "move", "rotate")
    key, grew, want = f["fov"]
    assert abs(grew - want) <= 2  # whole pixels, whole mm
    angle, same_z = f["rotation_about_z"]
    assert angle == pytest.approx(-30.0, abs=1.0) and same_z  # about the transverse normal: n_z kept
    assert f["typed_moves_centre_px"][0] == pytest.approx(f["typed_want_px"], abs=1)
    assert f["typed_moves_centre_px"][1] == 0
    assert f["shim_moved"] == pytest.approx(f["shim_move_want"], abs=0.15)


def test_planning_on_the_2ch_image_is_double_oblique(runs):
    """A turn on the (oblique) 2ch image keeps the stack's angle to the 2ch plane and tilts it in 3D."""
    f = runs[0].facts
    before, after = f["angle_to_2ch"]
    assert after == pytest.approx(before, abs=0.2)
    assert f["turned"] > 5.0
    assert f["orientation_after"].count(">") == 2


def test_screenshots_identical_across_fresh_launches_and_a_reset_in_place(runs):
    first, second, reset = runs
    assert_same_screenshots(first, second, reset)
    assert first.facts == second.facts == reset.facts


@pytest.mark.soak
def test_many_random_actions_with_viewport_drags_end_without_crash_or_hang(display, card_path):
    """Random clicks, drags (half of them from a planning grip), scrolls, keys and typing."""
    require_console()
    con = ConsoleProcess(display, "mr", card_path, "dev", 3)
    con.start()
    inp = open_input(display.name)
    rng = random.Random(11)
    try:
        inp.home(con.hello["window_id"], (1270, 790))
        con.settle(0.0)
        vps = con.geometry()["viewports"]
        boxes = [v["rect"] for v in vps.values()]
        keys = ("Enter", "Escape", "Tab", "Up", "Down", "BackSpace", "ctrl+a")
        for i in range(SOAK_ACTIONS):
            r = rng.random()
            if r < 0.45:
                if rng.random() < 0.5:
                    hs = [v for k, v in con.geometry()["geometry"].items() if ".handle:" in k]
                    if hs:
                        x, y, w, h = rng.choice(hs)
                        x, y = x + w // 2, y + h // 2
                    else:
                        x, y = rng.randrange(1280), rng.randrange(800)
                else:
                    bx, by, bw, bh = rng.choice(boxes)
                    x, y = bx + rng.randrange(max(1, bw)), by + rng.randrange(max(1, bh))
                a = Action("drag", x=x, y=y, x2=max(0, min(1279, x + rng.randint(-150, 150))),
                           y2=max(0, min(799, y + rng.randint(-150, 150))))
            elif r < 0.75:
                a = Action("click", x=rng.randrange(1280), y=rng.randrange(800))
            elif r < 0.82:
                a = Action("scroll", x=rng.randrange(1280), y=rng.randrange(800), clicks=rng.choice((-1, 1)))
            elif r < 0.92:
                a = Action("key", key=rng.choice(keys))
            else:
                a = Action("type", text=rng.choice(("12", "-30.5", "x", "0")))
            inp.perform(a)
            con.settle(rng.choice((0.0, 0.5, 2.0)))
        st = con.state()
        assert st["modality"] == "mr"
    finally:
        inp.close()
        con.stop()
