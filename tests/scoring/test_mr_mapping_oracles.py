"""mr_mapping oracle: the reference end state passes with T1/T2 within 5 % of the tissue table; an uncorrected
faulty acquisition, a wrong window and a basal slice fail with their measures."""
from __future__ import annotations

from pathlib import Path

import pytest

from runner.agents.reference.common import Op
from runner.agents.reference.mr import MRPlanner
from runner.headless.mr import run_mr
from scoring.oracles.mr_mapping import MOLLI_SCHEMES
from scoring.registry.mr import MAP_MAX_REL_ERROR
from tasks.card import load_card_file

STAGED = "mr_t1t2_mapping_staged"


def _card(tid: str):
    return load_card_file(Path(__file__).resolve().parents[2] / "tasks" / "mr" / tid / "task.json")


def _seed_with(card, subject: str, fault: str) -> int:
    from runner.headless.drive import make_model

    return next(s for s in range(8) if make_model(card, subject, s).mapping_fault == fault)


def test_molli_schemes_agree_with_the_physics():
    from rendering import mr_mapping as mm

    assert set(MOLLI_SCHEMES) == set(mm.MOLLI_SCHEMES)


def test_reference_end_state_passes_with_tissue_values():
    card = _card(STAGED)
    v = run_mr(card, "s02", _seed_with(card, "s02", "none")).verdict
    assert v.outcome == "PASS", v.reason
    for kind in ("t1", "t2"):
        q = v.details[kind]["quantitative"]
        assert q["roi_n"] > 30 and q["rel_error"] <= MAP_MAX_REL_ERROR, (kind, q)
        assert v.details[kind]["causes"] == []


class Uncorrected(MRPlanner):
    """Acquire both staged rows as they are (optionally after setting one parameter)."""

    def __init__(self, card, subject, param=None, only: str | None = None):
        super().__init__(card, subject)
        self.params = dict([param] if isinstance(param, tuple) else param or {})
        self.only = only

    def next_op(self, st):
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        for protocol in ("t1_map_molli", "t2_map_t2prep"):
            if self._session_done(st, protocol):
                continue
            row = next(r for r in st["queue"] if r["protocol"] == protocol and r["status"] == "pending")
            if st["open_row"] != row["uid"]:
                return Op("open", {"uid": row["uid"]})
            for name, value in self.params.items():
                if self.only in (None, protocol) and row["params"][name] != value:
                    return Op("set_param", {"name": name, "value": value})
            return Op("go")
        return Op("done")


@pytest.mark.parametrize("fault,check", [("shim_off_heart", "t1_artefact_free"),
                                         ("window_exceeds_rr", "t1_window_within_rr"),
                                         ("basal_slice", "t1_mid_ventricular")])
def test_uncorrected_fault_fails_with_its_measure(fault, check):
    card = _card(STAGED)
    seed = _seed_with(card, "s02", fault)
    v = run_mr(card, "s02", seed, Uncorrected(card, "s02")).verdict
    assert v.outcome == "FAIL" and v.sr == 0.0 and not v.details["checks"][check], (fault, v.reason)
    assert v.details["diagnostic_maps"] == [] and check in v.reason
    if fault == "basal_slice":  # outside the mid third: the oracle's mid-ventricular ROI is empty there
        assert v.details["t1"]["geometry"]["position_share"] < 1.0 / 3.0
        assert v.details["t1"]["quantitative"]["roi_n"] == 0
    else:  # the map is measurably worse than the same subject's clean map: T1 scattered (and biased)
        clean = run_mr(card, "s02", _seed_with(card, "s02", "none"), Uncorrected(card, "s02")).verdict
        sd, sd0 = (x.details["t1"]["quantitative"]["roi_sd_ms"] for x in (v, clean))
        assert sd > 3.0 * sd0, (fault, sd, sd0)


def test_one_map_corrected_is_partial_not_fail():
    card = _card(STAGED)
    seed = _seed_with(card, "s02", "window_exceeds_rr")
    from consoles.mr.mapping import recommended_timing
    from consoles.mr.protocols import get_protocol
    from runner.headless.drive import make_model

    m = make_model(card, "s02", seed)
    row = next(r for r in m.rows if r.protocol == "t1_map_molli")
    delay, window = recommended_timing(row.params, get_protocol(row.protocol), m.heart_rate_bpm)
    fix = {"acq_window_ms": window, "trigger_delay_ms": delay}
    v = run_mr(card, "s02", seed, Uncorrected(card, "s02", fix, only="t1_map_molli")).verdict
    assert v.outcome == "PARTIAL" and v.sr == 0.0, v.reason
    assert v.details["diagnostic_maps"] == ["t1"] and not v.details["checks"]["t2_window_within_rr"]


def test_wrong_window_fails_even_without_a_seeded_fault():
    card = _card(STAGED)
    seed = _seed_with(card, "s02", "none")
    v = run_mr(card, "s02", seed, Uncorrected(card, "s02", ("acq_window_ms", 900.0))).verdict
    assert v.outcome != "PASS" and not v.details["checks"]["t1_window_within_rr"]


def test_noop_fails_every_mapping_task():
    from runner.headless.drive import score_initial

    for tid in ("mr_t1t2_mapping_geometry_staged", "mr_t1t2_mapping_parameters", "mr_t1t2_mapping_from_boot",
                "mr_t1t2_mapping_from_empty", STAGED, "L6_stopped_row_retry"):
        assert score_initial(_card(tid), "s02", 0).outcome == "FAIL", tid
