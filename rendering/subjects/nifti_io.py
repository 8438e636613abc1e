"""Bring your own anatomy: NIfTI label maps <-> subject bundles (nibabel).

Export writes the label grid as a NIfTI-1 file (RAS+ affine as NIfTI requires, so
voxel (i, j, k) = subject (x, y, z) index with x_RAS = -x_LPS, y_RAS = -y_LPS) and a
sidecar ``<file>.labels.json`` with the label names and the subject frame.

Import reads a label map, maps its class values to this project's labels by name
(``--map totalsegmentator`` for TotalSegmentator v2 "total" class ids, ``--map medimageos``
for files written by export), reorients it to the LPS [k, j, i] grid, resamples it to 2 mm
(nearest neighbour) unless it already is, synthesises a body outline (skin, fat, soft
tissue) around the labelled structures, derives what landmarks it can and records which
tasks the subject can and cannot serve.  Everything is validated before anything is written,
and the bundle is written atomically.

Imported frame: x = 0 at the body's left-right midline, y = 0 at the most posterior body
voxel (table top), z = the scanner's z (LPS, superior positive), unless the file came from
our own export (then the original frame is kept).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np

from . import bundle as B
from .bundle import SubjectError
from .derive import body_profile, mask_landmarks, organ_label_ids, pca_axis
from .labels import LABEL_NAMES, L, VERTEBRAE
from .tissues import default_table

IMPORT_VERSION = "import-1"

# TotalSegmentator v2, task "total" (class id -> name)
_TS_NAMES = (["spleen", "kidney_right", "kidney_left", "gallbladder", "liver", "stomach", "pancreas",
              "adrenal_gland_right", "adrenal_gland_left", "lung_upper_lobe_left", "lung_lower_lobe_left",
              "lung_upper_lobe_right", "lung_middle_lobe_right", "lung_lower_lobe_right", "esophagus", "trachea",
              "thyroid_gland", "small_bowel", "duodenum", "colon", "urinary_bladder", "prostate", "kidney_cyst_left",
              "kidney_cyst_right", "sacrum", "vertebrae_S1"]
             + [f"vertebrae_L{i}" for i in range(5, 0, -1)] + [f"vertebrae_T{i}" for i in range(12, 0, -1)]
             + [f"vertebrae_C{i}" for i in range(7, 0, -1)]
             + ["heart", "aorta", "pulmonary_vein", "brachiocephalic_trunk", "subclavian_artery_right",
                "subclavian_artery_left", "common_carotid_artery_right", "common_carotid_artery_left",
                "brachiocephalic_vein_left", "brachiocephalic_vein_right", "atrial_appendage_left",
                "superior_vena_cava", "inferior_vena_cava", "portal_vein_and_splenic_vein", "iliac_artery_left",
                "iliac_artery_right", "iliac_vena_left", "iliac_vena_right", "humerus_left", "humerus_right",
                "scapula_left", "scapula_right", "clavicula_left", "clavicula_right", "femur_left", "femur_right",
                "hip_left", "hip_right", "spinal_cord", "gluteus_maximus_left", "gluteus_maximus_right",
                "gluteus_medius_left", "gluteus_medius_right", "gluteus_minimus_left", "gluteus_minimus_right",
                "autochthon_left", "autochthon_right", "iliopsoas_left", "iliopsoas_right", "brain", "skull"]
             + [f"rib_left_{i}" for i in range(1, 13)] + [f"rib_right_{i}" for i in range(1, 13)]
             + ["sternum", "costal_cartilages"])
TOTALSEGMENTATOR_CLASSES: dict[int, str] = {i + 1: n for i, n in enumerate(_TS_NAMES)}


def ts_to_label(name: str) -> str:
    """TotalSegmentator class name -> this project's label name."""
    fixed = {"spleen": "spleen", "kidney_right": "kidney_right_cortex", "kidney_left": "kidney_left_cortex",
             "kidney_cyst_right": "kidney_right_sinus", "kidney_cyst_left": "kidney_left_sinus",
             "gallbladder": "gallbladder", "liver": "liver", "stomach": "stomach", "pancreas": "pancreas",
             "adrenal_gland_right": "adrenal", "adrenal_gland_left": "adrenal", "esophagus": "oesophagus",
             "trachea": "trachea", "thyroid_gland": "thyroid", "small_bowel": "small_bowel", "duodenum": "small_bowel",
             "colon": "colon", "urinary_bladder": "bladder", "prostate": "soft_tissue", "sacrum": "sacrum",
             "vertebrae_S1": "sacrum", "heart": "heart_whole", "aorta": "aorta_unsplit",
             "pulmonary_vein": "artery_other", "atrial_appendage_left": "la_blood", "superior_vena_cava": "svc",
             "inferior_vena_cava": "ivc", "portal_vein_and_splenic_vein": "portal_vein", "spinal_cord": "spinal_cord",
             "brain": "soft_tissue", "skull": "bone_other", "sternum": "sternum", "costal_cartilages": "costal_cartilage"}
    if name in fixed:
        return fixed[name]
    if name.startswith("lung_"):
        return "lung_left" if name.endswith("_left") else "lung_right"
    m = re.fullmatch(r"vertebrae_([CTL]\d+)", name)
    if m:
        return f"vertebra_{m.group(1)}" if m.group(1) in VERTEBRAE else "bone_other"
    if name.startswith("rib_"):
        return "rib"
    if re.match(r"(brachiocephalic_trunk|subclavian_artery|common_carotid|iliac_artery)", name):
        return "artery_other"
    if re.match(r"(brachiocephalic_vein|iliac_vena)", name):
        return "vein_other"
    if re.match(r"(humerus|scapula)", name):
        return "bone_other"
    if name.startswith("clavicula"):
        return "clavicle"
    if name.startswith("femur"):
        return "femur"
    if name.startswith("hip_"):
        return "pelvis"
    if re.match(r"(gluteus|autochthon|iliopsoas)", name):
        return "muscle"
    raise KeyError(name)


