"""Ultrasound acoustics: per-label tissue table, the curvilinear probe, presets, beam and display laws
(numpy only, no Qt/VTK).

Numbers follow shared/reference/physics.md (Ultrasound section); [V] = read in the cited source there,
[G] = general knowledge, [T] = tuned here by looking at images (see the notes at each table entry).

- Impedance Z (MRayl) [V]: fat 1.38, liver 1.65, kidney 1.62, blood 1.61, vessel wall 1.99, skin 1.99,
  bone 7.8, air 0.0004, gel 1.38. Muscle 1.70, spleen 1.64, fluid ~1.52 [G].
- Attenuation alpha (dB/cm/MHz) [V]: fat 0.63, kidney 1.0, blood 0.18, vessel wall 1.09, skin 1.0, bone 5.0,
  lung 40; "other" line: spleen 0.40, liver 0.50. Bile and urine ~0.1 [G] (fluid: posterior enhancement).
- Speckle: the SonoGym columns of physics.md give the kidney a higher mean (0.4) than liver (0.19), i.e. a
  kidney brighter than liver, which physics.md's own kidney line contradicts ("cortex echogenicity <=
  liver/spleen") and which a sonographer would call wrong. So echogenicity here is a backscatter level in
  dB relative to liver parenchyma [T], ordered as sonographers describe it: renal sinus fat > pancreas >
  spleen >= liver > renal cortex > muscle > renal medulla > fluid (anechoic). Density (fraction of the
  scatterer lattice that scatters) and sigma (spread of scatterer strength) set the texture.
  rendering/subjects/tissues.py holds older us_* columns (kidney brighter than liver); this table
  replaces them for image formation.
- Probe [V]: curvilinear abdominal, 2-5 MHz, 256 elements, ~60-73 deg sector (65 here), radius ~45 mm.
- Resolution [V]: axial ~ lambda/2 .. lambda, lateral ~ lambda x f-number, narrowest at the focus.
- Range: c = 1540 m/s [V] for every range computation (the scanner's assumption).
- Spatial compounding [V] (see COMPOUND_* below): abdominal presets of current scanners form each image from
  several electronically steered frames ("looks") averaged after detection (Philips SonoCT, GE CrossXBeam,
  Canon ApliPure; Entrekin et al. 2001; Jespersen et al. 1998), so the speckle's SD falls ~1/sqrt(N) for
  decorrelated looks (Burckhardt 1978; Trahey et al. 1986) while a tissue's mean level stays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .subjects.labels import LABEL_NAMES

SPEED_OF_SOUND_M_S = 1540.0  # [V] the scanner's range assumption


# ---- tissues ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AcousticTissue:
    """One acoustic tissue class.

    impedance_mrayl: Z; attenuation_db_cm_mhz: alpha (one way); speed_m_s: true speed (not used for range);
    echo_db: speckle backscatter level relative to liver (0 dB), None for anechoic; density: fraction of the
    scatterer lattice nodes that scatter (0-1); sigma: relative spread of scatterer strength.
    """

    name: str
    impedance_mrayl: float
    attenuation_db_cm_mhz: float
    speed_m_s: float
    echo_db: float | None
    density: float
    sigma: float


_ANECHOIC_DB = None
# name: Z, alpha, c, echo dB rel. liver, density, sigma
_TISSUES: dict[str, tuple[float, float, float, float | None, float, float]] = {
    "air":         (0.0004, 12.0, 343.0, _ANECHOIC_DB, 0.0, 0.0),   # [V] Z; alpha: the beam dies in it [G]
    "gas":         (0.0004, 12.0, 343.0, _ANECHOIC_DB, 0.0, 0.0),   # bowel gas: total reflection -> shadow
    "lung":        (0.01, 40.0, 600.0, _ANECHOIC_DB, 0.0, 0.0),     # [V] alpha 40; aerated: a reflector
    "gel":         (1.38, 0.05, 1540.0, _ANECHOIC_DB, 0.0, 0.0),    # [V] Z gel 1.38: couples probe and skin
    "skin":        (1.99, 1.0, 1600.0, 6.0, 0.8, 0.3),              # [V] Z, alpha; bright thin line [T]
    "fat_sc":      (1.38, 0.63, 1450.0, -7.0, 0.5, 0.6),            # [V] Z, alpha, c; hypoechoic with septa [T]
    "fat_visc":    (1.38, 0.63, 1450.0, 7.0, 0.7, 0.5),             # perirenal/retroperitoneal fat: echogenic [T]
    "muscle":      (1.70, 1.09, 1580.0, -9.0, 0.6, 0.5),            # [G] Z, alpha (~vessel wall), c [V]
    "liver":       (1.65, 0.50, 1570.0, 0.0, 1.0, 0.25),            # [V] Z 1.65, alpha 0.50 ("other" line)
    "spleen":      (1.64, 0.40, 1565.0, 1.0, 1.0, 0.22),            # [V] alpha 0.40; slightly >= liver [G]
    "pancreas":    (1.63, 0.80, 1560.0, 3.0, 0.9, 0.35),            # adult pancreas >= liver [G]
    "k_cortex":    (1.62, 1.00, 1560.0, -2.5, 0.8, 0.25),           # [V] Z, alpha; hypoechoic to liver [V]
    "k_medulla":   (1.62, 1.00, 1560.0, -15.0, 0.5, 0.25),          # pyramids: darker than cortex [G]
    "k_sinus":     (1.45, 0.80, 1480.0, 12.0, 1.0, 0.45),           # sinus fat: the brightest organ echo [G]
    "blood":       (1.61, 0.18, 1570.0, _ANECHOIC_DB, 0.0, 0.0),    # [V]; anechoic at B-mode gains [G]
    "vessel_wall": (1.99, 1.09, 1580.0, 2.0, 0.8, 0.3),             # [V]
    "bile":        (1.52, 0.10, 1520.0, _ANECHOIC_DB, 0.0, 0.0),    # [G] fluid: anechoic, little attenuation
    "urine":       (1.52, 0.10, 1520.0, _ANECHOIC_DB, 0.0, 0.0),    # [G]
    "myocardium":  (1.70, 1.00, 1570.0, -6.0, 0.7, 0.3),            # [G]
    "bowel":       (1.62, 0.80, 1550.0, 0.0, 0.7, 0.5),             # wall + mixed content [G]
    "stool":       (1.55, 1.50, 1540.0, 3.0, 1.0, 0.6),             # [G]
    "gland":       (1.55, 0.75, 1530.0, -2.0, 0.8, 0.25),           # [G]
    "cartilage":   (1.75, 1.50, 1650.0, -20.0, 0.3, 0.2),           # hyaline cartilage: hypoechoic [G]
    "disc":        (1.60, 1.00, 1560.0, -10.0, 0.5, 0.3),           # [G]
    "cord":        (1.55, 0.80, 1540.0, -18.0, 0.3, 0.2),           # cord + CSF [G]
    "bone":        (7.80, 5.00, 3500.0, -10.0, 0.5, 0.3),           # [V] Z, alpha, c; behind its surface: shadow
}
TISSUES: dict[str, AcousticTissue] = {k: AcousticTissue(k, *v) for k, v in _TISSUES.items()}

# Every label the subject generator (or the NIfTI importer) produces -> acoustic tissue.
LABEL_TISSUE: dict[str, str] = {
    "air": "air", "skin": "skin", "fat_subcutaneous": "fat_sc", "muscle": "muscle", "fat_visceral": "fat_visc",
    "spinal_cord": "cord", "intervertebral_disc": "disc", "rib": "bone", "costal_cartilage": "cartilage",
    "sternum": "bone", "clavicle": "bone", "pelvis": "bone", "sacrum": "bone", "femur": "bone",
    "lung_left": "lung", "lung_right": "lung", "lung_vessels_left": "lung", "lung_vessels_right": "lung",
    "trachea": "air", "bronchus_left": "air", "bronchus_right": "air", "airway_wall": "cartilage",
    "lv_blood": "blood", "lv_myocardium": "myocardium", "rv_blood": "blood", "la_blood": "blood",
    "ra_blood": "blood", "heart_wall": "myocardium",
    "aorta_ascending": "blood", "aorta_arch": "blood", "aorta_descending": "blood", "aorta_abdominal": "blood",
    "pulmonary_artery": "blood", "svc": "blood", "ivc": "blood", "artery_other": "blood", "vein_other": "blood",
    "portal_vein": "blood", "oesophagus": "bowel",
    "liver": "liver", "gallbladder": "bile", "spleen": "spleen", "stomach": "bowel", "pancreas": "pancreas",
    "small_bowel": "bowel", "colon": "bowel", "bowel_content": "stool", "bowel_gas": "gas",
    "kidney_left_cortex": "k_cortex", "kidney_left_medulla": "k_medulla", "kidney_left_sinus": "k_sinus",
    "kidney_right_cortex": "k_cortex", "kidney_right_medulla": "k_medulla", "kidney_right_sinus": "k_sinus",
    "ureter_left": "urine", "ureter_right": "urine", "bladder": "urine", "breast": "gland",
    "soft_tissue": "gland", "bone_other": "bone", "heart_whole": "blood", "aorta_unsplit": "blood",
    "adrenal": "gland", "thyroid": "gland", "mitral_valve": "cartilage",  # dense collagen, echogenic
}
DEFAULT_TISSUE = "gland"  # labels of imported bundles the table does not know


def tissue_of(label_name: str) -> AcousticTissue:
    """The acoustic tissue of a label name (vertebrae are bone; unknown names soft tissue)."""
    if label_name.startswith("vertebra_"):
        return TISSUES["bone"]
    return TISSUES[LABEL_TISSUE.get(label_name, DEFAULT_TISSUE)]


@dataclass(frozen=True, eq=False)
class AcousticTable:
    """Per-label arrays (index = label value), usable as lut[labels].

    echo_amp is the linear amplitude of echo_db (0 for anechoic labels)."""

    label_names: dict[int, str]
    impedance: np.ndarray
    attenuation: np.ndarray
    speed: np.ndarray
    echo_amp: np.ndarray
    density: np.ndarray
    sigma: np.ndarray
    organ_group: np.ndarray  # int16: labels of one organ share a group (no capsule between its parts)

    @property
    def n_labels(self) -> int:
        return len(self.impedance)

    @property
    def gel_label(self) -> int:
        return len(self.impedance) - 1

    def row(self, label: int) -> dict:
        return {"label": int(label), "name": self.label_names.get(int(label), "?"),
                "impedance_mrayl": float(self.impedance[label]),
                "attenuation_db_cm_mhz": float(self.attenuation[label]), "speed_m_s": float(self.speed[label]),
                "echo_amp": float(self.echo_amp[label]), "density": float(self.density[label]),
                "sigma": float(self.sigma[label])}


def acoustic_table(label_names: Mapping[int, str] | None = None, n_labels: int | None = None) -> AcousticTable:
    """The acoustic table of a label set (the standard one by default); 256 entries at least, so a uint8
    label volume can index it without bounds checks. The last entry is the coupling gel (`gel_label`): image
    formation puts it where gel and indented skin fill the gap between the array and the skin."""
    names = dict(LABEL_NAMES if label_names is None else label_names)
    n = max(256, max(names) + 2, n_labels or 0)
    cols = {k: np.zeros(n, np.float32) for k in ("impedance", "attenuation", "speed", "echo_amp", "density",
                                                    "sigma")}
    for i in range(n):
        t = TISSUES["gel"] if i == n - 1 else tissue_of(names[i]) if i in names else TISSUES[DEFAULT_TISSUE]
        cols["impedance"][i] = t.impedance_mrayl
        cols["attenuation"][i] = t.attenuation_db_cm_mhz
        cols["speed"][i] = t.speed_m_s
        cols["echo_amp"][i] = 0.0 if t.echo_db is None else 10.0 ** (t.echo_db / 20.0)
        cols["density"][i] = t.density
        cols["sigma"][i] = t.sigma
    # An organ's parts (kidney cortex, medulla, sinus; lung and its vessels) have no capsule between them.
    group = np.arange(n, dtype=np.int16)
    first: dict[str, int] = {}
    for i in sorted(names):
        stem = _organ_stem(names[i])
        group[i] = first.setdefault(stem, i)
    group.setflags(write=False)
    for a in cols.values():
        a.setflags(write=False)
    return AcousticTable(label_names=names, organ_group=group, **cols)


def _organ_stem(name: str) -> str:
    for prefix in ("kidney_left_", "kidney_right_"):
        if name.startswith(prefix):
            return prefix
    if name.startswith("lung_"):
        return "lung_" + name.rsplit("_", 1)[-1]
    return name


# ---- probe --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probe:
    """A curvilinear array: elements on an arc of `radius_mm` spanning `fov_deg`; one scan line per element
    position (`n_lines`) radiating from the arc's centre (the virtual apex)."""

    name: str = "C5-2"
    freq_min_mhz: float = 2.0  # [V] 2-5 MHz
    freq_max_mhz: float = 5.0
    n_elements: int = 256  # [V]
    fov_deg: float = 65.0  # [V] ~60-73 deg
    radius_mm: float = 45.0  # [V] ~45 mm
    aperture_mm: float = 32.0  # the largest active transmit aperture [G]: ~160 elements of the 0.2 mm pitch
    f_number_min: float = 2.5  # the aperture grows with the focal depth to this f-number, up to aperture_mm [G]
    n_lines: int = 256

    @property
    def pitch_mm(self) -> float:
        return self.radius_mm * np.deg2rad(self.fov_deg) / self.n_elements

    def line_angles_rad(self, n_lines: int | None = None) -> np.ndarray:
        """Angle of each scan line from the probe axis, screen left (negative) to right."""
        n = self.n_lines if n_lines is None else n_lines
        h = np.deg2rad(self.fov_deg) / 2.0
        return np.linspace(-h, h, n)

    def footprint_mm(self) -> float:
        """Chord of the array (what touches the skin at full contact)."""
        return 2.0 * self.radius_mm * np.sin(np.deg2rad(self.fov_deg) / 2.0)


