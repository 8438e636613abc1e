"""MR protocol library (pure data): the tree the console's library shows and each protocol's defaults.

A protocol is what a radiographer drags into the exam queue: a sequence (contrast parameters from
rendering.mr_physics.PRESETS), a default slice group, physiological triggering, whether it is planned
on localizer images, and the inputs of its nominal scan-time formula (consoles.mr.timing).

Default orientations are scanner orientation text (rendering.geometry.orientation_text). The cardiac
views are population-average obliques of the LV long axis (pointing left, anterior and inferior):
they are where planning starts, never the answer, which depends on each subject's heart.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rendering.mr_physics import PRESETS, SequenceParams

# How a sequence fills k-space; selects the scan-time formula in consoles.mr.timing.
READOUTS = ("localizer", "single_shot", "multi_shot", "gre", "segmented_cine", "mapping", "none")
TRIGGERS = ("none", "ecg", "pulse")

# Where the patient is positioned (landmark at the isocentre), subject z in mm relative to the jugular
# notch (subject z = 0). Nominal adult levels [G]: the heart about 10 cm below the notch, the kidneys
# (hila at L1-L2) about 28 cm below.
LANDMARK_Z_MM = {"heart": -100.0, "liver": -210.0, "kidneys": -280.0}


@dataclass(frozen=True)
class SliceDefaults:
    """A protocol's default slice group (centred on the isocentre when added to the queue)."""

    orientation: str = "T"  # scanner orientation text, e.g. "T", "C > T 20", "S > C -40 > T -30"
    n_slices: int = 1
    thickness_mm: float = 6.0
    gap_mm: float = 0.0
    fov_read_mm: float = 350.0
    fov_phase_mm: float = 350.0
    matrix: int = 256  # read matrix; phase lines follow from the FOV ratio (square pixels)
    averages: int = 1
    inplane_deg: float = 0.0


@dataclass(frozen=True)
class Timing:
    """Inputs of the nominal scan-time formula (see consoles.mr.timing.scan_time_s)."""

    readout: str = "gre"
    etl: int = 1  # echo-train length (TSE): k-space lines per shot
    echo_spacing_ms: float = 0.0  # TSE: time between refocusing pulses
    segments: int = 1  # cine: k-space lines per heartbeat and cardiac phase
    overhead_s: float = 3.0  # adjustments and prescan before the first line

    def __post_init__(self) -> None:
        if self.readout not in READOUTS:
            raise ValueError(f"unknown readout {self.readout!r}; expected one of {READOUTS}")


