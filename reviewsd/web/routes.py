"""
The Klein application: the routes whose answer is computed per request
(search, changes since a date, and each review's record and page), and the
JSON error answers for every path Klein routes, including those it does
not know.
"""

from __future__ import annotations

import gzip
import zlib
from datetime import date
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_to_bytes

from klein import Klein
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure
from twisted.web.iweb import IRequest
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed, NotFound

from reviewsd.data.links import (
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    REVIEWS_PATH,
    SEARCH_PATH,
    SINCE_PATH,
    Links,
)
from reviewsd.data.search import InvalidParameters, SearchQuery, date_parameter
from reviewsd.data.snapshot import (
    GZIP_MIN_SIZE,
    BoundedCache,
    Representation,
    SinceAnswer,
    SinceStream,
    Snapshot,
    SnapshotSource,
    Validators,
    derived_etag,
)
from reviewsd.web.conditional import check_computed, send_computed
from reviewsd.web.errors import (
    internal_error,
    json_error,
    method_not_allowed,
    not_found,
)
from reviewsd.web.pages import CONTENT_SECURITY_POLICY, HTML_TYPE
from reviewsd.web.pages.review import (
    missing_review_page,
    page_validators,
    render_review,
)

_queries: dict[bytes, SearchQuery] = {}


def _search_query(request: Request) -> SearchQuery:
    """
    The checked query of a search: kept by query string, because clients
    repeat theirs (a widget asks the same question of every visitor).
    """
    key = request.uri.partition(b"?")[2]
    query = _queries.get(key)
    if query is None:
        query = SearchQuery.from_query(request.args)
        if len(key) <= 1024:  # at most 1 MiB of keys
            if len(_queries) >= 1024:
                _queries.clear()
            _queries[key] = query
    return query


@lru_cache(maxsize=256)
def _day(text: str) -> date:
    """A since date; clients poll with the same few."""
    return date_parameter("date", text)


class _SinceStreams:
    """
    The compressed records of each snapshot's since answers
    (L{SinceStream}), made in the reactor's thread pool, once however many
    requests wait for them; kept in the snapshot's cache once made.
    """

    def __init__(self, reactor: Any) -> None:
        self._reactor = reactor
        self._waiting: dict[int, list[Deferred[SinceStream]]] = {}

    def stream(self, snapshot: Snapshot) -> Deferred[SinceStream]:
        key = id(snapshot)  # (the snapshot lives while waited on)
        mine: Deferred[SinceStream] = Deferred()
        waiting = self._waiting.get(key)
        if waiting is not None:
            waiting.append(mine)
            return mine
        waiting = self._waiting[key] = [mine]

        def made(result: SinceStream | Failure) -> None:
            del self._waiting[key]
            if isinstance(result, Failure):
                for each in waiting:
                    each.errback(result)
                return
            snapshot.since.stream = result
            for each in waiting:
                each.callback(result)

        pool = self._reactor.getThreadPool()
        deferToThreadPool(self._reactor, pool, snapshot.since_stream).addBoth(made)
        return mine


