"""What the episode tests of every modality share: a card with another step budget, and the check that
the no-op and random agents never pass a card (never INVALID either: the console survives them)."""
from __future__ import annotations

from runner.agents.simple import NoopAgent, RandomAgent
from runner.episode import EpisodeSpec, run_episode


def with_budget(card, steps: int):
    """A copy of `card` whose step budget is `steps`."""
    return card.model_copy(update={"budgets": card.budgets.model_copy(update={"max_steps": steps})})


def assert_baselines_never_pass(cards, display, out, random_seed: int, keeper=None) -> None:
    """No-op (3 steps) and random (40 steps) agents on dev, seed 1: SR 0 on every card, never INVALID.
    The episode tests call it with one card per test (each card its own timeout) and the worker's
    console keeper (consoles reset in place, as a runner worker does)."""
    for card in cards:
        noop = run_episode(EpisodeSpec(with_budget(card, 3), "dev", 1), NoopAgent(), out, display, keeper=keeper)
        rnd = run_episode(EpisodeSpec(with_budget(card, 40), "dev", 1), RandomAgent(base_seed=random_seed), out,
                          display, keeper=keeper)
        assert noop.outcome in ("FAIL", "PARTIAL") and noop.sr == 0.0, (card.id, noop.reason)
        assert rnd.outcome != "PASS" and rnd.sr == 0.0, (card.id, rnd.reason)
        assert rnd.outcome != "INVALID", (card.id, rnd.reason)
