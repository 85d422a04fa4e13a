"""
Every review addressable: its page at C{/reviews/{id}} and its record at
C{/api/reviews/{id}} (validators, 304, HEAD, gzip, CORS, 404s, ids that need
percent-encoding, hostile text), the feeds' C{tag:} ids, the landing page's
links, C{/robots.txt} and the sitemap, in memory and over the real daemon.
"""

from __future__ import annotations

import gzip
import json
import socket
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import feedparser
import lxml.html
from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data import documents
from reviewsd.data.documents import (
    SITEMAP_URLS,
    ReviewPositions,
    render_sitemaps,
    review_tag,
    tag_authority,
)
from reviewsd.data.links import (
    ATOM_FEED_PATH,
    DEVELOPERS_PATH,
    HOME_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    REVIEWS_PATH,
    ROBOTS_PATH,
    SITEMAP_PATH,
    Links,
    review_path,
    rfc3339,
    sitemap_part_path,
)
from reviewsd.data.model import Business, Dataset, Review, business_from_json
from reviewsd.data.snapshot import Snapshot
from reviewsd.web.pages import CONTENT_SECURITY_POLICY, render_home
from reviewsd.web.site import make_site
from tests.support import BASE, BUSINESS, Holder, review, snapshot_of, write_data
from tests.support.daemon import DaemonTestCase, free_port
from tests.support.site import DEMO, Answer, Connection, SiteTestCase
from tests.support.sitemaps import lastmods, locations, sitemap_problems

AWKWARD = "a/b c?d#\u00e9%&<>\"'+"
"""An id with every kind of character a path must escape."""

LONG_TEXT = "The crew came on time, fixed the roof and cleaned up after. " * 30
HOSTILE_TEXT = "Fixed it. </script><!-- <b>bold</b> & done \x01"
HOSTILE_AUTHOR = '"><img src=x onerror=alert(1)> \u202eevil'
HOSTILE_REPLY = "</p><script>alert(4)</script>"
BIDI_CONTROLS = (
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

RECORDS = [
    review(
        1,
        id="long-1",
        date="2024-05-01",
        rating=4,
        text=LONG_TEXT,
        owner_reply={"text": "Thank you, Sam!", "date": "2024-05-03"},
    ),
    review(2, id=AWKWARD, date="2024-04-01"),
    review(
        3,
        id="hostile",
        date="2024-03-01",
        text=HOSTILE_TEXT,
        author=HOSTILE_AUTHOR,
        owner_reply={"text": HOSTILE_REPLY, "date": "2024-03-02"},
    ),
    review(4, id="hidden", verified=False),
    review(5, id="rated-only", date="2024-02-01", text=None, source_url=None),
]
PUBLISHED = [r["id"] for r in RECORDS if r["verified"]]


def dechunked(answer: Answer) -> bytes:
    """The body of an answer, its chunked transfer coding undone."""
    if answer.headers.get("transfer-encoding") != "chunked":
        return answer.body
    body, rest = b"", answer.body
    while True:
        size, _, rest = rest.partition(b"\r\n")
        length = int(size, 16)
        if not length:
            return body
        body, rest = body + rest[:length], rest[length + 2 :]


def html_problems(page: bytes) -> list[str]:
    """Parse errors by the WHATWG algorithm (html5lib)."""
    import html5lib

    parser = html5lib.HTMLParser(strict=False, namespaceHTMLElements=False)
    parser.parse(page)
    return [f"{position}: {code} {data}" for position, code, data in parser.errors]


def raw_get(port: int, path: str, *headers: str) -> tuple[dict[str, str], bytes]:
    """A GET over a plain socket, read to the close: the bytes as sent."""
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join([*lines, *headers]) + "\r\n\r\n").encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return fields, body


def json_ld_block(page: bytes) -> bytes:
    start = page.index(b'<script type="application/ld+json">')
    return page[start:].split(b">", 1)[1].split(b"</script>", 1)[0]


class SiteCase(SynchronousTestCase):
    """The data above, served by the site as the daemon assembles it."""

    records: list[dict[str, Any]] = RECORDS
    business: dict[str, Any] = BUSINESS

    def setUp(self) -> None:
        self.snapshot = self.load(self.records)
        self.holder = Holder(self.snapshot)
        self.connection = Connection(make_site(self.holder, MemoryReactorClock()))

    def load(self, records: list[dict[str, Any]], base: str = BASE) -> Snapshot:
        self.directory = write_data(Path(self.mktemp()), records, self.business)
        return snapshot_of(self.directory, base)

    def get(self, path: str, *headers: str, method: str = "GET") -> Answer:
        return self.connection.request(method, path, *headers)

    def review(self, review_id: str) -> Review:
        (found,) = [r for r in self.snapshot.dataset.reviews if r.id == review_id]
        return found


