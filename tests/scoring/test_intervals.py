"""Cluster-bootstrap intervals over subjects (scoring/intervals.py) on hand-built episode lists whose right
interval is known or bounded, and their place in aggregate() / scores.json."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.aggregate import aggregate, score_command
from scoring.intervals import Bootstrap, agent_intervals, format_interval, paired_difference
from tests.scoring.test_aggregate import card, verdict, write_episode

CARDS = [card("easy", 0), card("mid", 3, "mr")]
META = {c.id: (c.modality, c.level) for c in CARDS}


def subjects(n: int) -> list[str]:
    return [f"s{i:02d}" for i in range(1, n + 1)]


def clustered(n_subjects: int = 10, per_subject: int = 10) -> list:
    """Odd subjects pass everything, even ones fail everything: all the variation is between subjects."""
    out = []
    for i, s in enumerate(subjects(n_subjects)):
        for k in range(per_subject):
            out.append(verdict("a", "easy", 0, "PASS" if i % 2 == 0 else "FAIL", subject=s, seed=k,
                               pr=1.0 if i % 2 == 0 else 0.0, aq=80.0 if i % 2 == 0 else 20.0))
    return out


def width(iv: dict) -> float:
    return iv["hi"] - iv["lo"]


def test_all_pass_gives_100_100_for_sr_and_score():
    vs = [verdict("a", t, lvl, "PASS", subject=s, seed=k, modality=mod)
          for s in subjects(5) for k in range(2) for t, (mod, lvl) in META.items()]
    ivs = agent_intervals(vs, META, Bootstrap(resamples=500, seed=1))
    for iv in (ivs["overall"]["sr"], ivs["overall"]["score"], ivs["by_task"]["mid"]["sr"],
               ivs["by_level"]["L3"]["sr_task_mean"], ivs["by_modality"]["ct"]["sr"]):
        assert (iv["lo"], iv["hi"]) == (100.0, 100.0)
        assert not iv["degenerate"] and iv["n_subjects"] == 5
    assert ivs["overall"]["pr"]["lo"] == ivs["overall"]["pr"]["hi"] == 50.0  # every episode PR 0.5


def test_two_subjects_pass_and_fail_span_0_to_100():
    # resamples are {A,A} (SR 100), {A,B} (50) or {B,B} (0), a quarter each at the ends: the 2.5 and
    # 97.5 percentiles are 0 and 100
    vs = clustered(n_subjects=2, per_subject=3)
    iv = agent_intervals(vs, META, Bootstrap(resamples=2000, seed=0))["overall"]["sr"]
    assert (iv["lo"], iv["hi"]) == (0.0, 100.0)


def test_subject_bootstrap_is_wider_than_episode_bootstrap_on_clustered_data():
    vs = clustered()
    boot = Bootstrap(resamples=2000, seed=3)
    by_subject = agent_intervals(vs, META, boot)["overall"]
    # the same episodes, each its own "subject": what resampling episodes one by one would give
    as_episodes = [v.model_copy(update={"subject": f"e{i:03d}"}) for i, v in enumerate(vs)]
    by_episode = agent_intervals(as_episodes, META, boot)["overall"]
    for metric in ("sr", "pr", "aq", "score"):
        assert width(by_subject[metric]) > 2.0 * width(by_episode[metric]), metric
    # 10 clusters of a Bernoulli(0.5): the subject interval is about +-31 points, the episode one +-10
    assert 45.0 <= width(by_subject["sr"]) <= 75.0
    assert 12.0 <= width(by_episode["sr"]) <= 28.0


def test_same_seed_same_intervals_other_seed_other_intervals():
    vs = clustered(n_subjects=7, per_subject=2)
    one = agent_intervals(vs, META, Bootstrap(resamples=300, seed=11))
    assert agent_intervals(vs, META, Bootstrap(resamples=300, seed=11)) == one
    other = agent_intervals(vs, META, Bootstrap(resamples=300, seed=12))
    assert (other["overall"]["aq"]["lo"], other["overall"]["aq"]["hi"]) != (one["overall"]["aq"]["lo"],
                                                                           one["overall"]["aq"]["hi"])


def test_one_subject_is_degenerate_and_flagged():
    vs = [verdict("a", "easy", 0, "PASS", seed=0), verdict("a", "easy", 0, "FAIL", seed=1)]
    iv = agent_intervals(vs, META)["overall"]["sr"]
    assert iv["degenerate"] and iv["n_subjects"] == 1
    assert iv["lo"] == iv["hi"] == 50.0
    assert format_interval(50.0, iv).endswith("†")


def test_invalid_episodes_change_nothing_and_undetermined_ones_count():
    vs = clustered(n_subjects=6, per_subject=2)
    boot = Bootstrap(resamples=400, seed=5)
    base = agent_intervals(vs, META, boot)
    with_invalid = vs + [verdict("a", "easy", 0, "INVALID", subject="s02", seed=9, termination="fault")]
    assert agent_intervals(with_invalid, META, boot)["overall"] == base["overall"]
    with_undetermined = vs + [verdict("a", "easy", 0, "UNDETERMINED", subject="s01", seed=9, pr=0.0, aq=0.0)]
    assert agent_intervals(with_undetermined, META, boot)["overall"]["sr"] != base["overall"]["sr"]


def test_task_without_valid_episodes_has_no_interval_and_counts_zero_in_the_score():
    # only "easy" was run, on 4 subjects, all PASS: score = 100 * 1 / (1 + 4) = 20 in every resample
    vs = [verdict("a", "easy", 0, "PASS", subject=s) for s in subjects(4)]
    ivs = agent_intervals(vs, META, Bootstrap(resamples=200))
    assert (ivs["overall"]["score"]["lo"], ivs["overall"]["score"]["hi"]) == pytest.approx((20.0, 20.0))
    assert ivs["by_task"]["mid"]["sr"]["lo"] is None and ivs["by_task"]["mid"]["sr"]["n_subjects"] == 0


def test_task_run_on_some_subjects_reports_undefined_resamples():
    vs = [verdict("a", "easy", 0, "PASS", subject=s) for s in subjects(6)]
    vs += [verdict("a", "mid", 3, "PASS", subject="s01", modality="mr"),
           verdict("a", "mid", 3, "FAIL", subject="s02", modality="mr")]
    iv = agent_intervals(vs, META, Bootstrap(resamples=500, seed=2))["by_task"]["mid"]["sr"]
    assert iv["undefined_resamples"] > 0  # resamples that drew neither s01 nor s02
    assert (iv["lo"], iv["hi"]) == (0.0, 100.0)


def test_aggregate_carries_intervals_around_its_own_point_estimates(tmp_path):
    vs = clustered(n_subjects=8, per_subject=2)
    vs += [verdict("a", "mid", 3, "PASS" if i % 3 else "FAIL", subject=s, modality="mr", pr=0.25 * (i % 4), aq=10.0 * i)
           for i, s in enumerate(subjects(8))]
    scores = aggregate(vs, CARDS)
    assert scores["intervals"]["resampling_unit"] == "subject"
    assert scores["intervals"]["resamples"] == 2000 and isinstance(scores["intervals"]["seed"], int)
    a = scores["agents"]["a"]
    assert a["n_subjects"] == 8 and a["baseline"] is False
    for block, metrics in ((a["overall"], ("sr", "pr", "aq", "score")), (a["by_task"]["mid"], ("sr", "pr", "aq")),
                           (a["by_modality"]["mr"], ("sr", "pr", "aq")), (a["by_level"]["L3"], ("sr", "aq"))):
        for m in metrics:
            assert block["ci"][m]["lo"] <= block[m] <= block["ci"][m]["hi"], m
            assert block["ci"][m]["lo"] < block["ci"][m]["hi"], m
    lvl = a["by_level"]["L3"]
    assert lvl["ci"]["sr_task_mean"]["lo"] <= lvl["sr_task_mean"] <= lvl["ci"]["sr_task_mean"]["hi"]
    assert "intervals" not in aggregate(vs, CARDS, intervals=None)
    # scores.json on disk carries the same
    for v in vs:
        write_episode(tmp_path, v)
    score_command(tmp_path, cards=CARDS)
    written = json.loads((tmp_path / "scores.json").read_text())
    assert written["agents"]["a"]["overall"]["ci"]["score"] == a["overall"]["ci"]["score"]


def test_paired_difference_of_an_agent_with_itself_is_exactly_zero():
    vs = clustered(n_subjects=5, per_subject=2)
    d = paired_difference(vs, vs, META, Bootstrap(resamples=300))
    for m in ("sr", "pr", "aq", "score"):
        assert (d["overall"][m]["diff"], d["overall"][m]["lo"], d["overall"][m]["hi"]) == (0.0, 0.0, 0.0)


def test_bad_bootstrap_settings_and_unpaired_input_are_named():
    with pytest.raises(ValueError, match="resamples"):
        Bootstrap(resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        Bootstrap(confidence=95)
    vs = clustered(n_subjects=2, per_subject=1)
    with pytest.raises(ValueError, match="pairs"):
        paired_difference(vs, vs[:1], META)
    with pytest.raises(ValueError, match="mismatch"):
        paired_difference(vs, vs[::-1], META)
    bad = [vs[0].model_copy(update={"outcome": "INVALID"}), vs[1]]
    with pytest.raises(ValueError, match="INVALID"):
        paired_difference(vs, bad, META)


def test_counts_are_multinomial_draws_of_all_subjects():
    c = Bootstrap(resamples=50, seed=0).counts(7)
    assert c.shape == (50, 7) and np.all(c.sum(axis=1) == 7)
