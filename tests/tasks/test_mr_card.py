"""The MR card contract (tasks/card.py: MRInitialState, MRPerturbations): typed keys the MR console reads,
errors that name the problem, and shipped MR cards that the console accepts."""
from __future__ import annotations

import pytest

from tasks.card import MRCard, MRInitialState, MRPerturbations, TaskCardError, parse_card, select_cards

COMMON = dict(modality="mr", id="t", version="1", level=0, title="t", goal="Do the thing.", budgets={"max_steps": 5},
              oracle="synthetic")


def _card(initial_state=None, perturbations=None):
    return parse_card({**COMMON, "initial_state": initial_state or {}, "perturbations": perturbations or {}})


def test_a_full_mr_card_validates_and_reads_back_as_plain_json():
    st = {"queue": [{"protocol": "localizer_3plane", "status": "done"},
                    {"protocol": "cine_4ch", "names": ["Cine 4ch", "HLA"], "params": {"trigger": "none", "matrix": 64}},
                    {"protocol": "cine_2ch", "status": "running", "remaining_s": 40}],
          "open": 2, "layout": {"layout": "2x2", "viewports": [{"row": 1, "image": 2}, None], "active": 1,
                                "graphics_mode": "outer"},
          "autoload_localizer": False, "labels_hidden": True, "ecg_signal": True, "field_t": 1.5,
          "landmark": "heart", "indication": "LV function"}
    pert = {"heart_rate_bpm": [60, 80], "shuffle_rows": [2, 3], "indication": ["a b c", "d e f"],
            "ecg_signal": [True, False], "scanner_busy": [True, False], "running_remaining_s": [35, 90],
            "prior_clipped": [False, True], "prior_clip_mm": [18, 30], "localizer_order": [[1, 2, 3], [3, 1, 2]]}
    card = _card(st, pert)
    assert isinstance(card, MRCard)
    assert dict(card.initial_state) == st and dict(card.perturbations) == pert
    assert isinstance(card.initial_state, MRInitialState) and isinstance(card.perturbations, MRPerturbations)


@pytest.mark.parametrize("where,value,message", [
    ("initial_state", {"queue": [{"protocol": "cine_4ch", "nmae": "x"}]}, "unknown key 'nmae' in initial_state.queue.0"),
    ("initial_state", {"queue": [{"protocol": "cine_4ch", "status": "finished"}]}, "initial_state.queue.0.status"),
    ("initial_state", {"queue": [{"protocol": "cine_4ch", "name": "a", "names": ["b"]}]}, "either name or names"),
    ("initial_state", {"queue": [{"protocol": "cine_4ch", "remaining_s": 5}]}, "only meaningful for a running row"),
    ("initial_state", {"queue": [{"protocol": "t2_haste_cor", "status": "skipped", "cover_labels": ["kidney_"]}]},
     "must be done or pending"),
    ("initial_state", {"queue": [{"protocol": "t2_haste_cor", "coverage_fault": True}]}, "give cover_labels too"),
    ("perturbations", {"coverage_fault": ["n_slices", "matrix"]}, "perturbations.coverage_fault"),
    ("perturbations", {"plan_tilt_deg": [10, 5]}, "plan_tilt_deg"),
    ("initial_state", {"queue": [{"protocol": "cine_4ch"}], "open": 2}, "open = 2, but the queue has 1 rows"),
    ("initial_state", {"layout": {"viewports": [{"row": 1, "series": 1}]}}, "give exactly one"),
    ("initial_state", {"layout": {"graphics_mode": "none"}}, "initial_state.layout.graphics_mode"),
    ("initial_state", {"landmark": "knee"}, "initial_state.landmark"),
    ("initial_state", {"queue": [{"protocol": "a", "status": "running"}, {"protocol": "b", "status": "running"}]},
     "at most one queue row can be running"),
    ("perturbations", {"localizer_order": [[1, 2, 2]]}, "not an order of the localizer's images"),
    ("perturbations", {"ecg_signal": [True, True]}, "never vary"),
    ("perturbations", {"shuffle_rows": [2, 2]}, "names a row twice"),
    ("perturbations", {"running_remaining_s": [40, 30]}, "lo > hi"),
    ("perturbations", {"patient_shift_mm": [0, 1]}, "unknown key 'patient_shift_mm' in perturbations"),
])
def test_bad_mr_inputs_are_load_errors_naming_the_problem(where, value, message):
    with pytest.raises(TaskCardError, match=message.replace("(", r"\(").replace("[", r"\[")):
        _card(**{where: value})


def test_shipped_mr_cards_name_known_protocols_and_the_console_accepts_them():
    from consoles.mr.model import MRModel
    from consoles.mr.protocols import get_protocol
    from rendering.subjects import load_runtime

    cards = select_cards("mr")
    assert len(cards) == 34  # 15 + the 13 geometry-planning cards (issue 11) + the 6 mapping cards (issue 12)
    rt = load_runtime("dev")
    for card in cards:
        for row in card.initial_state.get("queue", []):
            get_protocol(row["protocol"])
        m = MRModel(rt, card.id, 0, card.initial_state, card.perturbations)
        assert m.draws.unused_keys() == [], card.id  # every perturbation key is read by the console


