"""Planning graphics as plain data (no Qt/VTK): lines, boxes, handles and labels in image-plane mm.

Image-plane coordinates: u grows to the screen's right, v grows up. Each viewport maps (u, v)
to pixels; models produce overlays, viewports draw them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

Color = tuple[float, float, float]

YELLOW: Color = (1.0, 0.85, 0.2)
CYAN: Color = (0.3, 0.85, 1.0)
GREEN: Color = (0.35, 0.9, 0.45)
RED: Color = (1.0, 0.35, 0.3)
WHITE: Color = (0.95, 0.95, 0.95)
ORANGE: Color = (1.0, 0.6, 0.2)


@dataclass(frozen=True)
class Line:
    name: str
    u0: float
    v0: float
    u1: float
    v1: float
    color: Color = YELLOW
    width: float = 2.0
    dashed: bool = False


@dataclass(frozen=True)
class Box:
    """Axis-aligned rectangle, optionally with a translucent fill."""

    name: str
    u0: float
    v0: float
    u1: float
    v1: float
    color: Color = YELLOW
    width: float = 2.0
    fill_opacity: float = 0.0


@dataclass(frozen=True)
class Handle:
    """A square grip the user drags; `size_px` is its on-screen size."""

    name: str
    u: float
    v: float
    color: Color = YELLOW
    size_px: int = 12


@dataclass(frozen=True)
class Label:
    name: str
    u: float
    v: float
    text: str
    color: Color = WHITE
    size_px: int = 14
    align: str = "left"  # left | center | right
    screen_anchored: bool = False  # if True, (u, v) are pixel offsets from the viewport's top-left
    background: bool = True


@dataclass
class OverlaySet:
    """Everything drawn over one viewport's image."""

    items: list = field(default_factory=list)

    def add(self, item) -> None:
        self.items.append(item)

    def handles(self) -> list[Handle]:
        return [i for i in self.items if isinstance(i, Handle)]
