"""
Tests for L{tests.support.feedvalidation}.

A validator that never fails proves nothing about the feeds it passes, so
besides accepting valid feeds these tests show that each rule the feed tests
rely on is actually reported when broken.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import feedparser
import lxml.html
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.loading import DEMO_DATA
from reviewsd.web.site import make_site
from tests.support import BASE, Holder, review, snapshot_of, write_data
from tests.support.feedvalidation import (
    atom_problems,
    json_feed_problems,
    rfc3339_problem,
)
from tests.support.site import Connection

ATOM_NS = "http://www.w3.org/2005/Atom"


def minimal_json_feed() -> dict[str, Any]:
    """A small JSON Feed 1.1 document that satisfies every check."""
    return {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "Example reviews",
        "home_page_url": "https://reviews.example/",
        "feed_url": "https://reviews.example/api/feed.json",
        "authors": [{"name": "Example Ltd"}],
        "hubs": [{"type": "WebSub", "url": "https://hub.example/"}],
        "items": [
            {
                "id": "https://reviews.example/reviews/1",
                "url": "https://reviews.example/reviews/1",
                "title": "Great service",
                "content_text": "Five stars.",
                "date_published": "2024-05-01T12:00:00Z",
                "date_modified": "2024-05-02T08:30:00.5+02:00",
                "authors": [{"name": "A. Customer"}],
            },
            {
                "id": "https://reviews.example/reviews/2",
                "content_html": "<p>Fine.</p>",
            },
        ],
    }


MINIMAL_ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <id>https://reviews.example/feed.xml</id>
  <title>Example reviews</title>
  <updated>2024-05-02T08:30:00Z</updated>
  <author><name>Example Ltd</name></author>
  <link rel="self" href="https://reviews.example/feed.xml"/>
  <link rel="alternate" type="text/html" href="https://reviews.example/"/>
  <entry>
    <id>https://reviews.example/reviews/1</id>
    <title>Great service</title>
    <updated>2024-05-01T12:00:00Z</updated>
    <published>2024-05-01T12:00:00+01:00</published>
    <content type="text">Five stars.</content>
  </entry>
  <entry>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <title type="html">Fine &lt;em&gt;service&lt;/em&gt;</title>
    <updated>2024-05-02T08:30:00.25-05:00</updated>
    <link href="https://reviews.example/reviews/2"/>
  </entry>
</feed>
"""


def atom_entries(*entries: str, feed_author: bool = False) -> bytes:
    """An otherwise valid Atom feed holding the given entry markup."""
    author = "<author><name>Example Ltd</name></author>" if feed_author else ""
    return (
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        "<id>tag:reviews.example,2024:feed</id>"
        "<title>Example reviews</title>"
        "<updated>2024-05-02T08:30:00Z</updated>"
        f"{author}{''.join(entries)}</feed>"
    ).encode()


def atom_entry(extra: str = "", *, n: int = 1, author: bool = True) -> str:
    """Markup for one entry with its required children plus C{extra}."""
    name = "<author><name>A. Customer</name></author>" if author else ""
    return (
        f"<entry><id>tag:reviews.example,2024:{n}</id><title>Review {n}</title>"
        f"<updated>2024-05-01T12:00:00Z</updated>{name}{extra}</entry>"
    )


