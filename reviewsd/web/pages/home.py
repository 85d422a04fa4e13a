"""
The landing page at C{/}: the business, its rating and what customers say,
for people, with schema.org JSON-LD for search engines.

Everything comes from one L{Snapshot}: the dataset for the business and the
newest reviews, the insights for the charts, FAQ and quote.  The work is
bounded whatever the number of reviews: the newest L{NEWEST_REVIEWS}, the
top L{TOP_ENTITIES} technicians and services, one point per month.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any
from urllib.parse import urlencode

from twisted.web.template import Flattenable, Tag

from reviewsd.data.documents import aggregate_rating
from reviewsd.data.links import (
    DEVELOPERS_PATH,
    HOME_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEWS_PATH,
    SEARCH_PATH,
    Links,
    review_path,
)
from reviewsd.data.model import Business, Review
from reviewsd.data.snapshot import Snapshot
from reviewsd.memory import paused
from reviewsd.web.pages import charts
from reviewsd.web.pages.markup import h, json_ld, number, page, plain, plural, prefix

NEWEST_REVIEWS = 20
"""How many of the newest reviews the page shows (and marks up)."""

TOP_ENTITIES = 8
"""How many technicians and services the page lists, most mentioned first."""

_MONTHS = (
    "January February March April May June July August September October "
    "November December"
).split()
_SAFE_ID = re.compile(r"\A[A-Za-z0-9_-]{1,80}\Z")

# Address keys as operators write them, in reading order, with their
# schema.org names.
_ADDRESS_KEYS = (
    (("street", "street_address", "streetAddress"), "streetAddress"),
    (("locality", "city", "addressLocality"), "addressLocality"),
    (("region", "state", "addressRegion"), "addressRegion"),
    (("postal_code", "postcode", "zip", "postalCode"), "postalCode"),
    (("country", "addressCountry"), "addressCountry"),
)


def day_words(day: date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def review_anchor(review_id: str) -> str:
    """An HTML id for a review: the id itself when it is safe in one."""
    if _SAFE_ID.match(review_id):
        return f"review-{review_id}"
    return "review-h" + hashlib.sha256(review_id.encode()).hexdigest()[:16]


def search_url(links: Links, **parameters: str) -> str:
    return links.url(SEARCH_PATH) + "?" + urlencode(parameters)


def _address(value: object) -> tuple[list[str], dict[str, str] | str | None]:
    """The address as lines to show, and as schema.org's PostalAddress."""
    if isinstance(value, str):
        return ([line for line in value.splitlines() if line.strip()], value)
    if not isinstance(value, Mapping):
        return ([], None)
    parts: dict[str, str] = {}
    used: set[str] = set()
    for keys, schema_name in _ADDRESS_KEYS:
        for key in keys:
            if key in value and plain(value[key]):
                parts[schema_name] = plain(value[key])
                used.add(key)
                break
    place = " ".join(
        p
        for p in (
            ", ".join(
                p
                for p in (parts.get("addressLocality"), parts.get("addressRegion"))
                if p
            ),
            parts.get("postalCode"),
        )
        if p
    )
    lines = [
        line
        for line in (parts.get("streetAddress"), place, parts.get("addressCountry"))
        if line
    ]
    lines += [plain(v) for k, v in value.items() if k not in used and plain(v)]
    schema: dict[str, str] = {"@type": "PostalAddress", **parts}
    return (lines, schema if parts else None)


