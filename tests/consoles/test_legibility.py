"""Every value an agent needs is legible: OCR reads back what the model holds.

The probe renders each numeric field of the console at its minimum, maximum and current value
(enabled and disabled) with the console's own style and pinned font, under a real Xvfb; Tesseract
must read the exact text with its unit. The negative control renders the field the console had
before (a QDoubleSpinBox without buttons under the old style sheet, blank on Qt 6.11) and the
same reader must reject it, so this test can tell legible from illegible.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import require_console
from tests.consoles.probe_process import ROOT, run_probe
from tests.ocr import field_readings, first_reading, numbers, readings, require_tesseract

pytestmark = pytest.mark.display


def _probe(display, out: Path, *extra: str) -> list[dict]:
    run_probe(display, "legibility_probe", out, *extra)
    return json.loads((out / "manifest.json").read_text())


def _misreads(out: Path, manifest: list[dict]) -> list[str]:
    bad = []
    for entry in manifest:
        img = Image.open(out / entry["file"])
        if entry["kind"] == "field":
            want = "".join(entry["expected"].split())
            # a lone zero reads as the letter O at this size: the same glyph shape to Tesseract
            ok, got = first_reading(field_readings(img), lambda r: r.replace("O", "0") == want)
            if not ok:
                bad.append(f"{entry['file']}: read {got!r}, model holds {entry['expected']!r}")
        elif entry["kind"] == "text":  # every expected piece of text, spaces aside
            want = ["".join(t.split()) for t in entry["expected"]]
            # as for fields, a lone zero (a colour bar's "0 ms") may read as the letter O
            ok, got = first_reading(("".join(r.split()) for r in readings(img)),
                                    lambda r: all(w in r for w in want) or all(w in r.replace("O", "0") for w in want))
            if not ok:
                bad.append(f"{entry['file']}: read {got!r}, shows {entry['expected']!r}")
        else:  # read-outs: every number in the label, in order
            lines = readings(img, single_line="\n" not in entry["expected"])
            ok, got = first_reading(lines, lambda r: numbers(r) == numbers(entry["expected"]))
            if not ok:
                bad.append(f"{entry['file']}: read {got!r}, label holds {entry['expected']!r}")
    return bad


def _group(manifest: list[dict], group: str, groups: dict[str, tuple[str, ...]]) -> list[dict]:
    """The entries of one widget group: those whose widget name starts with one of the group's prefixes; the
    group "other" takes every entry no named group claims, so each grab is read by exactly one test."""
    def claimed_by(entry: dict) -> str:
        return next((g for g, prefixes in groups.items() if entry["widget"].startswith(prefixes)), "other")
    return [e for e in manifest if claimed_by(e) == group]


def _read_group(out: Path, manifest: list[dict], group: str, groups: dict[str, tuple[str, ...]]) -> None:
    entries = _group(manifest, group, groups)
    assert entries or group == "other", f"no {group} in the probe's grabs: {sorted(e['widget'] for e in manifest)}"
    bad = _misreads(out, entries)
    assert not bad, "illegible values:\n" + "\n".join(bad)


# One probe per console (a module-scoped fixture), its grabs read in groups: one test per group keeps each
# test short (the whole MR console in one test took over 120 s under 4 display workers on 2 cores).
CT_GROUPS = {"planning fields": ("start_field", "end_field", "table_height_field"),
             "acquisition fields": ("kv_field", "mas_field", "pitch_field"),
             "bolus fields": ("monitor_z_field", "threshold_field", "trigger_delay_field")}


@pytest.fixture(scope="module")
def ct_grabs(display, tmp_path_factory) -> tuple[Path, list[dict]]:
    require_console()
    out = tmp_path_factory.mktemp("ct_legibility")
    return out, _probe(display, out, "--modality", "ct")


def test_ct_probe_grabs_every_numeric_field_and_read_out(ct_grabs):
    _, manifest = ct_grabs
    fields = {e["widget"] for e in manifest if e["kind"] == "field"}
    # CT: the nine fields of planning, acquisition and bolus tracking are all probed
    assert {f for prefixes in CT_GROUPS.values() for f in prefixes} <= fields
    assert {e["widget"] for e in manifest if e["kind"] == "label"} >= {"clock", "dose_readout", "length_readout"}


@pytest.mark.parametrize("group", [*CT_GROUPS, "other"])
def test_ct_fields_read_back_at_their_range_ends_and_model_value(ct_grabs, group):
    require_tesseract()
    _read_group(*ct_grabs, group, CT_GROUPS)


def _mr_card(tmp_path: Path) -> Path:
    """An MR card with the default queue (the MR tasks' cards come with their own issue)."""
    base = json.loads((ROOT / "tasks/ct/ct_ui_smoke_routine/task.json").read_text())
    base.update(id="mr_legibility", modality="mr", title="MR legibility", goal="Read the MR console.",
                initial_state={}, perturbations={}, oracle="none", workflow_stages=[])
    d = tmp_path / "cards" / "mr_legibility"
    d.mkdir(parents=True)
    (d / "task.json").write_text(json.dumps(base))
    return d / "task.json"


MR_GROUPS = {"slice fields": ("n_slices_field", "thickness_mm_field", "fov_read_mm_field", "matrix_field"),
             "timing fields": ("tr_ms_field", "te_ms_field", "ti_ms_field", "flip_deg_field"),
             "cardiac fields": ("trigger_delay_ms_field", "acq_window_ms_field", "heart_rate_bpm_field"),
             "position fields": ("pos_lr_mm_field", "pos_ap_mm_field", "pos_fh_mm_field"),
             "angle fields": ("tilt_a_deg_field", "tilt_b_deg_field", "inplane_deg_field"),
             "queue rows": ("queue_row:",),
             "viewport 1-2 text": ("viewport1.", "viewport2."),
             "viewport 3-4 text": ("viewport3.", "viewport4.")}


@pytest.fixture(scope="module")
def mr_grabs(display, tmp_path_factory) -> tuple[Path, list[dict]]:
    require_console()
    tmp = tmp_path_factory.mktemp("mr_legibility")
    out = tmp / "shots"
    return out, _probe(display, out, "--modality", "mr", "--card", str(_mr_card(tmp)))


def test_mr_probe_grabs_fields_status_queue_rows_and_viewport_captions(mr_grabs):
    _, manifest = mr_grabs
    fields = {e["widget"] for e in manifest if e["kind"] == "field"}
    assert {f for g in ("slice", "timing", "cardiac", "position", "angle") for f in MR_GROUPS[f"{g} fields"]} <= fields
    labels = {e["widget"]: e["expected"] for e in manifest if e["kind"] == "label"}
    assert {"scanner_status", "exam_time", "heart_rate", "scan_time", "orientation_readout", "roi_readout"} <= set(labels)
    assert labels["orientation_readout"] == "T > C -23.4 > S -12.1"  # the widest orientation a plan shows
    # issue 24: the grip and wheel legend under the viewer
    assert labels["viewer_legend"].endswith("Wheel down: next image")
    texts = {e["widget"] for e in manifest if e["kind"] == "text"}
    assert {"queue_row:1", "queue_row:2", "queue_row:3", "queue_row:4"} <= texts
    assert {f"viewport{i}.label:caption{k}" for i in (1, 2, 3) for k in (0, 1)} <= texts
    assert {f"viewport{i}.label:plan_info{k}" for i in (1, 2, 3) for k in (0, 1)} <= texts
    # the T1 map in viewport 4: colour bar range and title, the ROI read-out on the image
    assert {f"viewport4.label:{k}" for k in ("colorbar.max", "colorbar.min", "colorbar.title", "roi_readout")} <= texts


@pytest.mark.parametrize("group", [*MR_GROUPS, "other"])
def test_mr_fields_status_queue_rows_and_viewport_captions_read_back(mr_grabs, group):
    require_tesseract()
    _read_group(*mr_grabs, group, MR_GROUPS)


def _us_card(tmp_path: Path) -> Path:
    """A US card with an empty initial state (the US tasks' cards come with their own work)."""
    base = json.loads((ROOT / "tasks/ct/ct_ui_smoke_routine/task.json").read_text())
    base.update(id="us_legibility", modality="us", title="US legibility", goal="Read the US console.",
                initial_state={}, perturbations={}, oracle="none", workflow_stages=[])
    d = tmp_path / "cards" / "us_legibility"
    d.mkdir(parents=True)
    (d / "task.json").write_text(json.dumps(base))
    return d / "task.json"


US_GROUPS = {"probe fields": ("probe_z_mm_field", "probe_azimuth_deg_field", "probe_rotation_deg_field",
                              "probe_tilt_deg_field", "probe_rock_deg_field", "pressure_pct_field"),
             "image fields": ("depth_cm_field", "focus_cm_field", "frequency_mhz_field", "gain_field",
                              "dynamic_range_db_field"),
             "TGC fields": ("tgc_",),
             "image text": ("us_image.",)}


@pytest.fixture(scope="module")
def us_grabs(display, tmp_path_factory) -> tuple[Path, list[dict]]:
    """US frozen on a kidney with a caliper and an annotation."""
    require_console()
    tmp = tmp_path_factory.mktemp("us_legibility")
    out = tmp / "shots"
    return out, _probe(display, out, "--modality", "us", "--card", str(_us_card(tmp)))


def test_us_probe_grabs_fields_status_depth_scale_caliper_and_annotation(us_grabs):
    _, manifest = us_grabs
    fields = {e["widget"] for e in manifest if e["kind"] == "field"}
    assert {f for g in ("probe fields", "image fields") for f in US_GROUPS[g]} | {
        f"tgc_{k}_field" for k in range(1, 9)} <= fields
    assert {e["widget"] for e in manifest if e["kind"] == "label"} >= {
        "scanner_status", "exam_time", "frame_rate", "image_info", "caliper_readout", "frequency_readout"}
    texts = {e["widget"] for e in manifest if e["kind"] == "text"}
    assert {"us_image.label:depth_0", "us_image.label:depth_12", "us_image.label:caliper1.text",
            "us_image.label:annotation1"} <= texts


@pytest.mark.parametrize("group", [*US_GROUPS, "other"])
def test_us_fields_status_depth_scale_caliper_and_annotation_read_back(us_grabs, group):
    """Every field at its range ends and value, the header, the image's settings and the caliper read-out, the
    depth scale's numbers, the caliper's length on the image and the annotation."""
    require_tesseract()
    _read_group(*us_grabs, group, US_GROUPS)


def test_ct_scouts_show_millimetre_rulers_that_read_back(display, tmp_path):
    """issue 24 item 5: both CT scouts carry a table-z ruler (a tick every 10 mm, numbers every 50 or 100 mm) and
    the lateral scout a table-height ruler for the isocentre; read by OCR from a screen capture of the planning
    page with the scouts acquired, every number and both titles."""
    require_console()
    require_tesseract()
    out = tmp_path / "shots"
    run_probe(display, "ct_scout_probe", out)
    manifest = [e for e in json.loads((out / "manifest.json").read_text()) if e["kind"] == "text"]
    labels = {e["widget"]: e["expected"][0] for e in manifest}
    for vp in ("scout_ap", "scout_lateral"):
        numbers_shown = sorted(float(t) for w, t in labels.items() if w.startswith(f"{vp}.label:zruler_") and
                               not w.endswith("_title"))
        assert len(numbers_shown) >= 5 and {b - a for a, b in zip(numbers_shown, numbers_shown[1:])} <= {50.0, 100.0}
        assert labels[f"{vp}.label:zruler_title"] == "Table z (mm)"
    assert labels["scout_lateral.label:hruler_title"] == "Table height for isocentre (mm)"
    assert {f"scout_lateral.label:hruler_{h}" for h in (0, 50, 100, 150, 200, 250)} <= set(labels)
    assert not any(w.startswith("scout_ap.label:hruler") for w in labels)  # the AP scout has no height axis
    bad = _misreads(out, manifest)
    assert not bad, "illegible ruler text:\n" + "\n".join(bad)


def test_negative_control_the_old_spinbox_style_is_rejected(display, tmp_path):
    require_console()
    require_tesseract()
    manifest = _probe(display, tmp_path, "--legacy-spinbox")
    assert len(manifest) == 4
    bad = _misreads(tmp_path, manifest)
    assert len(bad) == len(manifest), f"the old fields should be unreadable, yet some read back: {manifest}"
