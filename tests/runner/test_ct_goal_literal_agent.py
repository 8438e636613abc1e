"""A headless agent that does literally what each CT goal says, on the real CTModel (issue 32).

It plans each stated bound at its edge minus a little (range margins, isocentre offset, recovery overlap,
KUB noise, the CCTA monitoring level and the vessel it names) and must pass; the same agent a few mm outside
one stated bound must fail that check. Cohort subjects and seeds, driven through runner.headless like the
reference; the targets come from the goal's words applied to the subject's anatomy, not from the solver's
margins (the solver's planner only turns them into console operations).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from rendering.ct_physics import ctdi_vol
from rendering.geometry import TableFrame
from runner.agents.reference.common import Op
from runner.agents.reference.ct import CTPlanner
from runner.headless.ct import run_ct
from scoring.registry.ct import REGISTRY, RECOVERY_MAX_OVERLAP_MM
from tasks.card import load_card

LITTLE = 3.0  # mm (or HU) inside a stated bound
OUTSIDE = 3.0  # mm (or HU) beyond it
PAIRS = [("s04", 0), ("s17", 1), ("s25", 2)]
STATED_EXCESS_MM = {"ct_ui_smoke_routine": 20.0, "ct_lung_coverage_isocenter": 20.0,
                    "ct_liver_coverage_isocenter": 20.0, "ct_renal_bilateral_coverage": 20.0,
                    "ccta_heart_coverage_isocenter": 30.0, "ct_kub_low_dose_constraint": 20.0,
                    "ct_undercoverage_recovery": 20.0, "ct_renal_undercoverage_recovery": 20.0}
STATED_ISO_TOL_MM = {"ct_lung_coverage_isocenter": 15.0, "ct_liver_coverage_isocenter": 15.0,
                     "ccta_heart_coverage_isocenter": 20.0}
STATED_OVERLAP_MM = 20.0
STATED_NOISE_HU = 35.0
MONITOR_BELOW_HEART_TOP_MM = 25.0  # "about 2-3 cm below its top"


class GoalLiteralPlanner(CTPlanner):
    """The goal's instructions with each stated number at (bound - LITTLE), or one of them pushed past it."""

    def __init__(self, card, subject, excess_mm: float, iso_off_mm: float = 0.0, overlap_mm: float = 5.0,
                 noise_hu: float | None = None, roi_vessel: str = "aorta_descending") -> None:
        super().__init__(card, subject)
        self.plan.update(margin_top=excess_mm, margin_bottom=excess_mm)
        self.iso_off, self.overlap, self.noise, self.vessel = iso_off_mm, overlap_mm, noise_hu, roi_vessel
        self._tech: tuple[float, float, float] | None = None

    def target_range(self, state):
        start, end = super().target_range(state)
        if self.plan["recovery"]:  # the goal's overlap with the first series instead of the solver's
            prior = next(s for s in state["series"] if s.get("prior"))
            zmin, zmax = self.organ_extent()
            if zmax - prior["subject_z_top"] >= prior["subject_z_bottom"] - zmin:  # the top was missed
                end = round(prior["start_mm"] - self.overlap, 1)
            else:
                start = round(prior["end_mm"] + self.overlap, 1)
        return start, end

    def target_table_height(self, state):
        h = super().target_table_height(state)
        return None if h is None else round(h + self.iso_off, 1)

    def target_technique(self, state):
        return None if self.noise is not None else super().target_technique(state)

    def technique_for_noise(self, state) -> tuple[float, float, float]:
        """(kV, pitch, mAs) of the lowest CTDIvol whose noise stays at or under self.noise: the goal read as
        "lower the dose until the noise readout nears the stated ceiling". Noise ~ 1/sqrt(CTDIvol) at the
        planned range's size (rendering.ct_physics), so the noise readout of the current technique scales."""
        p, have = state["params"], state["dose"]["expected_noise_hu"]
        floor = ctdi_vol(p["kv"], p["mas"], p["pitch"]) * (have / self.noise) ** 2
        best = None
        for kv in (80.0, 100.0, 120.0):
            for pitch in np.round(np.arange(0.5, 1.5001, 0.05), 2):
                mas = max(10.0, float(math.ceil(floor / ctdi_vol(kv, 1.0, pitch))))
                c = ctdi_vol(kv, mas, pitch)
                if best is None or c < best[0]:
                    best = (c, kv, float(pitch), mas)
        return best[1:]

    def plan_op(self, st):
        op = super().plan_op(st)  # range and table height first: the noise readout depends on the range
        if op is not None or self.noise is None:
            return op
        if self._tech is None:  # chosen once, on the final range (each change moves the rounded readout)
            self._tech = self.technique_for_noise(st)
        for name, value in zip(("kv", "pitch", "mas"), self._tech):
            if abs(st["params"][name] - value) > 1e-6:
                return Op("set_param", {"name": name, "value": value})
        return None

    def monitor_target(self, state):
        """Monitoring slice 2.5 cm below the heart top; the ROI at the centre of the named vessel there."""
        rt = self.oracle.runtime
        z_mon = self.oracle.organ_z_extent("heart")[1] - MONITOR_BELOW_HEART_TOP_MM
        k = int(np.rint((z_mon - rt.origin_mm[2]) / rt.spacing_mm[2]))
        j, i = np.nonzero(self.oracle.organ_mask(self.vessel)[k])
        x, y = rt.origin_mm[0] + rt.spacing_mm[0] * i.mean(), rt.origin_mm[1] + rt.spacing_mm[1] * j.mean()
        frame = TableFrame.from_state(state)
        return (round(float(frame.table_z(float(rt.world_z()[k]))), 1), float(frame.gantry_x(x)),
                float(y) - float(state["plan"]["y_iso_subject_mm"]))


