"""Reuse of image formation across episodes that ask for exactly the same image, where a caller allows it.

The shortcut detector plays three agents (reference, fixed script, constant answer) on each (subject, seed):
their consoles start alike, so MR localizers and the prior series of a staged exam (the functions decorated
with `reusable`) are formed with the same inputs three times. Image formation is a pure function of its inputs (the seed is one of them), so a
result may be reused, as long as nobody can see that it was: a hit returns a deep copy, and what is stored
is a deep copy of what the first caller got, so a caller that changes its result changes nobody else's.

Off unless a caller turns it on (`memo.enabled()`): the consoles' processes never keep these results.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import pickle
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

MAX_ENTRIES = 160  # about 1-3 MB each: what one card's 16 sample episodes formed, until their replays have run

_lock = threading.Lock()
_depth = 0
_store: "OrderedDict[bytes, Any]" = OrderedDict()
stats = {"hits": 0, "misses": 0}


@contextmanager
def enabled() -> Iterator[None]:
    """Reuse results inside this block; the store is emptied when the outermost block ends."""
    global _depth
    with _lock:
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _store.clear()


def _key(fn: Callable[..., Any], args: tuple, kwargs: dict) -> bytes | None:
    subject, rest = args[0], args[1:]
    token = getattr(subject, "cache_key", None)  # the subject by what it is, not by its object identity
    if token is None:
        return None  # a subject built in memory: nothing names it across calls
    try:
        blob = pickle.dumps((fn.__module__, fn.__qualname__, token, rest, sorted(kwargs.items())),
                            protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None  # an argument that cannot be named by value: compute, never guess
    return hashlib.blake2b(blob, digest_size=20).digest()


def reusable(fn: F) -> F:
    """Decorate an image-formation function whose first argument is the subject and whose result depends
    only on its arguments."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _depth == 0:
            return fn(*args, **kwargs)
        key = _key(fn, args, kwargs)
        if key is None:
            return fn(*args, **kwargs)
        with _lock:
            hit = _store.get(key)
            if hit is not None:
                _store.move_to_end(key)
                stats["hits"] += 1
        if hit is not None:
            return copy.deepcopy(hit)
        result = fn(*args, **kwargs)
        with _lock:
            stats["misses"] += 1
            _store[key] = copy.deepcopy(result)
            while len(_store) > MAX_ENTRIES:
                _store.popitem(last=False)
        return result

    return wrapper  # type: ignore[return-value]
