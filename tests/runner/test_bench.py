"""`medimageos bench --json`: the schema of its report, from a real (tiny) run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_console

ROOT = Path(__file__).resolve().parents[2]


def test_bench_names_an_unknown_modality():
    r = subprocess.run([sys.executable, "-m", "runner.cli", "bench", "--modality", "pet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no console for modality pet" in r.stderr, r.stderr[-2000:]


@pytest.mark.display
@pytest.mark.timeout(90)  # one console launched twice and stepped (MR: it also has plan drags): ~12-15 s
def test_bench_json_schema():
    """The schema on one modality; `make bench` runs all three (the figures need the whole run)."""
    require_console()
    r = subprocess.run([sys.executable, "-m", "runner.cli", "bench", "--json", "--steps", "4", "--resets", "2",
                        "--modality", "mr"], cwd=ROOT, capture_output=True, text=True, timeout=80)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["cpus"] >= 1 and report["load_average_1min"] >= 0
    assert set(report["modalities"]) == {"mr"}
    assert "plan_drag_step_ms" in report["modalities"]["mr"]
    for modality, f in report["modalities"].items():
        assert f["steps"] == 4 and f["launches"] == 2, modality
        for key in ("step_ms", "drag_step_ms"):
            assert set(f[key]) == {"median", "p95"} and 0 < f[key]["median"] <= f[key]["p95"], (modality, key)
        for key in ("capture_ms", "encode_ms", "launch_s", "pss_mib"):
            assert isinstance(f[key], float) and f[key] > 0, (modality, key)
        # a step includes capture and encode, so it cannot be cheaper than their medians together
        assert f["step_ms"]["median"] > f["capture_ms"]
        assert 50 < f["pss_mib"] < 4096
        if f["reset_s"] is None:
            assert f["reset_unavailable"], modality  # null only with a reason
        else:
            assert isinstance(f["reset_s"], float) and f["reset_s"] > 0 and "reset_unavailable" not in f
