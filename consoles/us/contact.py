"""Probe coupling (pure): which scan lines get their energy into the body besides the pose's own geometry.

Two things decide a line's contact. The pose's pressure indents the skin (rendering.us_image: lines whose
air gap is deeper than the indentation carry nothing, so a lightly held convex probe loses its edges). And
the gel film modelled here: missing gel under part of the array (a dark wedge on that side) or under all of
it (a dim sector whose receiver noise still shows at depth), until the user applies gel. Low gain, by
contrast, dims every line and the noise with it: the L6 task's two causes look different on purpose.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GEL_FAULTS = ("none", "no_gel_left", "no_gel_right", "no_gel")
CONTACT_FAULTS = ("lifted",) + GEL_FAULTS[1:]  # "lifted": the probe is held too lightly (low pressure)
DRY_LINE_FACTOR = 0.0  # an air film reflects everything (Z 0.0004 MRayl vs skin 1.99, physics.md)
DRY_ALL_FACTOR = 0.06  # a dry probe still couples through a few wet spots: a dim sector, not a black one
EDGE_LINES = 6  # the dry patch's edge is soft over a few lines (a film thinning out)


@dataclass
class Coupling:
    """The gel film under the array: `fault` one of GEL_FAULTS; `fraction` of the lines dry for one-sided
    faults (counted from that edge of the screen)."""

    fault: str = "none"
    fraction: float = 0.4

    def __post_init__(self) -> None:
        if self.fault not in GEL_FAULTS:
            raise ValueError(f"unknown coupling fault {self.fault!r}; expected one of {GEL_FAULTS}")

    @property
    def ok(self) -> bool:
        return self.fault == "none"

    def line_factors(self, n_lines: int) -> np.ndarray:
        """Transmitted amplitude factor per scan line, screen left to right."""
        f = np.ones(n_lines)
        if self.fault == "no_gel":
            f[:] = DRY_ALL_FACTOR
        elif self.fault in ("no_gel_left", "no_gel_right"):
            k = int(round(np.clip(self.fraction, 0.0, 1.0) * n_lines))
            ramp = np.clip((np.arange(n_lines) - k) / EDGE_LINES + 0.5, 0.0, 1.0)
            f = DRY_LINE_FACTOR + (1.0 - DRY_LINE_FACTOR) * ramp
            if self.fault == "no_gel_right":
                f = f[::-1]
        return f

    def to_dict(self) -> dict:
        return {"fault": self.fault, "fraction": round(float(self.fraction), 3), "ok": self.ok}
