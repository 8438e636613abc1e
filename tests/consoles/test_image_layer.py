"""The image layer cache on a real X display: a frame that only changes overlays puts the stored
image layer back instead of drawing it (once two frames in a row drew that image scene), and shows
exactly the pixels of a viewport beside it that draws everything; every change to what layer 0
draws (image, window/level, view box, colour map, placeholder) draws it again."""
from __future__ import annotations

import json

import pytest

from tests.consoles.probe_process import run_probe

pytestmark = pytest.mark.display

# Frames that put the stored image layer back: overlay-only changes once the image scene has been
# drawn by two frames in a row (the second keeps it); every other frame draws layer 0.
REUSED = {"label_text_changed", "overlays_again", "overlays_over_colour_map_again", "overlays_after_grey_again",
          "overlays_after_unprepared_thrice", "overlays_over_placeholder_again"}
DRAWN_AFTER_OVERLAY_CHANGE = {"overlays_moved", "overlays_after_window_level", "overlays_over_colour_map",
                              "overlays_after_grey", "overlays_after_unprepared", "overlays_over_placeholder",
                              # an unannounced render keeps nothing: the next two frames draw
                              "overlays_after_unprepared_again"}
LAYER_CHANGES = {"window_level", "new_image", "view_box", "colour_map", "grey_again", "unprepared_render",
                 "no_image", "placeholder_text"}


@pytest.fixture(scope="module")
def steps(display, tmp_path_factory):
    out = run_probe(display, "image_layer_probe", tmp_path_factory.mktemp("image_layer"))
    return {s["name"]: s for s in json.loads((out / "steps.json").read_text())}


def test_every_frame_shows_what_a_full_redraw_shows(steps):
    wrong = [name for name, s in steps.items() if s["frame"] != s["full_redraw"]]
    assert not wrong, f"frames differing from a full redraw: {wrong}"


def test_every_change_changes_the_screen(steps):
    # otherwise the comparison above would prove nothing
    unchanged = [name for name, s in steps.items() if s["frame"] == s["previous"]]
    assert not unchanged, unchanged


def test_overlay_only_frames_reuse_the_image_layer_once_it_is_kept(steps):
    assert set(steps) == REUSED | DRAWN_AFTER_OVERLAY_CHANGE | LAYER_CHANGES
    assert {name for name, s in steps.items() if s["reused"] == 1} == REUSED


def test_changes_to_the_image_layer_draw_it_again(steps):
    assert all(steps[name]["reused"] == 0 for name in LAYER_CHANGES | DRAWN_AFTER_OVERLAY_CHANGE)
