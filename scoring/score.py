"""Score one episode: (state dump, task card, subject id) -> OracleResult. Scorer faults -> INVALID."""
from __future__ import annotations

import traceback

from runner.taskcard import TaskCard
from scoring.oracles import get_oracle
from scoring.verdict import OracleResult


def score_episode(state: dict, card: TaskCard, subject_id: str) -> OracleResult:
    """Run the card's oracle against the subject's hidden oracle bundle; never raises."""
    try:
        from scoring.subject_oracle import load_oracle

        oracle_fn = get_oracle(card.oracle)
        return oracle_fn(state, load_oracle(subject_id), card)
    except Exception as exc:  # noqa: BLE001 - a scorer bug is a fault, not an agent failure
        return OracleResult(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0,
                            reason=f"scorer fault: {exc!r}",
                            details={"trace": traceback.format_exc(limit=6)})
