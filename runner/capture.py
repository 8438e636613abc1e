"""Framebuffer capture with mss (XGetImage on the root window; the cursor is never included) and PNG encoding.

Capture: mss hands over the raw BGRX bytes; the RGB image is made by three strided numpy copies (0.8 ms
for 1280x800 here) instead of mss's own `ScreenShot.rgb` (bytearray slicing, 2.6 ms), same pixels.

Encoding: the PNG is written here from two library calls, because no packaged PNG encoder offers the
fast path: the Up filter on every row is one numpy subtraction (0.2 ms for 1280x800), and the filtered rows
are deflated by imagecodecs' zlib-ng (level 1, PNG_LEVEL) into the one IDAT chunk; the IHDR / IDAT / IEND
chunks and their CRCs are the PNG container (RFC 2083), nothing more. At level 2 that is already about
twice as fast as imagecodecs' libpng with the same filter and level on the system zlib (a UI screen 1.3
vs 4.7 ms, a CT scout screen 4.2 vs 8.6 ms, an MR 2x2 screen 7.3 vs 13.4 ms; bench/bench_encode.py), with
files from 9 % smaller to 9 % larger; level 1 halves it again (see PNG_LEVEL). Pillow spends ~9 ms on
its adaptive per-row filter choice alone.
Lossless 8-bit RGB, no timestamps or text chunks: the bytes depend only on the pixels and on the zlib-ng
that the locked imagecodecs wheel bundles (`zlib_ng` in the fingerprint, runner/fingerprint.py), not on
the machine's zlib. zlib-ng does not promise the same bytes on another CPU architecture (x86-64 vs
aarch64); the doctor tells such an encoder-only difference from a rendering one by the decoded pixels.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

try:
    from mss import MSS as _MSS  # mss >= 10
except ImportError:  # pragma: no cover
    from mss import mss as _MSS

# zlib-ng level 1: half the time of level 2 for files 20-35 % larger (bench/bench_encode.py: a UI screen
# 0.9 vs 1.8 ms and 96 vs 71 KiB, a CT scout screen 2.2 vs 4.5 ms and 246 vs 199 KiB, an MR 2x2 screen 4.5 vs
# 8.2 ms and 564 vs 471 KiB). The PNG is on every step's critical path; level 3 is 10-20 % slower than 2.
PNG_LEVEL = 1
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_FILTER_UP = 2  # the filter-type byte that starts each row (PNG filter method 0, type 2: Up)


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


def _chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def up_filtered_rows(rgb: np.ndarray) -> np.ndarray:
    """(H, 1 + 3W) uint8: each row's filter byte (Up) and its bytes minus the row above's (mod 256)."""
    h, w = rgb.shape[:2]
    rows = rgb.reshape(h, w * 3)
    out = np.empty((h, w * 3 + 1), dtype=np.uint8)
    out[:, 0] = PNG_FILTER_UP
    out[0, 1:] = rows[0]  # the row above the first one is zero
    np.subtract(rows[1:], rows[:-1], out=out[1:, 1:])
    return out


def encode_png(rgb: np.ndarray, compress_level: int | None = None) -> bytes:
    """Lossless PNG bytes of an (H, W, 3) uint8 image; identical pixels give identical bytes.

    `compress_level` is the zlib-ng level (default PNG_LEVEL); rows always use the Up filter.
    """
    import imagecodecs

    data = np.ascontiguousarray(rgb, dtype=np.uint8)
    if data.ndim != 3 or data.shape[2] != 3 or 0 in data.shape:
        raise ValueError(f"encode_png takes an (H, W, 3) uint8 RGB image, not shape {data.shape}")
    level = PNG_LEVEL if compress_level is None else int(compress_level)
    h, w = data.shape[:2]
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit truecolour, deflate, filter method 0, no interlace
    idat = bytes(imagecodecs.zlibng_encode(up_filtered_rows(data), level=level))
    return PNG_SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def encoder_versions() -> dict[str, str]:
    """What the PNG bytes depend on besides the pixels: imagecodecs, the zlib-ng it bundles and the
    deflate level (so that results encoded at another level say why their bytes differ)."""
    import imagecodecs

    return {"imagecodecs": imagecodecs.__version__,
            "zlib_ng": str(imagecodecs.zlibng_version()).removeprefix("zlib_ng").strip(),
            "png_level": str(PNG_LEVEL)}
