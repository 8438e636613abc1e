"""What a console reads of its task card: the runner's validated card JSON gives exactly the inputs
the card schema gives, and a bad one is refused with an error that names the problem."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from consoles.common.console_card import ConsoleCard, load_console_card
from tasks.card import TaskCardError, all_cards, console_card, console_card_json


def test_reading_a_card_does_not_make_a_process_a_console():
    """consoles.common.shell marks its process as a console (no subject oracle, Qt settings): the card
    reader, which tests and the runner import, must not pull it in."""
    env = {k: v for k, v in os.environ.items() if k != "MEDIMAGEOS_ROLE"}
    code = ("import os, sys, consoles.common.console_card; "
            "print(os.environ.get('MEDIMAGEOS_ROLE'), 'consoles.common.shell' in sys.modules, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "False", "False"]


@pytest.mark.parametrize("card", all_cards(), ids=lambda c: c.id)
def test_the_handed_over_card_reads_as_the_validated_one(card):
    got = ConsoleCard.from_json(console_card_json(card.id))
    assert (got.id, got.version, got.modality) == (card.id, card.version, card.modality)
    assert (got.width, got.height) == (card.observation.width, card.observation.height)
    # what the models receive: the same plain JSON as dict(ConsoleInputs)
    assert got.initial_state == dict(card.initial_state)
    assert got.perturbations == dict(card.perturbations)


def test_without_card_json_the_console_validates_the_task_itself(tmp_path):
    assert load_console_card("ct_ui_smoke_routine") == ConsoleCard.from_json(console_card("ct_ui_smoke_routine"))
    bad = json.loads(console_card_json("ct_ui_smoke_routine"))
    bad["perturbations"] = {"no_such_draw": [0, 1]}
    path = tmp_path / "card.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(TaskCardError, match="unknown key 'no_such_draw' in perturbations"):
        load_console_card(str(path))


def test_a_bad_card_json_is_refused_by_name():
    with pytest.raises(ValueError, match="not valid JSON"):
        ConsoleCard.from_json("{not json")
    with pytest.raises(ValueError, match="must be an object"):
        ConsoleCard.from_json("[1, 2]")
    with pytest.raises(ValueError, match="lacks version, observation"):
        ConsoleCard.from_json({"id": "x", "modality": "ct"})
    with pytest.raises(ValueError, match="observation needs integer width and height"):
        ConsoleCard.from_json({"id": "x", "version": "1", "modality": "ct", "observation": {"width": 1280}})
    with pytest.raises(ValueError, match="card JSON is task 'ct_ui_smoke_routine', not 'ct_kub_low_dose_constraint'"):
        load_console_card("ct_kub_low_dose_constraint", console_card_json("ct_ui_smoke_routine"))
