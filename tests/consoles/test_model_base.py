"""consoles.common.model_base without Qt: scheduler order and ties, refusals, the log, seeded draws."""
from __future__ import annotations

import numpy as np
import pytest

from consoles.common.model_base import (ConsoleActionError, ConsoleModelBase, EventScheduler, PerturbationDraws,
                                        Rule)
from rendering.seeding import seeded_rng


class Toy(ConsoleModelBase):
    """A model whose handlers record (name, simulated time seen)."""

    def __init__(self) -> None:
        super().__init__("toy_task", "dev", 0)
        self.ran: list[tuple[str, float]] = []
        self.notes: list[str] = []
        self.listeners.append(self.notes.append)

    def rec(self, name: str):
        return lambda: self.ran.append((name, self.t))


# ---- scheduler -------------------------------------------------------------------------------------------
def test_events_run_in_time_order_whatever_the_scheduling_order():
    m = Toy()
    for name, t in (("c", 3.0), ("a", 1.0), ("d", 7.5), ("b", 2.0)):
        m.schedule(t, m.rec(name))
    m.on_clock(0.0, 5.0)
    assert m.ran == [("a", 1.0), ("b", 2.0), ("c", 3.0)]  # each handler sees its own event time
    assert m.t == 5.0 and m.notes[-1] == "clock"
    m.on_clock(5.0, 10.0)
    assert m.ran[-1] == ("d", 7.5)


def test_ties_go_by_priority_then_scheduling_order():
    m = Toy()
    m.schedule(2.0, m.rec("late_low_priority"), priority=5)
    m.schedule(2.0, m.rec("first_p1"), priority=1)
    m.schedule(2.0, m.rec("second_p1"), priority=1)
    m.schedule(2.0, m.rec("p0"), priority=0)
    m.on_clock(0.0, 2.0)  # due exactly at the new time
    assert [n for n, _ in m.ran] == ["p0", "first_p1", "second_p1", "late_low_priority"]


def test_cancel_and_events_scheduled_by_a_handler_in_the_same_advance():
    m = Toy()
    dropped = m.schedule(1.0, m.rec("dropped"))

    def chain():
        m.ran.append(("chain", m.t))
        m.schedule(m.t + 0.5, m.rec("follow_up"))  # still inside this advance
        m.schedule(m.t + 10.0, m.rec("beyond"))

    m.schedule(2.0, chain)
    m.scheduler.cancel(dropped)
    m.scheduler.cancel(None)
    m.on_clock(0.0, 3.0)
    assert m.ran == [("chain", 2.0), ("follow_up", 2.5)]
    assert [e.name for e in m.scheduler.pending()] == ["<lambda>"] and m.scheduler.peek().t == 12.0


def test_one_long_advance_equals_many_short_ones():
    def run(steps):
        m = Toy()

        def tick():  # a periodic process, like bolus monitoring
            m.ran.append(("tick", m.t))
            if m.t < 9.0:
                m.schedule(m.t + 1.0, tick)
        m.schedule(0.5, tick)
        t = 0.0
        for dt in steps:
            m.on_clock(t, t + dt)
            t += dt
        return m.ran

    assert run([12.0]) == run([0.25] * 48) == run([5.0, 0.1, 6.9])
    assert len(run([12.0])) == 10


def test_a_handler_rescheduling_itself_at_the_same_time_cannot_hang():
    s = EventScheduler()
    count = [0]

    def again():
        count[0] += 1
        s.schedule(1.0, again)
    s.schedule(1.0, again)
    s.run_until(1.0, lambda t: None)
    assert count[0] == EventScheduler.MAX_EVENTS_PER_ADVANCE


# ---- refusals, messages, log -----------------------------------------------------------------------------
def test_require_shows_the_reason_and_raises():
    m = Toy()
    m._require(True, "never shown")
    assert m.message == "" and m.notes == []
    with pytest.raises(ConsoleActionError, match="Load a protocol first"):
        m._require(False, "Load a protocol first.")
    assert m.message == "Load a protocol first." and m.notes == ["message"]


def test_rule_predicate_and_first_failing_reason():
    loaded = Rule((lambda m: m.protocol is not None, "Load a protocol first."))
    idle = Rule((lambda m: m.status == "idle", "The scanner is busy."), (lambda m: m.ok, "not ok"))
    both = loaded & idle
    m = Toy()
    m.protocol, m.status, m.ok = None, "scanning", True
    assert not both(m) and both.reason(m) == "Load a protocol first."
    m.protocol = "chest"
    assert both.reason(m) == "The scanner is busy."
    with pytest.raises(ConsoleActionError, match="busy"):
        m._require_rule(both)
    m.status = "idle"
    assert both(m) and both.reason(m) is None
    m._require_rule(both)


