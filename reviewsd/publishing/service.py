"""
The service that holds the current snapshot and replaces it when the data
changes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure

from reviewsd.data.loading import DataError, Reader
from reviewsd.data.snapshot import Snapshot
from reviewsd.insights import ReviewCache
from reviewsd.memory import settle_memory
from reviewsd.publishing.build import load_snapshot

log = Logger()


def save_cache(cache: ReviewCache) -> None:
    """Keep the analyses for the next start; a failure only costs time."""
    if cache.discarded:
        log.warn(
            "Insights cache {path} was discarded ({why}); reviews were analysed anew",
            path=str(cache.path),
            why=cache.discarded,
        )
    try:
        cache.save()
    except (sqlite3.Error, OSError) as e:
        log.warn(
            "Cannot save the insights cache {path}: {error}",
            path=str(cache.path),
            error=e,
        )


def _index_words(snapshot: Snapshot) -> None:
    """
    The word index of the snapshot a daemon starts with, built once it
    serves (a second at 100,000 reviews): text queries test every text
    until then. Reloads extend it.
    """
    snapshot.index.index_words()
    settle_memory()


def changed_topics(old: Snapshot, new: Snapshot) -> list[str]:
    """The topic URLs whose bytes differ between two snapshots."""
    return [
        new.links.url(path)
        for path, document in new.documents.items()
        if document.links is not None
        and not document.same_content(old.documents.get(path))
    ]


class CurrentSnapshot:
    """
    The snapshot every request reads now: what serves the data (the site,
    the tools, the hub's topics) reads it here, and L{ReviewsData} swaps the
    next one in. Its own object, so that those readers can be built before
    the service that reloads, which publishes to the hub.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


class ReviewsData(Service):
    """
    Replaces the snapshot every request reads when the data changes: the new
    one is built in a worker thread and swapped into C{current} with one
    assignment, so a request sees all of one generation or all of the next.

    @param publish: called with each topic URL whose content changed.
    @param swapped: called with the old and the new snapshot after each swap
        (the MCP server tells its subscribers what changed).
    @param notify: called with systemd notifications around a reload.
    @ivar reloads: completed reloads; C{failures}: refused ones.
    @ivar loaded_at: when the current snapshot was swapped in.
    """

    def __init__(
        self,
        directory: Path,
        current: CurrentSnapshot,
        reactor: Any = None,
        cache: ReviewCache | None = None,
        reader: Reader | None = None,
        *,
        publish: Callable[[str], object] = lambda topic: None,
        notify: Callable[[bytes], object] = lambda state: None,
        swapped: Callable[[Snapshot, Snapshot], object] = lambda old, new: None,
    ) -> None:
        if reactor is None:
            from twisted.internet import reactor
        self.directory = directory
        self.current = current
        self._reactor = reactor
        self._cache = cache
        self._reader = Reader() if reader is None else reader
        self._publish = publish
        self._notify = notify
        self._swapped = swapped
        self._running: Deferred[Any] | None = None
        self._waiting: list[Deferred[bool]] = []
        self.reloads = 0
        self.failures = 0
        self.loaded_at = reactor.seconds()

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot served now."""
        return self.current.snapshot

    def startService(self) -> None:
        super().startService()
        settle_memory()
        dataset = self.snapshot.dataset
        log.info(
            "Publishing {count} reviews of {business} from {directory}"
            " ({unpublished} unverified left out)",
            count=len(dataset.reviews),
            business=dataset.business.name,
            directory=str(self.directory),
            unpublished=dataset.unpublished,
        )
        # what the start analysed or made anew, kept for the next start once
        # this one serves: seconds of writing at 100,000 reviews
        self._save()
        if not self.snapshot.index.has_words:
            started = self._reactor.seconds()
            work: Deferred[Any] = deferToThreadPool(
                self._reactor,
                self._reactor.getThreadPool(),
                _index_words,
                self.snapshot,
            )
            work.addCallbacks(
                lambda _: log.info(
                    "Word index built in {duration:.2f} s",
                    duration=self._reactor.seconds() - started,
                ),
                lambda failure: log.failure(
                    "Cannot build the word index; text queries test every review",
                    failure,
                ),
            )

    def stopService(self) -> Deferred[None] | None:
        super().stopService()
        if self._running is None:
            return None
        # let a reload in progress finish, so that its cache is saved
        finished: Deferred[None] = Deferred()

        def passed(result: object) -> object:
            finished.callback(None)
            return result

        self._running.addBoth(passed)
        return finished

    def reload(self) -> Deferred[bool]:
        """
        Read the data directory again, one reload at a time: asked for while
        one runs, it runs once more afterwards (requests in between share that
        run). Fires with whether new data was swapped in.
        """
        done: Deferred[bool] = Deferred()
        if self._running is not None:
            self._waiting.append(done)
        else:
            self._start([done])
        return done

    def _start(self, waiting: list[Deferred[bool]]) -> None:
        started = self._reactor.seconds()
        self._notify(b"RELOADING=1")
        work: Deferred[Any] = deferToThreadPool(
            self._reactor,
            self._reactor.getThreadPool(),
            load_snapshot,
            self.directory,
            self.snapshot.links,
            self.snapshot,
            self._cache,
            self._reader,
        )
        # set before the callbacks, which may run at once and clear it
        self._running = work
        work.addCallbacks(self._swap, self._refused, callbackArgs=(started,))
        work.addCallback(self._finish, waiting)

    def _swap(self, new: Snapshot, started: float) -> bool:
        old, self.current.snapshot = self.current.snapshot, new
        self.reloads += 1
        self.loaded_at = self._reactor.seconds()
        topics = changed_topics(old, new)
        try:
            self._swapped(old, new)
        except Exception:
            log.failure("Telling of the new snapshot failed")
        del old  # freed now, so that settling gives its memory back too
        settle_memory()
        log.info(
            "Reloaded {directory} in {duration:.2f} s: {count} reviews; changed "
            "topics: {changed}",
            directory=str(self.directory),
            duration=self.loaded_at - started,
            count=len(new.dataset.reviews),
            changed=", ".join(topics) or "none",
        )
        for topic in topics:
            self._publish(topic)
        return True

    def _refused(self, failure: Failure) -> bool:
        self.failures += 1
        if failure.check(DataError):
            log.error(
                "Reload refused, still serving the previous data: {error}",
                error=str(failure.value),
            )
        else:
            log.failure("Reload failed, still serving the previous data", failure)
        return False

    def _finish(self, swapped: bool, waiting: list[Deferred[bool]]) -> None:
        self._notify(b"READY=1")
        for done in waiting:
            done.callback(swapped)
        self._save()

    def _save(self) -> None:
        """
        Save the insights cache in a worker thread, once the new data serves;
        the next reload waits for it, as for each other, and so does stopping.
        """
        if self._cache is None:
            self._saved(None)
            return
        saving: Deferred[Any] = deferToThreadPool(
            self._reactor, self._reactor.getThreadPool(), save_cache, self._cache
        )
        self._running = saving
        saving.addErrback(
            lambda failure: log.failure("Cannot save the insights cache", failure)
        )
        saving.addCallback(self._saved)

    def _saved(self, _: object) -> None:
        self._running = None
        self._next()

    def _next(self) -> None:
        """Run once more for the reloads asked for while one ran, if any."""
        if self._running is None and self._waiting:
            waiting, self._waiting = self._waiting, []
            self._start(waiting)
