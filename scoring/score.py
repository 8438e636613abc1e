"""Score one episode: (state dump, task card, subject id) -> OracleResult. Scorer faults -> INVALID."""
from __future__ import annotations

import traceback

from tasks.card import TaskCard
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult


def score_episode(state: dict, card: TaskCard, subject_id: str) -> OracleResult:
    """Run the card's oracle against the subject's hidden oracle bundle; never raises."""
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
        return result
    except Exception as exc:  # noqa: BLE001 - a scorer bug is a fault, not an agent failure
        return OracleResult(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0,
                            reason=f"scorer fault: {exc!r}",
                            details={"trace": traceback.format_exc(limit=6)})
