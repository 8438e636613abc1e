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
  oracle's tolerance for it (docs/validity.md's table is the same figure over all 30 subjects x 3 seeds,
  from `medimageos tasks spread`);
- and, so that the detector cannot pass by a replay that never works: the fixed script replayed on dev,
  seed 0 itself passes.

Each card's checks are three tests (the answer's spread, in `make sweep`; the fixed script and the constant
answer, in `make test`), so no one
test plays all 49 episodes of a card (the heaviest card took 114 s as one test on a loaded 2-core machine).
They share one module-scoped fixture per card, so the three run one after another (card-major order) and
reuse the card's reference runs and, through rendering.memo, the images its episodes form.
"""
from __future__ import annotations

import pytest

from runner.headless.drive import HeadlessRun
from runner.headless.shortcut import (DEV, SAMPLE_PAIRS, StaleMedians, answers, constant_answer_script, is_judgement,
                                      load_cohort_medians, max_constant_pass_rate, max_fixed_pass_rate, reference_run,
                                      replay, spread, typed_medians)
from rendering import memo
from tasks.card import TaskCard, all_cards

MIN_SPREAD_RATIO = 2.0
# Cards that do not meet the bounds (none since the ultrasound optimisation's 2.0.0): each would be an expected
# failure with its measured reason, strict, so a card that comes to meet its bounds fails here until it is
# taken off this list. A new card that falls short goes here, with its figures, rather than being skipped.
KNOWN_SHORTFALLS: dict[str, str] = {}
CARDS = [pytest.param(c, id=c.id, marks=pytest.mark.xfail(strict=True, reason=KNOWN_SHORTFALLS[c.id]))
         if c.id in KNOWN_SHORTFALLS else pytest.param(c, id=c.id) for c in all_cards() if c.level >= 2]


class CardEpisodes:
    """One card's reference runs on dev and on the sample, formed on first use and kept for its three tests."""

    def __init__(self, card: TaskCard) -> None:
        self.card = card
        self._dev: HeadlessRun | None = None
        self._sample: dict[tuple[str, int], HeadlessRun] | None = None

    @property
    def dev(self) -> HeadlessRun:
        if self._dev is None:
            self._dev = reference_run(self.card, *DEV)
        return self._dev

    @property
    def sample(self) -> dict[tuple[str, int], HeadlessRun]:
        if self._sample is None:
            self._sample = {p: reference_run(self.card, *p) for p in SAMPLE_PAIRS}
        return self._sample

    def judgement(self) -> bool:
        """Whether the card is a choice, from dev's answer (test_the_answer_moves checks the sample agrees)."""
        return is_judgement(self.card, [answers(self.card, self.dev)])

    def passes(self, ops) -> list[tuple[str, int]]:
        return [p for p in SAMPLE_PAIRS if replay(self.card, p[0], p[1], ops).outcome == "PASS"]


@pytest.fixture(scope="module", params=CARDS)
def episodes(request, subject_cache):
    """Module scope: pytest orders the tests card by card, and the card's images are formed once."""
    with memo.enabled():
        yield CardEpisodes(request.param)


def _pairs(xs):
    return ", ".join(f"{s}/{k}" for s, k in xs)


# 16 reference runs per card, the detector's dearest part (about 60 % of its time): in `make sweep`, beside the
# full-cohort sweep; `medimageos tasks spread` gives the same figure over all 90 cohort episodes.
@pytest.mark.cohort_sweep
def test_the_answer_moves_with_subject_and_seed(episodes: CardEpisodes) -> None:
    card = episodes.card
    per_episode = {p: answers(card, r) for p, r in episodes.sample.items()}
    judgement = is_judgement(card, list(per_episode.values()))
    assert judgement == episodes.judgement(), "dev's answer and the sample's disagree on whether this is a choice"
    if card.level >= 3 and not judgement:
        thin = [f"{p.name}: spread {p.spread:.1f} vs tolerance {p.tolerance:g} ({p.ratio:.1f}x)"
                for p in spread(per_episode) if p.ratio is not None and p.ratio < MIN_SPREAD_RATIO]
        assert not thin, "answer parts that barely move over the sample: " + "; ".join(thin)
    if judgement:
        for p in spread(per_episode, answers(card, episodes.dev)):
            assert not p.dev_is_majority, f"{p.name}: dev's answer is the sample's majority"


def test_the_fixed_script_passes_on_dev_and_rarely_elsewhere(episodes: CardEpisodes) -> None:
    card, dev_run = episodes.card, episodes.dev
    assert dev_run.verdict.outcome == "PASS", f"the reference fails on dev: {dev_run.verdict.reason}"
    assert replay(card, *DEV, dev_run.ops).outcome == "PASS", \
        "the replayed dev script fails on dev itself: the detector's replay is not faithful"
    passes = episodes.passes(dev_run.ops)
    limit = max_fixed_pass_rate(card, episodes.judgement())
    assert len(passes) / len(SAMPLE_PAIRS) <= limit + 1e-9, (
        f"dev's replayed script passes {len(passes)}/{len(SAMPLE_PAIRS)} sample episodes (limit {limit:.0%}): "
        f"{_pairs(passes)}")


def test_the_constant_answer_rarely_passes(episodes: CardEpisodes) -> None:
    card, dev_ops = episodes.card, episodes.dev.ops
    try:
        medians = load_cohort_medians(card)
    except StaleMedians as exc:
        pytest.fail(str(exc), pytrace=False)
    typed = set(typed_medians([episodes.dev]))
    assert typed <= set(medians), f"no cohort median for what dev's reference types: {sorted(typed - set(medians))}"
    if not medians:  # no typed number anywhere in the cohort: the constant answer is the fixed script
        return
    # where dev's episode types none of the card's typed values (a judgement whose dev seed needs no typed
    # remedy), the constant answer is dev's script unchanged, held to the constant answer's limit
    const_ops = constant_answer_script(dev_ops, medians) or dev_ops
    passes = episodes.passes(const_ops)
    limit = max_constant_pass_rate(card, episodes.judgement())
    assert len(passes) / len(SAMPLE_PAIRS) <= limit + 1e-9, (
        f"typing the cohort medians {medians} passes {len(passes)}/{len(SAMPLE_PAIRS)} sample episodes: "
        f"{_pairs(passes)}")
