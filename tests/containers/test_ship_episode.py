"""runner/ray_backend.py ships episode folders to the driver (no shared filesystem): read on the actor's
node, written on the driver atomically, with paths from another machine kept inside the folder."""
from __future__ import annotations

import pytest

from runner.ray_backend import install_episode_folder, read_episode_folder


def test_round_trip_is_byte_identical_and_leaves_no_temporary(tmp_path):
    src = tmp_path / "actor" / "ep"
    (src / "sub").mkdir(parents=True)
    (src / "verdict.json").write_text('{"outcome": "PASS"}')
    (src / "step_000.png").write_bytes(bytes(range(256)) * 10)
    (src / "sub" / "x.txt").write_text("nested")
    files = read_episode_folder(src)
    final = tmp_path / "driver" / "reference" / "card" / "dev" / "seed0"
    install_episode_folder(final, files)
    assert read_episode_folder(final) == files
    assert sorted(p.name for p in final.parent.iterdir()) == ["seed0"]  # the temporary was renamed in


def test_unfinished_folder_is_not_shipped(tmp_path):
    (tmp_path / "step_000.png").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="no verdict.json"):
        read_episode_folder(tmp_path)


@pytest.mark.parametrize("bad", ["../escape.txt", "/etc/passwd", "a/../../b"])
def test_unsafe_paths_are_refused_and_nothing_is_left(tmp_path, bad):
    final = tmp_path / "out" / "seed0"
    with pytest.raises(ValueError, match="unsafe path"):
        install_episode_folder(final, {"verdict.json": b"{}", bad: b"x"})
    assert not final.exists()
    assert list(final.parent.iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()


def test_scratch_of_dead_actors_is_removed_and_live_ones_kept(tmp_path, monkeypatch):
    import os
    import subprocess
    import tempfile

    from runner import ray_backend

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer exists
    dead = tmp_path / f"{ray_backend.SCRATCH_PREFIX}{gone.pid}-abc"
    live = tmp_path / f"{ray_backend.SCRATCH_PREFIX}{os.getpid()}-def"
    for d in (dead, live):
        (d / "agent" / "card" / "dev" / "seed0.tmp-1").mkdir(parents=True)
    ray_backend._remove_dead_scratch()
    assert not dead.exists() and live.exists()
