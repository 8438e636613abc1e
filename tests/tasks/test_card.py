"""Task cards (tasks/card.py): every shipped card validates; malformed cards fail with errors naming the
problem; initial_state and perturbations are typed per modality, so a misspelled key is an error that
names the card file and the key (also through `medimageos tasks list`)."""
from __future__ import annotations

import json
import pickle
import shutil

import numpy as np
import pytest

from tasks.card import (CTCard, CTPerturbations, MRCard, TaskCard, TaskCardError, USCard, all_cards, cards_in,
                        load_card, load_card_file, parse_card, select_cards, tasks_root, write_card)


def test_every_shipped_card_is_valid_and_ids_are_unique():
    cards = all_cards()
    assert cards, "no task cards shipped"
    ids = [c.id for c in cards]
    assert len(ids) == len(set(ids))
    for c in cards:
        assert c.source is not None and c.source.is_file()
        assert c.workflow_stages, f"{c.id} lists no workflow stages"
        # answers and scorer thresholds never live in cards: no such keys anywhere in the JSON
        for key in _keys(json.loads(c.source.read_text())):
            for word in ("expected", "answer", "tolerance", "pass_", "oracle_"):
                assert word not in key.lower(), f"{c.id} card has key {key!r}"


def _keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)


def _write(tmp_path, data, folder="my_task"):
    d = tmp_path / folder
    d.mkdir(parents=True)
    p = d / "task.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def _valid():
    card = json.loads(load_card("ct_ui_smoke_routine").source.read_text())
    card["id"] = "my_task"
    return card


def test_malformed_cards_name_what_is_wrong(tmp_path):
    with pytest.raises(TaskCardError, match="not valid JSON"):
        load_card_file(_write(tmp_path, "{nope"))


def test_each_kind_of_bad_field(tmp_path):
    cases = [
        ({"level": 9}, "level"),
        ({"modality": "pet"}, "modality"),
        ({"budgets": {"max_steps": 0}}, "budgets.max_steps"),
        ({"action_profile": {"allowed_actions": ["click", "fly"]}}, "fly"),
        ({"surprise": 1}, "unknown key 'surprise'"),
        ({"perturbations": {"patient_shift_abs_mm": [50, 25]}}, "lo > hi"),
        ({"perturbations": {"patient_shift_abs_mm": [-5, 25]}}, "magnitude"),
        ({"perturbations": {"prior_clip_end": ["middle"]}}, "prior_clip_end"),
        ({"initial_state": {"start_page": "nowhere"}}, "initial_state.start_page"),
        ({"initial_state": {"prior_exam": {"protocol": "renal", "labels": ["x"], "margn_mm": 3}}},
         "unknown key 'margn_mm' in initial_state.prior_exam"),
    ]
    for i, (patch, needle) in enumerate(cases):
        card = _valid()
        card.update(patch)
        with pytest.raises(TaskCardError, match=needle):
            load_card_file(_write(tmp_path / f"case{i}", card))
    card = _valid()
    with pytest.raises(TaskCardError, match="does not match its folder"):
        load_card_file(_write(tmp_path / "mismatch", card, folder="other_name"))
    with pytest.raises(TaskCardError, match="not found"):
        load_card_file(tmp_path / "missing" / "task.json")


def test_a_misspelled_perturbation_key_names_the_card_file_and_the_key(tmp_path):
    card = _valid()
    card["perturbations"]["patient_shift_mmm"] = card["perturbations"].pop("patient_shift_mm")
    path = _write(tmp_path / "ct", card)
    with pytest.raises(TaskCardError) as exc:
        cards_in(tmp_path)
    assert str(path) in str(exc.value) and "'patient_shift_mmm'" in str(exc.value)
    assert "perturbations" in str(exc.value)


def _copy_shipped_cards(dest):
    for c in all_cards():
        d = dest / c.modality / c.id
        d.mkdir(parents=True)
        shutil.copyfile(c.source, d / "task.json")


