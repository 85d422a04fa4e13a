"""
The MCP resources: the business profile, the insights, the FAQ, and each
review through a template whose URIs are the reviews' own public URLs
(C{/api/reviews/{id}}). The insights' URI is C{/insights.json}, whose bytes
they are; the profile and the FAQ have no URL of their own, so they are
named in a scheme of this server's.

Everything is read from the current snapshot, and compared between two
snapshots to tell subscribers what a reload changed.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote

from reviewsd.data.documents import to_json
from reviewsd.data.links import INSIGHTS_PATH, REVIEW_RECORD_PREFIX, REVIEWS_PATH
from reviewsd.data.snapshot import Snapshot, SnapshotSource

BUSINESS_URI = "reviewsd://business"
FAQ_URI = "reviewsd://faq"
JSON_TYPE = "application/json"

PAGE_SIZE = 100
"""Reviews per page of C{resources/list}."""

_SNIPPET = 160
"""Characters of a review's text in its listing's description."""


class ResourceNotFound(Exception):
    """A URI that names no resource of this server (now)."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.uri = uri


class InvalidCursor(Exception):
    """A cursor this server did not make, or whose review is gone."""


def _text_contents(uri: str, body: bytes) -> bytes:
    """A C{contents} array holding C{body}, JSON, as one text."""
    text = json.dumps(body.decode("utf-8"), ensure_ascii=False).encode("utf-8")
    return b'[{"uri":%s,"mimeType":"application/json","text":%s}]' % (
        to_json(uri),
        text,
    )


