"""SubjectRuntime (what consoles read), load_runtime, list_subjects and procedural builds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import bundle as B
from .bundle import SubjectError
from .version import GENERATOR_VERSION
from .labels import LABEL_NAMES
from .params import cohort_ids, parse_id, sample_params
from .tissues import TissueTable, default_table

_lock = threading.Lock()
_memo: dict[tuple[str, str], "SubjectRuntime"] = {}


@dataclass
class SubjectRuntime:
    """The console-visible half of a subject. Arrays are read-only and may be shared."""
    id: str
    version: str
    labels: np.ndarray
    spacing_mm: tuple[float, float, float]
    origin_mm: tuple[float, float, float]
    label_names: dict[int, str]
    tissues: TissueTable
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    @property
    def cache_key(self) -> tuple[str, str, str] | None:
        """What names this subject's anatomy for a cache across episodes: id, generator version and bundle
        folder (an imported subject may reuse a cohort id). None for a subject built in memory, which no
        cache may keep."""
        return None if self.path is None else (self.id, self.version, str(self.path))

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.labels.shape)

    def ct_hu_lut(self) -> np.ndarray:
        """float32 (n_labels,): unenhanced HU per label value, usable as lut[labels]."""
        return self.tissues.ct_hu.astype(np.float32)

    def ct_compartment_lut(self) -> np.ndarray:
        """int16 (n_labels,): compartment code per label (names in tissues.compartments)."""
        return self.tissues.ct_compartment.astype(np.int16)

    def hu_enhancement_lut(self) -> np.ndarray:
        return self.tissues.hu_enhancement_max.astype(np.float32)

    def property_lut(self, name: str) -> np.ndarray:
        return getattr(self.tissues, name).astype(np.float32)

    def world_x(self) -> np.ndarray:
        return self.origin_mm[0] + self.spacing_mm[0] * np.arange(self.labels.shape[2])

    def world_y(self) -> np.ndarray:
        return self.origin_mm[1] + self.spacing_mm[1] * np.arange(self.labels.shape[1])

    def world_z(self) -> np.ndarray:
        return self.origin_mm[2] + self.spacing_mm[2] * np.arange(self.labels.shape[0])

    def world_to_index(self, p) -> np.ndarray:
        """Continuous (i, j, k) voxel coordinates of world points (..., 3)."""
        p = np.asarray(p, float)
        return (p - np.asarray(self.origin_mm)) / np.asarray(self.spacing_mm)

    def label_at(self, p) -> np.ndarray:
        """Label of the voxel nearest each world point (0 = air outside the grid)."""
        ijk = np.rint(self.world_to_index(p)).astype(int)
        nz, ny, nx = self.labels.shape
        ok = (ijk[..., 0] >= 0) & (ijk[..., 0] < nx) & (ijk[..., 1] >= 0) & (ijk[..., 1] < ny) \
            & (ijk[..., 2] >= 0) & (ijk[..., 2] < nz)
        out = np.zeros(ijk.shape[:-1], self.labels.dtype)
        out[ok] = self.labels[ijk[ok][:, 2], ijk[ok][:, 1], ijk[ok][:, 0]]
        return out

    def label_id(self, name: str) -> int:
        for k, v in self.label_names.items():
            if v == name:
                return k
        raise KeyError(name)

    @property
    def table_top_y_mm(self) -> float:
        return float(self.meta.get("frame", {}).get("table_top_y_mm", 0.0))


def _role() -> str:
    return os.environ.get(B.ROLE_ENV, "")


def _runtime_from_dir(d: Path) -> SubjectRuntime:
    labels, meta = B.read_runtime_files(d)
    labels.setflags(write=False)
    fr = meta["frame"]
    tissues = TissueTable.from_json(meta["tissues"])
    return SubjectRuntime(id=meta["id"], version=meta["version"], labels=labels,
                          spacing_mm=tuple(float(v) for v in fr["spacing_mm"]),
                          origin_mm=tuple(float(v) for v in fr["origin_mm"]),
                          label_names={int(k): v for k, v in meta["label_names"].items()},
                          tissues=tissues, meta=meta, path=d)


def build_procedural(subject_id: str, force: bool = False) -> Path:
    """Build (if needed) and cache the bundle of a procedural subject; returns its directory."""
    if parse_id(subject_id) is None:
        raise SubjectError(f"{subject_id!r} is not a procedural subject id (dev, s01..s30)")
    d = B.procedural_dir(subject_id, GENERATOR_VERSION)
    if (d / "runtime.json").exists() and not force:
        return d
    # The generator and its scipy imports load only when a bundle is actually built.
    from .derive import body_profile, mask_landmarks, organ_label_ids, retention
    from .generator import build_subject
    if force and d.exists():
        import shutil
        shutil.rmtree(d)
    P = sample_params(subject_id)
    labels, frame, orc, stats = build_subject(P)
    names = dict(LABEL_NAMES)
    tissues = default_table(names)
    origin, spacing = frame["origin_mm"], frame["spacing_mm"]
    organ_ids = organ_label_ids(names)
    lms = {k: np.asarray(v, float) for k, v in orc["landmarks"].items()}
    lms.update(mask_landmarks(labels, origin, spacing, organ_ids))
    prof = body_profile(labels, origin, spacing)
    ret = retention(labels, stats["primitive_count"])
    frame = dict(frame, table_top_y_mm=0.0)
    runtime_meta = {"format": B.FORMAT, "id": subject_id, "version": GENERATOR_VERSION, "kind": "procedural",
                    "cohort": P.cohort, "index": P.index, "sex": P.sex, "height_cm": round(P.height_cm, 1),
                    "frame": frame, "label_names": names, "tissues": tissues.to_json(),
                    "built_unix": int(time.time())}
    oracle_meta = {"format": B.FORMAT, "id": subject_id, "version": GENERATOR_VERSION,
                   "landmarks": lms, "planes": orc["planes"], "lv_long_axis": orc["lv_long_axis"],
                   "heart_frame": orc["heart_frame"], "kidneys": orc["kidneys"], "vertebrae": orc["vertebrae"],
                   "levels": orc["levels"], "organ_labels": organ_ids, "params": P.to_json(),
                   "stats": {"build_s": round(stats["build_s"], 3),
                             "retention": {names[k]: round(v, 4) for k, v in ret.items()},
                             "organ_retention": {k: round(v, 4) for k, v in stats["organ_retention"].items()},
                             "painted_primitive_voxels": {names[k]: v for k, v in stats["primitive_count"].items()}},
                   "notes": orc["notes"]}
    arrays = {k: v for k, v in prof.items()}
    B.write_bundle(d, labels, runtime_meta, oracle_meta, arrays)
    return d


def _build_in_child(subject_id: str) -> None:
    """Consoles must never touch the oracle half, not even to write it: build in a child process."""
    env = dict(os.environ)
    env[B.ROLE_ENV] = "builder"
    r = subprocess.run([sys.executable, "-m", "rendering.subjects", "build", subject_id], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SubjectError(f"building subject {subject_id!r} failed: {r.stderr.strip()[-400:]}")


def runtime_dir(subject_id: str) -> Path:
    """Directory of the subject's bundle, building a procedural subject when its cache is missing."""
    if parse_id(subject_id) is not None:
        d = B.procedural_dir(subject_id, GENERATOR_VERSION)
        if not (d / "runtime.json").exists():
            if _role() == "console":
                _build_in_child(subject_id)
            else:
                build_procedural(subject_id)
        return d
    d = B.imported_dir(subject_id)
    if (d / "runtime.json").exists():
        return d
    raise SubjectError(f"unknown subject {subject_id!r}: not dev, s01..s30, or an imported subject "
                       f"(looked in {B.imported_dir(subject_id)}); see `medimageos subjects list`")


