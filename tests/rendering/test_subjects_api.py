"""Runtime API contract, determinism, cache and bundle behaviour, the console guard."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.rendering.subject_cache import ROOT


def test_runtime_contract(subject_cache):
    from rendering.subjects import SubjectRuntime, TissueTable, load_runtime
    rt = load_runtime("dev")
    assert isinstance(rt, SubjectRuntime) and rt.id == "dev" and isinstance(rt.version, str)
    assert rt.labels.dtype == np.uint8 and rt.labels.ndim == 3 and not rt.labels.flags.writeable
    assert rt.spacing_mm == (2.0, 2.0, 2.0)
    nz, ny, nx = rt.labels.shape
    assert len(rt.world_z()) == nz and len(rt.world_y()) == ny and len(rt.world_x()) == nx
    assert np.all(np.diff(rt.world_z()) > 0)
    assert rt.world_x()[0] == rt.origin_mm[0] and rt.world_z()[0] == rt.origin_mm[2]
    assert abs(rt.world_x()[nx // 2]) < 1e-9, "x = 0 at the body midline (centre column)"
    assert rt.world_y().max() >= 0 > rt.world_y().min(), "table top y = 0 inside the grid"
    assert rt.world_z().min() < -500 and rt.world_z().max() > 80, "neck to pelvis around z = 0 (jugular notch)"
    assert isinstance(rt.tissues, TissueTable)
    lut = rt.ct_hu_lut()
    assert lut.dtype == np.float32 and lut.shape[0] > rt.labels.max()
    hu = {name: lut[rt.label_id(name)] for name in ("air", "lung_left", "fat_subcutaneous", "muscle", "liver",
                                                     "spleen", "kidney_left_cortex", "lv_blood", "rib", "bladder")}
    assert hu["air"] == -1000 and -910 <= hu["lung_left"] <= -850 and -100 <= hu["fat_subcutaneous"] <= -50
    assert 45 <= hu["liver"] <= 65 and 35 <= hu["spleen"] <= 55 and 20 <= hu["kidney_left_cortex"] <= 40
    assert 30 <= hu["lv_blood"] <= 65 and hu["rib"] > 300 and -10 <= hu["bladder"] <= 20 and hu["muscle"] == 50
    comp = rt.ct_compartment_lut()
    names = rt.tissues.compartments
    assert names[comp[rt.label_id("aorta_descending")]] == "arterial"
    assert names[comp[rt.label_id("liver")]] == "portal_organ"
    assert names[comp[rt.label_id("kidney_right_cortex")]] == "kidney_cortex"
    assert names[comp[rt.label_id("air")]] == "none"
    t = rt.tissues
    li = rt.label_id("liver")
    assert (t.mr_t1_15[li], t.mr_t2_15[li], t.mr_t1_30[li], t.mr_t2_30[li]) == (586, 46, 809, 34)
    assert t.us_impedance[li] == pytest.approx(1.65) and t.us_speed[rt.label_id("fat_subcutaneous")] == 1450
    # CT scout sanity: abdominal AP line integral p ~ 4-6 (physics.md)
    mu = 0.0192 * np.maximum(0, 1 + lut[rt.labels] / 1000.0)
    z = rt.world_z()
    k = int(np.argmin(np.abs(z + 300)))
    p = mu[k].sum(axis=0) * rt.spacing_mm[1]
    assert 3.5 <= p.max() <= 7.5


def test_determinism_and_variation(subject_cache):
    from rendering.subjects import load_runtime
    from rendering.subjects.generator import build_subject
    from rendering.subjects.params import sample_params, subject_seed
    lab, *_ = build_subject(sample_params("s07"))
    assert np.array_equal(lab, load_runtime("s07").labels), "generation must be a pure function of the id"
    # the seed of a subject does not depend on the interpreter run (no salted hash): another process agrees
    other = subprocess.run([sys.executable, "-c", "from rendering.subjects.params import subject_seed; "
                            "print(subject_seed('scoring', 7))"], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED="12345"), cwd=Path(__file__).resolve().parents[2])
    assert int(other.stdout) == subject_seed("scoring", 7) != subject_seed("scoring", 8)
    ps = [sample_params(f"s{i:02d}") for i in range(1, 31)]
    assert {p.sex for p in ps} == {"F", "M"}
    assert np.std([p.height_cm for p in ps]) > 4 and np.std([p.heart_az_deg for p in ps]) > 2
    assert len({round(p.kidney_right_drop_mm, 3) for p in ps}) == 30
    assert load_runtime("s01").labels.shape != load_runtime("s02").labels.shape or \
        not np.array_equal(load_runtime("s01").labels, load_runtime("s02").labels)


def test_bundle_halves_and_size(subject_cache):
    from rendering.subjects import load_runtime
    from rendering.subjects.bundle import FORMAT, bundle_size_bytes
    rt = load_runtime("dev")
    d = Path(rt.path)
    assert {p.name for p in d.iterdir()} == {"runtime.npz", "runtime.json", "oracle.npz", "oracle.json"}
    meta = json.loads((d / "runtime.json").read_text())
    assert meta["format"] == FORMAT and meta["version"] == rt.version
    assert "landmarks" not in meta and "planes" not in meta, "runtime half must not carry ground truth"
    assert bundle_size_bytes(d) < 20e6


def test_cache_rebuilds_on_version_change_and_writes_atomically(tmp_path, monkeypatch):
    from rendering.subjects import bundle as B
    from rendering.subjects import runtime as R
    monkeypatch.setenv("MEDIMAGEOS_CACHE", str(tmp_path))
    R.clear_memo()
    d1 = R.build_procedural("dev")
    assert d1 == tmp_path / "subjects" / R.GENERATOR_VERSION / "dev"
    monkeypatch.setattr(R, "GENERATOR_VERSION", "9.9.9-test")
    rt = R.load_runtime("dev")
    assert Path(rt.path) == tmp_path / "subjects" / "9.9.9-test" / "dev"
    assert (Path(rt.path) / "runtime.json").exists()
    # a failure half way through leaves neither the bundle nor a temporary directory behind
    real = np.savez_compressed
    calls = {"n": 0}

    def boom(path, **kw):
        calls["n"] += 1
        if "oracle" in str(path):
            raise OSError("disk full (simulated)")
        return real(path, **kw)
    monkeypatch.setattr(B.np, "savez_compressed", boom)
    monkeypatch.setattr(R, "GENERATOR_VERSION", "9.9.10-test")
    with pytest.raises(OSError):
        R.build_procedural("s03")
    parent = tmp_path / "subjects" / "9.9.10-test"
    assert not (parent / "s03").exists() and list(parent.iterdir()) == []
    R.clear_memo()


def test_unknown_subject_is_a_clear_error(subject_cache):
    from rendering.subjects import SubjectError, load_runtime
    with pytest.raises(SubjectError, match="unknown subject 'nobody'"):
        load_runtime("nobody")
    with pytest.raises(SubjectError):
        load_runtime("s31")


_CONSOLE_PROBE = textwrap.dedent("""
    import json, sys
    opened = []
    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            opened.append(str(args[0]))
    sys.addaudithook(hook)
    from rendering.subjects import load_runtime
    rt = load_runtime(sys.argv[1])
    lut = rt.ct_hu_lut()[rt.labels]
    err = None
    try:
        from scoring.subject_oracle import load_oracle
        load_oracle(sys.argv[1])
    except Exception as e:
        err = type(e).__name__ + ": " + str(e)
    print(json.dumps({"opened": opened, "oracle_error": err, "shape": list(rt.labels.shape)}))
""")


@pytest.mark.parametrize("prebuilt", [True, False])
def test_console_process_never_opens_the_oracle_half(subject_cache, tmp_path, prebuilt):
    env = dict(os.environ, MEDIMAGEOS_ROLE="console")
    if not prebuilt:   # an empty cache: the console must get the bundle built without touching the oracle
        env["MEDIMAGEOS_CACHE"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", _CONSOLE_PROBE, "dev"], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=100)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert any(p.endswith("runtime.npz") for p in out["opened"]), "probe saw no bundle reads"
    leaked = [p for p in out["opened"] if Path(p).name in ("oracle.json", "oracle.npz")]
    assert leaked == [], f"console process opened oracle files: {leaked}"
    assert out["oracle_error"] and out["oracle_error"].startswith("OracleAccessError")
    if not prebuilt:
        assert (tmp_path / "subjects").exists() and any((tmp_path / "subjects").rglob("oracle.json"))


def test_load_is_memoised_and_cheap(subject_cache):
    from rendering.subjects import load_runtime
    a = load_runtime("s05")
    assert load_runtime("s05") is a
