"""The MR headless driver, the reference planner's GUI layer, and the fixed-policy test of the judgement tasks.

Judgement tasks (L2) are balanced: over the seeds of one subject the right consequence differs, so a policy
that always does the same thing passes at most half of them. Each policy here is a fixed sequence of
console operations that never looks at the screen; the seeds are shown to be balanced on the task's hidden
truth (read from the start record and the oracle's own measures), and the reference passes every seed.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Callable

import pytest

from consoles.common.clock import SimClock
from consoles.mr.model import ConsoleActionError
from runner.agents.reference.common import Op
from runner.agents.reference.mr import MRPlanner, MRReferenceSolver
from runner.headless import run_reference, score_initial
from runner.headless.mr import HeadlessError, make_model, run_mr
from scoring.oracles import get_oracle
from scoring.subject_oracle import load_oracle
from tasks.card import load_card
from tests.runner.fake_control import FakeControl

SUBJECT = "s01"


@pytest.fixture(scope="module")
def oracle(subject_cache):
    return load_oracle(SUBJECT)


# ---- the driver ---------------------------------------------------------------------------------------
def test_reference_passes_and_runs_the_next_row_to_its_end(subject_cache):
    card = load_card("L2a_skip_row")
    run = run_reference(card, SUBJECT, 0)
    assert run.verdict.outcome == "PASS" and run.verdict.pr == 1.0 and run.ops[-1].name == "done"
    assert run.state["t"] > 0  # the next row ran to its end in simulated time
    assert score_initial(card, SUBJECT, 0).outcome == "FAIL"


def test_a_refused_operation_is_a_headless_error(subject_cache):
    class GoRegardless(MRPlanner):
        def next_op(self, st):
            return Op("go")

    card = load_card("L1_idle_or_scanning")
    busy = next(s for s in range(4) if make_model(card, SUBJECT, s).running_row is not None)
    with pytest.raises(HeadlessError, match="refused"):
        run_mr(card, SUBJECT, busy, planner=GoRegardless(card, SUBJECT))


def test_a_plan_that_never_ends_is_a_headless_error(subject_cache):
    class Dawdle(MRPlanner):
        def next_op(self, st):
            return Op("wait", {"seconds": 1.0})

    card = load_card("mr_show_shim_box_v1")
    with pytest.raises(HeadlessError, match="no 'done'"):
        run_mr(card, SUBJECT, 0, planner=Dawdle(card, SUBJECT), max_ops=5)


# ---- the GUI layer ------------------------------------------------------------------------------------


def _actions(card_id: str, seed: int, n: int) -> tuple[list[dict], list[str]]:
    card = load_card(card_id)
    solver = MRReferenceSolver(card, SUBJECT)
    solver.control = FakeControl(make_model(card, SUBJECT, seed))
    out = [json.loads(solver.next_action(None)) for _ in range(n)]
    return out, solver.control.asked


def test_rename_is_a_right_click_the_menu_entry_and_typed_text(subject_cache):
    acts, asked = _actions("mr_rename_sequence_4ch_v1", 0, 5)
    assert acts[0]["action"] == "click" and acts[0]["button"] == "right"
    assert asked[0].startswith("queue_row:") and asked[1] == "queue_menu:rename"
    assert [a.get("key") or a.get("text") for a in acts[2:]] == ["ctrl+a", "4ch", "Enter"]


def test_trigger_is_set_on_the_physio_tab_of_the_opened_row(subject_cache):
    acts, asked = _actions("L0_physio_trigger", 0, 1)
    assert acts[0]["action"] == "double_click" and asked[0].startswith("queue_row:")


def test_an_image_is_dragged_from_the_series_list_onto_the_viewport(subject_cache):
    acts, asked = _actions("mr_drag_coronal_to_viewport2_v1", 0, 1)
    assert acts[0]["action"] == "drag" and asked[0].startswith("series_item:1.") and asked[1] == "viewport2"


# ---- fixed policies on the judgement tasks ------------------------------------------------------------
Policy = Callable[[object, SimClock], None]


def _try(fn: Callable[[], object]) -> None:
    try:
        fn()
    except ConsoleActionError:
        pass  # a refused click changes nothing, as on the console


def _wait(seconds: float) -> Policy:
    return lambda m, clock: clock.advance(seconds)


def _go(m, clock) -> None:
    _try(m.go)
    clock.advance(1.0)


def _open_pending(k: int) -> Policy:
    """Open the k-th pending row (0-based) of the queue as it stands."""
    def act(m, clock):
        pending = [r for r in m.rows if r.status == "pending"]
        if k < len(pending):
            m.open(pending[k].uid)
        clock.advance(1.0)
    return act


def _set_trigger(value: str) -> Policy:
    return lambda m, clock: _try(lambda: m.set_param("trigger", value))


def _repeat_last_done(m, clock) -> None:
    m.repeat([r for r in m.rows if r.status == "done"][-1].uid)


def _select_entry(k: int) -> Policy:
    return lambda m, clock: m.select_entry(m.series_entries()[k].key)


def _go_or_wait_and_go(m, clock) -> None:
    """Go; if refused, wait the longest allowed wait once and Go again (blind to the header)."""
    try:
        m.go()
    except ConsoleActionError:
        clock.advance(30.0)
        _try(m.go)


POLICIES: dict[str, dict[str, list[Policy]]] = {
    "L1_go_availability": {
        "go now": [_go],
        "switch to pulse, go": [_open_pending(0), _set_trigger("pulse"), _go],
        "switch to none, go": [_open_pending(0), _set_trigger("none"), _go],
        "wait, go": [_wait(30.0), _go],
    },
    "L1_idle_or_scanning": {
        "go now": [_go],
        "wait 30 s, go": [_wait(30.0), _go],
        "wait 60 s, go": [_wait(30.0), _wait(30.0), _go],
        "go, on refusal wait 30 s and go": [_go_or_wait_and_go],
    },
    "mr_renal_acquisition_adequacy_v2": {
        "always accept": [_go],
        "always repeat": [_repeat_last_done],
    },
    "mr_select_sequence_v1": {f"start pending row {k + 1}": [_open_pending(k), _go] for k in range(5)},
    "mr_select_transverse_image_only_v1": {f"pick image {k + 1}": [_select_entry(k)] for k in range(3)},
}
# one subject, whole blocks of the balanced draw (2, 5 or 6 options); the renal task forms a series per seed
SEEDS = {"L1_go_availability": range(10), "L1_idle_or_scanning": range(10),
         "mr_renal_acquisition_adequacy_v2": range(6), "mr_select_sequence_v1": range(10),
         "mr_select_transverse_image_only_v1": range(12)}


def _play(card, seed: int, steps: list[Policy], oracle) -> dict:
    m = make_model(card, SUBJECT, seed)
    clock = SimClock(start=m.t)
    clock.subscribe(m.on_clock)
    for step in steps:
        step(m, clock)
    return get_oracle(card.oracle)(m.state(), oracle, card).model_dump()


def _truth(card_id: str, verdict: dict, state: dict) -> object:
    """The hidden fact the right consequence depends on, per seed."""
    d = verdict["details"]
    if card_id == "L1_go_availability":
        return state["start"]["ecg_signal"]
    if card_id == "L1_idle_or_scanning":
        return state["start"]["scanner_busy"]
    if card_id == "mr_renal_acquisition_adequacy_v2":
        return d["adequate"]
    if card_id == "mr_select_sequence_v1":
        return d["wanted_protocol"]
    return [e["image"] for e in state["series_list"]].index(d["wanted"][1])  # where the transverse is listed


@pytest.mark.parametrize("card_id", list(POLICIES))
def test_judgement_tasks_are_balanced_and_no_fixed_policy_passes_more_than_half(card_id, oracle, subject_cache):
    card = load_card(card_id)
    truths, ref_pass = Counter(), 0
    for seed in SEEDS[card_id]:
        run = run_mr(card, SUBJECT, seed, planner=MRPlanner(card, SUBJECT, oracle))
        ref_pass += run.verdict.outcome == "PASS"
        truths[json.dumps(_truth(card_id, run.verdict.model_dump(), run.state))] += 1
    n = len(SEEDS[card_id])
    assert ref_pass == n
    assert len(truths) >= 2 and len(set(truths.values())) == 1, f"unbalanced seeds: {dict(truths)}"
    rates = {}
    for name, steps in POLICIES[card_id].items():
        rates[name] = sum(_play(card, s, steps, oracle)["outcome"] == "PASS" for s in SEEDS[card_id]) / n
    assert max(rates.values()) <= 0.5, rates
