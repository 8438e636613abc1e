"""CT scout labels never cover what they label (issue 34 item 5), on the cohort's three extremes, in the real console.

For the smallest BMI, the largest BMI and the tallest subject of the scoring cohort (rendering.subjects.params
habitus) and the coronary CTA and renal protocols (the cardiac apex and the renal region were hidden), the console
acquires its scouts from an Acquire scout click (X input); every label drawn on either scout (the screen rectangles
the console exports) must cover no body pixel of that scout (its line integral above BODY_P, from the same
episode's model, mapped through the exported plane-to-screen transform), no two labels may overlap (orientation
letters against the ruler's numbers), and the isocentre label must sit beside its line, at its top end or over air.
"""
from __future__ import annotations

import numpy as np
import pytest

from consoles.ct.model import CTModel
from rendering.subjects import load_runtime
from rendering.subjects.params import cohort_ids, habitus
from tests.consoles.console_driver import Driver, run_script, write_card

pytestmark = pytest.mark.display
BODY_P = 0.2  # more of the body than the console's own mask (0.3): the silhouette's faint edge counts
LINE_GAP_MAX_PX = 14  # the isocentre label's near edge this close to its line
_H = {s: habitus(s) for s in cohort_ids()}
EXTREMES = {"smallest BMI": min(_H, key=lambda s: _H[s][1]), "largest BMI": max(_H, key=lambda s: _H[s][1]),
            "tallest": max(_H, key=lambda s: _H[s][0])}
CASES = [(what, subject, protocol) for what, subject in EXTREMES.items() for protocol in ("ccta", "renal")]


def _script(d: Driver) -> None:
    d.click("acquire_scout")
    d.con.settle(6.0)  # the scout takes 4 s of exam time
    d.facts["geometry"] = d.geometry()
    d.facts["state"] = d.con.state()


def _scouts(subject: str, card_id: str, initial: dict) -> dict:
    """The same episode's scouts, from its model (no display): the body each scout shows."""
    m = CTModel(load_runtime(subject), card_id, 0, initial, {})
    m.acquire_scout()
    m.on_clock(0.0, 5.0)
    return m.scouts


def _cover(mask: np.ndarray, sc, t: dict, rect: list[int]) -> int:
    """Body pixels of `mask` (a scout's rows and columns) under a screen rectangle, through transform `t`."""
    x, y, w, h = rect
    u = (np.array([x, x + w]) - t["bx"]) / t["ax"]
    v = (np.array([y, y + h]) - t["by"]) / t["ay"]
    c0, c1 = sorted((u - sc.u0) / sc.du + 0.5)
    r0, r1 = sorted((sc.v_top - v) / sc.dv + 0.5)
    r0, r1 = max(0, int(np.floor(r0))), min(mask.shape[0], int(np.ceil(r1)))
    c0, c1 = max(0, int(np.floor(c0))), min(mask.shape[1], int(np.ceil(c1)))
    return int(mask[r0:r1, c0:c1].sum()) if r0 < r1 and c0 < c1 else 0


def _overlap(a: list[int], b: list[int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


@pytest.mark.parametrize("what,subject,protocol", CASES, ids=[f"{s}-{w.replace(' ', '_')}-{p}" for w, s, p in CASES])
def test_scout_labels_stay_off_the_body_and_off_each_other(display, tmp_path, what, subject, protocol):
    initial = {"protocol": protocol}
    card = write_card(tmp_path, "ct_scout_labels_probe", "ct", "CT scout labels", "Plan on the scouts.", initial)
    d, con = run_script(display, "ct", card, _script, seed=0, subject=subject)
    con.stop()
    geo = d.facts["geometry"]
    assert d.facts["state"]["scout"]["status"] == "done"
    scouts = _scouts(subject, "ct_scout_labels_probe", initial)
    bad = []
    for vp, view in (("scout_ap", "ap"), ("scout_lateral", "lateral")):
        sc, t = scouts[view], geo["transforms"][vp]
        mask = sc.pixels > BODY_P
        labels = {k.split(":", 1)[1]: r for k, r in geo["geometry"].items() if k.startswith(f"{vp}.label:")}
        placed = {k: r for k, r in labels.items() if not k.startswith(("zruler", "hruler"))}
        assert {"title", "start_label" if view == "ap" else "iso_label"} <= set(placed), sorted(labels)
        assert {"orient_r", "orient_l"} <= set(placed) if view == "ap" else {"orient_a", "orient_p"} <= set(placed)
        for name, rect in placed.items():
            n = _cover(mask, sc, t, rect)
            if n:
                bad.append(f"{vp} {name} {rect} covers {n} body pixels")
        names = sorted(labels)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if _overlap(labels[a], labels[b]) and not (a.startswith(("zruler", "hruler")) and
                                                           b.startswith(("zruler", "hruler"))):
                    bad.append(f"{vp} {a} {labels[a]} overlaps {b} {labels[b]}")
    # the isocentre label follows its line: beside it (either side), its near edge within LINE_GAP_MAX_PX
    state = d.facts["state"]
    t = geo["transforms"]["scout_lateral"]
    m = CTModel(load_runtime(subject), "ct_scout_labels_probe", 0, initial, {})
    x_line = t["ax"] * m.iso_couch_y(state["plan"]["table_height_mm"]) + t["bx"]
    x, _, w, _ = geo["geometry"]["scout_lateral.label:iso_label"]
    gap = min(abs(x - x_line), abs(x + w - x_line))
    assert gap <= LINE_GAP_MAX_PX, f"the isocentre label {x}..{x + w} is {gap:.0f} px from its line at {x_line:.0f}"
    assert not bad, f"{what} ({subject}, {protocol}):\n" + "\n".join(bad)
