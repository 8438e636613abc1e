"""Label placement (consoles.common.label_layout, no Qt): first free spot, clear of taken boxes and of the body."""
from __future__ import annotations

import numpy as np
import pytest

from consoles.common.label_layout import PxBox, Spot, mask_cover, place, text_box, text_width_px


def test_text_width_follows_the_pinned_font():
    assert text_width_px("-100", 11) == pytest.approx(25.0, abs=1.5)  # VTK drew it 24 px wide
    assert text_width_px("WWW", 13) > text_width_px("iii", 13) * 2
    b = text_box(100, 50, "Start 20.0", 13, "right")
    assert b.x1 == pytest.approx(102.0) and b.y0 < 50 < b.y1


def test_place_skips_spots_off_the_viewport_taken_or_over_the_body():
    body = np.zeros((100, 200), bool)
    body[:, 60:140] = True  # a body band in the middle columns; the mask is the widget's pixels here
    cover = mask_cover(body, lambda x, y: (y, x))
    taken = [PxBox(150, 0, 200, 30)]
    spots = [Spot(190, 20, "left"),  # off the viewport's right edge
             Spot(155, 20, "left"),  # on a taken box
             Spot(70, 50, "left"),  # over the body
             Spot(145, 60, "left")]  # free
    spot, box = place("Label", 12, spots, 200, 100, taken, cover)
    assert spot == spots[3] and cover(box) == 0 and box.inside(200, 100)


def test_place_falls_back_to_the_least_covered_spot():
    body = np.ones((100, 200), bool)
    body[:, :20] = False
    cover = mask_cover(body, lambda x, y: (y, x))
    spots = [Spot(100, 50, "center"), Spot(2, 50, "left")]
    spot, box = place("Label", 12, spots, 200, 100, (), cover)
    assert spot == spots[1] and 0 < cover(box) < cover(text_box(100, 50, "Label", 12, "center"))
    with pytest.raises(ValueError, match="no candidate"):
        place("Label", 12, [], 200, 100)