def _json_ld(
    business: Business,
    links: Links,
    aggregate: Mapping[str, Any],
    shown: Sequence[Review],
) -> dict[str, Any]:
    """schema.org LocalBusiness, its AggregateRating and the shown Reviews."""
    meta = business.metadata
    thing: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "LocalBusiness",
        "@id": links.home + "#business",
        "name": business.name,
        "url": business.url or links.home,
    }
    for key in ("description", "telephone", "email"):
        if isinstance(meta.get(key), str) and meta[key].strip():
            thing[key] = meta[key]
    address = _address(meta.get("address"))[1]
    if address:
        thing["address"] = address
    geo = meta.get("geo")
    if isinstance(geo, Mapping):
        thing["geo"] = {
            "@type": "GeoCoordinates",
            "latitude": geo["latitude"],
            "longitude": geo["longitude"],
        }
    if business.hours is not None:
        thing.update(business.hours.json_ld())
    if business.service_areas:
        thing["areaServed"] = [
            {"@type": "Place", "name": area} for area in business.service_areas
        ]
    if business.services:
        thing["makesOffer"] = [
            {"@type": "Offer", "itemOffered": {"@type": "Service", "name": s.name}}
            for s in business.services
        ]
    if aggregate["review_count"]:
        thing["aggregateRating"] = {
            "@type": "AggregateRating",
            "ratingValue": aggregate["rating_value"],
            "reviewCount": aggregate["review_count"],
            "bestRating": aggregate["best_rating"],
            "worstRating": aggregate["worst_rating"],
        }
    reviews = []
    for review in shown:
        entry: dict[str, Any] = {
            "@type": "Review",
            "author": {"@type": "Person", "name": review.author},
            "datePublished": review.date.isoformat(),
            "reviewRating": {
                "@type": "Rating",
                "ratingValue": review.rating,
                "bestRating": 5,
                "worstRating": 1,
            },
        }
        if review.text:
            entry["reviewBody"] = review.text
        if review.source_url:
            entry["url"] = review.source_url
        reviews.append(entry)
    if reviews:
        thing["review"] = reviews
    return thing


def _section(ident: str, title: str, *content: Flattenable, css: str = "") -> Tag:
    return h("section", id=ident, class_=css or None, aria_labelledby=f"{ident}-h")(
        h("h2", id=f"{ident}-h")(title), *content
    )


def _contact(business: Business) -> Tag:
    meta = business.metadata
    lines, _ = _address(meta.get("address"))
    items: list[Tag] = []
    if lines:
        items.append(
            h("div")(
                h("dt")("Address"),
                h("dd")([[line, h("br")] for line in lines[:-1]], lines[-1]),
            )
        )
    telephone = meta.get("telephone")
    if isinstance(telephone, str) and telephone.strip():
        dial = re.sub(r"[^0-9+]", "", telephone)
        items.append(
            h("div")(
                h("dt")("Telephone"),
                h("dd")(h("a", href=f"tel:{dial}")(telephone) if dial else telephone),
            )
        )
    email = meta.get("email")
    if isinstance(email, str) and email.strip():
        items.append(
            h("div")(h("dt")("Email"), h("dd")(h("a", href=f"mailto:{email}")(email)))
        )
    if business.url:
        items.append(
            h("div")(
                h("dt")("Website"), h("dd")(h("a", href=business.url)(business.url))
            )
        )
    hours = () if business.hours is None else business.hours.rows
    content: list[Flattenable] = [h("dl", class_="facts")(items)] if items else []
    if hours:
        content.append(
            h("table", class_="hours")(
                h("caption")("Opening hours"),
                h("tbody")(
                    [
                        h("tr")(h("th", scope="row")(row.days), h("td")(row.times))
                        if row.days
                        else h("tr")(h("td", colspan="2")(row.times))
                        for row in hours
                    ]
                ),
            )
        )
    if business.service_areas:
        content += [
            h("p", class_="label")("Service areas"),
            h("ul", class_="chips")([h("li")(area) for area in business.service_areas]),
        ]
    return _section("contact", "Contact and hours", *content, css="panel")


def _rating(
    aggregate: Mapping[str, Any], insights: Mapping[str, Any], links: Links
) -> Tag:
    count = aggregate["review_count"]
    if not count:
        return _section(
            "rating", "Rating", h("p")("No verified reviews yet."), css="panel"
        )
    value = float(aggregate["rating_value"])
    span = insights.get("date_range") or {}
    content: list[Flattenable] = [
        h("p", class_="score")(
            h("data", class_="big", value=str(aggregate["rating_value"]))(
                number(value, 1)
            ),
            h("span", class_="out-of")(" out of 5"),
        ),
        charts.stars(value, "average", f"Average rating {value:g} out of 5 stars"),
        h("p")(
            h("a", href=links.reviews)(plural(count, "verified review")),
            (
                [
                    " from ",
                    h("time", datetime=span["earliest"])(
                        day_words(date.fromisoformat(span["earliest"]))
                    ),
                    " to ",
                    h("time", datetime=span["latest"])(
                        day_words(date.fromisoformat(span["latest"]))
                    ),
                ]
                if span.get("earliest") and span.get("latest")
                else ""
            ),
            ".",
        ),
        charts.distribution(aggregate["distribution"]),
    ]
    return _section("rating", "Rating", *content, css="panel")


