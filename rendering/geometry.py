"""Acquisition geometry shared by consoles, oracles and solvers (pure numpy: no Qt, no VTK).

One place for the frames an acquisition is described in, so the console that acquires, the
oracle that scores and the solver that plans can never disagree:

- the CT table frame: table z = subject z - laser z + patient shift; the isocentre lies at
  subject y = table height - iso height (subject frame: y = 0 at the table top, body at y < 0);
- helical timing: table feed = pitch x collimation / rotation time; the table reaches a z
  position (start - z) / feed seconds after the scan starts.

Plane poses, oblique reslicing and plane/box intersections for MR planning and ultrasound are
added here too (see the foundation issue), never re-derived in a console or an oracle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

MIN_HELICAL_SECONDS = 0.5


@dataclass(frozen=True)
class TableFrame:
    """Where the subject lies on the CT table (all millimetres)."""

    laser_z_subject_mm: float = 0.0  # subject z where the positioning laser was set (jugular notch)
    patient_shift_mm: float = 0.0  # seeded positioning error along the table
    iso_height_mm: float = 270.0  # isocentre above the lowest table position

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "TableFrame":
        """The frame a CT state dump records under "frame"."""
        f = state["frame"]
        return cls(float(f["laser_z_subject_mm"]), float(f["patient_shift_mm"]), float(f["iso_height_mm"]))

    def table_z(self, subject_z: float | np.ndarray) -> float | np.ndarray:
        return subject_z - self.laser_z_subject_mm + self.patient_shift_mm

    def subject_z(self, table_z: float | np.ndarray) -> float | np.ndarray:
        return table_z + self.laser_z_subject_mm - self.patient_shift_mm

    def y_iso_subject(self, table_height_mm: float) -> float:
        """Subject y of the gantry isocentre at this table height."""
        return table_height_mm - self.iso_height_mm

    def table_height_for(self, y_iso_subject: float) -> float:
        """Table height that puts the isocentre at this subject y."""
        return y_iso_subject + self.iso_height_mm

    def to_dict(self) -> dict[str, float]:
        return {"laser_z_subject_mm": self.laser_z_subject_mm, "patient_shift_mm": self.patient_shift_mm,
                "iso_height_mm": self.iso_height_mm}


def table_feed_mm_s(pitch: float, collimation_mm: float, rotation_s: float) -> float:
    """Helical table feed in mm per second."""
    return pitch * collimation_mm / rotation_s


def helical_duration_s(length_mm: float, pitch: float, collimation_mm: float, rotation_s: float) -> float:
    """Helical acquisition time for a range of this length (never below MIN_HELICAL_SECONDS)."""
    return max(MIN_HELICAL_SECONDS, length_mm / table_feed_mm_s(pitch, collimation_mm, rotation_s))


def helical_time_at(table_z_mm: float, start_mm: float, t_start_s: float, pitch: float, collimation_mm: float,
                    rotation_s: float) -> float:
    """Simulated time at which a helical scan from `start_mm` (moving inferiorly) reaches `table_z_mm`."""
    return t_start_s + (start_mm - table_z_mm) / table_feed_mm_s(pitch, collimation_mm, rotation_s)
