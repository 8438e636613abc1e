"""The MR viewer's layouts at the model (issue 34): 1x2 shows the active viewport and its neighbour (as 1x1 shows
the active one) and never moves the active viewport; paging in 1x1 and returning to 2x2 leaves every viewport
showing the series it showed (the paged one a later image of it); the dump says which viewports are on show."""
from __future__ import annotations

import pytest

from consoles.mr.model import ConsoleActionError, MRModel
from rendering.subjects import load_runtime

SMALL = {"matrix": 64}


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt) -> MRModel:
    """Four different series in the four viewports: localizer sag, a coronal HASTE, an axial TSE, a cine stack."""
    q = [{"protocol": "localizer_3plane", "status": "done", "params": SMALL},
         {"protocol": "t2_haste_cor", "status": "done", "params": dict(SMALL, n_slices=5)},
         {"protocol": "t2_tse_tra", "status": "done", "params": dict(SMALL, n_slices=5)},
         {"protocol": "cine_sax", "status": "done", "params": dict(SMALL, n_slices=5)}]
    lay = {"layout": "2x2", "viewports": [{"row": 1, "image": 1}, {"row": 2}, {"row": 3}, {"row": 4}]}
    return MRModel(rt, "mr_layout_test", 0, {"queue": q, "layout": lay})


def _shown(m: MRModel) -> list[tuple[int | None, int | None]]:
    return [(v["series"], v["image"]) for v in m.state()["layout"]["viewports"]]


@pytest.mark.parametrize("active,pair", [(0, [0, 1]), (1, [0, 1]), (2, [2, 3]), (3, [2, 3])])
def test_1x2_shows_the_active_viewport_and_its_neighbour(rt, active, pair):
    m = _model(rt)
    before = _shown(m)
    m.activate_viewport(active)
    m.set_layout("1x2")
    lay = m.state()["layout"]
    assert lay["active"] == active + 1  # never moved
    assert [v["index"] - 1 for v in lay["viewports"] if v["visible"]] == pair
    assert _shown(m) == before
    hidden = next(i for i in range(4) if i not in pair)
    with pytest.raises(ConsoleActionError, match="not shown"):
        m.activate_viewport(hidden)


def test_paging_in_1x1_and_back_to_2x2_swaps_nothing(rt):
    m = _model(rt)
    before = _shown(m)
    assert len({s for s, _ in before}) == 4  # four different series
    for vp in (1, 3, 2):
        m.activate_viewport(vp)
        m.set_layout("1x1")
        assert [v["index"] for v in m.state()["layout"]["viewports"] if v["visible"]] == [vp + 1]
        m.page(vp, 2)
        m.set_layout("2x2")
    after = _shown(m)
    assert [s for s, _ in after] == [s for s, _ in before]  # each viewport still shows its series
    assert after[0] == before[0]  # not paged
    for vp in (1, 2, 3):
        assert after[vp][1] == before[vp][1] + 2  # the paged ones two images on
    m.set_layout("1x2")  # viewport 3 (index 2) was activated last
    assert m.state()["layout"]["active"] == 3 and _shown(m) == after
