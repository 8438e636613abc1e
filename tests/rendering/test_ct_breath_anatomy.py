"""Breathing moves organs, not bones (issue 33): on the CT scouts the distance from the lung apex to the iliac
crest of a subject is the same in every episode, whatever the episode's breath-hold, while the liver's dome
moves with it. Measured on the scout image itself: a structure's rows are where the clean scout changes when
that structure's tissue is turned into soft tissue."""
from __future__ import annotations

import numpy as np
import pytest

CARD = "ct_lung_coverage_isocenter"  # a card with a breath-hold perturbation
SUBJECT = "s05"
SEEDS = (0, 1, 2, 3, 4)


def _rows_of(model, labels: list[str], top: float, bottom: float) -> np.ndarray:
    """Scout rows (AP, clean) on which these labels show: the rows that change when they become soft tissue."""
    base, _ = model._scout_grid("ap", top, bottom)
    lut = model._hu_lut.copy()
    names = model.subject.tissues.label_names
    for value, name in names.items():
        if name in labels:
            model._hu_lut[int(value)] = 40.0
    model._proj = None
    try:
        changed, _ = model._scout_grid("ap", top, bottom)
    finally:
        model._hu_lut = lut
        model._proj = None
    return np.nonzero(np.abs(base - changed).max(axis=1) > 1e-3)[0]


def _apex_crest_and_dome(seed: int) -> tuple[float, float, float]:
    from runner.headless.drive import make_model
    from tasks.card import load_card

    model = make_model(load_card(CARD), SUBJECT, seed)
    z = model.subject.world_z()
    top = float(model.table_from_subject_z(z[-1])) + 20.0
    bottom = float(model.table_from_subject_z(z[0])) - 20.0
    lung = _rows_of(model, ["lung_left", "lung_right"], top, bottom)
    pelvis = _rows_of(model, ["pelvis"], top, bottom)
    liver = _rows_of(model, ["liver"], top, bottom)
    px = 2.0  # scout rows are 2 mm of table z from `top` down
    return (pelvis[0] - lung[0]) * px, liver[0] * px - (top - float(model.table_from_subject_z(0.0))), \
        model.breath_hold_mm


def test_apex_to_iliac_crest_is_the_same_in_every_episode(subject_cache):
    got = [_apex_crest_and_dome(s) for s in SEEDS]
    breaths = [b for _, _, b in got]
    assert max(breaths) - min(breaths) > 15.0, f"the sample must breathe differently: {breaths}"
    distances = [d for d, _, _ in got]
    # one 2 mm scout row of rounding (the episodes' couch positions are 0.1 mm draws)
    assert max(distances) - min(distances) <= 2.0 + 1e-6, f"apex to iliac crest by episode: {distances} mm " \
        f"(breath-holds {breaths} mm)"
    # the organs do move: the liver's dome, measured from the fixed jugular notch, follows the breath-hold
    domes = np.array([d for _, d, _ in got])
    assert np.corrcoef(domes, breaths)[0, 1] < -0.9 or np.corrcoef(domes, breaths)[0, 1] > 0.9, (domes, breaths)
    assert np.ptp(domes) > 15.0