def test_log_stamps_simulated_time():
    m = Toy()
    m.t = 12.34567
    m._log("scan_started", start_mm=10.0)
    assert m.events == [{"t": 12.346, "event": "scan_started", "start_mm": 10.0}]


def test_declared_parameter_names_are_unique_and_unknown_ones_refused():
    from consoles.common.params import Parameter

    m = Toy()
    m.declare([Parameter("kv", "Tube voltage", "kV", 70, 150, 0, 10)])
    with pytest.raises(ValueError):
        m.declare([Parameter("kv", "again", "kV", 70, 150, 0, 10)])
    with pytest.raises(ConsoleActionError, match="unknown parameter mA"):
        m.parameter("mA")
    assert m.parameter("kv").label == "Tube voltage"


# ---- seeded draws: the numbers of the consoles before the core existed -------------------------------------
def legacy_seeded_offset(rng: np.random.Generator, perturbations: dict, name: str) -> float:
    """consoles/ct/model.py:_seeded_offset as of commit 981262c, verbatim."""
    lo, hi = perturbations.get(f"{name}_mm", [0.0, 0.0])
    value = float(rng.uniform(lo, hi))
    if f"{name}_abs_mm" in perturbations:
        lo, hi = perturbations[f"{name}_abs_mm"]
        value = float(rng.choice([-1.0, 1.0]) * rng.uniform(lo, hi))
    return round(value, 1)


CARDS = [
    {},
    {"patient_shift_mm": [-30, 30], "table_height_offset_mm": [-20, 20]},
    {"patient_shift_abs_mm": [25, 50], "table_height_offset_abs_mm": [18, 40], "heart_rate_bpm": [55, 95]},
    {"patient_shift_mm": [-5, 5], "ctdi_limit_mgy": [4.0, 6.5], "prior_clip_end": ["top", "bottom"],
     "prior_clip_mm": [35, 70]},
]


def legacy_ct_draws(task: str, seed: int, p: dict) -> list:
    """The CT model's draw sequence as of commit 981262c (constructor, then the prior exam)."""
    rng = seeded_rng(task, "dev", seed, "perturbation")
    shift = legacy_seeded_offset(rng, p, "patient_shift")
    height = legacy_seeded_offset(rng, p, "table_height_offset")
    lo, hi = p.get("heart_rate_bpm", [70, 70])
    hr = int(round(rng.uniform(lo, hi)))
    limit = None
    if "ctdi_limit_mgy" in p:
        lo, hi = p["ctdi_limit_mgy"]
        limit = round(float(rng.uniform(lo, hi)) * 2) / 2
    ends = list(p.get("prior_clip_end", ["bottom"]))
    end = str(ends[int(rng.integers(len(ends)))])
    lo, hi = p.get("prior_clip_mm", [30.0, 50.0])
    return [shift, height, hr, limit, end, round(float(rng.uniform(lo, hi)), 1)]


def new_ct_draws(task: str, seed: int, p: dict) -> list:
    d = PerturbationDraws.for_episode(task, "dev", seed, p)
    shift, height = d.offset_mm("patient_shift"), d.offset_mm("table_height_offset")
    hr = int(round(d.uniform("heart_rate_bpm", [70, 70])))
    limit = d.uniform_if_present("ctdi_limit_mgy")
    limit = None if limit is None else round(limit * 2) / 2
    return [shift, height, hr, limit, str(d.choice("prior_clip_end", ["bottom"])),
            round(d.uniform("prior_clip_mm", [30.0, 50.0]), 1)]


@pytest.mark.parametrize("card", range(len(CARDS)))
def test_draws_reproduce_the_legacy_numbers(card):
    p = CARDS[card]
    for seed in range(25):
        for task in ("ct_lung_coverage_isocenter", "ccta_heart_coverage_isocenter"):
            assert new_ct_draws(task, seed, p) == legacy_ct_draws(task, seed, p)


def test_draws_pinned_values():
    """Numbers the legacy code gave (recorded once): a change of numpy's streams or of seeding fails here."""
    assert new_ct_draws("ct_lung_coverage_isocenter", 0, CARDS[2])[:3] == [-38.5, -33.1, 72]


def test_abs_draws_are_clearly_off_with_both_signs_and_typos_are_reported():
    vals = [PerturbationDraws(seeded_rng("t", s), {"x_abs_mm": [18, 40]}).offset_mm("x") for s in range(40)]
    assert all(18 <= abs(v) <= 40 for v in vals) and min(vals) < 0 < max(vals)
    d = PerturbationDraws(seeded_rng("t", 0), {"patient_shfit_abs_mm": [25, 50], "x_mm": [1, 2]})
    d.offset_mm("x")
    assert d.unused_keys() == ["patient_shfit_abs_mm"]