CURVILINEAR = Probe()


# ---- controls and presets -----------------------------------------------------------------------------
FREQUENCIES_MHZ: tuple[float, ...] = (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)
DEPTH_RANGE_MM = (40.0, 240.0)
FOCUS_MIN_MM = 10.0
GAIN_RANGE = (0.0, 100.0)  # shown as a percentage, as most scanners do
GAIN_DB_PER_UNIT = 0.5  # gain 50 = 0 dB; 0..100 spans -25..+25 dB [G]
# one press of a control's -/+ key (or Up/Down in its field) [G]: depth by 1 cm, focus by 5 mm, gain by 1 dB
DEPTH_STEP_MM = 10.0
FOCUS_STEP_MM = 5.0
GAIN_STEP = 1.0 / GAIN_DB_PER_UNIT
TGC_BANDS = 8  # slide pots, each a dB offset over an equal share of the displayed depth [G]
TGC_RANGE_DB = (-20.0, 20.0)
DYNAMIC_RANGE_DB = (40.0, 100.0)  # [V] 60-100 dB; 40 allowed for a contrasty look
GREY_MAPS: tuple[str, ...] = ("A", "B", "C", "D")
GREY_MAP_NOTES = {"A": "linear", "B": "soft (mid-greys lifted)", "C": "high contrast (S-curve)",
                  "D": "dark (gamma 1.6)"}