class ReviewsAPI:
    """
    The routes computed per request, over the current snapshot of
    C{source}; C{reactor} compresses the records of /since answers in its
    thread pool, once per snapshot.

    L{reviewsd.web.front.Front} calls L{search} and L{since} directly for
    GET and HEAD; Klein routes every other method and path to them, or to
    the error handlers here.
    """

    app = Klein()

    def __init__(self, source: SnapshotSource, reactor: Any) -> None:
        self._source = source
        self._streams = _SinceStreams(reactor)
        self._rendered: BoundedCache[bytes, bytes] = BoundedCache(
            1024, 4 * 1024 * 1024, len
        )

    @app.route(SEARCH_PATH, methods=["GET"])
    def search(self, request: Request) -> bytes:
        try:
            query = _search_query(request)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        snapshot = self._source.snapshot
        answer = snapshot.search_answer(query)
        gzipped, unchanged = check_computed(request, answer.validators)
        if unchanged:
            return b""
        if gzipped:
            return send_computed(request, snapshot.search_gzipped(query, answer), True)
        return send_computed(request, answer.body, False)

    @app.route(SINCE_PATH + "/<day>", methods=["GET"])
    def since(self, request: Request, day: str) -> bytes | Deferred[bytes]:
        """
        A since answer: validators first, from the date alone; then its
        bytes, kept by date. The gzip bytes of a date are a copy of the
        records of all dates compressed once (in a worker thread), but for
        a few kB; the identity bytes are one copy of the records, which
        sending them costs anyway.
        """
        try:
            when = _day(day)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        snapshot = self._source.snapshot
        answer = snapshot.since_answer(when)
        gzipped, unchanged = check_computed(request, answer.validators)
        if unchanged:
            return b""
        body = snapshot.since.bodies.get((when, gzipped))
        if body is None and not gzipped:
            body = snapshot.since_body(answer)
            snapshot.since.bodies.put((when, False), body)
        if body is not None:
            return send_computed(request, body, gzipped)
        stream = snapshot.since.stream
        if stream is None:
            making = self._streams.stream(snapshot)
            return making.addCallback(
                lambda stream: _gzipped(request, snapshot, answer, stream)
            )
        return _gzipped(request, snapshot, answer, stream)

    @app.route(REVIEW_RECORD_PREFIX + "<path:review_id>", methods=["GET"])
    def review_record(self, request: Request, review_id: str) -> bytes:
        """
        One review's record, the bytes every document has for it. Its ETag
        is a hash of them, so it moves only when the review does.
        """
        snapshot = self._source.snapshot
        wanted = _requested_id(request, REVIEW_RECORD_PREFIX)
        position = _position(snapshot, wanted)
        if position is None:
            return _no_review(request, wanted)
        body = snapshot.records.record(position)
        validators = _record_validators(snapshot, body)
        gzipped, unchanged = check_computed(request, validators)
        if unchanged:
            return b""
        if gzipped:
            assert validators.gzip_etag is not None
            body = self._kept(validators.gzip_etag, lambda: _packed(body))
        return send_computed(request, body, gzipped)

    @app.route(REVIEW_PAGE_PREFIX + "<path:review_id>", methods=["GET"])
    def review_page(self, request: Request, review_id: str) -> bytes:
        """
        One review's page, rendered when asked (and kept, bounded, by its
        ETag, which names its content before it is rendered); a small HTML
        404 for an id that is not published.
        """
        snapshot = self._source.snapshot
        request.setHeader(b"Content-Security-Policy", CONTENT_SECURITY_POLICY)
        position = _position(snapshot, _requested_id(request, REVIEW_PAGE_PREFIX))
        if position is None:
            return _missing_page(request, snapshot.links)
        validators = page_validators(
            snapshot, snapshot.records.record(position), _GZIP_CODER
        )
        gzipped, unchanged = check_computed(request, validators)
        if unchanged:
            return b""

        def rendered() -> bytes:
            review = snapshot.dataset.reviews[position]
            return render_review(snapshot, review)

        body = self._kept(validators.etag, rendered)
        if gzipped:
            assert validators.gzip_etag is not None
            body = self._kept(validators.gzip_etag, lambda: _packed(body))
        return send_computed(request, body, gzipped, HTML_TYPE)

    def _kept(self, etag: bytes, make: Any) -> bytes:
        """The bytes named by C{etag}: kept ones, or C{make()} kept."""
        body = self._rendered.get(etag)
        if body is None:
            body = make()
            self._rendered.put(etag, body)
        return body

    @app.handle_errors(NotFound)
    def _not_found(self, request: IRequest, failure: Failure) -> bytes:
        return not_found(request)

    @app.handle_errors(MethodNotAllowed)
    def _method_not_allowed(self, request: IRequest, failure: Failure) -> bytes:
        error = failure.value
        assert isinstance(error, MethodNotAllowed)
        allowed = set(error.valid_methods or [])
        if "GET" in allowed:
            allowed.add("OPTIONS")  # preflights are answered in front of Klein
        return method_not_allowed(request, ", ".join(sorted(allowed)).encode("ascii"))

    @app.handle_errors(Exception)
    def _internal_error(self, request: IRequest, failure: Failure) -> bytes:
        return internal_error(request, failure)


def _gzipped(
    request: Request, snapshot: Snapshot, answer: SinceAnswer, stream: SinceStream
) -> bytes:
    """Make, keep and send the gzip bytes of C{answer}."""
    run = snapshot.since.runs.get(answer.count)
    if run is None:
        run = snapshot.since_run(answer, stream)
        snapshot.since.runs.put(answer.count, run)
    body = snapshot.since_gzipped(answer, run, stream)
    snapshot.since.bodies.put((answer.day, True), body)
    return send_computed(request, body, True)


_GZIP_LEVEL = 6
_GZIP_CODER = b"gzip:%s:%d" % (zlib.ZLIB_RUNTIME_VERSION.encode("ascii"), _GZIP_LEVEL)
"""Names the compressor in derived ETags: its output is part of the bytes."""


def _packed(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=_GZIP_LEVEL, mtime=0)


def _requested_id(request: Request, prefix: str) -> str | None:
    """
    The review id the path names after C{prefix}: its last segment, decoded
    once, or C{None} when the path has a C{/} in its place. Read from the
    path as sent, because Klein's argument is made of segments decoded and
    joined with C{/}, which cannot tell an id's C{%2F} from a C{/}.
    """
    segments = request.path.split(b"/")
    depth = prefix.count("/")
    if len(segments) != depth + 1 or not segments[depth]:
        return None
    try:
        return unquote_to_bytes(segments[depth]).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _position(snapshot: Snapshot, review_id: str | None) -> int | None:
    """Where the published review of that id is, or C{None}."""
    return None if review_id is None else snapshot.positions.get(review_id)


def _record_validators(snapshot: Snapshot, body: bytes) -> Validators:
    """
    A record's validators: a hash of its bytes (and, for its gzip form, of
    those and the compressor), and when the data last changed.
    """
    etag = Representation.of(body).etag
    reviews = snapshot.documents[REVIEWS_PATH]
    return Validators(
        etag=etag,
        gzip_etag=derived_etag(etag, _GZIP_CODER)
        if len(body) >= GZIP_MIN_SIZE
        else None,
        last_modified=reviews.last_modified,
        http_date=reviews.http_date,
    )


def _no_review(request: Request, review_id: str | None) -> bytes:
    if review_id is None:
        return not_found(request)
    return json_error(
        request,
        404,
        "not_found",
        f"No published review has the id {review_id!r}. Find ids with "
        f"{SEARCH_PATH} or {SINCE_PATH}/{{date}}.",
    )


def _missing_page(request: Request, links: Links) -> bytes:
    """The small HTML 404 of an unknown review's page, for browsers."""
    body = missing_review_page(links)
    request.setResponseCode(404)
    for name, value in (
        (b"Content-Type", HTML_TYPE),
        (b"Cache-Control", b"no-store"),
        (b"X-Content-Type-Options", b"nosniff"),
        (b"Content-Length", b"%d" % len(body)),
    ):
        request.setHeader(name, value)
    return b"" if request.method == b"HEAD" else body
