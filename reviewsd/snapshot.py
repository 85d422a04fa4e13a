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
from collections.abc import Callable, Mapping
from email.utils import formatdate

from attrs import frozen

from reviewsd.documents import render_atom, render_json_feed, render_reviews
from reviewsd.links import ATOM_FEED_PATH, JSON_FEED_PATH, REVIEWS_PATH, Links
from reviewsd.model import Dataset

JSON = b"application/json"
ATOM = b"application/atom+xml"

GZIP_MIN_SIZE = 1024
"""Bodies smaller than this are not worth a gzip header."""


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
    """

    content_type: bytes
    identity: Representation
    gzipped: Representation | None
    last_modified: int
    http_date: bytes
    links: bytes | None

    @classmethod
    def build(
        cls,
        body: bytes,
        content_type: bytes,
        last_modified: int,
        links: bytes | None = None,
    ) -> Document:
        compressed = None
        if len(body) >= GZIP_MIN_SIZE:
            packed = gzip.compress(body, compresslevel=9, mtime=0)
            if len(packed) < len(body):
                compressed = Representation.of(packed, b"gzip")
        return cls(
            content_type=content_type,
            identity=Representation.of(body),
            gzipped=compressed,
            last_modified=last_modified,
            http_date=formatdate(last_modified, usegmt=True).encode("ascii"),
            links=links,
        )

    def same_content(self, other: Document | None) -> bool:
        return other is not None and other.identity.etag == self.identity.etag


def _topic_links(links: Links, topic: str) -> bytes:
    """WebSub discovery in HTTP: where to subscribe, and to what."""
    return f'<{links.hub}>; rel="hub", <{topic}>; rel="self"'.encode()


@frozen
class Snapshot:
    """
    @ivar documents: the fixed documents, by request path.
    """

    dataset: Dataset
    links: Links
    documents: Mapping[str, Document]


_RENDERERS: tuple[tuple[str, bytes, Callable[[Dataset, Links], bytes]], ...] = (
    (REVIEWS_PATH, JSON, lambda dataset, links: render_reviews(dataset)),
    (JSON_FEED_PATH, JSON, render_json_feed),
    (ATOM_FEED_PATH, ATOM, render_atom),
)


def build_snapshot(
    dataset: Dataset,
    links: Links,
    modified: float,
    previous: Snapshot | None = None,
) -> Snapshot:
    """
    Render and validate every document.

    @param modified: when the data last changed (the data files' mtime); a
        document whose bytes equal the previous snapshot's keeps the previous
        C{Last-Modified}, so that only real changes move it.
    """
    documents = {}
    for path, content_type, render in _RENDERERS:
        document = Document.build(
            render(dataset, links),
            content_type,
            int(modified),
            _topic_links(links, links.url(path)),
        )
        earlier = None if previous is None else previous.documents.get(path)
        if earlier is not None and document.same_content(earlier):
            document = earlier
        documents[path] = document
    return Snapshot(dataset=dataset, links=links, documents=documents)
