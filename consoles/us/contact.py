"""Probe coupling in the console (pure): which scan lines get their energy into the body besides the pose.

Two things decide a line's contact. The pose's pressure indents the skin (rendering.us_image: lines whose
air gap is deeper than the indentation carry nothing, so a lightly held convex probe loses its edges). And
the gel film: missing under part of the array (a dark wedge on that side) or under all of it (a dim sector
whose receiver noise still shows at depth), until the user applies gel; the line factors themselves live in
rendering.us_image (coupling_line_factors) so an oracle can re-form the image from the dump. Low gain, by
contrast, dims every line and the noise with it: the L6 task's two causes look different on purpose.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rendering.us_image import GEL_FAULTS, coupling_line_factors

CONTACT_FAULTS = ("lifted",) + GEL_FAULTS[1:]  # "lifted": the probe is held too lightly (low pressure)


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
        return coupling_line_factors(self.fault, self.fraction, n_lines)

    def to_dict(self) -> dict:
        return {"fault": self.fault, "fraction": round(float(self.fraction), 3), "ok": self.ok}
