"""
Render the published documents as bytes.

Pure functions of a L{Dataset} and the public L{Links}: the same data always
gives the same bytes, so that ETags only move when the content does.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import escape, quoteattr

import orjson
from attrs import frozen

from reviewsd import __version__
from reviewsd.data.links import (
    REVIEW_PAGE_PREFIX,
    SEARCH_PATH,
    SINCE_PATH,
    SITEMAP_PATH,
    Links,
    rfc3339,
    sitemap_part_path,
)
from reviewsd.data.model import Business, Dataset, Review

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
FEED_ITEMS = 50
"""How many of the newest reviews each feed carries."""

_ATOM_NS = "http://www.w3.org/2005/Atom"
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def to_json(value: Any) -> bytes:
    """
    The one JSON encoding every answer uses: compact UTF-8, by orjson; the
    standard library takes what orjson refuses (integers beyond 64 bits).
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def aggregate_rating(reviews: Sequence[Review]) -> dict[str, Any]:
    """The aggregate, shaped like schema.org's AggregateRating."""
    ratings = list(map(attrgetter("rating"), reviews))
    counts = Counter(ratings)
    distribution = {str(stars): counts[stars] for stars in range(1, 6)}
    total = sum(ratings)
    return {
        "rating_value": round(total / len(reviews), 2) if reviews else None,
        "review_count": len(reviews),
        "best_rating": 5,
        "worst_rating": 1,
        "distribution": distribution,
    }


@frozen
class Records:
    """
    Every published review's JSON, as slices of the C{/reviews.json} body, so
    that search results and incremental answers are cut, not re-serialized.

    @ivar offsets: where record M{p} starts; it ends one byte (a comma, or
        the closing bracket) before C{offsets[p + 1]}.
    @ivar head: the business and its aggregate rating, as one JSON object.
    """

    body: bytes
    offsets: array[int]
    head: bytes

    def record(self, position: int) -> bytes:
        return self.body[self.offsets[position] : self.offsets[position + 1] - 1]

    def run(self, start: int, stop: int) -> bytes:
        """Records C{start} to C{stop - 1}, comma-separated."""
        if stop <= start:
            return b""
        return self.body[self.offsets[start] : self.offsets[stop] - 1]


class ReviewPositions:
    """
    Where each published review sits in the records, by id: the ids sorted,
    beside their positions, searched by bisection. At 100,000 reviews that
    holds 1.6 MB where a dict of ids would hold 6.6, for a lookup of a few
    microseconds.
    """

    __slots__ = ("_ids", "_positions")

    def __init__(self, reviews: Sequence[Review]) -> None:
        ids = list(map(attrgetter("id"), reviews))
        order = sorted(range(len(ids)), key=ids.__getitem__)
        self._ids = [ids[position] for position in order]
        self._positions = array("q", order)

    def get(self, review_id: str) -> int | None:
        """The position of the review C{review_id}, or C{None}."""
        at = bisect_left(self._ids, review_id)
        if at < len(self._ids) and self._ids[at] == review_id:
            return self._positions[at]
        return None


def render_reviews(
    dataset: Dataset,
    previous: Records | None = None,
    previous_reviews: Sequence[Review] = (),
    origin: Sequence[int] = (),
) -> Records:
    """
    The C{/reviews.json} body and its records; with the C{previous} records
    of C{previous_reviews} and each review's C{origin} there (the position
    of its id, or -1), a record of the same review object is copied from
    there instead of being written again.

    Each record is written into one buffer as soon as it is made: orjson's
    output holds 4 KiB whatever its length, so a list of every record held
    ten times the body (400 MiB at 100,000 reviews) until joined.
    """
    head = to_json(
        {
            "business": dataset.business.metadata,
            "aggregate_rating": aggregate_rating(dataset.reviews),
        }
    )
    if previous is None:
        parts: Iterable[bytes | memoryview] = (
            to_json(review.as_record()) for review in dataset.reviews
        )
    else:
        kept, at = memoryview(previous.body), previous.offsets
        parts = (
            kept[at[before] : at[before + 1] - 1]
            if before >= 0 and previous_reviews[before] is review
            else to_json(review.as_record())
            for review, before in zip(dataset.reviews, origin, strict=True)
        )
    body, offsets = _joined(head[:-1] + b',"reviews":[', parts)
    return Records(body=body, offsets=offsets, head=head)


