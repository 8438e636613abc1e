"""The plane-to-image angle in the plan info (issue 34), in the real console under Xvfb, read back by OCR.

On `dev`, with the localizer and a 2-chamber cine acquired and a 4-chamber row open (2x2: sagittal, coronal,
transverse localizer, the 2ch image), the first plan-info line over the 2ch image reads the angle between the
4ch group's plane and the 2ch image's (from their dumped normals; 90 = perpendicular) within 0.5 deg, before and
after the group is turned by dragging its rotate grip on a localizer (like an agent: X input on the exported
grip), and the angle has changed. After the drag the rotate grip sits where it was let go (its end kept). The
screenshots go to the test's tmp_path.
"""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from rendering.geometry import plane_angle_deg
from runner.actions import Action
from tests.consoles.console_driver import Driver, probe_once
from tests.ocr import first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_2ch", "status": "done"},
                     {"protocol": "cine_4ch"}], "open": 3,
           "layout": {"layout": "2x2", "viewports": [{"row": 1, "image": 1}, {"row": 1, "image": 2},
                                                      {"row": 1, "image": 3}, {"row": 2}]}}
IMAGE_VP = 4  # the 2ch image
TURN_DEG = 25.0
TOL_DEG = 0.5
MAX_GRIP_OFF_DEG = 6.0


def _screen_angle(x: float, y: float, cx: float, cy: float) -> float:
    return math.degrees(math.atan2(-(y - cy), x - cx))


def _read_angle(p: Driver, name: str) -> None:
    p.facts[f"{name}_geo"] = p.geometry()
    p.facts[f"{name}_state"] = p.con.state()
    p.shot(name)


def _script(p: Driver) -> None:
    _read_angle(p, "before")
    handles = {vp: p.geometry()["viewports"][f"viewport{vp}"]["handles"] for vp in (1, 2, 3)}
    vp = next(v for v in (3, 2, 1) if "rotate" in handles[v] and "centre" in handles[v])
    x, y = p.handle(vp, "rotate")
    cx, cy = p.handle(vp, "centre")
    r = math.radians(TURN_DEG)  # counter-clockwise on screen
    dx, dy = (x - cx) * math.cos(r) + (y - cy) * math.sin(r), -(x - cx) * math.sin(r) + (y - cy) * math.cos(r)
    x2, y2 = int(round(cx + dx)), int(round(cy + dy))
    p.act(Action("drag", x=x, y=y, x2=x2, y2=y2))
    gx, gy = p.handle(vp, "rotate")
    ncx, ncy = p.handle(vp, "centre")
    p.facts["grip"] = (_screen_angle(x2, y2, cx, cy), _screen_angle(gx, gy, ncx, ncy), vp)
    _read_angle(p, "after")


@pytest.fixture(scope="module")
def run(display, tmp_path_factory):
    return probe_once(display, tmp_path_factory.mktemp("mr_plane_angle"), "mr_plane_angle_probe",
                      "MR plane angle", "Plan a 4ch.", INITIAL, _script)


def _true_angle(state: dict) -> float:
    row = next(r for r in state["queue"] if r["uid"] == state["open_row"])
    lay = state["layout"]["viewports"][IMAGE_VP - 1]
    s = next(x for x in state["series"] if x["uid"] == lay["series"])
    return plane_angle_deg(np.array(row["params"]["normal"]), np.array(s["images"][lay["image"] - 1]["normal"]))


def _ocr_angle(p: Driver, name: str) -> tuple[bool, list[str], float]:
    rect = p.facts[f"{name}_geo"]["geometry"][f"viewport{IMAGE_VP}.label:plan_info0"]
    x, y, w, h = rect
    img = Image.open(io.BytesIO(p.shots[name])).crop((x - 2, y - 2, x + w + 2, y + h + 2))
    want = _true_angle(p.facts[f"{name}_state"])
    ok, got = first_reading(readings(img), lambda r: "deg" in r and len(numbers(r)) == 1
                            and abs(float(numbers(r)[0]) - want) <= TOL_DEG)
    return ok, got, want


def test_ocr_reads_the_angle_to_the_2ch_image_before_and_after_a_planning_drag(run):
    require_tesseract()
    before = _ocr_angle(run, "before")
    assert before[0], f"read {before[1]}, the planes are {before[2]:.2f} deg apart"
    after = _ocr_angle(run, "after")
    assert after[0], f"read {after[1]} after the turn, the planes are {after[2]:.2f} deg apart"
    assert abs(after[2] - before[2]) > 1.0, (before[2], after[2])  # the drag changed what is read


def test_the_rotate_grip_keeps_its_end_through_the_turn(run):
    released, grip, vp = run.facts["grip"]
    off = abs((grip - released + 180.0) % 360.0 - 180.0)
    assert off <= MAX_GRIP_OFF_DEG, f"viewport {vp}: the grip sits at {grip:.1f} deg, released at {released:.1f}"
