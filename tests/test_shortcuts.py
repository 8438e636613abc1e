"""The shortcut detector: a screen-blind agent must not pass a task on other subjects and seeds (issue 21).

For every card at L2 and above, on the fixed sample of cohort (subject, seed) pairs
(runner.headless.shortcut.SAMPLE_PAIRS), headless:

- the fixed script, the reference's operations recorded on the public ``dev`` subject, seed 0, replayed
  verbatim, passes at most 10 % of the pairs (L3-L6), at most 50 % for a judgement (every answer part a
  choice): a coin's share;
- the constant-answer script (the cohort median of every typed number, over s01..s30 x seeds 0-2, from
  tasks/cohort_medians.json: `medimageos tasks medians`) passes at most 10 % (a judgement whose remedy is
  typed, 50 %);
- every numeric part of an L3-L6 task's correct answer moves over the sample by at least twice the
  oracle's tolerance for it (the README's table is the same figure over all 30 subjects x 3 seeds,
  from `medimageos tasks spread`);
- and, so that the detector cannot pass by a replay that never works: the fixed script replayed on dev,
  seed 0 itself passes.
"""
from __future__ import annotations

import pytest

from runner.headless.shortcut import (DEV, SAMPLE_PAIRS, StaleMedians, answers, is_judgement, load_cohort_medians,
                                      max_constant_pass_rate, max_fixed_pass_rate, reference_run, replay,
                                      shortcut_result, spread)
from rendering import memo
from tasks.card import TaskCard, all_cards

MIN_SPREAD_RATIO = 2.0
# Cards that do not meet the bounds (none since the ultrasound optimisation's 2.0.0): each would be an expected
# failure with its measured reason, strict, so a card that comes to meet its bounds fails here until it is
# taken off this list. A new card that falls short goes here, with its figures, rather than being skipped.
KNOWN_SHORTFALLS: dict[str, str] = {}
CARDS = [pytest.param(c, id=c.id, marks=pytest.mark.xfail(strict=True, reason=KNOWN_SHORTFALLS[c.id]))
         if c.id in KNOWN_SHORTFALLS else pytest.param(c, id=c.id) for c in all_cards() if c.level >= 2]


def _pairs(xs):
    return ", ".join(f"{s}/{k}" for s, k in xs)


@pytest.mark.parametrize("card", CARDS)
def test_a_screen_blind_agent_does_not_pass(card: TaskCard, subject_cache) -> None:
    with memo.enabled():  # the three agents of an episode start from the same images: form them once
        _check_card(card)


def _check_card(card: TaskCard) -> None:
    try:
        medians = load_cohort_medians(card)
    except StaleMedians as exc:
        pytest.fail(str(exc), pytrace=False)
    dev_run = reference_run(card, *DEV)
    assert dev_run.verdict.outcome == "PASS", f"the reference fails on dev: {dev_run.verdict.reason}"
    assert replay(card, *DEV, dev_run.ops).outcome == "PASS", \
        "the replayed dev script fails on dev itself: the detector's replay is not faithful"
    runs = {p: reference_run(card, *p) for p in SAMPLE_PAIRS}
    per_episode = {p: answers(card, r) for p, r in runs.items()}
    judgement = is_judgement(card, list(per_episode.values()))
    result = shortcut_result(card, SAMPLE_PAIRS, runs, dev_run, medians)

    limit = max_fixed_pass_rate(card, judgement)
    assert result.fixed_rate() <= limit + 1e-9, (
        f"dev's replayed script passes {len(result.fixed_passes)}/{result.pairs} sample episodes "
        f"(limit {limit:.0%}): {_pairs(result.fixed_passes)}")
    if result.constant_passes is not None:
        assert result.constant_rate() <= max_constant_pass_rate(card, judgement) + 1e-9, (
            f"typing the cohort medians {medians} passes {len(result.constant_passes)}/{result.pairs} sample episodes: "
            f"{_pairs(result.constant_passes)}")
    if card.level >= 3 and not judgement:
        thin = [f"{p.name}: spread {p.spread:.1f} vs tolerance {p.tolerance:g} ({p.ratio:.1f}x)"
                for p in spread(per_episode) if p.ratio is not None and p.ratio < MIN_SPREAD_RATIO]
        assert not thin, "answer parts that barely move over the sample: " + "; ".join(thin)
    if judgement:
        dev_answer = answers(card, dev_run)
        for p in spread(per_episode, dev_answer):
            assert not p.dev_is_majority, f"{p.name}: dev's answer is the sample's majority"
