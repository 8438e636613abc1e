"""requirements.lock: read its pins and compare them with what is installed (no Qt, no VTK).

The lock is the `uv pip compile --generate-hashes` output at the repository root; scripts/bootstrap.sh
installs exactly it into .venv. These helpers let a command (e.g. `medimageos doctor`) tell whether the
running environment still is that lock.
"""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

# `name==version`, optionally with extras, followed by ` \` (hashes on the next lines) or `; marker`.
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;\\]+)")

PROJECT = "medimageosworld"


def normalize(name: str) -> str:
    """PEP 503 normalized project name: lower case, runs of '-', '_', '.' become one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: str | Path) -> dict[str, str]:
    """Normalized package name -> pinned version, for every `name==version` line of a requirements lock.

    Comments, `--hash=...` continuation lines, options (`-e`, `--index-url`, ...) and blank lines are
    skipped. A line that names a package without an exact `==` pin raises ValueError: a lock pins everything.
    """
    pins: dict[str, str] = {}
    for lineno, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-", "\\")):
            continue
        m = _PIN.match(line)
        if not m:
            raise ValueError(f"{path}:{lineno}: not an exact pin: {raw.strip()!r}")
        name = normalize(m.group(1))
        if name in pins and pins[name] != m.group(2):
            raise ValueError(f"{path}:{lineno}: {name} pinned twice ({pins[name]} and {m.group(2)})")
        pins[name] = m.group(2)
    return pins


def _same_version(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging is in the lock
        return False
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def installed_mismatches(lock: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """(name, locked version, installed version or None if missing) for every pin the environment breaks.

    Looks at the distributions visible to this interpreter (importlib.metadata); an empty list means every
    locked package is installed at its locked version. Sorted by name.
    """
    out = []
    for name in sorted(lock):
        have = _installed_version(name)
        if have is None or not _same_version(have, lock[name]):
            out.append((name, lock[name], have))
    return out


def unlocked_installed(lock: dict[str, str], ignore: tuple[str, ...] = (PROJECT,)) -> list[tuple[str, str]]:
    """(name, installed version) of every installed distribution that the lock does not pin, sorted.

    The project itself is ignored by default (it is installed from the work tree, not from the lock).
    """
    skip = {normalize(n) for n in ignore}
    seen: dict[str, str] = {}
    for dist in metadata.distributions():
        raw = dist.metadata["Name"]
        if not raw:
            continue
        name = normalize(raw)
        if name not in lock and name not in skip:
            seen.setdefault(name, dist.version)
    return sorted(seen.items())