def _joined(
    prefix: bytes, parts: Iterable[bytes | memoryview]
) -> tuple[bytes, array[int]]:
    """
    C{prefix}, then the C{parts} comma-separated and closed, written into
    one buffer one part at a time; and where each part starts.
    """
    body = bytearray(prefix)
    offsets = array("q", [len(body)])
    for part in parts:
        body += part
        body += b","
        offsets.append(len(body))
    if len(offsets) > 1:
        del body[-1]
    body += b"]}"
    return bytes(body), offsets


def _timestamp(day: datetime.date) -> str:
    """An RFC 3339 instant for a review date, which has no time of day."""
    return f"{day.isoformat()}T00:00:00Z"


def _updated(review: Review) -> datetime.date:
    reply = review.owner_reply
    return review.date if reply is None else max(review.date, reply.date)


def _title(review: Review) -> str:
    return f"{review.rating} out of 5 stars from {review.author}"


def _content(review: Review) -> str:
    text = (
        review.text
        if review.text
        else f"Rated {review.rating} out of 5 stars, without a written review."
    )
    reply = review.owner_reply
    if reply is not None:
        text += f"\n\nReply from the owner ({reply.date.isoformat()}):\n{reply.text}"
    return text


def _home_page(business: Business, links: Links) -> str:
    return business.url or links.home


def render_json_feed(dataset: Dataset, links: Links) -> bytes:
    """
    The JSON Feed: each item's C{id} is the review id, its C{url} the
    review's permalink, its C{external_url} the original on its platform.
    """
    business = dataset.business
    publisher: dict[str, str] = {"name": business.name}
    if business.url:
        publisher["url"] = business.url
    items = []
    for review in dataset.reviews[:FEED_ITEMS]:
        item: dict[str, Any] = {"id": review.id, "url": links.review_page(review.id)}
        if review.source_url:
            item["external_url"] = review.source_url
        item["title"] = _title(review)
        item["content_text"] = _content(review)
        item["date_published"] = _timestamp(review.date)
        if review.owner_reply is not None:
            item["date_modified"] = _timestamp(_updated(review))
        author: dict[str, str] = {"name": review.author}
        if review.author_avatar_url:
            author["avatar"] = review.author_avatar_url
        item["authors"] = [author]
        item["_review"] = review.as_record()
        items.append(item)
    return to_json(
        {
            "version": JSON_FEED_VERSION,
            "title": f"{business.name}: customer reviews",
            "home_page_url": _home_page(business, links),
            "feed_url": links.json_feed,
            "description": f"The newest verified customer reviews of {business.name}.",
            "authors": [publisher],
            "hubs": [{"type": "WebSub", "url": links.hub}],
            "items": items,
        }
    )


def _xml_text(value: str) -> str:
    return escape(_XML_INVALID.sub("", value))


def _xml_attr(value: str) -> str:
    return quoteattr(_XML_INVALID.sub("", value))


def _urn(name: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, name).urn


# --- the ids of reviews in the Atom feed -------------------------------------

TAG_DATE = "2026"
"""
The date of every review's C{tag:} URI (RFC 4151): fixed, so that an
entry's id never moves.
"""

_DNS_NAME = re.compile(
    r"\A[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\Z"
)
_MAILBOX = re.compile(r"\A[A-Za-z0-9._-]+\Z")


def _dns_name(host: str | None) -> str | None:
    """C{host} as RFC 4151's C{DNSname} (ASCII, lower case), or C{None}."""
    if not host:
        return None
    try:
        name = host.rstrip(".").lower().encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return name if _DNS_NAME.match(name) else None


def _url_host(url: str | None) -> str | None:
    try:
        return _dns_name(urlsplit(url).hostname) if url else None
    except ValueError:
        return None


