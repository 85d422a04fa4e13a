"""
The published documents: their shapes, and the feeds' conformance to JSON
Feed 1.1 and RFC 4287.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import feedparser
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.documents import FEED_ITEMS, render_reviews
from reviewsd.data.loading import DEMO_DATA, load_dataset
from reviewsd.data.snapshot import Snapshot
from tests.support import BASE, review, snapshot_of, write_data
from tests.support.feedvalidation import atom_problems, json_feed_problems

REVIEW_FIELDS = {
    "id",
    "author",
    "author_avatar_url",
    "rating",
    "date",
    "text",
    "source",
    "source_url",
    "owner_reply",
    "verified",
}


def body(snapshot: Snapshot, path: str) -> bytes:
    return snapshot.documents[path].identity.body


class DemoDocumentTests(SynchronousTestCase):
    """The documents rendered from the bundled demo data."""

    snapshot = snapshot_of(DEMO_DATA)

    def test_reviews_document(self) -> None:
        document = json.loads(body(self.snapshot, "/reviews.json"))
        self.assertEqual(set(document), {"business", "aggregate_rating", "reviews"})
        self.assertEqual(document["business"]["name"], "Thimbleberry Home Services")
        reviews = document["reviews"]
        self.assertEqual(len(reviews), len(self.snapshot.dataset.reviews))
        for record in reviews:
            self.assertEqual(set(record), REVIEW_FIELDS)
            self.assertIs(record["verified"], True)
        order = [(r["date"], r["id"]) for r in reviews]
        self.assertEqual(order, sorted(order, reverse=True))

        aggregate = document["aggregate_rating"]
        ratings = [r["rating"] for r in reviews]
        self.assertEqual(aggregate["review_count"], len(reviews))
        self.assertEqual(
            aggregate["rating_value"], round(sum(ratings) / len(ratings), 2)
        )
        self.assertEqual((aggregate["best_rating"], aggregate["worst_rating"]), (5, 1))
        self.assertEqual(
            aggregate["distribution"],
            {str(n): ratings.count(n) for n in range(1, 6)},
        )

    def test_json_feed_conforms(self) -> None:
        feed = json.loads(body(self.snapshot, "/api/feed.json"))
        self.assertEqual(json_feed_problems(feed), [])
        self.assertEqual(feed["version"], "https://jsonfeed.org/version/1.1")
        self.assertEqual(feed["feed_url"], f"{BASE}/api/feed.json")
        self.assertEqual(
            feed["hubs"], [{"type": "WebSub", "url": f"{BASE}/api/websub/hub"}]
        )

    def test_json_feed_items_are_the_newest(self) -> None:
        feed = json.loads(body(self.snapshot, "/api/feed.json"))
        newest = self.snapshot.dataset.reviews[:FEED_ITEMS]
        self.assertEqual(FEED_ITEMS, 50)
        self.assertEqual([i["id"] for i in feed["items"]], [r.id for r in newest])
        first = feed["items"][0]
        self.assertEqual(first["_review"], newest[0].as_record())
        self.assertEqual(first["date_published"], f"{newest[0].date}T00:00:00Z")
        self.assertEqual(first["authors"][0]["name"], newest[0].author)

    def test_atom_conforms(self) -> None:
        xml = body(self.snapshot, "/feed.xml")
        self.assertEqual(atom_problems(xml), [])
        parsed = feedparser.parse(xml)
        self.assertEqual(parsed.version, "atom10")
        self.assertEqual(len(parsed.entries), FEED_ITEMS)
        links = {
            link.rel: link.href for link in parsed.feed.links if link.rel != "alternate"
        }
        self.assertEqual(
            links, {"self": f"{BASE}/feed.xml", "hub": f"{BASE}/api/websub/hub"}
        )
        newest = self.snapshot.dataset.reviews[0]
        self.assertEqual(parsed.entries[0].author, newest.author)


class RenderingTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = Path(self.mktemp())

    def test_records_written_one_at_a_time(self) -> None:
        """
        The records body is written one record at a time: making it holds
        little more than the body twice, not each record's own buffer
        (orjson's output holds 4 KiB whatever its length).
        """
        write_data(self.dir, [review(n) for n in range(2000)])
        _, dataset = load_dataset(self.dir)
        tracing = tracemalloc.is_tracing()
        if not tracing:
            tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            records = render_reviews(dataset)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            if not tracing:
                tracemalloc.stop()
        self.assertLess(peak, 4 * len(records.body))

    def test_rating_only_and_replies_in_feeds(self) -> None:
        """A review with no text still has content; an owner reply is shown."""
        write_data(
            self.dir,
            [
                review(1, text=None, rating=4, date="2024-05-01"),
                review(
                    2,
                    date="2024-04-01",
                    owner_reply={"text": "Sorry, we fixed it.", "date": "2024-04-03"},
                ),
            ],
        )
        snapshot = snapshot_of(self.dir)
        items = json.loads(body(snapshot, "/api/feed.json"))["items"]
        self.assertEqual(
            items[0]["content_text"],
            "Rated 4 out of 5 stars, without a written review.",
        )
        self.assertIn("Sorry, we fixed it.", items[1]["content_text"])
        self.assertEqual(items[1]["date_modified"], "2024-04-03T00:00:00Z")
        xml = body(snapshot, "/feed.xml")
        self.assertEqual(atom_problems(xml), [])
        self.assertEqual(
            json_feed_problems(json.loads(body(snapshot, "/api/feed.json"))), []
        )

    def test_untrusted_text_is_escaped(self) -> None:
        """
        Markup and control characters in review text reach readers as text
        and never break the XML.
        """
        hostile = 'Tom & Jerry\'s crew <script>alert("x")</script> \x0b\x01 ]]> fine'
        write_data(self.dir, [review(1, text=hostile, author="<b>Eve</b> & co")])
        snapshot = snapshot_of(self.dir)
        xml = body(snapshot, "/feed.xml")
        self.assertEqual(atom_problems(xml), [])
        entry = feedparser.parse(xml).entries[0]
        self.assertEqual(entry.content[0].value, hostile.replace("\x0b\x01", ""))
        self.assertEqual(entry.author, "<b>Eve</b> & co")
        feed = json.loads(body(snapshot, "/api/feed.json"))
        self.assertEqual(feed["items"][0]["content_text"], hostile)

    def test_no_reviews(self) -> None:
        write_data(self.dir, [])
        snapshot = snapshot_of(self.dir)
        document = json.loads(body(snapshot, "/reviews.json"))
        self.assertIsNone(document["aggregate_rating"]["rating_value"])
        self.assertEqual(document["aggregate_rating"]["review_count"], 0)
        self.assertEqual(atom_problems(body(snapshot, "/feed.xml")), [])
        self.assertEqual(
            json_feed_problems(json.loads(body(snapshot, "/api/feed.json"))), []
        )

    def test_unicode_kept_as_utf8(self) -> None:
        write_data(self.dir, [review(1, text="Très bien, l'été dernier 👍")])
        raw = body(snapshot_of(self.dir), "/reviews.json")
        self.assertIn("Très bien, l'été dernier 👍".encode(), raw)
