"""
The Klein application: the routes whose answer is computed per request
(search, and changes since a date), and the JSON error answers for every
path Klein routes, including those it does not know.
"""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from typing import Any

from klein import Klein
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure
from twisted.web.iweb import IRequest
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed, NotFound

from reviewsd.data.links import SEARCH_PATH, SINCE_PATH
from reviewsd.data.search import InvalidParameters, SearchQuery, date_parameter
from reviewsd.data.snapshot import SinceAnswer, SinceStream, Snapshot, SnapshotSource
from reviewsd.web.conditional import check_computed, send_computed
from reviewsd.web.errors import (
    internal_error,
    json_error,
    method_not_allowed,
    not_found,
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
