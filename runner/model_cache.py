"""Crash-safe, append-only cache of model responses (one JSON line per response).

A resumed or repeated run must not pay for the same model call twice. The key is the sha256 of a
canonical JSON of everything that determines a response (`request_key`): model, base URL, the full
messages (system prompt, text, and each image replaced by the sha256 of its bytes), temperature,
max_tokens, top_p, seed and any other decoding settings, plus the agent adapter that built the
request (name, version, prompt hash, image size sent; runner/agents/adapters). Unlike a key built
from the prompt text alone, changing a decoding setting, an image or the adapter can never return
a stale answer.

File format: one `{"key": ..., "value": ...}` object per line. Each record is written with a single
`os.write` on an `O_APPEND` descriptor (under an advisory flock) and fsync'd, so several processes
can share one file. A line that does not parse (a torn last line from a killed writer) is skipped
on load; the next writer starts its record on a fresh line so a torn tail never swallows a good
record. The first record of a key wins, in memory and on reload.
"""
from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KEY_FORMAT = 1  # bump when the canonical form changes, so old entries stop matching

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^,;]*)*?);base64,", re.ASCII)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _digest_images(obj: Any) -> Any:
    """Replace base64 data URLs by the sha256 of their decoded bytes (keys stay small and stable)."""
    if isinstance(obj, str):
        m = _DATA_URL.match(obj)
        if m:
            payload = obj[m.end():]
            try:
                data = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                data = payload.encode("utf-8")
            return {"data_url_sha256": hashlib.sha256(data).hexdigest(), "mime": m.group("mime") or ""}
        return obj
    if isinstance(obj, Mapping):
        return {str(k): _digest_images(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_digest_images(v) for v in obj]
    return obj


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 hex key of a request description (model, base_url, messages, decoding settings...)."""
    payload = {"key_format": KEY_FORMAT, "request": _digest_images(request)}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class ModelCache:
    """Append-only JSONL cache: `get(key)` -> stored value or None, `put(key, value)`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, Any] = {}
        self._offset = 0  # bytes of the file consumed up to the last complete line
        self._fd: int | None = None
        self._lock = threading.Lock()
        self.skipped_lines = 0  # unparseable lines seen (torn or corrupt)
        self._refresh()

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Read complete lines appended since the last read (by us or by other processes)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return  # nothing complete yet (possibly a torn record being written)
        for line in data[: end + 1].split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                key, value = rec["key"], rec["value"]
                if not isinstance(key, str):
                    raise TypeError("key is not a string")
            except (ValueError, KeyError, TypeError):
                self.skipped_lines += 1
                continue
            self._entries.setdefault(key, value)
        self._offset += end + 1

    def get(self, key: str) -> Any | None:
        """The cached value for key, or None. A miss re-reads records other processes appended."""
        with self._lock:
            if key not in self._entries:
                self._refresh()
            return self._entries.get(key)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._lock:
            if key not in self._entries:
                self._refresh()
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    # -- writing ---------------------------------------------------------------------------
    def _open(self) -> int:
        if self._fd is None:
            existed = self.path.exists()
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            if not existed:  # make the new file's directory entry durable too
                dfd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        return self._fd

    def put(self, key: str, value: Any) -> None:
        """Append one record (single write + fsync). A key already cached is not written again."""
        record = (canonical_json({"key": key, "value": value}) + "\n").encode("utf-8")
        with self._lock:
            if key in self._entries:
                return
            fd = self._open()
            # The lock makes tail check + append one step among live writers; only a killed
            # writer can leave a torn tail, and the lock dies with it.
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(fd).st_size
                if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                    record = b"\n" + record  # terminate a torn tail left by a killed writer
                view = memoryview(record)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self._entries[key] = value

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "ModelCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (e.g. shipped to a Ray actor) as its path only; the receiver reloads the file.
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]
