"""Score one episode: (state dump, task card, subject id) -> OracleResult. Scorer faults -> INVALID."""
from __future__ import annotations

import traceback

from tasks.card import TaskCard
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult


def require_done(result: OracleResult, termination: str | None) -> OracleResult:
    """A PASS needs the agent to have said done: every goal ends "Say done when ...". An episode
    that reached a passing end state but ran out of steps (termination "budget") is PARTIAL, SR 0;
    PR and AQ are kept. (Without this, an agent clicking at random passed one-click tasks by luck.)"""
    if result.outcome != "PASS" or termination in (None, "done"):
        return result
    return result.model_copy(update={
        "outcome": "PARTIAL", "sr": 0.0,
        "reason": f"the end state meets the goal, but the agent never said done (ended by {termination})",
        "details": {**result.details, "passing_end_state_without_done": True}})


def score_episode(state: dict, card: TaskCard, subject_id: str, termination: str | None = None) -> OracleResult:
    """Run the card's oracle against the subject's hidden oracle bundle; never raises. With the
    episode's `termination`, a PASS without the agent's done becomes PARTIAL (require_done)."""
    try:
        from scoring.subject_oracle import load_oracle

        oracle_fn = get_oracle(card.oracle)
        oracle = load_oracle(subject_id)
        ran_on = state.get("provenance", {}).get("subject_version")
        now = oracle.meta.get("version")
        if ran_on is not None and ran_on != now:
            return OracleResult(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0,
                                reason=f"subject {subject_id} was version {ran_on} when the episode ran but "
                                       f"its oracle is now version {now}; re-run the episode instead of re-scoring")
        result = oracle_fn(state, oracle, card)
        result.details.setdefault("subject_version", now)
        return require_done(result, termination)
    except Exception as exc:  # noqa: BLE001 - a scorer bug is a fault, not an agent failure
        return OracleResult(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0,
                            reason=f"scorer fault: {exc!r}",
                            details={"trace": traceback.format_exc(limit=6)})