def _email(value: object) -> str | None:
    """An email address as RFC 4151's C{emailAddress}, or C{None}."""
    if not isinstance(value, str):
        return None
    mailbox, _, domain = value.strip().rpartition("@")
    name = _dns_name(domain)
    if name is None or not _MAILBOX.match(mailbox):
        return None
    return f"{mailbox}@{name}"


def tag_authority(business: Business, links: Links) -> str:
    """
    Who names the reviews in their C{tag:} URIs: the business, by the host
    of its C{url}, else by its C{email} address, else by the host of the
    base URL (C{localhost} when that is an address that is no DNS name).
    The business's own names do not move when the service does.
    """
    return (
        _url_host(business.url)
        or _email(business.metadata.get("email"))
        or _url_host(links.base)
        or "localhost"
    )


def review_tag(authority: str, review_id: str) -> str:
    """
    The Atom id of a review: C{tag:AUTHORITY,2026:review/ID}, the id
    percent-encoded as in its permalink, so that a consumer gets the review
    id back by unquoting what follows C{:review/}.
    """
    return f"tag:{authority},{TAG_DATE}:review/{quote(review_id, safe='')}"


def render_atom(dataset: Dataset, links: Links) -> bytes:
    """
    The Atom feed: each entry's C{id} is the review's L{review_tag}, its
    alternate links the review's page and record, its C{via} link the
    original on its platform.
    """
    business = dataset.business
    reviews = dataset.reviews[:FEED_ITEMS]
    authority = tag_authority(business, links)
    updated = max((_updated(r) for r in reviews), default=datetime.date(1970, 1, 1))
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<feed xmlns="{_ATOM_NS}">\n',
        f"<id>{_urn(links.atom_feed)}</id>\n",
        f"<title>{_xml_text(business.name)}: customer reviews</title>\n",
        f"<subtitle>The newest verified customer reviews of "
        f"{_xml_text(business.name)}.</subtitle>\n",
        f"<updated>{_timestamp(updated)}</updated>\n",
        f"<author><name>{_xml_text(business.name)}</name>"
        + (f"<uri>{_xml_text(business.url)}</uri>" if business.url else "")
        + "</author>\n",
        f'<link rel="self" type="application/atom+xml" '
        f"href={_xml_attr(links.atom_feed)}/>\n",
        f'<link rel="hub" href={_xml_attr(links.hub)}/>\n',
        f'<link rel="alternate" type="text/html" '
        f"href={_xml_attr(_home_page(business, links))}/>\n",
        f'<link rel="alternate" type="application/feed+json" '
        f"href={_xml_attr(links.json_feed)}/>\n",
        f'<generator version="{__version__.public()}">reviewsd</generator>\n',
    ]
    for review in reviews:
        out.append("<entry>\n")
        out.append(f"<id>{_xml_text(review_tag(authority, review.id))}</id>\n")
        out.append(f"<title>{_xml_text(_title(review))}</title>\n")
        out.append(f"<published>{_timestamp(review.date)}</published>\n")
        out.append(f"<updated>{_timestamp(_updated(review))}</updated>\n")
        out.append(f"<author><name>{_xml_text(review.author)}</name></author>\n")
        out.append(
            f'<link rel="alternate" type="text/html" '
            f"href={_xml_attr(links.review_page(review.id))}/>\n"
        )
        out.append(
            f'<link rel="alternate" type="application/json" '
            f"href={_xml_attr(links.review_record(review.id))}/>\n"
        )
        if review.source_url:
            out.append(
                f'<link rel="via" type="text/html" '
                f"href={_xml_attr(review.source_url)}/>\n"
            )
        stars = review.rating
        out.append(f'<category term="{stars}" label="{stars} out of 5 stars"/>\n')
        out.append(f'<content type="text">{_xml_text(_content(review))}</content>\n')
        out.append("</entry>\n")
    out.append("</feed>\n")
    return "".join(out).encode("utf-8")


