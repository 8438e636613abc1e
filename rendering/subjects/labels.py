"""The fixed label table shared by every procedural subject, and organ groups.

Label values never change meaning within a bundle format version; new labels are
appended.  Organ names (used by the oracle and by the NIfTI importer) map to sets
of label values.
"""
from __future__ import annotations

VERTEBRAE = ["C5", "C6", "C7"] + [f"T{i}" for i in range(1, 13)] + [f"L{i}" for i in range(1, 6)]

_BASE: list[str] = [
    "air",                      # 0
    "skin",                     # 1
    "fat_subcutaneous",         # 2
    "muscle",                   # 3
    "fat_visceral",             # 4  mediastinal, retroperitoneal, mesenteric, epicardial fat
    "spinal_cord",              # 5  cord + CSF in the canal
    "intervertebral_disc",      # 6
    "rib",                      # 7
    "costal_cartilage",         # 8
    "sternum",                  # 9
    "clavicle",                 # 10
    "pelvis",                   # 11 hip bones (ilium, ischium, pubis)
    "sacrum",                   # 12
    "femur",                    # 13
    "lung_left",                # 14
    "lung_right",               # 15
    "lung_vessels_left",        # 16 intrapulmonary vessels (part of the lung organ)
    "lung_vessels_right",       # 17
    "trachea",                  # 18 air lumen
    "bronchus_left",            # 19 air lumen of main/lobar bronchi
    "bronchus_right",           # 20
    "airway_wall",              # 21
    "lv_blood",                 # 22
    "lv_myocardium",            # 23
    "rv_blood",                 # 24
    "la_blood",                 # 25
    "ra_blood",                 # 26
    "heart_wall",               # 27 RV free wall and atrial walls
    "aorta_ascending",          # 28 root + ascending
    "aorta_arch",               # 29
    "aorta_descending",         # 30 thoracic descending (to the hiatus)
    "aorta_abdominal",          # 31
    "pulmonary_artery",         # 32 trunk + left/right main branches
    "svc",                      # 33
    "ivc",                      # 34
    "artery_other",             # 35 arch branches, iliac arteries
    "vein_other",               # 36 jugular/brachiocephalic/iliac veins
    "portal_vein",              # 37
    "oesophagus",               # 38
    "liver",                    # 39
    "gallbladder",              # 40
    "spleen",                   # 41
    "stomach",                  # 42 wall + fluid content
    "pancreas",                 # 43
    "small_bowel",              # 44 wall + fluid content
    "colon",                    # 45 wall
    "bowel_content",            # 46 stool/fluid in the colon lumen
    "bowel_gas",                # 47 gas in stomach/bowel/colon
    "kidney_left_cortex",       # 48
    "kidney_left_medulla",      # 49
    "kidney_left_sinus",        # 50 sinus fat + pelvis
    "kidney_right_cortex",      # 51
    "kidney_right_medulla",     # 52
    "kidney_right_sinus",       # 53
    "ureter_left",              # 54
    "ureter_right",             # 55
    "bladder",                  # 56
    "breast",                   # 57 glandular tissue
    "soft_tissue",              # 58 generic (imported bundles: unlabelled body interior)
    "mitral_valve",             # 59 fibrous mitral annulus and the (closed) mitral leaflets (generator 1.6.0)
]
VERTEBRA_LABEL0 = 60
LABEL_NAMES: dict[int, str] = {i: n for i, n in enumerate(_BASE)}
for _i, _v in enumerate(VERTEBRAE):
    LABEL_NAMES[VERTEBRA_LABEL0 + _i] = f"vertebra_{_v}"
# labels used by imported label maps (procedural subjects do not paint them)
for _i, _n in enumerate(["bone_other", "heart_whole", "aorta_unsplit", "adrenal", "thyroid"]):
    LABEL_NAMES[80 + _i] = _n
N_LABELS = max(LABEL_NAMES) + 1
L: dict[str, int] = {n: i for i, n in LABEL_NAMES.items()}   # name -> value


def lab(name: str) -> int:
    return L[name]


def _ids(*names: str) -> list[int]:
    return [L[n] for n in names]


#: organ name -> label names.  The oracle builds masks from these.
ORGANS: dict[str, list[str]] = {
    "body": [n for n in L if n != "air"],
    "lung_left": ["lung_left", "lung_vessels_left"],
    "lung_right": ["lung_right", "lung_vessels_right"],
    "lungs": ["lung_left", "lung_vessels_left", "lung_right", "lung_vessels_right"],
    "trachea": ["trachea"],
    "bronchi": ["bronchus_left", "bronchus_right"],
    "airways": ["trachea", "bronchus_left", "bronchus_right"],
    "heart": ["lv_blood", "lv_myocardium", "rv_blood", "la_blood", "ra_blood", "heart_wall", "mitral_valve",
              "heart_whole"],
    "lv": ["lv_blood", "lv_myocardium"],
    "lv_blood": ["lv_blood"],
    "lv_myocardium": ["lv_myocardium"],
    "mitral_valve": ["mitral_valve"],
    "rv": ["rv_blood"],
    "la": ["la_blood"],
    "ra": ["ra_blood"],
    "aorta": ["aorta_ascending", "aorta_arch", "aorta_descending", "aorta_abdominal", "aorta_unsplit"],
    "aorta_ascending": ["aorta_ascending"],
    "aorta_arch": ["aorta_arch"],
    "aorta_descending": ["aorta_descending"],
    "aorta_abdominal": ["aorta_abdominal"],
    "pulmonary_artery": ["pulmonary_artery"],
    "svc": ["svc"],
    "ivc": ["ivc"],
    "portal_vein": ["portal_vein"],
    "oesophagus": ["oesophagus"],
    "liver": ["liver"],
    "gallbladder": ["gallbladder"],
    "spleen": ["spleen"],
    "stomach": ["stomach"],
    "pancreas": ["pancreas"],
    "small_bowel": ["small_bowel"],
    "colon": ["colon", "bowel_content"],
    "kidney_left": ["kidney_left_cortex", "kidney_left_medulla", "kidney_left_sinus"],
    "kidney_right": ["kidney_right_cortex", "kidney_right_medulla", "kidney_right_sinus"],
    "kidneys": ["kidney_left_cortex", "kidney_left_medulla", "kidney_left_sinus",
                "kidney_right_cortex", "kidney_right_medulla", "kidney_right_sinus"],
    "kidney_left_cortex": ["kidney_left_cortex"],
    "kidney_right_cortex": ["kidney_right_cortex"],
    "ureter_left": ["ureter_left"],
    "ureter_right": ["ureter_right"],
    "ureters": ["ureter_left", "ureter_right"],
    "bladder": ["bladder"],
    "spinal_cord": ["spinal_cord"],
    "ribs": ["rib"],
    "sternum": ["sternum"],
    "pelvis": ["pelvis"],
    "sacrum": ["sacrum"],
    "femurs": ["femur"],
    "spine": [f"vertebra_{v}" for v in VERTEBRAE],
    "bones": ["rib", "costal_cartilage", "sternum", "clavicle", "pelvis", "sacrum", "femur", "bone_other"]
             + [f"vertebra_{v}" for v in VERTEBRAE],
}
for _v in VERTEBRAE:
    ORGANS[f"vertebra_{_v}"] = [f"vertebra_{_v}"]

#: organs every procedural subject has (imported subjects may lack some)
KUB = ["kidneys", "ureters", "bladder"]