# The scanner's built-in depth compensation: TGC pots at 0 dB make liver (alpha 0.50 [V]) even with depth;
# tissues attenuating more darken with depth, fluid (0.1) brightens what lies behind it.
AUTO_COMP_DB_CM_MHZ = 0.50


# ---- spatial compounding --------------------------------------------------------------------------------
# Real-time spatial compound imaging (Entrekin, Porter, Sillesen, Wong, Cooperberg, Fix 2001, "Real-time spatial
# compound imaging: application to breast, vascular, and musculoskeletal ultrasound", Semin Ultrasound CT MR
# 22:50-64; Jespersen, Wilhjelm, Sillesen 1998, "Multi-angle compound imaging", Ultrason Imaging 20:81-102): the
# array steers whole frames to up to about +-20 deg and averages 3-9 of them ("lines of sight"); vendors ship it
# on in their abdominal presets (Philips SonoCT, GE CrossXBeam, Canon/Toshiba ApliPure, Siemens SieClear).
# Speckle from two looks decorrelates as the aperture, seen from the scatterer, moves by about half its width
# (Trahey, Smith, von Ramm 1986, "Speckle pattern correlation with lateral aperture translation", IEEE Trans
# Ultrason Ferroelectr Freq Control 33:257-264; O'Donnell, Silverstein 1988, IEEE TUFFC 35:470-476): a look
# steered by d_theta moves it by depth x tan(d_theta) against a width depth / f-number, i.e. by f-number x
# tan(d_theta) apertures, whatever the depth (`look_field_correlation`). Averaging N decorrelated looks divides
# the speckle's SD by sqrt(N) (Burckhardt 1978, "Speckle in ultrasound B-mode scans", IEEE Trans Sonics
# Ultrason 25:1-6). The console's "Compound" setting is the number of looks (1 = off).
COMPOUND_LOOKS: tuple[int, ...] = (1, 3, 5)  # off, and the 3- and 5-look settings [V: 3-9 looks, Entrekin 2001]
COMPOUND_MAX_STEER_DEG = 20.0  # the outer looks' steering [V: up to about +-20 deg, Entrekin 2001]
COMPOUND_DEFAULT_LOOKS = 3  # the abdominal presets' setting [G: vendors' abdominal presets compound by default]


