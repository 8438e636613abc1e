"""The visibility figure (issue 33): every answer-defining boundary of a CT card shows on one of its scouts
with CNR >= 3, measured on the displayed pixels (runner.visibility drives the console's own model)."""
from __future__ import annotations

import numpy as np
import pytest

from scoring import visibility as vis

# a fixed small sample (the cohort run is `medimageos tasks visibility`): the episodes issue 33's players read
# blind (s17 seed 2 renal, s05 seed 0 KUB, s04 seed 1 lung, s23 seed 1 CCTA, s14 seed 0 chest recovery)
SAMPLE = (("s17", 2), ("s05", 0), ("s04", 1), ("s23", 1), ("s14", 0))
CT_CARDS = ("ccta_heart_coverage_isocenter", "ct_kub_low_dose_constraint", "ct_liver_coverage_isocenter",
            "ct_lung_coverage_isocenter", "ct_renal_bilateral_coverage", "ct_renal_undercoverage_recovery",
            "ct_ui_smoke_routine", "ct_undercoverage_recovery")


def _step_image(contrast: float, sd: float, rng: np.random.Generator):
    clean = np.full((60, 40), 100.0)
    fp = np.zeros((60, 40), bool)
    fp[30:50, 10:30] = True
    clean[fp] += contrast
    return clean + rng.normal(0, sd, clean.shape), clean, fp


@pytest.mark.parametrize("contrast,sd", [(12.0, 2.0), (3.0, 2.0), (0.0, 2.0)])
def test_boundary_cnr_measures_a_known_step(contrast, sd):
    """A step edge of known contrast in known noise gives CNR = contrast / SD at either end."""
    grey, clean, fp = _step_image(contrast, sd, np.random.default_rng(1))
    for end in ("top", "bottom"):
        cnr, con, got_sd, width = vis.boundary_cnr(grey, clean, fp, end, 2.0)
        assert width == 40.0
        assert got_sd == pytest.approx(sd, rel=0.25)
        assert cnr == pytest.approx(contrast / sd, abs=0.6)


def test_boundary_cnr_of_an_organ_off_the_image_is_zero():
    grey, clean, fp = _step_image(12.0, 2.0, np.random.default_rng(1))
    assert vis.boundary_cnr(grey, clean, np.zeros_like(fp), "top", 2.0) == (0.0, 0.0, 0.0, 0.0)
    fp_top = np.zeros_like(fp)
    fp_top[0:10, 5:15] = True  # the top edge on the image's border: nothing outside shows
    assert vis.boundary_cnr(grey, clean, fp_top, "top", 2.0)[0] == 0.0


def test_card_summary_takes_each_boundary_at_its_best_image():
    def m(task, subject, structure, view, cnr):
        return vis.Measure(task, subject, 0, structure, view, cnr, 0.0, 1.0, 10.0)

    ms = [m("a", "s01", "apex", "ap", 1.0), m("a", "s01", "apex", "lateral", 5.0),  # best: 5.0
          m("a", "s02", "apex", "ap", 2.5), m("a", "s01", "base", "ap", 9.0), m("b", "s01", "pole", "ap", 0.4)]
    rows = {r["task"]: r for r in vis.card_summary_rows(ms)}
    assert rows["a"]["structures"] == 2 and rows["a"]["n"] == 3 and rows["a"]["meet"] == 2
    assert rows["a"]["min"] == 2.5 and rows["a"]["min_where"] == "apex, s02 seed 0"
    assert rows["a"]["median"] == pytest.approx(6.375, abs=0.01)  # median(apex: 5.0, 2.5 -> 3.75; base: 9.0)
    assert rows["b"]["meet"] == 0
    text = vis.format_card_summary(vis.card_summary_rows(ms))
    assert "| a | 2 | 2.5 (apex, s02 seed 0) | 6.4 | 2/3 |" in text


def test_every_ct_card_has_boundaries():
    from scoring.registry.ct import REGISTRY

    for cid in CT_CARDS:
        assert vis.CT_BOUNDARIES[REGISTRY[cid].anatomy]


# Cards whose boundaries still miss the bound on this sample (generator 1.6.0; cohort figures and the band
# contrast split by label group in docs/visibility.md). strict: the test reports it when one starts to pass, so
# the entry is removed then (the liver tip of s17 seed 2 passes since 1.6.0: its right lobe's lowest point lies
# lateral, off the spine, as published).
KNOWN_SHORTFALLS = {
    "ct_kub_low_dose_constraint": "bladder bottom of s14 (the pubis and ischia over the bladder base on the lateral "
                                  "scout cancel 2.2 of its 2.5 grey), 2.3",
    "ct_renal_bilateral_coverage": "kidney poles adding ~1 grey to the projection, with the iliac crest, spine, ribs "
                                   "or lung bases over them (s04, s05, s14, s23), 1.3-2.97",
    "ct_renal_undercoverage_recovery": "kidney poles adding ~1 grey to the projection, with the iliac crest and "
                                       "spine over them (s04, s14), 0.7-2.3",
}


@pytest.mark.parametrize("card", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_SHORTFALLS[c], strict=True))
                                  if c in KNOWN_SHORTFALLS else c for c in CT_CARDS])
def test_ct_boundaries_visible_on_a_scout(card, subject_cache):
    """Bound: CNR >= 3 on at least one scout for every boundary, on the fixed sample."""
    from runner.visibility import ct_episode

    measures = [m for s, k in SAMPLE for m in ct_episode(card, s, k)]
    from scoring.registry.ct import REGISTRY

    assert len(measures) == len(SAMPLE) * 2 * len(vis.CT_BOUNDARIES[REGISTRY[card].anatomy])
    fails = sorted(vis.failures(measures), key=lambda m: m.cnr)
    assert not fails, "under CNR 3 on both scouts: " + "; ".join(
        f"{m.task} {m.structure} {m.subject} seed {m.seed} (best {m.cnr} on {m.view})" for m in fails)
