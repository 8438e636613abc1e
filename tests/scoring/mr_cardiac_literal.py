"""A technologist who does literally what the MR cardiac planning goals say, on the real console model.

Shared by the goal-boundary tests (test_mr_cardiac_goal_checks.py) and the cohort measurement of the literal
4-chamber plan. Nothing here comes from the reference solver (runner/agents): planes are built from the
console's dumped geometry (the 2ch image as acquired) and the subject's landmarks, typed into the row's
geometry fields at their precision (0.1 deg, 0.1 mm), then acquired on the model's clock.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from consoles.common.clock import SimClock
from consoles.mr.row_params import tilts_from_normal
from runner.headless.drive import make_model
from scoring.oracles import get_oracle
from tasks.card import load_card
from tests.scoring.vectors import turned, unit

VIEW_ROWS = {"2ch": "cine_2ch", "4ch": "cine_4ch", "sax": "cine_sax"}



class Console:
    """One episode of a card on the console model, driven by typed fields and Go."""

    def __init__(self, card_id: str, subject: str, seed: int) -> None:
        self.card = load_card(card_id)
        self.m = make_model(self.card, subject, seed)
        self.clock = SimClock(start=self.m.t)
        self.clock.subscribe(self.m.on_clock)

    def state(self) -> dict[str, Any]:
        return self.m.state()

    def row(self, protocol: str) -> dict[str, Any]:
        """The first pending row of the protocol, opened."""
        r = next(r for r in self.state()["queue"] if r["protocol"] == protocol and r["status"] == "pending")
        if self.state()["open_row"] != r["uid"]:
            self.m.open(r["uid"])
        return r

    def type_plane(self, protocol: str, normal: Any, centre: Any) -> None:
        """Type the plane's orientation and position into the row's fields (scanner frame, 0.1 precision)."""
        self.row(protocol)
        main, a, b = tilts_from_normal(unit(normal))
        self.m.set_param("main", main)
        self.m.set_param("tilt_a_deg", round(a, 1))
        self.m.set_param("tilt_b_deg", round(b, 1))
        want = np.asarray(centre, float) - np.asarray(self.state()["isocentre_mm"], float)
        for k, name in enumerate(("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")):
            self.m.set_param(name, round(float(want[k]), 1))

    def set(self, protocol: str, name: str, value: Any) -> None:
        self.row(protocol)
        self.m.set_param(name, value)

    def acquire(self, protocol: str) -> dict[str, Any]:
        """Go on the open row of the protocol and wait until its series is there; that series."""
        uid = self.row(protocol)["uid"]
        self.m.go()
        self.clock.advance(self.m.remaining_s() + 0.5)
        end = next(r for r in self.state()["queue"] if r["uid"] == uid)
        assert end["status"] == "done", end["status"]
        return next(s for s in self.state()["series"] if s["uid"] == end["series"])

    def verdict(self, oracle):
        return get_oracle(self.card.oracle)(self.state(), oracle, self.card)


def last_series(st: dict[str, Any], protocol: str) -> dict[str, Any]:
    return [s for s in st["series"] if s["protocol"] == protocol][-1]


def true_2ch(oracle) -> tuple[np.ndarray, np.ndarray]:
    """The subject's vertical long axis: its reference 2ch plane (normal, MV-apex midpoint)."""
    mv, apex = oracle.landmarks["mitral_valve_centre"], oracle.landmarks["lv_apex_epicardial"]
    return unit(oracle.reference_planes["2ch"]["normal"]), (mv + apex) / 2.0


def literal_4ch(series_2ch: dict[str, Any], oracle) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The goal's 4ch on a 2ch image: the line from the mitral valve centre to the apex as marked on the image
    (the landmarks projected onto its plane), the plane through it at right angles to the image.
    (normal, centre, the line's direction)."""
    im = series_2ch["images"][0]
    n2, c2 = unit(im["normal"]), np.asarray(im["centre_mm"], float)
    mv, apex = (oracle.landmarks[k] for k in ("mitral_valve_centre", "lv_apex_epicardial"))
    pm, pa = (p - ((p - c2) @ n2) * n2 for p in (mv, apex))
    line = unit(pa - pm)
    return unit(np.cross(line, n2)), (pm + pa) / 2.0, line


def plan_literal_4ch(con: Console, oracle, turn_deg: float = 0.0, shift_mm: float = 0.0) -> None:
    """Type the literal 4ch on the last 2ch image, turned about its line / shifted along its normal on purpose."""
    n, c, line = literal_4ch(last_series(con.state(), "cine_2ch"), oracle)
    n2 = turned(n, line, turn_deg)
    con.type_plane("cine_4ch", n2, c + shift_mm * n2)
