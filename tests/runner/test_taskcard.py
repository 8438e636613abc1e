"""Task cards: every shipped card validates; malformed cards fail with errors naming the problem."""
from __future__ import annotations

import json

import pytest

from runner.taskcard import TaskCardError, all_cards, load_card, load_card_file, select_cards


def test_every_shipped_card_is_valid_and_ids_are_unique():
    cards = all_cards()
    assert cards, "no task cards shipped"
    ids = [c.id for c in cards]
    assert len(ids) == len(set(ids))
    for c in cards:
        assert c.path.is_file()
        assert c.workflow_stages, f"{c.id} lists no workflow stages"
        # answers and scorer thresholds never live in cards: no such keys anywhere in the JSON
        for key in _keys(json.loads(c.path.read_text())):
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
    d.mkdir()
    p = d / "task.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def _valid():
    card = json.loads(load_card("ct_ui_smoke_routine").path.read_text())
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
        ({"surprise": 1}, "surprise"),
    ]
    for i, (patch, needle) in enumerate(cases):
        card = _valid()
        card.update(patch)
        root = tmp_path / f"case{i}"
        root.mkdir()
        with pytest.raises(TaskCardError, match=needle):
            load_card_file(_write(root, card))
    card = _valid()
    root = tmp_path / "mismatch"
    root.mkdir()
    with pytest.raises(TaskCardError, match="does not match its folder"):
        load_card_file(_write(root, card, folder="other_name"))
    with pytest.raises(TaskCardError, match="not found"):
        load_card_file(tmp_path / "missing" / "task.json")


def test_select_cards():
    assert [c.id for c in select_cards("ct_ui_smoke_routine")] == ["ct_ui_smoke_routine"]
    assert all(c.modality == "ct" for c in select_cards("ct"))
    with pytest.raises(TaskCardError, match="unknown task"):
        select_cards("no_such_task")
