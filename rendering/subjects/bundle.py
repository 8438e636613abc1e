"""Subject bundles on disk: the runtime half (consoles) and the oracle half (scoring only).

Layout (format ``medimageos-subject/1``)::

    <root>/<generator_version>/<id>/        procedural subjects ("dev", "s01".."s30")
    <root>/imported/<id>/                   subjects made by `subjects import`
        runtime.npz   labels (uint8/uint16, shape (nz, ny, nx), index [k, j, i])
        runtime.json  id, version, format, frame (origin, spacing, axes), label_names, tissue table
        oracle.npz    per-slice body centres (x, y) and body extents
        oracle.json   landmarks, reference planes, LV long axis, organ label groups, kidney
                      geometry, vertebral levels, build statistics (which tasks a subject
                      serves is computed from these: scoring/capabilities.py)

<root> is ``$MEDIMAGEOS_CACHE/subjects`` when MEDIMAGEOS_CACHE is set, else
``~/.cache/medimageos/subjects``.  A bundle directory is written complete in a temporary
sibling directory and renamed into place, so readers never see a half-written bundle.
This module never reads the oracle half; scoring/subject_oracle.py does.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

FORMAT = "medimageos-subject/1"
RUNTIME_FILES = ("runtime.npz", "runtime.json")
ORACLE_FILES = ("oracle.npz", "oracle.json")
ROLE_ENV = "MEDIMAGEOS_ROLE"


class SubjectError(Exception):
    """A subject cannot be found, built, imported or read (the message says why)."""


def cache_root() -> Path:
    env = os.environ.get("MEDIMAGEOS_CACHE")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "medimageos"
    return base / "subjects"


def procedural_dir(subject_id: str, version: str) -> Path:
    return cache_root() / version / subject_id


def imported_dir(subject_id: str) -> Path:
    return cache_root() / "imported" / subject_id


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    return o


def write_bundle(dest: Path, labels: np.ndarray, runtime_meta: dict, oracle_meta: dict,
                 oracle_arrays: dict[str, np.ndarray]) -> Path:
    """Write both halves atomically into ``dest`` (replacing nothing that already exists)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{dest.name}-", dir=dest.parent))
    try:
        np.savez_compressed(tmp / "runtime.npz", labels=labels)
        (tmp / "runtime.json").write_text(json.dumps(_jsonable(runtime_meta), indent=1))
        np.savez_compressed(tmp / "oracle.npz", **oracle_arrays)
        (tmp / "oracle.json").write_text(json.dumps(_jsonable(oracle_meta), indent=1))
        try:
            os.rename(tmp, dest)
        except OSError:
            if (dest / "runtime.json").exists():      # another process won the race: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def read_runtime_files(d: Path) -> tuple[np.ndarray, dict]:
    """Read only the runtime half of a bundle directory."""
    d = Path(d)
    try:
        meta = json.loads((d / "runtime.json").read_text())
        with np.load(d / "runtime.npz") as z:
            labels = z["labels"]
    except (OSError, KeyError, ValueError) as e:
        raise SubjectError(f"cannot read subject bundle {d}: {e}") from e
    if meta.get("format") != FORMAT:
        raise SubjectError(f"bundle {d} has format {meta.get('format')!r}, expected {FORMAT!r}")
    return labels, meta


def bundle_size_bytes(d: Path, files=RUNTIME_FILES + ORACLE_FILES) -> int:
    return sum((Path(d) / f).stat().st_size for f in files if (Path(d) / f).exists())
