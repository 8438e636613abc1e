"""`python -m rendering.subjects build <id>...`: build bundles (used by console processes that must
not write the oracle half themselves)."""
from __future__ import annotations

import sys

from .bundle import SubjectError
from .runtime import build_procedural


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "build":
        print("usage: python -m rendering.subjects build <id> [<id>...]", file=sys.stderr)
        return 2
    try:
        for sid in argv[1:]:
            print(build_procedural(sid))
    except SubjectError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
