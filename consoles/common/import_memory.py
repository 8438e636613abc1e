"""Keep PySide6's per-import source check from filling the line cache with every module's source.

Once PySide6 is imported, shiboken calls `feature_imported(module)` after every import, which
reads the module's whole source with `inspect.getsource` to look for the string "PySide6" (its
`from __feature__ import ...` support). `inspect.getsource` goes through `linecache`, which keeps
every file it read: in a console that is every module it imports (about 240 files, 12.7 MiB of
Python strings for the CT console), never used again. `forget_checked_sources()` wraps that check
so that the lines it loaded are dropped right after it (the answer is unchanged; a traceback still
reads its lines from disk on demand). Dropping them at once, not after start-up, matters: freed
one module at a time they are reused by the next import; freed at the end they leave partly used
pymalloc arenas that are never returned to the system (measured: clearing the cache after start-up
gave back 1 MiB).
"""
from __future__ import annotations

import linecache
import sys


def forget_checked_sources() -> bool:
    """Install the wrapper (idempotent). False when this PySide6 has no such check."""
    feature = sys.modules.get("shibokensupport.feature") or sys.modules.get("PySide6.support.feature")
    check = getattr(feature, "_mod_uses_pyside", None)
    if check is None:
        return False
    if getattr(check, "_forgets_sources", False):
        return True

    def mod_uses_pyside(module):
        before = set(linecache.cache)
        try:
            return check(module)
        finally:
            for name in [k for k in linecache.cache if k not in before]:
                linecache.cache.pop(name, None)

    mod_uses_pyside._forgets_sources = True  # type: ignore[attr-defined]
    feature._mod_uses_pyside = mod_uses_pyside
    return True
