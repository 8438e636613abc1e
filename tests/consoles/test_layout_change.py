"""No stale pixels after a layout change (issue 24), on a real X display: the MR console goes through
every layout change in every order (1x1, 1x2, 2x2), the viewport resizes they make, series loads and
planning-grip drags, and every frame's viewer area must equal (a) the same frame with every shown
viewport drawn in full (its image layer cache bypassed) and (b) a console built afresh around the
same state. The issue's own sequence (cohort s06, L4_4ch, seed 0: the 2ch series into 1x1, its grips
dragged, 2x2) showed a 96 px strip of viewport 2 over the 1x1 image before the fix."""
from __future__ import annotations

import json

import pytest

from tests.consoles.layout_change_probe import START_LAYOUT, TOURS, layout_changes
from tests.consoles.probe_process import run_probe

# a "fresh" part builds an MR console at every step it compares: up to ~25 s under 4 display workers
pytestmark = [pytest.mark.display, pytest.mark.timeout(180)]
ALL_CHANGES = {(a, b) for a in ("1x1", "1x2", "2x2") for b in ("1x1", "1x2", "2x2") if a != b}


_CACHE: dict[tuple[str, str], list[dict]] = {}
# a full redraw of the same frame; a console built afresh around the same state, for the first and the second
# half of the steps (each fresh console costs a build: one test for all of them took 43 s under 4 workers)
PARTS = ("redraw", "fresh-0", "fresh-1")


def _steps(display, tmp_path_factory, script: str, part: str) -> list[dict]:
    """The probe's steps of `script` for one comparison, run once per worker process (several tests read one)."""
    if (script, part) not in _CACHE:
        what = ["--part", "redraw"] if part == "redraw" else ["--part", "fresh", "--half", part[-1]]
        out = run_probe(display, "layout_change_probe", tmp_path_factory.mktemp(f"{script}_{part}"),
                        "--script", script, *what, timeout_s=170.0)
        _CACHE[script, part] = json.loads((out / "steps.json").read_text())
    return _CACHE[script, part]


def _stale(steps: list[dict], part: str) -> list[str]:
    """Steps whose frame differs from the part's comparison frames; a fresh half must have compared some."""
    against = ("checked", "full_redraw") if part == "redraw" else ("fresh",)
    compared = [s for s in steps if all(k in s for k in against)]
    assert compared, f"the {part} probe compared no step"
    return [s["name"] for s in compared if any(s[k] != s["sequence"] for k in against)]


@pytest.mark.parametrize("part", PARTS)
def test_the_issue_sequence_shows_no_stale_pixels(display, tmp_path_factory, part):
    steps = _steps(display, tmp_path_factory, "issue24", part)
    assert [s["layout"] for s in steps][-1] == "2x2"
    assert _stale(steps, part) == [], f"frames differing from the {part} frame (PNGs in the probe's out)"


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("tour", sorted(TOURS))
def test_every_layout_change_of_a_tour_shows_what_is_there(display, tmp_path_factory, tour, part):
    steps = _steps(display, tmp_path_factory, tour, part)
    layouts = [START_LAYOUT] + [s["layout"] for s in steps]
    assert {(a, b) for a, b in zip(layouts, layouts[1:]) if a != b} == layout_changes(TOURS[tour])
    assert _stale(steps, part) == [], f"frames differing from the {part} frame"


@pytest.mark.parametrize("script", ["issue24", *sorted(TOURS)])
def test_every_step_changes_the_viewer(display, tmp_path_factory, script):
    # otherwise equal frames would prove nothing
    steps = _steps(display, tmp_path_factory, script, "redraw")
    assert [s["name"] for s in steps if s["sequence"] == s["previous"]] == []


def test_the_tours_together_make_every_layout_change_in_every_order():
    assert set().union(*(layout_changes(t) for t in TOURS.values())) == ALL_CHANGES
