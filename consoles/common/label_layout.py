"""Where an overlay label goes so it never covers what it labels (pure: no Qt, no VTK).

A label has candidate places (beside its line, above or below it, in the margin), tried in order: the first that
stays inside the viewport, clear of the places already taken (ruler numbers, titles, other labels) and clear of the
body on the image (a mask of body pixels) wins; when none is, the one covering the fewest body pixels. Boxes are
widget pixels (x right, y down). Text widths are the pinned font's advances (DejaVu Sans, the file
consoles.common.determinism pins for VTK's text): overlay text is drawn at its point size in pixels.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # determinism.FONT_FILE_CANDIDATES[0]
WIDE_EM = 0.72  # per character without the font file: wider than DejaVu Sans' capitals and digits (~0.64-0.70 em)
PAD_PX = 2.0  # a label's background reaches a little beyond its glyphs


@dataclass(frozen=True)
class PxBox:
    """A widget-pixel rectangle [x0, x1) x [y0, y1)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def intersects(self, other: "PxBox") -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def inside(self, width: float, height: float) -> bool:
        return self.x0 >= 0 and self.y0 >= 0 and self.x1 <= width and self.y1 <= height


@functools.lru_cache(maxsize=8)
def _font(size_px: int):
    try:
        from PIL import ImageFont

        return ImageFont.truetype(FONT_FILE, size_px)
    except (ImportError, OSError):
        return None


def text_width_px(text: str, size_px: int) -> float:
    """The drawn width of `text` at `size_px` (the widest line of a multi-line text)."""
    font = _font(int(size_px))
    lines = text.split("\n")
    if font is None:
        return max(len(t) for t in lines) * WIDE_EM * size_px
    return max(float(font.getlength(t)) for t in lines)


def text_box(x: float, y: float, text: str, size_px: int, align: str = "left", valign: str = "center") -> PxBox:
    """The box of `text` drawn at widget pixel (x, y) with a label's alignment (its background included)."""
    w = text_width_px(text, size_px) + 2 * PAD_PX
    h = size_px * 1.25 * (text.count("\n") + 1) + 2 * PAD_PX
    x0 = {"left": x - PAD_PX, "center": x - w / 2, "right": x - w + PAD_PX}[align]
    y0 = {"top": y, "center": y - h / 2, "bottom": y - h}[valign]
    return PxBox(x0, y0, x0 + w, y0 + h)


@dataclass(frozen=True)
class Spot:
    """One candidate place of a label: its anchor in widget pixels and alignment."""

    x: float
    y: float
    align: str = "left"
    valign: str = "center"


BodyCover = Callable[[PxBox], int]  # how many body pixels a box covers


def place(text: str, size_px: int, spots: Sequence[Spot], width: float, height: float,
          taken: Sequence[PxBox] = (), body: BodyCover | None = None) -> tuple[Spot, PxBox]:
    """The first of `spots` whose box is inside the viewport, clear of `taken` and of the body; else the spot inside
    the viewport and clear of `taken` covering the fewest body pixels (else the first spot)."""
    if not spots:
        raise ValueError(f"label {text!r}: no candidate spot")
    best: tuple[int, int, Spot, PxBox] | None = None
    for order, s in enumerate(spots):
        box = text_box(s.x, s.y, text, size_px, s.align, s.valign)
        if not box.inside(width, height) or any(box.intersects(t) for t in taken):
            continue
        cover = 0 if body is None else body(box)
        if cover == 0:
            return s, box
        if best is None or cover < best[0]:
            best = (cover, order, s, box)
    if best is not None:
        return best[2], best[3]
    s = spots[0]
    return s, text_box(s.x, s.y, text, size_px, s.align, s.valign)


def mask_cover(mask: np.ndarray, to_index: Callable[[float, float], tuple[float, float]]) -> BodyCover:
    """A BodyCover over a boolean image `mask` (rows, cols): `to_index(x, y)` maps a widget pixel to fractional
    (row, col) of the mask (linear in x and y); boxes are clipped to the mask."""
    n_rows, n_cols = mask.shape
    csum = np.zeros((n_rows + 1, n_cols + 1), np.int64)
    csum[1:, 1:] = np.cumsum(np.cumsum(mask, axis=0), axis=1)

    def cover(box: PxBox) -> int:
        r0, c0 = to_index(box.x0, box.y0)
        r1, c1 = to_index(box.x1, box.y1)
        ra, rb = sorted((r0, r1))
        ca, cb = sorted((c0, c1))
        ra, rb = max(0, int(np.floor(ra))), min(n_rows, int(np.ceil(rb)))
        ca, cb = max(0, int(np.floor(ca))), min(n_cols, int(np.ceil(cb)))
        if ra >= rb or ca >= cb:
            return 0
        return int(csum[rb, cb] - csum[ra, cb] - csum[rb, ca] + csum[ra, ca])

    return cover
