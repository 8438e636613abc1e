"""PNG encoders on real screenshots: median ms, size, lossless, byte-identical on a second encode.

    .venv/bin/python bench/bench_encode.py [PNG ...]   # default: the shipped start/success screens of CT tasks

Compares the runner's encoder (runner/capture.py: Up filter in numpy, imagecodecs' zlib-ng at PNG_LEVEL, 1)
with its levels 2 and 3, imagecodecs' libpng (filter Up, level 2: the encoder before those), Pillow at levels
0-3 and, when importable, OpenCV.
"""
from __future__ import annotations

import io
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.capture import PNG_LEVEL, encode_png  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "tasks/ct/ct_ui_smoke_routine/start.png", ROOT / "tasks/ct/ct_lung_coverage_isocenter/success.png",
           ROOT / "tasks/mr/mr_t1t2_mapping_staged/success.png"]


def _pillow(level: int) -> Callable[[np.ndarray], bytes]:
    def enc(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        Image.fromarray(a, "RGB").save(buf, format="PNG", compress_level=level)
        return buf.getvalue()
    return enc


def encoders() -> dict[str, Callable[[np.ndarray], bytes]]:
    out = {f"runner (zlib-ng up l{PNG_LEVEL})": encode_png}
    out.update({f"runner at l{k}": (lambda a, k=k: encode_png(a, k)) for k in (1, 2, 3) if k != PNG_LEVEL})
    out.update({f"pillow l{k}": _pillow(k) for k in (3, 1, 0)})
    try:
        import imagecodecs

        out["imagecodecs libpng up l2"] = lambda a: bytes(imagecodecs.png_encode(a, level=2, strategy=0, filter=32))
        out["imagecodecs libpng adapt l1"] = lambda a: bytes(imagecodecs.png_encode(a, level=1))
    except ImportError:
        pass
    try:
        import cv2

        out["opencv l1"] = lambda a: cv2.imencode(".png", np.ascontiguousarray(a[..., ::-1]),
                                                  [cv2.IMWRITE_PNG_COMPRESSION, 1])[1].tobytes()
    except ImportError:
        pass
    return out


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or DEFAULT
    imgs = {p.parent.name + "/" + p.name: np.asarray(Image.open(p).convert("RGB")) for p in paths}
    print(f"{'encoder':28s} " + "  ".join(f"{n[-34:]:>34s}" for n in imgs))
    for name, enc in encoders().items():
        cells = []
        for img in imgs.values():
            first = enc(img)
            ts = []
            for _ in range(15):
                t0 = time.perf_counter()
                data = enc(img)
                ts.append((time.perf_counter() - t0) * 1e3)
            lossless = np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), img)
            same = data == first
            cells.append(f"{statistics.median(ts):6.2f} ms {len(data) / 1024:7.1f} KiB {'ok' if lossless and same else 'BAD'}")
        print(f"{name:28s} " + "  ".join(f"{c:>34s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
