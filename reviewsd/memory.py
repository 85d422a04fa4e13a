"""
The process's memory: the cyclic collector kept off the millions of small,
cycle-free objects a snapshot is made of, and freed memory given back to
the system, after a build and after bursts of large transfers.

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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twisted.internet.interfaces import IDelayedCall, IReactorTime

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


def trim_heap() -> None:
    """Give the free memory of the C heap back to the system (glibc only)."""
    if _trim is not None:
        _trim(0)


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
    trim_heap()


class Trimmer:
    """
    Gives back the memory a burst of large transfers used, once it is over:
    when the last transfer under way has ended and none has begun for
    C{delay} seconds on C{clock}.

    The chunks such transfers write come from the C heap, and glibc keeps
    what they free: it serves blocks of up to the largest one freed yet
    from its heap, and returns the heap's free memory to the system only
    from its top, or when trimmed. Trimming walks the whole heap (a
    millisecond at 100,000 reviews, more when it has pages to give back),
    so it waits for the burst to end rather than follow each transfer; a
    transfer costs two calls here.
    C{trim} defaults to L{trim_heap}.
    """

    def __init__(
        self,
        clock: IReactorTime,
        delay: float = 2.0,
        trim: Callable[[], object] | None = None,
    ) -> None:
        self.delay = delay
        self._clock = clock
        self._trim = trim
        self._under_way = 0
        self._pending: IDelayedCall | None = None

    def began(self) -> None:
        """A large transfer has begun: no trimming until it ends."""
        self._under_way += 1
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def ended(self) -> None:
        """A large transfer has ended: trim after C{delay} if it was the last."""
        self._under_way -= 1
        if self._under_way == 0 and self._pending is None:
            self._pending = self._clock.callLater(self.delay, self._trimmed)

    def _trimmed(self) -> None:
        self._pending = None
        if self._trim is None:
            trim_heap()
        else:
            self._trim()
