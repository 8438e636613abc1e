"""The results tree: DIR/<agent>/<task>/<subject>/seed<k>/ and crash-safe writes into it.

An episode is built in a sibling temp folder and renamed into place when its verdict is
written, so a final folder is either complete or absent; leftover temp folders are unfinished
episodes and are removed before that episode is redone.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any


def safe_name(name: str) -> str:
    """A folder-safe agent name ('api:Qwen/Qwen2.5-VL' -> 'api_Qwen_Qwen2.5-VL')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "agent"


def episode_dir(root: Path, agent: str, task: str, subject: str, seed: int) -> Path:
    return Path(root) / safe_name(agent) / task / subject / f"seed{seed}"


def is_finished(final_dir: Path, task_version: str | None = None) -> bool:
    """A verdict exists (for this task version, if given: an episode of an older card is redone)."""
    path = final_dir / "verdict.json"
    if not path.is_file():
        return False
    if task_version is None:
        return True
    try:
        return json.loads(path.read_text()).get("task_version") == task_version
    except (OSError, ValueError):
        return False  # unreadable verdict: redo the episode


def fresh_work_dir(final_dir: Path) -> Path:
    """An empty temp folder beside `final_dir`; stale ones from killed runs are removed."""
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in final_dir.parent.glob(final_dir.name + ".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = final_dir.parent / f"{final_dir.name}.tmp-{os.getpid()}"
    work.mkdir()
    return work


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=_default)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def publish(work_dir: Path, final_dir: Path) -> None:
    """Move a finished episode into place (atomic rename; a leftover final dir is replaced)."""
    fsync_dir(work_dir)
    if final_dir.exists():
        shutil.rmtree(final_dir)
    os.rename(work_dir, final_dir)
    fsync_dir(final_dir.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ReceiptWriter:
    """receipts.jsonl: one JSON object per step, flushed as it is written."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "a", buffering=1)

    def write(self, receipt: dict[str, Any]) -> None:
        self._f.write(json.dumps(receipt, sort_keys=True, default=_default) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()


def _default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