# ---- mapping tasks (issue 12) ---------------------------------------------------------------------------
def test_mapping_protocols_named_by_the_card_are_the_consoles():
    from consoles.mr.protocols import PROTOCOLS
    from tasks.card import MR_MAPPING_PROTOCOLS

    assert set(MR_MAPPING_PROTOCOLS) == {p.id for p in PROTOCOLS if p.map_kind}


@pytest.mark.parametrize("where,value,message", [
    ("perturbations", {"mapping_fault": ["shim_off_heart", "basal_slice"]}, "must include none"),
    ("perturbations", {"mapping_fault": ["none", "shim_too_small"]}, "perturbations.mapping_fault.1"),
    ("perturbations", {"stop_fault_fraction": [0.2, 1.2]}, "strictly between 0 and 1"),
    ("initial_state", {"queue": [{"protocol": "cine_4ch", "mapping_fault": True}]}, "apply to a mapping row"),
    ("initial_state", {"queue": [{"protocol": "t1_map_molli", "stop_fault": True}]}, "must be running"),
    ("initial_state", {"queue": [{"protocol": "t1_map_molli", "status": "running", "stop_fault": True},
                                 {"protocol": "t2_map_t2prep", "status": "running", "stop_fault": True}]},
     "at most one"),
])
def test_mapping_keys_are_checked_with_clear_errors(where, value, message):
    with pytest.raises(TaskCardError, match=message):
        _card(**{where: value})


@pytest.mark.parametrize("faults,message", [
    (None, "library_mapping_fault needs perturbations.mapping_fault"),
    (["none", "basal_slice"], "basal_slice cannot live in the library"),
])
def test_library_mapping_fault_is_checked_against_its_draw(faults, message):
    pert = {} if faults is None else {"mapping_fault": faults}
    with pytest.raises(TaskCardError, match=message):
        _card(initial_state={"queue": [], "library_mapping_fault": True}, perturbations=pert)
    _card(initial_state={"queue": [], "library_mapping_fault": True},
          perturbations={"mapping_fault": ["none", "untriggered"]})  # the valid form loads


# ---- optional rows (issue 21: the row a remedy acts on moves over list places) --------------------------
_OPT = [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "t1_gre_tra", "status": "done", "optional": True},
        {"protocol": "cine_2ch"}, {"protocol": "cine_4ch"}]


@pytest.mark.parametrize("initial_state,perturbations,message", [
    ({"queue": _OPT, "open": 2}, {}, "open = 2 names an optional row"),
    ({"queue": _OPT, "layout": {"viewports": [{"row": 2}]}}, {}, r"layout.viewports\[0\].row = 2 names an optional row"),
    ({"queue": _OPT, "layout": {"viewports": [{"series": 1}]}}, {}, "optional rows move series uids"),
    ({"queue": _OPT}, {"shuffle_rows": [2, 3]}, "shuffle_rows names row 2, an optional row"),
    ({"queue": [{"protocol": "cine_2ch", "optional": True}]}, {}, "its status must be done"),
    ({"queue": [{"protocol": "t1_gre_tra", "status": "done", "optional": True, "plan_error": True}]}, {},
     r"cannot take seeded geometry or faults \(plan_error\)"),
])
def test_optional_rows_are_never_named_by_open_layout_or_shuffle(initial_state, perturbations, message):
    with pytest.raises(TaskCardError, match=message):
        _card(initial_state, perturbations)
    _card({"queue": _OPT, "open": 3, "layout": {"viewports": [{"row": 1}]}}, {"shuffle_rows": [3, 4]})  # valid


def test_optional_rows_are_present_in_about_half_the_episodes_and_move_nothing_else():
    from consoles.mr.model import MRModel
    from rendering.subjects import load_runtime
    from tasks.card import load_card

    card = load_card("L1_go_availability")
    rt = load_runtime("dev")
    plain = {**card.initial_state.as_dict(),
             "queue": [r for r in card.initial_state.as_dict()["queue"] if not r.get("optional")]}
    places, counts = set(), []
    for seed in range(1, 13):
        m = MRModel(rt, card.id, seed, card.initial_state, card.perturbations)
        ref = MRModel(rt, card.id, seed, plain, {**card.perturbations.as_dict(), "shuffle_rows": [2, 3, 4]})
        pending = [r for r in m.rows if r.status == "pending"]
        places.add(m.index_of(pending[0].uid))
        counts.append(len(m.rows) - 4)
        # the truth and the pending rows' names and order do not depend on which optional rows are present
        assert m.ecg_signal == ref.ecg_signal and m.heart_rate_bpm == ref.heart_rate_bpm
        assert [r.protocol for r in pending] == [r.protocol for r in ref.rows if r.status == "pending"]
    assert places == {2, 3, 4} and 0.25 <= sum(counts) / (2 * len(counts)) <= 0.75
    dev = MRModel(rt, card.id, 0, card.initial_state, card.perturbations)
    assert len(dev.rows) == 6 and not dev.ecg_signal  # dev seed 0: the fullest queue, the remedy case
