"""The visibility figure on MR (issue 33): the kidney boundaries the renal cards' answers rest on (poles along z,
anterior / posterior borders along the coronal slab's axis) measured on the displayed localizer and series
images, with the kidney masks from the subject oracle (runner.visibility drives the console's own model)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rendering.geometry import PlanePose, ResliceGrid
from scoring import visibility as vis

SPACING = (2.0, 2.0, 2.0)
ORIGIN = (-60.0, -60.0, -60.0)


def _box_oracle():
    """A 121 mm cube of voxels holding one box organ 'kidney_left' from z -20..+30, y -10..+14, x -16..+16."""
    n = 61
    c = ORIGIN[0] + SPACING[0] * np.arange(n)
    z, y, x = np.meshgrid(c, c, c, indexing="ij")
    mask = (z >= -20) & (z <= 30) & (np.abs(y - 2) <= 12) & (np.abs(x) <= 16)
    rt = SimpleNamespace(origin_mm=np.asarray(ORIGIN), spacing_mm=np.asarray(SPACING))

    def voxels(name):
        k, j, i = np.nonzero(mask)
        return np.stack([c[i], c[j], c[k]], axis=1)
    return SimpleNamespace(runtime=rt, organ_mask=lambda name: mask, organ_voxels_mm=voxels), mask


def _view(oracle, mask, pose, contrast, sd, name, rng):
    """The organ painted `contrast` grey over 100 on a plane through the box, with Gaussian noise."""
    grid = ResliceGrid.centred(pose, 110.0, 2.0)
    sec = vis.section_mask(mask, ORIGIN, SPACING, grid, 4.0)
    clean = np.where(sec, 100.0 + contrast, 100.0)
    return vis.MRView(name, clean + rng.normal(0.0, sd, clean.shape), clean, grid, 4.0), sec


def test_section_mask_cuts_the_box_where_the_slice_lies():
    oracle, mask = _box_oracle()
    grid = ResliceGrid.centred(PlanePose.coronal((0.0, 2.0, 0.0)), 110.0, 2.0)
    sec = vis.section_mask(mask, ORIGIN, SPACING, grid, 4.0)
    pts = grid.points()[sec]
    assert pts[:, 2].min() == pytest.approx(-20.0, abs=2.0) and pts[:, 2].max() == pytest.approx(30.0, abs=2.0)
    assert np.abs(pts[:, 0]).max() == pytest.approx(16.0, abs=2.0)
    far = ResliceGrid.centred(PlanePose.coronal((0.0, 40.0, 0.0)), 110.0, 2.0)  # behind the box
    assert not vis.section_mask(mask, ORIGIN, SPACING, far, 4.0).any()


@pytest.mark.parametrize("contrast,sd", [(20.0, 2.0), (4.0, 2.0)])
def test_mr_measures_read_poles_on_coronal_and_borders_on_transverse(contrast, sd):
    """A coronal image shows the poles (rows), a transverse one the anterior / posterior borders (rows, anterior
    up) and a sagittal one both (columns run posterior): CNR = contrast / SD, the section at the extremes."""
    oracle, mask = _box_oracle()
    rng = np.random.default_rng(3)
    views = [_view(oracle, mask, PlanePose.coronal((0.0, 2.0, 0.0)), contrast, sd, "coronal", rng)[0],
             _view(oracle, mask, PlanePose.axial((0.0, 0.0, 5.0)), contrast, sd, "transverse", rng)[0],
             _view(oracle, mask, PlanePose.sagittal((0.0, 0.0, 0.0)), contrast, sd, "sagittal", rng)[0]]
    ms = vis.mr_measures("card", "sX", 0, oracle, views, vis.MR_KIDNEY_BOUNDARIES[:4])
    got = {(m.structure, m.view): m for m in ms}
    assert set(got) == {("left kidney upper pole", "coronal"), ("left kidney upper pole", "sagittal"),
                        ("left kidney lower pole", "coronal"), ("left kidney lower pole", "sagittal"),
                        ("left kidney anterior border", "transverse"), ("left kidney anterior border", "sagittal"),
                        ("left kidney posterior border", "transverse"), ("left kidney posterior border", "sagittal")}
    for m in ms:
        assert abs(m.short_mm) <= 2.0, m
        assert m.cnr == pytest.approx(contrast / sd, abs=0.25 * contrast / sd + 0.3), m


def test_a_slice_far_from_the_boundary_does_not_show_it():
    """A coronal slice near the box's back face shows the poles of its section, which are the box's own (a box
    has flat ends); a section ending more than SECTION_CAP_MM short of the organ's extreme scores 0, with the
    section edge's CNR kept, and fails the bound."""
    oracle, mask = _box_oracle()
    rng = np.random.default_rng(4)
    coronal, _ = _view(oracle, mask, PlanePose.coronal((0.0, 13.0, 0.0)), 20.0, 2.0, "coronal", rng)
    ms = vis.mr_measures("card", "sX", 0, oracle, [coronal], vis.MR_KIDNEY_BOUNDARIES[:1])
    assert ms[0].cnr > 5 and abs(ms[0].short_mm) <= 2.0
    # the organ's true top 15 mm above what the image's section shows: the boundary is not on this image
    voxels = oracle.organ_voxels_mm("kidney_left")
    tall = SimpleNamespace(runtime=oracle.runtime, organ_mask=oracle.organ_mask,
                           organ_voxels_mm=lambda name: np.vstack([voxels, [[0.0, 2.0, 45.0]]]))
    ms = vis.mr_measures("card", "sX", 0, tall, [coronal], vis.MR_KIDNEY_BOUNDARIES[:1])
    assert ms[0].short_mm == pytest.approx(15.0, abs=2.0)
    assert ms[0].cnr == 0.0 and ms[0].section_cnr > 5
    assert vis.failures(ms) == [ms[0]]


