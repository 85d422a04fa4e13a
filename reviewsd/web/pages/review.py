"""
The page of one review at C{/reviews/{id}}: its permalink, for people, with
schema.org C{Review} JSON-LD for search engines.

Unlike the other pages it is rendered per request, from the snapshot and
the review: a page per review kept in memory would cost more than a
hundred thousand reviews' worth of bytes, and a page renders in about a
millisecond. L{page_validators} names its content without rendering it,
so that a conditional request costs no rendering at all.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from twisted.web.template import Flattenable, Tag

from reviewsd import __version__
from reviewsd.data.documents import aggregate_rating
from reviewsd.data.links import (
    HOME_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEWS_PATH,
    STYLESHEET_PATH,
    Links,
    review_path,
)
from reviewsd.data.model import Business, Review
from reviewsd.data.snapshot import Snapshot, Validators, derived_etag
from reviewsd.web.pages import charts
from reviewsd.web.pages.home import (
    day_words,
    latest_month_start,
    owner_answer,
    review_body,
    review_origin,
)
from reviewsd.web.pages.markup import (
    h,
    json_ld,
    number,
    page,
    plural,
    prefix,
    render,
)

_DESCRIPTION_LENGTH = 160
"""How much of a review's text its page's description quotes."""


def page_validators(snapshot: Snapshot, record: bytes, gzip_coder: bytes) -> Validators:
    """
    The validators of a review's page, from what the page shows: the review
    (C{record}, its published JSON), the business and every review's rating
    (the dataset's ETag), the date of the data, the base URL and this code;
    C{gzip_coder} names how its gzip form is made (a page is always large
    enough to be offered gzipped).
    """
    reviews = snapshot.documents[REVIEWS_PATH]
    etag = derived_etag(
        b"review page",
        __version__.public().encode("ascii"),
        reviews.identity.etag,
        reviews.http_date,
        snapshot.links.base.encode("utf-8"),
        record,
    )
    return Validators(
        etag=etag,
        gzip_etag=derived_etag(etag, gzip_coder),
        last_modified=reviews.last_modified,
        http_date=reviews.http_date,
    )


def _title(review: Review) -> str:
    return f"{review.rating} out of 5 stars from {review.author}"


def _json_ld(
    review: Review, business: Business, links: Links, aggregate: dict[str, Any]
) -> dict[str, Any]:
    """schema.org Review of the business (the landing page's LocalBusiness)."""
    permalink = links.review_page(review.id)
    item: dict[str, Any] = {
        "@type": "LocalBusiness",
        "@id": links.home + "#business",
        "name": business.name,
        "url": business.url or links.home,
    }
    if aggregate["review_count"]:
        item["aggregateRating"] = {
            "@type": "AggregateRating",
            "ratingValue": aggregate["rating_value"],
            "reviewCount": aggregate["review_count"],
            "bestRating": aggregate["best_rating"],
            "worstRating": aggregate["worst_rating"],
        }
    thing: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "Review",
        "@id": permalink,
        "url": permalink,
        "author": {"@type": "Person", "name": review.author},
        "datePublished": review.date.isoformat(),
        "reviewRating": {
            "@type": "Rating",
            "ratingValue": review.rating,
            "bestRating": 5,
            "worstRating": 1,
        },
        "itemReviewed": item,
    }
    if review.text:
        thing["reviewBody"] = review.text
    if review.source_url:
        thing["sameAs"] = review.source_url
    reply = review.owner_reply
    if reply is not None:
        thing["comment"] = {
            "@type": "Comment",
            "text": reply.text,
            "dateCreated": reply.date.isoformat(),
            "author": {"@type": "Organization", "name": business.name},
        }
    return thing


def _article(review: Review) -> Tag:
    return h("article", class_="review", id="review")(
        h("h1")(_title(review)),
        h("p", class_="meta")(
            charts.stars(review.rating, "rating", f"{review.rating} out of 5 stars"),
            " ",
            h("time", datetime=review.date.isoformat())(day_words(review.date)),
            " \u00b7 on ",
            review_origin(review),
        ),
        review_body(review),
        owner_answer(review),
    )


def _business(
    business: Business, links: Links, aggregate: dict[str, Any]
) -> Flattenable:
    count = aggregate["review_count"]
    home = prefix(links) + HOME_PATH
    content: list[Flattenable] = []
    if count:
        value = float(aggregate["rating_value"])
        content += [
            h("p", class_="score")(
                h("data", class_="big", value=str(aggregate["rating_value"]))(
                    number(value, 1)
                ),
                h("span", class_="out-of")(" out of 5"),
            ),
            charts.stars(value, "average", f"Average rating {value:g} out of 5 stars"),
        ]
    content.append(
        h("p")(
            h("a", href=home)(
                f"All {plural(count, 'verified review')} of {business.name}"
            ),
            ".",
        )
    )
    return h("section", id="business", class_="panel", aria_labelledby="business-h")(
        h("h2", id="business-h")(business.name), *content
    )


def _as_data(review: Review, links: Links) -> Tag:
    return h("section", id="data", aria_labelledby="data-h")(
        h("h2", id="data-h")("This review as data"),
        h("p")(
            h("a", href=links.review_record(review.id), type="application/json")(
                "The review's record"
            ),
            " (JSON), as ",
            h("a", href=links.reviews, type="application/json")("every review"),
            " has it; this page's address is its permalink, which the feeds give "
            "as each review's link.",
        ),
    )


def render_review(snapshot: Snapshot, review: Review) -> bytes:
    """The whole HTML page for C{GET /reviews/{id}} of C{review}."""
    dataset, links = snapshot.dataset, snapshot.links
    business = dataset.business
    aggregate = aggregate_rating(dataset.reviews)
    said = " ".join((review.text or "").split())
    if len(said) > _DESCRIPTION_LENGTH:
        said = said[: _DESCRIPTION_LENGTH - 1].rstrip() + "\u2026"
    description = f"{_title(review)}, a verified review of {business.name}" + (
        f": {said}" if said else "."
    )
    return page(
        links=links,
        business_name=business.name,
        title=f"{_title(review)}: {business.name}",
        description=description,
        current=review_path(REVIEW_PAGE_PREFIX, review.id),
        last_modified=snapshot.documents[REVIEWS_PATH].last_modified,
        since_day=latest_month_start(dataset.reviews),
        body=[
            _article(review),
            _business(business, links, aggregate),
            _as_data(review, links),
        ],
        head_extra=[
            h("link", rel="canonical", href=links.review_page(review.id)),
            h(
                "link",
                rel="alternate",
                type="application/json",
                title="This review (JSON)",
                href=links.review_record(review.id),
            ),
            h("script", type="application/ld+json")(
                json_ld(_json_ld(review, business, links, aggregate))
            ),
        ],
    )


@lru_cache(maxsize=8)
def missing_review_page(links: Links) -> bytes:
    """
    The small page a browser gets for an unknown or unpublished review id,
    with a 404: the same for every id, so made once per base URL.
    """
    base = prefix(links)
    return render(
        h("html", lang="en")(
            h("head")(
                h("meta", charset="utf-8"),
                h(
                    "meta",
                    name="viewport",
                    content="width=device-width, initial-scale=1",
                ),
                h("title")("No such review"),
                h("link", rel="stylesheet", href=base + STYLESHEET_PATH),
            ),
            h("body")(
                h("main", id="main", class_="wrap")(
                    h("h1")("No such review"),
                    h("p")(
                        "No published review has this address. ",
                        h("a", href=base + HOME_PATH)("See the newest reviews"),
                        ", or ",
                        h("a", href=links.reviews, type="application/json")(
                            "every review as JSON"
                        ),
                        ".",
                    ),
                )
            ),
        )
    )