class JSONFeedProblemsTests(SynchronousTestCase):
    """L{json_feed_problems} accepts valid feeds and reports each violation."""

    def assertReported(self, feed: object, *fragments: str) -> list[str]:
        """Every fragment appears in at least one of the reported problems."""
        problems = json_feed_problems(feed)
        for fragment in fragments:
            self.assertTrue(
                any(fragment in problem for problem in problems),
                f"{fragment!r} not reported in {problems!r}",
            )
        return problems

    def test_valid(self) -> None:
        """A valid JSON Feed 1.1 document has no problems."""
        self.assertEqual(json_feed_problems(minimal_json_feed()), [])

    def test_valid_with_extensions(self) -> None:
        """Underscore-prefixed extension objects and attachments are allowed."""
        feed = minimal_json_feed()
        feed["_reviewsd"] = {"about": "https://reviews.example/about"}
        feed["items"][0]["attachments"] = [
            {"url": "https://reviews.example/a.png", "mime_type": "image/png"}
        ]
        feed["items"][0]["tags"] = ["service"]
        self.assertEqual(json_feed_problems(feed), [])

    def test_missing_version(self) -> None:
        """A feed without version is reported."""
        feed = minimal_json_feed()
        del feed["version"]
        self.assertReported(feed, "version is missing")

    def test_wrong_version(self) -> None:
        """The 1.0 version URL, which the schema allows, is still reported."""
        feed = minimal_json_feed()
        feed["version"] = "https://jsonfeed.org/version/1"
        self.assertReported(feed, "$.version: 'https://jsonfeed.org/version/1' is not")

    def test_item_without_id(self) -> None:
        """An item without id is reported."""
        feed = minimal_json_feed()
        del feed["items"][1]["id"]
        self.assertReported(feed, "$.items[1]: id is missing")

    def test_item_id_not_string(self) -> None:
        """A numeric id is reported, not silently coerced."""
        feed = minimal_json_feed()
        feed["items"][0]["id"] = 1
        self.assertReported(feed, "$.items[0].id: 1 is not a string")

    def test_duplicate_item_id(self) -> None:
        """Two items with one id are reported."""
        feed = minimal_json_feed()
        feed["items"][1]["id"] = feed["items"][0]["id"]
        self.assertReported(feed, "duplicates $.items[0].id")

    def test_item_without_content(self) -> None:
        """An item with neither content_html nor content_text is reported."""
        feed = minimal_json_feed()
        del feed["items"][0]["content_text"]
        self.assertReported(feed, "$.items[0]: has neither content_html nor")

    def test_bad_date_published(self) -> None:
        """A date_published that is not RFC 3339 is reported."""
        for bad in (
            "2024-05-01 12:00:00Z",
            "2024-05-01T12:00:00",
            "2024-02-30T12:00:00Z",
            "Wed, 01 May 2024 12:00:00 GMT",
            1714564800,
        ):
            feed = minimal_json_feed()
            feed["items"][0]["date_published"] = bad
            self.assertReported(feed, "$.items[0].date_published:")

    def test_bad_date_modified(self) -> None:
        """A date_modified that is not RFC 3339 is reported."""
        feed = minimal_json_feed()
        feed["items"][0]["date_modified"] = "2024-05-01T25:00:00Z"
        self.assertReported(feed, "$.items[0].date_modified:")

    def test_hub_without_url(self) -> None:
        """A hub without url is reported."""
        feed = minimal_json_feed()
        del feed["hubs"][0]["url"]
        self.assertReported(feed, "$.hubs[0]: a hub must have a url")

    def test_deprecated_author(self) -> None:
        """The JSON Feed 1.0 author key is reported on the feed and on items."""
        feed = minimal_json_feed()
        feed["author"] = {"name": "Example Ltd"}
        feed["items"][1]["author"] = {"name": "A. Customer"}
        self.assertReported(
            feed,
            "$.author: 'author' is deprecated",
            "$.items[1].author: 'author' is deprecated",
        )

    def test_author_without_name_url_or_avatar(self) -> None:
        """An author object naming nobody is reported."""
        feed = minimal_json_feed()
        feed["items"][0]["authors"] = [{"_x": {}}]
        self.assertReported(feed, "$.items[0].authors[0]: an author must have")

    def test_authors_not_array(self) -> None:
        """authors given as one object, not an array, is reported."""
        feed = minimal_json_feed()
        feed["authors"] = {"name": "Example Ltd"}
        self.assertReported(feed, "$.authors: authors must be an array")

    def test_missing_public_urls(self) -> None:
        """A public feed needs feed_url and home_page_url."""
        feed = minimal_json_feed()
        del feed["feed_url"], feed["home_page_url"]
        self.assertReported(feed, "feed_url is missing", "home_page_url is missing")

    def test_relative_url(self) -> None:
        """The schema's "uri" format is enforced: URLs must be absolute."""
        feed = minimal_json_feed()
        feed["items"][0]["url"] = "/reviews/1"
        self.assertReported(feed, "$.items[0].url: '/reviews/1' is not a 'uri'")

    def test_unknown_key(self) -> None:
        """A key that is neither in the spec nor an extension is reported."""
        feed = minimal_json_feed()
        feed["items"][0]["rating"] = 5
        self.assertReported(feed, "$.items[0]: 'rating' does not match")

    def test_not_an_object(self) -> None:
        """A document that is not a JSON object is reported, not crashed on."""
        self.assertReported([minimal_json_feed()], "must be a JSON object")

    def test_input_not_modified(self) -> None:
        """Validation leaves the document alone."""
        feed = minimal_json_feed()
        before = copy.deepcopy(feed)
        json_feed_problems(feed)
        self.assertEqual(feed, before)


