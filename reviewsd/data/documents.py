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
from collections import Counter
from collections.abc import Sequence
from operator import attrgetter
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import orjson
from attrs import frozen

from reviewsd import __version__
from reviewsd.data.links import Links
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


def render_reviews(
    dataset: Dataset,
    previous: Records | None = None,
    previous_reviews: Sequence[Review] = (),
    origin: Sequence[int] = (),
) -> Records:
    """
    The C{/reviews.json} body and its records; with the C{previous} records
    of C{previous_reviews} and each review's C{origin} there (the position
    of its id, or -1), a record of the same review object is cut from there
    instead of being written again.
    """
    head = to_json(
        {
            "business": dataset.business.metadata,
            "aggregate_rating": aggregate_rating(dataset.reviews),
        }
    )
    if previous is None:
        parts = [to_json(review.as_record()) for review in dataset.reviews]
    else:
        parts = [
            previous.record(before)
            if before >= 0 and previous_reviews[before] is review
            else to_json(review.as_record())
            for review, before in zip(dataset.reviews, origin, strict=True)
        ]
    prefix = head[:-1] + b',"reviews":['
    offsets = array("q", [len(prefix)])
    for part in parts:
        offsets.append(offsets[-1] + len(part) + 1)
    return Records(body=prefix + b",".join(parts) + b"]}", offsets=offsets, head=head)


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
    business = dataset.business
    publisher: dict[str, str] = {"name": business.name}
    if business.url:
        publisher["url"] = business.url
    items = []
    for review in dataset.reviews[:FEED_ITEMS]:
        item: dict[str, Any] = {"id": review.id}
        if review.source_url:
            item["url"] = review.source_url
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


def render_atom(dataset: Dataset, links: Links) -> bytes:
    business = dataset.business
    reviews = dataset.reviews[:FEED_ITEMS]
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
        out.append(f"<id>{_urn(f'{links.reviews}#{review.id}')}</id>\n")
        out.append(f"<title>{_xml_text(_title(review))}</title>\n")
        out.append(f"<published>{_timestamp(review.date)}</published>\n")
        out.append(f"<updated>{_timestamp(_updated(review))}</updated>\n")
        out.append(f"<author><name>{_xml_text(review.author)}</name></author>\n")
        if review.source_url:
            out.append(
                f'<link rel="alternate" type="text/html" '
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