def _run(task: str, subject: str, seed: int, **kw):
    card = load_card(task)
    kw.setdefault("excess_mm", STATED_EXCESS_MM[task] - LITTLE)
    return run_ct(card, subject, seed, GoalLiteralPlanner(card, subject, **kw)).verdict


@pytest.mark.parametrize("subject,seed", PAIRS)
@pytest.mark.parametrize("task", sorted(STATED_EXCESS_MM))
def test_doing_what_the_goal_says_at_its_stated_edges_passes(task, subject, seed, subject_cache):
    assert REGISTRY[task].max_excess_mm == STATED_EXCESS_MM[task]
    kw = {}
    if task in STATED_ISO_TOL_MM:
        kw["iso_off_mm"] = (STATED_ISO_TOL_MM[task] - LITTLE) * (1 if seed % 2 else -1)
    if REGISTRY[task].recovery:
        kw["overlap_mm"] = STATED_OVERLAP_MM - LITTLE
    if REGISTRY[task].dose_limit:
        kw["noise_hu"] = STATED_NOISE_HU - LITTLE
    v = _run(task, subject, seed, **kw)
    assert v.outcome == "PASS", (v.reason, v.details)
    if REGISTRY[task].dose_limit:
        assert STATED_NOISE_HU - 2 * LITTLE < v.details["noise_hu"] < STATED_NOISE_HU


def _outside_cases() -> list[tuple[str, str, dict]]:
    """(card, check, planner arguments): past the stated margin (every card), isocentre, overlap or noise."""
    cases = []
    for task in sorted(STATED_EXCESS_MM):
        cases.append((task, "excess", {"excess_mm": STATED_EXCESS_MM[task] + OUTSIDE}))
        if task in STATED_ISO_TOL_MM:
            cases.append((task, "isocentre", {"iso_off_mm": STATED_ISO_TOL_MM[task] + OUTSIDE}))
        if REGISTRY[task].recovery:
            cases.append((task, "overlap", {"overlap_mm": RECOVERY_MAX_OVERLAP_MM + OUTSIDE}))
        if REGISTRY[task].dose_limit:
            cases.append((task, "noise", {"noise_hu": STATED_NOISE_HU + OUTSIDE}))
    return cases


@pytest.mark.parametrize("subject,seed", PAIRS[1:2])  # one pair: the hand-built tests cover five subjects
@pytest.mark.parametrize("task,check,kw", _outside_cases())
def test_just_outside_a_stated_bound_fails(task, check, kw, subject, seed, subject_cache):
    v = _run(task, subject, seed, **kw)
    assert v.outcome == "PARTIAL", (check, v.reason)
    if task == "ct_ui_smoke_routine":
        assert "beyond the lungs" in v.reason
    else:
        assert not v.details["checks"][check], (check, v.details)


@pytest.mark.parametrize("subject,seed", PAIRS[:1])
def test_ccta_roi_in_the_ascending_aorta_fails(subject, seed, subject_cache):
    """Issue 32: "click inside the descending aorta" was checked against the whole aorta."""
    v = _run("ccta_heart_coverage_isocenter", subject, seed, roi_vessel="aorta_ascending")
    assert v.outcome == "PARTIAL" and not v.details["checks"]["roi_in_aorta"], v.reason