def export_nifti(rt, out: str | Path) -> Path:
    """Write a subject's labels as NIfTI (+ sidecar JSON). Atomic: temp file then rename."""
    import nibabel as nib
    out = Path(out)
    if not (out.name.endswith(".nii") or out.name.endswith(".nii.gz")):
        raise SubjectError(f"export target must end with .nii or .nii.gz, got {out.name!r}")
    if not out.parent.exists():
        raise SubjectError(f"output directory {out.parent} does not exist")
    sx, sy, sz = rt.spacing_mm
    ox, oy, oz = rt.origin_mm
    aff = np.array([[-sx, 0, 0, -ox], [0, -sy, 0, -oy], [0, 0, sz, oz], [0, 0, 0, 1.0]])
    data = np.ascontiguousarray(rt.labels.transpose(2, 1, 0))
    img = nib.Nifti1Image(data.astype(np.uint8 if data.max() < 256 else np.uint16), aff)
    img.set_qform(aff, code=1)
    img.set_sform(aff, code=1)
    img.header.set_xyzt_units("mm")
    side = out.with_name(out.name.split(".nii")[0] + ".labels.json")
    tmp = out.with_name(".tmp-" + out.name)
    tmp_side = side.with_name(".tmp-" + side.name)
    try:
        nib.save(img, tmp)
        tmp_side.write_text(json.dumps({"format": "medimageos-labels/1", "subject": rt.id, "version": rt.version,
                                        "frame": "medimageos-lps", "origin_mm": list(rt.origin_mm),
                                        "spacing_mm": list(rt.spacing_mm),
                                        "labels": {str(k): v for k, v in rt.label_names.items()}}, indent=1))
        tmp.replace(out)
        tmp_side.replace(side)
    finally:
        for t in (tmp, tmp_side):
            if t.exists():
                t.unlink()
    return out


def _read_labelmap(path: Path):
    import nibabel as nib
    if not path.exists():
        raise SubjectError(f"label map {path} does not exist")
    try:
        img = nib.load(str(path))
    except Exception as e:  # nibabel raises several types for non-NIfTI input
        raise SubjectError(f"{path} is not a readable NIfTI label map: {e}") from e
    hdr = img.header
    if int(hdr.get("qform_code", 0)) == 0 and int(hdr.get("sform_code", 0)) == 0:
        raise SubjectError(f"{path} has no affine (qform_code and sform_code are both 0): the label map "
                           "cannot be placed in patient space")
    shape = img.shape
    if len(shape) == 4 and shape[3] == 1:
        shape = shape[:3]
    if len(shape) != 3:
        raise SubjectError(f"{path} has {len(img.shape)} dimensions {img.shape}; a 3-D label map is required")
    if min(shape) < 2:
        raise SubjectError(f"{path} has a degenerate shape {img.shape}")
    img = nib.as_closest_canonical(img)               # RAS+ axis order
    A = img.affine
    R = A[:3, :3]
    zooms = np.sqrt((R ** 2).sum(axis=0))
    off = np.abs(R / zooms - np.diag(np.sign(np.diag(R))))
    if off.max() > 0.02:
        raise SubjectError(f"{path} has an oblique affine; only axis-aligned label maps are supported")
    raw = np.asanyarray(img.dataobj)
    raw = raw.reshape(raw.shape[:3])
    if not np.issubdtype(raw.dtype, np.integer):
        if not np.all(np.isfinite(raw)) or not np.allclose(raw, np.round(raw)):
            raise SubjectError(f"{path} holds non-integer values; a label map must hold integer class ids")
        raw = np.round(raw)
    data = raw.astype(np.int64)
    if data.min() < 0:
        raise SubjectError(f"{path} has negative label values")
    # RAS+ (i -> right... per canonical: +i = +x_RAS) -> LPS: flip i and j, then index [k, j, i]
    data = data[::-1, ::-1, :]
    nx, ny, nz = data.shape
    x_ras_last = A[0, 3] + A[0, 0] * (nx - 1)
    y_ras_last = A[1, 3] + A[1, 1] * (ny - 1)
    origin = (-x_ras_last, -y_ras_last, A[2, 3])
    spacing = tuple(float(v) for v in zooms)
    return np.ascontiguousarray(data.transpose(2, 1, 0)), origin, spacing


