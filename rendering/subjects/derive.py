"""Ground truth derived from a finished label volume (shared by procedural builds and imports)."""
from __future__ import annotations

import numpy as np

from .labels import ORGANS


def organ_label_ids(label_names: dict[int, str]) -> dict[str, list[int]]:
    """Organ name -> label values present in this label table."""
    inv = {v: k for k, v in label_names.items()}
    out = {}
    for organ, names in ORGANS.items():
        ids = [inv[n] for n in names if n in inv]
        if ids:
            out[organ] = ids
    return out


def world_axes(shape, origin, spacing):
    nz, ny, nx = shape
    return (origin[0] + spacing[0] * np.arange(nx), origin[1] + spacing[1] * np.arange(ny),
            origin[2] + spacing[2] * np.arange(nz))


def body_profile(labels: np.ndarray, origin, spacing) -> dict[str, np.ndarray]:
    """Per-slice body outline extents and centres (NaN where a slice has no body)."""
    X, Y, Z = world_axes(labels.shape, origin, spacing)
    body = labels > 0
    anyx = body.any(axis=1)          # (nz, nx)
    anyy = body.any(axis=2)          # (nz, ny)
    nz = labels.shape[0]
    out = {k: np.full(nz, np.nan, np.float32) for k in ("x_min", "x_max", "y_min", "y_max", "cx", "cy")}
    for k in range(nz):
        ix = np.nonzero(anyx[k])[0]
        iy = np.nonzero(anyy[k])[0]
        if ix.size == 0:
            continue
        out["x_min"][k], out["x_max"][k] = X[ix[0]], X[ix[-1]]
        out["y_min"][k], out["y_max"][k] = Y[iy[0]], Y[iy[-1]]
    out["cx"] = (out["x_min"] + out["x_max"]) / 2
    out["cy"] = (out["y_min"] + out["y_max"]) / 2
    out["z"] = Z.astype(np.float32)
    return out


def mask_landmarks(labels: np.ndarray, origin, spacing, organ_ids: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Extreme-slice centroids of organs: apices/bases, dome/tip, poles (inside the organ)."""
    X, Y, Z = world_axes(labels.shape, origin, spacing)
    out: dict[str, np.ndarray] = {}
    spec = {"lung_left": ("lung_apex_left", "lung_base_left"), "lung_right": ("lung_apex_right", "lung_base_right"),
            "liver": ("liver_dome", "liver_tip"), "bladder": ("bladder_top", "bladder_bottom"),
            "spleen": ("spleen_upper_pole", "spleen_lower_pole"), "heart": ("heart_top", "heart_bottom"),
            "kidney_left": ("kidney_left_top", "kidney_left_bottom"),
            "kidney_right": ("kidney_right_top", "kidney_right_bottom")}
    for organ, (top, bot) in spec.items():
        ids = organ_ids.get(organ)
        if not ids:
            continue
        m = np.isin(labels, ids)
        ks = np.nonzero(m.any(axis=(1, 2)))[0]
        if ks.size == 0:
            continue
        for name, k in ((top, ks[-1]), (bot, ks[0])):
            jj, ii = np.nonzero(m[k])
            # the voxel nearest the slice centroid (so the point is inside the organ)
            cj, ci = jj.mean(), ii.mean()
            n = int(np.argmin((jj - cj) ** 2 + (ii - ci) ** 2))
            out[name] = np.array([X[ii[n]], Y[jj[n]], Z[k]], float)
    return out


def pca_axis(labels: np.ndarray, origin, spacing, ids: list[int]):
    """Centroid, principal axis and extent along it (mm) of a label set."""
    k, j, i = np.nonzero(np.isin(labels, ids))
    if k.size < 10:
        return None
    P = np.stack([origin[0] + spacing[0] * i, origin[1] + spacing[1] * j, origin[2] + spacing[2] * k], axis=1)
    c = P.mean(0)
    w, V = np.linalg.eigh(np.cov((P - c).T))
    ax = V[:, -1]
    if ax[2] < 0:
        ax = -ax
    t = (P - c) @ ax
    return c, ax, float(t.max() - t.min() + spacing[2])


def retention(labels: np.ndarray, primitive_count: dict[int, int]) -> dict[int, float]:
    """Final voxels / voxels the label's primitives covered (1.0 = nothing took its place)."""
    cnt = np.bincount(labels.ravel(), minlength=max(primitive_count, default=0) + 1)
    return {int(k): float(cnt[k] / v) for k, v in primitive_count.items() if v > 0}