def compound_angles_deg(looks: int) -> tuple[float, ...]:
    """The steering angles of `looks` looks, evenly from -COMPOUND_MAX_STEER_DEG to +COMPOUND_MAX_STEER_DEG
    (one look: unsteered)."""
    n = int(looks)
    if n not in COMPOUND_LOOKS:
        raise ValueError(f"compound: {n} looks; expected one of {COMPOUND_LOOKS}")
    if n == 1:
        return (0.0,)
    return tuple(float(a) for a in np.linspace(-COMPOUND_MAX_STEER_DEG, COMPOUND_MAX_STEER_DEG, n))


def look_field_correlation(d_theta_deg: float, f_number: float) -> float:
    """Correlation of the echo fields of two looks `d_theta_deg` apart (van Cittert-Zernike: the normalised
    overlap of the two pulse-echo effective apertures; a transmit-receive aperture D has a triangular effective
    aperture of base D, whose autocorrelation at a shift s is 1 - 3/2 u^2 + 3/4 u^3 for u = 2 s / D <= 1, 1/4
    (2 - u)^3 for 1 <= u <= 2, 0 beyond). The shift is f-number x tan(d_theta) apertures (Trahey et al. 1986:
    intensity decorrelated at about half the aperture, where this gives a field correlation 1/4, intensity
    1/16)."""
    u = 2.0 * float(f_number) * math.tan(math.radians(abs(float(d_theta_deg))))
    if u <= 1.0:
        return 1.0 - 1.5 * u ** 2 + 0.75 * u ** 3
    if u <= 2.0:
        return 0.25 * (2.0 - u) ** 3
    return 0.0


