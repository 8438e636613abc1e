"""score_episode: oracle faults and subject-version mismatches become INVALID, never FAIL."""
from __future__ import annotations

from tasks.card import load_card
from scoring.score import score_episode
from scoring.subject_oracle import load_oracle


def test_state_from_another_subject_version_is_invalid():
    card = load_card("ct_ui_smoke_routine")
    v = load_oracle("dev").meta["version"]
    state = {"provenance": {"subject_version": v + "-old"}, "events": [], "series": []}
    r = score_episode(state, card, "dev")
    assert r.outcome == "INVALID" and "re-run" in r.reason


def test_scorer_fault_is_invalid_with_reason():
    card = load_card("ct_ui_smoke_routine")
    r = score_episode({"events": "not a list", "series": [{"bogus": 1}]}, card, "dev")
    assert r.outcome == "INVALID" and r.reason.startswith("scorer fault")


def test_a_passing_end_state_needs_the_agents_done():
    """The reference's end state passes when the agent said done; ended by the step budget it is
    PARTIAL with SR 0 (PR and AQ kept)."""
    from runner.headless import run_reference

    card = load_card("mr_show_shim_box_v1")
    state = run_reference(card, "dev", 0).state
    done = score_episode(state, card, "dev", "done")
    budget = score_episode(state, card, "dev", "budget")
    assert done.outcome == "PASS" and done.sr == 1.0
    assert budget.outcome == "PARTIAL" and budget.sr == 0.0 and "never said done" in budget.reason
    assert (budget.pr, budget.aq) == (done.pr, done.aq)
