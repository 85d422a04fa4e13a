"""
The landing page and the developer guide, parsed: their content is the
snapshot's, their markup is valid and accessible, and data cannot become
markup.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import lxml.html
from treq import content
from treq.testing import RequestTraversalAgent
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.documents import aggregate_rating
from reviewsd.data.links import (
    ATOM_FEED_PATH,
    HUB_PATH,
    JSON_FEED_PATH,
    MCP_PATH,
    OPENAPI_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    REVIEWS_PATH,
    SEARCH_PATH,
    SINCE_PATH,
    rfc3339,
)
from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.snapshot import Snapshot
from reviewsd.mcp.tools import TOOLS
from reviewsd.mcp.transport import SUPPORTED
from reviewsd.web.pages import (
    CONTENT_SECURITY_POLICY,
    STYLESHEET,
    prefers_json,
    render_developers,
    render_home,
)
from reviewsd.web.pages.developers import SECRET, data_documents, operations
from reviewsd.web.pages.home import NEWEST_REVIEWS, TOP_ENTITIES, review_anchor
from reviewsd.web.pages.markup import json_ld, possessive
from reviewsd.web.site import make_site
from tests.support import BASE, BUSINESS, Holder, review, snapshot_of, write_data

DEMO = snapshot_of(DEMO_DATA)
HOME = render_home(DEMO)
DEVELOPERS = render_developers(DEMO, TOOLS, SUPPORTED)

HOSTILE = "<script>alert(1)</script> fixed it. </script><!-- <b>bold</b> & done"
HOSTILE_AUTHOR = '"><img src=x onerror=alert(3)>'


def parse(page: bytes) -> Any:
    return lxml.html.document_fromstring(page)


_STEP = re.compile(
    r"(?P<tag>[a-z0-9]+)?(?P<id>#[\w-]+)?(?P<classes>(?:\.[\w-]+)*)"
    r"(?:\[(?P<name>[\w-]+)(?P<op>\^?=)['\"]?(?P<value>[^'\"\]]*)['\"]?\])?"
)


def select(tree: Any, selector: str) -> list[Any]:
    """
    The few CSS selectors these tests use (descendants of C{tag#id.class} and
    one C{[attr=value]} or C{[attr^=value]}), as XPath: lxml has no CSS
    without the cssselect package.
    """
    path = "."
    for step in selector.split():
        match = _STEP.fullmatch(step)
        assert match, step
        tests = []
        if match["id"]:
            tests.append(f"@id='{match['id'][1:]}'")
        for name in filter(None, match["classes"].split(".")):
            tests.append(f"contains(concat(' ', @class, ' '), ' {name} ')")
        if match["name"]:
            if match["op"] == "=":
                tests.append(f"@{match['name']}='{match['value']}'")
            else:
                tests.append(f"starts-with(@{match['name']}, '{match['value']}')")
        path += "//" + (match["tag"] or "*") + "".join(f"[{t}]" for t in tests)
    return tree.xpath(path)


def strict_problems(page: bytes) -> list[str]:
    """Parse errors by the WHATWG algorithm (html5lib in strict mode)."""
    import html5lib

    parser = html5lib.HTMLParser(strict=False, namespaceHTMLElements=False)
    parser.parse(page)
    return [f"{position}: {code} {data}" for position, code, data in parser.errors]


def text(element: Any) -> str:
    return " ".join(element.text_content().split())


def hostile_snapshot(case: SynchronousTestCase, **business: Any) -> Snapshot:
    records = [
        review(
            1,
            text=HOSTILE + "\x01\x7f",
            author=HOSTILE_AUTHOR,
            date="2024-05-01",
            owner_reply={"text": "</p><script>alert(4)</script>", "date": "2024-05-02"},
        ),
        review(2, rating=5, text="Great roof <3 & gutters, \u2028 thanks"),
    ]
    directory = Path(case.mktemp())
    write_data(directory, records, {**BUSINESS, **business})
    return snapshot_of(directory)


def headings(tree: Any) -> list[tuple[int, str]]:
    return [
        (int(e.tag[1]), text(e)) for e in tree.iter("h1", "h2", "h3", "h4", "h5", "h6")
    ]


def curl_commands(tree: Any) -> Iterator[tuple[str | None, list[str]]]:
    """Each curl command in the page's shell blocks, with the comment before it."""
    for block in select(tree, "pre.shell code"):
        comment = None
        source = block.text_content().replace("\\\n", " ")
        for line in source.splitlines():
            if line.startswith("#"):
                comment = line
            elif line.startswith("curl "):
                yield comment, shlex.split(line)
                comment = None


def curl_url(words: list[str]) -> str:
    return next(w for w in words if w.startswith(("http://", "https://")))


class HomeContentTests(SynchronousTestCase):
    """What the landing page says is what the snapshot holds."""

    def setUp(self) -> None:
        self.tree = parse(HOME)
        self.aggregate = aggregate_rating(DEMO.dataset.reviews)

    def test_business_card(self) -> None:
        """Name, contact, hours and service areas of the business."""
        business = DEMO.dataset.business
        self.assertEqual([text(e) for e in self.tree.iter("h1")], [business.name])
        self.assertIn(business.name, text(self.tree.find(".//title")))
        card = text(self.tree.get_element_by_id("contact"))
        for value in (
            business.metadata["telephone"],
            business.metadata["email"],
            business.metadata["address"]["street"],
            *business.service_areas,
        ):
            self.assertIn(value, card)
        hours = {
            text(row.find("th")): text(row.find("td"))
            for row in select(self.tree, "#contact table.hours tr")
        }
        self.assertEqual(hours["Saturday"], "08:00-12:00")
        self.assertEqual(len(hours), 7)
        (tel,) = select(self.tree, "#contact a[href^='tel:']")
        self.assertEqual(tel.get("href"), "tel:+15035550147")

    def test_rating(self) -> None:
        """The average, the count and each bar of the distribution."""
        (big,) = select(self.tree, "#rating data.big")
        self.assertEqual(big.get("value"), str(self.aggregate["rating_value"]))
        self.assertEqual(text(big), f"{self.aggregate['rating_value']:.1f}")
        self.assertIn(
            f"{self.aggregate['review_count']} verified reviews",
            text(self.tree.get_element_by_id("rating")),
        )
        (chart,) = select(self.tree, "svg.distribution")
        label = chart.get("aria-label")
        for stars, count in self.aggregate["distribution"].items():
            noun = "stars" if stars != "1" else "star"
            self.assertIn(f"{stars} {noun}: {count} (", label)

    def test_json_ld(self) -> None:
        """LocalBusiness, its AggregateRating and the shown reviews, exactly."""
        (block,) = select(self.tree, 'script[type="application/ld+json"]')
        thing = json.loads(block.text)
        self.assertEqual(thing["@context"], "https://schema.org")
        self.assertEqual(thing["@type"], "LocalBusiness")
        self.assertEqual(thing["name"], DEMO.dataset.business.name)
        self.assertEqual(
            thing["aggregateRating"],
            {
                "@type": "AggregateRating",
                "ratingValue": self.aggregate["rating_value"],
                "reviewCount": self.aggregate["review_count"],
                "bestRating": 5,
                "worstRating": 1,
            },
        )
        shown = DEMO.dataset.reviews[:NEWEST_REVIEWS]
        self.assertEqual(
            [
                (
                    r["author"]["name"],
                    r["datePublished"],
                    r["reviewRating"]["ratingValue"],
                )
                for r in thing["review"]
            ],
            [(r.author, r.date.isoformat(), r.rating) for r in shown],
        )
        self.assertEqual(
            [r.get("reviewBody") for r in thing["review"]], [r.text for r in shown]
        )
        self.assertEqual(thing["address"]["postalCode"], "97223")
        self.assertEqual(thing["geo"]["latitude"], 45.4312)
        self.assertEqual(len(thing["openingHoursSpecification"]), 6)
        self.assertEqual(len(thing["areaServed"]), 10)

    def test_newest_reviews(self) -> None:
        """The newest reviews in order, with their owner replies."""
        shown = DEMO.dataset.reviews[:NEWEST_REVIEWS]
        articles = select(self.tree, "#reviews article.review")
        self.assertEqual(len(articles), NEWEST_REVIEWS)
        for article, record in zip(articles, shown, strict=True):
            self.assertEqual(article.get("id"), review_anchor(record.id))
            self.assertEqual(text(article.find("h3")), record.author)
            body = text(article)
            self.assertIn(" ".join((record.text or "").split()), body)
            replies = select(article, ".reply")
            self.assertEqual(len(replies), 0 if record.owner_reply is None else 1)
            if record.owner_reply is not None:
                self.assertIn(" ".join(record.owner_reply.text.split()), body)
            (stars,) = select(article, "svg.stars")
            self.assertEqual(stars.get("aria-label"), f"{record.rating} out of 5 stars")

    def test_entities(self) -> None:
        """The most mentioned technicians and services, linking their reviews."""
        entities = DEMO.insights["entities"]
        for caption, key, parameter, kind in (
            ("Technicians", "technicians", "mentions_technician", "name"),
            ("Services", "services", "mentions_service", "id"),
        ):
            (table,) = [
                t
                for t in select(self.tree, "#people table")
                if text(t.find("caption")).startswith(caption)
            ]
            rows = select(table, "tbody tr")
            expected = entities[key][:TOP_ENTITIES]
            self.assertEqual(len(rows), len(expected))
            for row, entry in zip(rows, expected, strict=True):
                self.assertEqual(text(row.find("th")), entry["name"])
                (link,) = select(row, "a")
                self.assertEqual(text(link), str(entry["mention_count"]))
                url = urlsplit(link.get("href"))
                self.assertEqual(url.path, SEARCH_PATH)
                self.assertEqual(dict(parse_qsl(url.query)), {parameter: entry[kind]})

    def test_aspects_chart(self) -> None:
        """Every mentioned aspect, with its positive, neutral, negative counts."""
        (chart,) = select(self.tree, "svg.aspects")
        details = text(chart.find("desc"))
        for aspect in DEMO.insights["aspects"]:
            self.assertIn(
                f"{aspect['label']}: {aspect['mention_count']} reviews, "
                f"{aspect['positive_count']} positive, {aspect['neutral_count']} "
                f"neutral, {aspect['negative_count']} negative",
                details,
            )

    def test_trend_chart(self) -> None:
        """One point per month with reviews, and the trend in words."""
        temporal = DEMO.insights["temporal"]
        (chart,) = select(self.tree, "svg.trend")
        rated = [m for m in temporal["monthly"] if m["average_rating"] is not None]
        self.assertEqual(len(select(chart, "circle")), len(rated))
        self.assertIn(temporal["trend"], chart.get("aria-label"))

    def test_faq_summary_quote(self) -> None:
        insights = DEMO.insights
        questions = [text(e) for e in select(self.tree, "#faq h3")]
        self.assertEqual(questions, [e["question"] for e in insights["faq"]])
        (quote,) = select(self.tree, "blockquote")
        self.assertEqual(text(quote), insights["pull_quote"])
        self.assertIn(
            " ".join(insights["summary"].split()),
            text(self.tree.get_element_by_id("summary")),
        )


class DiscoveryTests(SynchronousTestCase):
    """What machines find in the head, and that every JSON document is linked."""

    def test_head_links(self) -> None:
        links = DEMO.links
        for page in (HOME, DEVELOPERS):
            head = parse(page).find("head")
            found = {
                (e.get("rel"), e.get("type")): e.get("href") for e in head.iter("link")
            }
            self.assertEqual(
                found[("alternate", "application/atom+xml")], links.atom_feed
            )
            self.assertEqual(
                found[("alternate", "application/feed+json")], links.json_feed
            )
            self.assertEqual(found[("alternate", "application/json")], links.reviews)
            self.assertEqual(found[("hub", None)], links.hub)
            self.assertEqual(
                found[("service-desc", "application/vnd.oai.openapi+json")],
                links.url(OPENAPI_PATH),
            )
            self.assertEqual(found[("stylesheet", None)], "/style.css")

    def test_every_document_linked(self) -> None:
        """Both pages link every JSON document and endpoint."""
        for page in (HOME, DEVELOPERS):
            hrefs = {e.get("href") for e in parse(page).iter("a")}
            for path in data_documents(DEMO):
                self.assertIn(DEMO.links.url(path), hrefs)
            self.assertIn(DEMO.links.url(SEARCH_PATH), hrefs)
            self.assertTrue(
                any(h.startswith(DEMO.links.url(SINCE_PATH + "/")) for h in hrefs)
            )
            self.assertIn("/developers#mcp", hrefs)
            self.assertIn("/developers#websub", hrefs)

    def test_base_path(self) -> None:
        """Behind a proxy that mounts the service under a path, links follow."""
        snapshot = snapshot_of(DEMO_DATA, "https://example.com/reviews")
        tree = parse(render_home(snapshot))
        (sheet,) = select(tree, "link[rel=stylesheet]")
        self.assertEqual(sheet.get("href"), "/reviews/style.css")
        nav = [a.get("href") for a in select(tree, "header nav a")]
        self.assertIn("/reviews/developers", nav)
        self.assertIn("https://example.com/reviews/reviews.json", nav)


class MarkupTests(SynchronousTestCase):
    """Valid, accessible, and nothing that a strict policy would block."""

    pages = {"home": HOME, "developers": DEVELOPERS}

    def test_valid_html5(self) -> None:
        """No parse error by the HTML standard's algorithm."""
        for name, page in self.pages.items():
            self.assertTrue(page.startswith(b'<!DOCTYPE html>\n<html lang="en">'))
            self.assertIn(b'<meta charset="utf-8"', page[:200])
            self.assertEqual(strict_problems(page), [], name)

    def test_unique_ids(self) -> None:
        for name, page in self.pages.items():
            ids = [e.get("id") for e in parse(page).iter() if e.get("id")]
            self.assertEqual(len(ids), len(set(ids)), name)
            references = {
                ref
                for e in parse(page).iter()
                for attr in ("aria-labelledby", "aria-describedby")
                for ref in (e.get(attr) or "").split()
            }
            self.assertLessEqual(references, set(ids), name)
            anchors = {
                e.get("href")[1:]
                for e in parse(page).iter("a")
                if (e.get("href") or "").startswith("#")
            }
            self.assertLessEqual(anchors, set(ids), name)

    def test_headings_in_order(self) -> None:
        """One h1 first, and no level skipped on the way down."""
        for name, page in self.pages.items():
            levels = [level for level, _ in headings(parse(page))]
            self.assertEqual(levels[0], 1, name)
            self.assertEqual(levels.count(1), 1, name)
            for before, after in zip(levels, levels[1:], strict=False):
                self.assertLessEqual(after, before + 1, name)

    def test_landmarks(self) -> None:
        for name, page in self.pages.items():
            body = parse(page).find("body")
            self.assertEqual(len(body.findall("header")), 1, name)
            self.assertEqual(len(body.findall("footer")), 1, name)
            (main,) = body.findall("main")
            self.assertEqual(main.get("id"), "main")
            self.assertEqual(body[0].get("href"), "#main")
            for nav in body.iter("nav"):
                self.assertTrue(nav.get("aria-label"), name)
            for section in main.iter("section"):
                labelled = section.get("aria-labelledby")
                self.assertTrue(labelled, name)

    def test_svgs_accessible(self) -> None:
        """Every chart is an image with a label and a title."""
        for name, page in self.pages.items():
            for svg in parse(page).iter("svg"):
                self.assertEqual(svg.get("role"), "img", name)
                self.assertTrue(svg.get("aria-label"), name)
                self.assertEqual(svg[0].tag, "title", name)
                self.assertEqual(text(svg[0]), svg.get("aria-label"))
                self.assertTrue(svg.get("viewbox"), name)

    def test_tables_have_headers(self) -> None:
        for name, page in self.pages.items():
            for table in parse(page).iter("table"):
                self.assertIsNotNone(table.find("caption"), name)
                for th in table.iter("th"):
                    self.assertIn(th.get("scope"), ("row", "col"), name)

    def test_strict_policy_holds(self) -> None:
        """No script but the JSON-LD, no inline style, nothing from elsewhere."""
        for name, page in self.pages.items():
            tree = parse(page)
            scripts = list(tree.iter("script"))
            self.assertLessEqual(len(scripts), 1, name)
            for script in scripts:
                self.assertEqual(script.get("type"), "application/ld+json")
                self.assertIsNone(script.get("src"))
            self.assertEqual(list(tree.iter("style", "iframe", "img", "object")), [])
            for element in tree.iter():
                for attribute in element.attrib:
                    self.assertFalse(attribute.startswith("on"), (name, attribute))
                    self.assertNotEqual(attribute, "style", name)
            for link in tree.iter("link"):
                if link.get("rel") in ("stylesheet", "icon"):
                    self.assertTrue(
                        link.get("href").startswith(("/", "data:")), link.get("href")
                    )
        self.assertNotIn(b"url(", STYLESHEET)
        self.assertNotIn(b"@import", STYLESHEET)
        self.assertEqual(STYLESHEET.count(b"{"), STYLESHEET.count(b"}"))

    def test_content_security_policy(self) -> None:
        directives = dict(
            d.strip().split(" ", 1) for d in CONTENT_SECURITY_POLICY.decode().split(";")
        )
        self.assertEqual(directives["default-src"], "'none'")
        self.assertEqual(directives["style-src"], "'self'")
        self.assertEqual(directives["frame-ancestors"], "'none'")
        self.assertNotIn("script-src", directives)
        self.assertNotIn(b"unsafe", CONTENT_SECURITY_POLICY)

    def test_deterministic(self) -> None:
        """The same data gives the same bytes, so the ETag moves only with it."""
        again = snapshot_of(DEMO_DATA)
        self.assertEqual(render_home(again), HOME)
        self.assertEqual(render_developers(again, TOOLS, SUPPORTED), DEVELOPERS)


class HostileDataTests(SynchronousTestCase):
    """Review text, names and the business's own data stay text."""

    def setUp(self) -> None:
        self.snapshot = hostile_snapshot(self, name="Evil <i>Co</i> & </script>")
        self.page = render_home(self.snapshot)
        self.tree = parse(self.page)

    def test_review_text_is_text(self) -> None:
        self.assertNotIn(b"<script>alert", self.page)
        self.assertNotIn(b"<img", self.page)
        self.assertNotIn(b"<b>bold", self.page)
        article = self.tree.get_element_by_id(review_anchor("r0001"))
        self.assertIn(HOSTILE, article.text_content())
        self.assertEqual(text(article.find("h3")), HOSTILE_AUTHOR)
        self.assertIn(
            "</p><script>alert(4)</script>", text(select(article, ".reply")[0])
        )
        self.assertEqual(
            [text(h1) for h1 in self.tree.iter("h1")], ["Evil <i>Co</i> & </script>"]
        )
        self.assertEqual(len(list(self.tree.iter("script"))), 1)
        self.assertEqual(list(self.tree.iter("img", "b", "i")), [])

    def test_json_ld_cannot_end_its_block(self) -> None:
        """No C{</script>} or C{<!--} inside the block, and the JSON is exact."""
        start = self.page.index(b'<script type="application/ld+json">')
        block = self.page[start:].split(b">", 1)[1].split(b"</script>", 1)[0]
        self.assertNotIn(b"<", block)
        self.assertNotIn(b">", block)
        self.assertNotIn(b"&", block)
        thing = json.loads(block)
        self.assertEqual(thing["name"], "Evil <i>Co</i> & </script>")
        bodies = [r.get("reviewBody") for r in thing["review"]]
        self.assertIn(HOSTILE + "\x01\x7f", bodies)
        self.assertEqual(
            json.loads(json_ld({"t": "</script><!--"})), {"t": "</script><!--"}
        )

    def test_forbidden_characters_dropped(self) -> None:
        """Controls HTML calls parse errors are left out of the markup."""
        self.assertNotIn(b"\x01", self.page)
        self.assertNotIn(b"\x7f", self.page)
        self.assertEqual(strict_problems(self.page), [])
        developers = render_developers(self.snapshot, TOOLS, SUPPORTED)
        self.assertEqual(strict_problems(developers), [])
        self.assertNotIn(b"<script>alert", developers)


BIDI_CONTROLS = (
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


class BidiControlTests(SynchronousTestCase):
    """
    Bidirectional formatting characters in the data (a right-to-left
    override reverses what follows it) reach no title and no attribute,
    where markup cannot contain them.
    """

    def setUp(self) -> None:
        technician = {"name": "Dev \u202ePatel", "aliases": ["Dev"]}
        records = [
            review(n, text=f"Dev fixed the roof {c}and the gutters.")
            for n, c in enumerate(BIDI_CONTROLS, 1)
        ]
        directory = Path(self.mktemp())
        write_data(
            directory,
            records,
            {**BUSINESS, "name": "Roof\u202e Co", "technicians": [technician]},
        )
        self.snapshot = snapshot_of(directory)

    def test_titles_and_attributes(self) -> None:
        for page in (
            render_home(self.snapshot),
            render_developers(self.snapshot, TOOLS, SUPPORTED),
        ):
            tree = parse(page)
            titles = [e.text_content() for e in tree.iter("title", "{*}title")]
            self.assertIn("Roof Co", " ".join(titles))
            for title in titles:
                self.assertEqual([c for c in title if c in BIDI_CONTROLS], [], title)
            for element in tree.iter():
                for name, value in element.attrib.items():
                    found = [c for c in value if c in BIDI_CONTROLS]
                    self.assertEqual(found, [], (element.tag, name, value))

    def test_text_kept(self) -> None:
        """In an element of its own, the review's text is as written."""
        tree = parse(render_home(self.snapshot))
        texts = " ".join(e.text_content() for e in select(tree, "article p.text"))
        self.assertIn("roof \u202eand", texts)


class WordingTests(SynchronousTestCase):
    def test_possessive(self) -> None:
        """Thimbleberry Home Services' reviews, not Services's."""
        (lead,) = select(parse(DEVELOPERS), "p.lead")
        self.assertTrue(
            text(lead).startswith(
                "Thimbleberry Home Services' verified customer reviews"
            ),
            text(lead),
        )
        self.assertNotIn(b"s's ", DEVELOPERS)
        self.assertEqual(possessive("Test Builders"), "Test Builders'")
        self.assertEqual(possessive("Dev Patel"), "Dev Patel's")

    def test_demo_last_changed(self) -> None:
        """
        The demo data last changed on the date of its newest record, not
        when it was installed, whatever its files' times say.
        """
        records = json.loads((DEMO_DATA / "reviews.json").read_text())
        newest = max(
            [r["date"] for r in records]
            + [r["owner_reply"]["date"] for r in records if r["owner_reply"]]
        )
        stamp = f"{newest}T00:00:00Z"
        for page in (HOME, DEVELOPERS):
            (footer,) = parse(page).iter("footer")
            self.assertEqual([t.get("datetime") for t in footer.iter("time")], [stamp])
        self.assertEqual(rfc3339(DEMO.documents[REVIEWS_PATH].last_modified), stamp)

    def test_post_only_endpoints_link_their_guide(self) -> None:
        """A browser following a link never lands on a POST-only endpoint."""
        for page in (HOME, DEVELOPERS):
            hrefs = {e.get("href") for e in parse(page).iter("a")}
            for post_only in (DEMO.links.url(MCP_PATH), DEMO.links.hub):
                self.assertNotIn(post_only, hrefs)


class EdgeDataTests(SynchronousTestCase):
    def test_no_reviews(self) -> None:
        """A business with no verified review yet still has a valid page."""
        directory = write_data(Path(self.mktemp()), [])
        snapshot = snapshot_of(directory)
        for page in (
            render_home(snapshot),
            render_developers(snapshot, TOOLS, SUPPORTED),
        ):
            self.assertEqual(strict_problems(page), [])
        home = parse(render_home(snapshot))
        self.assertIn("No verified reviews yet", text(home))
        (block,) = select(home, 'script[type="application/ld+json"]')
        thing = json.loads(block.text)
        self.assertNotIn("aggregateRating", thing)
        self.assertNotIn("review", thing)

    def test_many_reviews_bounded(self) -> None:
        """The page shows the newest reviews, not all of them."""
        records = [
            review(n, date=f"20{20 + n % 6}-{n % 12 + 1:02d}-{n % 28 + 1:02d}")
            for n in range(600)
        ]
        snapshot = snapshot_of(write_data(Path(self.mktemp()), records))
        home = render_home(snapshot)
        tree = parse(home)
        self.assertEqual(len(select(tree, "article.review")), NEWEST_REVIEWS)
        self.assertLess(len(home), 150_000)
        (block,) = select(tree, 'script[type="application/ld+json"]')
        self.assertEqual(json.loads(block.text)["aggregateRating"]["reviewCount"], 600)
        self.assertEqual(strict_problems(home), [])


class NegotiationTests(SynchronousTestCase):
    def test_prefers_json(self) -> None:
        """Only a client ranking JSON above HTML gets JSON; ties go to the page."""
        for accept, wanted in (
            (None, False),
            (b"", False),
            (b"*/*", False),
            (b"application/json", True),
            (b"application/json, text/html;q=0.9", True),
            (b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),
            (b"application/*", True),
            (b"text/html;q=0.5, application/json;q=0.6", True),
            (b"application/json;q=0, */*", False),
            (b"application/json;q=bad", False),
        ):
            self.assertEqual(prefers_json(accept), wanted, accept)


class DeveloperGuideTests(SynchronousTestCase):
    """The guide is generated from the OpenAPI document and the live data."""

    def setUp(self) -> None:
        self.tree = parse(DEVELOPERS)
        self.openapi = json.loads(DEMO.documents[OPENAPI_PATH].identity.body)
        self.agent = RequestTraversalAgent(make_site(Holder(DEMO)).resource)

    def fetch(
        self, method: str, url: str, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        response = self.successResultOf(
            self.agent.request(
                method.encode(),
                url.encode(),
                Headers({k: [v] for k, v in headers.items()}),
            )
        )
        return response.code, self.successResultOf(content(response))

    def test_every_operation(self) -> None:
        """A section per operation of the description, in its order."""
        ops = operations(self.openapi)
        self.assertEqual(len(ops), 16)
        sections = select(self.tree, "section.endpoint")
        self.assertEqual(len(sections), len(ops))
        for section, op in zip(sections, ops, strict=True):
            self.assertEqual(section.get("id"), "op-" + op.spec["operationId"])
            self.assertEqual(text(section.find("h3")), f"{op.method} {op.path}")

    def test_curl_examples_follow_the_description(self) -> None:
        """Every example is this base URL, a described path and parameters."""
        described = self.openapi["paths"]
        seen = 0
        for _, words in curl_commands(self.tree):
            url = urlsplit(curl_url(words))
            self.assertEqual(f"{url.scheme}://{url.netloc}", BASE)
            path = url.path
            if path.startswith(SINCE_PATH + "/"):
                path = SINCE_PATH + "/{date}"
            elif path != SEARCH_PATH and path.startswith(
                (REVIEW_RECORD_PREFIX, REVIEW_PAGE_PREFIX)
            ):
                path = path.rsplit("/", 1)[0] + "/{id}"
            if path == "/no-such-thing":
                continue
            self.assertIn(path, described)
            declared = {
                p["name"]
                for p in described[path][
                    "get" if "get" in described[path] else "post"
                ].get("parameters", [])
            }
            for name, _ in parse_qsl(url.query):
                self.assertIn(name, declared)
            seen += 1
        self.assertGreater(seen, 20)

    def test_get_examples_answer(self) -> None:
        """
        Run every GET example against the real resource tree: the documented
        status, and the counts the comments announce.
        """
        ran = 0
        for comment, words in curl_commands(self.tree):
            if "-X" in words or "-d" in words or "--data-urlencode" in words:
                continue
            url = curl_url(words)
            headers = dict(
                words[i + 1].split(": ", 1) for i, w in enumerate(words) if w == "-H"
            )
            code, body = self.fetch("GET", url, headers)
            if "2024-02-30" in url or "rating=4.5" in url:
                self.assertEqual(code, 400, url)
            elif url.endswith("/no-such-thing"):
                self.assertEqual(code, 404, url)
            elif headers:
                self.assertEqual(code, 304, url)
            else:
                self.assertEqual(code, 200, url)
            if comment and comment.startswith("# now: matched"):
                answer = json.loads(body)
                matched, returned = answer["matched"], answer["returned"]
                self.assertEqual(
                    comment, f"# now: matched {matched}, returned {returned}"
                )
                self.assertGreater(answer["matched"], 0)
            if comment and comment.startswith("# now:") and "since" in comment:
                self.assertIn(f"now: {json.loads(body)['count']} review", comment)
            ran += 1
        self.assertGreater(ran, 15)

    def test_search_error_is_real(self) -> None:
        """The sample 400 is what the service answers for the sample request."""
        (pre,) = select(self.tree, "#search pre.json")
        shown = json.loads(pre.text_content())
        bad = [
            curl_url(words)
            for _, words in curl_commands(self.tree)
            if "rating=4.5" in curl_url(words)
        ]
        code, body = self.fetch("GET", bad[0], {})
        self.assertEqual(code, 400)
        self.assertEqual(json.loads(body), shown)
        codes = self.openapi["components"]["schemas"]["Issue"]["properties"]["code"]
        listed = [text(e) for e in select(self.tree, "#search table.codes th")]
        self.assertEqual(listed, codes["enum"])

    def test_conditional_examples_are_live(self) -> None:
        reviews = DEMO.documents[REVIEWS_PATH]
        section = text(self.tree.get_element_by_id("caching"))
        self.assertIn(f"If-None-Match: {reviews.identity.etag.decode()}", section)
        atom = DEMO.documents[ATOM_FEED_PATH]
        self.assertIn(f"If-Modified-Since: {atom.http_date.decode()}", section)
        changes = text(self.tree.get_element_by_id("changes"))
        self.assertIn(f"Last-Modified: {reviews.http_date.decode()}", changes)

    def test_tools_from_registry(self) -> None:
        """Every MCP tool, with its title and each argument."""
        rows = select(self.tree, "#mcp table.tools tbody tr")
        self.assertEqual(len(rows), len(TOOLS))
        for row, tool in zip(rows, TOOLS, strict=True):
            self.assertEqual(text(row.find("th/code")), tool.name)
            self.assertIn(tool.title, text(row.find("th")))
            arguments = [text(c) for c in select(row, "td")[0].iter("code")]
            self.assertEqual(arguments, list(tool.input_schema.get("properties", {})))

    def test_mcp_configs(self) -> None:
        address = DEMO.links.url(MCP_PATH)
        configs = [
            json.loads(p.text_content()) for p in select(self.tree, "#mcp pre.json")
        ]
        self.assertEqual(configs[0], {"mcpServers": {"reviews": {"url": address}}})
        self.assertEqual(
            configs[1], {"servers": {"reviews": {"type": "http", "url": address}}}
        )
        self.assertEqual(
            configs[2]["mcpServers"]["reviews"]["args"], ["mcp-remote", address]
        )

    def test_websub_exchange(self) -> None:
        """The topics of the description; a delivery signed as the hub signs it."""
        hub = self.openapi["paths"][HUB_PATH]["post"]["requestBody"]["content"]
        shapes = hub["application/x-www-form-urlencoded"]["schema"]["oneOf"]
        topics = shapes[0]["properties"]["hub.topic"]["enum"]
        for shape in shapes:
            self.assertEqual(shape["properties"]["hub.topic"]["enum"], topics)
        section = self.tree.get_element_by_id("websub")
        self.assertEqual(
            [text(c) for c in select(section, "ul li code")][: len(topics)], topics
        )
        (delivery,) = [
            p.text_content()
            for p in select(section, "pre.http")
            if p.text_content().startswith("POST")
        ]
        document = DEMO.documents[ATOM_FEED_PATH]
        signature = hmac.new(
            SECRET.encode(), document.identity.body, hashlib.sha256
        ).hexdigest()
        self.assertIn(f"X-Hub-Signature: sha256={signature}\n", delivery)
        self.assertIn(f"Link: {document.links.decode()}\n", delivery)
        subscribe = [
            words
            for _, words in curl_commands(section)
            if curl_url(words) == DEMO.links.hub
        ][0]
        form = dict(
            words.split("=", 1)
            for i, words in enumerate(subscribe)
            if subscribe[i - 1] == "--data-urlencode"
        )
        self.assertEqual(form["hub.topic"], DEMO.links.url(ATOM_FEED_PATH))
        self.assertEqual(form["hub.mode"], "subscribe")
        self.assertTrue(form["hub.callback"].startswith("https://"))
        self.assertIn(JSON_FEED_PATH, " ".join(topics))

    def test_tools_any_iterable(self) -> None:
        """The guide takes any iterable of tools, such as a generator."""
        page = render_developers(DEMO, (t for t in TOOLS), SUPPORTED)
        self.assertEqual(page, DEVELOPERS)
