"""
Cyclic garbage collection paused while a derivation or a cache load builds
hundreds of thousands of small containers.

CPython's cyclic collector walks every tracked container of the older
generations again and again while such a structure grows; for 100,000
reviews that costs more than the work itself (a cache load 5x, a
re-derivation 4x).  Nothing built here forms reference cycles, and
reference counting still frees everything at once; the pause is
process-wide, so it lasts exactly as long as the work, and collection is
switched back on only if it was on before.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Pause cyclic garbage collection for the duration of the block."""
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
