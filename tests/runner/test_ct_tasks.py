"""CT tasks end to end on a real Xvfb: noop and careless plans do not pass.

That the reference passes every card in the GUI on dev is checked for all cards in tests/test_conformance.py.
"""
from __future__ import annotations

import json

import pytest

from runner.agents.reference import ReferenceAgent
from runner.agents.reference.ct import CTReferenceSolver
from runner.agents.simple import NoopAgent
from runner.episode import EpisodeSpec, run_episode
from tasks.card import load_card
from tests.runner.baselines import with_budget

pytestmark = pytest.mark.display


@pytest.mark.parametrize("task", ["ct_undercoverage_recovery", "ccta_heart_coverage_isocenter"])
def test_noop_does_not_pass(display, tmp_path, task):
    card = with_budget(load_card(task), 3)
    v = run_episode(EpisodeSpec(card, "dev", 0), NoopAgent(), tmp_path, display)
    assert v.outcome == "FAIL" and v.sr == 0.0


class _Tweaked(ReferenceAgent):
    """The reference solver with a deliberately wrong plan or action."""

    name = "careless"

    def __init__(self, plan_update: dict | None = None, solver_cls=CTReferenceSolver) -> None:
        super().__init__()
        self.plan_update, self.solver_cls = plan_update or {}, solver_cls

    def reset(self, card, subject, seed) -> None:
        self._solver = self.solver_cls(card, subject)
        self._solver.plan = dict(self._solver.plan, **self.plan_update)


class _EarlyScan(CTReferenceSolver):
    """Presses Scan as soon as the injection starts, before the contrast reaches the aorta."""

    def next_action(self, obs) -> str:
        st = self.control.state()
        if st["bolus"]["status"] == "monitoring":
            geo = self.control.geometry()["geometry"]
            x, y, w, h = geo["scan"]
            return json.dumps({"action": "click", "x": x + w // 2, "y": y + h // 2})
        return super().next_action(obs)


def test_a_range_that_misses_the_lung_bases_is_partial_with_full_workflow(display, tmp_path):
    v = run_episode(EpisodeSpec(load_card("ct_lung_coverage_isocenter"), "dev", 0),
                    _Tweaked({"margin_bottom": -40.0}), tmp_path, display)
    assert v.outcome == "PARTIAL" and v.sr == 0.0 and v.pr == 1.0
    assert not v.details["checks"]["ends_covered"] and v.details["missed_end_mm"]["lungs"] >= 38
    assert v.aq < 80


def test_ccta_scanned_before_the_bolus_arrives_does_not_pass(display, tmp_path):
    v = run_episode(EpisodeSpec(load_card("ccta_heart_coverage_isocenter"), "dev", 0),
                    _Tweaked(solver_cls=_EarlyScan), tmp_path, display)
    assert v.outcome == "PARTIAL" and not v.details["checks"]["bolus_timing"]
    assert v.details["aorta_hu_at_scan_start"] < 150 and v.details["checks"]["coverage"]
