"""`medimageos tasks visibility` on the MR renal cards and an ultrasound card: the tables, the exit code of the
bound, the failure lines naming card, structure, subject and seed, the JSON and the PNGs as displayed."""
from __future__ import annotations

import json

from runner.cli import main


def test_mr_card_meeting_the_bound_prints_its_table_and_exits_0(tmp_path, capsys, subject_cache):
    out_json = tmp_path / "vis.json"
    code = main(["tasks", "visibility", "--tasks", "mr_renal_acquisition_adequacy_v2", "--subjects", "s04",
                 "--seeds", "2", "--workers", "1", "--json-out", str(out_json), "--png-dir", str(tmp_path / "png")])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "| task | structure | min CNR | median CNR | >= 3 | cut within 10 mm |" in text
    rows = json.loads(out_json.read_text())["mr_rows"]
    assert sorted(r["structure"] for r in rows) == sorted(
        f"{side} kidney {what}" for side in ("left", "right")
        for what in ("upper pole", "lower pole", "anterior border", "posterior border"))
    assert all(r["meet"] == 1 and r["min"] >= 3.0 for r in rows)
    pngs = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert pngs == [f"mr_renal_acquisition_adequacy_v2_s04_seed2_localizer_{v}_{j:02d}of11.png"
                    for v in ("coronal", "sagittal", "transverse") for j in range(1, 12)]  # every slice


def test_mr_card_missing_the_bound_exits_1_naming_each_boundary(capsys, subject_cache):
    code = main(["tasks", "visibility", "--tasks", "L4_heart_shim_box", "--subjects", "s04", "--seeds", "2",
                 "--workers", "1"])
    text = capsys.readouterr().out
    assert code == 1, text
    # s04 seed 2: the heart's top is the right ventricle's outflow running into pulmonary-artery blood, blood
    # against blood (docs/visibility.md, "MR cardiac"); a coronal localizer slice cuts it 0.3 mm short
    assert "L4_heart_shim_box heart superior border s04 seed 2 (best " in text
    assert "| L4_heart_shim_box | 6 | " in text  # the per-card summary: six borders


def test_us_card_prints_the_live_image_table_and_saves_the_image(tmp_path, capsys, subject_cache):
    out_json = tmp_path / "vis.json"
    code = main(["tasks", "visibility", "--tasks", "us_kidney_long_axis_search_v1", "--subjects", "s13", "--seeds",
                 "1", "--workers", "1", "--json-out", str(out_json), "--png-dir", str(tmp_path / "png")])
    text = capsys.readouterr().out
    assert code == 1, text  # the rib shadow over the upper pole (docs/visibility.md, "Ultrasound")
    assert "| live image section edge: min / median |" in text
    assert "us_kidney_long_axis_search_v1 left kidney upper pole s13 seed 1 (best " in text
    rows = json.loads(out_json.read_text())["us_rows"]
    assert sorted(r["structure"] for r in rows) == sorted(
        f"left kidney {what}" for what in ("upper pole", "lower pole", "near capsule", "far capsule"))
    assert [p.name for p in (tmp_path / "png").iterdir()] == ["us_kidney_long_axis_search_v1_s13_seed1_live.png"]


def test_cards_the_figure_does_not_measure_are_refused(capsys):
    assert main(["tasks", "visibility", "--tasks", "mr_select_sequence_v1"]) == 2
    assert "covers the L2+ CT cards, the MR renal and cardiac planning cards and the L2+ ultrasound cards" in \
        capsys.readouterr().err