@dataclass(frozen=True)
class Preset:
    """A scanner preset: the controls it loads."""

    name: str
    frequency_mhz: float
    depth_mm: float
    focus_mm: float
    gain: float
    dynamic_range_db: float
    grey_map: str
    tgc_db: tuple[float, ...] = field(default_factory=lambda: (0.0,) * TGC_BANDS)
    compound: int = COMPOUND_DEFAULT_LOOKS  # looks averaged (1 = off)

    def controls(self) -> dict:
        return {"frequency_mhz": self.frequency_mhz, "depth_mm": self.depth_mm, "focus_mm": self.focus_mm,
                "gain": self.gain, "dynamic_range_db": self.dynamic_range_db, "grey_map": self.grey_map,
                "tgc_db": list(self.tgc_db), "compound": self.compound}


# [G]: abdomen general survey deep and soft; renal a little shallower and finer (kidney at 5-12 cm from
# the flank, 9-12 cm long [V]); bladder lower gain (fluid) and far gain lifted for enhancement control.
# All three are abdominal presets and compound by default (COMPOUND_DEFAULT_LOOKS).
PRESETS: dict[str, Preset] = {
    "Abdomen": Preset("Abdomen", 3.5, 160.0, 80.0, 50.0, 66.0, "B"),
    "Renal": Preset("Renal", 4.0, 130.0, 70.0, 52.0, 60.0, "B"),
    "Bladder": Preset("Bladder", 3.0, 140.0, 90.0, 45.0, 60.0, "A", (0.0, 0.0, 0.0, 0.0, -2.0, -4.0, -4.0, -4.0)),
}
PRESET_NAMES: tuple[str, ...] = tuple(PRESETS)


# ---- beam laws ----------------------------------------------------------------------------------------
def wavelength_mm(frequency_mhz: float) -> float:
    return SPEED_OF_SOUND_M_S / (frequency_mhz * 1e6) * 1e3


def axial_fwhm_mm(frequency_mhz: float) -> float:
    """Axial resolution ~ lambda (a two-cycle pulse: half the spatial pulse length) [V]."""
    return wavelength_mm(frequency_mhz)


LATERAL_WIDTH_CAP = 3.0  # dynamic receive focus keeps the two-way beam within this many focal widths [G]


