"""Demo media: `medimageos demo --out DIR` writes them under DIR/media and never into the source tree;
`medimageos tasks publish-media DIR` copies them into the task folders, refusing media of another card."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from runner.demo import media_dir, publish_media, write_task_media
from runner.episode import CARD_FILE
from tasks.card import TaskCardError, all_cards, load_card, tasks_root, write_card

TASK = "ct_ui_smoke_routine"


def _png(path: Path, value: int) -> None:
    Image.fromarray(np.full((40, 64, 3), value, np.uint8)).save(path)


def _episode(tmp: Path, card, steps: int = 3) -> Path:
    """A finished episode folder as run_episode leaves it (the parts the demo reads)."""
    ep = tmp / "ep" / card.id
    ep.mkdir(parents=True)
    for k in range(steps):
        _png(ep / f"step_{k:03d}.png", 20 * k)
    _png(ep / "final.png", 200)
    write_card(card, ep / CARD_FILE)
    return ep


def _tasks_copy(dest: Path) -> Path:
    for c in all_cards():
        d = dest / c.modality / c.id
        d.mkdir(parents=True)
        shutil.copyfile(c.source, d / "task.json")
        (d / "success.gif").write_bytes(b"stale")
    return dest


def _source_tree_media() -> dict[str, tuple[str, int]]:
    """Hash and mtime of every media file in the source tree (rewriting identical bytes counts too)."""
    return {str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(tasks_root().glob("*/*/*")) if p.suffix in (".png", ".gif")}


def test_media_go_to_the_output_folder_and_publish_into_a_tasks_folder(tmp_path):
    card = load_card(TASK)
    out = tmp_path / "demo"
    dest = media_dir(out, card)
    assert dest == out / "media" / "ct" / TASK
    assert write_task_media(card, _episode(tmp_path, card), dest, passed=True) == [
        "start.png", "success.png", "success.gif"]
    assert (dest / "start.png").read_bytes() == (tmp_path / "ep" / TASK / "step_000.png").read_bytes()
    assert Image.open(dest / "success.gif").n_frames == 4
    tasks = _tasks_copy(tmp_path / "tasks")
    assert publish_media(out, tasks) == [tasks / "ct" / TASK]
    for name in ("start.png", "success.png", "success.gif"):
        assert (tasks / "ct" / TASK / name).read_bytes() == (dest / name).read_bytes()
    # a failed reference episode publishes start.png only and removes stale success media
    write_task_media(card, _episode(tmp_path / "again", card), dest, passed=False)
    publish_media(out / "media", tasks)
    assert (tasks / "ct" / TASK / "start.png").is_file() and not (tasks / "ct" / TASK / "success.gif").exists()


@pytest.mark.parametrize("edit, needle", [
    ({"version": "0.0.1-old"}, "version '0.0.1-old'"),
    ({"goal": "A goal nobody shipped for this task."}, "differs from the shipped"),
])
def test_publish_refuses_media_of_another_card_and_copies_nothing(tmp_path, edit, needle):
    card = load_card(TASK)
    other = load_card("ct_lung_coverage_isocenter")
    out = tmp_path / "demo"
    write_task_media(other, _episode(tmp_path, other), media_dir(out, other), passed=True)
    stale = card.model_copy(update=edit)
    write_task_media(stale, _episode(tmp_path / "stale", stale), media_dir(out, stale), passed=True)
    tasks = _tasks_copy(tmp_path / "tasks")
    with pytest.raises(TaskCardError, match=needle) as exc:
        publish_media(out, tasks)
    assert TASK in str(exc.value)
    # checked before anything is copied: the valid task's media were not published either
    assert not (tasks / "ct" / other.id / "start.png").exists()


def test_publish_names_an_empty_or_unknown_media_folder(tmp_path):
    with pytest.raises(TaskCardError, match="no task media"):
        publish_media(tmp_path, _tasks_copy(tmp_path / "tasks"))
    toy = load_card(TASK).model_copy(update={"id": "ct_toy_unshipped"})
    write_task_media(toy, _episode(tmp_path, toy), media_dir(tmp_path / "demo", toy), passed=False)
    with pytest.raises(TaskCardError, match="ct_toy_unshipped is not shipped"):
        publish_media(tmp_path / "demo", tmp_path / "tasks")


def test_publish_media_cli_reports_errors(tmp_path, capsys):
    from runner.cli import main

    assert main(["tasks", "publish-media", str(tmp_path), "--root", str(tmp_path)]) == 2
    assert "no task media" in capsys.readouterr().err


@pytest.mark.display
@pytest.mark.timeout(180)  # a reference and a no-op episode and their media: ~30-46 s under 4 display workers
def test_demo_writes_media_under_out_and_not_into_the_source_tree(tmp_path):
    from runner.demo import main

    before = _source_tree_media()
    assert main(tmp_path / "demo", tasks=TASK) == 0
    dest = tmp_path / "demo" / "media" / "ct" / TASK
    assert sorted(p.name for p in dest.iterdir()) == [CARD_FILE, "start.png", "success.gif", "success.png"]
    assert json.loads((dest / CARD_FILE).read_text())["version"] == load_card(TASK).version
    assert _source_tree_media() == before
