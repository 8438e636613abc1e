"""Bring-your-own anatomy: a card a subject cannot serve is refused before anything starts (issue 31 item 6).

`medimageos subjects import` and `medimageos run` share one check (scoring/capabilities.py): what a card's
oracle, reference solver and console seeding read, against what the subject's oracle half holds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from scoring.capabilities import (SubjectCapabilityError, card_needs, features, missing, preflight,
                                  subject_features)
from tasks.card import all_cards, load_card

REPO = Path(__file__).resolve().parents[2]
CARDIAC_LANDMARKS = ("4ch_plane", "lv_long_axis", "mitral_valve_centre", "lv_apex_epicardial")


def _small_labelmap(path: Path) -> Path:
    """A 12 x 10 x 22 cm torso-less label map (2 mm voxels, medimageos label values): lungs, liver, both
    kidneys and the bladder, no heart. The import synthesises the body outline around them."""
    from rendering.subjects.labels import L

    lab = np.zeros((60, 50, 110), np.uint8)  # (i, j, k) as NIfTI stores it; k towards the head
    lab[8:26, 12:38, 80:104] = L["lung_right"]
    lab[34:52, 12:38, 80:104] = L["lung_left"]
    lab[10:40, 10:36, 62:78] = L["liver"]
    lab[10:20, 28:40, 40:58] = L["kidney_right_cortex"]
    lab[40:50, 28:40, 42:60] = L["kidney_left_cortex"]
    lab[24:36, 14:26, 6:16] = L["bladder"]
    nib.save(nib.Nifti1Image(lab, np.diag([2.0, 2.0, 2.0, 1.0])), path)
    return path


@pytest.fixture()
def imported(tmp_path, monkeypatch, capsys) -> tuple[str, Path, str]:
    """The small map imported as subject `mine` into a cache of this test's own (also seen by subprocesses)."""
    from rendering.subjects.runtime import clear_memo
    from runner.cli_subjects import main

    monkeypatch.setenv("MEDIMAGEOS_CACHE", str(tmp_path / "cache"))
    clear_memo()
    f = _small_labelmap(tmp_path / "mine.nii.gz")
    assert main(["subjects", "import", "--labels", str(f), "--map", "medimageos", "--id", "mine"]) == 0
    yield "mine", tmp_path, capsys.readouterr().out
    clear_memo()


def test_import_reports_what_the_run_will_refuse(imported):
    sid, _, out = imported
    have = subject_features(sid)
    assert {"lungs", "liver", "kidney_left", "kidney_right", "bladder"} <= have and "heart" not in have
    # "cannot serve A, B: missing x, y" -> {A: "x, y", B: "x, y"}
    refused = {}
    for ln in out.splitlines():
        if ln.startswith("cannot serve "):
            ids, lack = ln[len("cannot serve "):].split(": missing ")
            refused.update({i: lack for i in ids.split(", ")})
    assert all(n in refused["L4_4ch"] for n in CARDIAC_LANDMARKS), refused["L4_4ch"]
    serves = next(ln for ln in out.splitlines() if ln.startswith("serves:"))
    assert "ct_renal_bilateral_coverage" in serves and "L4_4ch" not in serves
    # the import's report and the run's check are one function: a card is refused exactly when it lacks something
    assert set(refused) == {c.id for c in all_cards() if missing(c, have)}
    assert {"L4_4ch", "L5_sax_stack", "ccta_heart_coverage_isocenter"} <= set(refused)


def test_show_lists_the_same_refusals(imported, capsys):
    from runner.cli_subjects import main

    sid, _, _ = imported
    assert main(["subjects", "show", sid]) == 0
    info = json.loads(capsys.readouterr().out)
    have = subject_features(sid)
    assert info["cannot_serve"] == {c.id: missing(c, have) for c in all_cards() if missing(c, have)}
    assert info["cannot_serve"]["L4_4ch"] == list(CARDIAC_LANDMARKS)


def test_run_refuses_a_card_the_subject_cannot_serve_before_starting_anything(imported):
    sid, tmp, _ = imported
    out = tmp / "results"
    # a real `medimageos run` in a child process: the autouse Xvfb guard (tests/conftest.py) fails this test
    # if anything tries to start a display, and the results folder must not be created
    r = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--agent", "noop", "--tasks", "L4_4ch",
                        "--subjects", sid, "--out", str(out)], cwd=REPO, env=dict(os.environ),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, r.stderr
    err = r.stderr
    assert f"subject {sid!r} cannot serve task L4_4ch" in err, err
    assert all(n in err for n in CARDIAC_LANDMARKS), err
    assert "Traceback" not in err and "running " not in err, err
    assert not out.exists()


def test_a_card_the_subject_serves_passes_the_preflight(imported):
    from runner.run import expand

    sid, _, _ = imported
    card = load_card("ct_renal_bilateral_coverage")
    specs = expand([card], [sid], [0, 1])
    assert [(s.card.id, s.subject, s.seed) for s in specs] == [(card.id, sid, 0), (card.id, sid, 1)]
    # mixed with a card it cannot serve, the whole run is refused, naming only that card
    with pytest.raises(SubjectCapabilityError) as e:
        expand([card, load_card("L4_4ch")], [sid], [0])
    assert "L4_4ch" in str(e.value) and card.id not in str(e.value)


def test_unknown_subject_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDIMAGEOS_CACHE", str(tmp_path))
    with pytest.raises(SubjectCapabilityError, match="unknown subject 'nobody'"):
        preflight([load_card("ct_liver_coverage_isocenter")], ["nobody"])
    # a procedural subject not built yet is not built by the preflight (the generator serves every card)
    assert subject_features("s07") is None
    assert not (tmp_path / "subjects").exists()


# ---- the capability check on procedural subjects -------------------------------------------------------
@pytest.fixture(scope="module")
def dev_meta(subject_cache) -> dict:
    from rendering.subjects.runtime import runtime_dir

    return json.loads((runtime_dir("dev") / "oracle.json").read_text())


@pytest.mark.parametrize("card", all_cards(), ids=lambda c: c.id)
def test_dev_serves_every_card(card, dev_meta):
    assert missing(card, features(dev_meta)) == []


def test_needs_name_what_the_oracle_and_solver_read(dev_meta):
    needs = card_needs(load_card("L4_4ch"))
    assert set(CARDIAC_LANDMARKS) <= set(needs)
    assert set(card_needs(load_card("ccta_heart_coverage_isocenter"))) >= {"heart", "aorta", "aorta_descending"}
    assert card_needs(load_card("us_kidney_long_axis_search_v1")) == ("kidney_left",)
    assert card_needs(load_card("L6_stopped_row_retry")) == ()  # the retry reads events, not anatomy
    assert "lv_long_axis" in card_needs(load_card("mr_t1t2_mapping_parameters"))
    # dev without its reference planes and long axis (what an imported map lacks) fails exactly those
    bare = dict(dev_meta, planes={}, lv_long_axis=None)
    assert missing(load_card("L4_4ch"), features(bare)) == ["4ch_plane", "lv_long_axis"]
    assert missing(load_card("ct_renal_bilateral_coverage"), features(bare)) == []


def test_every_cohort_subject_serves_every_card(subject_cache):
    """The generator gives every subject the same anatomy: what lets the preflight skip unbuilt ones."""
    from tests.rendering.subject_cache import ALL_IDS

    assert all(subject_features(s) is not None for s in ALL_IDS)
    preflight(all_cards(), ALL_IDS)
