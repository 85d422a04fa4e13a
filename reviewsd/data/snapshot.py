"""
One immutable generation of everything the service publishes: each
document's bytes, gzip bytes and validators, the records and the search
index, so that answering a request is a dictionary lookup.

Answers computed per request (search, and changes since a date) are pure
functions of the snapshot and the question: their validators are derived
from both without making the bytes, and the bytes are kept, bounded, per
snapshot.

Snapshots are built by L{reviewsd.publishing.build}, once per data change.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import struct
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import date
from email.utils import formatdate
from typing import Any, Generic, Protocol, TypeVar

import attrs
from attrs import Factory, field, frozen

from reviewsd._version import __version__
from reviewsd.data.documents import Records, ReviewPositions, to_json
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


def _quoted(digest: bytes) -> bytes:
    """An ETag value: 128 bits of a digest, base64url, in quotes."""
    return b'"' + base64.urlsafe_b64encode(digest[:16]).rstrip(b"=") + b'"'


def derived_etag(*parts: bytes) -> bytes:
    """
    The ETag of bytes that C{parts} determine exactly: a digest of the
    parts (each with its length, so that no two lists read alike), not of
    the bytes, which need not be made to answer a conditional request.
    """
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(b"%d:" % len(part))
        hashed.update(part)
    return _quoted(hashed.digest())


def _level(size: int) -> int:
    return 3 if size >= GZIP_FAST_SIZE else 6


_QUICK = 3
"""
The level of gzip bytes made while a client waits: twice as fast as 6, 6 %
larger (measured on search answers of 100 reviews).
"""


_GZIP_CODER = b"gzip:%s:" % zlib.ZLIB_RUNTIME_VERSION.encode("ascii")
"""Names the compressor in derived ETags: its output is part of the bytes."""


@frozen
class Representation:
    """One encoding of a document: the exact bytes sent and their ETag."""

    body: bytes
    etag: bytes
    encoding: bytes | None

    @classmethod
    def of(cls, body: bytes, encoding: bytes | None = None) -> Representation:
        return cls(
            body=body,
            etag=_quoted(hashlib.sha256(body).digest()),
            encoding=encoding,
        )


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
            packed = gzip.compress(body, compresslevel=_level(len(body)), mtime=0)
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


K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """
    The values used most recently, within a number of entries and of bytes
    (as C{weight} counts them): the least recently used leave first. For
    the reactor thread.
    """

    def __init__(
        self, entries: int, size: int, weight: Callable[[V], int] | None = None
    ) -> None:
        self._values: OrderedDict[K, V] = OrderedDict()
        self._entries, self._size, self._held = entries, size, 0
        self._weight = weight

    def __len__(self) -> int:
        return len(self._values)

    @property
    def held(self) -> int:
        """The bytes held, as C{weight} counts them."""
        return self._held

    def get(self, key: K) -> V | None:
        value = self._values.get(key)
        if value is not None:
            self._values.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Keep C{value} for C{key}, in place of what it held."""
        weight = self._weight
        before = self._values.pop(key, None)
        if before is not None and weight is not None:
            self._held -= weight(before)
        self._values[key] = value
        if weight is not None:
            self._held += weight(value)
        while len(self._values) > self._entries or (
            self._held > self._size and len(self._values) > 1
        ):
            _, dropped = self._values.popitem(last=False)
            if weight is not None:
                self._held -= weight(dropped)


@frozen
class Validators:
    """
    What a conditional request about a computed answer is decided on,
    known before its bytes are made: the ETag of each representation
    (C{gzip_etag} is C{None} for an answer too small to be offered
    gzipped), and when the data last changed.
    """

    etag: bytes
    gzip_etag: bytes | None
    last_modified: int
    http_date: bytes


@frozen
class SearchAnswer:
    """A search answer's bytes and validators; its gzip bytes once asked."""

    body: bytes
    validators: Validators
    gzipped: bytes | None = None


