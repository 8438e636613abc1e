"""Oblique reslice of a subject volume: 256x256 pixels of 1 mm on a double-oblique plane (median ms).

    .venv/bin/python bench/bench_reslice.py [subject]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from rendering.geometry import PlanePose, ResliceGrid, reslice
from rendering.subjects import load_runtime


def median_ms(fn, n: int = 50) -> float:
    fn()  # warm caches
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))


def main(subject: str = "dev") -> None:
    s = load_runtime(subject)
    pose = PlanePose.from_normal((0.0, -100.0, 0.0), (0.3, 0.2, 0.9), 20.0)  # "T > S 18.4 > C 11.9"
    grid = ResliceGrid.centred(pose, 256.0, 1.0)
    hu = s.ct_hu_lut()[s.labels]  # a float32 intensity volume of the same size
    lut = s.ct_hu_lut()
    print(f"subject {s.id}: volume {s.shape} (z, y, x), {s.spacing_mm[0]} mm voxels; 256x256 oblique reslice")
    print(f"  labels, nearest            {median_ms(lambda: reslice(s.labels, s.origin_mm, s.spacing_mm, grid, order=0)):6.2f} ms")
    print(f"  labels, nearest + LUT      "
          f"{median_ms(lambda: lut[reslice(s.labels, s.origin_mm, s.spacing_mm, grid, order=0)]):6.2f} ms")
    print(f"  float32 intensity, linear  {median_ms(lambda: reslice(hu, s.origin_mm, s.spacing_mm, grid, order=1)):6.2f} ms")


if __name__ == "__main__":
    main(*sys.argv[1:])
