"""Small vector helpers the hand-built MR planning states share (unit vectors, turns about an axis)."""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation


def unit(a: Any) -> np.ndarray:
    """`a` scaled to length 1."""
    a = np.asarray(a, float)
    return a / np.linalg.norm(a)


def turned(vec: Any, axis: Any, deg: float) -> np.ndarray:
    """`vec` turned right-handed about `axis` by `deg` degrees."""
    return Rotation.from_rotvec(np.radians(deg) * unit(axis)).apply(np.asarray(vec, float))
