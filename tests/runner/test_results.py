"""The results tree: atomic publishing and version-aware resume."""
from __future__ import annotations

import json

from runner import results


def test_finished_only_for_the_same_task_version(tmp_path):
    final = results.episode_dir(tmp_path, "api:Qwen/VL 7B", "t", "s01", 2)
    assert final.parts[-4:] == ("api_Qwen_VL_7B", "t", "s01", "seed2")
    assert not results.is_finished(final)
    work = results.fresh_work_dir(final)
    results.write_json_atomic(work / "verdict.json", {"task_version": "1.0.0"})
    assert not results.is_finished(final)  # still in its temp folder
    results.publish(work, final)
    assert results.is_finished(final) and results.is_finished(final, "1.0.0")
    assert not results.is_finished(final, "1.1.0")  # an older card's episode is redone
    (final / "verdict.json").write_text("{torn")
    assert not results.is_finished(final, "1.0.0")


def test_stale_temp_folders_are_removed_and_publish_replaces(tmp_path):
    final = results.episode_dir(tmp_path, "a", "t", "s", 0)
    final.parent.mkdir(parents=True)
    stale = final.parent / "seed0.tmp-999999"  # left by a runner that was killed
    stale.mkdir()
    (stale / "step_000.png").write_bytes(b"x")
    work = results.fresh_work_dir(final)
    assert not stale.exists() and work.exists()
    results.write_json_atomic(work / "verdict.json", {"task_version": "2"})
    results.publish(work, final)
    again = results.fresh_work_dir(final)
    results.write_json_atomic(again / "verdict.json", {"task_version": "3"})
    results.publish(again, final)
    assert json.loads((final / "verdict.json").read_text())["task_version"] == "3"
    assert sorted(p.name for p in final.parent.iterdir()) == ["seed0"]
