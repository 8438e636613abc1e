"""Coverage geometry shared by the CT (and later MR) oracles; numpy only."""
from __future__ import annotations

import numpy as np


def coverage_fraction(organ_z: np.ndarray, z_lo: float, z_hi: float) -> float:
    """Share of an organ's voxels whose centre z lies inside [z_lo, z_hi]."""
    if organ_z.size == 0:
        raise ValueError("organ has no voxels")
    lo, hi = min(z_lo, z_hi), max(z_lo, z_hi)
    return float(np.count_nonzero((organ_z >= lo) & (organ_z <= hi)) / organ_z.size)


def union_coverage_fraction(organ_z: np.ndarray, intervals: list[tuple[float, float]]) -> float:
    """Share of voxels inside at least one of the intervals (exam history union)."""
    if organ_z.size == 0:
        raise ValueError("organ has no voxels")
    inside = np.zeros(organ_z.shape, bool)
    for a, b in intervals:
        lo, hi = min(a, b), max(a, b)
        inside |= (organ_z >= lo) & (organ_z <= hi)
    return float(np.count_nonzero(inside) / organ_z.size)


def excess_mm(organ_zmin: float, organ_zmax: float, z_lo: float, z_hi: float) -> tuple[float, float]:
    """Scanned length beyond the organ at the top and the bottom (mm, >= 0)."""
    lo, hi = min(z_lo, z_hi), max(z_lo, z_hi)
    return max(0.0, hi - organ_zmax), max(0.0, organ_zmin - lo)
