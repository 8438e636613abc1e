"""Image sizes the models expect: Qwen's smart_resize, and PNG resampling to that size.

smart_resize follows the published rule of the Qwen2-VL / Qwen2.5-VL / Qwen3-VL image processors
(qwen-vl-utils): both sides are rounded to a multiple of `factor` (28 = 14 px patches x 2 merge for
Qwen2.5-VL and the models built on it, 32 = 16 x 2 for Qwen3-VL), then scaled together, keeping the
aspect ratio, until the pixel count lies in [min_pixels, max_pixels]. The adapters resize the
screenshot to this size themselves, so the server's own resize is the identity and the model's
coordinate space is known here exactly.
"""
from __future__ import annotations

import io
import math

import numpy as np

MAX_ASPECT_RATIO = 200  # the processors refuse more elongated images


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """(height, width) of the image the model sees for a height x width input."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > MAX_ASPECT_RATIO:
        raise ValueError(f"aspect ratio of {width}x{height} exceeds {MAX_ASPECT_RATIO}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def resize_png(png: bytes, size: tuple[int, int]) -> bytes:
    """The PNG resampled (bicubic, as the Qwen processors do) to size = (width, height).

    The same input gives the same bytes (the runner's own encoder), so cache keys stay stable;
    an image already at `size` is returned unchanged.
    """
    if png_size(png) == tuple(size):
        return png
    from PIL import Image

    from runner.capture import encode_png

    with Image.open(io.BytesIO(png)) as im:
        rgb = im.convert("RGB").resize(tuple(size), Image.Resampling.BICUBIC)
        return encode_png(np.asarray(rgb))


def fit_size(size: tuple[int, int], max_long_edge: int, max_pixels: int, *, upscale: bool = False
             ) -> tuple[int, int]:
    """(width, height) scaled, aspect kept, to the largest size whose long edge is <= max_long_edge and
    whose pixel count is <= max_pixels (each side floored, at least 1). Without `upscale` a size already
    inside both is returned as is (the vendors' computer-use rule for screenshots: Anthropic 1568 px and
    ~1.15 MP); with it a smaller size is scaled up to fill the budget (a zoomed region)."""
    w, h = size
    if w <= 0 or h <= 0:
        raise ValueError(f"image size must be positive, got {w}x{h}")
    scale = min(max_long_edge / max(w, h), math.sqrt(max_pixels / (w * h)))
    if not upscale:
        scale = min(1.0, scale)
    if scale == 1.0:
        return w, h
    return max(1, int(w * scale)), max(1, int(h * scale))


def crop_png(png: bytes, box: tuple[int, int, int, int], size: tuple[int, int] | None = None) -> bytes:
    """The region box = (x0, y0, x1, y1) (pixels, x1/y1 exclusive) of a PNG, resampled to `size`
    (bicubic) when given; the runner's own encoder, so the same input gives the same bytes."""
    from PIL import Image

    from runner.capture import encode_png

    with Image.open(io.BytesIO(png)) as im:
        region = im.convert("RGB").crop(box)
        if size is not None and tuple(size) != region.size:
            region = region.resize(tuple(size), Image.Resampling.BICUBIC)
        return encode_png(np.asarray(region))
