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
