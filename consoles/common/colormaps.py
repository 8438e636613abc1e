"""Colour maps as plain numpy tables (no Qt/VTK), built matplotlib-style from colour stops.

A viewport applies one through a vtkLookupTable whose range follows window/level, and labels its
colour bar with that range and the map's unit. The named maps are small, readable approximations
(viridis from 9 of its published samples), not copies of matplotlib's tables.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Stop = tuple[float, tuple[float, float, float]]


@dataclass(frozen=True, eq=False)
class ColorMap:
    """`table` is (n, 3) RGB in [0, 1] from the low end to the high end."""

    name: str
    table: np.ndarray
    unit: str = ""

    @classmethod
    def from_stops(cls, name: str, stops: list[Stop], n: int = 256, unit: str = "") -> "ColorMap":
        """Linear interpolation between (position in [0, 1], rgb) stops, like matplotlib's
        LinearSegmentedColormap.from_list."""
        pos = np.array([p for p, _ in stops], float)
        if pos[0] != 0.0 or pos[-1] != 1.0 or np.any(np.diff(pos) <= 0):
            raise ValueError(f"colour map {name!r}: stop positions must rise from 0 to 1")
        rgb = np.array([c for _, c in stops], float)
        x = np.linspace(0.0, 1.0, n)
        table = np.stack([np.interp(x, pos, rgb[:, i]) for i in range(3)], axis=1)
        return cls(name, table, unit)

    def rgba_bytes(self) -> np.ndarray:
        """(n, 4) uint8, opaque."""
        out = np.empty((len(self.table), 4), np.uint8)
        out[:, :3] = np.round(255 * np.clip(self.table, 0, 1))
        out[:, 3] = 255
        return out

    def map(self, values: np.ndarray, lo: float, hi: float) -> np.ndarray:
        """RGB (..., 3) of values windowed to [lo, hi] (what the viewport shows, for tests)."""
        t = np.clip((np.asarray(values, float) - lo) / max(1e-12, hi - lo), 0.0, 1.0)
        return self.table[np.round(t * (len(self.table) - 1)).astype(int)]


_STOPS: dict[str, list[Stop]] = {
    "gray": [(0.0, (0, 0, 0)), (1.0, (1, 1, 1))],
    "hot": [(0.0, (0, 0, 0)), (0.375, (1, 0, 0)), (0.75, (1, 1, 0)), (1.0, (1, 1, 1))],
    "viridis": [(0.0, (0.267, 0.005, 0.329)), (0.125, (0.279, 0.175, 0.483)), (0.25, (0.230, 0.322, 0.546)),
                (0.375, (0.173, 0.449, 0.558)), (0.5, (0.128, 0.567, 0.551)), (0.625, (0.153, 0.683, 0.502)),
                (0.75, (0.369, 0.789, 0.383)), (0.875, (0.678, 0.864, 0.190)), (1.0, (0.993, 0.906, 0.144))],
    "doppler": [(0.0, (0.2, 0.6, 1.0)), (0.45, (0.0, 0.0, 0.5)), (0.5, (0, 0, 0)), (0.55, (0.5, 0.0, 0.0)),
                (1.0, (1.0, 0.8, 0.2))],  # away from the probe blue, towards it red
}


def get_colormap(name: str, unit: str = "") -> ColorMap:
    """A named map: gray, hot, viridis, doppler."""
    if name not in _STOPS:
        raise KeyError(f"unknown colour map {name!r}; known: {sorted(_STOPS)}")
    return ColorMap.from_stops(name, _STOPS[name], unit=unit)