def _quote(
    insights: Mapping[str, Any], dataset_reviews: Sequence[Review]
) -> Flattenable:
    text = insights.get("pull_quote")
    if not text:
        return ""
    source_id = insights.get("pull_quote_review_id")
    source = next((r for r in dataset_reviews if r.id == source_id), None)
    caption: list[Flattenable] = []
    if source is not None:
        shown = source in dataset_reviews[:NEWEST_REVIEWS]
        who: Flattenable = source.author
        if shown:
            who = h("a", href=f"#{review_anchor(source.id)}")(source.author)
        caption = [
            "\u2014 ",
            who,
            f", {source.rating} out of 5 stars, ",
            h("time", datetime=source.date.isoformat())(day_words(source.date)),
        ]
    return h("figure", class_="quote")(
        h("blockquote")(h("p")(text)),
        h("figcaption")(caption) if caption else "",
    )


def _sentiment(insights: Mapping[str, Any]) -> Tag:
    overall = insights.get("overall_sentiment") or {}
    mentioned = [a for a in insights.get("aspects") or [] if a.get("mention_count")]
    content: list[Flattenable] = []
    scored = overall.get("scored_review_count")
    written = plural(scored, "written review") if scored else "the written reviews"
    if overall.get("positive_pct") is not None:
        content.append(
            h("p")(
                f"Of {written}, "
                f"{overall['positive_pct']:g}% read positive, "
                f"{overall.get('neutral_pct') or 0:g}% neutral and "
                f"{overall.get('negative_pct') or 0:g}% negative."
            )
        )
    if mentioned:
        content.append(h("figure", class_="chart-box")(charts.aspects(mentioned)))
        content.append(
            h("ul", class_="phrases")(
                [
                    h("li")(
                        h("strong")(a["label"]),
                        ": ",
                        ", ".join(f"\u201c{p}\u201d" for p in a["top_phrases"][:3]),
                    )
                    for a in mentioned[:5]
                    if a.get("top_phrases")
                ]
            )
        )
    else:
        content.append(h("p")("No review mentions an aspect of the work yet."))
    return _section("aspects", "What customers talk about", *content)


def _month(text: str) -> str:
    year, month = text.split("-")
    return f"{_MONTHS[int(month) - 1]} {year}"


def _months(period: Mapping[str, Any]) -> str:
    """A period of the trend basis in words: C{June to November 2026}."""
    first, last = _month(period["from_month"]), _month(period["to_month"])
    if first.split()[1] == last.split()[1]:
        first = first.split()[0]
    return f"{first} to {last}"


def _trend(insights: Mapping[str, Any]) -> Flattenable:
    temporal = insights.get("temporal") or {}
    months = temporal.get("monthly") or []
    if not months:
        return ""
    verdict = str(temporal.get("trend", "stable"))
    basis = temporal.get("trend_basis") or {}
    recent, previous = basis.get("recent"), basis.get("previous")
    words: list[Flattenable] = [h("strong")(verdict.capitalize())]
    if recent and previous and recent.get("average_rating") is not None:
        words.append(
            f": {recent['average_rating']:g} stars from "
            f"{plural(recent['review_count'], 'review')} in {_months(recent)}, "
            + (
                f"against {previous['average_rating']:g} from "
                f"{plural(previous['review_count'], 'review')} in "
                f"{_months(previous)}."
                if previous.get("average_rating") is not None
                else f"with no reviews in {_months(previous)}."
            )
        )
    else:
        words.append(".")
    return _section(
        "trend",
        "Rating over time",
        h("p")(words),
        h("figure", class_="chart-box")(charts.trend(months, verdict)),
        h("p", class_="muted small")(temporal.get("trend_rule") or ""),
    )