def load_runtime(subject_id: str) -> SubjectRuntime:
    """The runtime half of a subject (labels, tissue tables, frame). Builds and caches on first use.
    Never opens the oracle half."""
    if not isinstance(subject_id, str) or not subject_id:
        raise SubjectError("subject id must be a non-empty string")
    d = runtime_dir(subject_id)
    key = (str(d), subject_id)
    with _lock:
        rt = _memo.get(key)
        if rt is not None and rt.path is not None and (d / "runtime.json").exists():
            return rt
    rt = _runtime_from_dir(d)
    with _lock:
        _memo[key] = rt
    return rt


def clear_memo() -> None:
    with _lock:
        _memo.clear()


def list_subjects(include_imported: bool = True) -> list[dict]:
    """All known subjects: id, kind (development | scoring | imported), built (cached) flag."""
    out = [{"id": "dev", "kind": "development", "built": (B.procedural_dir("dev", GENERATOR_VERSION) / "runtime.json").exists()}]
    for sid in cohort_ids():
        out.append({"id": sid, "kind": "scoring",
                    "built": (B.procedural_dir(sid, GENERATOR_VERSION) / "runtime.json").exists()})
    if include_imported:
        root = B.cache_root() / "imported"
        if root.is_dir():
            for d in sorted(root.iterdir()):
                if (d / "runtime.json").exists():
                    try:
                        meta = json.loads((d / "runtime.json").read_text())
                    except (OSError, ValueError):
                        continue
                    out.append({"id": d.name, "kind": "imported", "built": True, "source": meta.get("source")})
    return out
