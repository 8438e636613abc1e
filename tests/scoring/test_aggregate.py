"""Aggregation of verdicts: collection, INVALID exclusion, weighted score by hand."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tasks.card import Budgets, TaskCard
from scoring.aggregate import (aggregate, collect, rescore, scan_results, score_command, stats,
                               weighted_score)
from scoring.verdict import OracleResult, Verdict

SR_OF = {"PASS": 1.0, "PARTIAL": 0.0, "FAIL": 0.0, "UNDETERMINED": 0.0, "INVALID": 0.0}


def card(task_id: str, level: int, modality: str = "ct") -> TaskCard:
    return TaskCard(id=task_id, version="1", modality=modality, level=level, title=task_id,
                    goal="Do the synthetic thing on the console.", budgets=Budgets(max_steps=20),
                    oracle="synthetic")


def verdict(agent: str, task: str, level: int, outcome: str, subject: str = "s01", seed: int = 0,
            modality: str = "ct", pr: float = 0.5, aq: float = 50.0, steps: int = 10,
            rejected: int = 0, termination: str = "done") -> Verdict:
    return Verdict(task=task, task_version="1", modality=modality, level=level, subject=subject,
                   seed=seed, agent=agent, outcome=outcome, sr=SR_OF[outcome], pr=pr, aq=aq,
                   steps=steps, rejected_steps=rejected, termination=termination)


def write_episode(root: Path, v: Verdict | None, *, agent: str = "a", task: str = "t",
                  subject: str = "s01", seed: int = 0, state: dict | None = None) -> Path:
    if v is not None:
        agent, task, subject, seed = v.agent, v.task, v.subject, v.seed
    ep = root / agent / task / subject / f"seed{seed}"
    ep.mkdir(parents=True)
    (ep / "receipts.jsonl").write_text("")
    (ep / "state.json").write_text(json.dumps(state or {"ok": True}))
    if v is not None:
        (ep / "verdict.json").write_text(v.model_dump_json())
    return ep


CARDS = [card("easy", 0), card("mid", 3, "mr"), card("hard", 6, "us")]


def test_weighted_score_matches_hand_computation():
    # levels 0, 3, 6 -> weights 1, 4, 7; SR proportions 1.0, 0.5, 0.0
    expected = 100 * (1 * 1.0 + 4 * 0.5 + 7 * 0.0) / (1 + 4 + 7)
    assert weighted_score({"easy": 1.0, "mid": 0.5, "hard": 0.0}, CARDS) == pytest.approx(expected)
    assert expected == pytest.approx(25.0)
    # a task without an entry counts 0; entries without a card are ignored
    assert weighted_score({"easy": 1.0, "mid": 0.5, "other": 1.0}, CARDS) == pytest.approx(expected)


def test_weighted_score_uses_card_levels_not_a_fixed_denominator():
    cards = [card("x", 1), card("y", 1), card("z", 2)]
    # weights 2, 2, 3 -> denominator 7
    assert weighted_score({"x": 1.0, "y": 0.0, "z": 1 / 3}, cards) == pytest.approx(
        100 * (2 * 1.0 + 2 * 0.0 + 3 * (1 / 3)) / 7)


def test_weighted_score_rejects_percentages_and_empty_cards():
    with pytest.raises(ValueError, match="proportions"):
        weighted_score({"easy": 50.0}, CARDS)
    with pytest.raises(ValueError):
        weighted_score({}, [])
    with pytest.raises(ValueError, match="duplicate"):
        weighted_score({}, [card("x", 0), card("x", 1)])


def test_aggregate_score_from_episodes_matches_hand_computation():
    vs = [
        verdict("a", "easy", 0, "PASS", seed=0), verdict("a", "easy", 0, "PASS", seed=1),
        # mid: PASS, FAIL, and an INVALID that must not dilute the proportion -> 0.5
        verdict("a", "mid", 3, "PASS", seed=0, modality="mr"),
        verdict("a", "mid", 3, "FAIL", seed=1, modality="mr"),
        verdict("a", "mid", 3, "INVALID", seed=2, modality="mr", termination="fault"),
        verdict("a", "hard", 6, "PARTIAL", seed=0, modality="us"),
    ]
    res = aggregate(vs, CARDS)
    a = res["agents"]["a"]
    assert a["overall"]["score"] == pytest.approx(100 * (1 * 1.0 + 4 * 0.5 + 7 * 0.0) / 12)
    assert res["weight_denominator"] == 12
    assert a["by_task"]["mid"]["sr"] == pytest.approx(50.0)
    assert a["by_task"]["mid"]["n"] == 3 and a["by_task"]["mid"]["n_valid"] == 2
    assert a["by_task"]["mid"]["outcomes"]["INVALID"] == 1
    assert a["overall"]["missing_tasks"] == []


def test_invalid_excluded_from_all_denominators():
    vs = [
        verdict("a", "easy", 0, "PASS", pr=1.0, aq=80, steps=10, rejected=2, termination="done"),
        verdict("a", "easy", 0, "FAIL", seed=1, pr=0.5, aq=40, steps=10, rejected=0,
                termination="budget"),
        verdict("a", "easy", 0, "INVALID", seed=2, pr=0.0, aq=0, steps=30, rejected=30,
                termination="budget"),
    ]
    s = stats(vs)
    assert (s["n"], s["n_valid"]) == (3, 2)
    assert s["sr"] == pytest.approx(50.0)
    assert s["pr"] == pytest.approx(75.0)
    assert s["aq"] == pytest.approx(60.0)
    assert s["budget_share"] == pytest.approx(0.5)
    assert s["rejected_share"] == pytest.approx(2 / 20)
    assert s["outcomes"] == {"PASS": 1, "PARTIAL": 0, "FAIL": 1, "UNDETERMINED": 0, "INVALID": 1}


def test_undetermined_stays_in_the_denominator():
    s = stats([verdict("a", "easy", 0, "PASS"), verdict("a", "easy", 0, "UNDETERMINED", seed=1)])
    assert s["n_valid"] == 2 and s["sr"] == pytest.approx(50.0)


def test_task_without_valid_episodes_counts_zero_and_is_flagged():
    vs = [verdict("a", "easy", 0, "PASS"),
          verdict("a", "hard", 6, "INVALID", modality="us", termination="fault")]
    a = aggregate(vs, CARDS)["agents"]["a"]
    assert a["overall"]["score"] == pytest.approx(100 * 1 / 12)
    assert a["overall"]["missing_tasks"] == ["mid", "hard"]
    assert a["by_task"]["mid"]["n"] == 0 and a["by_task"]["mid"]["sr"] is None
    assert a["by_task"]["hard"]["missing"] and a["by_task"]["hard"]["n"] == 1


def test_breakdowns_per_modality_and_level_are_separate_metrics():
    vs = [verdict("a", "easy", 0, "PASS", pr=1.0, aq=90),
          verdict("a", "mid", 3, "FAIL", modality="mr", pr=0.25, aq=10),
          verdict("b", "easy", 0, "FAIL", pr=0.0, aq=0)]
    res = aggregate(vs, CARDS)
    a = res["agents"]["a"]
    assert set(res["agents"]) == {"a", "b"}
    assert set(a["by_level"]) == {f"L{i}" for i in range(7)}
    assert a["by_level"]["L0"]["sr"] == 100.0 and a["by_level"]["L3"]["sr"] == 0.0
    assert a["by_level"]["L1"]["n"] == 0 and a["by_level"]["L1"]["sr"] is None
    assert a["by_level"]["L6"]["sr_task_mean"] == 0.0  # card exists, never run
    assert a["by_modality"]["mr"]["pr"] == pytest.approx(25.0)
    assert a["by_modality"]["mr"]["aq"] == pytest.approx(10.0)
    assert a["by_modality"]["us"]["n"] == 0
    assert res["agents"]["b"]["overall"]["score"] == 0.0


def test_task_without_card_is_listed_but_not_scored():
    vs = [verdict("a", "easy", 0, "PASS"), verdict("a", "bonus", 2, "PASS")]
    a = aggregate(vs, CARDS)["agents"]["a"]
    assert a["by_task"]["bonus"]["in_cards"] is False
    assert a["overall"]["extra_tasks"] == ["bonus"]
    assert a["overall"]["score"] == pytest.approx(100 * 1 / 12)
    assert a["by_level"]["L2"]["n"] == 1


def test_collect_skips_unfinished_and_reports_corrupt(tmp_path, caplog):
    write_episode(tmp_path, verdict("a", "easy", 0, "PASS"))
    write_episode(tmp_path, verdict("a", "easy", 0, "FAIL", seed=1))
    unfinished = write_episode(tmp_path, None, agent="a", task="easy", seed=2)
    bad_json = write_episode(tmp_path, None, agent="a", task="easy", seed=3)
    (bad_json / "verdict.json").write_text('{"task": "easy", ')
    bad_schema = write_episode(tmp_path, None, agent="a", task="easy", seed=4)
    (bad_schema / "verdict.json").write_text(json.dumps({"task": "easy", "outcome": "MAYBE"}))
    (tmp_path / "scores.json").write_text("{}")  # stray files at the top are not episodes

    problems: list[str] = []
    with caplog.at_level(logging.WARNING, logger="scoring.aggregate"):
        vs = collect(tmp_path, problems)
    assert sorted(v.outcome for v in vs) == ["FAIL", "PASS"]
    assert any(str(bad_json / "verdict.json") in p for p in problems)
    assert any(str(bad_schema / "verdict.json") in p and "outcome" in p for p in problems)
    assert str(bad_json / "verdict.json") in caplog.text

    scan = scan_results(tmp_path)
    assert scan.unfinished == [unfinished]
    assert {c.path for c in scan.corrupt} == {bad_json / "verdict.json",
                                              bad_schema / "verdict.json"}
    assert scan.summary()["unfinished_by_agent"] == {"a": 1}


def test_collect_reports_duplicates_and_folder_mismatch(tmp_path):
    v = verdict("a", "easy", 0, "PASS")
    write_episode(tmp_path, v)
    ep = write_episode(tmp_path, None, agent="a", task="easy", seed=7)
    (ep / "verdict.json").write_text(v.model_dump_json())  # claims seed 0
    scan = scan_results(tmp_path)
    assert len(scan.episodes) == 1
    assert any("duplicate" in w for w in scan.warnings)
    assert any("folder says" in w for w in scan.warnings)


def test_collect_missing_folder_is_empty(tmp_path):
    assert collect(tmp_path / "nope") == []


def test_score_command_writes_scores_json(tmp_path):
    write_episode(tmp_path, verdict("a", "easy", 0, "PASS"))
    write_episode(tmp_path, verdict("a", "mid", 3, "PASS", modality="mr"))
    write_episode(tmp_path, verdict("a", "mid", 3, "FAIL", seed=1, modality="mr"))
    write_episode(tmp_path, None, agent="a", task="hard", seed=0)  # unfinished
    res = score_command(tmp_path, cards=CARDS)
    on_disk = json.loads((tmp_path / "scores.json").read_text())
    assert on_disk == json.loads(json.dumps(res))
    assert on_disk["agents"]["a"]["overall"]["score"] == pytest.approx(25.0)
    assert on_disk["collection"]["unfinished"] == 1
    assert not list(tmp_path.glob(".scores.json.*"))  # no temporary left behind

    other = tmp_path / "elsewhere" / "s.json"
    score_command(tmp_path, other, cards=CARDS)
    assert json.loads(other.read_text())["agents"]["a"]["overall"]["score"] == pytest.approx(25.0)


def test_rescore_recomputes_from_state(tmp_path):
    write_episode(tmp_path, verdict("a", "easy", 0, "FAIL", steps=12), state={"hit": True})
    write_episode(tmp_path, verdict("a", "easy", 0, "FAIL", seed=1), state={"hit": False})
    write_episode(tmp_path, verdict("a", "easy", 0, "INVALID", seed=2, termination="fault"),
                  state={"hit": True})
    write_episode(tmp_path, verdict("a", "easy", 0, "FAIL", seed=3), state={"boom": 1})

    def oracle(state, old, ep_dir):
        assert (ep_dir / "state.json").exists()
        if "boom" in state:
            raise RuntimeError("oracle bug")
        ok = state["hit"]
        return OracleResult(outcome="PASS" if ok else "FAIL", sr=float(ok), pr=1.0 if ok else 0.5,
                            aq=99.0 if ok else 5.0, reason="rescored")

    new = {v.seed: v for v in rescore(tmp_path, oracle)}
    assert new[0].outcome == "PASS" and new[0].steps == 12 and new[0].reason == "rescored"
    assert new[1].outcome == "FAIL"
    assert new[2].outcome == "INVALID"  # environment fault: kept
    assert new[3].outcome == "INVALID" and "oracle bug" in new[3].reason
    on_disk = {v.seed: v for v in collect(tmp_path)}
    assert on_disk[0].outcome == "PASS" and on_disk[0].aq == 99.0
    res = score_command(tmp_path, cards=[card("easy", 0)])
    assert res["agents"]["a"]["overall"]["score"] == pytest.approx(50.0)  # 1 PASS of 2 valid