def test_failure_report_names_card_structure_subject_and_seed():
    ms = [vis.Measure("mr_card_a", "s07", 2, "left kidney upper pole", "localizer coronal", 0.0, 3.0, 3.0, 20.0,
                      23.5, 6.1),
          vis.Measure("mr_card_a", "s07", 2, "left kidney upper pole", "localizer transverse", 0.0, 0.0, 0.0, 0.0,
                      999.0, 0.0),
          vis.Measure("mr_card_b", "s11", 0, "right kidney posterior border", "localizer transverse", 1.7, 6.0, 3.5,
                      30.0, 0.5, 1.7),
          vis.Measure("mr_card_b", "s11", 0, "right kidney lower pole", "localizer coronal", 9.0, 30.0, 3.3, 30.0,
                      0.0, 9.0)]
    lines = vis.failure_report(vis.failures(ms)).splitlines()
    assert lines == [
        "mr_card_a left kidney upper pole s07 seed 2 (best 0.0 on localizer coronal; that image's section ends "
        "23.5 mm short of it (edge CNR 6.1))",
        "mr_card_b right kidney posterior border s11 seed 0 (best 1.7 on localizer transverse; that image's "
        "section ends 0.5 mm short of it (edge CNR 1.7))"]


# The fixed sample of the fast lane (the cohort run is `medimageos tasks visibility --tasks mr`): the two MR renal
# episodes issue 33's players read (s04 seed 2, s25 seed 0).
MR_SAMPLE = (("s04", 2), ("s25", 0))
MR_RENAL_CARDS = ("mr_renal_acquisition_adequacy_v2", "mr_renal_bilateral_coverage_recovery_v2",
                  "mr_renal_bilateral_geometry_planning_v2", "mr_renal_numeric_coverage_correction_v2")
# Every card meets the bound on this sample since the localizer became 3 stacks of 11 parallel slices (issue
# 33; before, three cards missed it here: the single-slice localizer did not cut the kidneys near their poles and
# borders). The cohort still has misses (docs/visibility.md, "MR"): the left upper pole against the spleen.
@pytest.mark.parametrize("card", MR_RENAL_CARDS)
def test_mr_kidney_boundaries_visible(card, subject_cache):
    """Bound: every kidney pole and anterior / posterior border shows with CNR >= 3 on at least one image the
    card plans on (localizer images, the acquired series), as displayed, on the fixed sample."""
    from runner.visibility import mr_episode

    measures = [m for s, k in MR_SAMPLE for m in mr_episode(card, s, k)]
    assert {(m.subject, m.seed, m.structure) for m in measures} == {
        (s, k, b.structure) for s, k in MR_SAMPLE for b in vis.MR_KIDNEY_BOUNDARIES}
    fails = vis.failures(measures)
    assert not fails, "under CNR 3 on every image:\n" + vis.failure_report(fails)
