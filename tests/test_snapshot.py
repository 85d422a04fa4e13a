"""
Snapshots: validators that move only when content does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.links import Links
from reviewsd.data.loading import load_dataset
from reviewsd.data.snapshot import GZIP_MIN_SIZE, Document
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
