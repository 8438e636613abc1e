"""Deterministic random generators named by their purpose, stable across processes and machines."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np


def seeded_rng(*parts: Any) -> np.random.Generator:
    """A generator from sha256 of the joined parts, e.g. seeded_rng(task, subject, seed, "scout")."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))
