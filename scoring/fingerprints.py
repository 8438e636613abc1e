"""Comparing environment fingerprints (pure): which fields differ, which component they belong to, and the
distinct fingerprints of a result set for scores.json. The fingerprint itself is taken by
runner/fingerprint.py (runner side) and consoles/common/environment.py (console side).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable

# Which component a field belongs to, so a difference can be attributed.
# zlib_ng: imagecodecs' zlib-ng (the encoder now, and Pillow's before issue 14); libpng and png_zlib:
# imagecodecs' libpng on the system zlib (results written during issue 14); pillow, zlib: before it
ENCODER_FIELDS = ("imagecodecs", "libpng", "png_zlib", "pillow", "zlib", "zlib_ng", "png_level")
CAPTURE_FIELDS = ("mss",)
RENDER_FIELDS = ("python", "qt", "pyside6", "vtk", "numpy", "gl_vendor", "gl_renderer", "gl_version",
                 "fonts", "xvfb")


def flatten(fp: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts become 'key/subkey' fields ('fonts//usr/share/.../DejaVuSans.ttf')."""
    out: dict[str, Any] = {}
    for key, value in fp.items():
        if isinstance(value, dict):
            for sub, v in flatten(value).items():
                out[f"{key}/{sub}"] = v
        else:
            out[key] = value
    return out


def differing_fields(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{field: (value in a, value in b)} for every field whose value differs (absent -> None)."""
    fa, fb = flatten(a or {}), flatten(b or {})
    return {k: (fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)}


def component(field: str) -> str:
    """'encoder', 'capture', 'rendering' or 'other' for a (flattened) fingerprint field."""
    top = field.split("/", 1)[0]
    if top in ENCODER_FIELDS:
        return "encoder"
    if top in CAPTURE_FIELDS:
        return "capture"
    if top in RENDER_FIELDS:
        return "rendering"
    return "other"


def canonical(fp: dict[str, Any]) -> str:
    return json.dumps(fp, sort_keys=True, separators=(",", ":"))


def summarize(fingerprints: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Distinct fingerprints with episode counts, for scores.json's `environment` section.

    `None` stands for an episode without one (older runs, or no state dump); such episodes are
    counted apart. `homogeneous` is true when at most one distinct fingerprint was found, and
    `differing_fields` names what varies between the distinct ones.
    """
    counts: Counter[str] = Counter()
    without = 0
    for fp in fingerprints:
        if fp:
            counts[canonical(fp)] += 1
        else:
            without += 1
    distinct = [json.loads(key) for key, _ in counts.most_common()]
    varying: set[str] = set()
    for other in distinct[1:]:
        varying |= differing_fields(distinct[0], other).keys()
    return {
        "homogeneous": len(distinct) <= 1,
        "fingerprints": [{"episodes": counts[canonical(fp)], "fingerprint": fp} for fp in distinct],
        "episodes_without_fingerprint": without,
        "differing_fields": sorted(varying),
    }
