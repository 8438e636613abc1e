"""NIfTI round trip, TotalSegmentator-style import serving CT coverage tasks, bad input, CLI."""
from __future__ import annotations

import json

import nibabel as nib
import numpy as np
import pytest


@pytest.fixture()
def own_cache(subject_cache, tmp_path, monkeypatch):
    """Imported subjects go to a per-test cache; procedural ones are reused from the session cache."""
    from rendering.subjects import bundle as B
    from rendering.subjects.runtime import clear_memo
    imp = tmp_path / "imported"
    monkeypatch.setattr(B, "imported_dir", lambda sid: imp / sid)
    clear_memo()
    yield imp
    clear_memo()


def test_nifti_round_trip_gives_the_same_labels(own_cache, tmp_path):
    from rendering.subjects import load_runtime
    from rendering.subjects.nifti_io import export_nifti, import_labelmap
    rt = load_runtime("s04")
    out = export_nifti(rt, tmp_path / "s04.nii.gz")
    img = nib.load(str(out))
    assert img.shape == rt.labels.shape[::-1] and nib.aff2axcodes(img.affine) == ("L", "P", "S")
    assert (tmp_path / "s04.labels.json").exists()
    import_labelmap(out, "medimageos", "s04copy")
    back = load_runtime("s04copy")
    assert np.array_equal(back.labels, rt.labels)
    assert back.origin_mm == rt.origin_mm and back.spacing_mm == rt.spacing_mm


def _synthetic_totalsegmentator(rt, spacing=2.5):
    """A TotalSegmentator-style multilabel map built from a subject (no body outline, lobes, whole organs)."""
    from rendering.subjects.nifti_io import TOTALSEGMENTATOR_CLASSES
    ts = {v: k for k, v in TOTALSEGMENTATOR_CLASSES.items()}
    lab = rt.labels
    out = np.zeros(lab.shape, np.uint8)
    name = rt.label_names
    z = rt.world_z()[:, None, None] * np.ones(lab.shape[1:])[None]
    for v, n in name.items():
        m = lab == v
        if not m.any():
            continue
        if n in ("lung_left", "lung_vessels_left"):
            out[m & (z > -110)] = ts["lung_upper_lobe_left"]
            out[m & (z <= -110)] = ts["lung_lower_lobe_left"]
        elif n in ("lung_right", "lung_vessels_right"):
            out[m & (z > -80)] = ts["lung_upper_lobe_right"]
            out[m & (z <= -80) & (z > -130)] = ts["lung_middle_lobe_right"]
            out[m & (z <= -130)] = ts["lung_lower_lobe_right"]
        elif n.startswith("kidney_left"):
            out[m] = ts["kidney_left"]
        elif n.startswith("kidney_right"):
            out[m] = ts["kidney_right"]
        elif n in ("lv_blood", "lv_myocardium", "rv_blood", "la_blood", "ra_blood", "heart_wall"):
            out[m] = ts["heart"]
        elif n.startswith("aorta_"):
            out[m] = ts["aorta"]
        elif n.startswith("vertebra_"):
            out[m] = ts["vertebrae_" + n.split("_")[1]]
        else:
            direct = {"liver": "liver", "spleen": "spleen", "bladder": "urinary_bladder", "trachea": "trachea",
                      "rib": "rib_left_5", "sternum": "sternum", "pelvis": "hip_left", "sacrum": "sacrum",
                      "stomach": "stomach", "pancreas": "pancreas", "gallbladder": "gallbladder", "ivc": "inferior_vena_cava"}
            if n in direct:
                out[m] = ts[direct[n]]
    # present it the way TotalSegmentator writes files: RAS-ish affine, x-fastest array, different spacing
    data = out.transpose(2, 1, 0)
    ox, oy, oz = rt.origin_mm
    aff = np.array([[-spacing, 0, 0, -ox], [0, -spacing, 0, -oy], [0, 0, spacing, oz], [0, 0, 0, 1]])
    return nib.Nifti1Image(data, aff)


