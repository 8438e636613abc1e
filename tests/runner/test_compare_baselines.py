"""`medimageos compare` on hand-built results folders with a known paired difference, and `medimageos
baselines` end to end (headless) followed by `score` and `report` showing the baseline rows with intervals."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.cli import main
from runner.cli_compare import compare, pair_episodes
from scoring.intervals import Bootstrap, agent_intervals
from tests.scoring.test_aggregate import card, verdict, write_episode

CARDS = [card("easy", 0), card("mid", 3, "mr"), card("hard", 6, "us")]
SUBJECTS = [f"s{i:02d}" for i in range(1, 7)]


def build_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A and B on task `easy`, 6 subjects x 2 seeds, where A - B is 50 SR points on every subject although
    both agents' own SR varies a lot between subjects (odd subjects: A 100, B 50; even: A 50, B 0); plus
    episodes that must be dropped, one for each reason."""
    a_dir, b_dir = tmp_path / "A", tmp_path / "B"
    for i, s in enumerate(SUBJECTS):
        strong = i % 2 == 0  # s01, s03, s05
        for seed in (0, 1):
            a_pass = strong or seed == 0
            b_pass = strong and seed == 0
            write_episode(a_dir, verdict("a", "easy", 0, "PASS" if a_pass else "FAIL", subject=s, seed=seed))
            write_episode(b_dir, verdict("b", "easy", 0, "PASS" if b_pass else "FAIL", subject=s, seed=seed))
    write_episode(a_dir, verdict("a", "easy", 0, "PASS", subject="s01", seed=5))  # only in A
    write_episode(b_dir, verdict("b", "easy", 0, "FAIL", subject="s07", seed=0))  # only in B
    write_episode(a_dir, verdict("a", "hard", 6, "PASS", modality="us"))
    write_episode(b_dir, verdict("b", "hard", 6, "INVALID", modality="us", termination="fault"))  # INVALID in B
    write_episode(a_dir, verdict("a", "mid", 3, "PASS", subject="s02", modality="mr"))
    vb = verdict("b", "mid", 3, "PASS", subject="s02", modality="mr").model_copy(update={"task_version": "2"})
    write_episode(b_dir, vb)  # another version of the card: not the same task
    return a_dir, b_dir


def test_compare_gives_the_known_paired_difference_and_lists_dropped_episodes(tmp_path):
    a_dir, b_dir = build_pair(tmp_path)
    r = compare(a_dir, b_dir, cards=CARDS, boot=Bootstrap(resamples=1000, seed=4))
    assert r["common_episodes"] == 12 and r["common_subjects"] == 6
    assert r["dropped"] == {"only_in_a": [["easy", "s01", 5]], "only_in_b": [["easy", "s07", 0]],
                            "invalid_in_a": [], "invalid_in_b": [["hard", "s01", 0]],
                            "task_version_differs": [["mid", "s02", 0]]}
    sr = r["overall"]["sr"]
    assert (sr["a"], sr["b"], sr["diff"]) == pytest.approx((75.0, 25.0, 50.0))
    # every subject differs by exactly 50: the paired interval has no width at all
    assert (sr["lo"], sr["hi"]) == pytest.approx((50.0, 50.0)) and not sr["degenerate"]
    # the weighted score over the three cards: only `easy` (weight 1 of 12) is common
    score = r["overall"]["score"]
    assert (score["diff"], score["lo"], score["hi"]) == pytest.approx((50 / 12, 50 / 12, 50 / 12))
    # whereas A's own SR, resampled by subject, is far from exact
    a_common = pair_episodes(*_verdicts(a_dir, b_dir))[0]
    own = agent_intervals(a_common, {c.id: (c.modality, c.level) for c in CARDS}, Bootstrap(resamples=1000))
    assert own["overall"]["sr"]["hi"] - own["overall"]["sr"]["lo"] >= 25.0
    assert r["overall"]["pr"]["diff"] == 0.0 and r["overall"]["aq"]["diff"] == 0.0


def _verdicts(a_dir: Path, b_dir: Path):
    from scoring.aggregate import collect

    return collect(a_dir), collect(b_dir)


def test_compare_paired_interval_moves_with_a_subject_dependent_difference(tmp_path):
    # B fails everything: A - B is A's SR, 100 or 50 by subject, so the interval has width
    a_dir, _ = build_pair(tmp_path)
    b_dir = tmp_path / "B0"
    for s in SUBJECTS:
        for seed in (0, 1):
            write_episode(b_dir, verdict("b", "easy", 0, "FAIL", subject=s, seed=seed))
    sr = compare(a_dir, b_dir, cards=CARDS, boot=Bootstrap(resamples=1000, seed=4))["overall"]["sr"]
    assert sr["diff"] == pytest.approx(75.0)
    assert 50.0 <= sr["lo"] < 75.0 < sr["hi"] <= 100.0


