"""What the MR parameter card writes beside its fields (issue 24, item 3), pure: no Qt.

Every numeric field's range is read from its declared Parameter (consoles.mr.model.PARAM), the same
limits the field refuses an entry outside of (or wraps at, for the full-turn in-plane rotation:
consoles.common.numeric.judge_entry), so the numbers exist in one place. Every angle's sign convention
is said in a technologist's words, for the row's main orientation, as consoles.mr.row_params turns the
tilts into a slice normal and rendering.geometry.PlanePose turns the in-plane rotation:

- a + tilt towards axis X tips the normal from the main axis towards +X, so the slice's edge on the +X
  side goes towards the main axis' minus side (transverse, tilt 1 = T > C: the back edge goes to the feet,
  i.e. the front edge to the head); each entry below names the edge that reads naturally;
- a + in-plane rotation turns the FOV's read axis anticlockwise as the main orientation is viewed
  (transverse from the feet, coronal from the front, sagittal from the patient's left).

tests/consoles/test_mr_card_help.py checks both against that geometry and the ranges against what the
fields refuse or wrap.
"""
from __future__ import annotations

from consoles.common.numeric import range_text, wraps
from consoles.common.params import Parameter
from consoles.mr.model import PARAM
from consoles.mr.param_card import SHIM_CENTRE, SHIM_SIZE
from consoles.mr.row_params import SECONDARY

# Patient directions (subject frame, DICOM LPS: +x left, +y posterior, +z head) and their words on the card.
DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "L": (1.0, 0.0, 0.0), "R": (-1.0, 0.0, 0.0), "P": (0.0, 1.0, 0.0), "A": (0.0, -1.0, 0.0),
    "H": (0.0, 0.0, 1.0), "F": (0.0, 0.0, -1.0)}
WORDS = {"L": "left", "R": "right", "A": "front", "P": "back", "H": "head", "F": "feet"}
# What a + tilt does, per (main orientation, tilt 1 | 2): the slice edge that moves and where it goes.
TILT_SIGNS: dict[tuple[str, int], tuple[str, str]] = {
    ("T", 1): ("A", "H"), ("T", 2): ("R", "H"),
    ("C", 1): ("H", "A"), ("C", 2): ("L", "A"),
    ("S", 1): ("A", "L"), ("S", 2): ("H", "R")}
# The side each main orientation is viewed from (rendering.geometry: the normal points into the screen).
VIEWED_FROM = {"T": "F", "C": "A", "S": "L"}
TILT_FIELDS = ("tilt_a_deg", "tilt_b_deg")
POSITION_FIELDS = ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")
# The other tabs' ranges, a few fields to a line (each line fits the card's width at the help font).
RANGE_LINES: dict[str, tuple[tuple[str, ...], ...]] = {
    "Routine": (("n_slices", "averages", "matrix"), ("thickness_mm", "gap_mm"), ("fov_read_mm", "fov_phase_mm")),
    "Contrast": (("tr_ms", "te_ms"), ("ti_ms", "flip_deg")),
    "Physio": (("trigger_delay_ms",), ("acq_window_ms",)),
}


def range_words(p: Parameter) -> str:
    """A field's range as the card writes it: '-90 to 90 deg', '1-20 mm' (whole ends without decimals),
    with ', wraps round' for a full-turn angle (an entry past an end comes back in at the other)."""
    decimals = 0 if float(p.lo).is_integer() and float(p.hi).is_integer() else p.decimals
    text = range_text(p.lo, p.hi, decimals, p.unit)
    return f"{text}, wraps round" if wraps(p.lo, p.hi, p.unit) else text


def position_range_line() -> str:
    """'L/R, A/P -500 to 500 mm; F/H -1000 to 1000 mm': the Position fields grouped by equal range."""
    groups: dict[str, list[str]] = {}
    for n in POSITION_FIELDS:
        groups.setdefault(range_words(PARAM[n]), []).append(PARAM[n].label.split()[-1])
    return "; ".join(f"{', '.join(axes)} {rng}" for rng, axes in groups.items())


def tilt_axes(main: str, tilt: int) -> str:
    """'T > C': the main orientation and the axis tilt 1 or 2 tips it towards (as the Orientation read-out)."""
    return f"{main} > {SECONDARY[main][tilt - 1]}"


def tilt_line(main: str, tilt: int) -> str:
    """'Tilt 1 (T > C): + = front edge toward the head'."""
    edge, toward = TILT_SIGNS[(main, tilt)]
    return f"Tilt {tilt} ({tilt_axes(main, tilt)}): + = {WORDS[edge]} edge toward the {WORDS[toward]}"


def geometry_lines(main: str) -> dict[str, str]:
    """The Geometry tab's lines for a row of main orientation `main`, by widget name, in screen order.
    'position_range' sits under the Position fields' convention line, the rest under the angles."""
    a, b = (PARAM[n] for n in TILT_FIELDS)
    tilts = f"{a.label}, {b.label}: {range_words(a)}" if range_words(a) == range_words(b) else \
        f"{a.label}: {range_words(a)}; {b.label}: {range_words(b)}"
    rot = PARAM["inplane_deg"]
    return {"position_range": position_range_line(),
            "tilt_range": tilts,
            "tilt_a_sign": tilt_line(main, 1),
            "tilt_b_sign": tilt_line(main, 2),
            "inplane_range": f"{rot.label}: {range_words(rot)}",
            "inplane_sign": f"+ = FOV anticlockwise, seen from the {WORDS[VIEWED_FROM[main]]}"}


def range_lines(tab: str) -> list[str]:
    """The range lines of a tab without angle conventions: 'Slices 1-64; Averages 1-8; Matrix 64-512'."""
    return ["; ".join(f"{PARAM[n].label} {range_words(PARAM[n])}" for n in names)
            for names in RANGE_LINES.get(tab, ())]



def shim_line() -> str:
    """The shim box's line over its fields: 'Shim box centre as Position; size 10-500 mm' (its ranges: the
    centre's are the Position fields', the size's from the declared parameters)."""
    same = all(range_words(PARAM[c]) == range_words(PARAM[p]) for c, p in zip(SHIM_CENTRE, POSITION_FIELDS))
    centre = "as Position" if same else "; ".join(f"{PARAM[n].label} {range_words(PARAM[n])}" for n in SHIM_CENTRE)
    return f"Shim box: centre {centre}; size {range_words(PARAM[SHIM_SIZE[0]])}"
