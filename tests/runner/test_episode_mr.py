"""MR tasks end to end on a real Xvfb: the real MR console, real XTEST input, real screenshots.

That the reference passes every card in the GUI on dev is checked in tests/test_conformance.py; here:
the reference on a spread of cohort subjects and seeds, byte-identical episodes in one process and
across two workers, the no-op and random agents never passing, and 1,000 random actions without a
crash or hang.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from runner.agents import make_agent
from runner.agents.reference import ReferenceAgent
from runner.agents.simple import RandomAgent
from runner.episode import EpisodeSpec, run_episode
from runner.parallel import run_parallel
from runner.run import Progress, run_sequential
from tasks.card import select_cards
from tests.conftest import SOAK_ACTIONS
from tests.runner.baselines import assert_noop_never_passes, assert_random_never_passes, sampled, with_budget
from tests.runner.test_parallel import _episode_bytes

pytestmark = pytest.mark.display

MR_CARDS = select_cards("mr")
CONSOLE_CARDS = [c for c in MR_CARDS if c.level <= 2]  # issue 10's 15 tasks: no geometry planning
COHORT = [f"s{i:02d}" for i in range(1, 31)]
# Queue edits by menu and typing, drags from the series list, a running row, a clinical question.
IDENTITY_TASKS = ("mr_rename_sequence_4ch_v1", "mr_drag_coronal_to_viewport2_v1", "L2a_queue_mutation",
                  "L1_idle_or_scanning")


def test_the_mr_console_tasks_are_fifteen_of_levels_0_to_2():
    assert len(CONSOLE_CARDS) == 15
    assert [sum(c.level == lv for c in CONSOLE_CARDS) for lv in (0, 1, 2)] == [5, 5, 5]


COHORT_SPECS = [EpisodeSpec(c, COHORT[(7 * i + 3) % 30], i % 3) for i, c in enumerate(MR_CARDS)]
# Known GUI defects of the reference: none now. (L4_heart_shim_box s05/1 was one, a strict xfail on its
# spec: a one-pixel drag of the phase face grip changed the box by 3.3 mm, more than the solver's 3 mm size
# window, so it alternated between two sizes; the solver now weighs nearby release points on every display
# and settles what whole pixels cannot reduce: runner/agents/reference/mr.py.)
_COHORT_PARAMS = sampled(COHORT_SPECS, lambda s: f"{s.card.id}-{s.subject}-{s.seed}")


@pytest.mark.parametrize("spec", _COHORT_PARAMS)
def test_reference_passes_every_mr_card_in_the_gui_on_cohort_subjects(display, console_keeper, tmp_path, spec):
    """Each card once, on a cohort subject and seed spread over s01..s30 and seeds 0-2 (one test per
    card, every third card in `make test` and the rest in `make sweep`; consoles reset in place between
    episodes, as a worker runs them)."""
    v = run_episode(spec, ReferenceAgent(), tmp_path, display, keeper=console_keeper)
    assert (v.outcome, v.termination, v.sr) == ("PASS", "done", 1.0), (spec.card.id, spec.subject, spec.seed,
                                                                       v.reason)


def test_mr_episodes_are_byte_identical_in_one_process_and_across_two_workers(tmp_path):
    cards = {c.id: c for c in MR_CARDS}
    specs = [EpisodeSpec(cards[t], "dev", k % 2) for k, t in enumerate(IDENTITY_TASKS)]
    factory = functools.partial(make_agent, "reference")
    one = run_sequential(specs, factory, tmp_path / "one", "reference")
    two = run_parallel(specs, factory, tmp_path / "two", "reference", workers=2,
                       progress=Progress(len(specs), out=open(os.devnull, "w")))
    assert [v.outcome for v in one] == ["PASS"] * len(specs), [v.reason for v in one]
    assert [v.outcome for v in two] == ["PASS"] * len(specs), [v.reason for v in two]
    for s in specs:
        rel = Path("reference") / s.card.id / s.subject / f"seed{s.seed}"
        a, b = _episode_bytes(tmp_path / "one" / rel), _episode_bytes(tmp_path / "two" / rel)
        assert a.keys() == b.keys() and len(a) >= 4
        assert [n for n in a if a[n] != b[n]] == [], s.card.id


@pytest.mark.parametrize("card", MR_CARDS, ids=[c.id for c in MR_CARDS])
def test_noop_agent_never_passes_an_mr_card(display, console_keeper, tmp_path, card):
    # every MR card: planning and mapping ones too
    assert_noop_never_passes(card, display, tmp_path, keeper=console_keeper)


@pytest.mark.parametrize("card", sampled(MR_CARDS, lambda c: c.id))
def test_random_agent_never_passes_an_mr_card(display, console_keeper, tmp_path, card):
    assert_random_never_passes(card, display, tmp_path, random_seed=3, keeper=console_keeper)


@pytest.mark.parametrize("task", ["L2a_queue_mutation", "mr_t1t2_mapping_staged"])
@pytest.mark.soak
def test_many_random_mr_actions_do_not_crash_or_hang(display, tmp_path, task):
    """The queue, library and series list; and a mapping exam (maps, ROI tool, planning grips)."""
    card = with_budget({c.id: c for c in MR_CARDS}[task], SOAK_ACTIONS)
    v = run_episode(EpisodeSpec(card, "dev", 0), RandomAgent(base_seed=11), tmp_path, display)
    assert v.termination == "budget", v.reason
    assert v.outcome != "INVALID", v.reason
    assert v.steps == SOAK_ACTIONS
