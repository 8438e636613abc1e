"""Environment fingerprint and the doctor's diagnosis, without a display: golden vs observed dicts."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from runner.doctor import REPRODUCED, compare, verdict_text
from runner.fingerprint import _decode_xorg_release, differing_fields, runner_fingerprint, summarize
from tasks.card import Budgets, TaskCard
from scoring.aggregate import score_command
from scoring.verdict import Verdict

FP = {"python": "3.11.7", "qt": "6.11.3", "pyside6": "6.11.3", "vtk": "9.7.2", "numpy": "2.4.6",
      "gl_vendor": "Mesa/X.org", "gl_renderer": "llvmpipe (LLVM 15.0.6, 256 bits)",
      "gl_version": "4.5 (Core Profile) Mesa 22.3.6", "fonts": {"/f/DejaVuSans.ttf": "aa" * 32},
      "xvfb": "X.Org X Server 1.21.1.7", "imagecodecs": "2026.3.6", "zlib_ng": "2.3.3",
      "mss": "10.2.0"}


def _images(n: int) -> dict:
    return {f"step_{i:03d}.png": {"png": f"png{i}", "rgb": f"rgb{i}"} for i in range(n)} | {
        "final.png": {"png": "pngF", "rgb": "rgbF"}}


GOLDEN = {
    "fingerprint": FP,
    "episodes": {
        "reference/a/dev/seed0": {"task": "a", "task_version": "1", "subject": "dev", "seed": 0,
                                  "outcome": "PASS", "steps": 3, "reason": "", "images": _images(3)},
        "reference/b/dev/seed0": {"task": "b", "task_version": "1", "subject": "dev", "seed": 0,
                                  "outcome": "PASS", "steps": 5, "reason": "", "images": _images(5)},
    },
}


def observed(**fp_changes) -> dict:
    obs = copy.deepcopy(GOLDEN)
    obs["fingerprint"].update(fp_changes)
    return obs


def text(diag) -> str:
    return "\n".join(str(f) for f in diag.findings)


def test_identical_observations_reproduce():
    diag = compare(GOLDEN, observed())
    assert diag.ok and not diag.causes and not diag.fingerprint_diff
    assert verdict_text(diag, []) == REPRODUCED


def test_changed_pixel_hash_names_rendering_and_the_differing_fields():
    obs = observed(qt="6.10.0", gl_renderer="softpipe")
    obs["episodes"]["reference/b/dev/seed0"]["images"]["step_002.png"] = {"png": "x", "rgb": "y"}
    diag = compare(GOLDEN, obs)
    assert not diag.ok and diag.causes == {"rendering"}
    out = text(diag)
    assert "pixels differ in 1 of 6 screenshots (first: step_002.png)" in out
    assert "qt '6.11.3' -> '6.10.0'" in out and "gl_renderer" in out
    assert "imagecodecs" not in out and "zlib_ng" not in out  # the encoder is not blamed for a pixel difference
    assert verdict_text(diag, []).startswith("this machine does NOT reproduce")
    assert "rendering (Qt/VTK/GL/fonts/Xvfb)" in verdict_text(diag, [])


def test_png_only_difference_names_the_encoder():
    obs = observed(zlib_ng="2.3.4")
    for img in obs["episodes"]["reference/a/dev/seed0"]["images"].values():
        img["png"] = img["png"] + "-recompressed"
    diag = compare(GOLDEN, obs)
    assert diag.causes == {"encoder"}
    out = text(diag)
    assert "identical pixels" in out and "zlib_ng '2.3.3' -> '2.3.4'" in out
    assert "rendering" not in out
    assert "PNG encoder (imagecodecs/zlib-ng)" in verdict_text(diag, [])


def test_pixel_difference_without_a_recorded_version_change_says_so():
    obs = observed()
    obs["episodes"]["reference/a/dev/seed0"]["images"]["final.png"]["rgb"] = "other"
    obs["episodes"]["reference/a/dev/seed0"]["images"]["final.png"]["png"] = "other"
    obs["episodes"]["reference/a/dev/seed0"]["images"]["step_002.png"]["rgb"] = "other"
    diag = compare(GOLDEN, obs)
    assert diag.causes == {"rendering"}
    assert "pixels differ in 2 of 4 screenshots (first: step_002.png)" in text(diag)  # in step order
    assert "no recorded version differs" in text(diag) and "console code changed" in text(diag)


def test_font_hash_change_is_a_rendering_field():
    obs = observed(fonts={"/f/DejaVuSans.ttf": "bb" * 32})
    obs["episodes"]["reference/a/dev/seed0"]["images"]["step_000.png"]["rgb"] = "z"
    diag = compare(GOLDEN, obs)
    assert diag.causes == {"rendering"}
    rendering = [f for f in diag.findings if f.topic == "rendering"]
    assert len(rendering) == 1 and "fonts//f/DejaVuSans.ttf" in rendering[0].message


def test_missing_episode_outcome_and_step_count_differences_fail():
    obs = observed()
    del obs["episodes"]["reference/a/dev/seed0"]
    ep = obs["episodes"]["reference/b/dev/seed0"]
    ep["outcome"], ep["reason"] = "INVALID", "console fault: boom"
    del ep["images"]["step_004.png"]
    diag = compare(GOLDEN, obs)
    assert diag.causes == {"missing", "behaviour"}
    out = text(diag)
    assert "did not run" in out and "outcome INVALID (console fault: boom), golden PASS" in out
    assert "5 screenshots, golden 6" in out


def test_fingerprint_difference_with_identical_observations_is_only_a_warning():
    diag = compare(GOLDEN, observed(numpy="2.3.0"))
    assert diag.ok
    assert any(f.level == "warn" and "numpy" in f.message for f in diag.findings)
    assert verdict_text(diag, []) == REPRODUCED


def test_differing_fields_flattens_fonts_and_reports_absent_fields():
    a = {"qt": "6", "fonts": {"x": "1", "y": "2"}}
    b = {"qt": "6", "fonts": {"x": "1", "y": "3"}, "mss": "10"}
    assert differing_fields(a, b) == {"fonts/y": ("2", "3"), "mss": (None, "10")}


def test_xorg_release_decoding_and_runner_fields():
    assert _decode_xorg_release(12101007) == "1.21.1.7"
    assert _decode_xorg_release(12004000) == "1.20.4"
    fp = runner_fingerprint()
    assert {"xvfb", "imagecodecs", "zlib_ng", "png_level", "mss"} <= fp.keys() and fp["imagecodecs"] and fp["zlib_ng"]


def test_summarize_counts_distinct_fingerprints():
    other = dict(FP, vtk="9.3.0")
    s = summarize([FP, FP, other, None])
    assert not s["homogeneous"]
    assert [f["episodes"] for f in s["fingerprints"]] == [2, 1]
    assert s["fingerprints"][0]["fingerprint"] == FP
    assert s["episodes_without_fingerprint"] == 1 and s["differing_fields"] == ["vtk"]
    assert summarize([FP])["homogeneous"] and summarize([])["homogeneous"]


def _write_episode(root: Path, seed: int, state: dict | None) -> None:
    v = Verdict(task="t", task_version="1", modality="ct", level=0, subject="s01", seed=seed, agent="a",
                outcome="PASS", sr=1.0, pr=1.0, aq=90.0, steps=3, rejected_steps=0, termination="done")
    ep = root / "a" / "t" / "s01" / f"seed{seed}"
    ep.mkdir(parents=True)
    if state is not None:
        (ep / "state.json").write_text(json.dumps(state))
    (ep / "verdict.json").write_text(v.model_dump_json())


def test_scores_json_environment_section_with_old_episodes(tmp_path):
    _write_episode(tmp_path, 0, {"provenance": {"environment": FP}})
    _write_episode(tmp_path, 1, {"provenance": {"environment": dict(FP, qt="6.10.0")}})
    _write_episode(tmp_path, 2, {"provenance": {"subject": "s01"}})  # older episode: no fingerprint
    _write_episode(tmp_path, 3, None)  # no state dump at all
    (tmp_path / "a" / "t" / "s01" / "seed3" / "state.json").write_text("{not json")
    card = TaskCard(id="t", version="1", modality="ct", level=0, title="t", goal="Do the thing.",
                    budgets=Budgets(max_steps=5), oracle="synthetic")
    score_command(tmp_path, cards=[card])
    env = json.loads((tmp_path / "scores.json").read_text())["environment"]
    assert env["homogeneous"] is False and env["differing_fields"] == ["qt"]
    assert sorted(f["episodes"] for f in env["fingerprints"]) == [1, 1]
    assert env["episodes_without_fingerprint"] == 2
