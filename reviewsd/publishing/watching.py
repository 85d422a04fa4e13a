"""
Noticing that the data directory changed.

inotify where the platform has it, so that editors that save by rename and
tools that replace files atomically are seen at once; polling (size, mtime,
inode) elsewhere. Either way a burst of events becomes one call, after the
writes have settled.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.application.service import Service
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.filepath import FilePath

from reviewsd.data.loading import BUSINESS, INSIGHTS, REVIEWS_ARRAY, REVIEWS_LINES

log = Logger()

WATCHED = frozenset({BUSINESS, REVIEWS_ARRAY, REVIEWS_LINES, INSIGHTS})
"""The files whose changes matter; editors' swap and backup files do not."""


def _inotify() -> Any:
    try:
        from twisted.internet import inotify
    except ImportError:  # not Linux
        return None
    return inotify


class DirectoryWatcher(Service):
    """
    Calls C{changed} once after the data files in C{directory} change.

    @param settle: seconds without a new event before C{changed} is called.
    @param poll: seconds between looks when polling.
    @param use_inotify: C{False} forces polling (tests, network file systems).
    """

    def __init__(
        self,
        directory: Path,
        changed: Callable[[], object],
        clock: IReactorTime,
        *,
        settle: float = 0.25,
        poll: float = 1.0,
        use_inotify: bool = True,
    ) -> None:
        self._directory = directory
        self._changed = changed
        self._clock = clock
        self._settle = settle
        self._poll_interval = poll
        self._use_inotify = use_inotify
        self._pending: IDelayedCall | None = None
        self._notifier: Any = None
        self._poller: LoopingCall | None = None
        self._seen: dict[str, tuple[int, int, int]] = {}
        self.mode = "stopped"

    def startService(self) -> None:
        super().startService()
        inotify = _inotify() if self._use_inotify else None
        if inotify is not None:
            try:
                notifier = inotify.INotify(reactor=self._clock)
                notifier.startReading()
                notifier.watch(
                    FilePath(str(self._directory)),
                    mask=inotify.IN_CLOSE_WRITE
                    | inotify.IN_MOVED_TO
                    | inotify.IN_MOVED_FROM
                    | inotify.IN_CREATE
                    | inotify.IN_DELETE
                    | inotify.IN_ATTRIB,
                    callbacks=[self._event],
                )
            except Exception as e:
                log.warn(
                    "inotify unavailable for {directory} ({error}); polling instead",
                    directory=str(self._directory),
                    error=e,
                )
            else:
                self._notifier = notifier
                self.mode = "inotify"
                return
        self._seen = self._signature()
        self._poller = LoopingCall(self._look)
        self._poller.clock = self._clock
        self._poller.start(self._poll_interval, now=False)
        self.mode = "polling"

    def stopService(self) -> None:
        super().stopService()
        if self._notifier is not None:
            self._notifier.loseConnection()
            self._notifier = None
        if self._poller is not None and self._poller.running:
            self._poller.stop()
        if self._pending is not None and self._pending.active():
            self._pending.cancel()
        self._pending = None
        self.mode = "stopped"

    def _event(self, ignored: object, path: FilePath[bytes], mask: int) -> None:
        # inotify reports bytes paths
        if os.fsdecode(path.basename()) in WATCHED:
            self._soon()

    def _signature(self) -> dict[str, tuple[int, int, int]]:
        seen = {}
        for name in WATCHED:
            try:
                stat = os.stat(self._directory / name)
            except OSError:
                continue
            seen[name] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        return seen

    def _look(self) -> None:
        seen = self._signature()
        if seen != self._seen:
            self._seen = seen
            self._soon()

    def _soon(self) -> None:
        """Wait until the writes settle: a burst is one change."""
        if self._pending is not None and self._pending.active():
            self._pending.reset(self._settle)
            return
        self._pending = self._clock.callLater(self._settle, self._fire)

    def _fire(self) -> None:
        self._pending = None
        try:
            self._changed()
        except Exception:
            log.failure(
                "Handling a change of {directory} failed",
                directory=str(self._directory),
            )
