"""Framebuffer capture with mss (XGetImage on the root window; the cursor is never included) and PNG encoding.

Capture: mss hands over the raw BGRX bytes; the RGB image is made by three strided numpy copies (0.8 ms
for 1280x800 here) instead of mss's own `ScreenShot.rgb` (bytearray slicing, 2.6 ms), same pixels.

Encoding: imagecodecs' libpng with the Up filter on every row and zlib level 2 (default strategy). On
this project's screenshots that is about 3x faster than Pillow at level 3 (4.4 vs 12.7 ms for a UI
screen, 10.5 vs 28 ms for a scout screen; Pillow's adaptive per-row filter choice alone costs ~9 ms)
and files are 1-5 % larger; lossless, and the bytes depend only on the pixels and on the libpng and
zlib versions (no timestamps or text chunks). imagecodecs' libpng links the system zlib (Debian 12:
1.2.13), so `png_zlib` in the fingerprint (runner/fingerprint.py) is that one.
"""
from __future__ import annotations

import numpy as np

try:
    from mss import MSS as _MSS  # mss >= 10
except ImportError:  # pragma: no cover
    from mss import mss as _MSS

PNG_LEVEL = 2  # zlib level: as fast as 1 with the Up filter and smaller; 3 is 40 % slower on scouts (bench/bench_encode.py)
PNG_FILTER_UP = 32  # libpng's PNG_FILTER_UP (imagecodecs.PNG.FILTER.UP)
PNG_STRATEGY_DEFAULT = 0  # zlib Z_DEFAULT_STRATEGY


def bgrx_to_rgb(raw, height: int, width: int) -> np.ndarray:
    """(H, W, 3) uint8 RGB from a BGRX/BGRA buffer of H*W*4 bytes (a new contiguous array)."""
    src = np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 4)
    rgb = np.empty((height, width, 3), dtype=np.uint8)
    rgb[..., 0] = src[..., 2]
    rgb[..., 1] = src[..., 1]
    rgb[..., 2] = src[..., 0]
    return rgb


class ScreenCapture:
    """Grabs the whole screen of one X display."""

    def __init__(self, display_name: str) -> None:
        self._sct = _MSS(display=display_name)
        self.monitor = self._sct.monitors[0]

    def grab_raw(self):
        """The raw mss screenshot (BGRX bytes in `.raw`), without colour conversion."""
        return self._sct.grab(self.monitor)

    def grab_rgb(self) -> np.ndarray:
        """The screen now as a new (H, W, 3) uint8 RGB array."""
        shot = self._sct.grab(self.monitor)
        return bgrx_to_rgb(shot.raw, shot.height, shot.width)

    def close(self) -> None:
        self._sct.close()


def encode_png(rgb: np.ndarray, compress_level: int | None = None) -> bytes:
    """Lossless PNG bytes of an (H, W, 3) uint8 image; identical pixels give identical bytes.

    `compress_level` is the zlib level (default PNG_LEVEL); rows always use the Up filter.
    """
    import imagecodecs

    level = PNG_LEVEL if compress_level is None else int(compress_level)
    data = np.ascontiguousarray(rgb, dtype=np.uint8)
    return bytes(imagecodecs.png_encode(data, level=level, strategy=PNG_STRATEGY_DEFAULT, filter=PNG_FILTER_UP))


def encoder_versions() -> dict[str, str]:
    """What the PNG bytes depend on: imagecodecs, its libpng, and the zlib that libpng uses."""
    import imagecodecs

    return {"imagecodecs": imagecodecs.__version__,
            "libpng": imagecodecs.png_version().removeprefix("libpng ").strip(),
            "png_zlib": imagecodecs.zlib_version().removeprefix("zlib ").strip()}