def lateral_fwhm_mm(depth_mm: np.ndarray | float, focus_mm: float, frequency_mhz: float,
                    probe: Probe = CURVILINEAR) -> np.ndarray:
    """Lateral beam width: lambda x f-number at the transmit focus [V], widening away from it like a
    Gaussian beam: sqrt(2) wider half the depth of field (~7 lambda F#^2 in all [G]) from the focus,
    within LATERAL_WIDTH_CAP focal widths (dynamic receive focus)."""
    lam = wavelength_mm(frequency_mhz)
    # the scanner opens the aperture with the focal depth (a constant f-number) until the whole aperture is in
    # use: a deeper focus keeps its narrow beam down to about 8 cm, then widens as the f-number rises
    f_number = max(probe.f_number_min, focus_mm / probe.aperture_mm)
    w_focus = lam * f_number
    half_dof = max(5.0, 3.5 * lam * f_number ** 2)  # the Rayleigh range: half the depth of field
    d = np.asarray(depth_mm, float)
    return np.minimum(w_focus * np.sqrt(1.0 + ((d - focus_mm) / half_dof) ** 2), LATERAL_WIDTH_CAP * w_focus)


def focal_gain_db(depth_mm: np.ndarray | float, focus_mm: float, frequency_mhz: float,
                  probe: Probe = CURVILINEAR) -> np.ndarray:
    """Echo intensity gained by the transmit focus (dB, >= 0): the array focuses in the image plane only, so
    the beam's energy spreads over its lateral width and the intensity it brings to a depth goes as
    1 / width [V: the focus improves intensity near it]; 0 dB where the beam is at its widest (the cap),
    10 log10(cap) (4.8 dB) at the focus itself."""
    w = lateral_fwhm_mm(depth_mm, focus_mm, frequency_mhz, probe)
    w_widest = LATERAL_WIDTH_CAP * lateral_fwhm_mm(focus_mm, focus_mm, frequency_mhz, probe)
    return 10.0 * np.log10(w_widest / w)


def frame_rate_hz(depth_mm: float, n_lines: int = CURVILINEAR.n_lines) -> float:
    """Pulse-echo limit: one line takes 2 depth / c; one transmit focus [G]."""
    return 1.0 / (n_lines * 2.0 * depth_mm * 1e-3 / SPEED_OF_SOUND_M_S)


def gain_db(gain: float) -> float:
    """The overall gain control (0-100) as a dB offset (50 = 0 dB)."""
    return (float(gain) - 50.0) * GAIN_DB_PER_UNIT


def tgc_curve_db(depths_mm: np.ndarray, depth_mm: float, tgc_db) -> np.ndarray:
    """Piecewise-linear TGC offsets: pot i sits at the centre of the i-th equal depth band, flat beyond."""
    tgc = np.asarray(tgc_db, float)
    centres = (np.arange(len(tgc)) + 0.5) * depth_mm / len(tgc)
    return np.interp(depths_mm, centres, tgc)


def grey_map_lut(name: str) -> np.ndarray:
    """uint8 (256,): display value per compressed level."""
    x = np.linspace(0.0, 1.0, 256)
    if name == "A":
        y = x
    elif name == "B":
        y = x ** 0.8
    elif name == "C":
        y = 0.5 + 0.5 * np.tanh(4.0 * (x - 0.5)) / np.tanh(2.0)
    elif name == "D":
        y = x ** 1.6
    else:
        raise ValueError(f"unknown grey map {name!r}; expected one of {GREY_MAPS}")
    return np.clip(np.rint(255.0 * y), 0, 255).astype(np.uint8)


def with_preset(controls: Mapping, preset: str) -> dict:
    """`controls` with a preset's values loaded."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {PRESET_NAMES}")
    return {**dict(controls), **PRESETS[preset].controls(), "preset": preset}


__all__ = ["AcousticTissue", "AcousticTable", "Probe", "Preset", "TISSUES", "LABEL_TISSUE", "PRESETS",
           "PRESET_NAMES", "CURVILINEAR", "COMPOUND_LOOKS", "COMPOUND_MAX_STEER_DEG",
           "COMPOUND_DEFAULT_LOOKS", "compound_angles_deg", "look_field_correlation",
           "FREQUENCIES_MHZ", "GREY_MAPS", "acoustic_table", "tissue_of",
           "wavelength_mm", "axial_fwhm_mm", "lateral_fwhm_mm", "focal_gain_db", "frame_rate_hz", "gain_db",
           "tgc_curve_db", "grey_map_lut", "with_preset"]