def _entity_table(
    caption: str,
    heading: str,
    rows: Sequence[Mapping[str, Any]],
    link: Any,
) -> Tag:
    return h("table", class_="entities")(
        h("caption")(caption),
        h("thead")(
            h("tr")(
                h("th", scope="col")(heading),
                h("th", scope="col", class_="num")("Reviews"),
                h("th", scope="col", class_="num")("Average"),
                h("th", scope="col", class_="num")("Positive"),
            )
        ),
        h("tbody")(
            [
                h("tr")(
                    h("th", scope="row")(row["name"]),
                    h("td", class_="num")(
                        h("a", href=link(row))(f"{row['mention_count']:,}")
                    ),
                    h("td", class_="num")(
                        "\u2013"
                        if row.get("average_rating") is None
                        else f"{row['average_rating']:.1f}\u2605"
                    ),
                    h("td", class_="num")(
                        "\u2013"
                        if row.get("positive_pct") is None
                        else f"{round(row['positive_pct'])}%"
                    ),
                )
                for row in rows
            ]
        ),
    )


def _entities(insights: Mapping[str, Any], links: Links) -> Flattenable:
    entities = insights.get("entities") or {}
    technicians = [
        t for t in entities.get("technicians") or [] if t.get("mention_count")
    ][:TOP_ENTITIES]
    services = [s for s in entities.get("services") or [] if s.get("mention_count")][
        :TOP_ENTITIES
    ]
    if not technicians and not services:
        return ""
    tables: list[Flattenable] = []
    if technicians:
        tables.append(
            _entity_table(
                "Technicians customers name most often",
                "Technician",
                technicians,
                lambda row: search_url(links, mentions_technician=row["name"]),
            )
        )
    if services:
        tables.append(
            _entity_table(
                "Services customers write about most often",
                "Service",
                services,
                lambda row: search_url(links, mentions_service=row["id"]),
            )
        )
    return _section(
        "people",
        "Technicians and services customers mention",
        h("p", class_="muted")(
            "Each count links to those reviews as JSON; the average is their "
            "star rating, the share how many read positive."
        ),
        h("div", class_="columns")(tables),
    )


def _faq(insights: Mapping[str, Any]) -> Flattenable:
    entries = insights.get("faq") or []
    if not entries:
        return ""
    return _section(
        "faq",
        "Frequently asked questions",
        h("div", class_="faq")(
            [
                h("div", class_="qa")(h("h3")(e["question"]), h("p")(e["answer"]))
                for e in entries
            ]
        ),
    )


def _source_name(source: str) -> str:
    return source[:1].upper() + source[1:] if source.islower() else source


def review_origin(review: Review) -> Flattenable:
    """Where a review was written: the platform, linked when its URL is known."""
    name = _source_name(review.source)
    if review.source_url:
        return h("a", href=review.source_url, rel="external nofollow")(name)
    return name


def review_body(review: Review) -> Tag:
    """A review's text, or what a rating without text says."""
    if review.text and review.text.strip():
        return h("p", class_="text")(review.text)
    return h("p", class_="muted")(
        f"Rated {review.rating} out of 5 stars, without a written review."
    )


def owner_answer(review: Review) -> Flattenable:
    """The owner's reply to a review, dated; nothing when there is none."""
    reply = review.owner_reply
    if reply is None:
        return ""
    return h("div", class_="reply")(
        h("p", class_="reply-by")(
            "Reply from the owner, ",
            h("time", datetime=reply.date.isoformat())(day_words(reply.date)),
        ),
        h("p", class_="text")(reply.text),
    )


def _review(review: Review, index: int, links: Links) -> Tag:
    """A review's card; its date links to the review's own page."""
    meta: list[Flattenable] = [
        charts.stars(
            review.rating,
            f"r{index}",
            f"{review.rating} out of 5 stars",
        ),
        " ",
        h("a", href=prefix(links) + review_path(REVIEW_PAGE_PREFIX, review.id))(
            h("time", datetime=review.date.isoformat())(day_words(review.date))
        ),
        " \u00b7 on ",
        review_origin(review),
    ]
    return h("article", class_="review", id=review_anchor(review.id))(
        h("h3")(review.author),
        h("p", class_="meta")(meta),
        review_body(review),
        owner_answer(review),
    )


