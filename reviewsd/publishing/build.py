"""
The build of a snapshot: every renderer, run once per data change, in a
worker thread or before the reactor runs.

This is the one place that knows every document the service publishes:
the data documents, the insights, the pages and the MCP tool list they
describe. The layers below it render; nothing below imports it.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from reviewsd.data.documents import (
    Records,
    render_atom,
    render_json_feed,
    render_llms_txt,
    render_reviews,
    render_robots,
    render_sitemaps,
    to_json,
)
from reviewsd.data.links import (
    ATOM_FEED_PATH,
    DEVELOPERS_PATH,
    HOME_PATH,
    INSIGHTS_PATH,
    JSON_FEED_PATH,
    LLMS_PATH,
    OPENAPI_PATH,
    REVIEWS_PATH,
    ROBOTS_PATH,
    STYLESHEET_PATH,
    Links,
    rfc3339,
)
from reviewsd.data.loading import Reader
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import Dataset
from reviewsd.data.openapi import openapi_document
from reviewsd.data.overlay import apply_overlay
from reviewsd.data.search import SearchIndex
from reviewsd.data.snapshot import ATOM, JSON, TEXT, Document, Snapshot
from reviewsd.insights import ReviewCache, derive_insights, share_per_review
from reviewsd.mcp.tools import TOOLS
from reviewsd.mcp.transport import SUPPORTED
from reviewsd.memory import freeze, paused
from reviewsd.web.pages import (
    CONTENT_SECURITY_POLICY,
    HTML_TYPE,
    STYLESHEET,
    STYLESHEET_TYPE,
    render_developers,
    render_home,
)


def load_snapshot(
    directory: Path,
    links: Links,
    previous: Snapshot | None = None,
    cache: ReviewCache | None = None,
    reader: Reader | None = None,
) -> Snapshot:
    """
    Read, check, analyse and render a data directory: blocking work that
    belongs in a worker thread, or before the reactor runs.

    @param reader: the reader of earlier loads, which re-reads only the
        records that changed.

    @raise reviewsd.data.loading.DataError: the directory cannot be published.
    """
    with paused():  # millions of small objects: cyclic GC would cost more
        sources, dataset = (reader or Reader()).read(directory)
        snapshot = build_snapshot(
            dataset, links, sources.last_modified(), previous, cache
        )
        # switched back on, the collector would first walk every object made
        # here (half a second at 100,000 reviews, holding the GIL): they are
        # long-lived and free of cycles, so they go where it does not look
        freeze()
        return snapshot


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
    generated_at = rfc3339(modified)
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


class _Documents:
    """
    The documents of one build: each is built (compressed and hashed) in a
    pool of two threads, in C without the GIL, on another core beside the
    Python work of deriving and indexing; one whose bytes equal the
    previous snapshot's is that one, so that its C{Last-Modified} stays.
    """

    def __init__(
        self, links: Links, modified: float, previous: Snapshot | None
    ) -> None:
        self._links, self._modified, self._previous = links, int(modified), previous
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="reviewsd-compress")
        self._pending: dict[str, Future[Document]] = {}
        self.built: dict[str, Document] = {}

    def publish(
        self,
        path: str,
        body: bytes,
        content_type: bytes,
        topic: bool,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        link = self._links.topic_links(path) if topic else None
        self._pending[path] = self._pool.submit(
            Document.build, body, content_type, self._modified, link, headers
        )

    def settle(self) -> MappingProxyType[str, Document]:
        """Every document published so far, built."""
        previous = self._previous
        for path, future in self._pending.items():
            document = future.result()
            earlier = None if previous is None else previous.documents.get(path)
            if earlier is not None and document.same_content(earlier):
                document = earlier
            self.built[path] = document
        self._pending.clear()
        return MappingProxyType(dict(self.built))

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def _records(dataset: Dataset, previous: Snapshot | None) -> tuple[Records, list[int]]:
    """
    The published records, and each review's position in the previous
    snapshot (by id; -1 if new): what was made of a review there is taken
    from there when it still holds.
    """
    if previous is None:
        return render_reviews(dataset), []
    before = {r.id: p for p, r in enumerate(previous.dataset.reviews)}
    origin = [before.get(r.id, -1) for r in dataset.reviews]
    records = render_reviews(
        dataset, previous.records, previous.dataset.reviews, origin
    )
    return records, origin


def _publish_pages(documents: _Documents, snapshot: Snapshot) -> None:
    """The pages, which show what the data documents and the index hold."""
    page = ((b"Content-Security-Policy", CONTENT_SECURITY_POLICY),)
    home = (
        *page,
        # / answers JSON clients with a redirect to the dataset
        (b"Vary", b"Accept-Encoding, Accept"),
        (
            b"Link",
            b'<%s>; rel="alternate"; type="application/json"'
            % snapshot.links.reviews.encode(),
        ),
    )
    documents.publish(HOME_PATH, render_home(snapshot), HTML_TYPE, False, home)
    developers = render_developers(snapshot, TOOLS, SUPPORTED)
    documents.publish(DEVELOPERS_PATH, developers, HTML_TYPE, False, page)
    documents.publish(STYLESHEET_PATH, STYLESHEET, STYLESHEET_TYPE, False)


SITEMAP_TYPE = b"application/xml"


def _publish_for_crawlers(
    documents: _Documents, dataset: Dataset, links: Links
) -> None:
    """
    C{/robots.txt} and the sitemap, which dates the pages by their
    documents: published after them.
    """
    documents.publish(ROBOTS_PATH, render_robots(links), TEXT, False)
    pages = {
        path: documents.built[path].last_modified
        for path in (HOME_PATH, DEVELOPERS_PATH)
    }
    for path, body in render_sitemaps(dataset, links, pages).items():
        documents.publish(path, body, SITEMAP_TYPE, False)


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
    documents = _Documents(links, modified, previous)
    try:
        records, origin = _records(dataset, previous)
        documents.publish(REVIEWS_PATH, records.body, JSON, True)
        documents.publish(JSON_FEED_PATH, render_json_feed(dataset, links), JSON, True)
        documents.publish(ATOM_FEED_PATH, render_atom(dataset, links), ATOM, True)
        openapi = to_json(openapi_document(links))
        documents.publish(OPENAPI_PATH, openapi, JSON, False)
        insights, insights_body, fingerprint, per_review = _insights(
            dataset, matcher, cache, modified, previous
        )
        documents.publish(INSIGHTS_PATH, insights_body, JSON, False)
        llms = render_llms_txt(dataset, insights, links)
        documents.publish(LLMS_PATH, llms, TEXT, False)
        mentions = [cache.mentioned(r.id) for r in dataset.reviews]
        index = SearchIndex(
            dataset.reviews,
            mentions,
            matcher,
            None if previous is None else previous.index,
            origin,
        )
        # the pages are rendered from a snapshot of the data documents, and
        # the whole one is made last
        data_only = Snapshot(
            dataset=dataset,
            links=links,
            documents=documents.settle(),
            records=records,
            index=index,
            insights=insights,
            insights_fingerprint=fingerprint,
            per_review=per_review,
        )
        _publish_pages(documents, data_only)
        documents.settle()
        _publish_for_crawlers(documents, dataset, links)
        return attrs.evolve(data_only, documents=documents.settle())
    finally:
        documents.close()
