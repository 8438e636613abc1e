"""Framebuffer capture with mss (XGetImage on the root window; the cursor is never included)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

try:
    from mss import MSS as _MSS  # mss >= 10
except ImportError:  # pragma: no cover
    from mss import mss as _MSS


class ScreenCapture:
    """Grabs the whole screen of one X display."""

    def __init__(self, display_name: str) -> None:
        self._sct = _MSS(display=display_name)
        self.monitor = self._sct.monitors[0]

    def grab_rgb(self) -> np.ndarray:
        shot = self._sct.grab(self.monitor)
        return np.frombuffer(shot.rgb, dtype=np.uint8).reshape(shot.height, shot.width, 3)

    def close(self) -> None:
        self._sct.close()


def encode_png(rgb: np.ndarray, compress_level: int = 3) -> bytes:
    """PNG bytes; deterministic for identical pixels (no timestamps or text chunks)."""
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", compress_level=compress_level)
    return buf.getvalue()
