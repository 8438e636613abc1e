"""docker/image_test.py's comparison finds every kind of difference (pure: two episode folders on disk)."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("image_test", ROOT / "docker" / "image_test.py")
image_test = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(image_test)


def make_run(root: Path) -> None:
    for i, card in enumerate(image_test.CARDS):
        ep = root / image_test.AGENT / card / image_test.SUBJECT / f"seed{image_test.SEED}"
        ep.mkdir(parents=True)
        verdict = {"task": card, "task_version": "1", "subject": image_test.SUBJECT, "seed": image_test.SEED,
                   "outcome": "PASS", "steps": 2, "sr": 1, "wall_seconds": 3.0 + i}
        (ep / "verdict.json").write_text(json.dumps(verdict))
        for name in ("step_000.png", "step_001.png", "final.png"):
            Image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(ep / name, compress_level=1)


def ep(root: Path, card: str) -> Path:
    return root / image_test.AGENT / card / image_test.SUBJECT / f"seed{image_test.SEED}"


def test_identical_runs_pass_and_wall_time_is_ignored(tmp_path):
    make_run(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    v = ep(tmp_path / "b", image_test.CARDS[0]) / "verdict.json"
    v.write_text(json.dumps({**json.loads(v.read_text()), "wall_seconds": 99.0}))
    assert image_test.compare_runs(tmp_path / "a", tmp_path / "b") == []


def test_pixel_png_verdict_and_missing_differences_are_named(tmp_path):
    make_run(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    ct, mr, us = (ep(tmp_path / "b", c) for c in image_test.CARDS)
    Image.fromarray(np.full((8, 8, 3), 7, np.uint8)).save(ct / "step_001.png")  # other pixels
    Image.open(mr / "final.png").save(mr / "final.png", compress_level=9)      # same pixels, other bytes
    v = json.loads((us / "verdict.json").read_text())
    (us / "verdict.json").write_text(json.dumps({**v, "outcome": "FAIL"}))
    problems = image_test.compare_runs(tmp_path / "a", tmp_path / "b")
    text = "\n".join(problems)
    assert "pixels differ in 1 of 3 screenshots (first step_001.png)" in text
    assert "identical pixels but different PNG bytes in 1 screenshots (first final.png)" in text
    assert "verdict field 'outcome': host 'PASS', container 'FAIL'" in text
    shutil.rmtree(ct)
    assert any("no verdict.json from the container" in p for p in image_test.compare_runs(tmp_path / "a", tmp_path / "b"))