def test_totalsegmentator_import_serves_ct_coverage_tasks(own_cache, tmp_path):
    from rendering.subjects import load_runtime
    from rendering.subjects.nifti_io import import_labelmap
    from scoring.subject_oracle import load_oracle
    img = _synthetic_totalsegmentator(load_runtime("dev"))
    f = tmp_path / "ts_seg.nii.gz"
    nib.save(img, f)
    d = import_labelmap(f, "totalsegmentator", "tsdemo")
    rt = load_runtime("tsdemo")
    assert rt.spacing_mm == (2.0, 2.0, 2.0), "resampled to the 2 mm grid"
    assert rt.labels[rt.labels.shape[0] // 2].any()
    orc = load_oracle("tsdemo")
    # what the import serves, by the one check `run` and `subjects import` use (scoring/capabilities.py)
    from scoring.capabilities import features, unserved
    from tasks.card import all_cards
    lack = unserved(all_cards(), features(orc.meta))
    for task in ("ct_lung_coverage_isocenter", "ct_liver_coverage_isocenter", "ct_renal_bilateral_coverage",
                 "ct_kub_low_dose_constraint", "ct_ui_smoke_routine"):
        assert task not in lack, lack[task]
    assert "lv_long_axis" in lack["L4_4ch"]  # no cardiac planning from a label map
    from scoring.oracles.coverage import coverage_fraction
    for organ in ("lungs", "liver", "kidney_left", "kidney_right", "bladder", "heart"):
        z0, z1 = orc.organ_z_extent(organ)
        zs = orc.organ_voxel_z(organ)
        assert coverage_fraction(zs, z0 - 1, z1 + 1) == 1.0
        assert coverage_fraction(zs, z0 + 0.3 * (z1 - z0), z1 + 1) < 0.98
    zm = np.mean(orc.organ_z_extent("lungs"))
    e = orc.body_extent(zm)
    assert e["y_min"] < orc.body_centre_y(zm) < e["y_max"] <= 2.0
    assert {"lung_apex_left", "liver_dome", "liver_tip", "carina", "kidney_left_centre"} <= set(orc.landmarks)
    assert 70 <= orc.kidneys["left"]["length_mm"] <= 170
    # the synthesised body gives a plausible scout
    mu = 0.0192 * np.maximum(0, 1 + rt.ct_hu_lut()[rt.labels] / 1000)
    assert 2.5 < (mu.sum(axis=1) * 2.0).max() < 9
    assert (d / "oracle.json").exists()


def _save(tmp_path, data, aff=None, name="bad.nii.gz", zero_codes=False):
    img = nib.Nifti1Image(data, np.eye(4) * 2 + np.diag([0, 0, 0, -1]) if aff is None else aff)
    if zero_codes:
        img.set_qform(None, code=0)
        img.set_sform(None, code=0)
    p = tmp_path / name
    nib.save(img, p)
    return p


@pytest.mark.parametrize("case", ["2d", "4d", "unknown", "no_affine", "empty", "tiny", "missing", "float"])
def test_bad_input_is_a_clear_error_and_writes_nothing(own_cache, tmp_path, case):
    from rendering.subjects import SubjectError
    from rendering.subjects.nifti_io import import_labelmap
    good = np.zeros((20, 20, 20), np.uint8)
    good[5:15, 5:15, 5:15] = 5
    p = {"2d": lambda: _save(tmp_path, good[:, :, 0]),
         "4d": lambda: _save(tmp_path, np.stack([good, good], axis=-1)),
         "unknown": lambda: _save(tmp_path, np.where(good > 0, 200, 0).astype(np.uint8)),
         "no_affine": lambda: _save(tmp_path, good, zero_codes=True),
         "empty": lambda: _save(tmp_path, np.zeros_like(good)),
         "tiny": lambda: _save(tmp_path, np.pad(np.ones((1, 1, 2), np.uint8), 9)),
         "missing": lambda: tmp_path / "nope.nii.gz",
         "float": lambda: _save(tmp_path, good.astype(np.float32) + 0.3)}[case]()
    msg = {"2d": "dimensions", "4d": "dimensions", "unknown": "not in the totalsegmentator map", "no_affine": "no affine",
           "empty": "no labelled voxels", "tiny": "fewer than", "missing": "does not exist", "float": "non-integer"}[case]
    with pytest.raises(SubjectError, match=msg):
        import_labelmap(p, "totalsegmentator", "badone")
    assert not (own_cache / "badone").exists()
    assert not own_cache.exists() or not any(own_cache.iterdir())


def test_cli_commands(own_cache, tmp_path, capsys):
    from runner.cli_subjects import main
    assert main(["subjects", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["id"] == "dev" and len([r for r in rows if r["kind"] == "scoring"]) == 30
    assert all(r["built"] for r in rows if r["kind"] != "imported")
    png = tmp_path / "dev.png"
    assert main(["subjects", "show", "dev", "--png", str(png)]) == 0
    info = json.loads(capsys.readouterr().out.split("montage:")[0])
    assert info["id"] == "dev" and 1000 < info["organs_ml"]["liver"] < 2600
    assert png.stat().st_size > 20000 and png.read_bytes()[:4] == b"\x89PNG"
    assert main(["subjects", "build", "dev"]) == 0
    out = tmp_path / "dev.nii.gz"
    assert main(["subjects", "export", "dev", "--out", str(out)]) == 0 and out.exists()
    assert main(["subjects", "import", "--labels", str(out), "--map", "medimageos", "--id", "devcopy"]) == 0
    assert "serves:" in capsys.readouterr().out
    assert main(["subjects", "import", "--labels", str(out), "--map", "medimageos", "--id", "devcopy"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["subjects", "show", "nobody"]) == 1
    assert "unknown subject" in capsys.readouterr().err
    assert main(["subjects", "export", "dev", "--out", str(tmp_path / "x.txt")]) == 1