class RFC3339Tests(SynchronousTestCase):
    """L{rfc3339_problem} is a strict RFC 3339 date-time check."""

    def test_valid(self) -> None:
        """Offsets, fractions, lowercase separators and leap seconds parse."""
        for good in (
            "1985-04-12T23:20:50.52Z",
            "1996-12-19T16:39:57-08:00",
            "1990-12-31T23:59:60Z",
            "1990-12-31T15:59:60-08:00",
            "2024-02-29t00:00:00z",
        ):
            self.assertIsNone(rfc3339_problem(good), good)

    def test_invalid(self) -> None:
        """Out-of-range fields and non-RFC 3339 spellings are rejected."""
        for bad in (
            "2023-02-29T00:00:00Z",
            "2024-01-01T00:00:61Z",
            "2024-01-01T12:00:60Z",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+0100",
            "2024-01-01",
            "２０２４-01-01T00:00:00Z",
            " 2024-01-01T00:00:00Z",
        ):
            self.assertIsNotNone(rfc3339_problem(bad), bad)

    def test_atom_case(self) -> None:
        """RFC 4287 3.3 demands uppercase T and Z."""
        self.assertIsNotNone(rfc3339_problem("2024-02-29t00:00:00Z", atom=True))
        self.assertIsNotNone(rfc3339_problem("2024-02-29T00:00:00z", atom=True))
        self.assertIsNone(rfc3339_problem("2024-02-29T00:00:00Z", atom=True))