def _resample(lab: np.ndarray, origin, spacing, target: float = 2.0):
    from scipy.ndimage import map_coordinates
    nz, ny, nx = lab.shape
    ext = [spacing[0] * (nx - 1), spacing[1] * (ny - 1), spacing[2] * (nz - 1)]
    n_new = [int(np.floor(e / target)) + 1 for e in ext]
    ii = np.arange(n_new[0]) * target / spacing[0]
    jj = np.arange(n_new[1]) * target / spacing[1]
    kk = np.arange(n_new[2]) * target / spacing[2]
    K, J, I = np.meshgrid(kk, jj, ii, indexing="ij")
    out = map_coordinates(lab, [K, J, I], order=0, mode="nearest")
    return out.astype(lab.dtype), origin, (target, target, target)


def _synthesise_body(lab: np.ndarray, spacing) -> np.ndarray:
    """Unlabelled voxels near labelled structures become soft tissue, with fat and skin outside."""
    from scipy import ndimage as ndi
    any_lab = lab > 0
    d_out = ndi.distance_transform_edt(~any_lab, sampling=(spacing[2], spacing[1], spacing[0]))
    body = d_out <= 18.0
    for k in range(body.shape[0]):
        body[k] = ndi.binary_fill_holes(body[k])
    d_in = ndi.distance_transform_edt(body, sampling=(spacing[2], spacing[1], spacing[0]))
    out = lab.copy()
    free = (out == 0) & body
    out[free & (d_in > 12)] = L["soft_tissue"]
    out[free & (d_in <= 12) & (d_in > 2)] = L["fat_subcutaneous"]
    out[free & (d_in <= 2)] = L["skin"]
    return out


