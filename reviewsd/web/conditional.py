"""
Conditional GET over precomputed documents: the headers of each document
are prepared once, and a request costs a lookup, a validator comparison
and the bytes already built. Answers computed per request (search, since)
are decided the same way on validators known before their bytes.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from functools import lru_cache, partial

from twisted.web.http import stringToDatetime
from twisted.web.server import Request

from reviewsd.data.snapshot import JSON, Document, Representation, Validators
from reviewsd.twisted_private import RawHeaders, raw_block, set_raw

CACHE_CONTROL = b"public, max-age=5, must-revalidate"
"""
For a cache in front (a CDN, nginx): keep an answer 5 seconds, then ask
again with its ETag, which costs a 304. Readers behind it see a change
within 5 seconds, and the daemon sees one request per cache per 5 seconds.
"""

_SHARED_HEADERS = (
    (b"Access-Control-Allow-Origin", b"*"),
    (b"Access-Control-Expose-Headers", b"ETag, Link"),
    (b"Cache-Control", CACHE_CONTROL),
    (b"Vary", b"Accept-Encoding"),
    (b"X-Content-Type-Options", b"nosniff"),
)
"""The headers every answer about a document carries, 304s included."""

_ENTITY_TAG = re.compile(rb'(?:W/)?("[^"]*")')


@lru_cache(maxsize=256)
def accepts_gzip(accept_encoding: bytes | None) -> bool:
    """
    Whether an C{Accept-Encoding} value admits gzip (RFC 9110 12.5.3).

    Clients send few distinct values, so the answer is cached.
    """
    if not accept_encoding:
        return False
    gzip_q = star_q = None
    for part in accept_encoding.split(b","):
        coding, _, params = part.partition(b";")
        q = 1.0
        for param in params.split(b";"):
            name, _, value = param.partition(b"=")
            if name.strip().lower() == b"q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        coding = coding.strip().lower()
        if coding in (b"gzip", b"x-gzip"):
            gzip_q = q
        elif coding == b"*":
            star_q = q
    if gzip_q is not None:
        return gzip_q > 0
    return star_q is not None and star_q > 0


def _none_match(values: Sequence[bytes], etag: bytes) -> bool:
    """C{If-None-Match} with weak comparison (RFC 9110 13.1.2)."""
    if len(values) == 1 and values[0] == etag:
        return True  # what caches and wrk send: the ETag they were given
    for value in values:
        if value.strip() == b"*":
            return True
        if etag in _ENTITY_TAG.findall(value):
            return True
    return False


def _modified_since(value: bytes, last_modified: int) -> bool:
    try:
        since = stringToDatetime(value)
    except (ValueError, KeyError, IndexError, OverflowError):
        return True  # not an HTTP date: ignore the header, as RFC 9110 says
    return last_modified > since


def not_modified(request: Request, etag: bytes, last_modified: int) -> bool:
    """
    Whether a GET or HEAD may be answered 304: C{If-None-Match} decides when
    present, else C{If-Modified-Since} (RFC 9110 13.2.2).
    """
    headers = request.requestHeaders
    return not_modified_by(
        headers.getRawHeaders(b"if-none-match"),
        headers.getRawHeaders(b"if-modified-since"),
        etag,
        last_modified,
    )


def not_modified_by(
    none_match: Sequence[bytes] | None,
    since: Sequence[bytes] | None,
    etag: bytes,
    last_modified: int,
) -> bool:
    """L{not_modified}, given the values of the two headers, if sent."""
    if none_match is not None:
        return _none_match(none_match, etag)
    if since is not None:
        return not _modified_since(since[-1], last_modified)
    return False


_Answer = tuple[Representation, RawHeaders, RawHeaders]


class _Prepared:
    """
    Everything sent about a document, ready to set: for each representation,
    itself, the headers of every answer and those only a 200 adds.
    """

    __slots__ = ("document", "identity", "gzipped")

    def __init__(self, document: Document) -> None:
        # a weak reference: the answers of an old snapshot go with it
        self.document = weakref.ref(document, partial(_discard, id(document)))

        def prepare(representation: Representation) -> _Answer:
            return (
                representation,
                raw_block(
                    *_SHARED_HEADERS,
                    (b"ETag", representation.etag),
                    (b"Last-Modified", document.http_date),
                    (b"Link", document.links),
                    *document.headers,
                ),
                raw_block(
                    (b"Content-Type", document.content_type),
                    (b"Content-Encoding", representation.encoding),
                    (b"Content-Length", b"%d" % len(representation.body)),
                ),
            )

        self.identity = prepare(document.identity)
        self.gzipped = None if document.gzipped is None else prepare(document.gzipped)


_prepared: dict[int, _Prepared] = {}
"""The documents served lately, by identity; each leaves when it dies."""


def _discard(key: int, _: object) -> None:
    _prepared.pop(key, None)


def document_answers(document: Document) -> tuple[_Answer, _Answer | None]:
    """
    The answers about C{document}, identity and gzipped (if it has that
    representation): each the representation, the headers of every answer
    and those a 200 adds, made once per document.
    """
    prepared = _prepared.get(id(document))
    if prepared is None or prepared.document() is not document:
        prepared = _prepared[id(document)] = _Prepared(document)
    return prepared.identity, prepared.gzipped


def serve_document(request: Request, document: Document) -> bytes:
    """
    Set every header for C{document} and return the bytes to send: the
    body, or nothing for HEAD and 304.
    """
    identity, gzipped = document_answers(document)
    representation, always, ok = identity
    if gzipped is not None and accepts_gzip(request.getHeader(b"accept-encoding")):
        representation, always, ok = gzipped
    set_raw(request, always)
    if not_modified(request, representation.etag, document.last_modified):
        request.setResponseCode(304)
        return b""
    set_raw(request, ok)
    return b"" if request.method == b"HEAD" else representation.body


_validated: dict[tuple[bytes, bytes], RawHeaders] = {}
"""The headers of every answer about a computed answer, by ETag and date."""
_content: dict[tuple[bool, int, bytes], RawHeaders] = {}
"""The headers a 200 adds, by encoding, length and type."""


def check_computed(request: Request, validators: Validators) -> tuple[bool, bool]:
    """
    Choose the representation of a computed JSON answer for C{request} and
    set the headers every answer about it carries: C{(gzipped, unchanged)},
    where C{unchanged} means the answer is a 304, its code set, whose
    bytes need not be made.
    """
    gzipped = validators.gzip_etag is not None and accepts_gzip(
        request.getHeader(b"accept-encoding")
    )
    etag = validators.gzip_etag if gzipped else validators.etag
    assert etag is not None
    key = (etag, validators.http_date)
    always = _validated.get(key)
    if always is None:
        if len(_validated) >= 4096:
            _validated.clear()
        always = _validated[key] = raw_block(
            *_SHARED_HEADERS,
            (b"ETag", etag),
            (b"Last-Modified", validators.http_date),
        )
    set_raw(request, always)
    if not_modified(request, etag, validators.last_modified):
        request.setResponseCode(304)
        return gzipped, True
    return gzipped, False


def send_computed(
    request: Request, body: bytes, gzipped: bool, content_type: bytes = JSON
) -> bytes:
    """
    Set the headers of a 200 carrying C{body}, chosen by L{check_computed},
    and return what to send: C{body}, or nothing for HEAD.
    """
    key = (gzipped, len(body), content_type)
    block = _content.get(key)
    if block is None:
        if len(_content) >= 4096:
            _content.clear()
        block = _content[key] = raw_block(
            (b"Content-Type", content_type),
            (b"Content-Encoding", b"gzip" if gzipped else None),
            (b"Content-Length", b"%d" % len(body)),
        )
    set_raw(request, block)
    return b"" if request.method == b"HEAD" else body