def _reviews(shown: Sequence[Review], total: int, links: Links) -> Tag:
    if not shown:
        return _section("reviews", "Newest reviews", h("p")("No verified reviews yet."))
    return _section(
        "reviews",
        "Newest reviews",
        h("p", class_="muted")(
            f"The {len(shown)} newest of {plural(total, 'verified review')}. ",
            h("a", href=links.reviews)("Every review as JSON"),
            ", or follow the ",
            h("a", href=links.atom_feed)("Atom feed"),
            " or the ",
            h("a", href=links.json_feed)("JSON Feed"),
            ".",
        ),
        h("div", class_="reviews")([_review(r, i, links) for i, r in enumerate(shown)]),
    )


def _use(links: Links) -> Tag:
    base = prefix(links)
    return _section(
        "use",
        "Use this data",
        h("p")(
            "Everything on this page is published as open data: no key, no sign-up. ",
            h("a", href=base + DEVELOPERS_PATH)("The developer guide"),
            " shows every endpoint with working examples, the MCP server for "
            "AI assistants and the WebSub hub that pushes changes.",
        ),
    )


def latest_month_start(reviews: Sequence[Review]) -> str:
    """A date that makes a useful C{since} example: the newest review's month."""
    if not reviews:
        return "2024-01-01"
    return reviews[0].date.replace(day=1).isoformat()


def render_home(snapshot: Snapshot) -> bytes:
    """
    The whole HTML page for C{GET /}, built with the cyclic garbage collector
    paused: the page's small objects would otherwise set off full
    collections over a large snapshot (a second, at 100,000 reviews).
    """
    with paused():
        return _home(snapshot)


def _home(snapshot: Snapshot) -> bytes:
    dataset, links, insights = snapshot.dataset, snapshot.links, snapshot.insights
    business = dataset.business
    aggregate = aggregate_rating(dataset.reviews)
    shown = dataset.reviews[:NEWEST_REVIEWS]
    meta = business.metadata
    categories = [c for c in meta.get("categories") or [] if isinstance(c, str)]
    description = meta.get("description")
    if aggregate["review_count"]:
        blurb = (
            f"{business.name}: {aggregate['rating_value']:g} out of 5 stars from "
            f"{plural(aggregate['review_count'], 'verified customer review')}."
        )
    else:
        blurb = f"{business.name}: verified customer reviews."
    intro: list[Flattenable] = [h("h1")(business.name)]
    if categories:
        intro.append(h("p", class_="categories")(" \u00b7 ".join(categories)))
    if isinstance(description, str) and description.strip():
        intro.append(h("p", class_="lead")(description))
    summary = insights.get("summary")
    body: list[Flattenable] = [
        h("div", class_="intro")(intro),
        h("div", class_="hero")(
            _rating(aggregate, insights, links),
            _contact(business),
        ),
    ]
    if summary or insights.get("pull_quote"):
        body.append(
            _section(
                "summary",
                "In short",
                h("p")(summary) if summary else "",
                _quote(insights, dataset.reviews),
            )
        )
    body += [
        h("div", class_="columns charts")(
            _sentiment(insights) if aggregate["review_count"] else "",
            _trend(insights),
        ),
        _entities(insights, links),
        _faq(insights),
        _reviews(shown, aggregate["review_count"], links),
        _use(links),
    ]
    return page(
        links=links,
        business_name=business.name,
        title=f"{business.name}: customer reviews",
        description=blurb,
        current=HOME_PATH,
        last_modified=snapshot.documents[REVIEWS_PATH].last_modified,
        since_day=latest_month_start(dataset.reviews),
        body=body,
        head_extra=[
            h("script", type="application/ld+json")(
                json_ld(_json_ld(business, links, aggregate, shown))
            )
        ],
        footer_note=[
            "Insights derived from the review texts by ",
            insights.get("model") or "reviewsd",
            ".",
        ],
    )
