"""Seeded anatomical variation: the parameters of one procedural subject.

Generation is a pure function of (cohort, index): the seed is derived from a SHA-256
of "<cohort>:<index>" and fed to numpy.random.default_rng.  The development subject
("dev") uses the reference parameters (no randomness).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass

import numpy as np

SCORING_COHORT = "scoring"
COHORT_SIZE = 30


@dataclass
class SubjectParams:
    id: str
    cohort: str
    index: int
    sex: str = "M"
    height_cm: float = 175.0
    width_scale: float = 1.0       # body half-width factor
    depth_scale: float = 1.0       # body AP depth factor
    fat_mm: float = 18.0           # anterior abdominal subcutaneous fat thickness
    # heart
    heart_scale: float = 1.0
    heart_az_deg: float = 45.0     # LV long axis azimuth in the axial plane, from anterior toward left
    heart_el_deg: float = 32.0     # LV long axis depression below the axial plane
    heart_roll_deg: float = 0.0    # rotation of the septal direction about the long axis
    heart_dx_mm: float = 0.0
    aorta_scale: float = 1.0
    # abdomen
    liver_scale: float = 1.0
    spleen_scale: float = 1.0
    kidney_len_left_mm: float = 112.0
    kidney_len_right_mm: float = 110.0
    kidney_left_dz_mm: float = 0.0     # shift of the left upper pole from mid-T12 (+ = superior)
    kidney_right_drop_mm: float = 15.0  # right upper pole this much lower than the left
    kidney_tilt_deg: float = 14.0       # coronal tilt (upper pole medial)
    bladder_scale: float = 1.0
    diaphragm_right_above_left_mm: float = 15.0
    diaphragm_dz_mm: float = 0.0  # breath-hold level: heart and diaphragm shift (+ = superior, shallower breath)
    lung_scale: float = 1.0
    bowel_seed: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def subject_seed(cohort: str, index: int) -> int:
    h = hashlib.sha256(f"{cohort}:{index}".encode()).digest()
    return int.from_bytes(h[:8], "little")


def cohort_ids() -> list[str]:
    return [f"s{i:02d}" for i in range(1, COHORT_SIZE + 1)]


def parse_id(subject_id: str) -> tuple[str, int] | None:
    """(cohort, index) for procedural ids ('dev', 's01'..'s30'), else None."""
    if subject_id == "dev":
        return ("dev", 0)
    m = re.fullmatch(r"s(\d{2})", subject_id)
    if m and 1 <= int(m.group(1)) <= COHORT_SIZE:
        return (SCORING_COHORT, int(m.group(1)))
    return None


def sample_params(subject_id: str) -> SubjectParams:
    parsed = parse_id(subject_id)
    if parsed is None:
        raise KeyError(subject_id)
    cohort, index = parsed
    if cohort == "dev":
        return SubjectParams(id="dev", cohort="dev", index=0)
    rng = np.random.default_rng(subject_seed(cohort, index))
    sex = "F" if index % 2 == 0 else "M"      # balanced cohort: 15 F, 15 M
    tn = lambda m, s, lo, hi: float(np.clip(rng.normal(m, s), lo, hi))  # noqa: E731
    # Adult ranges each draw follows (mean, SD, clipped to the published normal range):
    # - stature: adult height F 163 +- 7 cm, M 177 +- 7.5 cm (WHO/NCD-RisC adult means); the whole skeleton
    #   (vertebral heights, so lung craniocaudal length, apex-to-base 22-32 cm) scales with it;
    # - BMI 18.5-38 kg/m^2, mean 26.5 +- 4.5 (adult population distributions, normal weight to obese II);
    #   body half-width and AP depth scale with sqrt(BMI) (abdominal AP diameter 18-32 cm);
    # - anterior abdominal subcutaneous fat 5-45 mm, growing with BMI^2.2 and ~20 % more in women
    #   (CT/ultrasound fat-thickness studies: 5-50 mm over BMI 18-40);
    # - breath-hold diaphragm level: quiet-to-deep inspiration excursion 30-60 mm (M-mode/fluoroscopy), so the
    #   dome (and the heart on it) sits -25..+12 mm around the typical end-inspiratory level (about T10-T11);
    # - heart size +- 7 % (LV long axis 75-100 mm), LV long-axis azimuth 31-60 deg and depression 20-46 deg
    #   (cardiac MR plane-angle surveys: ~45 +- 8 deg / ~30 +- 7 deg);
    # - liver craniocaudal span 12-17 cm (mean 14 +- 1.2 cm): liver_scale 0.9-1.2 of the reference;
    # - kidney length 95-126 mm (mean left 112, right 110 mm, SD ~8 mm; Emamian 1993), upper pole from T11 to
    #   L1 (+- 25 mm around mid-T12), right kidney -6..32 mm lower than the left, coronal tilt 5-24 deg;
    # - bladder volume at scanning, spleen size: +- 12 % / +- 10 %.
    height = tn(163, 7, 150, 180) if sex == "F" else tn(177, 7.5, 160, 196)
    bmi = tn(26.5, 4.5, 18.5, 38)
    bulk = (bmi / 25.5) ** 0.5
    width = float(np.clip(bulk * tn(1.0, 0.04, 0.9, 1.1) * (0.94 if sex == "F" else 1.0), 0.82, 1.25))
    depth = float(np.clip(bulk * tn(1.0, 0.05, 0.88, 1.12) * (0.95 if sex == "F" else 1.0), 0.85, 1.25))
    # heart size follows body size (chamber sizes are indexed to body surface area): a narrow chest holds a
    # smaller heart, so the heart never presses through the spine in the thinnest subjects
    heart_body = float(np.clip(depth / 0.95, 0.9, 1.0))
    p = SubjectParams(
        id=subject_id, cohort=cohort, index=index, sex=sex, height_cm=height,
        width_scale=width, depth_scale=depth,
        fat_mm=float(np.clip(18 * (bmi / 25.5) ** 2.2 * (1.2 if sex == "F" else 1.0), 5, 45)),
        heart_scale=float(np.clip(tn(1.0, 0.07, 0.86, 1.14) * (0.94 if sex == "F" else 1.0) * heart_body, 0.85, 1.14)),
        heart_az_deg=tn(45, 8, 31, 60), heart_el_deg=tn(32, 7, 20, 46), heart_roll_deg=tn(0, 6, -14, 14),
        heart_dx_mm=tn(0, 5, -10, 10), aorta_scale=tn(1.0, 0.07, 0.86, 1.16),
        liver_scale=tn(1.0, 0.08, 0.9, 1.2), spleen_scale=tn(1.0, 0.1, 0.8, 1.25),
        kidney_len_left_mm=tn(112, 8, 96, 126), kidney_len_right_mm=tn(110, 8, 95, 124),
        kidney_left_dz_mm=tn(0, 11, -25, 25),
        kidney_right_drop_mm=tn(14, 8, -6, 32), kidney_tilt_deg=tn(14, 4, 5, 24),
        bladder_scale=tn(1.0, 0.12, 0.75, 1.3), diaphragm_right_above_left_mm=tn(15, 5, 5, 28),
        lung_scale=tn(1.0, 0.05, 0.9, 1.1), bowel_seed=int(rng.integers(0, 2**31 - 1)),
        diaphragm_dz_mm=tn(-5, 10, -25, 12),
    )
    return p