@dataclass(frozen=True)
class MRProtocol:
    """One entry of the protocol library."""

    id: str
    name: str
    folder: str  # the library tree's folder
    preset: str | None  # rendering.mr_physics.PRESETS key at 1.5 T (None: not acquirable)
    slices: SliceDefaults
    timing: Timing
    trigger: str = "none"  # default physiological trigger
    triggerable: bool = False  # whether the Physio card offers ECG / pulse triggering
    trigger_delay_ms: float = 0.0
    acq_window_ms: float = 700.0
    needs_localizer: bool = True
    acquirable: bool = True
    preset_3t: str | None = None  # preset at 3 T when it differs (e.g. lower bSSFP flip)
    note: str = ""
    map_kind: str | None = None  # "t1" (MOLLI) or "t2" (T2-prep): a mapping protocol (consoles.mr.mapping)
    map_scheme: str | None = None  # default scheme (rendering.mr_mapping.MOLLI_SCHEMES / T2_SCHEMES)
    # a localizer: (slice count, centre-to-centre spacing mm) of its sagittal, coronal and transverse stacks,
    # each centred on the isocentre (rendering.mr_image.localizer_groups)
    localizer_stacks: tuple[tuple[int, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise ValueError(f"protocol {self.id}: unknown trigger {self.trigger!r}")
        if self.acquirable and self.preset not in PRESETS:
            raise ValueError(f"protocol {self.id}: unknown preset {self.preset!r}")
        if self.is_localizer and (self.localizer_stacks is None or len(self.localizer_stacks) != 3
                                  or any(n < 1 or sp < self.slices.thickness_mm for n, sp in self.localizer_stacks)):
            raise ValueError(f"protocol {self.id}: a localizer needs (slices >= 1, spacing >= thickness) for each "
                             f"of its 3 planes, got {self.localizer_stacks!r}")

    @property
    def localizer_slices(self) -> int:
        """How many slices a localizer acquires over its three planes (0 for other protocols)."""
        return sum(n for n, _ in self.localizer_stacks) if self.localizer_stacks else 0

    @property
    def is_localizer(self) -> bool:
        return self.timing.readout == "localizer"

    def sequence(self, field_t: float = 1.5) -> SequenceParams | None:
        """The default contrast parameters at this field strength (None for placeholders)."""
        key = self.preset_3t if field_t >= 2.25 and self.preset_3t else self.preset
        return PRESETS.get(key) if key else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_LOC = Timing("localizer", overhead_s=5.0)
# The 3-plane localizer's stacks (issue 33, docs/visibility.md "MR: the kidneys on the localizers"): vendors'
# 3-plane localizers acquire several parallel slices per orientation (Siemens "localizer" / GE "3-plane
# localizer": 3-11 per orientation, single-shot bSSFP, well under 1 s a slice [G]); cardiac exams start with
# scout imaging in the three planes (Kramer et al., JCMR 2020;22:17, SCMR standardized protocols). One stack
# set serves both exams here: 11 slices of 8 mm, 15 mm apart (+-75 mm about the isocentre) in each plane.
# Measured on the cohort (s01-s30 x seeds 0-2, every renal and cardiac card's isocentre offsets and landmark
# shift; a section approximated by the organ's voxels within +-4 mm of the slice centre): the slice position
# nearest the isocentre that cuts a kidney within 10 mm of its pole or border lies at most 47 mm from it
# (LV apex, heart borders: 54 mm), and the positions that do form windows at least 34 mm wide; 15 mm steps
# put a slice in every window and +-75 mm reaches the farthest with 20 mm to spare (9 x 15 mm would reach
# them too, with 6 mm; 7 x 15 mm misses 1 of 2,880 renal and 5 of 810 apex boundaries).
LOCALIZER_STACKS = ((11, 15.0), (11, 15.0), (11, 15.0))  # the row's card shows one plane's: 11 slices, gap 7 mm
# cine: 12 lines per segment x TR 3 ms = 36 ms per cardiac phase (<= 45 ms, physics.md)
_CINE = Timing("segmented_cine", segments=12, overhead_s=3.0)
_MAP = Timing("mapping", overhead_s=3.0)
_CINE_SLICES = dict(thickness_mm=8.0, fov_read_mm=340.0, fov_phase_mm=272.0, matrix=208)

PROTOCOLS: tuple[MRProtocol, ...] = (
    MRProtocol("localizer_3plane", "3-plane localizer", "Localizer", "localizer_bssfp",
               SliceDefaults("T", 11, 8.0, 7.0, 450.0, 450.0, 256), _LOC, needs_localizer=False,
               localizer_stacks=LOCALIZER_STACKS),
    MRProtocol("cine_2ch", "Cine bSSFP 2ch (VLA)", "Cardiac", "cine_bssfp",
               SliceDefaults("C > S 40", 1, **_CINE_SLICES), _CINE, trigger="ecg", triggerable=True,
               preset_3t="cine_bssfp_3t"),
    MRProtocol("cine_4ch", "Cine bSSFP 4ch (HLA)", "Cardiac", "cine_bssfp",
               SliceDefaults("T > C -21 > S 22", 1, **_CINE_SLICES), _CINE, trigger="ecg", triggerable=True,
               preset_3t="cine_bssfp_3t"),
    MRProtocol("cine_sax", "Cine bSSFP SAX stack", "Cardiac", "cine_bssfp",
               SliceDefaults("S > C -40 > T -30", 10, 8.0, 2.0, 340.0, 272.0, 208), _CINE, trigger="ecg",
               triggerable=True, preset_3t="cine_bssfp_3t"),
    MRProtocol("t2_haste_cor", "T2 HASTE coronal", "Abdomen", "t2_haste",
               SliceDefaults("C", 25, 6.0, 0.6, 400.0, 400.0, 256), Timing("single_shot", overhead_s=3.0)),
    MRProtocol("t2_tse_tra", "T2 TSE axial", "Abdomen", "t2_tse",
               SliceDefaults("T", 30, 6.0, 1.2, 380.0, 285.0, 320, averages=2),
               Timing("multi_shot", etl=16, echo_spacing_ms=8.0, overhead_s=3.0)),
    MRProtocol("t1_gre_tra", "T1 spoiled GRE axial", "Abdomen", "t1_spoiled_gre",
               SliceDefaults("T", 16, 6.0, 1.2, 380.0, 285.0, 256), Timing("gre", overhead_s=3.0)),
    # mapping [G]: one mid-ventricular SAX slice, 8 mm, ~1.9 mm pixels; diastolic shot ending 600 ms after
    # the R wave (fits 60-80 bpm); breath-hold of the scheme's heartbeats (consoles.mr.mapping)
    MRProtocol("t1_map_molli", "T1 map MOLLI (SAX)", "Mapping", "cine_bssfp",
               SliceDefaults("S > C -40 > T -30", 1, 8.0, 0.0, 360.0, 306.0, 192), _MAP,
               trigger="ecg", triggerable=True, trigger_delay_ms=400.0, acq_window_ms=200.0,
               map_kind="t1", map_scheme="5(3)3"),
    MRProtocol("t2_map_t2prep", "T2 map T2-prep (SAX)", "Mapping", "cine_bssfp",
               SliceDefaults("S > C -40 > T -30", 1, 8.0, 0.0, 360.0, 306.0, 192), _MAP,
               trigger="ecg", triggerable=True, trigger_delay_ms=400.0, acq_window_ms=200.0,
               map_kind="t2", map_scheme="t2prep_0_25_55"),
)
FOLDERS: tuple[str, ...] = ("Localizer", "Cardiac", "Abdomen", "Mapping")
_BY_ID = {p.id: p for p in PROTOCOLS}


@dataclass(frozen=True)
class LibraryNode:
    """A node of the library tree: a folder with children or a protocol leaf."""

    label: str
    protocol: str | None = None
    children: tuple["LibraryNode", ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"label": self.label}
        if self.protocol is not None:
            d["protocol"] = self.protocol
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d


def library_tree() -> LibraryNode:
    """The protocol tree as the library shows it (folders in FOLDERS order, protocols in PROTOCOLS order)."""
    folders = tuple(LibraryNode(f, children=tuple(LibraryNode(p.name, p.id) for p in PROTOCOLS if p.folder == f))
                    for f in FOLDERS)
    return LibraryNode("Protocols", children=folders)


def get_protocol(pid: str) -> MRProtocol:
    try:
        return _BY_ID[pid]
    except KeyError:
        raise KeyError(f"unknown MR protocol {pid!r}; known: {sorted(_BY_ID)}") from None