@frozen
class SinceAnswer:
    """
    One date's C{/api/reviews/since/{date}} answer, before its bytes: they
    are C{prefix}, the only part that names the date, then the newest
    C{count} records and C{]}}, which every date with that count shares
    (L{SinceRun}).

    @ivar length: of the bytes.
    """

    day: date
    count: int
    prefix: bytes
    length: int
    validators: Validators


SINCE_SEGMENT = 4 * 1024
"""
The since stream is flushed at the first end of a date at least this many
bytes of records after the last flush: what a date's gzip bytes compress
afresh (at most this much, some 30 µs) is the rest.
"""


@frozen
class SinceStream:
    """
    The newest-first records of a snapshot compressed once, as one deflate
    stream flushed (to a byte boundary, keeping its dictionary) at ends of
    dates L{SINCE_SEGMENT} or more bytes apart: the compressed records of
    any count are a prefix of it, to the last flush before that count, and
    a tail compressed for that count (L{SinceRun}).

    @ivar counts: the review counts at the flushes, ascending, from 0.
    @ivar cuts: where the prefix of each ends in C{packed}.
    @ivar crcs: the CRC-32 of the records of each.
    """

    level: int
    packed: bytes
    counts: array[int]
    cuts: array[int]
    crcs: array[int]


@frozen
class SinceRun:
    """
    The compressed records of every since answer with C{count} reviews:
    the stream to C{cut}, then C{tail} (the records after it and C{]}},
    ending the stream); their CRC-32, and the factor that moves the CRC of
    a prefix past them (L{_crc_shift}). A date's gzip bytes are a copy of
    these behind a few bytes of its own.
    """

    count: int
    cut: int
    tail: bytes
    crc: int
    shift: int


class SinceCache:
    """
    The C{/api/reviews/since/{date}} answers of one snapshot, kept so that
    repeated polling is a lookup: validators by date, bytes by date and
    encoding (bounded in entries and in bytes), the compressed records
    (L{SinceStream}) and their ends by count. For the reactor thread.
    """

    def __init__(self, entries: int = 256, size: int = 64 * 1024 * 1024) -> None:
        self.answers: BoundedCache[date, SinceAnswer] = BoundedCache(4096, 0)  # small
        self.bodies: BoundedCache[tuple[date, bool], bytes] = BoundedCache(
            entries, size, len
        )
        self.stream: SinceStream | None = None
        self.runs: BoundedCache[int, SinceRun] = BoundedCache(
            4096, 16 * 1024 * 1024, lambda run: len(run.tail)
        )


def _search_cache() -> BoundedCache[SearchQuery, SearchAnswer]:
    """Search answers by query: at most 16 MiB of them (each under 100 kB)."""
    return BoundedCache(4096, 16 * 1024 * 1024, _search_weight)


def _search_weight(answer: SearchAnswer) -> int:
    packed = answer.gzipped
    return len(answer.body) + (0 if packed is None else len(packed))


# --- gzip bytes made of parts -----------------------------------------------
# A gzip member's deflate stream may be the concatenation of blocks made
# apart, and its CRC-32 that of the parts' CRCs (as zlib's crc32_combine):
# so each since answer's gzip bytes are a stored block of its prefix, then a
# prefix of the records deflated once for every date, then a short tail.

_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
"""No name, no mtime (as gzip.compress(mtime=0)), unknown OS."""
_CRC_POLYNOMIAL = 0xEDB88320


def _crc_times(a: int, b: int) -> int:
    """C{a} times C{b} modulo the CRC-32 polynomial (zlib's C{multmodp})."""
    product, bit = 0, 1 << 31
    while True:
        if a & bit:
            product ^= b
            if a & (bit - 1) == 0:
                return product
        bit >>= 1
        b = (b >> 1) ^ _CRC_POLYNOMIAL if b & 1 else b >> 1


def _squares() -> list[int]:
    powers = [1 << 30]  # x to the power 2**0, reflected
    for _ in range(31):
        powers.append(_crc_times(powers[-1], powers[-1]))
    return powers


