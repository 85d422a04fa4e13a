"""
Live data: noticing changes to the data directory, reloading one at a time,
keeping the old data when the new is broken, and publishing only what
changed.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor
from twisted.internet.task import Clock, deferLater
from twisted.logger import LogEvent, formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase, TestCase

from reviewsd.data.links import Links
from reviewsd.insights import MEMO_VERSION, ReviewCache
from reviewsd.ops.signals import ReloadOnSignal
from reviewsd.publishing.build import load_snapshot
from reviewsd.publishing.service import CurrentSnapshot, ReviewsData
from reviewsd.publishing.watching import DirectoryWatcher
from tests.support import BASE, FakeReactor, review, write_data

TOPICS = {f"{BASE}/reviews.json", f"{BASE}/api/feed.json", f"{BASE}/feed.xml"}


def capture_logs(case: SynchronousTestCase) -> list[str]:
    lines: list[str] = []

    def observe(event: LogEvent) -> None:
        lines.append(formatEvent(event))

    globalLogPublisher.addObserver(observe)
    case.addCleanup(globalLogPublisher.removeObserver, observe)
    return lines


class ReloadTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = write_data(Path(self.mktemp()), [review(n) for n in range(5)])
        self.reactor = FakeReactor()
        self.data = self.make()

    def make(self) -> ReviewsData:
        self.published: list[str] = []
        self.notified: list[bytes] = []
        return ReviewsData(
            self.dir,
            CurrentSnapshot(load_snapshot(self.dir, Links(BASE))),
            reactor=self.reactor,
            publish=self.published.append,
            notify=self.notified.append,
        )

    def reload(self) -> bool:
        return self.successResultOf(self.data.reload())

    def test_change_is_swapped_in_and_published(self) -> None:
        before = self.data.snapshot
        write_data(self.dir, [review(n) for n in range(6)])
        self.assertIs(self.reload(), True)
        self.assertEqual(len(self.data.snapshot.dataset.reviews), 6)
        self.assertEqual(sorted(self.published), sorted(TOPICS))
        self.assertEqual(self.notified, [b"RELOADING=1", b"READY=1"])
        self.assertEqual(self.data.reloads, 1)
        for path in ("/reviews.json", "/feed.xml"):
            self.assertNotEqual(
                self.data.snapshot.documents[path].identity.etag,
                before.documents[path].identity.etag,
            )

    def test_only_changed_topics_are_published(self) -> None:
        """A review older than the 50 newest changes reviews.json, not the feeds."""
        write_data(self.dir, [review(n, date="2024-06-15") for n in range(60)])
        self.reload()
        self.published.clear()
        records = [review(n, date="2024-06-15") for n in range(60)]
        records.append(review(99, date="2001-01-01"))
        write_data(self.dir, records)
        self.reload()
        self.assertEqual(self.published, [f"{BASE}/reviews.json"])

    def test_touch_without_change(self) -> None:
        """Same bytes: nothing published, the same ETags and Last-Modified."""
        before = self.data.snapshot
        later = os.stat(self.dir / "reviews.json").st_mtime + 3600
        os.utime(self.dir / "reviews.json", (later, later))
        self.assertIs(self.reload(), True)
        self.assertEqual(self.published, [])
        for path, document in before.documents.items():
            self.assertIs(self.data.snapshot.documents[path], document, path)

    def test_broken_file_keeps_the_old_data(self) -> None:
        logs = capture_logs(self)
        before = self.data.snapshot
        (self.dir / "reviews.json").write_text(
            json.dumps([review(1), review(2, rating=9)])
        )
        self.assertIs(self.reload(), False)
        self.assertIs(self.data.snapshot, before)
        self.assertEqual(self.published, [])
        self.assertEqual(self.data.failures, 1)
        [line] = [line for line in logs if "Reload refused" in line]
        self.assertIn("reviews.json: record [1] (id 'r0002'): field 'rating'", line)
        self.assertEqual(self.notified, [b"RELOADING=1", b"READY=1"])
        write_data(self.dir, [review(n) for n in range(7)])
        self.assertIs(self.reload(), True)
        self.assertEqual(len(self.data.snapshot.dataset.reviews), 7)

    def test_reloads_are_serialized(self) -> None:
        """One at a time; asked for during one, one more runs after it."""
        self.reactor.immediate = False
        first = self.data.reload()
        second = self.data.reload()
        third = self.data.reload()
        write_data(self.dir, [review(n) for n in range(8)])
        self.assertEqual(self.reactor.run(), 1)
        self.assertIs(self.successResultOf(first), True)
        self.assertNoResult(second)
        self.assertEqual(self.reactor.run(), 1, "one more, shared by the two")
        self.assertIs(self.successResultOf(second), True)
        self.assertIs(self.successResultOf(third), True)
        self.assertEqual(self.reactor.run(), 0)
        self.assertEqual(len(self.data.snapshot.dataset.reviews), 8)

    def test_stop_waits_for_a_reload(self) -> None:
        self.reactor.immediate = False
        self.data.startService()
        self.data.reload()
        stopped = self.data.stopService()
        self.assertNoResult(stopped)
        self.reactor.run()
        self.successResultOf(stopped)

    def test_sighup_hands_the_reload_to_the_reactor(self) -> None:
        called: list[str] = []
        service = ReloadOnSignal(lambda: called.append("reload"), self.reactor)
        previous = signal.getsignal(signal.SIGHUP)
        service.startService()
        try:
            os.kill(os.getpid(), signal.SIGHUP)
        finally:
            service.stopService()
        self.assertEqual(called, ["reload"])
        self.assertEqual(len(self.reactor.from_thread), 1)
        self.assertEqual(signal.getsignal(signal.SIGHUP), previous)


class StartSaveTests(SynchronousTestCase):
    """
    The insights cache is saved once the daemon serves, and once each reload
    has swapped its data in, in a worker thread; reloads and stopping wait
    for that save.
    """

    def setUp(self) -> None:
        self.dir = write_data(Path(self.mktemp()), [review(n) for n in range(5)])
        self.path = Path(self.mktemp())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.reactor = FakeReactor(immediate=False)
        cache = ReviewCache(self.path, memo_version=MEMO_VERSION)
        snapshot = load_snapshot(self.dir, Links(BASE), cache=cache)
        self.data = ReviewsData(
            self.dir, CurrentSnapshot(snapshot), reactor=self.reactor, cache=cache
        )

    def test_saved_in_a_thread(self) -> None:
        """Nothing is written before the service starts, and then off the reactor."""
        self.assertFalse(self.path.exists())
        self.data.startService()
        self.addCleanup(self.data.stopService)
        self.assertFalse(self.path.exists())
        self.reactor.run()
        self.assertEqual(len(ReviewCache(self.path, memo_version=MEMO_VERSION)), 5)

    def test_reload_waits_for_the_save(self) -> None:
        self.data.startService()
        self.addCleanup(self.data.stopService)
        write_data(self.dir, [review(n) for n in range(6)])
        reloaded = self.data.reload()
        self.assertEqual(self.reactor.run(), 2, "the save and the word index")
        self.assertNoResult(reloaded)
        self.assertEqual(self.reactor.run(), 1, "then the reload")
        self.assertIs(self.successResultOf(reloaded), True)
        self.assertEqual(self.reactor.run(), 1, "then its save")
        self.assertEqual(len(ReviewCache(self.path, memo_version=MEMO_VERSION)), 6)

    def test_reload_serves_before_its_save(self) -> None:
        """
        A reload's new data serves, and those waiting for it hear so, before
        the cache is saved; the next reload waits for that save.
        """
        self.data.startService()
        self.addCleanup(self.data.stopService)
        self.reactor.run()
        write_data(self.dir, [review(n) for n in range(6)])
        reloaded = self.data.reload()
        self.assertEqual(self.reactor.run(), 1)
        self.assertIs(self.successResultOf(reloaded), True)
        self.assertEqual(len(self.data.snapshot.dataset.reviews), 6)
        self.assertEqual(len(ReviewCache(self.path, memo_version=MEMO_VERSION)), 5)
        write_data(self.dir, [review(n) for n in range(7)])
        again = self.data.reload()
        self.assertEqual(self.reactor.run(), 1, "the first reload's save")
        self.assertNoResult(again)
        self.assertEqual(len(ReviewCache(self.path, memo_version=MEMO_VERSION)), 6)
        self.assertEqual(self.reactor.run(), 1, "then the second reload")
        self.assertIs(self.successResultOf(again), True)

    def test_stop_waits_for_the_save(self) -> None:
        self.data.startService()
        stopped = self.data.stopService()
        self.assertNoResult(stopped)
        self.reactor.run()
        self.successResultOf(stopped)
        self.assertTrue(self.path.exists())


class PollingWatcherTests(SynchronousTestCase):
    """Where inotify is missing: size, mtime and inode, on a fake clock."""

    def setUp(self) -> None:
        self.dir = write_data(Path(self.mktemp()), [review(1)])
        self.clock = Clock()
        self.calls: list[int] = []
        self.watcher = DirectoryWatcher(
            self.dir,
            lambda: self.calls.append(1),
            self.clock,
            settle=0.25,
            poll=1.0,
            use_inotify=False,
        )
        self.watcher.startService()
        self.addCleanup(self.watcher.stopService)
        self.assertEqual(self.watcher.mode, "polling")

    def settle(self) -> None:
        self.clock.advance(1.0)
        self.clock.advance(0.25)

    def test_atomic_replace(self) -> None:
        new = self.dir / ".reviews.json.tmp"
        new.write_text(json.dumps([review(1), review(2)]))
        self.settle()
        self.assertEqual(self.calls, [], "a temporary file is not the data")
        os.replace(new, self.dir / "reviews.json")
        self.settle()
        self.assertEqual(self.calls, [1])

    def test_in_place_write(self) -> None:
        (self.dir / "reviews.json").write_text(json.dumps([review(3)] * 1))
        (self.dir / "business.json").write_text('{"name": "Renamed"}')
        self.settle()
        self.assertEqual(self.calls, [1])

    def test_burst_is_one_change(self) -> None:
        for n in range(5):
            (self.dir / "reviews.json").write_text(json.dumps([review(n)] * (n + 2)))
            self.clock.advance(0.15)
        self.settle()
        self.assertEqual(self.calls, [1])

    def test_new_and_deleted_files(self) -> None:
        (self.dir / "insights.json").write_text("{}")
        self.settle()
        (self.dir / "insights.json").unlink()
        self.settle()
        self.assertEqual(self.calls, [1, 1])

    def test_nothing_changed(self) -> None:
        self.clock.advance(10)
        self.assertEqual(self.calls, [])


class InotifyWatcherTests(TestCase):
    """With the real reactor and inotify, as the daemon runs on Linux."""

    timeout = 20

    def setUp(self) -> None:
        self.dir = write_data(Path(self.mktemp()), [review(1)])
        self.changes: defer.DeferredQueue[int] = defer.DeferredQueue()
        self.watcher = DirectoryWatcher(
            self.dir, lambda: self.changes.put(1), reactor, settle=0.1
        )
        self.watcher.startService()
        self.addCleanup(self.watcher.stopService)

    @defer.inlineCallbacks
    def test_writes_and_renames_are_seen(self) -> Any:
        if self.watcher.mode != "inotify":
            self.skipTest(f"inotify is unavailable here ({self.watcher.mode})")
        (self.dir / "reviews.json").write_text(json.dumps([review(1), review(2)]))
        yield self.changes.get()
        temporary = self.dir / "reviews.json.new"
        temporary.write_text(json.dumps([review(3)]))
        os.replace(temporary, self.dir / "reviews.json")
        yield self.changes.get()
        (self.dir / "notes.txt").write_text("not data")
        yield deferLater(reactor, 0.3, lambda: None)
        self.assertEqual(self.changes.pending, [])
        for n in range(5):
            (self.dir / "reviews.json").write_text(json.dumps([review(n)] * n))
        yield self.changes.get()
        yield deferLater(reactor, 0.3, lambda: None)
        self.assertEqual(self.changes.pending, [], "a burst is one change")
