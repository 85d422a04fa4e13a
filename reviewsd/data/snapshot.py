"""
One immutable generation of everything the service publishes: each
document's bytes, gzip bytes and validators, the records and the search
index, so that answering a request is a dictionary lookup.

Snapshots are built by L{reviewsd.publishing.build}, once per data change.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from datetime import date
from email.utils import formatdate
from typing import Any, Protocol

from attrs import field, frozen

from reviewsd.data.documents import Records, to_json
from reviewsd.data.links import INSIGHTS_PATH, REVIEWS_PATH, Links
from reviewsd.data.model import Dataset
from reviewsd.data.search import SearchIndex, SearchQuery

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
