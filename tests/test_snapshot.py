"""
Snapshots: validators that move only when content does.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import zlib
from datetime import date
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.links import Links
from reviewsd.data.loading import load_dataset
from reviewsd.data.search import SearchQuery
from reviewsd.data.snapshot import (
    GZIP_MIN_SIZE,
    BoundedCache,
    Document,
    Snapshot,
    _crc_shift,
    _crc_times,
)
from reviewsd.insights import ReviewCache
from reviewsd.publishing.build import build_snapshot, load_snapshot
from tests.support import BASE, review, write_data


class SnapshotTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = write_data(Path(self.mktemp()), [review(n) for n in range(20)])
        os.utime(self.dir / "reviews.json", (1_700_000_000, 1_700_000_000))
        os.utime(self.dir / "business.json", (1_600_000_000, 1_600_000_000))

    def test_last_modified_is_the_newest_file(self) -> None:
        snapshot = load_snapshot(self.dir, Links(BASE))
        for document in snapshot.documents.values():
            self.assertEqual(document.last_modified, 1_700_000_000)
            self.assertEqual(document.http_date, b"Tue, 14 Nov 2023 22:13:20 GMT")

    def test_same_content_keeps_validators(self) -> None:
        """A rebuild that changed nothing keeps ETag and Last-Modified."""
        first = load_snapshot(self.dir, Links(BASE))
        os.utime(self.dir / "reviews.json", (1_800_000_000, 1_800_000_000))
        second = load_snapshot(self.dir, Links(BASE), previous=first)
        for path, document in second.documents.items():
            self.assertIs(document, first.documents[path])

    def test_changed_content_moves_validators(self) -> None:
        first = load_snapshot(self.dir, Links(BASE))
        write_data(self.dir, [review(n) for n in range(21)])
        os.utime(self.dir / "reviews.json", (1_800_000_000, 1_800_000_000))
        second = load_snapshot(self.dir, Links(BASE), previous=first)
        for path in ("/reviews.json", "/api/feed.json", "/feed.xml"):
            document = second.documents[path]
            self.assertNotEqual(
                document.identity.etag, first.documents[path].identity.etag
            )
            self.assertEqual(document.last_modified, 1_800_000_000)
        openapi = "/.well-known/openapi.json"
        self.assertIs(second.documents[openapi], first.documents[openapi])

    def test_insights_generated_at_moves_with_content(self) -> None:
        """
        Touching a file leaves /insights.json as it was; a change of content
        gives it the new modification time as generated_at.
        """
        first = load_snapshot(self.dir, Links(BASE))
        self.assertEqual(first.insights["generated_at"], "2023-11-14T22:13:20Z")
        os.utime(self.dir / "reviews.json", (1_800_000_000, 1_800_000_000))
        touched = load_snapshot(self.dir, Links(BASE), previous=first)
        self.assertIs(
            touched.documents["/insights.json"], first.documents["/insights.json"]
        )
        write_data(self.dir, [review(n) for n in range(21)])
        os.utime(self.dir / "reviews.json", (1_800_000_000, 1_800_000_000))
        changed = load_snapshot(self.dir, Links(BASE), previous=touched)
        self.assertEqual(changed.insights["generated_at"], "2027-01-15T08:00:00Z")
        body = json.loads(changed.documents["/insights.json"].identity.body)
        self.assertEqual(body["generated_at"], "2027-01-15T08:00:00Z")
        self.assertEqual(body["review_count"], 21)

    def test_overlay_replaces_groups(self) -> None:
        summary = "Hand-written by the owner."
        (self.dir / "insights.json").write_text(json.dumps({"summary": summary}))
        snapshot = load_snapshot(self.dir, Links(BASE))
        body = json.loads(snapshot.documents["/insights.json"].identity.body)
        self.assertEqual(body["summary"], summary)
        self.assertTrue(body["aspects"])
        self.assertIn(summary, snapshot.documents["/llms.txt"].identity.body.decode())

    def test_cache_reused_across_builds(self) -> None:
        """A rebuild analyses only what changed."""
        cache = ReviewCache()
        first = load_snapshot(self.dir, Links(BASE), cache=cache)
        self.assertEqual(cache.analysed, 20)
        write_data(self.dir, [review(n) for n in range(21)])
        load_snapshot(self.dir, Links(BASE), previous=first, cache=cache)
        self.assertEqual(cache.analysed, 21)

    def test_deterministic(self) -> None:
        """The same data gives the same bytes and tags, gzip included."""
        _, dataset = load_dataset(self.dir)
        one = build_snapshot(dataset, Links(BASE), 0)
        two = build_snapshot(dataset, Links(BASE), 0)
        self.assertEqual(one.documents, two.documents)

    def test_base_url_changes_documents(self) -> None:
        _, dataset = load_dataset(self.dir)
        one = build_snapshot(dataset, Links(BASE), 0)
        two = build_snapshot(
            dataset, Links("https://elsewhere.example"), 0, previous=one
        )
        self.assertNotEqual(
            one.documents["/feed.xml"].identity.etag,
            two.documents["/feed.xml"].identity.etag,
        )

    def test_small_bodies_are_not_compressed(self) -> None:
        self.assertIsNone(
            Document.build(b"x" * (GZIP_MIN_SIZE - 1), b"text/plain", 0).gzipped
        )
        self.assertIsNotNone(
            Document.build(b"x" * GZIP_MIN_SIZE, b"text/plain", 0).gzipped
        )


class ComputedAnswerTests(SynchronousTestCase):
    """
    Search and since answers: validators derived from the data and the
    question, which move exactly when the bytes do; gzip bytes made of a
    date's prefix and a run shared by every date with its count.
    """

    def setUp(self) -> None:
        long = "The crew fixed the roof and cleaned up. " * 4
        self.reviews = [review(n, text=f"{n}: {long}") for n in range(40)]
        self.dir = write_data(Path(self.mktemp()), self.reviews)

    def answers(self, snapshot: Snapshot) -> tuple[list[bytes], list[bytes | None]]:
        """Bytes and tags of a since and a search answer."""
        since = snapshot.since_answer(date(2024, 3, 1))
        search = snapshot.search_answer(SearchQuery(rating=3))
        bodies = [snapshot.since_body(since), search.body]
        tags = [since.validators.etag, since.validators.gzip_etag]
        return bodies, tags + [search.validators.etag, search.validators.gzip_etag]

    def test_validators_move_with_content(self) -> None:
        bodies, tags = self.answers(load_snapshot(self.dir, Links(BASE)))
        self.assertEqual(len(set(tags)), 4)
        os.utime(self.dir / "reviews.json", (1_800_000_000, 1_800_000_000))
        self.assertEqual(
            self.answers(load_snapshot(self.dir, Links(BASE))), (bodies, tags)
        )
        # the records hold no link: the same bytes elsewhere, the same tags
        elsewhere = load_snapshot(self.dir, Links("https://elsewhere.example"))
        self.assertEqual(self.answers(elsewhere), (bodies, tags))
        self.reviews[0]["text"] = "Changed."  # rated 1: in neither answer
        write_data(self.dir, self.reviews)
        changed = load_snapshot(self.dir, Links(BASE))
        self.assertEqual(self.answers(changed)[0], bodies)
        self.assertFalse(set(self.answers(changed)[1]) & set(tags))
        self.reviews[2]["text"] = "Changed too."  # rated 3: in both
        write_data(self.dir, self.reviews)
        again = self.answers(load_snapshot(self.dir, Links(BASE)))
        self.assertNotEqual(again[0][0], bodies[0])
        self.assertNotEqual(again[0][1], bodies[1])
        self.assertFalse(set(again[1]) & set(tags))

    def test_since_gzip_for_every_count(self) -> None:
        snapshot = load_snapshot(self.dir, Links(BASE))
        stream = snapshot.since_stream()
        self.assertGreater(len(stream.counts), 2)  # flushed inside the records
        days = sorted({r.date for r in snapshot.dataset.reviews})
        for day in [date(2000, 1, 1), *days, date(2099, 1, 1)]:
            answer = snapshot.since_answer(day)
            body = snapshot.since_body(answer)
            self.assertEqual(len(body), answer.length)
            self.assertEqual(json.loads(body)["since"], day.isoformat())
            if answer.validators.gzip_etag is None:
                self.assertLess(len(body), GZIP_MIN_SIZE)
                continue
            run = snapshot.since_run(answer, stream)
            packed = snapshot.since_gzipped(answer, run, stream)
            unpacker = zlib.decompressobj(wbits=31)
            self.assertEqual(unpacker.decompress(packed), body)
            self.assertTrue(unpacker.eof)
            self.assertEqual(unpacker.unused_data, b"")
            self.assertEqual(gzip.decompress(packed), body)

    def test_crc_of_parts(self) -> None:
        rng = random.Random(3)
        for size in (0, 1, 5, 1000, 70_000):
            head = rng.randbytes(rng.randrange(60))
            tail = rng.randbytes(size)
            combined = _crc_times(_crc_shift(size), zlib.crc32(head)) ^ zlib.crc32(tail)
            self.assertEqual(combined, zlib.crc32(head + tail))

    def test_search_answers_kept_by_query(self) -> None:
        snapshot = load_snapshot(self.dir, Links(BASE))
        answer = snapshot.search_answer(SearchQuery(rating=3))
        self.assertIs(snapshot.search_answer(SearchQuery(rating=3)), answer)
        self.assertEqual(answer.body, snapshot.search(SearchQuery(rating=3)))
        packed = snapshot.search_gzipped(SearchQuery(rating=3), answer)
        self.assertEqual(gzip.decompress(packed), answer.body)
        kept = snapshot.search_answer(SearchQuery(rating=3))
        self.assertIs(kept.gzipped, packed)


class BoundedCacheTests(SynchronousTestCase):
    def test_entries(self) -> None:
        cache: BoundedCache[int, str] = BoundedCache(2, 10**9)
        cache.put(1, "a")
        cache.put(2, "b")
        cache.get(1)  # now the most recently used
        cache.put(3, "c")
        self.assertEqual([cache.get(k) for k in (1, 2, 3)], ["a", None, "c"])

    def test_size(self) -> None:
        cache: BoundedCache[int, bytes] = BoundedCache(100, 10, len)
        cache.put(1, b"12345")
        cache.put(1, b"123456")  # replaced: counted once
        self.assertEqual(cache.held, 6)
        cache.put(2, b"1234")
        self.assertEqual((len(cache), cache.held), (2, 10))
        cache.put(3, b"1")
        self.assertEqual((cache.get(1), cache.held), (None, 5))
        cache.put(4, b"x" * 50)  # alone over the size: kept, alone
        self.assertEqual((len(cache), cache.get(4)), (1, b"x" * 50))
