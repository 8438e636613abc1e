"""Ultrasound tasks end to end on a real Xvfb: the real US console, real XTEST input, real screenshots.

That the reference passes every card in the GUI on dev is checked in tests/test_conformance.py; here:
the reference on a spread of cohort subjects and seeds, the no-op and random agents never passing, and
1,000 random actions (then a run of random drags on the probe's body map) without a crash or hang.
"""
from __future__ import annotations

import json

import pytest

from runner.agents.reference import ReferenceAgent
from runner.agents.simple import RandomAgent
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import select_cards
from tests.conftest import SOAK_ACTIONS
from tests.runner.baselines import assert_noop_never_passes, assert_random_never_passes, with_budget

pytestmark = pytest.mark.display

US_CARDS = select_cards("us")
COHORT = [f"s{i:02d}" for i in range(1, 31)]


def test_the_seven_kidney_tasks_exist():
    assert sorted(c.id for c in US_CARDS) == sorted([
        "us_kidney_set_acquisition_v1", "us_kidney_set_display_v1", "us_kidney_measure_annotate_save_v1",
        "us_kidney_preset_acquire_save_v1", "us_kidney_long_axis_search_v1",
        "us_kidney_acquisition_optimization_v1", "us_kidney_contact_vs_gain_v1"])
    assert sorted(c.level for c in US_CARDS) == [0, 0, 1, 1, 3, 4, 6]


COHORT_SPECS = [EpisodeSpec(c, COHORT[(11 * i + 5 + 13 * k) % 30], (i + k) % 3)
                for k in range(2) for i, c in enumerate(US_CARDS)]


@pytest.mark.parametrize("spec", COHORT_SPECS, ids=[f"{s.card.id}-{s.subject}-{s.seed}" for s in COHORT_SPECS])
def test_reference_passes_every_us_card_in_the_gui_on_cohort_subjects(display, console_keeper, tmp_path, spec):
    """Each card twice, on cohort subjects and seeds spread over s01..s30 and seeds 0-2 (one test per
    episode; consoles reset in place between episodes, as a worker runs them)."""
    v = run_episode(spec, ReferenceAgent(), tmp_path, display, keeper=console_keeper)
    assert (v.outcome, v.termination, v.sr) == ("PASS", "done", 1.0), (spec.card.id, spec.subject, spec.seed,
                                                                       v.reason)


@pytest.mark.parametrize("card", US_CARDS, ids=[c.id for c in US_CARDS])
def test_noop_and_random_agents_never_pass_a_us_card(display, console_keeper, tmp_path, card):
    assert_noop_never_passes(card, display, tmp_path, keeper=console_keeper)
    assert_random_never_passes(card, display, tmp_path, random_seed=5, keeper=console_keeper)


class _ProbeMapDrags(RandomAgent):
    """Random allowed actions, every other one a drag of the probe footprint (found through the
    console's geometry export, a test's privilege) to a random point of the screen."""

    name = "random_probe"

    def bind_control(self, control) -> None:
        self.control = control

    def act(self, obs) -> str:
        if self.rng.random() < 0.5:
            return super().act(obs)
        x, y, w, h = self.control.geometry()["geometry"]["probe_footprint"]
        r = self.rng
        return json.dumps({"action": "drag", "x": int(x + w // 2), "y": int(y + h // 2),
                           "to_x": int(r.integers(obs.width)), "to_y": int(r.integers(obs.height))})


@pytest.mark.soak
def test_many_random_us_actions_with_probe_drags_do_not_crash_or_hang(display, tmp_path):
    card = with_budget({c.id: c for c in US_CARDS}["us_kidney_long_axis_search_v1"], SOAK_ACTIONS)
    v = run_episode(EpisodeSpec(card, "dev", 0), RandomAgent(base_seed=13), tmp_path / "any", display)
    assert v.termination == "budget" and v.outcome != "INVALID", v.reason
    assert v.steps == SOAK_ACTIONS
    n_drags = max(100, SOAK_ACTIONS * 3 // 10)  # 300 in `make sweep`
    drags = run_episode(EpisodeSpec(with_budget(card, n_drags), "dev", 1), _ProbeMapDrags(base_seed=17),
                        tmp_path / "drags", display)
    assert drags.termination == "budget" and drags.outcome != "INVALID", drags.reason
    assert drags.steps == n_drags
    st = json.loads((episode_dir(tmp_path / "drags", "random_probe", card.id, "dev", 1) / "state.json").read_text())
    assert sum(e["event"] == "probe_moved" for e in st["events"]) >= n_drags // 15  # the drags did move the probe
