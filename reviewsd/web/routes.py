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
from reviewsd.data.snapshot import JSON, Document, SnapshotSource
from reviewsd.twisted_private import raw_block, set_raw
from reviewsd.web.conditional import CACHE_CONTROL, serve_document
from reviewsd.web.errors import (
    internal_error,
    json_error,
    method_not_allowed,
    not_found,
)

_INLINE_SINCE = 2000
"""Larger /since answers are rendered in a worker thread."""

_SEARCH_HEADERS = raw_block((b"Content-Type", JSON), (b"Cache-Control", CACHE_CONTROL))
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


class ReviewsAPI:
    """
    The routes computed per request, over the current snapshot of
    C{source}; C{reactor} runs the large /since answers in its thread pool.

    L{reviewsd.web.front.Front} calls L{search} and L{since} directly for
    GET and HEAD; Klein routes every other method and path to them, or to
    the error handlers here.
    """

    app = Klein()

    def __init__(self, source: SnapshotSource, reactor: Any) -> None:
        self._source = source
        self._reactor = reactor

    @app.route(SEARCH_PATH, methods=["GET"])
    def search(self, request: Request) -> bytes:
        try:
            query = _search_query(request)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        set_raw(request, _SEARCH_HEADERS)
        return self._source.snapshot.search(query)

    @app.route(SINCE_PATH + "/<day>", methods=["GET"])
    def since(self, request: Request, day: str) -> bytes | Deferred[bytes]:
        try:
            when = _day(day)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        snapshot = self._source.snapshot
        document = snapshot.since.get(when)
        if document is not None:
            return serve_document(request, document)
        if snapshot.since_count(when) <= _INLINE_SINCE:
            document = snapshot.since_document(when)
            snapshot.since.put(when, document)
            return serve_document(request, document)
        rendering = deferToThreadPool(
            self._reactor,
            self._reactor.getThreadPool(),
            snapshot.since_document,
            when,
        )

        def rendered(document: Document) -> bytes:
            snapshot.since.put(when, document)
            return serve_document(request, document)

        return rendering.addCallback(rendered)

    @app.handle_errors(NotFound)
    def _not_found(self, request: IRequest, failure: Failure) -> bytes:
        return not_found(request)

    @app.handle_errors(MethodNotAllowed)
    def _method_not_allowed(self, request: IRequest, failure: Failure) -> bytes:
        error = failure.value
        assert isinstance(error, MethodNotAllowed)
        allowed = sorted(error.valid_methods or [])
        return method_not_allowed(request, ", ".join(allowed).encode("ascii"))

    @app.handle_errors(Exception)
    def _internal_error(self, request: IRequest, failure: Failure) -> bytes:
        return internal_error(request, failure)
