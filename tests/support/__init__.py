"""
Shared fixtures: data directories written on the fly, and in-memory HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from reviewsd.data.links import Links
from reviewsd.data.snapshot import Snapshot
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.site import make_site

BASE = "https://reviews.example.com"

BUSINESS: dict[str, Any] = {
    "name": "Test Builders",
    "url": "https://builders.example",
    "telephone": "+1 503 555 0100",
    "service_areas": ["Tigard", "Beaverton"],
    "services": [{"id": "roofing", "name": "Roofing", "keywords": ["roof"]}],
    "technicians": [{"name": "Dev Patel", "aliases": ["Dev"]}],
}


def review(number: int, **fields: Any) -> dict[str, Any]:
    """A complete, valid review record; C{fields} override."""
    record: dict[str, Any] = {
        "id": f"r{number:04d}",
        "author": f"Customer {number}",
        "author_avatar_url": None,
        "rating": number % 5 + 1,
        "date": f"2024-{number % 12 + 1:02d}-{number % 28 + 1:02d}",
        "text": f"Review number {number}: the roof was fixed on time.",
        "source": "google",
        "source_url": f"https://maps.example.com/review/{number}",
        "owner_reply": None,
        "verified": True,
    }
    record.update(fields)
    return record


def write_data(
    directory: Path,
    reviews: list[Any] | None = None,
    business: Any = None,
    *,
    lines: bool = False,
) -> Path:
    """Write a data directory; C{lines} writes C{reviews.jsonl}."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "business.json").write_text(
        json.dumps(BUSINESS if business is None else business)
    )
    reviews = [review(n) for n in range(3)] if reviews is None else reviews
    if lines:
        (directory / "reviews.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in reviews)
        )
    else:
        (directory / "reviews.json").write_text(json.dumps(reviews))
    return directory


class Holder:
    """The smallest L{reviewsd.data.snapshot.SnapshotSource}."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def snapshot_of(directory: Path, base: str = BASE) -> Snapshot:
    return load_snapshot(directory, Links(base))


def stub_client(snapshot: Snapshot) -> StubTreq:
    """treq over the real resource tree, in memory."""
    return StubTreq(make_site(Holder(snapshot)).resource)


class FakeReactor(Clock):
    """
    A clock whose thread pool runs work when told to: at once, or only when
    the test calls L{run}, to see what happens while a reload is under way.
    """

    def __init__(self, immediate: bool = True) -> None:
        super().__init__()
        self.immediate = immediate
        self.queued: list[tuple[Any, Any, tuple[Any, ...]]] = []
        self.from_thread: list[Any] = []

    def getThreadPool(self) -> FakeReactor:
        return self

    def callInThreadWithCallback(self, done: Any, work: Any, *args: Any) -> None:
        self.queued.append((done, work, args))
        if self.immediate:
            self.run()

    def run(self) -> int:
        """Run what is queued now; work it queues waits for the next call."""
        ran = 0
        batch, self.queued = self.queued, []
        for done, work, args in batch:
            try:
                result = work(*args)
            except Exception:
                done(False, Failure())
            else:
                done(True, result)
            ran += 1
            if self.immediate:
                ran += self.run()
        return ran

    def callFromThread(self, f: Any, *args: Any) -> None:
        self.from_thread.append(f)
        f(*args)


class MemoryReactorWithThreads(MemoryReactorClock):
    """A memory reactor whose thread pool (a L{FakeReactor}) runs work at once."""

    def __init__(self) -> None:
        super().__init__()
        self._threads = FakeReactor()

    def getThreadPool(self) -> FakeReactor:
        return self._threads

    def callFromThread(self, f: Any, *args: Any) -> None:
        f(*args)
