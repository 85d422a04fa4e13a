"""
The process's memory: the cyclic collector kept off the millions of small,
cycle-free objects a snapshot is made of, and freed memory given back to
the system.

CPython's cyclic collector walks every tracked container of the older
generations again and again while such a structure grows; for 100,000
reviews that costs more than the work itself (a cache load 5x, a
re-derivation 4x). Nothing built here forms reference cycles, and
reference counting still frees everything at once.
"""

from __future__ import annotations

import ctypes
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """
    Pause cyclic garbage collection for the duration of the block. The
    pause is process-wide, so it lasts exactly as long as the outermost
    block, and collection is switched back on only if it was on before.
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def freeze() -> None:
    """
    Move everything alive now out of the collector's sight: switched back
    on, it would first walk every object of a new snapshot (half a second
    at 100,000 reviews, holding the GIL).
    """
    gc.freeze()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_trim = _malloc_trim()


def settle_memory() -> None:
    """
    Freeze everything alive now (L{freeze}), and give what the last build
    freed back to the system.

    Refcounting still frees a snapshot when the next replaces it. A build's
    intermediate objects leave the C heap full of free memory that glibc
    keeps unless asked (about 360 MiB at 100,000 reviews; trimming takes
    some 20 ms).
    """
    freeze()
    if _trim is not None:
        _trim(0)