def test_compare_command_prints_counts_and_names_bad_input(tmp_path, capsys):
    a_dir, b_dir = build_pair(tmp_path)
    assert main(["compare", str(a_dir), str(b_dir), "--resamples", "200", "--out", str(tmp_path / "c.json")]) == 0
    text = capsys.readouterr().out
    assert "common episodes (same task, subject, seed; both valid): 12 over 6 subjects" in text
    assert "dropped, invalid in b: 1: hard/s01/seed0" in text and "dropped, only in a: 1" in text
    assert "| overall | SR | 75.0 | 25.0 | +50.0 | [+50.0, +50.0] |" in text
    assert json.loads((tmp_path / "c.json").read_text())["common_episodes"] == 12
    # two agents in one folder: the command asks which one
    write_episode(a_dir, verdict("other", "easy", 0, "PASS"))
    assert main(["compare", str(a_dir), str(b_dir)]) == 2
    assert "--agent-a" in capsys.readouterr().err
    assert main(["compare", str(a_dir), str(b_dir), "--agent-a", "a", "--json", "--resamples", "100"]) == 0
    assert json.loads(capsys.readouterr().out)["a"]["agent"] == "a"
    assert main(["compare", str(tmp_path / "nope"), str(b_dir)]) == 2
    assert "does not exist" in capsys.readouterr().err


BASELINE_CARD = "ct_liver_coverage_isocenter"


def test_baselines_headless_then_score_and_report_show_them_with_intervals(tmp_path, capsys, subject_cache):
    from tasks.card import load_card

    out = tmp_path / "baselines"
    assert main(["baselines", "--out", str(out), "--tasks", BASELINE_CARD, "--subjects", "dev,s01",
                 "--seeds", "0"]) == 0
    err = capsys.readouterr().err
    assert "baseline-noop: headless" in err and "baseline-random" not in err  # random only when asked
    max_steps = load_card(BASELINE_CARD).budgets.max_steps
    verdicts = {}
    for agent in ("baseline-noop", "baseline-fixed-script", "baseline-constant-answer"):
        for subject in ("dev", "s01"):
            path = out / agent / BASELINE_CARD / subject / "seed0" / "verdict.json"
            verdicts[agent, subject] = json.loads(path.read_text())
    # the fixed script is dev seed 0's own reference run: it passes there and (a blind script) not on s01
    assert verdicts["baseline-fixed-script", "dev"]["outcome"] == "PASS"
    assert verdicts["baseline-fixed-script", "s01"]["sr"] == 0.0
    noop = verdicts["baseline-noop", "s01"]
    assert noop["outcome"] != "PASS" and noop["steps"] == max_steps and noop["termination"] == "budget"
    assert noop["sim_seconds"] == pytest.approx(1.0 * max_steps)  # as NoopAgent in the GUI: 1 s a step
    assert verdicts["baseline-constant-answer", "s01"]["details"]["baseline"]["path"] == "headless"
    manifest = json.loads((out / "baselines.json").read_text())
    assert set(manifest["baselines"]) == {"baseline-noop", "baseline-fixed-script", "baseline-constant-answer"}

    # a second run skips what is finished
    assert main(["baselines", "--out", str(out), "--tasks", BASELINE_CARD, "--subjects", "dev,s01",
                 "--seeds", "0"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["headless"] == {"skipped": 6}

    # a model's results folder, scored and reported beside the baselines
    model = tmp_path / "model"
    for s in ("s01", "s02", "s03"):
        write_episode(model, verdict("model", BASELINE_CARD, 3, "PASS" if s != "s02" else "FAIL", subject=s))
    assert main(["score", str(model), "--baselines", str(out)]) == 0
    scores = json.loads((model / "scores.json").read_text())
    assert scores["agents"]["baseline-noop"]["baseline"] is True and scores["agents"]["model"]["baseline"] is False
    ci = scores["agents"]["model"]["overall"]["ci"]["sr"]
    assert ci["n_subjects"] == 3 and ci["lo"] < ci["hi"]
    assert scores["agents"]["baseline-fixed-script"]["overall"]["ci"]["sr"]["n_subjects"] == 2
    assert main(["report", str(model), "--baselines", str(out)]) == 0
    md = (model / "report" / "report.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if line.startswith("| ")}
    for agent in ("model", "baseline-noop", "baseline-fixed-script", "baseline-constant-answer"):
        assert agent in rows, agent
    assert "66.7 [0.0, 100.0]" in rows["model"]  # SR 2/3 over three one-episode subjects
    assert "[" in rows["baseline-noop"] and "Intervals: cluster bootstrap over subjects, 2000 resamples" in md
    html = (model / "report" / "report.html").read_text()
    assert "baseline-fixed-script" in html and "cluster bootstrap" in html


def test_baselines_command_names_bad_input(tmp_path, capsys):
    assert main(["baselines", "--out", str(tmp_path), "--tasks", BASELINE_CARD, "--include", "noop,oracle"]) == 2
    assert "oracle" in capsys.readouterr().err
    assert main(["baselines", "--out", str(tmp_path), "--tasks", BASELINE_CARD, "--subjects", "s99"]) == 2
    assert "s99" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
