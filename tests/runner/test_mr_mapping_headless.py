"""MR T1/T2 mapping tasks headless: the reference passes; an agent that acquires without correcting fails
on the fault seeds (replay); fixed policies ("never change", "always move the shim box", "always shorten the
window") pass at most about half the seeds of the staged L5 task; the L6 stopped row."""
from __future__ import annotations

from pathlib import Path

import pytest

from runner.agents.reference.common import Op
from runner.agents.reference.mr import MRPlanner
from runner.headless.mr import run_mr
from tasks.card import load_card_file

IDS = ("mr_t1t2_mapping_geometry_staged", "mr_t1t2_mapping_parameters", "mr_t1t2_mapping_from_boot",
       "mr_t1t2_mapping_from_empty", "mr_t1t2_mapping_staged", "L6_stopped_row_retry")
MAPS = ("t1_map_molli", "t2_map_t2prep")


def _card(tid: str):
    return load_card_file(Path(__file__).resolve().parents[2] / "tasks" / "mr" / tid / "task.json")


@pytest.mark.parametrize("tid", IDS)
def test_reference_passes_headless(tid):
    for seed in (0, 1, 2, 3):
        run = run_mr(_card(tid), "s07", seed)
        assert run.verdict.outcome == "PASS", (tid, seed, run.verdict.reason)


class AcquireOnly(MRPlanner):
    """Acquires each map row with its staged parameters (planned on the mid short axis when `plan`, with one
    fixed change first when `change`), looks at each map with an ROI, and never corrects anything."""

    def __init__(self, card, subject, change: str | None = None, plan: bool = False):
        super().__init__(card, subject)
        self.change, self.plan = change, plan
        self.changed: set[int] = set()

    def next_op(self, st):
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        for protocol in ("localizer_3plane",) + MAPS:  # an empty queue: add the rows first
            if not any(r["protocol"] == protocol for r in st["queue"]):
                return Op("add_protocol", {"pid": protocol})
        if not any(s["localizer"] for s in st["series"]):
            return self._start_row_op(st, next(r["uid"] for r in st["queue"] if r["protocol"] == "localizer_3plane"))
        for protocol in MAPS:
            s = self._last_map(st, protocol)
            if s is not None and not self._inspected(st, s["uid"]):
                return self._inspect_op(st, s)
            if s is not None:
                continue
            row = next(r for r in st["queue"] if r["protocol"] == protocol and r["status"] == "pending")
            if st["open_row"] != row["uid"]:
                return Op("open", {"uid": row["uid"]})
            if self.plan:
                op = self.plane_op(st, row, *self.mid_sax_target())
                if op is not None:
                    return op
            if self.change and row["uid"] not in self.changed:
                op = self._fixed_change(st, row)
                if op is not None:
                    return op
                self.changed.add(row["uid"])
            return Op("go")
        return Op("done")

    def _fixed_change(self, st, row):
        if self.change == "shim":
            return self._shim_fix_op(st, row)
        if self.change == "window":
            op = self._param_op(st, row)
            return op if op is not None and op.args["name"] in ("acq_window_ms", "trigger_delay_ms") else None
        return None


def _passes(card, change, seeds=range(8), plan: bool = False) -> list[bool]:
    out = []
    for seed in seeds:
        v = run_mr(card, "s03", seed, AcquireOnly(card, "s03", change, plan)).verdict
        out.append(v.outcome == "PASS")
    return out


FEEDBACK = [("mr_t1t2_mapping_staged", False), ("mr_t1t2_mapping_from_boot", True),
            ("mr_t1t2_mapping_from_empty", True)]


@pytest.mark.parametrize("tid,plan", FEEDBACK)
@pytest.mark.parametrize("change", [None, "shim", "window"])
def test_fixed_policies_pass_at_most_half_the_seeds(tid, plan, change):
    passed = _passes(_card(tid), change, plan=plan)
    assert sum(passed) <= len(passed) // 2, (tid, change, passed)
    if change is None:  # the no-fault seeds pass: the policy fails only where the map shows a fault
        assert sum(passed) >= 1


@pytest.mark.parametrize("tid,plan", FEEDBACK)
def test_acquire_without_correcting_fails_on_every_fault_seed(tid, plan):
    card = _card(tid)
    faults = []
    for seed in range(8):
        run = run_mr(card, "s03", seed, AcquireOnly(card, "s03", plan=plan))
        fault = run.state["start"]["seeded"].get("mapping_fault")
        faults.append(fault)
        if fault == "none":
            # unstaged rows keep the protocol's timing (400 + 200 ms), which over 50-100 bpm misses diastole at
            # fast rates: there the goal's "set the timing for this heart rate" is what fails, nothing else
            causes = {c for k in ("t1", "t2") for c in (run.verdict.details.get(k) or {}).get("causes", [])}
            if run.verdict.outcome != "PASS":
                assert plan and causes and causes <= {"motion", "window_exceeds_rr"}, (tid, seed, run.verdict.reason)
                assert run.state["physio"]["heart_rate_bpm"] > 80, (tid, seed, run.state["physio"])
        else:
            assert run.verdict.outcome == "FAIL" and run.verdict.sr == 0.0, (tid, seed, fault, run.verdict.reason)
            assert run.verdict.details["diagnostic_maps"] == []
    # balanced: every block of 4 seeds draws each fault once, "none" among them
    assert sorted(faults[:4]) == sorted(faults[4:]) == sorted(card.perturbations.mapping_fault), faults


def test_stopped_row_go_without_opening_runs_the_wrong_row_and_fails():
    card = _card("L6_stopped_row_retry")

    class GoBlind(MRPlanner):
        def next_op(self, st):
            if st["header"]["scanner"]["status"] == "scanning":
                return self._wait_running(st)
            if any(e["event"] == "row_started" for e in st["events"][st["start"]["n_events"]:]):
                return Op("done")
            return Op("go")

    v = run_mr(card, "s05", 0, GoBlind(card, "s05")).verdict
    assert v.outcome != "PASS" and not v.details["checks"]["no_other_row_started"]