def record_path(review_id: str) -> str:
    return review_path(REVIEW_RECORD_PREFIX, review_id)


def page_path(review_id: str) -> str:
    return review_path(REVIEW_PAGE_PREFIX, review_id)


class RecordTests(SiteCase):
    """C{GET /api/reviews/{id}}: the record, as every document has it."""

    def test_every_published_record(self) -> None:
        reviews = self.snapshot.documents[REVIEWS_PATH]
        published = json.loads(reviews.identity.body)["reviews"]
        self.assertEqual(sorted(r["id"] for r in published), sorted(PUBLISHED))
        for record in published:
            answer = self.get(record_path(record["id"]))
            self.assertEqual(answer.code, 200, record["id"])
            self.assertEqual(answer.json, record)
            self.assertEqual(answer.json, self.review(record["id"]).as_record())
            self.assertIn(answer.body, reviews.identity.body)
            self.assertEqual(answer.headers["content-type"], "application/json")
            self.assertEqual(answer.headers["content-length"], str(len(answer.body)))
            self.assertEqual(
                answer.headers["last-modified"], reviews.http_date.decode()
            )
            self.assertRegex(answer.headers["etag"], r'^"[A-Za-z0-9_-]+"$')
            self.assertEqual(answer.headers["access-control-allow-origin"], "*")
            self.assertEqual(
                answer.headers["cache-control"], "public, max-age=5, must-revalidate"
            )
            self.assertEqual(answer.headers["vary"], "Accept-Encoding")

    def test_etag_moves_with_the_review_only(self) -> None:
        """Another review's change keeps a record's ETag; its own moves it."""
        before = {i: self.get(record_path(i)).headers["etag"] for i in PUBLISHED}
        self.assertEqual(len(set(before.values())), len(PUBLISHED))
        changed = [dict(r) for r in RECORDS]
        changed[1]["text"] = "Edited."
        self.holder.snapshot = self.load(changed)
        after = {i: self.get(record_path(i)).headers["etag"] for i in PUBLISHED}
        for review_id in PUBLISHED:
            if review_id == AWKWARD:
                self.assertNotEqual(after[review_id], before[review_id])
            else:
                self.assertEqual(after[review_id], before[review_id], review_id)

    def test_not_modified(self) -> None:
        """304 by ETag (alone or in a list) and by date, with no body or length."""
        first = self.get(record_path("long-1"))
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        for header in (
            f"If-None-Match: {etag}",
            f'If-None-Match: "other", {etag}',
            f"If-None-Match: W/{etag}",
            f"If-Modified-Since: {modified}",
        ):
            answer = self.get(record_path("long-1"), header)
            self.assertEqual(answer.code, 304, header)
            self.assertEqual(answer.body, b"")
            self.assertNotIn("content-length", answer.headers)
            self.assertEqual(answer.headers["etag"], etag)
        self.assertEqual(
            self.get(record_path("long-1"), 'If-None-Match: "other"').code, 200
        )

    def test_head(self) -> None:
        get = self.get(record_path("long-1"))
        head = self.get(record_path("long-1"), method="HEAD")
        self.assertEqual(head.code, 200)
        self.assertEqual(head.body, b"")
        for name in ("content-length", "content-type", "etag", "last-modified"):
            self.assertEqual(head.headers[name], get.headers[name], name)

    def test_gzip(self) -> None:
        """A record of 1 KiB or more is offered gzipped, with its own ETag."""
        plain = self.get(record_path("long-1"))
        packed = self.get(record_path("long-1"), "Accept-Encoding: gzip")
        self.assertGreater(len(plain.body), 1024)
        self.assertEqual(packed.headers["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(packed.body), plain.body)
        self.assertEqual(packed.headers["content-length"], str(len(packed.body)))
        self.assertNotEqual(packed.headers["etag"], plain.headers["etag"])
        again = self.get(
            record_path("long-1"),
            "Accept-Encoding: gzip",
            f"If-None-Match: {packed.headers['etag']}",
        )
        self.assertEqual(again.code, 304)
        twice = self.get(record_path("long-1"), "Accept-Encoding: gzip")
        self.assertEqual(twice.body, packed.body)
        short = self.get(record_path("rated-only"), "Accept-Encoding: gzip")
        self.assertNotIn("content-encoding", short.headers)
        self.assertEqual(short.json["id"], "rated-only")

    def test_unknown_and_unpublished(self) -> None:
        """An unknown id, or one of a review that is not verified, is a JSON 404."""
        for review_id in ("nope", "hidden", "long-1 ", "LONG-1"):
            answer = self.get(record_path(review_id))
            self.assertEqual(answer.code, 404, review_id)
            self.assertEqual(answer.headers["content-type"], "application/json")
            error = json.loads(dechunked(answer))
            self.assertEqual(error["error"], "not_found")
            self.assertIn(repr(review_id), error["message"])
        raw_slash = self.get(REVIEW_RECORD_PREFIX + "long-1/x")
        self.assertEqual(raw_slash.code, 404)
        self.assertEqual(json.loads(dechunked(raw_slash))["error"], "not_found")

    def test_percent_encoded_ids(self) -> None:
        """
        An id is its path segment decoded once: C{%2F} is part of the id, a
        C{/} is not, and escapes are read in either case.
        """
        path = record_path(AWKWARD)
        self.assertEqual(
            path, "/api/reviews/a%2Fb%20c%3Fd%23%C3%A9%25%26%3C%3E%22%27%2B"
        )
        answer = self.get(path)
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.json["id"], AWKWARD)
        lower = self.get(path.replace("%C3%A9", "%c3%a9"))
        self.assertEqual(lower.json["id"], AWKWARD)
        self.assertEqual(self.get(REVIEW_RECORD_PREFIX + "a/b%20c").code, 404)
        self.assertEqual(self.snapshot.links.review_record(AWKWARD), BASE + path)

    def test_preflight(self) -> None:
        answer = self.get(record_path(AWKWARD), method="OPTIONS")
        self.assertEqual(answer.code, 204)
        self.assertEqual(answer.headers["allow"], "GET, HEAD, OPTIONS")
        self.assertEqual(answer.headers["access-control-allow-origin"], "*")
        self.assertIn("If-None-Match", answer.headers["access-control-allow-headers"])

    def test_other_methods(self) -> None:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            answer = self.get(record_path("long-1"), method=method)
            self.assertEqual(answer.code, 405, method)
            self.assertEqual(answer.headers["allow"], "GET, HEAD, OPTIONS")
            error = json.loads(dechunked(answer))
            self.assertEqual(error["error"], "method_not_allowed")

    def test_search_and_since_keep_their_routes(self) -> None:
        search = self.get("/api/reviews/search?limit=1")
        self.assertEqual(set(search.json), {"matched", "returned", "reviews"})
        since = self.get("/api/reviews/since/2024-01-01")
        self.assertEqual(set(since.json), {"since", "count", "reviews"})
        self.assertEqual(self.get("/api/reviews/since/2024-13-01").code, 400)


class PositionsTests(SiteCase):
    def test_every_id_and_no_other(self) -> None:
        reviews = self.snapshot.dataset.reviews
        positions = ReviewPositions(reviews)
        for position, shown in enumerate(reviews):
            self.assertEqual(positions.get(shown.id), position)
        for missing in ("", "hidden", "long", "long-10", "zzz", "\U0010ffff"):
            self.assertIsNone(positions.get(missing), missing)
        self.assertIsNone(ReviewPositions(()).get("x"))


class PageTests(SiteCase):
    """C{GET /reviews/{id}}: the review's page."""

    def page(self, review_id: str, *headers: str) -> Answer:
        return self.get(page_path(review_id), *headers)

    def test_content(self) -> None:
        """The rating, date, text, reply, source, and the business's rating."""
        shown = self.review("long-1")
        answer = self.page("long-1")
        self.assertEqual(answer.code, 200)
        self.assertEqual(html_problems(answer.body), [])
        tree = lxml.html.document_fromstring(answer.body)
        (h1,) = tree.iter("h1")
        self.assertEqual(h1.text_content(), "4 out of 5 stars from Customer 1")
        (article,) = tree.iter("article")
        text = article.text_content()
        self.assertIn(" ".join(LONG_TEXT.split()), " ".join(text.split()))
        self.assertIn("Thank you, Sam!", text)
        self.assertIn("1 May 2024", text)
        times = [t.get("datetime") for t in article.iter("time")]
        self.assertEqual(times, ["2024-05-01", "2024-05-03"])
        (stars,) = [s for s in article.iter("svg")]
        self.assertEqual(stars.get("aria-label"), "4 out of 5 stars")
        (source,) = [a for a in article.iter("a") if a.get("rel")]
        self.assertEqual(source.get("href"), shown.source_url)
        self.assertEqual(source.get("rel"), "external nofollow")
        business = tree.get_element_by_id("business")
        self.assertEqual(business.find("h2").text_content(), BUSINESS["name"])
        ratings = [r for r in self.snapshot.dataset.reviews]
        average = round(sum(r.rating for r in ratings) / len(ratings), 2)
        (big,) = [d for d in business.iter("data")]
        self.assertEqual(big.get("value"), str(average))
        links = {
            (e.get("rel"), e.get("type")): e.get("href")
            for e in tree.find("head").iter("link")
        }
        self.assertEqual(
            links[("canonical", None)], self.snapshot.links.review_page("long-1")
        )
        alternates = [
            e.get("href")
            for e in tree.find("head").iter("link")
            if e.get("type") == "application/json"
        ]
        self.assertIn(self.snapshot.links.review_record("long-1"), alternates)

    def test_json_ld(self) -> None:
        """schema.org Review of the LocalBusiness the landing page describes."""
        answer = self.page("long-1")
        thing = json.loads(json_ld_block(answer.body))
        permalink = self.snapshot.links.review_page("long-1")
        self.assertEqual(thing["@context"], "https://schema.org")
        self.assertEqual(thing["@type"], "Review")
        self.assertEqual((thing["@id"], thing["url"]), (permalink, permalink))
        self.assertEqual(thing["author"], {"@type": "Person", "name": "Customer 1"})
        self.assertEqual(thing["datePublished"], "2024-05-01")
        self.assertEqual(thing["reviewRating"]["ratingValue"], 4)
        self.assertEqual(thing["reviewBody"], LONG_TEXT)
        self.assertEqual(thing["sameAs"], self.review("long-1").source_url)
        item = thing["itemReviewed"]
        self.assertEqual(item["@type"], "LocalBusiness")
        self.assertEqual(item["@id"], self.snapshot.links.home + "#business")
        self.assertEqual(item["name"], BUSINESS["name"])
        self.assertEqual(item["aggregateRating"]["reviewCount"], len(PUBLISHED))
        self.assertEqual(thing["comment"]["text"], "Thank you, Sam!")
        self.assertEqual(thing["comment"]["dateCreated"], "2024-05-03")
        home = lxml.html.document_fromstring(render_home(self.snapshot))
        (block,) = [s for s in home.iter("script")]
        self.assertEqual(json.loads(block.text)["@id"], item["@id"])

    def test_rating_only(self) -> None:
        answer = self.page("rated-only")
        tree = lxml.html.document_fromstring(answer.body)
        (article,) = tree.iter("article")
        stars = self.review("rated-only").rating
        self.assertIn(
            f"Rated {stars} out of 5 stars, without a written review.",
            article.text_content(),
        )
        self.assertEqual([a for a in article.iter("a")], [])
        self.assertNotIn("reviewBody", json.loads(json_ld_block(answer.body)))

    def test_headers(self) -> None:
        """The landing page's policy, and the documents' caching and CORS."""
        answer = self.page("long-1")
        self.assertEqual(answer.headers["content-type"], "text/html; charset=utf-8")
        self.assertEqual(
            answer.headers["content-security-policy"],
            CONTENT_SECURITY_POLICY.decode(),
        )
        self.assertEqual(answer.headers["x-content-type-options"], "nosniff")
        self.assertEqual(answer.headers["access-control-allow-origin"], "*")
        self.assertEqual(
            answer.headers["last-modified"],
            self.snapshot.documents[REVIEWS_PATH].http_date.decode(),
        )
        self.assertEqual(answer.headers["content-length"], str(len(answer.body)))

    def test_not_modified_head_gzip(self) -> None:
        plain = self.page("long-1")
        etag = plain.headers["etag"]
        unchanged = self.page("long-1", f"If-None-Match: {etag}")
        self.assertEqual((unchanged.code, unchanged.body), (304, b""))
        self.assertNotIn("content-length", unchanged.headers)
        by_date = self.page(
            "long-1", f"If-Modified-Since: {plain.headers['last-modified']}"
        )
        self.assertEqual(by_date.code, 304)
        head = self.get(page_path("long-1"), method="HEAD")
        self.assertEqual((head.code, head.body), (200, b""))
        self.assertEqual(
            head.headers["content-length"], plain.headers["content-length"]
        )
        self.assertEqual(head.headers["etag"], etag)
        packed = self.page("long-1", "Accept-Encoding: gzip")
        self.assertEqual(packed.headers["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(packed.body), plain.body)
        self.assertNotEqual(packed.headers["etag"], etag)
        self.assertEqual(
            self.page(
                "long-1",
                "Accept-Encoding: gzip",
                f"If-None-Match: {packed.headers['etag']}",
            ).code,
            304,
        )

    def test_etag_follows_what_the_page_shows(self) -> None:
        """
        The page shows the business's rating, so another review's rating
        moves its ETag, and the new page is sent; the same data keeps it.
        """
        before = self.page("long-1")
        self.holder.snapshot = snapshot_of(self.directory)
        self.assertEqual(self.page("long-1").headers["etag"], before.headers["etag"])
        changed = [dict(r) for r in RECORDS]
        changed[1]["rating"] = 1 if changed[1]["rating"] != 1 else 2
        self.holder.snapshot = self.load(changed)
        after = self.page("long-1", f"If-None-Match: {before.headers['etag']}")
        self.assertEqual(after.code, 200)
        self.assertNotEqual(after.body, before.body)

    def test_missing(self) -> None:
        """A small HTML 404 for an unknown or unpublished id, or a raw C{/}."""
        for path in (
            page_path("nope"),
            page_path("hidden"),
            REVIEW_PAGE_PREFIX + "long-1/x",
        ):
            answer = self.get(path)
            self.assertEqual(answer.code, 404, path)
            self.assertEqual(answer.headers["content-type"], "text/html; charset=utf-8")
            self.assertEqual(
                answer.headers["content-security-policy"],
                CONTENT_SECURITY_POLICY.decode(),
            )
            self.assertEqual(answer.headers["cache-control"], "no-store")
            self.assertEqual(html_problems(answer.body), [])
            tree = lxml.html.document_fromstring(answer.body)
            self.assertEqual(
                [h.text_content() for h in tree.iter("h1")], ["No such review"]
            )
            self.assertLess(len(answer.body), 1024)
            head = self.get(path, method="HEAD")
            self.assertEqual((head.code, head.body), (404, b""))
            self.assertEqual(head.headers["content-length"], str(len(answer.body)))

    def test_percent_encoded_id(self) -> None:
        answer = self.page(AWKWARD)
        self.assertEqual(answer.code, 200)
        tree = lxml.html.document_fromstring(answer.body)
        (canonical,) = [e for e in tree.iter("link") if e.get("rel") == "canonical"]
        self.assertEqual(canonical.get("href"), BASE + page_path(AWKWARD))
        self.assertEqual(html_problems(answer.body), [])

    def test_preflight_and_other_methods(self) -> None:
        options = self.get(page_path("long-1"), method="OPTIONS")
        self.assertEqual(options.code, 204)
        self.assertEqual(options.headers["allow"], "GET, HEAD, OPTIONS")
        post = self.get(page_path("long-1"), method="POST")
        self.assertEqual(post.code, 405)
        self.assertEqual(post.headers["allow"], "GET, HEAD, OPTIONS")
        self.assertEqual(json.loads(dechunked(post))["error"], "method_not_allowed")


class HostilePageTests(SiteCase):
    """Review text, names and the business's own data stay text."""

    business = {**BUSINESS, "name": "Evil <i>Co</i> & </script> \u202eCo"}

    def setUp(self) -> None:
        super().setUp()
        self.answer = self.get(page_path("hostile"))
        self.tree = lxml.html.document_fromstring(self.answer.body)

    def test_text_stays_text(self) -> None:
        page = self.answer.body
        self.assertEqual(self.answer.code, 200)
        for markup in (b"<script>alert", b"<img", b"<b>bold", b"<i>Co", b"\x01"):
            self.assertNotIn(markup, page)
        (article,) = self.tree.iter("article")
        self.assertIn(HOSTILE_TEXT.replace("\x01", ""), article.text_content())
        self.assertIn(HOSTILE_AUTHOR, article.find("h1").text_content())
        self.assertIn(HOSTILE_REPLY, article.text_content())
        self.assertEqual(
            self.tree.get_element_by_id("business").find("h2").text_content(),
            self.business["name"],
        )
        self.assertEqual(len(list(self.tree.iter("script"))), 1)
        self.assertEqual(list(self.tree.iter("img", "b", "i")), [])
        self.assertEqual(html_problems(page), [])

    def test_json_ld_cannot_end_its_block(self) -> None:
        """No C{</script>} or C{<!--} inside the block, and the JSON is exact."""
        block = json_ld_block(self.answer.body)
        for character in (b"<", b">", b"&"):
            self.assertNotIn(character, block)
        thing = json.loads(block)
        self.assertEqual(thing["reviewBody"], HOSTILE_TEXT)
        self.assertEqual(thing["author"]["name"], HOSTILE_AUTHOR)
        self.assertEqual(thing["comment"]["text"], HOSTILE_REPLY)
        self.assertEqual(thing["itemReviewed"]["name"], self.business["name"])

    def test_no_bidi_controls_in_title_or_attributes(self) -> None:
        """A right-to-left override reaches no title and no attribute."""
        title = self.tree.find("head/title")
        stars = self.review("hostile").rating
        self.assertEqual(
            title.text_content(),
            f'{stars} out of 5 stars from "><img src=x onerror=alert(1)> evil: '
            "Evil <i>Co</i> & </script> Co",
        )
        for element in self.tree.iter():
            for name, value in element.attrib.items():
                found = [c for c in value if c in BIDI_CONTROLS]
                self.assertEqual(found, [], (element.tag, name, value))
        for svg_title in self.tree.iter("{*}title"):
            self.assertEqual(
                [c for c in svg_title.text_content() if c in BIDI_CONTROLS], []
            )


class HomeLinksTests(SiteCase):
    def test_cards_link_to_permalinks(self) -> None:
        """Each review card's date links to the review's page, same-origin."""
        tree = lxml.html.document_fromstring(render_home(self.snapshot))
        articles = list(tree.iter("article"))
        self.assertEqual(len(articles), len(PUBLISHED))
        for article, shown in zip(articles, self.snapshot.dataset.reviews, strict=True):
            (link,) = [a for a in article.iter("a") if a.find("time") is not None]
            self.assertEqual(link.get("href"), page_path(shown.id))
            self.assertEqual(self.get(link.get("href")).code, 200)

    def test_under_a_base_path(self) -> None:
        snapshot = self.load(RECORDS, "https://example.com/shop")
        tree = lxml.html.document_fromstring(render_home(snapshot))
        hrefs = {a.get("href") for a in tree.iter("a")}
        self.assertIn("/shop" + page_path(AWKWARD), hrefs)


class TagTests(SynchronousTestCase):
    """The Atom ids: who names them, and that they stay when the service moves."""

    def business(self, **metadata: Any) -> Business:
        return business_from_json({"name": "Shop", **metadata})

    def test_authority(self) -> None:
        links = Links("https://reviews.example.com:8443/under")
        for metadata, expected in (
            ({"url": "https://Shop.Example/about"}, "shop.example"),
            ({"url": "https://b\u00fccher.example/"}, "xn--bcher-kva.example"),
            ({"email": "Office@Shop.Example"}, "Office@shop.example"),
            ({"email": "not an address"}, "reviews.example.com"),
            ({"url": "https://[2001:db8::1]/", "email": None}, "reviews.example.com"),
            ({}, "reviews.example.com"),
        ):
            self.assertEqual(
                tag_authority(self.business(**metadata), links), expected, metadata
            )
        self.assertEqual(
            tag_authority(self.business(), Links("http://[::1]:80")), "localhost"
        )

    def test_tag(self) -> None:
        self.assertEqual(
            review_tag("shop.example", AWKWARD),
            "tag:shop.example,2026:review/a%2Fb%20c%3Fd%23%C3%A9%25%26%3C%3E%22%27%2B",
        )

    def test_stable_across_base_urls(self) -> None:
        """The same data under two base URLs: the same ids, other links."""
        directory = write_data(Path(self.mktemp()), RECORDS)
        feeds = [
            feedparser.parse(
                snapshot_of(directory, base).documents[ATOM_FEED_PATH].identity.body
            )
            for base in (BASE, "http://127.0.0.1:8080/mirror")
        ]
        ids = [[e.id for e in feed.entries] for feed in feeds]
        self.assertEqual(ids[0], ids[1])
        self.assertTrue(all(i.startswith("tag:builders.example,2026:") for i in ids[0]))
        self.assertNotEqual(feeds[0].entries[0].link, feeds[1].entries[0].link)


class RobotsTests(SiteCase):
    def test_robots(self) -> None:
        answer = self.get(ROBOTS_PATH)
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.headers["content-type"], "text/plain; charset=utf-8")
        rules = [
            line
            for line in answer.body.decode().splitlines()
            if not line.startswith("#")
        ]
        self.assertEqual(
            rules,
            [
                "User-agent: *",
                "Disallow: /api/reviews/search",
                "Disallow: /api/reviews/since/",
                "",
                f"Sitemap: {BASE}{SITEMAP_PATH}",
            ],
        )
        etag = answer.headers["etag"]
        self.assertEqual(self.get(ROBOTS_PATH, f"If-None-Match: {etag}").code, 304)

    def test_under_a_base_path(self) -> None:
        snapshot = self.load(RECORDS, "https://example.com/shop")
        body = snapshot.documents[ROBOTS_PATH].identity.body.decode()
        self.assertIn("Disallow: /shop/api/reviews/search\n", body)
        self.assertIn("Sitemap: https://example.com/shop/sitemap.xml\n", body)


class SitemapTests(SiteCase):
    def test_valid_and_complete(self) -> None:
        """The pages and every published review's page, each with its lastmod."""
        answer = self.get(SITEMAP_PATH)
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.headers["content-type"], "application/xml")
        self.assertEqual(sitemap_problems(answer.body), [])
        links = self.snapshot.links
        reviews = self.snapshot.dataset.reviews
        self.assertEqual(
            locations(answer.body),
            [links.home, links.url(DEVELOPERS_PATH)]
            + [links.review_page(r.id) for r in reviews],
        )
        dated = lastmods(answer.body)
        for path in (HOME_PATH, DEVELOPERS_PATH):
            modified = self.snapshot.documents[path].last_modified
            self.assertEqual(dated[links.url(path)], rfc3339(modified))
        self.assertEqual(dated[links.review_page("long-1")], "2024-05-03")
        self.assertEqual(dated[links.review_page(AWKWARD)], "2024-04-01")
        self.assertNotIn(links.review_page("hidden"), dated)
        for loc in locations(answer.body)[2:]:
            path = loc.removeprefix(BASE)
            self.assertEqual(self.get(path).code, 200, path)

    def test_served_like_the_documents(self) -> None:
        self.holder.snapshot = self.load([review(n) for n in range(30)])
        plain = self.get(SITEMAP_PATH)
        packed = self.get(SITEMAP_PATH, "Accept-Encoding: gzip")
        self.assertEqual(packed.headers["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(packed.body), plain.body)
        etag = plain.headers["etag"]
        self.assertEqual(self.get(SITEMAP_PATH, f"If-None-Match: {etag}").code, 304)
        head = self.get(SITEMAP_PATH, method="HEAD")
        self.assertEqual(head.headers["content-length"], str(len(plain.body)))

    def test_index_beyond_the_limit(self) -> None:
        """Past the URLs a file may hold, /sitemap.xml is an index of files."""
        self.patch(documents, "SITEMAP_URLS", 2)
        snapshot = self.load(RECORDS)
        self.holder.snapshot = snapshot
        index = self.get(SITEMAP_PATH)
        self.assertEqual(sitemap_problems(index.body), [])
        parts = [loc.removeprefix(BASE) for loc in locations(index.body)]
        self.assertEqual(parts, [sitemap_part_path(n) for n in (1, 2, 3)])
        every: list[str] = []
        for path in parts:
            part = self.get(path)
            self.assertEqual(part.code, 200, path)
            self.assertEqual(sitemap_problems(part.body), [], path)
            self.assertLessEqual(len(locations(part.body)), 2)
            every += locations(part.body)
            newest = max(lastmods(part.body).values())
            self.assertEqual(lastmods(index.body)[BASE + path], newest)
        links = snapshot.links
        self.assertEqual(
            every,
            [links.home, links.url(DEVELOPERS_PATH)]
            + [links.review_page(r.id) for r in snapshot.dataset.reviews],
        )
        self.patch(documents, "SITEMAP_URLS", SITEMAP_URLS)
        self.holder.snapshot = self.load(RECORDS)
        self.assertEqual(self.get(sitemap_part_path(1)).code, 404)

    def test_split_by_size(self) -> None:
        self.patch(documents, "SITEMAP_BYTES", 600)
        built = render_sitemaps(
            self.snapshot.dataset, self.snapshot.links, {HOME_PATH: 0}
        )
        self.assertGreater(len(built), 2)
        for path, body in built.items():
            self.assertEqual(sitemap_problems(body), [], path)
            if path != SITEMAP_PATH:
                self.assertLessEqual(len(body), 600)

    def test_overlong_urls_left_out(self) -> None:
        """A URL longer than the schema admits is not listed; the page still is."""
        records = [review(1, id="x" * 2100), review(2, id="short")]
        snapshot = self.load(records)
        body = snapshot.documents[SITEMAP_PATH].identity.body
        self.assertEqual(sitemap_problems(body), [])
        self.assertEqual(locations(body)[2:], [snapshot.links.review_page("short")])

    def test_a_hundred_thousand_reviews(self) -> None:
        """Two files of at most 50,000 URLs under an index, all valid."""
        reviews = tuple(
            Review(
                id=f"r{n:06d}",
                author="A",
                author_avatar_url=None,
                rating=5,
                date=date(2024, 1, 1),
                text=None,
                source="google",
                source_url=None,
                owner_reply=None,
                verified=True,
            )
            for n in range(100_000)
        )
        dataset = Dataset(
            business=self.snapshot.dataset.business, reviews=reviews, unpublished=0
        )
        built = render_sitemaps(
            dataset, Links(BASE), {HOME_PATH: 0, DEVELOPERS_PATH: 0}
        )
        self.assertEqual(
            list(built), [SITEMAP_PATH, *(sitemap_part_path(n) for n in (1, 2, 3))]
        )
        counts = []
        for path, body in built.items():
            self.assertEqual(sitemap_problems(body), [], path)
            counts.append(len(locations(body)))
        self.assertEqual(counts, [3, 50_000, 50_000, 2])


class SitemapValidatorTests(SynchronousTestCase):
    """L{sitemap_problems} reports what breaks the schema and the protocol."""

    def urlset(self, *entries: str) -> bytes:
        return (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(entries)
            + "</urlset>"
        ).encode()

    def test_reports(self) -> None:
        good = "<url><loc>https://example.com/</loc><lastmod>2024-05-01</lastmod></url>"
        self.assertEqual(sitemap_problems(self.urlset(good)), [])
        for broken in (
            self.urlset(),
            self.urlset("<url><lastmod>2024-05-01</lastmod></url>"),
            self.urlset(good.replace("2024-05-01", "1 May 2024")),
            self.urlset(good, good),
            self.urlset(good).replace(b"sitemaps.org", b"example.org"),
            self.urlset(good)[:-3],
        ):
            self.assertNotEqual(sitemap_problems(broken), [], broken)
        too_many = self.urlset(
            *(f"<url><loc>https://example.com/{n}</loc></url>" for n in range(50_001))
        )
        self.assertIn("50001 entries", " ".join(sitemap_problems(too_many)))


class MetricsTests(SiteTestCase):
    def test_routes(self) -> None:
        """Each review counts under its route's template: clients make no labels."""
        connection = Connection(self.site)
        newest = DEMO.dataset.reviews[0].id
        for path in (page_path(newest), page_path("nope"), record_path(newest)):
            connection.request("GET", path)
        connection.request("GET", REVIEW_PAGE_PREFIX + "a/b")
        name = "reviewsd_http_requests_total"
        self.assertEqual(self.sample(name, route="/reviews/{id}", status="200"), 1)
        self.assertEqual(self.sample(name, route="/reviews/{id}", status="404"), 1)
        self.assertEqual(self.sample(name, route="/api/reviews/{id}", status="200"), 1)
        self.assertEqual(self.sample(name, route="other", status="404"), 1)


class PermalinkDaemonTests(DaemonTestCase):
    """The real daemon: a feed reader follows an entry to the review."""

    @defer.inlineCallbacks
    def test_follow_the_feed_to_the_review(self) -> Any:
        data = write_data(Path(self.mktemp()).resolve(), RECORDS, lines=True)
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}",
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--data",
            str(data),
        )
        atom = yield (yield self.client.get(self.base + ATOM_FEED_PATH)).content()
        feed = feedparser.parse(atom)
        (entry,) = [e for e in feed.entries if e.id.endswith(quote(AWKWARD, safe=""))]
        self.assertEqual(unquote(entry.id.partition(":review/")[2]), AWKWARD)
        (page_link,) = [
            link.href
            for link in entry.links
            if link.get("type") == "text/html" and link.rel == "alternate"
        ]
        page = yield self.client.get(page_link)
        self.assertEqual(page.code, 200)
        body = yield page.content()
        tree = lxml.html.document_fromstring(body)
        (canonical,) = [e for e in tree.iter("link") if e.get("rel") == "canonical"]
        self.assertEqual(canonical.get("href"), page_link)
        etag = page.headers.getRawHeaders("etag")[0]
        again = yield self.client.get(page_link, headers={"If-None-Match": etag})
        self.assertEqual(again.code, 304)
        path = page_link.removeprefix(self.base)
        fields, packed = yield deferToThread(
            raw_get, port, path, "Accept-Encoding: gzip"
        )
        self.assertEqual(fields["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(packed), body)

        (record_link,) = [
            link.href for link in entry.links if link.get("type") == "application/json"
        ]
        record = yield (yield self.client.get(record_link)).json()
        self.assertEqual(record["id"], AWKWARD)
        missing = yield self.client.get(self.base + page_path("hidden"))
        self.assertEqual(missing.code, 404)
        self.assertEqual(
            missing.headers.getRawHeaders("content-type"), ["text/html; charset=utf-8"]
        )
        yield missing.content()
        gone = yield self.client.get(self.base + record_path("hidden"))
        self.assertEqual(gone.code, 404)
        self.assertEqual((yield gone.json())["error"], "not_found")
        sitemap = yield (yield self.client.get(self.base + SITEMAP_PATH)).content()
        self.assertEqual(sitemap_problems(sitemap), [])
        self.assertIn(page_link, locations(sitemap))