class AtomProblemsTests(SynchronousTestCase):
    """L{atom_problems} accepts valid Atom and reports each violation."""

    def assertReported(self, xml: bytes, *fragments: str) -> list[str]:
        """Every fragment appears in at least one of the reported problems."""
        problems = atom_problems(xml)
        for fragment in fragments:
            self.assertTrue(
                any(fragment in problem for problem in problems),
                f"{fragment!r} not reported in {problems!r}",
            )
        return problems

    def test_valid(self) -> None:
        """A valid Atom feed has no problems."""
        self.assertEqual(atom_problems(MINIMAL_ATOM), [])

    def test_valid_rich(self) -> None:
        """XHTML content, extensions and the optional elements validate."""
        xml = atom_entries(
            atom_entry(
                '<link rel="alternate" type="text/html" hreflang="en"'
                ' href="https://reviews.example/en/1"/>'
                '<link rel="alternate" type="text/html" hreflang="fr"'
                ' href="https://reviews.example/fr/1"/>'
                '<link rel="enclosure" type="image/png" length="1337"'
                ' href="https://reviews.example/1.png"/>'
                '<category term="service" scheme="https://reviews.example/c"/>'
                "<contributor><name>Mod</name>"
                "<email>mod@reviews.example</email></contributor>"
                '<summary type="text">Short.</summary>'
                '<rights type="html">&lt;b&gt;CC-BY&lt;/b&gt;</rights>'
                '<content type="xhtml" xml:lang="en">'
                '<div xmlns="http://www.w3.org/1999/xhtml"><p>Five.</p></div>'
                "</content>"
                '<rv:rating xmlns:rv="https://reviews.example/ns">5</rv:rating>'
            ),
            atom_entry(
                "<source><id>tag:other.example,2024:feed</id>"
                "<author><name>Elsewhere</name></author></source>"
                '<content type="image/png" src="https://reviews.example/2.png"/>'
                "<summary>Picture.</summary>",
                n=2,
            ),
        )
        self.assertEqual(atom_problems(xml), [])

    def test_valid_entry_document(self) -> None:
        """A standalone atom:entry document is valid Atom too."""
        entry = atom_entry("<content>Five stars.</content>").replace(
            "<entry>", f'<entry xmlns="{ATOM_NS}">'
        )
        self.assertEqual(atom_problems(entry.encode("utf-8")), [])

    def test_missing_feed_id(self) -> None:
        """A feed without atom:id is reported."""
        xml = MINIMAL_ATOM.replace(b"<id>https://reviews.example/feed.xml</id>", b"")
        self.assertReported(
            xml, "atom:feed: must contain exactly one atom:id, found 0", "RELAX NG"
        )

    def test_two_entry_titles(self) -> None:
        """An entry with two atom:title elements is reported."""
        xml = atom_entries(
            atom_entry("<title>Again</title><content>x</content>"), feed_author=True
        )
        self.assertReported(xml, "must contain exactly one atom:title, found 2")

    def test_bad_updated(self) -> None:
        """An atom:updated that is not RFC 3339 is reported."""
        for bad in (b"2024-05-02 08:30:00Z", b"2024-05-02T08:30:00", b"yesterday"):
            xml = MINIMAL_ATOM.replace(b"2024-05-02T08:30:00Z", bad)
            self.assertReported(xml, f"atom:updated at line 5: {bad.decode()!r}")

    def test_lowercase_z(self) -> None:
        """RFC 4287 3.3: lowercase z is RFC 3339 but not Atom."""
        xml = MINIMAL_ATOM.replace(b"2024-05-02T08:30:00Z", b"2024-05-02T08:30:00z")
        self.assertReported(xml, "uppercase 'T' and 'Z'")

    def test_bad_published(self) -> None:
        """An atom:published that is not RFC 3339 is reported."""
        xml = MINIMAL_ATOM.replace(
            b"2024-05-01T12:00:00+01:00", b"2024-05-01T12:00:00+01"
        )
        self.assertReported(xml, "atom:published at line 13: '2024-05-01T12:00:00+01'")

    def test_entry_without_author(self) -> None:
        """An entry without author in a feed without author is reported."""
        xml = atom_entries(
            atom_entry("<content>x</content>"),
            atom_entry("<content>y</content>", n=2, author=False),
        )
        self.assertReported(
            xml,
            "(id 'tag:reviews.example,2024:2'): has no atom:author and neither"
            " has its feed",
        )

    def test_authors_on_every_entry(self) -> None:
        """A feed without author is fine when every entry has one."""
        xml = atom_entries(
            atom_entry("<content>x</content>"),
            atom_entry("<content>y</content>", n=2),
        )
        self.assertEqual(atom_problems(xml), [])

    def test_entry_document_without_author(self) -> None:
        """A standalone entry document needs its own author."""
        entry = atom_entry("<content>x</content>", author=False).replace(
            "<entry>", f'<entry xmlns="{ATOM_NS}">'
        )
        self.assertReported(entry.encode("utf-8"), "needs an atom:author")

    def test_entry_without_content_or_alternate(self) -> None:
        """An entry with neither content nor an alternate link is reported."""
        xml = atom_entries(
            atom_entry('<link rel="self" href="https://reviews.example/1"/>'),
            feed_author=True,
        )
        self.assertReported(
            xml, "has neither atom:content nor an atom:link with rel='alternate'"
        )

    def test_two_alternate_links_same_type(self) -> None:
        """Two alternate links with one type and hreflang are reported."""
        xml = atom_entries(
            atom_entry(
                '<link rel="alternate" type="text/html"'
                ' href="https://reviews.example/1"/>'
                '<link type="text/html" href="https://reviews.example/one"/>'
            ),
            feed_author=True,
        )
        self.assertReported(
            xml, "more than one atom:link rel='alternate' with type='text/html'"
        )

    def test_two_feed_alternate_links(self) -> None:
        """The alternate link rule applies to the feed's own links too."""
        xml = MINIMAL_ATOM.replace(
            b'<link rel="self"',
            b'<link rel="alternate" type="TEXT/HTML" href="https://x.example/"/>'
            b'<link rel="self"',
        )
        self.assertReported(xml, "atom:feed: more than one atom:link")

    def test_out_of_line_content_needs_summary(self) -> None:
        """Content with src but no summary is reported."""
        xml = atom_entries(
            atom_entry('<content type="image/png" src="https://x.example/1.png"/>'),
            feed_author=True,
        )
        self.assertReported(xml, "must have an atom:summary")

    def test_not_well_formed(self) -> None:
        """XML that is not well-formed is reported, not raised."""
        problems = self.assertReported(
            MINIMAL_ATOM.replace(b"</feed>", b""), "not well-formed XML"
        )
        self.assertEqual(len(problems), 1)

    def test_wrong_namespace(self) -> None:
        """The pre-standard Atom 0.3 namespace is not Atom 1.0."""
        xml = MINIMAL_ATOM.replace(ATOM_NS.encode(), b"http://purl.org/atom/ns#")
        self.assertReported(xml, "not atom:feed or atom:entry", "RELAX NG")

    def test_no_namespace(self) -> None:
        """Atom elements must be in the Atom namespace."""
        xml = MINIMAL_ATOM.replace(b' xmlns="http://www.w3.org/2005/Atom"', b"")
        self.assertReported(xml, "not atom:feed or atom:entry")

    def test_relative_id(self) -> None:
        """An atom:id must be an absolute IRI."""
        xml = MINIMAL_ATOM.replace(
            b"<id>https://reviews.example/reviews/1</id>", b"<id>/reviews/1</id>"
        )
        self.assertReported(xml, "'/reviews/1' is not an absolute IRI")

    def test_relax_ng_structure(self) -> None:
        """The RFC 4287 grammar itself is applied: person needs a name."""
        xml = MINIMAL_ATOM.replace(
            b"<author><name>Example Ltd</name></author>",
            b"<author><email>x@reviews.example</email></author>",
        )
        self.assertReported(xml, "RELAX NG (RFC 4287 appendix B)")

    def test_relax_ng_text_type(self) -> None:
        """A text construct with an unknown type is reported by the grammar."""
        xml = MINIMAL_ATOM.replace(b'<title type="html">', b'<title type="markdown">')
        self.assertReported(xml, "RELAX NG (RFC 4287 appendix B)")

    def test_link_without_href(self) -> None:
        """atom:link needs an href."""
        xml = MINIMAL_ATOM.replace(
            b'<link href="https://reviews.example/reviews/2"/>',
            b'<link href="https://reviews.example/reviews/2"/><link rel="related"/>',
        )
        self.assertReported(xml, "RELAX NG (RFC 4287 appendix B)")


