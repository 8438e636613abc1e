"""Per-label tissue properties for CT, MR and ultrasound (numbers: shared/reference/physics.md).

CT contrast model (the CT console implements the time curves):
    HU(label, t) = ct_hu[label] + hu_enhancement_max[label] * g_c(t),  c = ct_compartment[label]
where g_c(t) in [0, 1] is the normalised enhancement curve of compartment c (peak 1).
``hu_enhancement_max`` is therefore the enhancement at that compartment's peak for a
standard 1.5 ml/kg bolus: ~300 HU for arterial blood, ~60 HU for liver parenchyma, etc.

Compartments (codes are the index in COMPARTMENTS):
    none           never enhances (air, fat, bone, gas, urine before excretion, CSF)
    arterial       systemic arterial blood: LV, LA, aorta, arch branches, pulmonary veins
    right_heart    RA, RV, pulmonary artery, SVC: first-pass, peaks a few seconds earlier
    venous         systemic veins returning late: IVC, iliac/jugular veins
    portal_organ   liver parenchyma and portal vein (~30% arterial / 70% portal supply)
    kidney_cortex  early, strong cortical enhancement (corticomedullary phase)
    kidney_medulla later nephrographic enhancement
    spleen         arterial-phase parenchyma (heterogeneous early, homogeneous late)
    bowel_wall     stomach/bowel/oesophagus wall and pancreas-like parenchyma
    myocardium     LV myocardium and heart walls
    soft_tissue    muscle, skin, glandular tissue: small, slow enhancement
MR: T1/T2 in ms at 1.5 T and 3 T, PD relative (water 1.0).  T2* ~ T2/2 unless given.
US: impedance Z (MRayl), attenuation alpha (dB/cm/MHz), speed of sound c (m/s),
speckle mean mu0, scatterer density and sigma (SonoGym-style parameters).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .labels import LABEL_NAMES, N_LABELS

COMPARTMENTS = ["none", "arterial", "right_heart", "venous", "portal_organ", "kidney_cortex",
                "kidney_medulla", "spleen", "bowel_wall", "myocardium", "soft_tissue"]

PROPERTIES = ["ct_hu", "hu_enhancement_max", "mr_t1_15", "mr_t2_15", "mr_pd", "mr_t1_30", "mr_t2_30",
              "us_impedance", "us_attenuation", "us_speed", "us_speckle_mu0", "us_speckle_density",
              "us_speckle_sigma"]

# base tissue classes: ct_hu, compartment, enh, T1_1.5, T2_1.5, PD, T1_3, T2_3, Z, alpha, c, mu0, dens, sigma
_T = {
    "air":        (-1000, "none", 0, 5000, 1.0, 0.0, 5000, 1.0, 0.0004, 12.0, 343, 0.0, 0.0, 0.0),
    "lung":       (-870, "none", 0, 1200, 40, 0.15, 1300, 30, 0.01, 40.0, 600, 0.0, 0.0, 0.0),
    "skin":       (30, "soft_tissue", 20, 600, 50, 0.75, 800, 45, 1.99, 1.0, 1600, 0.6, 0.8, 0.2),
    "fat":        (-90, "none", 0, 343, 58, 0.9, 382, 68, 1.38, 0.63, 1450, 0.5, 0.5, 0.0),
    "muscle":     (50, "soft_tissue", 15, 856, 27, 0.8, 898, 29, 1.70, 1.09, 1580, 0.25, 0.6, 0.15),
    "cord":       (30, "none", 0, 900, 90, 0.85, 1000, 80, 1.55, 0.8, 1540, 0.2, 0.4, 0.1),
    "disc":       (80, "none", 0, 1100, 100, 0.8, 1200, 90, 1.60, 1.0, 1560, 0.3, 0.5, 0.1),
    "bone":       (400, "none", 0, 550, 40, 0.4, 600, 35, 6.0, 5.0, 3000, 0.8, 1.0, 0.3),
    "rib":        (550, "none", 0, 500, 35, 0.3, 550, 30, 7.8, 5.0, 3500, 0.8, 1.0, 0.3),
    "cartilage":  (150, "none", 0, 1000, 40, 0.7, 1200, 35, 1.75, 1.5, 1650, 0.3, 0.5, 0.1),
    "cortical":   (900, "none", 0, 500, 20, 0.2, 500, 15, 7.8, 5.0, 3500, 0.8, 1.0, 0.3),
    "blood":      (40, "arterial", 300, 1550, 250, 0.9, 1650, 150, 1.61, 0.18, 1570, 0.02, 0.05, 0.0),
    "myocardium": (45, "myocardium", 100, 1030, 52, 0.8, 1189, 46, 1.70, 1.0, 1570, 0.3, 0.6, 0.15),
    "vessel_wall": (45, "soft_tissue", 30, 900, 45, 0.8, 1000, 40, 1.99, 1.09, 1580, 0.4, 0.7, 0.2),
    "liver":      (55, "portal_organ", 60, 586, 46, 0.8, 809, 34, 1.65, 0.7, 1570, 0.19, 1.0, 0.24),
    "bile":       (10, "none", 0, 2500, 500, 0.95, 2800, 400, 1.52, 0.2, 1520, 0.01, 0.05, 0.0),
    "spleen":     (45, "spleen", 80, 1057, 79, 0.85, 1328, 61, 1.64, 0.4, 1565, 0.22, 1.0, 0.2),
    "stomach":    (35, "bowel_wall", 40, 1000, 60, 0.85, 1150, 55, 1.62, 0.8, 1550, 0.3, 0.6, 0.2),
    "pancreas":   (40, "bowel_wall", 70, 584, 46, 0.8, 725, 43, 1.63, 0.8, 1560, 0.35, 0.8, 0.25),
    "bowel":      (30, "bowel_wall", 40, 1000, 70, 0.85, 1150, 60, 1.62, 0.8, 1550, 0.3, 0.6, 0.2),
    "stool":      (-10, "none", 0, 1200, 60, 0.8, 1300, 50, 1.55, 1.5, 1540, 0.6, 1.0, 0.4),
    "gas":        (-1000, "none", 0, 5000, 1.0, 0.0, 5000, 1.0, 0.0004, 12.0, 343, 0.0, 0.0, 0.0),
    "k_cortex":   (30, "kidney_cortex", 150, 966, 87, 0.85, 1142, 76, 1.62, 1.0, 1560, 0.4, 0.6, 0.3),
    "k_medulla":  (30, "kidney_medulla", 120, 1412, 85, 0.9, 1545, 81, 1.62, 1.0, 1560, 0.15, 0.4, 0.2),
    "k_sinus":    (-40, "none", 0, 450, 60, 0.85, 500, 60, 1.45, 0.8, 1480, 0.7, 1.0, 0.3),
    "urine":      (5, "none", 0, 3000, 1500, 1.0, 3000, 1200, 1.52, 0.1, 1520, 0.0, 0.0, 0.0),
    "gland":      (30, "soft_tissue", 30, 900, 60, 0.8, 1050, 55, 1.55, 0.75, 1530, 0.4, 0.8, 0.2),
    # dense fibrous (collagen) tissue: the mitral annulus and leaflets (generator 1.6.0). MR: no valve
    # relaxometry in physics.md; collagen-matrix tissue from Stanisz GJ et al., MRM 2005;54:507-512 (Table 1,
    # cartilage: 1.5 T T1 1024 / T2 30 ms, 3 T T1 1168 / T2 27 ms), PD as the table's cartilage. Dark on
    # bSSFP (T2/T1 0.03 against blood's 0.16), as valve leaflets and the annulus are on cine CMR. CT: unenhanced
    # soft tissue 40-60 HU (physics.md), little enhancement (the leaflets are nearly avascular). US: echogenic
    # as the table's cartilage.
    "fibrous":    (55, "soft_tissue", 10, 1024, 30, 0.7, 1168, 27, 1.75, 1.5, 1650, 0.6, 0.8, 0.2),
}

# label -> (base tissue, overrides)
_LABEL_TISSUE: dict[str, tuple[str, dict]] = {
    "air": ("air", {}), "skin": ("skin", {}), "fat_subcutaneous": ("fat", {}),
    "muscle": ("muscle", {}), "fat_visceral": ("fat", {"ct_hu": -95}),
    "spinal_cord": ("cord", {}), "intervertebral_disc": ("disc", {}),
    "rib": ("rib", {}), "costal_cartilage": ("cartilage", {}), "sternum": ("bone", {"ct_hu": 350}),
    "clavicle": ("rib", {}), "pelvis": ("bone", {"ct_hu": 450}), "sacrum": ("bone", {"ct_hu": 380}),
    "femur": ("bone", {"ct_hu": 500}),
    "lung_left": ("lung", {}), "lung_right": ("lung", {}),
    "lung_vessels_left": ("blood", {"ct_hu": 40, "us_attenuation": 40.0}),
    "lung_vessels_right": ("blood", {"ct_hu": 40, "us_attenuation": 40.0}),
    "trachea": ("air", {}), "bronchus_left": ("air", {}), "bronchus_right": ("air", {}),
    "airway_wall": ("cartilage", {"ct_hu": 90}),
    "lv_blood": ("blood", {}), "lv_myocardium": ("myocardium", {}),
    "rv_blood": ("blood", {"ct_compartment": "right_heart", "hu_enhancement_max": 350}),
    "la_blood": ("blood", {}),
    "ra_blood": ("blood", {"ct_compartment": "right_heart", "hu_enhancement_max": 350}),
    "heart_wall": ("myocardium", {}),
    "mitral_valve": ("fibrous", {}),
    "aorta_ascending": ("blood", {}), "aorta_arch": ("blood", {}), "aorta_descending": ("blood", {}),
    "aorta_abdominal": ("blood", {}),
    "pulmonary_artery": ("blood", {"ct_compartment": "right_heart", "hu_enhancement_max": 350}),
    "svc": ("blood", {"ct_compartment": "right_heart", "hu_enhancement_max": 400}),
    "ivc": ("blood", {"ct_compartment": "venous", "hu_enhancement_max": 150}),
    "artery_other": ("blood", {}),
    "vein_other": ("blood", {"ct_compartment": "venous", "hu_enhancement_max": 150}),
    "portal_vein": ("blood", {"ct_compartment": "portal_organ", "hu_enhancement_max": 180}),
    "oesophagus": ("stomach", {"ct_hu": 40}),
    "liver": ("liver", {}), "gallbladder": ("bile", {}), "spleen": ("spleen", {}),
    "stomach": ("stomach", {"ct_hu": 20}), "pancreas": ("pancreas", {}), "small_bowel": ("bowel", {"ct_hu": 20}),
    "colon": ("bowel", {}), "bowel_content": ("stool", {}), "bowel_gas": ("gas", {}),
    "kidney_left_cortex": ("k_cortex", {}), "kidney_left_medulla": ("k_medulla", {}),
    "kidney_left_sinus": ("k_sinus", {}),
    "kidney_right_cortex": ("k_cortex", {}), "kidney_right_medulla": ("k_medulla", {}),
    "kidney_right_sinus": ("k_sinus", {}),
    "ureter_left": ("urine", {"ct_hu": 20}), "ureter_right": ("urine", {"ct_hu": 20}),
    "bladder": ("urine", {}), "breast": ("gland", {}), "soft_tissue": ("gland", {"ct_hu": 35}),
    "bone_other": ("bone", {}), "heart_whole": ("blood", {"ct_hu": 42, "hu_enhancement_max": 220}),
    "aorta_unsplit": ("blood", {}), "adrenal": ("gland", {"ct_hu": 30}), "thyroid": ("gland", {"ct_hu": 90}),
}


#: MR: labels holding moving blood (base tissue "blood"). Spin-echo sequences show them as flow
#: voids; a label-level fact kept beside the table so the bundle's table format stays unchanged.
MR_FLOWING_BLOOD: frozenset[str] = frozenset(n for n, (base, _) in _LABEL_TISSUE.items() if base == "blood")


def mr_flowing_blood_mask(label_names: dict[int, str], n_labels: int) -> np.ndarray:
    """bool (n_labels,): which label values hold flowing blood (MR flow voids)."""
    m = np.zeros(n_labels, bool)
    for k, name in label_names.items():
        if 0 <= int(k) < n_labels and name in MR_FLOWING_BLOOD:
            m[int(k)] = True
    return m


@dataclass
class TissueTable:
    """Per-label property arrays (index = label value) plus the compartment names."""
    label_names: dict[int, str]
    ct_hu: np.ndarray
    ct_compartment: np.ndarray          # int codes into ``compartments``
    hu_enhancement_max: np.ndarray
    mr_t1_15: np.ndarray
    mr_t2_15: np.ndarray
    mr_pd: np.ndarray
    mr_t1_30: np.ndarray
    mr_t2_30: np.ndarray
    us_impedance: np.ndarray
    us_attenuation: np.ndarray
    us_speed: np.ndarray
    us_speckle_mu0: np.ndarray
    us_speckle_density: np.ndarray
    us_speckle_sigma: np.ndarray
    compartments: list[str] = field(default_factory=lambda: list(COMPARTMENTS))

    @property
    def n_labels(self) -> int:
        return len(self.ct_hu)

    def mr_t1(self, field_t: float = 1.5) -> np.ndarray:
        return self.mr_t1_30 if field_t >= 2.25 else self.mr_t1_15

    def mr_t2(self, field_t: float = 1.5) -> np.ndarray:
        return self.mr_t2_30 if field_t >= 2.25 else self.mr_t2_15

    def row(self, label: int) -> dict:
        """All properties of one label as a plain dict."""
        d = {"label": int(label), "name": self.label_names.get(int(label), "?"),
             "ct_compartment": self.compartments[int(self.ct_compartment[label])]}
        for p in PROPERTIES:
            d[p] = float(getattr(self, p)[label])
        return d

    def to_json(self) -> dict:
        out = {"compartments": list(self.compartments),
               "label_names": {str(k): v for k, v in self.label_names.items()},
               "ct_compartment": [int(v) for v in self.ct_compartment]}
        for p in PROPERTIES:
            out[p] = [float(v) for v in getattr(self, p)]
        return out

    @classmethod
    def from_json(cls, d: dict) -> "TissueTable":
        kw = {p: np.asarray(d[p], dtype=np.float32) for p in PROPERTIES}
        return cls(label_names={int(k): v for k, v in d["label_names"].items()},
                   ct_compartment=np.asarray(d["ct_compartment"], dtype=np.int16),
                   compartments=list(d["compartments"]), **kw)


def default_table(label_names: dict[int, str] | None = None) -> TissueTable:
    """The tissue table for the standard label set (or a subset/superset of its names)."""
    names = dict(LABEL_NAMES if label_names is None else label_names)
    n = max(max(names) + 1, N_LABELS if label_names is None else 0)
    cols = {p: np.zeros(n, dtype=np.float32) for p in PROPERTIES}
    comp = np.zeros(n, dtype=np.int16)
    for i in range(n):
        name = names.get(i, "soft_tissue")
        if name.startswith("vertebra_"):
            base, over = "bone", {"ct_hu": 400}
        else:
            base, over = _LABEL_TISSUE.get(name, ("gland", {"ct_hu": 35}))
        t = _T[base]
        vals = {"ct_hu": t[0], "hu_enhancement_max": t[2], "mr_t1_15": t[3], "mr_t2_15": t[4],
                "mr_pd": t[5], "mr_t1_30": t[6], "mr_t2_30": t[7], "us_impedance": t[8],
                "us_attenuation": t[9], "us_speed": t[10], "us_speckle_mu0": t[11],
                "us_speckle_density": t[12], "us_speckle_sigma": t[13]}
        cname = over.get("ct_compartment", t[1])
        vals.update({k: v for k, v in over.items() if k != "ct_compartment"})
        for p in PROPERTIES:
            cols[p][i] = vals[p]
        comp[i] = COMPARTMENTS.index(cname)
    return TissueTable(label_names=names, ct_compartment=comp, **cols)
