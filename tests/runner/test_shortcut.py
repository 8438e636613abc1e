"""The shortcut policies' machinery on hand-made inputs (no subjects, no display)."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from runner.agents.reference.common import Op
from runner.headless.drive import HeadlessRun
from tasks.card import all_cards
from runner.headless.shortcut import (SAMPLE_PAIRS, Answer, StaleMedians, constant_answer_script, is_judgement,
                                      load_cohort_medians, spread, typed_medians)


def test_sample_pairs_cover_both_sexes_and_every_seed() -> None:
    subjects = [int(s[1:]) for s, _ in SAMPLE_PAIRS]
    assert len(set(subjects)) == len(SAMPLE_PAIRS) == 16
    assert Counter(i % 2 for i in subjects) == {0: 8, 1: 8}  # even ids are F, odd M (rendering/subjects/params.py)
    seeds = Counter(k for _, k in SAMPLE_PAIRS)
    assert set(seeds) == {0, 1, 2} and max(seeds.values()) - min(seeds.values()) <= 1


@pytest.mark.parametrize("n", [2, 3])
def test_every_answer_of_a_cohort_balanced_choice_is_sampled_about_equally(n: int) -> None:
    """A 2- or 3-way cohort-balanced choice (option (subject index + seed) mod n) takes each option in the
    sample within one episode of an even share; the earlier sample gave a 3-way choice one answer 15 times."""
    from consoles.mr.model import cohort_balanced_choice

    got = Counter(cohort_balanced_choice("any", s, k, "any", list(range(n))) for s, k in SAMPLE_PAIRS)
    assert set(got) == set(range(n)) and max(got.values()) - min(got.values()) <= 1, got


def test_numeric_spread_is_p5_to_p95_over_tolerance() -> None:
    eps = {(f"s{i:02d}", 0): {"start": Answer(float(i), 2.0)} for i in range(1, 102)}
    (part,) = spread(eps)
    assert part.spread == pytest.approx(90.0)  # p95 - p5 of 1..101
    assert part.ratio == pytest.approx(45.0)


def test_an_episode_dependent_tolerance_is_taken_at_its_median() -> None:
    eps = {(f"s{i:02d}", 0): {"delay": Answer(float(i), tol)} for i, tol in enumerate((1.0, 9.0, 2.0, 2.0, 50.0))}
    (part,) = spread(eps)
    assert part.tolerance == 2.0


def test_a_constant_answer_has_no_spread() -> None:
    eps = {(f"s{i:02d}", 0): {"depth": Answer(120.0, 5.0)} for i in range(10)}
    assert spread(eps)[0].ratio == 0.0


def test_categorical_spread_counts_the_majority_and_one_answer_subjects() -> None:
    eps = {("s01", 0): {"go": Answer("yes")}, ("s01", 1): {"go": Answer("yes")},
           ("s02", 0): {"go": Answer("yes")}, ("s02", 1): {"go": Answer("no")}}
    (part,) = spread(eps, dev={"go": Answer("yes")})
    assert part.majority_share == 0.75 and part.one_answer_subjects == 1 and part.dev_is_majority
    (balanced,) = spread({**eps, ("s01", 1): {"go": Answer("no")}}, dev={"go": Answer("yes")})
    assert balanced.majority_share == 0.5 and not balanced.dev_is_majority  # a tie is no majority


def test_is_judgement_only_when_every_part_is_a_choice() -> None:
    assert is_judgement(None, [{"a": Answer("x")}, {"a": Answer("y")}])
    assert not is_judgement(None, [{"a": Answer("x"), "b": Answer(1.0, 1.0)}])
    assert not is_judgement(None, [])


def _run(*ops: Op) -> HeadlessRun:
    return HeadlessRun(verdict=None, state={}, ops=list(ops))


def test_constant_answer_types_the_median_of_each_slot_and_keeps_other_ops() -> None:
    dev = [Op("load_protocol", {}), Op("set_range", {"edge": "start", "value": 10.0}),
           Op("set_range", {"edge": "end", "value": 300.0}), Op("scan", {})]
    runs = [_run(Op("set_range", {"edge": "start", "value": v}), Op("set_range", {"edge": "end", "value": e}))
            for v, e in ((0.0, 250.0), (40.0, 260.0), (100.0, 400.0))]
    medians = typed_medians(runs)
    assert medians == {"set_range.edge=end|value": 260.0, "set_range.edge=start|value": 40.0}
    out = constant_answer_script(dev, medians)
    assert [o.name for o in out] == [o.name for o in dev]
    assert out[1].args == {"edge": "start", "value": 40.0} and out[2].args == {"edge": "end", "value": 260.0}


def test_constant_answer_is_none_for_a_script_that_types_nothing() -> None:
    assert constant_answer_script([Op("load_protocol", {}), Op("scan", {})], typed_medians([_run(Op("scan", {}))])) is None


def test_shipped_cohort_medians_are_refused_when_missing_or_made_from_another_card(tmp_path) -> None:
    """A card whose medians are absent, or were made from another card version or generator, fails with the
    command that makes them again; a current entry loads."""
    from rendering.subjects import GENERATOR_VERSION
    from tasks.card import load_card

    card = load_card("ct_lung_coverage_isocenter")
    path = tmp_path / "cohort_medians.json"
    with pytest.raises(StaleMedians, match="is missing: run `medimageos tasks medians --write`"):
        load_cohort_medians(card, path)
    path.write_text(json.dumps({}))
    with pytest.raises(StaleMedians, match="no entry for ct_lung_coverage_isocenter"):
        load_cohort_medians(card, path)
    from runner.headless.shortcut import _medians_stamp

    entry = {**_medians_stamp(card), "medians": {"set_range.edge=start|value": 1}}
    assert entry["generator"] == GENERATOR_VERSION
    path.write_text(json.dumps({card.id: {**entry, "card_version": "0.0.1"}}))
    with pytest.raises(StaleMedians, match="made from .*0.0.1"):
        load_cohort_medians(card, path)
    path.write_text(json.dumps({card.id: {**entry, "card_inputs": "0" * 16}}))  # perturbations edited, same version
    with pytest.raises(StaleMedians, match="card_inputs"):
        load_cohort_medians(card, path)
    path.write_text(json.dumps({card.id: entry}))
    assert load_cohort_medians(card, path) == {"set_range.edge=start|value": 1.0}


@pytest.mark.parametrize("card", [c for c in all_cards() if c.level >= 2], ids=lambda c: c.id)
def test_every_detector_card_has_current_cohort_medians(card) -> None:
    """The shipped file holds every L2+ card, made from its current version and generator, with finite medians
    (tests/test_shortcuts.py checks they cover every number dev's reference types, from the run it has)."""
    import math

    medians = load_cohort_medians(card)
    assert all(math.isfinite(v) for v in medians.values()), medians


def test_spread_command_names_a_selection_without_l2_tasks(capsys) -> None:
    """`tasks spread` over L0-L1 cards only (which have no answer to spread) says so and exits 2."""
    from runner.cli import main

    assert main(["tasks", "spread", "--tasks", "L0_physio_trigger,L2a_skip_row", "--workers", "1"]) == 2
    assert "no task at L2 or above" in capsys.readouterr().err


def test_spread_command_replays_on_every_episode_when_asked(tmp_path, capsys, monkeypatch) -> None:
    """`tasks spread --replay-all` also counts the two screen-blind policies over every episode of the table,
    prints them as two more columns and keeps the rows as JSON; dev's own script passes on dev itself."""
    import json

    import runner.cli_spread
    from runner.cli import main

    # a two-pair shortcut sample keeps this a test of the command, not of the 16-pair detector (the card's
    # own detector test runs that); the worker process is forked, so it sees the patch
    monkeypatch.setattr(runner.cli_spread, "SAMPLE_PAIRS", (("s02", 1), ("s05", 2)))
    out = tmp_path / "rows.json"
    main(["tasks", "spread", "--tasks", "ct_lung_coverage_isocenter", "--subjects", "dev,s01", "--seeds", "0",
          "--workers", "1", "--replay-all", "--json-out", str(out)])
    table = capsys.readouterr().out
    assert "fixed script, all 2 | constant, all 2" in table
    (row,) = json.loads(out.read_text())
    assert row["episodes"] == 2 and row["sample"] == 2
    # dev seed 0 is in the table: its own recorded script passes there, so at least one of the two passes
    assert 1 <= row["fixed_script_passes_all"] <= 2
    assert row["constant_answer_passes_all"] is not None
