"""What the episode tests of every modality share: a card with another step budget, the checks that the
no-op and random agents never pass a card (never INVALID either: the console survives them), and the
per-card sample `make test` plays in the GUI."""
from __future__ import annotations

import pytest

from runner.agents.simple import NoopAgent, RandomAgent

# `make test` plays every SWEEP_EVERY-th card of a per-card GUI list (spread over the levels, as cards are
# listed by level); the others carry the cohort_sweep mark and run in `make sweep`. Every card still meets
# the GUI reference on dev (tests/test_conformance.py) and the no-op agent in `make test`.
SWEEP_EVERY = 3


def sampled(items, ids, every: int = SWEEP_EVERY) -> list:
    """pytest params of `items` (ids from `ids`): every `every`-th one in `make test`, the rest in `make sweep`."""
    return [pytest.param(x, id=ids(x), marks=[] if i % every == 0 else [pytest.mark.cohort_sweep])
            for i, x in enumerate(items)]
from runner.episode import EpisodeSpec, run_episode


def with_budget(card, steps: int):
    """A copy of `card` whose step budget is `steps`."""
    return card.model_copy(update={"budgets": card.budgets.model_copy(update={"max_steps": steps})})


def assert_noop_never_passes(card, display, out, keeper=None) -> None:
    """The no-op agent (3 steps) on dev, seed 1: SR 0, never INVALID. Called with one card per test (each
    card its own timeout) and the worker's console keeper (reset in place, as a runner worker does)."""
    noop = run_episode(EpisodeSpec(with_budget(card, 3), "dev", 1), NoopAgent(), out, display, keeper=keeper)
    assert noop.outcome in ("FAIL", "PARTIAL") and noop.sr == 0.0, (card.id, noop.reason)


def assert_random_never_passes(card, display, out, random_seed: int, keeper=None) -> None:
    """The random agent (40 allowed actions) on dev, seed 1: SR 0, and never INVALID (the console survives)."""
    rnd = run_episode(EpisodeSpec(with_budget(card, 40), "dev", 1), RandomAgent(base_seed=random_seed), out,
                      display, keeper=keeper)
    assert rnd.outcome != "PASS" and rnd.sr == 0.0, (card.id, rnd.reason)
    assert rnd.outcome != "INVALID", (card.id, rnd.reason)
