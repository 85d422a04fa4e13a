"""
One immutable generation of everything the service publishes.

A snapshot is built once per data change, in a worker thread where it can
be: every document's bytes, its gzip bytes and its validators are computed
here, so that answering a request is a dictionary lookup.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, datetime, timezone
from email.utils import formatdate
from typing import Any, Protocol

from attrs import field, frozen

from reviewsd.documents import (
    Records,
    render_atom,
    render_json_feed,
    render_llms_txt,
    render_reviews,
    to_json,
)
from reviewsd.insights import (
    ReviewCache,
    apply_overlay,
    derive_insights,
    share_per_review,
)
from reviewsd.links import (
    ATOM_FEED_PATH,
    INSIGHTS_PATH,
    JSON_FEED_PATH,
    LLMS_PATH,
    OPENAPI_PATH,
    REVIEWS_PATH,
    Links,
)
from reviewsd.mentions import Matcher
from reviewsd.model import Dataset
from reviewsd.openapi import openapi_document
from reviewsd.pages import (
    CONTENT_SECURITY_POLICY,
    DEVELOPERS_PATH,
    HOME_PATH,
    HTML_TYPE,
    STYLESHEET,
    STYLESHEET_PATH,
    STYLESHEET_TYPE,
    render_developers,
    render_home,
)
from reviewsd.search import SearchIndex, SearchQuery
from reviewsd.tools import TOOLS

JSON = b"application/json"
ATOM = b"application/atom+xml"
TEXT = b"text/plain; charset=utf-8"

GZIP_MIN_SIZE = 1024
"""Bodies smaller than this are not worth a gzip header."""
GZIP_FAST_SIZE = 1024 * 1024
"""Bodies this large are compressed at level 3, not 6: 2.4 times faster, 28 %
larger (measured on 7 MB of reviews), so that a reload stays quick."""


@frozen
class Representation:
    """One encoding of a document: the exact bytes sent and their ETag."""

    body: bytes
    etag: bytes
    encoding: bytes | None

    @classmethod
    def of(cls, body: bytes, encoding: bytes | None = None) -> Representation:
        digest = hashlib.sha256(body).digest()[:16]
        tag = base64.urlsafe_b64encode(digest).rstrip(b"=")
        return cls(body=body, etag=b'"' + tag + b'"', encoding=encoding)


@frozen
class Document:
    """
    A published document with everything needed to answer for it.

    @ivar last_modified: when this content last changed, in whole seconds
        since the epoch; C{http_date} is the same instant as a header value.
    @ivar links: a C{Link} header value, or C{None}.
    @ivar headers: other headers this document is always sent with.
    """

    content_type: bytes
    identity: Representation
    gzipped: Representation | None
    last_modified: int
    http_date: bytes
    links: bytes | None
    headers: tuple[tuple[bytes, bytes], ...] = ()

    @classmethod
    def build(
        cls,
        body: bytes,
        content_type: bytes,
        last_modified: int,
        links: bytes | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> Document:
        compressed = None
        if len(body) >= GZIP_MIN_SIZE:
            level = 3 if len(body) >= GZIP_FAST_SIZE else 6
            packed = gzip.compress(body, compresslevel=level, mtime=0)
            if len(packed) < len(body):
                compressed = Representation.of(packed, b"gzip")
        return cls(
            content_type=content_type,
            identity=Representation.of(body),
            gzipped=compressed,
            last_modified=last_modified,
            http_date=formatdate(last_modified, usegmt=True).encode("ascii"),
            links=links,
            headers=headers,
        )

    def same_content(self, other: Document | None) -> bool:
        return other is not None and other.identity.etag == self.identity.etag


def _topic_links(links: Links, topic: str) -> bytes:
    """WebSub discovery in HTTP: where to subscribe, and to what."""
    return f'<{links.hub}>; rel="hub", <{topic}>; rel="self"'.encode()


class SinceCache:
    """
    The C{/api/reviews/since/{date}} answers of one snapshot, kept so that
    repeated polling is a lookup; bounded in entries and in bytes.
    """

    def __init__(self, entries: int = 256, size: int = 64 * 1024 * 1024) -> None:
        self._documents: OrderedDict[date, Document] = OrderedDict()
        self._entries, self._size, self._held = entries, size, 0

    def get(self, day: date) -> Document | None:
        document = self._documents.get(day)
        if document is not None:
            self._documents.move_to_end(day)
        return document

    def put(self, day: date, document: Document) -> None:
        if day in self._documents:
            return
        self._documents[day] = document
        self._held += _weight(document)
        while len(self._documents) > self._entries or (
            self._held > self._size and len(self._documents) > 1
        ):
            _, dropped = self._documents.popitem(last=False)
            self._held -= _weight(dropped)


def _weight(document: Document) -> int:
    packed = document.gzipped
    return len(document.identity.body) + (0 if packed is None else len(packed.body))


@frozen
class Snapshot:
    """
    @ivar documents: the fixed documents, by request path.
    @ivar records: every published review's JSON, for slicing into answers.
    @ivar index: the search index.
    @ivar insights: the insights document (read-only) but C{per_review},
        for MCP tools and the pages.
    @ivar per_review: where C{per_review}'s value sits in the insights body.
    @ivar since: answers for C{/api/reviews/since/{date}}, built on demand.
    """

    dataset: Dataset
    links: Links
    documents: Mapping[str, Document]
    records: Records
    index: SearchIndex
    insights: dict[str, Any]
    insights_fingerprint: bytes
    per_review: tuple[int, int]
    since: SinceCache = field(factory=SinceCache, eq=False)

    def search(self, query: SearchQuery) -> bytes:
        """The search answer, cut from the published records."""
        matched, positions = self.index.search(query)
        return b'{"matched":%d,"returned":%d,"reviews":[%s]}' % (
            matched,
            len(positions),
            b",".join(map(self.records.record, positions)),
        )

    def insights_group(self, group: str) -> bytes | None:
        """C{{group: value}} for one top-level group of the insights."""
        if group == "per_review":
            start, stop = self.per_review
            body = self.documents[INSIGHTS_PATH].identity.body
            return b'{"per_review":%s}' % body[start:stop]
        if group not in self.insights:
            return None
        return to_json({group: self.insights[group]})

    def since_count(self, day: date) -> int:
        return self.index.count_since(day)

    def since_document(self, day: date) -> Document:
        """
        Render the answer for C{day}: pure, so it may run in a worker thread;
        L{SinceCache.put} is for the reactor thread.
        """
        count = self.index.count_since(day)
        body = b'{"since":"%s","count":%d,"reviews":[%s]}' % (
            day.isoformat().encode("ascii"),
            count,
            self.records.run(0, count),
        )
        return Document.build(body, JSON, self.documents[REVIEWS_PATH].last_modified)


class SnapshotSource(Protocol):
    """Whatever holds the current snapshot: requests and tools read it there."""

    @property
    def snapshot(self) -> Snapshot: ...


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(int(seconds), timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def _insights(
    dataset: Dataset,
    matcher: Matcher,
    cache: ReviewCache,
    modified: float,
    previous: Snapshot | None,
) -> tuple[dict[str, Any], bytes, bytes, tuple[int, int]]:
    """
    The insights document without C{per_review}, the document's bytes, a
    fingerprint of its content, and where C{per_review}'s value sits in the
    bytes.

    C{per_review}, by far the largest group, is written last and kept only
    as bytes. C{generated_at} says when this content was first derived: the
    data's mtime then, kept while later derivations give the same content,
    so that touching a file does not move the ETag.
    """
    insights = dict(derive_insights(dataset, matcher, cache, generated_at=""))
    if dataset.insights_overlay:
        insights = apply_overlay(insights, dataset.insights_overlay)
    per_review = to_json(insights.pop("per_review"))
    head = to_json(insights)
    hashed = hashlib.sha256(head)
    hashed.update(per_review)
    fingerprint = hashed.digest()
    generated_at = _rfc3339(modified)
    if previous is not None and previous.insights_fingerprint == fingerprint:
        generated_at = previous.insights["generated_at"]
    insights["generated_at"] = generated_at
    head = head.replace(
        b'"generated_at":""', b'"generated_at":"%s"' % generated_at.encode(), 1
    )
    start = len(head) - 1 + len(_PER_REVIEW)
    body = b"".join((head[:-1], _PER_REVIEW, per_review, b"}"))
    share_per_review(cache, body, start)
    return insights, body, fingerprint, (start, start + len(per_review))


_PER_REVIEW = b',"per_review":'


def build_snapshot(
    dataset: Dataset,
    links: Links,
    modified: float,
    previous: Snapshot | None = None,
    cache: ReviewCache | None = None,
) -> Snapshot:
    """
    Render and validate every document, derive the insights and build the
    search index: the work of a data change, done once, in a worker thread
    or before the reactor runs.

    @param modified: when the data last changed (the data files' mtime); a
        document whose bytes equal the previous snapshot's keeps the previous
        C{Last-Modified}, so that only real changes move it.
    @param cache: per-review analyses kept from earlier derivations.
    """
    matcher = Matcher(dataset.business)
    if cache is None:
        cache = ReviewCache()
    documents: dict[str, Document] = {}
    pending: dict[str, Future[Document]] = {}
    # compressing and hashing run in C without the GIL: on another core,
    # beside the Python work of deriving and indexing
    pool = ThreadPoolExecutor(2, thread_name_prefix="reviewsd-compress")

    def publish(
        path: str,
        body: bytes,
        content_type: bytes,
        topic: bool,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        link = _topic_links(links, links.url(path)) if topic else None
        pending[path] = pool.submit(
            Document.build, body, content_type, int(modified), link, headers
        )

    def settle() -> None:
        for path, future in pending.items():
            document = future.result()
            earlier = None if previous is None else previous.documents.get(path)
            if earlier is not None and document.same_content(earlier):
                document = earlier
            documents[path] = document
        pending.clear()

    try:
        # what was made of a review for the previous snapshot is taken from
        # there when it still holds: each review's position there, by id
        origin: list[int] = []
        if previous is not None:
            before = {r.id: p for p, r in enumerate(previous.dataset.reviews)}
            origin = [before.get(r.id, -1) for r in dataset.reviews]
            records = render_reviews(
                dataset, previous.records, previous.dataset.reviews, origin
            )
        else:
            records = render_reviews(dataset)
        publish(REVIEWS_PATH, records.body, JSON, True)
        publish(JSON_FEED_PATH, render_json_feed(dataset, links), JSON, True)
        publish(ATOM_FEED_PATH, render_atom(dataset, links), ATOM, True)
        publish(OPENAPI_PATH, to_json(openapi_document(links)), JSON, False)
        insights, insights_body, fingerprint, per_review = _insights(
            dataset, matcher, cache, modified, previous
        )
        publish(INSIGHTS_PATH, insights_body, JSON, False)
        publish(LLMS_PATH, render_llms_txt(dataset, insights, links), TEXT, False)
        mentions = [cache.mentioned(r.id) for r in dataset.reviews]
        index = SearchIndex(
            dataset.reviews,
            mentions,
            matcher,
            None if previous is None else previous.index,
            origin,
        )
        settle()
        snapshot = Snapshot(
            dataset=dataset,
            links=links,
            documents=documents,
            records=records,
            index=index,
            insights=insights,
            insights_fingerprint=fingerprint,
            per_review=per_review,
        )
        # the pages show what the documents and the index hold: they come last
        page = ((b"Content-Security-Policy", CONTENT_SECURITY_POLICY),)
        home = (
            *page,
            # / answers JSON clients with a redirect to the dataset
            (b"Vary", b"Accept-Encoding, Accept"),
            (
                b"Link",
                b'<%s>; rel="alternate"; type="application/json"'
                % links.reviews.encode(),
            ),
        )
        publish(HOME_PATH, render_home(snapshot), HTML_TYPE, False, home)
        publish(
            DEVELOPERS_PATH, render_developers(snapshot, TOOLS), HTML_TYPE, False, page
        )
        publish(STYLESHEET_PATH, STYLESHEET, STYLESHEET_TYPE, False)
        settle()
    finally:
        pool.shutdown(cancel_futures=True)
    return snapshot
