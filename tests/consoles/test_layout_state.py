"""The viewer layout's pure state: layouts, active viewport, contents, graphics mode, dump."""
from __future__ import annotations

import pytest

from consoles.common.layout_state import LayoutState, ViewportContent


def test_default_and_dump_round_trip():
    s = LayoutState()
    assert s.count == 4 and s.active == 0 and s.graphics_mode == "all"
    s.assign(1, "loc_cor", 600, 300)
    s.activate(1)
    s.set_graphics_mode("outer")
    d = s.to_dict()
    assert d["active"] == 2 and d["layout"] == "2x2" and d["graphics_mode"] == "outer"
    assert d["viewports"][1] == {"index": 2, "content": "loc_cor", "window": 600.0, "level": 300.0, "visible": True,
                                 "graphics_mode": "outer"}
    assert LayoutState.from_dict(d) == s


def test_each_viewport_has_its_own_graphics_mode():
    s = LayoutState()
    s.set_graphics_mode("off", 2)
    s.assign(2, "loc_tra")  # new content keeps the viewport's mode
    s.move_content(2, 3)
    assert [v.graphics_mode for v in s.viewports] == ["all", "all", "off", "all"]
    assert s.graphics_mode == "all"  # the active viewport's
    s.activate(2)
    assert s.graphics_mode == "off" and s.to_dict()["viewports"][2]["graphics_mode"] == "off"
    assert LayoutState.from_dict(s.to_dict()) == s
    s.set_all_graphics_modes("outer")
    assert {v.graphics_mode for v in s.viewports} == {"outer"}
    with pytest.raises(ValueError, match="not shown"):
        LayoutState(layout="1x2").set_graphics_mode("off", 3)


def test_switching_layout_hides_but_keeps_contents_and_never_moves_the_active_viewport():
    s = LayoutState()
    s.assign(3, "loc_tra")
    s.assign(0, "loc_sag")
    s.activate(3)
    s.set_layout("1x2")
    # issue 34: 1x2 shows the active viewport and its neighbour (3 and 4), the active one stays 4
    assert s.count == 2 and s.active == 3 and s.visible() == [2, 3]
    assert s.to_dict()["viewports"][0]["visible"] is False and s.viewports[0].content == "loc_sag"
    assert s.showing("loc_tra") == [3] and s.showing("loc_sag") == []
    with pytest.raises(ValueError, match="not shown"):
        s.activate(0)
    s.set_layout("2x2")
    assert s.showing("loc_tra") == [3] and s.showing("loc_sag") == [0] and s.active == 3


def test_move_content_and_window_level():
    s = LayoutState(viewports=[ViewportContent("loc_tra"), ViewportContent("loc_cor"), ViewportContent(),
                               ViewportContent()])
    s.move_content(1, 0)
    assert [v.content for v in s.viewports[:2]] == ["loc_cor", "loc_cor"]
    s.set_window_level(2, 0.0, 10.0)
    assert s.viewports[2].window == 1e-3 and s.viewports[2].level == 10.0
    s.set_window_level(2, 0.19, 0.1)  # an MR window (relative signal) is kept as it is
    assert s.viewports[2].window == 0.19
    assert s.viewports[2].content is None  # display settings do not touch contents


@pytest.mark.parametrize("bad", [dict(layout="3x3"), dict(active=4),
                                 dict(viewports=[ViewportContent()])])
def test_invalid_states_are_refused(bad):
    with pytest.raises(ValueError):
        LayoutState(**bad)


def test_an_unknown_graphics_mode_is_refused():
    with pytest.raises(ValueError, match="graphics mode"):
        ViewportContent(graphics_mode="some")


def test_invalid_changes_are_refused():
    s = LayoutState()
    with pytest.raises(ValueError):
        s.set_layout("4x4")
    with pytest.raises(ValueError):
        s.set_graphics_mode("none")


def test_1x1_shows_the_active_viewport_and_1x2_it_and_its_neighbour():
    st = LayoutState()
    st.activate(3)
    st.set_layout("1x1")
    assert st.visible() == [3] and st.active == 3
    assert st.to_dict()["viewports"][3]["visible"] and not st.to_dict()["viewports"][0]["visible"]
    with pytest.raises(ValueError):
        st.activate(0)
    st.set_layout("1x2")
    assert st.active == 3 and st.visible() == [2, 3]
    st.activate(2)
    st.set_layout("2x2")
    st.activate(1)
    st.set_layout("1x2")
    assert st.active == 1 and st.visible() == [0, 1]