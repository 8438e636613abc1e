"""CT protocol library (pure data): default acquisition parameters and default plan per protocol.

Default ranges are in table millimetres (table z = 0 is the couch reference position; where the
patient's jugular notch lies on it is the seeded craniocaudal positioning offset), i.e. where a
radiographer would start before adapting to the scout. Each protocol's scout (topogram) covers a fixed
table window, as a scanner's topogram length and start position are part of the protocol: the scout's
pixels map to the same table millimetres on every patient, and the anatomy moves on it with the patient.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Protocol:
    id: str
    name: str
    region: str  # body region for the effective-dose k factor
    kv: int
    mas: float  # per rotation (reference mAs when modulation is on)
    pitch: float
    rotation_s: float
    collimation_mm: float  # total beam width N x T
    slice_mm: float
    fov_mm: float
    default_start_mm: float  # top (superior) edge of the default range, table mm
    default_end_mm: float  # bottom (inferior) edge
    contrast: bool = False
    scout_top_mm: float = 200.0  # the scout's table window (top, bottom), table mm
    scout_bottom_mm: float = -450.0

    def to_dict(self) -> dict:
        return asdict(self)


PROTOCOLS: tuple[Protocol, ...] = (
    # scout windows: the organ's cohort extent at the widest seeded craniocaudal offset (+-120 mm; the chest,
    # renal and KUB cards +-250 mm and a breath-hold moving the lung bases and kidneys +-25 mm), plus the oracle's
    # largest accepted margin and some room (the KUB window, 1 m, is within a scanner's topogram lengths)
    Protocol("chest_routine", "Routine chest", "chest", 120, 110, 1.0, 0.5, 40.0, 5.0, 400, 20, -300,
             scout_top_mm=350.0, scout_bottom_mm=-620.0),
    Protocol("abdomen_liver", "Liver (abdomen)", "abdomen", 120, 150, 0.9, 0.5, 40.0, 5.0, 400, -120, -380,
             scout_top_mm=80.0, scout_bottom_mm=-520.0),
    Protocol("renal", "Renal", "abdomen", 120, 150, 0.9, 0.5, 40.0, 5.0, 380, -230, -420,
             scout_top_mm=160.0, scout_bottom_mm=-720.0),
    Protocol("ccta", "Coronary CTA", "chest", 100, 220, 0.25, 0.28, 40.0, 0.75, 220, -20, -170, True,
             scout_top_mm=160.0, scout_bottom_mm=-360.0),
    Protocol("kub_low_dose", "Low-dose KUB", "abdomen", 120, 120, 1.0, 0.5, 40.0, 5.0, 380, -230, -600,
             scout_top_mm=130.0, scout_bottom_mm=-870.0),
)


def get_protocol(pid: str) -> Protocol:
    for p in PROTOCOLS:
        if p.id == pid:
            return p
    raise KeyError(f"unknown CT protocol {pid!r}; known: {[p.id for p in PROTOCOLS]}")
