"""The hidden half of a subject: landmarks, organ masks, reference planes (scoring only).

    from scoring.subject_oracle import load_oracle
    orc = load_oracle("dev")
    orc.organ_voxel_z("lungs"); orc.reference_planes["4ch"]; orc.lv_long_axis

Refuses to load when MEDIMAGEOS_ROLE=console (console processes must never see it).
All coordinates are in the subject frame of rendering/subjects (LPS mm, z = 0 at the
jugular notch, y = 0 at the table top).

Landmark names (procedural subjects; imported subjects have the subset they support):
  lung_apex_left/right, lung_base_left/right, carina, heart_apex, lv_apex_endocardial,
  lv_apex_epicardial, lv_centre, mitral_valve_centre, aortic_valve_centre,
  tricuspid_valve_centre, pulmonary_valve_centre, aortic_arch_top, aortic_bifurcation,
  aorta_descending_mid, pulmonary_bifurcation, liver_dome, liver_tip, porta_hepatis,
  spleen_upper_pole/lower_pole, spleen_centre, kidney_<side>_upper_pole/lower_pole/hilum/centre,
  kidney_<side>_top/bottom (extreme slices), ureter_<side>_start, bladder_top/bottom/centre,
  heart_top/bottom, diaphragm_dome_left/right, sternal_notch, xiphoid, pubic_symphysis,
  femoral_head_left/right, iliac_crest_left/right, sacral_promontory, spine_L5_S1, pylorus, caecum.
Reference planes: {"centre", "normal", "row"} unit vectors; "col" = normal x row.
  4ch (horizontal long axis) and 2ch (vertical long axis) contain the LV long axis;
  3ch contains apex, mitral and aortic valve centres; sax is perpendicular to the long axis.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rendering.subjects import SubjectError, load_runtime
from rendering.subjects.bundle import ROLE_ENV
from rendering.subjects.runtime import SubjectRuntime, runtime_dir


class OracleAccessError(SubjectError):
    """The oracle half was requested from a process that must not see it."""


def _guard() -> None:
    if os.environ.get(ROLE_ENV, "").strip().lower() == "console":
        raise OracleAccessError("the subject oracle is not available to console processes "
                                f"({ROLE_ENV}=console); only scoring/ may load it")


@dataclass
class SubjectOracle:
    id: str
    runtime: SubjectRuntime
    meta: dict
    arrays: dict[str, np.ndarray]
    landmarks: dict[str, np.ndarray] = field(default_factory=dict)
    reference_planes: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    _mask_cache: dict = field(default_factory=dict, repr=False)

    # ---- geometry -----------------------------------------------------------------
    @property
    def lv_long_axis(self) -> tuple[np.ndarray, np.ndarray]:
        """(base point = mitral-valve centre, apex point = LV epicardial apex)."""
        a = self.meta.get("lv_long_axis")
        if not a:
            raise SubjectError(f"subject {self.id} has no LV long axis (`medimageos subjects show {self.id}` lists "
                               "the tasks it serves)")
        return np.asarray(a[0], float), np.asarray(a[1], float)

    @property
    def kidneys(self) -> dict:
        return self.meta.get("kidneys", {})

    @property
    def vertebrae(self) -> dict:
        """name -> {z_top, z_bottom, z_mid, upper_endplate_z, lower_endplate_z, body_centre}."""
        return self.meta.get("vertebrae", {})

    @property
    def organ_names(self) -> list[str]:
        return sorted(self.meta["organ_labels"])

    # ---- masks --------------------------------------------------------------------
    def organ_labels(self, name: str) -> list[int]:
        try:
            return list(self.meta["organ_labels"][name])
        except KeyError:
            raise SubjectError(f"subject {self.id} has no organ {name!r}; known: {', '.join(self.organ_names)}") from None

    def organ_mask(self, name: str) -> np.ndarray:
        """Boolean mask on the label grid [k, j, i]."""
        m = self._mask_cache.get(name)
        if m is None:
            m = np.isin(self.runtime.labels, self.organ_labels(name))
            m.setflags(write=False)
            self._mask_cache[name] = m
        return m

    def organ_voxels_mm(self, name: str) -> np.ndarray:
        """(N, 3) world coordinates of the organ's voxel centres."""
        k, j, i = np.nonzero(self.organ_mask(name))
        o, s = self.runtime.origin_mm, self.runtime.spacing_mm
        return np.stack([o[0] + s[0] * i, o[1] + s[1] * j, o[2] + s[2] * k], axis=1)

    def organ_voxel_z(self, name: str) -> np.ndarray:
        """z (mm) of every voxel of the organ (for coverage fractions)."""
        m = self.organ_mask(name)
        per_k = m.sum(axis=(1, 2))
        return np.repeat(self.runtime.world_z(), per_k).astype(float)

    def organ_z_extent(self, name: str) -> tuple[float, float]:
        """(zmin, zmax) of voxel centres (mm)."""
        ks = np.nonzero(self.organ_mask(name).any(axis=(1, 2)))[0]
        if ks.size == 0:
            raise SubjectError(f"organ {name!r} is empty in subject {self.id}")
        z = self.runtime.world_z()
        return float(z[ks[0]]), float(z[ks[-1]])

    def organ_volume_ml(self, name: str) -> float:
        s = self.runtime.spacing_mm
        return float(self.organ_mask(name).sum() * s[0] * s[1] * s[2] / 1000.0)

    def organ_centroid(self, name: str) -> np.ndarray:
        return self.organ_voxels_mm(name).mean(axis=0)

    # ---- body outline -------------------------------------------------------------
    def _interp(self, key: str, z_mm: float) -> float:
        z = self.arrays["z"]
        v = self.arrays[key]
        ok = ~np.isnan(v)
        if not ok.any():
            raise SubjectError("no body outline")
        return float(np.interp(z_mm, z[ok], v[ok]))

    def body_centre_y(self, z_mm: float) -> float:
        """AP centre (mm) of the body outline at z: midpoint of its anterior and posterior extents."""
        return self._interp("cy", z_mm)

    def body_centre_x(self, z_mm: float) -> float:
        return self._interp("cx", z_mm)

    def body_extent(self, z_mm: float) -> dict[str, float]:
        return {k: self._interp(k, z_mm) for k in ("x_min", "x_max", "y_min", "y_max")}

    def vertebra_z(self, name: str, which: str = "z_mid") -> float:
        return float(self.vertebrae[name][which])


def _planes(meta: dict) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for k, p in meta.get("planes", {}).items():
        n = np.asarray(p["normal"], float)
        r = np.asarray(p["row"], float)
        out[k] = {"centre": np.asarray(p["centre"], float), "normal": n, "row": r, "col": np.cross(n, r)}
    return out


def load_oracle(subject_id: str) -> SubjectOracle:
    """Load the oracle half of a subject (building the procedural bundle if needed)."""
    _guard()
    rt = load_runtime(subject_id)
    d = Path(rt.path) if rt.path is not None else runtime_dir(subject_id)
    try:
        meta = json.loads((d / "oracle.json").read_text())
        with np.load(d / "oracle.npz") as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError) as e:
        raise SubjectError(f"cannot read the oracle half of subject {subject_id!r} in {d}: {e}") from e
    if meta.get("version") != rt.version:
        raise SubjectError(f"oracle of {subject_id!r} is version {meta.get('version')}, runtime is {rt.version}")
    lms = {k: np.asarray(v, float) for k, v in meta.get("landmarks", {}).items()}
    return SubjectOracle(id=subject_id, runtime=rt, meta=meta, arrays=arrays, landmarks=lms,
                         reference_planes=_planes(meta))
