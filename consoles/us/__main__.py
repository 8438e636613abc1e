"""python -m consoles.us --task <id|task.json> --subject <id> --seed <n> [--control <socket>]"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

from consoles.common.launch import run_console

# glibc mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
FRAME_HEAP_MMAP_THRESHOLD = 4 << 20
FRAME_HEAP_TRIM_THRESHOLD = 64 << 20


def keep_frame_buffers_on_the_heap() -> None:
    """Let a frame's temporaries reuse freed heap memory instead of fresh pages.

    The runner fixes glibc's mmap threshold at 256 KiB (runner.display: so freed volumes go back to the
    system). Forming one B-mode frame allocates dozens of 0.5-2 MiB arrays (256 lines x 512 samples);
    at 256 KiB each one is a new mapping whose pages fault in zero-filled: the model's drag step took
    about 89 ms there against 28 ms without it. At 4 MiB (and a trim threshold that keeps the heap's
    top) those arrays reuse the previous frame's memory, while the subject's volumes (8 MiB and up)
    are still mapped and returned; the console's peak RSS was unchanged (96 MiB in the model bench).
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.mallopt(M_MMAP_THRESHOLD, FRAME_HEAP_MMAP_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, FRAME_HEAP_TRIM_THRESHOLD)


def warm_imports() -> None:
    """Import at console start what the first steps would otherwise import inside a step (image
    formation samples the body surface and filters the echo field with scipy.ndimage)."""
    import consoles.us.model  # noqa: F401
    import consoles.us.view  # noqa: F401
    import scipy.ndimage  # noqa: F401


def make_model(card, subject, seed: int):
    from consoles.us.model import USModel

    return USModel(subject, card.id, seed, card.initial_state, card.perturbations)


def build(card, subject, seed: int, width: int, height: int):
    from consoles.us.view import USConsoleView

    return USConsoleView(make_model(card, subject, seed), width, height)


if __name__ == "__main__":
    keep_frame_buffers_on_the_heap()
    warm_imports()
    sys.exit(run_console("us", build, make_model=make_model))
