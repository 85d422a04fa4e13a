"""
The HTTP face of the service: conditional GET over precomputed documents,
Klein routes for everything computed per request, and errors as JSON.

Requests only read the current snapshot; nothing here builds a document.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

from klein import Klein
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http import stringToDatetime
from twisted.web.resource import IResource, Resource
from twisted.web.server import NOT_DONE_YET, Request, Site
from werkzeug.exceptions import MethodNotAllowed, NotFound

from reviewsd.documents import to_json
from reviewsd.links import SEARCH_PATH, SINCE_PATH
from reviewsd.search import InvalidParameters, SearchQuery, date_parameter
from reviewsd.snapshot import Document, Snapshot

log = Logger()


class SnapshotSource(Protocol):
    """Whatever holds the snapshot that requests are answered from."""

    @property
    def snapshot(self) -> Snapshot: ...


_READ_METHODS = b"GET, HEAD, OPTIONS"
_SHARED_HEADERS = (
    (b"Access-Control-Allow-Origin", [b"*"]),
    (b"Access-Control-Expose-Headers", [b"ETag, Link"]),
    (b"Cache-Control", [b"no-cache"]),
    (b"Vary", [b"Accept-Encoding"]),
    (b"X-Content-Type-Options", [b"nosniff"]),
)
_ENTITY_TAG = re.compile(rb'(?:W/)?("[^"]*")')
_INLINE_SINCE = 2000
"""Larger /since answers are rendered in a worker thread."""


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


def _none_match(values: list[bytes], etag: bytes) -> bool:
    """C{If-None-Match} with weak comparison (RFC 9110 13.1.2)."""
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
    none_match = headers.getRawHeaders(b"if-none-match")
    if none_match is not None:
        return _none_match(none_match, etag)
    since = headers.getRawHeaders(b"if-modified-since")
    if since is not None:
        return not _modified_since(since[-1], last_modified)
    return False


def serve_document(request: Request, document: Document) -> bytes:
    """
    Set every header for C{document} and return the bytes to send: the
    body, or nothing for HEAD and 304.
    """
    representation = document.identity
    if document.gzipped is not None and accepts_gzip(
        request.getHeader(b"accept-encoding")
    ):
        representation = document.gzipped
    headers = request.responseHeaders
    for name, value in _SHARED_HEADERS:
        headers.setRawHeaders(name, value)
    headers.setRawHeaders(b"ETag", [representation.etag])
    headers.setRawHeaders(b"Last-Modified", [document.http_date])
    if document.links is not None:
        headers.setRawHeaders(b"Link", [document.links])
    if not_modified(request, representation.etag, document.last_modified):
        request.setResponseCode(304)
        return b""
    headers.setRawHeaders(b"Content-Type", [document.content_type])
    if representation.encoding is not None:
        headers.setRawHeaders(b"Content-Encoding", [representation.encoding])
    headers.setRawHeaders(b"Content-Length", [b"%d" % len(representation.body)])
    return b"" if request.method == b"HEAD" else representation.body


def json_error(
    request: Request, code: int, error: str, message: str, **extra: Any
) -> bytes:
    """The one shape of every error: C{{"error", "message"}} and any extras."""
    request.setResponseCode(code)
    request.setHeader(b"Content-Type", b"application/json")
    request.setHeader(b"Cache-Control", b"no-store")
    return to_json({"error": error, "message": message, **extra})


def _path(request: Request) -> str:
    return request.path.decode("utf-8", "replace")


class ReviewsAPI:
    """
    The Klein application: routes computed per request, and the JSON error
    answers for everything, including paths Klein does not know.
    """

    app = Klein()

    def __init__(self, source: SnapshotSource, reactor: Any) -> None:
        self._source = source
        self._reactor = reactor

    @app.route(SEARCH_PATH, methods=["GET"])
    def search(self, request: Request) -> bytes:
        try:
            query = SearchQuery.from_query(request.args)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-cache")
        return self._source.snapshot.search(query)

    @app.route(SINCE_PATH + "/<day>", methods=["GET"])
    async def since(self, request: Request, day: str) -> bytes:
        try:
            when = date_parameter("date", day)
        except InvalidParameters as e:
            return json_error(request, 400, **e.as_json())
        snapshot = self._source.snapshot
        document = snapshot.since.get(when)
        if document is None:
            if snapshot.since_count(when) > _INLINE_SINCE:
                document = await deferToThreadPool(
                    self._reactor,
                    self._reactor.getThreadPool(),
                    snapshot.since_document,
                    when,
                )
            else:
                document = snapshot.since_document(when)
            snapshot.since.put(when, document)
        return serve_document(request, document)

    @app.handle_errors(NotFound)
    def _not_found(self, request: Request, failure: Failure) -> bytes:
        return json_error(
            request, 404, "not_found", f"There is nothing at {_path(request)}."
        )

    @app.handle_errors(MethodNotAllowed)
    def _method_not_allowed(self, request: Request, failure: Failure) -> bytes:
        allowed = sorted(failure.value.valid_methods or [])
        request.setHeader(b"Allow", ", ".join(allowed).encode("ascii"))
        return _method_error(request, ", ".join(allowed))

    @app.handle_errors(Exception)
    def _internal_error(self, request: Request, failure: Failure) -> bytes:
        log.failure(
            "Unhandled error answering {method} {path}",
            failure,
            method=request.method.decode("latin-1"),
            path=_path(request),
        )
        return json_error(
            request,
            500,
            "internal_error",
            "The server failed to answer this request; it has been logged.",
        )


def _method_error(request: Request, allowed: str) -> bytes:
    return json_error(
        request,
        405,
        "method_not_allowed",
        f"{request.method.decode('latin-1')} is not allowed on {_path(request)}; "
        f"use {allowed}.",
    )


def _decodable(request: Request) -> bool:
    """Whether Klein can decode the URL; it would log an error otherwise."""
    try:
        b"/".join(request.postpath).decode("utf-8")
        request.getRequestHostname().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Front(Resource):
    """
    The root: the fixed documents are answered straight from the snapshot,
    everything else goes to the Klein application.

    Routing the documents through Klein too would cost about 40% of their
    throughput, and they are most of the traffic.
    """

    isLeaf = True

    def __init__(
        self,
        source: SnapshotSource,
        api: IResource,
        resources: dict[str, IResource] | None = None,
    ) -> None:
        super().__init__()
        self._source = source
        self._api = api
        self._resources = resources or {}

    def render(self, request: Request) -> bytes | int:
        path = request.path.decode("latin-1")
        resource = self._resources.get(path)
        if resource is not None:
            return resource.render(request)
        if getattr(request, "too_large", False):
            return json_error(
                request,
                413,
                "too_large",
                f"Request bodies are limited to {MAX_BODY} bytes.",
            )
        document = self._source.snapshot.documents.get(path)
        method = request.method
        if document is None:
            if method in (b"GET", b"HEAD"):
                request.setHeader(b"Access-Control-Allow-Origin", b"*")
            if not _decodable(request):
                return json_error(
                    request,
                    400,
                    "bad_request",
                    "The path and Host header must be UTF-8 once percent-decoded.",
                )
            return self._api.render(request)
        if method in (b"GET", b"HEAD"):
            body = serve_document(request, document)
        elif method == b"OPTIONS":
            request.setResponseCode(204)
            for name, value in (
                (b"Allow", _READ_METHODS),
                (b"Access-Control-Allow-Origin", b"*"),
                (b"Access-Control-Allow-Methods", _READ_METHODS),
                (b"Access-Control-Allow-Headers", b"If-None-Match, If-Modified-Since"),
                (b"Access-Control-Max-Age", b"86400"),
            ):
                request.setHeader(name, value)
            body = b""
        else:
            request.setHeader(b"Allow", _READ_METHODS)
            body = _method_error(request, _READ_METHODS.decode("ascii"))
            request.setHeader(b"Content-Length", b"%d" % len(body))
        # Written here, not returned: twisted.web would add Content-Length: 0
        # to a 304, which RFC 9110 forbids.
        request.write(body)
        request.finish()
        return NOT_DONE_YET


MAX_BODY = 1024 * 1024
"""No endpoint takes more; a larger body is answered 413, and not kept."""


class CappedRequest(Request):
    """A request that stops storing its body past L{MAX_BODY}."""

    too_large = False

    def handleContentChunk(self, data: bytes) -> None:
        if self.too_large:
            return
        if self.content.tell() + len(data) > MAX_BODY:
            self.too_large = True
            self.content.seek(0)
            self.content.truncate()
            return
        super().handleContentChunk(data)


def make_site(
    source: SnapshotSource,
    reactor: Any = None,
    resources: dict[str, IResource] | None = None,
) -> Site:
    """
    The whole HTTP face: documents, the Klein routes, and C{resources}, other
    resources by exact path (C{/mcp}).
    """
    if reactor is None:
        from twisted.internet import reactor
    site = Site(
        Front(source, ReviewsAPI(source, reactor).app.resource(), resources),
        requestFactory=CappedRequest,
    )
    site.displayTracebacks = False
    return site
