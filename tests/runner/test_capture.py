"""Screenshot encoding (fast lane) and capture conversion (display lane): lossless and deterministic."""
from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from runner.capture import PNG_LEVEL, bgrx_to_rgb, encode_png, encoder_versions

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tasks" / "ct" / "ct_lung_coverage_isocenter" / "success.png"  # a shipped screenshot (scout + UI)


def _synthetic() -> np.ndarray:
    """Flat UI-like panels, a noisy gradient 'image' and every byte value in every channel."""
    rng = np.random.default_rng(7)
    img = np.full((800, 1280, 3), (32, 36, 42), np.uint8)
    img[40:90, 10:300] = (60, 120, 200)
    yy, xx = np.mgrid[0:700, 0:560]
    img[80:780, 320:880] = ((yy + xx) % 256)[..., None].astype(np.uint8)
    img[80:780, 900:1270] = rng.integers(0, 256, (700, 370, 3), dtype=np.uint8)
    img[0, :256] = np.arange(256, dtype=np.uint8)[:, None]
    return img


def _real() -> np.ndarray:
    with Image.open(REAL) as im:
        return np.asarray(im.convert("RGB"))


def _decode(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG" and im.mode == "RGB"
        return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize("make", [_synthetic, _real], ids=["synthetic", "real"])
def test_encode_is_lossless_and_deterministic_in_process(make):
    img = make()
    a, b = encode_png(img), encode_png(img.copy())
    assert a == b
    assert np.array_equal(_decode(a), img)
    import imagecodecs  # a second decoder: libpng checks every chunk's CRC and the zlib stream's Adler-32

    assert np.array_equal(imagecodecs.png_decode(a), img)
    changed = img.copy()
    changed[400, 640, 1] ^= 1  # one bit in one pixel: the test can fail
    assert encode_png(changed) != a and np.array_equal(_decode(encode_png(changed)), changed)


def test_encode_is_byte_identical_in_another_process(tmp_path):
    imgs = {"synthetic": _synthetic(), "real": _real()}
    for name, img in imgs.items():
        np.save(tmp_path / f"{name}.npy", img)
    code = ("import sys, hashlib, numpy as np; from runner.capture import encode_png; "
            "print(' '.join(hashlib.sha256(encode_png(np.load(p))).hexdigest() for p in sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, *(str(tmp_path / f"{n}.npy") for n in imgs)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    here = [hashlib.sha256(encode_png(img)).hexdigest() for img in imgs.values()]
    assert r.stdout.split() == here


def test_encode_accepts_a_non_contiguous_view_and_explicit_level():
    img = _synthetic()
    view = np.ascontiguousarray(np.dstack([img, img[..., :1]]))[..., :3]  # strided, like a BGRX slice
    assert not view.flags.c_contiguous
    assert encode_png(view) == encode_png(img)
    assert np.array_equal(_decode(encode_png(img, 6)), img)


@pytest.mark.parametrize("bad", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 4), np.uint8), np.zeros((0, 4, 3), np.uint8)])
def test_encode_names_a_wrong_shape(bad):
    with pytest.raises(ValueError, match=r"\(H, W, 3\) uint8 RGB image, not shape"):
        encode_png(bad)


def test_encoder_versions_are_recorded():
    v = encoder_versions()
    assert set(v) == {"imagecodecs", "zlib_ng", "png_level"} and all(v.values())
    assert v["png_level"] == str(PNG_LEVEL)
    assert v["zlib_ng"][0].isdigit()


def test_bgrx_conversion_equals_channel_swap():
    rng = np.random.default_rng(3)
    bgrx = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    rgb = bgrx_to_rgb(bytearray(bgrx.tobytes()), 5, 7)
    assert rgb.flags.c_contiguous and rgb.shape == (5, 7, 3)
    assert np.array_equal(rgb, bgrx[..., [2, 1, 0]])


@pytest.mark.display
def test_capture_conversion_equals_mss_conversion_on_a_real_grab(display):
    from mss.screenshot import ScreenShot

    from runner.capture import ScreenCapture
    from runner.console_process import ConsoleProcess
    from tests.conftest import require_console

    require_console()
    with ConsoleProcess(display, "ct", "ct_lung_coverage_isocenter", "dev", 0):
        cap = ScreenCapture(display.name)
        try:
            shot = cap.grab_raw()
            old = np.frombuffer(ScreenShot(shot.raw, cap.monitor).rgb, np.uint8).reshape(shot.height, shot.width, 3)
            new = bgrx_to_rgb(shot.raw, shot.height, shot.width)
            assert new.shape == (800, 1280, 3) and len(np.unique(new.reshape(-1, 3), axis=0)) > 50  # a real screen
            assert np.array_equal(new, old)
            assert np.array_equal(cap.grab_rgb(), new)  # nothing moved: the screen is the same
        finally:
            cap.close()
