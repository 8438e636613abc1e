"""Every task card conforms: it validates, has a registry entry whose oracle stages are the card's
workflow_stages, the untouched start never passes, and the reference passes headless on the cohort and in
the GUI on dev.

Adding a task is one card, one registry entry (scoring/registry/<modality>.py, which also holds the
solver's inputs) and, only for a new kind of workflow, a branch in the reference solver; this file then
checks it with no edits. Lanes: the fast lane runs a spread of cohort subjects and seeds per card; the
`cohort_sweep` tests run every subject s01..s30 and seed 0-2 (the Makefile runs them after the fast lane);
the GUI test is in the display lane.
"""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import pytest

from tasks.card import TaskCard, all_cards, load_card_file
from scoring.registry import RegistryError, entry_for_card

CARDS = list(all_cards())
COHORT = [f"s{i:02d}" for i in range(1, 31)]
SEEDS = (0, 1, 2)
# Fast lane: three (subject, seed) pairs per card, spread over the cohort and covering every seed.
FAST_PAIRS = (("s01", 0), ("s16", 1), ("s30", 2))
SWEEP_PROCESSES = 2  # CI has 2 cores
# The sweep's fixture runs every card x 90 episodes inside the first sweep test, over the suite's
# 300 s default per test (49 cards: several minutes on 2 cores); a hang still ends it.
SWEEP_TIMEOUT_S = 1800


def by_id(cards: list[TaskCard]):
    return pytest.mark.parametrize("card", cards, ids=[c.id for c in cards])


def registry_entry(card: TaskCard):
    """The card's registry entry, or a test failure that names what is missing."""
    try:
        return entry_for_card(card)
    except RegistryError as exc:
        pytest.fail(str(exc), pytrace=False)


@by_id(CARDS)
def test_card_validates(card: TaskCard) -> None:
    assert load_card_file(card.path) == card


@by_id(CARDS)
def test_registry_entry_exists_and_names_the_cards_oracle(card: TaskCard) -> None:
    assert registry_entry(card).family == card.oracle


@by_id(CARDS)
def test_oracle_stage_names_are_the_cards_workflow_stages(card: TaskCard) -> None:
    assert registry_entry(card).stage_names() == card.workflow_stages


def test_a_card_without_a_registry_entry_fails_naming_the_task_and_the_file() -> None:
    toy = CARDS[0].model_copy(update={"id": "ct_toy_unregistered"})
    with pytest.raises(RegistryError) as exc:
        entry_for_card(toy)
    msg = str(exc.value)
    assert "ct_toy_unregistered" in msg and f"scoring/registry/{toy.modality}.py" in msg


def _episode(card_id: str, subject: str, seed: int) -> tuple[str, str, int, dict, dict]:
    """Headless reference run and start-state score of one episode (run in worker processes)."""
    from runner.headless import run_reference, score_initial
    from tasks.card import load_card

    card = load_card(card_id)
    ref = run_reference(card, subject, seed).verdict
    noop = score_initial(card, subject, seed)
    return card_id, subject, seed, ref.model_dump(), noop.model_dump()


def _problems(card: TaskCard, results) -> list[str]:
    out = []
    for _, subject, seed, ref, noop in results:
        where = f"{card.id} {subject} seed {seed}"
        if ref["outcome"] != "PASS":
            out.append(f"{where}: reference {ref['outcome']}: {ref['reason']}")
        elif list(ref["stages"]) != card.workflow_stages:
            out.append(f"{where}: verdict stages {list(ref['stages'])} != card {card.workflow_stages}")
        if noop["outcome"] == "PASS":
            out.append(f"{where}: the untouched start state passes")
    return out


@by_id(CARDS)
@pytest.mark.parametrize("subject,seed", FAST_PAIRS)
def test_reference_passes_headless_and_noop_does_not(card: TaskCard, subject: str, seed: int,
                                                     subject_cache) -> None:
    registry_entry(card)
    assert _problems(card, [_episode(card.id, subject, seed)]) == []


def _subject_sweep(subject: str) -> list[tuple[str, str, int, dict, dict]]:
    """Every card and seed on one subject, in one worker (the subject's bundles are loaded once)."""
    return [_episode(c.id, subject, seed) for c in CARDS if _has_entry(c) for seed in SEEDS]


def _has_entry(card: TaskCard) -> bool:
    try:
        entry_for_card(card)
    except RegistryError:
        return False  # the card's own tests fail with the registry's message
    return True


@pytest.fixture(scope="module")
def cohort_sweep(subject_cache) -> dict[str, list]:
    """Headless reference and start-state verdicts of every card on s01..s30 x seeds 0-2, by card id."""
    by_card: dict[str, list] = {c.id: [] for c in CARDS}
    with ProcessPoolExecutor(SWEEP_PROCESSES) as ex:
        for results in ex.map(_subject_sweep, COHORT):
            for r in results:
                by_card[r[0]].append(r)
    return by_card


@pytest.mark.cohort_sweep
@pytest.mark.timeout(SWEEP_TIMEOUT_S)
@by_id(CARDS)
def test_reference_passes_headless_on_every_cohort_subject_and_seed(card: TaskCard, cohort_sweep) -> None:
    registry_entry(card)
    results = cohort_sweep[card.id]
    assert sorted((r[1], r[2]) for r in results) == [(s, seed) for s in COHORT for seed in SEEDS]
    problems = _problems(card, results)
    assert problems == [], "\n".join(problems)


@pytest.mark.display
@by_id(CARDS)
def test_reference_passes_in_the_gui_on_dev(card: TaskCard, display, tmp_path) -> None:
    from runner.agents.reference import ReferenceAgent
    from runner.episode import EpisodeSpec, run_episode
    from runner.results import episode_dir

    registry_entry(card)
    v = run_episode(EpisodeSpec(card, "dev", 0), ReferenceAgent(), tmp_path, display)
    assert v.outcome == "PASS", (v.reason, v.details)
    assert v.sr == 1.0 and v.pr == 1.0 and v.aq >= 90 and v.termination == "done"
    assert list(v.stages) == card.workflow_stages
    d = episode_dir(tmp_path, "reference", card.id, "dev", 0)
    assert (d / "step_000.png").exists() and (d / "final.png").exists()
