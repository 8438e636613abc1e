"""CT protocol library (pure data): default acquisition parameters and default plan per protocol.

Default ranges are in table millimetres relative to the laser landmark (table z = 0 at the
jugular notch as positioned), i.e. where a radiographer would start before adapting to the scout.
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

    def to_dict(self) -> dict:
        return asdict(self)


PROTOCOLS: tuple[Protocol, ...] = (
    Protocol("chest_routine", "Routine chest", "chest", 120, 110, 1.0, 0.5, 40.0, 5.0, 400, 20, -300),
    Protocol("abdomen_liver", "Liver (abdomen)", "abdomen", 120, 150, 0.9, 0.5, 40.0, 5.0, 400, -120, -380),
    Protocol("renal", "Renal", "abdomen", 120, 150, 0.9, 0.5, 40.0, 5.0, 380, -230, -420),
    Protocol("ccta", "Coronary CTA", "chest", 100, 220, 0.25, 0.28, 40.0, 0.75, 220, -20, -170, True),
    Protocol("kub_low_dose", "Low-dose KUB", "abdomen", 120, 120, 1.0, 0.5, 40.0, 5.0, 380, -230, -600),
)


def get_protocol(pid: str) -> Protocol:
    for p in PROTOCOLS:
        if p.id == pid:
            return p
    raise KeyError(f"unknown CT protocol {pid!r}; known: {[p.id for p in PROTOCOLS]}")