# RFC 4151 section 2.1, with the specific part of reviewsd's review ids
_TAG = re.compile(
    r"tag:(?P<authority>[A-Za-z0-9._-]+@[a-z0-9.-]+|[a-z0-9.-]+)"
    r",(?P<date>[0-9]{4}(?:-[0-9]{2}(?:-[0-9]{2})?)?)"
    r":review/(?P<id>(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})+)"
)

SERVED = [
    review(1, id="plain", date="2024-05-01"),
    review(
        2,
        id="a/b c?d#\u00e9%&<>\"'+",
        date="2024-04-01",
        owner_reply={"text": "Thanks!", "date": "2024-04-02"},
    ),
    review(3, id="rated", date="2024-03-01", text=None, source_url=None),
    review(4, id="hidden", verified=False),
]


class ServedFeedTests(SynchronousTestCase):
    """
    The feeds reviewsd serves pass these validators, and a consumer that
    knows only the feeds ties every Atom entry and JSON Feed item to its
    review: by the entry's id, and by following its links.
    """

    def setUp(self) -> None:
        directory = write_data(Path(self.mktemp()), SERVED)
        self.snapshot = snapshot_of(directory)
        holder = Holder(self.snapshot)
        self.connection = Connection(make_site(holder, MemoryReactorClock()))
        self.records = {r.id: r.as_record() for r in self.snapshot.dataset.reviews}

    def fetch(self, url: str) -> Any:
        self.assertTrue(url.startswith(BASE + "/"), url)
        answer = self.connection.request("GET", url.removeprefix(BASE))
        self.assertEqual(answer.code, 200, url)
        return answer

    def test_served_feeds_conform(self) -> None:
        for snapshot in (self.snapshot, snapshot_of(DEMO_DATA)):
            documents = snapshot.documents
            self.assertEqual(atom_problems(documents["/feed.xml"].identity.body), [])
            feed = json.loads(documents["/api/feed.json"].identity.body)
            self.assertEqual(json_feed_problems(feed), [])

    def test_atom_entries_name_their_reviews(self) -> None:
        """
        Each entry's id is an RFC 4151 tag ending in the review id,
        percent-encoded; its alternate links are the review's page and
        record, its via link the original.
        """
        parsed = feedparser.parse(self.snapshot.documents["/feed.xml"].identity.body)
        self.assertFalse(parsed.bozo, parsed.get("bozo_exception"))
        tied = []
        for entry in parsed.entries:
            tag = _TAG.fullmatch(entry.id)
            self.assertIsNotNone(tag, entry.id)
            assert tag is not None
            self.assertEqual(tag["authority"], "builders.example")
            review_id = unquote(tag["id"])
            record = self.records[review_id]
            tied.append(review_id)
            links = {(link.rel, link.get("type")): link.href for link in entry.links}
            page = self.fetch(links[("alternate", "text/html")])
            tree = lxml.html.document_fromstring(page.body)
            (canonical,) = [e for e in tree.iter("link") if e.get("rel") == "canonical"]
            self.assertEqual(canonical.get("href"), links[("alternate", "text/html")])
            self.assertEqual(entry.link, links[("alternate", "text/html")])
            answer = self.fetch(links[("alternate", "application/json")])
            self.assertEqual(answer.json, record)
            self.assertEqual(links.get(("via", "text/html")), record["source_url"])
        self.assertEqual(tied, [r.id for r in self.snapshot.dataset.reviews])
        self.assertNotIn("hidden", tied)

    def test_json_feed_items_name_their_reviews(self) -> None:
        """
        Each item's id is the review id and its url the review's page;
        external_url is the original, when there is one. (feedparser 6 reads
        no JSON Feed, so the feed is read as JSON.)
        """
        feed = json.loads(self.snapshot.documents["/api/feed.json"].identity.body)
        self.assertEqual(json_feed_problems(feed), [])
        for item in feed["items"]:
            record = self.records[item["id"]]
            self.assertEqual(item["_review"], record)
            page = self.fetch(item["url"])
            self.assertIn(b'rel="canonical" href="' + item["url"].encode(), page.body)
            self.assertEqual(item.get("external_url"), record["source_url"])
        self.assertEqual(
            [i["id"] for i in feed["items"]],
            [r.id for r in self.snapshot.dataset.reviews],
        )

    def test_two_alternates_of_other_types(self) -> None:
        """RFC 4287 4.1.1: one alternate per type, so a page and a record pass."""
        xml = atom_entries(
            atom_entry(
                '<link rel="alternate" type="text/html"'
                ' href="https://reviews.example/reviews/1"/>'
                '<link rel="alternate" type="application/json"'
                ' href="https://reviews.example/api/reviews/1"/>'
                '<link rel="via" type="text/html" href="https://elsewhere.example/1"/>'
            ),
            feed_author=True,
        )
        self.assertEqual(atom_problems(xml), [])