def test_tasks_list_fails_on_a_misspelled_key_and_lists_the_shipped_cards(tmp_path, capsys):
    from runner.cli import main

    _copy_shipped_cards(tmp_path)
    # negative control: an exact copy of the shipped cards lists every one of them
    assert main(["tasks", "list", "--root", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in listed] == [c.id for c in all_cards()]
    bad = tmp_path / "ct" / "ct_ui_smoke_routine" / "task.json"
    data = json.loads(bad.read_text())
    data["perturbations"]["patient_shift_mmm"] = data["perturbations"].pop("patient_shift_mm")
    bad.write_text(json.dumps(data))
    assert main(["tasks", "list", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "patient_shift_mmm" in err, err


def test_the_shipped_tasks_list_loads():
    from runner.cli import main

    assert main(["tasks", "list"]) == 0


def test_cards_are_typed_by_modality():
    assert all(isinstance(c, CTCard) for c in select_cards("ct"))
    common = dict(id="t", version="1", level=0, title="t", goal="Do the thing.", budgets={"max_steps": 5},
                  oracle="synthetic")
    assert type(TaskCard(modality="mr", **common)) is MRCard
    assert type(TaskCard.model_validate({"modality": "us", **common})) is USCard
    # each modality's cards accept only the keys its own console reads: a CT key is unknown to MR and US
    for modality in ("mr", "us"):
        with pytest.raises(TaskCardError, match="unknown key 'patient_shift_mm' in perturbations"):
            parse_card({"modality": modality, "perturbations": {"patient_shift_mm": [0, 1]}, **common})
    with pytest.raises(TaskCardError, match="modality"):
        parse_card({"modality": "pet", **common})


def test_console_inputs_read_as_the_plain_dicts_of_the_card():
    """What a console receives: exactly the keys the card gives, as plain JSON values, equal to the file."""
    for c in all_cards():
        raw = json.loads(c.source.read_text())
        for field in ("initial_state", "perturbations"):
            given = dict(getattr(c, field))
            assert given == raw.get(field, {}), (c.id, field)
            assert json.loads(json.dumps(given)) == given  # nothing but JSON values reaches a console
            assert all(v is not None for v in given.values())
    assert not CTPerturbations() and dict(CTPerturbations() or {}) == {}


def test_seeded_ct_draws_are_unchanged_by_typing():
    """CTModel's draws from the typed card equal those from the raw JSON dicts (the legacy input)."""
    from consoles.common.model_base import PerturbationDraws

    for c in select_cards("ct"):
        raw = json.loads(c.source.read_text()).get("perturbations", {})
        for src in (raw, c.perturbations):
            d = PerturbationDraws.for_episode(c.id, "s07", 2, src)
            values = [d.offset_mm("patient_shift"), d.offset_mm("table_height_offset"),
                      d.uniform("heart_rate_bpm", [70, 70]), d.uniform_if_present("ctdi_limit_mgy"),
                      d.choice("prior_clip_end", ["bottom"]), d.uniform("prior_clip_mm", [30.0, 50.0]),
                      d.offset_mm("patient_lateral_offset"), d.offset_mm("table_pad"),
                      d.uniform_if_present("ctdi_limit_ref_mgy")]
            if src is raw:
                expected = values
        assert values == expected, c.id
        assert np.isfinite([v for v in values if isinstance(v, float)]).all()


def test_write_card_round_trips_and_validates_edits(tmp_path):
    card = load_card("ct_undercoverage_recovery")
    out = write_card(card, tmp_path / "card.json")
    assert out == card and out.source == tmp_path / "card.json"
    assert load_card_file(tmp_path / "card.json") == card  # card.json may sit in any folder
    edited = card.model_copy(update={"initial_state": {"start_page": "planning"}})
    assert edited.source is None  # an edited card no longer claims the shipped file
    with pytest.raises(TaskCardError, match="in memory"):
        _ = edited.path
    back = write_card(edited, tmp_path / "edited.json")
    assert dict(back.initial_state) == {"start_page": "planning"}
    bad = card.model_copy(update={"perturbations": {"patient_shift_abs_mmm": [1, 2]}})
    with pytest.raises(TaskCardError, match="unknown key 'patient_shift_abs_mmm'"):
        write_card(bad, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()
    assert pickle.loads(pickle.dumps(card)) == card  # workers receive cards by pickle


def test_select_cards():
    assert [c.id for c in select_cards("ct_ui_smoke_routine")] == ["ct_ui_smoke_routine"]
    assert all(c.modality == "ct" for c in select_cards("ct"))
    with pytest.raises(TaskCardError, match="unknown task"):
        select_cards("no_such_task")
    assert tasks_root().is_dir()
