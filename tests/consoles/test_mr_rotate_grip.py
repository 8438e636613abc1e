"""The MR planning rotate grip keeps its end of the line after a rotation (issue 24 item 6), in the GUI.

A card with the localizer done and the 2ch cine row open (2x2: sagittal, coronal, transverse localizers): the
rotate grip on the sagittal localizer is dragged about the centre grip by about 120 deg, clockwise and then
counter-clockwise back past the start, like an agent (X input on the exported handle rects). After each drag the
grip's exported handle lies where the pointer let go of it (its direction from the centre grip within a few
degrees of the release point's): it used to jump to the other end of the line once the group's in-plane axes came
back turned by 180 deg. Screenshots go to the test's tmp_path.
"""
from __future__ import annotations

import math

import pytest

from runner.actions import Action
from tests.consoles.console_driver import Driver, run_script, write_card

pytestmark = pytest.mark.display
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_2ch"}], "open": 2,
           "layout": {"layout": "2x2"}}
VIEWPORT = 1  # the sagittal localizer
TURNS_DEG = (-120.0, 150.0)  # counter-clockwise on screen positive
MAX_OFF_DEG = 6.0


def _screen_angle(x: float, y: float, cx: float, cy: float) -> float:
    return math.degrees(math.atan2(-(y - cy), x - cx))  # screen y grows down


def _turn_grip(p: Driver, deg: float) -> tuple[float, float]:
    """Drag the rotate grip `deg` about the centre grip (nearer the pivot when the full radius would leave the
    viewport); (the release point's angle, the grip's angle after the drag), screen degrees."""
    x, y = p.handle(VIEWPORT, "rotate")
    cx, cy = p.handle(VIEWPORT, "centre")
    rx0, ry0, rw, rh = p.geometry()["viewports"][f"viewport{VIEWPORT}"]["rect"]
    r = math.radians(deg)
    dx, dy = (x - cx) * math.cos(r) + (y - cy) * math.sin(r), -(x - cx) * math.sin(r) + (y - cy) * math.cos(r)
    for scale in (1.0, 0.8, 0.6, 0.45):
        x2, y2 = int(round(cx + scale * dx)), int(round(cy + scale * dy))
        if rx0 + 4 <= x2 <= rx0 + rw - 5 and ry0 + 4 <= y2 <= ry0 + rh - 5:
            break
    p.act(Action("drag", x=x, y=y, x2=x2, y2=y2))
    gx, gy = p.handle(VIEWPORT, "rotate")
    ncx, ncy = p.handle(VIEWPORT, "centre")
    return _screen_angle(x2, y2, cx, cy), _screen_angle(gx, gy, ncx, ncy)


def _script(p: Driver) -> None:
    p.shot("before")
    for k, deg in enumerate(TURNS_DEG):
        p.facts[f"turn{k}"] = (deg, *_turn_grip(p, deg))
        p.shot(f"after_turn{k}")


def test_the_rotate_grip_stays_where_it_was_released(display, tmp_path):
    card = write_card(tmp_path, "mr_rotate_grip_probe", "mr", "MR rotate grip", "Turn the 2ch group.", INITIAL)
    p, con = run_script(display, "mr", card, _script)
    con.stop()
    shots = tmp_path / "shots"  # kept with the test's tmp folder, to look at when it fails
    shots.mkdir()
    for name, png in p.shots.items():
        (shots / f"{name}.png").write_bytes(png)
    for k in range(len(TURNS_DEG)):
        deg, released, grip = p.facts[f"turn{k}"]
        off = abs((grip - released + 180.0) % 360.0 - 180.0)
        assert off <= MAX_OFF_DEG, (f"turn {k} ({deg:+.0f} deg): the grip sits at {grip:.1f} deg about the centre, "
                                    f"released at {released:.1f} deg (off by {off:.1f}: the other end of the line)")