def import_labelmap(path: str | Path, map_name: str = "totalsegmentator", subject_id: str | None = None,
                    force: bool = False, min_voxels: int = 10) -> Path:
    """Convert a NIfTI label map into an imported subject bundle. Returns the bundle directory."""
    path = Path(path)
    if subject_id is None:
        subject_id = re.sub(r"(\.nii(\.gz)?)$", "", path.name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", subject_id or ""):
        raise SubjectError(f"invalid subject id {subject_id!r}: use letters, digits, '_', '-', '.'")
    from .params import parse_id
    if parse_id(subject_id) is not None:
        raise SubjectError(f"{subject_id!r} is reserved for procedural subjects; choose another --id")
    dest = B.imported_dir(subject_id)
    if dest.exists() and not force:
        raise SubjectError(f"subject {subject_id!r} already exists at {dest}; use --force to replace it")
    if map_name not in ("totalsegmentator", "medimageos"):
        raise SubjectError(f"unknown label map {map_name!r}; use totalsegmentator or medimageos")

    src, origin, spacing = _read_labelmap(path)
    values, counts = np.unique(src, return_counts=True)
    present = {int(v): int(c) for v, c in zip(values, counts) if v != 0}
    if not present:
        raise SubjectError(f"{path} contains no labelled voxels (all background)")
    keep_frame = False
    if map_name == "totalsegmentator":
        class_names = TOTALSEGMENTATOR_CLASSES
    else:
        side = path.with_name(re.sub(r"(\.nii(\.gz)?)$", "", path.name) + ".labels.json")
        if side.exists():
            meta = json.loads(side.read_text())
            class_names = {int(k): v for k, v in meta["labels"].items()}
            keep_frame = meta.get("frame") == "medimageos-lps"
        else:
            class_names = dict(LABEL_NAMES)
    unknown = sorted(v for v in present if v not in class_names)
    if unknown:
        raise SubjectError(f"{path} has label values not in the {map_name} map: {unknown[:20]}"
                           + (" ..." if len(unknown) > 20 else ""))
    lut = np.zeros(int(max(present)) + 1, np.uint8)
    for v in present:
        cname = class_names[v]
        target = cname if map_name == "medimageos" else None
        if target is None:
            try:
                target = ts_to_label(cname)
            except KeyError:
                raise SubjectError(f"class {v} ({cname}) has no equivalent label") from None
        if target not in L:
            raise SubjectError(f"class {v} ({cname}) maps to unknown label {target!r}")
        lut[v] = L[target]
    tiny = {class_names[v]: c for v, c in present.items() if c < min_voxels}
    if tiny:
        raise SubjectError(f"organs with fewer than {min_voxels} voxels (empty or degenerate): "
                           + ", ".join(f"{k} ({c})" for k, c in sorted(tiny.items()))
                           + "; fix the label map or pass --min-voxels 0")
    lab = lut[src]
    if not np.allclose(spacing, 2.0, atol=1e-3):
        lab, origin, spacing = _resample(lab, origin, spacing, 2.0)
    if map_name == "totalsegmentator" or L["skin"] not in np.unique(lab):
        lab = _synthesise_body(lab, spacing)
    origin = np.asarray(origin, float)
    if not keep_frame:
        prof = body_profile(lab, origin, spacing)
        x_mid = float(np.nanmean((prof["x_min"] + prof["x_max"]) / 2))
        y_back = float(np.nanmax(prof["y_max"]))
        origin = origin - np.array([x_mid, y_back, 0.0])
    origin = tuple(float(v) for v in origin)
    names = dict(LABEL_NAMES)
    tissues = default_table(names)
    organ_ids = organ_label_ids(names)
    cnt = np.bincount(lab.ravel(), minlength=max(names) + 1)
    organ_ids = {k: v for k, v in organ_ids.items() if cnt[v].sum() > 0}
    lms = mask_landmarks(lab, origin, spacing, organ_ids)
    kidneys = {}
    for side_ in ("left", "right"):
        if f"kidney_{side_}" in organ_ids:
            r = pca_axis(lab, origin, spacing, organ_ids[f"kidney_{side_}"])
            if r is not None:
                c, ax, length = r
                kidneys[side_] = {"centre": c.tolist(), "long_axis": ax.tolist(), "length_mm": length,
                                  "upper_pole": (c + ax * (length / 2 - 3)).tolist(),
                                  "lower_pole": (c - ax * (length / 2 - 3)).tolist()}
                lms[f"kidney_{side_}_centre"] = c
    if "trachea" in organ_ids:
        m = np.isin(lab, organ_ids["trachea"])
        ks = np.nonzero(m.any(axis=(1, 2)))[0]
        jj, ii = np.nonzero(m[ks[0]])
        lms["carina"] = np.array([origin[0] + spacing[0] * ii.mean(), origin[1] + spacing[1] * jj.mean(),
                                  origin[2] + spacing[2] * ks[0]])
    vert = {}
    zs = origin[2] + spacing[2] * np.arange(lab.shape[0])
    for v in VERTEBRAE:
        lid = L[f"vertebra_{v}"]
        if cnt[lid]:
            ks = np.nonzero((lab == lid).any(axis=(1, 2)))[0]
            vert[v] = {"z_top": float(zs[ks[-1]]), "z_bottom": float(zs[ks[0]]),
                       "z_mid": float((zs[ks[0]] + zs[ks[-1]]) / 2),
                       "upper_endplate_z": float(zs[ks[-1]]), "lower_endplate_z": float(zs[ks[0]])}
    prof = body_profile(lab, origin, spacing)
    frame = {"origin_mm": list(origin), "spacing_mm": list(spacing), "shape": list(lab.shape),
             "axes": "LPS: +x patient left, +y posterior, +z superior (head)",
             "x0": "body left-right midline" if not keep_frame else "as exported",
             "y0": "most posterior body voxel (table top)" if not keep_frame else "as exported",
             "z0": "scanner z" if not keep_frame else "as exported", "table_top_y_mm": 0.0}
    runtime_meta = {"format": B.FORMAT, "id": subject_id, "version": IMPORT_VERSION, "kind": "imported",
                    "source": str(path), "map": map_name, "frame": frame, "label_names": names,
                    "tissues": tissues.to_json(), "built_unix": int(time.time())}
    oracle_meta = {"format": B.FORMAT, "id": subject_id, "version": IMPORT_VERSION, "landmarks": lms, "planes": {},
                   "lv_long_axis": None, "kidneys": kidneys, "vertebrae": vert, "organ_labels": organ_ids,
                   "stats": {}, "notes": {"import": "kidneys are whole-organ (cortex label); no cardiac chambers "
                                                    "or valve planes; aorta is not split into segments"}}
    if dest.exists() and force:
        import shutil
        shutil.rmtree(dest)
    B.write_bundle(dest, lab.astype(np.uint8), runtime_meta, oracle_meta, dict(prof))
    return dest
