"""Reading screen text back with Tesseract (Debian's tesseract-ocr through pytesseract).

Console text is small (13 px) light-on-dark; Tesseract reads dark text on light at about 30 px
best, so crops are inverted where dark, stretched to full contrast, scaled 3x with Lanczos and
given a white margin. A field's frame (1 px border, 2 px padding) is cropped off first: Tesseract
reads a border next to a digit as '(' or '['. Tried on the CT fields: scale 3 with the frame
cropped read 54 of 54; without the crop 33 of 54.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator

import numpy as np
from PIL import Image, ImageOps

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def require_tesseract() -> None:
    """Tesseract must be installed (scripts/bootstrap.sh does it): a missing install step fails."""
    if shutil.which("tesseract") is None:
        raise AssertionError("tesseract is not installed: run scripts/bootstrap.sh (tesseract-ocr)")


FIELD_FRAME_PX = 3


def prepare(img: Image.Image, scale: int = 3) -> Image.Image:
    g = ImageOps.grayscale(img.convert("RGB"))
    a = np.asarray(g).astype(np.float64)
    if a.mean() < 128:
        a = 255.0 - a
    a = (a - a.min()) / max(1.0, float(a.max() - a.min())) * 255.0
    g = Image.fromarray(a.astype(np.uint8))
    g = g.resize((g.width * scale, g.height * scale), Image.Resampling.LANCZOS)
    return ImageOps.expand(g, border=24, fill=255)


READING_SCALES = (3, 4, 5)


# Readings by (pixels, layout, scale): a test grabs the same pixels many times (a field's disabled grab at its
# minimum equals another field's with the same range; the eight TGC pots share one), and every Tesseract call
# is a new process (~0.2 s). Tesseract is deterministic for the same input, so a repeat reads the same.
_READ_CACHE: dict[tuple[str, bool, int], str] = {}


def _pixels_key(img: Image.Image) -> str:
    rgb = img.convert("RGB")
    return hashlib.sha1(f"{rgb.size}".encode() + rgb.tobytes()).hexdigest()


def read_text(img: Image.Image, single_line: bool = True, scale: int = 3) -> str:
    """The text Tesseract reads in `img`, whitespace collapsed; the unicode minus read as '-'."""
    key = (_pixels_key(img), single_line, scale)
    if key not in _READ_CACHE:
        import pytesseract

        cfg = "--psm 7" if single_line else "--psm 6"
        text = pytesseract.image_to_string(prepare(img, scale), config=cfg)
        text = text.replace("\u2212", "-").replace("\u2014", "-").replace("\u2013", "-")
        _READ_CACHE[key] = " ".join(text.split())
    return _READ_CACHE[key]


def readings(img: Image.Image, single_line: bool = True) -> Iterator[str]:
    """What Tesseract reads at each of READING_SCALES (like a reader leaning closer). At 13 px it
    sometimes takes 's' after a digit for '5' at one scale and not at the next; blank or clipped
    text reads wrong at every scale, so 'one of these readings is exact' still rejects it."""
    return (read_text(img, single_line, s) for s in READING_SCALES)


def field_readings(img: Image.Image) -> Iterator[str]:
    """Readings of the value in a numeric field's grab or screen crop (frame included), without
    spaces: Tesseract's word gaps are not reliable at this size, the characters are."""
    f = FIELD_FRAME_PX
    inner = img.crop((f, f, img.width - f, img.height - f))
    return ("".join(r.split()) for r in readings(inner))


def first_reading(readings: Iterator[str], accept) -> tuple[bool, list[str]]:
    """Whether some reading is accepted (stopping at the first), and the readings taken, for the message."""
    taken: list[str] = []
    for r in readings:
        taken.append(r)
        if accept(r):
            return True, taken
    return False, taken


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text)