def render_llms_txt(dataset: Dataset, insights: dict[str, Any], links: Links) -> bytes:
    """
    C{/llms.txt} (llmstxt.org): what an AI agent needs to know and where to
    read more, from the same data as everything else.
    """
    business = dataset.business
    aggregate = aggregate_rating(dataset.reviews)
    metadata = business.metadata
    lines = [f"# {business.name}", ""]
    rating = aggregate["rating_value"]
    if rating is None:
        lines += ["> No verified customer reviews yet.", ""]
    else:
        span = insights.get("date_range") or {}
        lines += [
            f"> Verified customer reviews of {business.name}: "
            f"{aggregate['review_count']} reviews, {rating} out of 5 stars on average"
            + (
                f", from {span['earliest']} to {span['latest']}."
                if span.get("earliest")
                else "."
            ),
            "",
        ]
    if metadata.get("description"):
        lines += [str(metadata["description"]), ""]
    facts = [
        ("Website", business.url),
        ("Telephone", metadata.get("telephone")),
        ("Email", metadata.get("email")),
        ("Service areas", ", ".join(business.service_areas)),
        ("Services", ", ".join(f"{s.name} (id {s.id})" for s in business.services)),
        ("Technicians", ", ".join(t.name for t in business.technicians)),
    ]
    lines += [f"- {name}: {value}" for name, value in facts if value]
    if insights.get("summary"):
        lines += ["", "## What customers say", "", str(insights["summary"])]
    aspects = [a for a in insights.get("aspects", []) if a.get("mention_count")]
    if aspects:
        lines.append("")
        for aspect in aspects[:5]:
            share = aspect.get("positive_pct")
            lines.append(
                f"- {aspect['label']}: mentioned in {aspect['mention_count']} reviews"
                + ("" if share is None else f", {share}% positive")
            )
    lines += [
        "",
        "## Data",
        "",
        f"- [All reviews]({links.reviews}): business details, aggregate rating "
        "and every verified review, newest first (JSON)",
        f"- [Insights]({links.insights}): sentiment by aspect, technicians, "
        "services, places, topics, monthly trend, FAQ (JSON)",
        f"- [Search]({links.url('/api/reviews/search')}): filter by rating, "
        "min_rating, since, until, query, mentions_technician, mentions_service, "
        "limit (JSON)",
        f"- Reviews since a date: {links.url('/api/reviews/since/')}YYYY-MM-DD, "
        "for incremental sync (JSON)",
        f"- One review: {links.url(REVIEW_PAGE_PREFIX)}ID (its page, HTML) and "
        f"{links.url('/api/reviews/')}ID (its record, JSON), the id "
        "percent-encoded",
        f"- [JSON Feed]({links.json_feed}) and [Atom feed]({links.atom_feed}) of "
        f"the {FEED_ITEMS} newest reviews",
        f"- [OpenAPI description]({links.url('/.well-known/openapi.json')}) of "
        "every endpoint",
        "",
        "## For assistants",
        "",
        f"- [MCP server]({links.url('/mcp')}): Model Context Protocol over "
        "streamable HTTP, no authentication; tools search_reviews, get_business, "
        "get_insights and more",
        "",
        "## Optional",
        "",
        f"- [WebSub hub]({links.hub}): subscribe to changes of the feeds and of "
        "/reviews.json",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def render_robots(links: Links) -> bytes:
    """
    C{/robots.txt}: crawlers are welcome but for the two routes that answer
    any question asked of them, and are shown the sitemap. (Under a base
    URL with a path, the lines belong in the host's own robots.txt.)
    """
    base = urlsplit(links.base).path.rstrip("/")
    return "\n".join(
        [
            "# Everything here is public. Search and incremental sync answer",
            "# whatever they are asked, so crawlers are kept out of those two;",
            "# every review has a page of its own, listed in the sitemap.",
            "User-agent: *",
            f"Disallow: {base}{SEARCH_PATH}",
            f"Disallow: {base}{SINCE_PATH}/",
            "",
            f"Sitemap: {links.url(SITEMAP_PATH)}",
            "",
        ]
    ).encode("utf-8")


SITEMAP_URLS = 50_000
"""The most URLs one sitemap file may list (sitemaps.org protocol)."""
SITEMAP_BYTES = 50 * 1024 * 1024
"""The largest a sitemap file may be, uncompressed (sitemaps.org protocol)."""
SITEMAP_LOC = range(12, 2049)
"""The lengths of URL the sitemaps.org schema admits."""

_SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+\Z")
_XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _sitemap_entries(
    dataset: Dataset, links: Links, pages: Mapping[str, int]
) -> Iterator[tuple[str, str]]:
    """
    Every URL of the sitemap as its C{<url>} element, with its C{lastmod}:
    the pages, then each review's permalink, dated by the review or its
    reply. A URL longer than the schema admits is left out.
    """
    for path, modified in pages.items():
        loc, lastmod = links.url(path), rfc3339(modified)
        if len(loc) in SITEMAP_LOC:
            yield (
                f"<url><loc>{_xml_text(loc)}</loc><lastmod>{lastmod}</lastmod></url>\n",
                lastmod,
            )
    prefix = links.url(REVIEW_PAGE_PREFIX)
    room = range(SITEMAP_LOC.start - len(prefix), SITEMAP_LOC.stop - len(prefix))
    head = f"<url><loc>{_xml_text(prefix)}"
    days: dict[datetime.date, str] = {}
    for review in dataset.reviews:  # (a loop for 100,000 reviews: kept tight)
        review_id = review.id
        # as review_path, which quotes all but unreserved characters
        tail = review_id if _UNRESERVED.match(review_id) else quote(review_id, safe="")
        if len(tail) in room:
            day = _updated(review)
            lastmod = days.get(day) or days.setdefault(day, day.isoformat())
            yield f"{head}{tail}</loc><lastmod>{lastmod}</lastmod></url>\n", lastmod


def _urlset(entries: Iterable[str]) -> bytes:
    return "".join(
        [_XML_HEAD, f'<urlset xmlns="{_SITEMAP_NS}">\n', *entries, "</urlset>\n"]
    ).encode("utf-8")


def _files(entries: Iterable[tuple[str, str]]) -> Iterator[tuple[bytes, str]]:
    """
    The entries as sitemap files that each fit in the protocol's limits,
    each with its newest C{lastmod}: made one at a time, so that the
    entries of one file at most are held as strings.
    """
    room = SITEMAP_BYTES - len(_urlset(()))
    run: list[str] = []
    size, newest = 0, ""
    for entry, lastmod in entries:
        length = len(entry) if entry.isascii() else len(entry.encode("utf-8"))
        if len(run) == SITEMAP_URLS or size + length > room:
            yield _urlset(run), newest
            run, size, newest = [], 0, ""
        run.append(entry)
        size += length
        if lastmod > newest:  # (dates and instants in UTC sort as text)
            newest = lastmod
    yield _urlset(run), newest


def render_sitemaps(
    dataset: Dataset, links: Links, pages: Mapping[str, int]
) -> dict[str, bytes]:
    """
    The sitemap (sitemaps.org 0.9) of C{pages} (path: when it last changed,
    in seconds) and of every review's permalink, by path: C{/sitemap.xml}
    alone while it fits in one file (50,000 URLs, 50 MiB), else an index at
    C{/sitemap.xml} of C{/sitemap-1.xml}, C{/sitemap-2.xml}..., each dated
    by its newest entry.
    """
    files = list(_files(_sitemap_entries(dataset, links, pages)))
    if len(files) == 1:
        return {SITEMAP_PATH: files[0][0]}
    documents = {}
    index = [_XML_HEAD, f'<sitemapindex xmlns="{_SITEMAP_NS}">\n']
    for number, (body, newest) in enumerate(files, 1):
        path = sitemap_part_path(number)
        documents[path] = body
        index.append(
            f"<sitemap><loc>{_xml_text(links.url(path))}</loc>"
            f"<lastmod>{newest}</lastmod></sitemap>\n"
        )
    index.append("</sitemapindex>\n")
    return {SITEMAP_PATH: "".join(index).encode("utf-8"), **documents}