class _Positions:
    """Where each review id sits in one snapshot (newest first)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.by_id = {r.id: p for p, r in enumerate(snapshot.dataset.reviews)}


class Catalogue:
    """The resources of the snapshot C{source} holds now."""

    def __init__(self, source: SnapshotSource) -> None:
        self._source = source
        self._positions: list[_Positions] = []

    # --- naming -------------------------------------------------------------

    def review_prefix(self, snapshot: Snapshot | None = None) -> str:
        snapshot = snapshot or self._source.snapshot
        return snapshot.links.url(REVIEW_RECORD_PREFIX)

    @property
    def template(self) -> str:
        """The reviews' URI template (RFC 6570): C{{id}} is percent-encoded."""
        return self.review_prefix() + "{id}"

    def insights_uri(self, snapshot: Snapshot | None = None) -> str:
        snapshot = snapshot or self._source.snapshot
        return snapshot.links.url(INSIGHTS_PATH)

    def review_uri(self, review_id: str, snapshot: Snapshot | None = None) -> str:
        snapshot = snapshot or self._source.snapshot
        return snapshot.links.review_record(review_id)

    def review_id(self, uri: str, snapshot: Snapshot | None = None) -> str | None:
        """The id a review URI names (present or not), or C{None}."""
        prefix = self.review_prefix(snapshot)
        if not uri.startswith(prefix) or len(uri) == len(prefix):
            return None
        rest = uri[len(prefix) :]
        if "/" in rest or "?" in rest or "#" in rest:
            return None
        return unquote(rest)

    def known(self, uri: str) -> bool:
        """Whether C{uri} names a resource of this server, now or later."""
        fixed = (BUSINESS_URI, FAQ_URI, self.insights_uri())
        return uri in fixed or self.review_id(uri) is not None

    def position(self, snapshot: Snapshot, review_id: str) -> int | None:
        """Where the review C{review_id} is in C{snapshot}, if there."""
        for held in self._positions:
            if held.snapshot is snapshot:
                return held.by_id.get(review_id)
        held = _Positions(snapshot)
        # the snapshots of a reload's comparison, at most: old and new
        self._positions = [held, *self._positions[:1]]
        return held.by_id.get(review_id)

    # --- the protocol's answers --------------------------------------------

    def _fixed(self, snapshot: Snapshot) -> list[dict[str, Any]]:
        name = snapshot.dataset.business.name
        return [
            {
                "uri": BUSINESS_URI,
                "name": "business",
                "title": f"{name}: profile and rating",
                "description": (
                    "Identity, contact details, hours, service areas, services, "
                    "technicians and the aggregate rating."
                ),
                "mimeType": JSON_TYPE,
            },
            {
                "uri": self.insights_uri(snapshot),
                "name": "insights",
                "title": f"What {name}'s reviews say",
                "description": (
                    "Sentiment overall and per aspect, technicians, services, "
                    "places, topics, the monthly trend, an FAQ and a summary, "
                    "derived from the reviews (the whole /insights.json)."
                ),
                "mimeType": JSON_TYPE,
            },
            {
                "uri": FAQ_URI,
                "name": "faq",
                "title": "Frequently asked questions",
                "description": (
                    "Questions prospective customers ask, each answered from the "
                    "reviews with figures."
                ),
                "mimeType": JSON_TYPE,
            },
        ]

    def _listed_review(self, snapshot: Snapshot, position: int) -> dict[str, Any]:
        review = snapshot.dataset.reviews[position]
        text = " ".join((review.text or "").split())
        if len(text) > _SNIPPET:
            text = text[: _SNIPPET - 1] + "\u2026"
        return {
            "uri": self.review_uri(review.id, snapshot),
            "name": review.id,
            "title": f"{review.rating}/5 from {review.author}, {review.date}",
            "description": text or "(no text)",
            "mimeType": JSON_TYPE,
        }

    def page(self, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """
        One page of C{resources/list}: the fixed resources first, then the
        reviews newest first, L{PAGE_SIZE} at a time; and the next cursor.

        @raise InvalidCursor: the cursor is not this server's, or its review
            was removed since (list again from the start).
        """
        snapshot = self._source.snapshot
        reviews = snapshot.dataset.reviews
        if cursor is None:
            start, listed = 0, self._fixed(snapshot)
        else:
            found = self.position(snapshot, _cursor_id(cursor))
            if found is None:
                raise InvalidCursor(cursor)
            start, listed = found, []
        stop = min(start + PAGE_SIZE, len(reviews))
        listed += [self._listed_review(snapshot, p) for p in range(start, stop)]
        following = _make_cursor(reviews[stop].id) if stop < len(reviews) else None
        return listed, following

    def templates(self) -> list[dict[str, Any]]:
        return [
            {
                "uriTemplate": self.template,
                "name": "review",
                "title": "One review",
                "description": (
                    "One verified review by its id, with every field: the same "
                    "JSON as its URL answers."
                ),
                "mimeType": JSON_TYPE,
            }
        ]

    def body(self, snapshot: Snapshot, uri: str) -> bytes | None:
        """The JSON a resource holds in C{snapshot}, or C{None}."""
        if uri == BUSINESS_URI:
            return snapshot.records.head
        if uri == FAQ_URI:
            return to_json({"faq": snapshot.insights["faq"]})
        if uri == self.insights_uri(snapshot):
            return snapshot.documents[INSIGHTS_PATH].identity.body
        review_id = self.review_id(uri, snapshot)
        if review_id is None:
            return None
        position = self.position(snapshot, review_id)
        return None if position is None else snapshot.records.record(position)

    def read(self, uri: str) -> bytes:
        """
        The C{contents} of C{uri}, JSON bytes.

        @raise ResourceNotFound: no such resource now.
        """
        body = self.body(self._source.snapshot, uri)
        if body is None:
            raise ResourceNotFound(uri)
        return _text_contents(uri, body)

    # --- what a reload changed ---------------------------------------------

    def updated(
        self, old: Snapshot, new: Snapshot, uris: Iterable[str]
    ) -> Iterator[str]:
        """Those of C{uris} whose content differs between two snapshots."""
        insights = self.insights_uri(new)
        for uri in uris:
            if uri == insights:
                same = old.documents[INSIGHTS_PATH].same_content(
                    new.documents[INSIGHTS_PATH]
                )
            else:
                same = self.body(old, uri) == self.body(new, uri)
            if not same:
                yield uri

    @staticmethod
    def list_changed(old: Snapshot, new: Snapshot) -> bool:
        """Whether C{resources/list} may answer otherwise: the reviews changed."""
        return not old.documents[REVIEWS_PATH].same_content(new.documents[REVIEWS_PATH])


def _make_cursor(review_id: str) -> str:
    """An opaque cursor: the review the next page starts with."""
    return base64.urlsafe_b64encode(review_id.encode("utf-8")).decode("ascii")


def _cursor_id(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidCursor(cursor) from None
