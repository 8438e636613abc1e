"""Seeded anatomical variation: the parameters of one procedural subject.

Generation is a pure function of (cohort, index): the seed is derived from a SHA-256
of "<cohort>:<index>" and fed to numpy.random.default_rng.  The development subject
("dev") uses the reference parameters (no randomness).
"""
from __future__ import annotations

import hashlib
import math
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


def _sex(index: int) -> str:
    return "F" if index % 2 == 0 else "M"  # balanced cohort: 15 F, 15 M


def _habitus_draws(rng: np.random.Generator, sex: str) -> tuple[float, float]:
    """Stature (cm) and BMI (kg/m^2): a subject's first two draws (sample_params documents the ranges)."""
    tn = lambda m, s, lo, hi: float(np.clip(rng.normal(m, s), lo, hi))  # noqa: E731
    height = tn(163, 7, 150, 180) if sex == "F" else tn(177, 7.5, 160, 196)
    return height, tn(26.5, 4.5, 18.5, 38)


def habitus(subject_id: str) -> tuple[float, float]:
    """(stature cm, BMI kg/m^2) of a procedural subject, the cohort table's first columns (the body's width and
    depth follow sqrt(BMI)); dev is the reference 175 cm at BMI 25.5. For picking a cohort's extremes."""
    parsed = parse_id(subject_id)
    if parsed is None:
        raise KeyError(subject_id)
    cohort, index = parsed
    if cohort == "dev":
        return SubjectParams(id="dev", cohort="dev", index=0).height_cm, 25.5
    return _habitus_draws(np.random.default_rng(subject_seed(cohort, index)), _sex(index))


def sample_params(subject_id: str) -> SubjectParams:
    parsed = parse_id(subject_id)
    if parsed is None:
        raise KeyError(subject_id)
    cohort, index = parsed
    if cohort == "dev":
        return SubjectParams(id="dev", cohort="dev", index=0)
    rng = np.random.default_rng(subject_seed(cohort, index))
    sex = _sex(index)
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
    # - heart size +- 7 % (LV long axis 75-100 mm);
    # - LV long-axis orientation (mitral valve centre -> apex), from the adult range and its habitus dependence
    #   (see heart_axis below): transverse-plane angle 46 +- 7 deg and frontal-plane angle 38 +- 10 deg over 94
    #   healthy adults aged 21-82 (CMR: Engblom et al., Am Heart J 2005;150:507-12); frontal 38 +- 8 deg at
    #   normal BMI but 25 +- 6 deg in obese adults of the same age (CT: Br J Cardiol 2015;22:(2)
    #   doi:10.5837/bjc.2015.016, "elevation of the diaphragm"); the axis' angle to the body's long axis depends
    #   on body height and subcutaneous and visceral fat (upright/supine CT: Norimatsu et al., Sci Rep 2023,
    #   doi:10.1038/s41598-023-45528-y): the short, heavy habitus has a more horizontal heart;
    # - liver craniocaudal span 12-17 cm (mean 14 +- 1.2 cm): liver_scale 0.9-1.2 of the reference;
    # - kidney length 95-126 mm (mean left 112, right 110 mm, SD ~8 mm; Emamian 1993), upper pole from T11 to
    #   L1 (+- 25 mm around mid-T12), right kidney -6..32 mm lower than the left, coronal tilt 5-24 deg;
    # - bladder volume at scanning, spleen size: +- 12 % / +- 10 %.
    height, bmi = _habitus_draws(rng, sex)
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
        **heart_axis(sex, height, bmi, rng),
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


def heart_axis(sex: str, height_cm: float, bmi: float, rng: np.random.Generator) -> dict[str, float]:
    """The LV long axis' orientation (SubjectParams heart_az_deg, heart_el_deg, heart_roll_deg) of one subject.

    Three draws, in the order the generator before 1.4.0 made them (so every later draw keeps its value).
    A habitus index h (BMI z-score less half the stature z-score: heavier and shorter is more horizontal) moves
    the axis as the published groups differ: the frontal-plane angle (the axis' projection on the coronal
    plane, below the horizontal) falls from 38 deg at normal BMI to 25 deg in the obese (BMI ~22 -> ~34,
    Br J Cardiol 2015), about 6 deg per BMI SD (4.5 kg/m^2); the transverse angle (azimuth from anterior
    towards the left) opens by 4 deg per SD as the apex is pushed to the left. Around that, SDs of 7 deg
    (transverse, Engblom 2005) and 8 deg (frontal, the normal-BMI CT group): the 30 subjects come out at
    transverse 46 +- 9 and frontal 39 +- 9 deg, against the published whole-population 46 +- 7 and 38 +- 10
    (the transverse a little wider). The depression below the axial plane follows from the two projections:
    tan(el) = tan(frontal) * sin(az).
    The rotation about the long axis (the septum's direction; the "clockwise / counter-clockwise" rotation of
    radiology and electrocardiography, Fowler et al., Circulation 1951;3:906-10) has no adult reference range
    in the sources above: drawn with a 14 deg SD, clipped at +-28 deg, an assumption (not a measured range).
    """
    hz = (height_cm - (163.0 if sex == "F" else 177.0)) / (7.0 if sex == "F" else 7.5)
    h = (bmi - 26.5) / 4.5 - 0.5 * hz
    az = float(np.clip(46.0 + 4.0 * h + 7.0 * rng.normal(), 26.0, 68.0))
    frontal = float(np.clip(38.0 - 6.0 * h + 8.0 * rng.normal(), 12.0, 64.0))
    el = math.degrees(math.atan(math.tan(math.radians(frontal)) * math.sin(math.radians(az))))
    roll = float(np.clip(14.0 * rng.normal(), -28.0, 28.0))
    return {"heart_az_deg": az, "heart_el_deg": el, "heart_roll_deg": roll}
