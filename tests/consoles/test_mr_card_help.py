"""What the MR card writes beside its fields is true (issue 24, item 3), without a display: each stated sign
convention against the geometry the console plans with (consoles.mr.row_params, rendering.geometry), and
each stated range against what the field refuses or wraps (consoles.common.numeric.judge_entry)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from consoles.common.numeric import judge_entry
from consoles.mr import card_help
from consoles.mr.param_card import SHIM_CENTRE, SHIM_SIZE
from consoles.mr.model import CARD, CHOICES, PARAM, READ_ONLY
from consoles.mr.row_params import AXIS_INDEX, SECONDARY, _VIEW_SIGN, normal_from_tilts
from rendering.geometry import PlanePose

RANGE = re.compile(r"(-?\d+(?:\.\d+)?)(?: to |-)(-?\d+(?:\.\d+)?)")
TILT_DEG = 10.0


def _axis(letter: str) -> np.ndarray:
    """The unit subject-frame direction of a main orientation's axis (+x L, +y P, +z H)."""
    e = np.zeros(3)
    e[AXIS_INDEX[letter]] = 1.0
    return e


def _edge_point(normal: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """The point of the slice (through the origin, 1 mm out) in the in-plane direction nearest `toward`."""
    d = toward - np.dot(toward, normal) * normal
    return d / np.linalg.norm(d)


@pytest.mark.parametrize("main", "TCS")
@pytest.mark.parametrize("tilt", (1, 2))
def test_a_plus_tilt_moves_the_stated_edge_the_stated_way(main, tilt):
    edge, toward = card_help.TILT_SIGNS[(main, tilt)]
    line = card_help.tilt_line(main, tilt)
    assert f"({main} > {SECONDARY[main][tilt - 1]})" in line  # as the Orientation read-out names the axes
    assert f"{card_help.WORDS[edge]} edge toward the {card_help.WORDS[toward]}" in line
    e, t = np.array(card_help.DIRECTIONS[edge]), np.array(card_help.DIRECTIONS[toward])
    flat = normal_from_tilts(main, 0.0, 0.0)
    assert abs(np.dot(e, flat)) < 1e-9 and abs(np.dot(t, flat)) > 0.99, "an in-plane edge moving off the plane"
    for sign in (1.0, -1.0):
        a, b = (sign * TILT_DEG, 0.0) if tilt == 1 else (0.0, sign * TILT_DEG)
        n = normal_from_tilts(main, a, b)
        moved = _edge_point(n, e) - e  # where the named edge of the slice went
        assert sign * np.dot(moved, t) > 0.1, f"{main} tilt {tilt} {sign * TILT_DEG:+} moved the edge {moved}"
        # and the tilt is towards the stated secondary axis: the normal gains a + component along it
        assert sign * n[AXIS_INDEX[SECONDARY[main][tilt - 1]]] > 0


@pytest.mark.parametrize("main", "TCS")
def test_a_plus_in_plane_rotation_turns_the_fov_anticlockwise_seen_from_the_stated_side(main):
    line = card_help.geometry_lines(main)["inplane_sign"]
    side = card_help.VIEWED_FROM[main]
    assert line.endswith(f"anticlockwise, seen from the {card_help.WORDS[side]}")
    n = _VIEW_SIGN[main] * normal_from_tilts(main, 0.0, 0.0)
    eye = np.array(card_help.DIRECTIONS[side])
    assert np.dot(eye, n) < 0, "the stated side is the viewer's (the normal points into the screen, away)"
    for deg in (10.0, -10.0):
        u0 = PlanePose.from_normal((0, 0, 0), n, 0.0).u
        u1 = PlanePose.from_normal((0, 0, 0), n, deg).u
        # anticlockwise as seen from `eye`: the turn from u0 to u1 is about the axis pointing at the viewer
        assert np.sign(np.dot(np.cross(u0, u1), eye)) == np.sign(deg)


def _stated(text: str) -> tuple[float, float]:
    m = RANGE.search(text)
    assert m, f"no range in {text!r}"
    return float(m.group(1)), float(m.group(2))


def _lines_naming(name: str, main: str = "T") -> list[str]:
    """The parts of the card's help lines (split at ';') that name field `name` and state a range."""
    label = PARAM[name].label
    lines = list(card_help.geometry_lines(main).values()) + [t for tab in card_help.RANGE_LINES
                                                               for t in card_help.range_lines(tab)]
    out = []
    for line in lines:
        for part in re.split(r"; ", line):
            if re.search(rf"(^|, ){re.escape(label)}\b", part) and RANGE.search(part):
                out.append(part)
    return out


def _range_of(name: str) -> tuple[str, tuple[float, float]]:
    """The part of the card's help that states `name`'s range, and that range."""
    if name in card_help.POSITION_FIELDS:  # grouped by axis: 'L/R, A/P -500 to 500 mm'
        axis = PARAM[name].label.split()[-1]
        part = next(p for p in card_help.position_range_line().split("; ") if re.search(rf"\b{re.escape(axis)}\b", p))
        return part, _stated(part)
    if name in SHIM_CENTRE:  # the shim box's line: 'centre as Position' (card_help says so only when it is)
        assert "centre as Position" in card_help.shim_line()
        return _range_of(card_help.POSITION_FIELDS[SHIM_CENTRE.index(name)])
    if name in SHIM_SIZE:  # '...; size 10-500 mm': one range for the three sizes
        part = card_help.shim_line().split("; ")[-1]
        assert part.startswith("size ")
        return part, _stated(part)
    parts = _lines_naming(name)
    assert len(parts) == 1, f"{name}: its range is stated once, found {parts}"
    return parts[0], _stated(parts[0])


NUMERIC = [n for tab in CARD.values() for n in tab if n not in CHOICES and PARAM[n].enabled_when is not READ_ONLY]


@pytest.mark.parametrize("name", NUMERIC)
def test_every_field_states_the_range_it_refuses_or_wraps_at(name):
    p = PARAM[name]
    part, (lo, hi) = _range_of(name)
    assert (lo, hi) == (p.lo, p.hi), f"{name}: the card says {part!r}, the field takes {p.lo}..{p.hi}"
    if p.unit:
        assert p.unit in re.findall(r"[a-z]+", part)
    step = 10.0 ** -p.decimals
    for v in (lo, hi):  # the ends are taken as typed
        assert judge_entry(p.label, v, p.lo, p.hi, p.decimals, p.unit).value == pytest.approx(v)
    for v in (lo - step, hi + step):  # beyond them: refused, or wrapped exactly when the card says it wraps
        verdict = judge_entry(p.label, v, p.lo, p.hi, p.decimals, p.unit)
        if "wraps round" in part:
            assert verdict.value is not None and lo <= verdict.value <= hi and "set as" in verdict.message
        else:
            assert verdict.value is None and "not applied" in verdict.message


def test_the_angles_lines_name_their_fields_and_the_in_plane_rotation_wraps():
    lines = card_help.geometry_lines("T")
    assert lines["tilt_range"] == "Tilt 1, Tilt 2: -90 to 90 deg"
    assert lines["inplane_range"] == "In-plane rotation: -180 to 180 deg, wraps round"
    assert judge_entry("In-plane rotation", 190.0, -180, 180, 1, "deg").value == pytest.approx(-170.0)
