"""No stale pixels after a layout change (issue 24), on a real X display: the MR console goes through
every layout change in every order (1x1, 1x2, 2x2), the viewport resizes they make, series loads and
planning-grip drags, and every frame's viewer area must equal (a) the same frame with every shown
viewport drawn in full (its image layer cache bypassed) and (b) a console built afresh around the
same state. The issue's own sequence (cohort s06, L4_4ch, seed 0: the 2ch series into 1x1, its grips
dragged, 2x2) showed a 96 px strip of viewport 2 over the 1x1 image before the fix."""
from __future__ import annotations

import json

import pytest

from tests.consoles.probe_process import run_probe

pytestmark = pytest.mark.display


def _steps(display, tmp_path_factory, script: str) -> list[dict]:
    out = run_probe(display, "layout_change_probe", tmp_path_factory.mktemp(script), "--script", script,
                    timeout_s=600.0)
    return json.loads((out / "steps.json").read_text())


@pytest.fixture(scope="module")
def issue_steps(display, tmp_path_factory):
    return _steps(display, tmp_path_factory, "issue24")


@pytest.fixture(scope="module")
def tour_steps(display, tmp_path_factory):
    return _steps(display, tmp_path_factory, "tour")


def _stale(steps: list[dict]) -> list[str]:
    return [s["name"] for s in steps
            if not s["sequence"] == s["checked"] == s["full_redraw"] == s["fresh"]]


def test_the_issue_sequence_shows_no_stale_pixels(issue_steps):
    assert [s["layout"] for s in issue_steps][-1] == "2x2"
    assert _stale(issue_steps) == [], "frames differing from a full redraw or a fresh console (PNGs in the probe's out)"


def test_every_layout_change_in_every_order_shows_what_is_there(tour_steps):
    layouts = ["2x2"] + [s["layout"] for s in tour_steps]
    changes = {(a, b) for a, b in zip(layouts, layouts[1:]) if a != b}
    assert changes == {(a, b) for a in ("1x1", "1x2", "2x2") for b in ("1x1", "1x2", "2x2") if a != b}
    assert _stale(tour_steps) == [], "frames differing from a full redraw or a fresh console"


def test_every_step_changes_the_viewer(tour_steps, issue_steps):
    # otherwise equal frames would prove nothing
    for steps in (tour_steps, issue_steps):
        assert [s["name"] for s in steps if s["sequence"] == s["previous"]] == []