_X_TO_2_TO_THE = _squares()


def _crc_shift(size: int) -> int:
    """
    x to the power 8 * C{size}: what multiplies the CRC-32 of some bytes
    into that of the same bytes followed by C{size} zero bytes (zlib's
    C{crc32_combine_gen}).
    """
    factor, k = 1 << 31, 3
    while size:
        if size & 1:
            factor = _crc_times(_X_TO_2_TO_THE[k & 31], factor)
        size >>= 1
        k += 1
    return factor


def _stored_block(data: bytes) -> bytes:
    """C{data} as a deflate block kept as it is, not the last of its stream."""
    return b"\x00" + struct.pack("<HH", len(data), len(data) ^ 0xFFFF) + data


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
    @ivar searches: search answers by query, built on demand.
    @ivar positions: each published review's position in the records, by
        id: what answers for one review look up (made once, and kept by
        C{attrs.evolve}).
    @ivar answers_tag: names everything computed answers are made of (the
        records, the business, what each review mentions, the code), for
        their derived ETags.
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
    searches: BoundedCache[SearchQuery, SearchAnswer] = field(
        factory=_search_cache, eq=False
    )
    positions: ReviewPositions = field(
        eq=False,
        default=Factory(
            lambda self: ReviewPositions(self.dataset.reviews), takes_self=True
        ),
    )
    answers_tag: bytes = field(
        init=False,
        eq=False,
        default=Factory(
            lambda self: derived_etag(
                __version__.public().encode("ascii"),
                self.documents[REVIEWS_PATH].identity.etag,
                self.insights_fingerprint,
            ),
            takes_self=True,
        ),
    )

    def search(self, query: SearchQuery) -> bytes:
        """The search answer, cut from the published records."""
        matched, positions = self.index.search(query)
        return b'{"matched":%d,"returned":%d,"reviews":[%s]}' % (
            matched,
            len(positions),
            b",".join(map(self.records.record, positions)),
        )

    def search_answer(self, query: SearchQuery) -> SearchAnswer:
        """
        The search answer for C{query} with its validators, kept by query:
        clients repeat their questions. For the reactor thread.
        """
        answer = self.searches.get(query)
        if answer is None:
            body = self.search(query)
            question = repr(query).encode("utf-8", "surrogatepass")
            validators = self._validators((b"search", question), len(body), _QUICK)
            answer = SearchAnswer(body, validators)
            self.searches.put(query, answer)
        return answer

    def search_gzipped(self, query: SearchQuery, answer: SearchAnswer) -> bytes:
        """
        The gzip bytes of C{answer}, compressed once, while its client waits
        (under 50 kB: at most 0.5 ms).
        """
        if answer.gzipped is None:
            packed = gzip.compress(answer.body, compresslevel=_QUICK, mtime=0)
            answer = attrs.evolve(answer, gzipped=packed)
            self.searches.put(query, answer)
        assert answer.gzipped is not None
        return answer.gzipped

    def _validators(
        self, question: tuple[bytes, ...], length: int, level: int
    ) -> Validators:
        """
        The validators of an answer to C{question} of C{length} bytes,
        compressed at C{level}: it changes with the data, as
        C{/reviews.json} does.
        """
        reviews = self.documents[REVIEWS_PATH]
        parts = (self.answers_tag, *question)
        gzip_etag = None
        if length >= GZIP_MIN_SIZE:
            gzip_etag = derived_etag(*parts, _GZIP_CODER, b"%d" % level)
        return Validators(
            etag=derived_etag(*parts),
            gzip_etag=gzip_etag,
            last_modified=reviews.last_modified,
            http_date=reviews.http_date,
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

    def since_answer(self, day: date) -> SinceAnswer:
        """
        The answer for C{day} before its bytes, kept by date: a bisection
        and a small digest. For the reactor thread.
        """
        answer = self.since.answers.get(day)
        if answer is None:
            count = self.index.count_since(day)
            prefix = b'{"since":"%s","count":%d,"reviews":[' % (
                day.isoformat().encode("ascii"),
                count,
            )
            length = len(prefix) + len(self._records(count)) + 2
            question = (b"since", prefix, b"%d" % SINCE_SEGMENT)
            validators = self._validators(question, length, self._since_level())
            answer = SinceAnswer(day, count, prefix, length, validators)
            self.since.answers.put(day, answer)
        return answer

    def _records(self, count: int) -> memoryview:
        """The newest C{count} records, comma-separated, not copied."""
        if not count:
            return memoryview(b"")
        offsets = self.records.offsets
        return memoryview(self.records.body)[offsets[0] : offsets[count] - 1]

    def since_body(self, answer: SinceAnswer) -> bytes:
        """The bytes of C{answer}: one copy of its records."""
        return b"".join((answer.prefix, self._records(answer.count), b"]}"))

    def _since_level(self) -> int:
        """The compression level of since answers: that of all the records."""
        return _level(len(self._records(self.index.size)))

    def since_stream(self) -> SinceStream:
        """
        The records compressed for every since answer: pure, and in C
        without the GIL but for moments (a loop per flush, not per review),
        so that it may run in a worker thread beside the reactor.
        """
        offsets, size, level = (
            self.records.offsets,
            self.index.size,
            self._since_level(),
        )
        records = self._records(size)
        packer = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        pieces: list[bytes] = []
        counts, cuts, crcs = array("q", [0]), array("q", [0]), array("Q", [0])
        count = done = crc = written = 0
        while count < size:
            # the first review SINCE_SEGMENT bytes on, to the end of its date
            later = bisect_left(
                offsets, offsets[count] + SINCE_SEGMENT, count + 1, size
            )
            count = self.index.count_since(self.dataset.reviews[later - 1].date)
            end = offsets[count] - 1 - offsets[0]
            piece = records[done:end]
            crc = zlib.crc32(piece, crc)
            pieces += (packer.compress(piece), packer.flush(zlib.Z_SYNC_FLUSH))
            written += len(pieces[-2]) + len(pieces[-1])
            counts.append(count)
            cuts.append(written)
            crcs.append(crc)
            done = end
        return SinceStream(level, b"".join(pieces), counts, cuts, crcs)

    def since_run(self, answer: SinceAnswer, stream: SinceStream) -> SinceRun:
        """
        The compressed records of C{answer}'s count: the stream to the last
        flush before it, and the rest compressed here (under
        L{SINCE_SEGMENT} bytes: quick enough for the reactor thread).
        """
        flush = bisect_right(stream.counts, answer.count) - 1
        records = self._records(answer.count)
        start = len(self._records(stream.counts[flush]))
        tail = records[start:]
        packer = zlib.compressobj(stream.level, zlib.DEFLATED, -zlib.MAX_WBITS)
        packed = packer.compress(tail) + packer.compress(b"]}") + packer.flush()
        return SinceRun(
            count=answer.count,
            cut=stream.cuts[flush],
            tail=packed,
            crc=zlib.crc32(b"]}", zlib.crc32(tail, stream.crcs[flush])),
            shift=_crc_shift(len(records) + 2),
        )

    def since_gzipped(
        self, answer: SinceAnswer, run: SinceRun, stream: SinceStream
    ) -> bytes:
        """
        The gzip bytes of C{answer} (one of at least L{GZIP_MIN_SIZE}
        bytes): its prefix as a stored block, then its records as the
        C{stream} and C{run} have them compressed.
        """
        prefix = answer.prefix
        crc = _crc_times(run.shift, zlib.crc32(prefix)) ^ run.crc
        return b"".join(
            (
                _GZIP_HEADER,
                _stored_block(prefix),
                memoryview(stream.packed)[: run.cut],
                run.tail,
                struct.pack("<II", crc, answer.length & 0xFFFFFFFF),
            )
        )


class SnapshotSource(Protocol):
    """Whatever holds the current snapshot: requests and tools read it there."""

    @property
    def snapshot(self) -> Snapshot: ...
