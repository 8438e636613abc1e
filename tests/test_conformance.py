"""Every task card conforms: it validates, has a registry entry whose oracle stages are the card's
workflow_stages, the untouched start never passes, and the reference passes headless on the cohort and in
the GUI on dev.

Adding a task is one card, one registry entry (scoring/registry/<modality>.py, which also holds the
solver's inputs) and, only for a new kind of workflow, a branch in the reference solver; this file then
checks it with no edits. Lanes: the fast lane runs a fixed stratified sample of the cohort sweep (three
pairs per card, every seed on every card, every subject and every (subject, seed) cell over the cards);
the `cohort_sweep` tests run every card on every subject s01..s30 and seed 0-2 (`make sweep`, before a
release; one test per subject); the GUI test is in the display lane.
"""
from __future__ import annotations

import pytest

from tasks.card import TaskCard, all_cards, load_card_file
from scoring.oracles import stage_names
from scoring.registry import RegistryError, entry_for_card

CARDS = list(all_cards())
COHORT = [f"s{i:02d}" for i in range(1, 31)]
SEEDS = (0, 1, 2)
PAIRS_PER_CARD = 3
# `make sweep`: one subject's 49 cards x 3 seeds per test (about 40 s of CPU); above the suite's 120 s
# so a loaded machine does not fail it, and a hang still ends it.
SWEEP_TIMEOUT_S = 600


def stratified_pairs(card_index: int) -> list[tuple[str, int]]:
    """The card's sample of the sweep: pair k = 3 * card_index + j (j = 0, 1, 2) is subject k mod 30 and
    seed (k // 30 + k) mod 3, so each card sees three subjects and all three seeds, the cards together
    see every subject, and the first 30 cards alone every (subject, seed) cell."""
    out = []
    for j in range(PAIRS_PER_CARD):
        k = PAIRS_PER_CARD * card_index + j
        out.append((COHORT[k % len(COHORT)], (k // len(COHORT) + k) % len(SEEDS)))
    return out


SAMPLE = [(c, subject, seed) for i, c in enumerate(CARDS) for subject, seed in stratified_pairs(i)]


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
    assert stage_names(registry_entry(card)) == card.workflow_stages


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


def test_the_sample_covers_every_card_subject_seed_and_cell() -> None:
    assert {c.id for c, _, _ in SAMPLE} == {c.id for c in CARDS}
    assert {s for _, s, _ in SAMPLE} == set(COHORT)
    assert all({seed for _, seed in stratified_pairs(i)} == set(SEEDS) for i in range(len(CARDS)))
    if len(CARDS) * PAIRS_PER_CARD >= len(COHORT) * len(SEEDS):
        assert {(s, seed) for _, s, seed in SAMPLE} == {(s, seed) for s in COHORT for seed in SEEDS}


@pytest.mark.parametrize("card,subject,seed", SAMPLE, ids=[f"{c.id}-{s}-{seed}" for c, s, seed in SAMPLE])
def test_reference_passes_headless_and_noop_does_not(card: TaskCard, subject: str, seed: int,
                                                     subject_cache) -> None:
    registry_entry(card)
    assert _problems(card, [_episode(card.id, subject, seed)]) == []


def _has_entry(card: TaskCard) -> bool:
    try:
        entry_for_card(card)
    except RegistryError:
        return False  # the card's own tests fail with the registry's message
    return True


@pytest.mark.cohort_sweep
@pytest.mark.timeout(SWEEP_TIMEOUT_S)
@pytest.mark.parametrize("subject", COHORT)
def test_reference_passes_headless_on_every_card_and_seed_of_the_subject(subject: str, subject_cache) -> None:
    """The full sweep, one subject per test (its bundles load once in the worker): every card with a
    registry entry, seeds 0-2."""
    from rendering.subjects.runtime import clear_memo

    problems = []
    try:
        for card in CARDS:
            if not _has_entry(card):
                problems.append(f"{card.id}: no registry entry")
                continue
            problems += _problems(card, [_episode(card.id, subject, seed) for seed in SEEDS])
    finally:
        clear_memo()  # a worker goes through 15 subjects: keep one in memory at a time
    assert problems == [], "\n".join(problems)


@pytest.mark.display
@by_id(CARDS)
def test_reference_passes_in_the_gui_on_dev(card: TaskCard, display, console_keeper, tmp_path) -> None:
    from runner.agents.reference import ReferenceAgent
    from runner.episode import EpisodeSpec, run_episode
    from runner.results import episode_dir

    registry_entry(card)
    # the worker's console, reset in place between cards of one modality (as a runner worker does)
    v = run_episode(EpisodeSpec(card, "dev", 0), ReferenceAgent(), tmp_path, display, keeper=console_keeper)
    assert v.outcome == "PASS", (v.reason, v.details)
    assert v.sr == 1.0 and v.pr == 1.0 and v.aq >= 90 and v.termination == "done"
    assert list(v.stages) == card.workflow_stages
    d = episode_dir(tmp_path, "reference", card.id, "dev", 0)
    assert (d / "step_000.png").exists() and (d / "final.png").exists()
