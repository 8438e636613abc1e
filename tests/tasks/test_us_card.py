"""The ultrasound card contract (tasks/card.py: USInitialState, USPerturbations): typed keys the US console reads,
errors that name the problem, and shipped US cards whose every key the console reads."""
from __future__ import annotations

import pytest

from tasks.card import (US_CONTACT_FAULTS, US_DARK_CAUSES, US_FREQUENCIES_MHZ, US_GREY_MAPS, US_PRESETS, USCard,
                        USInitialState, USPerturbations, TaskCardError, parse_card, select_cards)

COMMON = dict(modality="us", id="t", version="1", level=0, title="t", goal="Do the thing.", budgets={"max_steps": 5},
              oracle="synthetic")


def _card(initial_state=None, perturbations=None):
    return parse_card({**COMMON, "initial_state": initial_state or {}, "perturbations": perturbations or {}})


def test_the_cards_value_lists_are_the_consoles():
    from consoles.us.contact import CONTACT_FAULTS
    from consoles.us.model import DARK_CAUSES, PARAM
    from rendering import us_physics as P
    from tasks.card import US_CONTROL_NAMES

    assert US_PRESETS == P.PRESET_NAMES and US_FREQUENCIES_MHZ == P.FREQUENCIES_MHZ and US_GREY_MAPS == P.GREY_MAPS
    assert US_DARK_CAUSES == DARK_CAUSES and US_CONTACT_FAULTS == CONTACT_FAULTS
    assert set(US_CONTROL_NAMES) == {n for n in PARAM if not n.startswith("probe_") and n != "pressure_pct"}


def test_a_full_us_card_validates_and_reads_back_as_plain_json():
    st = {"preset": "Renal", "kidney": "right", "aim": "transverse",
          "pose": {"z_mm": -280.0, "azimuth_deg": -100.0, "rotation_deg": 10.0, "tilt_deg": -5.0, "rock_deg": 3.0,
                   "pressure": 0.7},
          "controls": {"gain": 40.0, "depth_cm": 12.0, "frequency_mhz": 3.5, "tgc_3": -2.0, "grey_map": "C"},
          "frozen": True}
    pert = {"probe_z_mm": [-5.0, 5.0], "probe_z_abs_mm": [10.0, 20.0], "probe_azimuth_deg": [-5.0, 5.0],
            "probe_rotation_deg": [-20.0, 20.0], "probe_tilt_deg": [-5.0, 5.0], "probe_rock_deg": [-3.0, 3.0],
            "preset": ["Abdomen", "Bladder"], "gain": [[5.0, 20.0], [80.0, 95.0]], "depth_cm": [6.0, 20.0],
            "focus_cm": [[2.0, 3.0], [15.0, 18.0]], "dynamic_range_db": [55.0, 90.0],
            "frequency_mhz": [2.5, 3.0], "grey_map": ["A", "D"], "dark_cause": ["contact", "gain"],
            "contact_fault": ["no_gel", "lifted"], "lifted_pressure": [0.0, 0.05], "dry_fraction": [0.3, 0.4],
            "low_gain": [5.0, 15.0]}
    card = _card(st, pert)
    assert isinstance(card, USCard)
    assert isinstance(card.initial_state, USInitialState) and isinstance(card.perturbations, USPerturbations)
    assert dict(card.initial_state) == st and dict(card.perturbations) == pert


@pytest.mark.parametrize("where,value,message", [
    ("initial_state", {"kidnee": "left"}, "unknown key 'kidnee' in initial_state"),
    ("initial_state", {"kidney": "middle"}, "initial_state.kidney"),
    ("initial_state", {"preset": "Cardiac"}, "initial_state.preset"),
    ("initial_state", {"pose": {"roll_deg": 3}}, "unknown key 'roll_deg' in initial_state.pose"),
    ("initial_state", {"pose": {"tilt_deg": 60}}, "initial_state.pose.tilt_deg"),
    ("initial_state", {"pose": {"rotation_deg": 360}}, "initial_state.pose.rotation_deg"),
    ("initial_state", {"controls": {"probe_z_mm": -200}}, "the probe is set under 'pose'"),
    ("initial_state", {"controls": {"frequency_mhz": 3.3}}, "not one of the probe's"),
    ("initial_state", {"controls": {"grey_map": "Z"}}, "controls.grey_map 'Z'"),
    ("initial_state", {"controls": {"gain": "high"}}, "controls.gain must be a number"),
    ("initial_state", {"aim": "long_axis"}, "aim starts on a kidney"),
    ("initial_state", {"aim": "oblique", "kidney": "left"}, "initial_state.aim"),
    ("perturbations", {"gain": [80, 20]}, "lo > hi"),
    ("perturbations", {"gain": [[5, 20]]}, "at least two"),
    ("perturbations", {"probe_z_abs_mm": [-5, 5]}, "must not go below 0"),
    ("perturbations", {"frequency_mhz": [3.3]}, "not among the probe's"),
    ("perturbations", {"dark_cause": ["cable"]}, "perturbations.dark_cause"),
    ("perturbations", {"contact_fault": ["wet"]}, "perturbations.contact_fault"),
    ("perturbations", {"lifted_pressure": [0.0, 2.0]}, "must lie in [0, 1]"),
    ("perturbations", {"low_gain": [5, 150]}, "gain's 0-100"),
    ("perturbations", {"kidney": ["left"]}, "perturbations.kidney"),
    ("perturbations", {"dark_causes": ["gain"]}, "unknown key 'dark_causes' in perturbations"),
])
def test_bad_us_inputs_name_the_field(where, value, message):
    with pytest.raises(TaskCardError) as exc:
        _card(**{where: value})
    assert message in str(exc.value)


def test_the_kidney_is_named_once():
    with pytest.raises(TaskCardError, match="both name the kidney"):
        _card({"kidney": "left"}, {"kidney": ["left", "right"]})
    assert _card({"aim": "long_axis"}, {"kidney": ["left", "right"]}).perturbations["kidney"] == ["left", "right"]


def test_shipped_us_cards_are_read_whole_by_the_console(subject_cache):
    """Every key of every shipped card reaches the console: no perturbation key goes unread, and the state the
    initial_state asks for is the one the console starts with."""
    from consoles.us.model import DEFAULT_PRESET, USModel
    from rendering.subjects import load_runtime

    rt = load_runtime("s01")
    cards = select_cards("us")
    assert len(cards) == 7 and sorted(c.level for c in cards) == [0, 0, 1, 1, 3, 4, 6]
    for card in cards:
        unread = set(card.perturbations)
        for seed in (0, 1, 2, 3):  # keys read only for one draw (low_gain: a gain cause) show up over seeds
            m = USModel(rt, card.id, seed, card.initial_state, card.perturbations, out_shape=(64, 64))
            unread &= set(m.draws.unused_keys())
            st = card.initial_state
            # the card's preset, else one drawn from its perturbations' list, else the console's default
            if "preset" in card.perturbations:
                assert m.preset in card.perturbations["preset"], (card.id, m.preset)
            else:
                assert m.preset == st.get("preset", DEFAULT_PRESET), (card.id, m.preset)
            # the kidney the goal names, else one drawn from the perturbations' list
            if "kidney" in card.perturbations:
                assert m.kidney in card.perturbations["kidney"], (card.id, m.kidney)
            else:
                assert m.kidney == st.get("kidney") and m.kidney in ("left", "right"), (card.id, m.kidney)
            assert m.state()["start"]["pose"] == m.state()["pose"]
