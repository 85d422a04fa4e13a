"""
The HTTP face of the service: conditional GET over precomputed documents,
Klein routes for everything computed per request, and errors as JSON.

Requests only read the current snapshot; nothing here builds a document.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date
from functools import lru_cache, partial
from typing import Any, Generic, TypeVar

from klein import Klein
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IAddress
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http import NOT_MODIFIED, HTTPChannel, stringToDatetime
from twisted.web.http_headers import Headers
from twisted.web.resource import IResource, Resource
from twisted.web.server import NOT_DONE_YET, Request, Site
from werkzeug.exceptions import MethodNotAllowed, NotFound

from reviewsd.data.documents import to_json
from reviewsd.data.links import HOME_PATH, HUB_PATH, MCP_PATH, SEARCH_PATH, SINCE_PATH
from reviewsd.data.search import InvalidParameters, SearchQuery, date_parameter
from reviewsd.data.snapshot import JSON, Document, Representation, SnapshotSource
from reviewsd.web.pages import prefers_json

log = Logger()


CACHE_CONTROL = b"public, max-age=5, must-revalidate"
"""
For a cache in front (a CDN, nginx): keep an answer 5 seconds, then ask
again with its ETag, which costs a 304. Readers behind it see a change
within 5 seconds, and the daemon sees one request per cache per 5 seconds.
"""

_READ_METHODS = b"GET, HEAD, OPTIONS"
_SHARED_HEADERS = (
    (b"Access-Control-Allow-Origin", b"*"),
    (b"Access-Control-Expose-Headers", b"ETag, Link"),
    (b"Cache-Control", CACHE_CONTROL),
    (b"Vary", b"Accept-Encoding"),
    (b"X-Content-Type-Options", b"nosniff"),
)
_ENTITY_TAG = re.compile(rb'(?:W/)?("[^"]*")')
_INLINE_SINCE = 2000
_SINCE_PREFIX = SINCE_PATH + "/"
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
    none_match = headers.getRawHeaders(b"if-none-match")
    if none_match is not None:
        return _none_match(none_match, etag)
    since = headers.getRawHeaders(b"if-modified-since")
    if since is not None:
        return not _modified_since(since[-1], last_modified)
    return False


RawHeaders = dict[bytes, list[bytes]]
"""Headers as L{Headers} keeps them inside: encoded names, lists of values."""


def _raw(*headers: tuple[bytes, bytes | None]) -> RawHeaders:
    """A block of headers for L{set_raw}; C{None} values are left out."""
    block = Headers()
    for name, value in headers:
        if value is not None:
            block.setRawHeaders(name, [value])
    return dict(block._rawHeaders)


def set_raw(request: Request, block: RawHeaders) -> None:
    """
    Set a block of headers made by L{_raw} at once, rather than one by one
    through L{Headers.setRawHeaders}, which encodes and checks each name and
    value again: for a cached document, that cost more than everything else
    the daemon adds to a request. The value lists are shared between
    requests: nothing appends to them (only C{addRawHeader} would).
    """
    request.responseHeaders._rawHeaders.update(block)


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
                _raw(
                    *_SHARED_HEADERS,
                    (b"ETag", representation.etag),
                    (b"Last-Modified", document.http_date),
                    (b"Link", document.links),
                    *document.headers,
                ),
                _raw(
                    (b"Content-Type", document.content_type),
                    (b"Content-Encoding", representation.encoding),
                    (b"Content-Length", b"%d" % len(representation.body)),
                ),
            )

        self.identity = prepare(document.identity)
        self.gzipped = None if document.gzipped is None else prepare(document.gzipped)


_Answer = tuple[Representation, RawHeaders, RawHeaders]
_prepared: dict[int, _Prepared] = {}
"""The documents served lately, by identity; each leaves when it dies."""


def _discard(key: int, _: object) -> None:
    _prepared.pop(key, None)


def serve_document(request: Request, document: Document) -> bytes:
    """
    Set every header for C{document} and return the bytes to send: the
    body, or nothing for HEAD and 304.
    """
    prepared = _prepared.get(id(document))
    if prepared is None or prepared.document() is not document:
        prepared = _prepared[id(document)] = _Prepared(document)
    representation, always, ok = prepared.identity
    if prepared.gzipped is not None and accepts_gzip(
        request.getHeader(b"accept-encoding")
    ):
        representation, always, ok = prepared.gzipped
    set_raw(request, always)
    if not_modified(request, representation.etag, document.last_modified):
        request.setResponseCode(304)
        return b""
    set_raw(request, ok)
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


_SEARCH_HEADERS = _raw((b"Content-Type", JSON), (b"Cache-Control", CACHE_CONTROL))
_CORS = _raw((b"Access-Control-Allow-Origin", b"*"))
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
        return internal_error(request, failure)


def internal_error(request: Request, failure: Failure) -> bytes:
    """A fault of ours: logged, and answered as JSON without a traceback."""
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
    host = request.getHeader(b"host")
    path = request.path
    if path.isascii() and b"%" not in path and (host is None or host.isascii()):
        return True  # (nearly every request)
    try:
        b"/".join(request.postpath).decode("utf-8")
        request.getRequestHostname().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _sent(request: Request, body: bytes) -> int:
    """
    Write an answer whose headers are all set, and end it. Written here, not
    returned: twisted.web would add C{Content-Length: 0} to a 304, which RFC
    9110 forbids.
    """
    request.write(body)
    request.finish()
    return NOT_DONE_YET


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
        api: ReviewsAPI,
        resources: dict[str, IResource] | None = None,
    ) -> None:
        super().__init__()
        self._source = source
        self._routes = api
        self._api = api.app.resource()
        self._resources = resources or {}

    def _direct(self, request: Request, path: str) -> bytes | int | None:
        """
        The computed GET routes, called without Klein's routing, which
        would cost about 40% of their throughput; C{None} for the rest.
        """
        day = path[len(_SINCE_PREFIX) :]
        try:
            if path == SEARCH_PATH:
                answer = self._routes.search(request)
            elif path.startswith(_SINCE_PREFIX) and "/" not in day and "%" not in day:
                # (percent-escapes go to Klein, which decodes them)
                answer = self._routes.since(request, day)
            else:
                return None
        except Exception:
            return internal_error(request, Failure())
        if isinstance(answer, bytes):
            return _sent(request, answer) if request.code == NOT_MODIFIED else answer

        gone: list[Failure] = []
        request.notifyFinish().addErrback(gone.append)

        def send(body: bytes) -> None:
            if not gone:  # the client may have left while the answer was made
                request.write(body)
                request.finish()

        answer.addErrback(lambda failure: internal_error(request, failure))
        answer.addCallback(send)
        return NOT_DONE_YET

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
                "Request bodies are limited to "
                f"{getattr(request, 'body_limit', MAX_BODY)} bytes.",
            )
        snapshot = self._source.snapshot
        document = snapshot.documents.get(path)
        method = request.method
        if path == HOME_PATH and prefers_json(request.getHeader(b"accept")):
            # one URL per representation: JSON clients are sent to the dataset
            request.setResponseCode(303)
            request.setHeader(b"Location", snapshot.links.reviews.encode())
            request.setHeader(b"Vary", b"Accept")
            request.setHeader(b"Access-Control-Allow-Origin", b"*")
            return b""
        if document is None:
            if method in (b"GET", b"HEAD"):
                set_raw(request, _CORS)
            if not _decodable(request):
                return json_error(
                    request,
                    400,
                    "bad_request",
                    "The path and Host header must be UTF-8 once percent-decoded.",
                )
            if method in (b"GET", b"HEAD"):
                direct = self._direct(request, path)
                if direct is not None:
                    return direct
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
        return _sent(request, body)


BODY_LIMITS: dict[str, int] = {MCP_PATH: 1024 * 1024, HUB_PATH: 64 * 1024}
"""
The request bodies each route takes, in bytes: a larger one is answered 413
and not kept. Other routes take none: a body sent there is read and dropped.
"""

MAX_BODY = max(BODY_LIMITS.values())

IDLE_TIMEOUT = 60.0
"""Seconds a connection may stay silent, between requests or within one."""

RECEIVE_TIMEOUT = 30.0
"""Seconds a client has to send a whole request, headers and body."""


T = TypeVar("T")


class InFlight(Generic[T]):
    """
    The requests begun and not yet ended, and a way to wait until there are
    none; adding and discarding cost a set operation, once per request.
    """

    def __init__(self) -> None:
        self._items: set[T] = set()
        self._waiters: list[Deferred[None]] = []

    def add(self, item: T) -> None:
        self._items.add(item)

    def discard(self, item: T) -> None:
        self._items.discard(item)
        if not self._items and self._waiters:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                waiter.callback(None)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))

    def idle(self) -> Deferred[None]:
        """Fires once nothing is in flight (at once if nothing is)."""
        waiter: Deferred[None] = Deferred()
        if self._items:
            self._waiters.append(waiter)
        else:
            waiter.callback(None)
        return waiter


class CappedRequest(Request):
    """
    A request that keeps no more body than its route takes (L{BODY_LIMITS}),
    and that tells its L{ReviewsSite} when it begins and ends: for the
    requests in flight, the access log and the metrics.

    @ivar started: when its first line arrived, on the site's clock.
    """

    too_large = False
    body_limit = MAX_BODY
    started = 0.0
    _site: ReviewsSite | None = None
    _discarding = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        site = getattr(self.channel, "site", None)
        if isinstance(site, ReviewsSite):
            self._site = site
            self.started = site.reactor.seconds()
            site.in_flight.add(self)

    def gotLength(self, length: int | None) -> None:  # noqa: N802
        if length == 0:  # no body: nothing to limit (most requests)
            super().gotLength(0)
            return
        if self._site is not None:
            # the request line is in, but not parsed into self.path yet
            target = getattr(self.channel, "_path", None)
            self.body_limit = self._site.body_limit(target)
        if length is not None and length > self.body_limit:
            self._discarding = True
            self.too_large = self.body_limit > 0
            length = 0  # nothing is kept: no temporary file for a large body
        elif length is None:
            length = self.body_limit  # chunked: memory, unless it may be large
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802
        if self._discarding:
            return
        if self.content.tell() + len(data) > self.body_limit:
            self._discarding = True
            self.too_large = self.body_limit > 0
            self.content.seek(0)
            self.content.truncate()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
        channel = self.channel
        if isinstance(channel, ReviewsChannel):
            channel.receiving_since = None
        site = self._site
        if site is not None and site.draining:
            # stopping: answer, then close, so that the client goes elsewhere
            channel.persistent = False
            self.responseHeaders.setRawHeaders(b"Connection", [b"close"])
        super().requestReceived(command, path, version)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._site is not None:
                self._site.in_flight.discard(self)

    def connectionLost(self, reason: Failure) -> None:  # noqa: N802
        super().connectionLost(reason)
        if self._site is not None:
            self._site.in_flight.discard(self)


class ReviewsChannel(HTTPChannel):
    """
    An HTTP/1.1 connection that its site knows of, so that stopping can
    close it once its answer is sent, and that knows since when a request
    has been arriving on it, so that a client that trickles one is cut off.

    (Twisted's default wraps the channel to offer HTTP/2 when the C{h2}
    package is installed; this service does not offer HTTP/2.)

    @ivar receiving_since: when the first byte of the request arriving now
        came, or C{None} between requests.
    """

    site: ReviewsSite
    receiving_since: float | None = None
    _peer: IAddress | None = None
    _host: IAddress | None = None

    def getPeer(self) -> IAddress:  # noqa: N802
        """
        The client's address, asked of the transport once per connection:
        each request asks for it (and for L{getHost}, a system call).
        """
        if self._peer is None:
            self._peer = super().getPeer()
        return self._peer

    def getHost(self) -> IAddress:  # noqa: N802
        if self._host is None:
            self._host = super().getHost()
        return self._host

    def connectionMade(self) -> None:  # noqa: N802
        super().connectionMade()
        self.site.connections.add(self)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.receiving_since is None:
            self.receiving_since = self.site.reactor.seconds()
        super().dataReceived(data)

    def connectionLost(self, reason: Failure) -> None:  # noqa: N802
        super().connectionLost(reason)
        self.site.connections.discard(self)

    def close_when_done(self) -> None:
        """Close now if no request is under way, else after its answer."""
        self.persistent = False
        if not self.requests:
            self.loseConnection()


RequestObserver = Callable[[Request, str, float], object]
"""Called with each answered request, its route and its duration."""


class ReviewsSite(Site):
    """
    The site: bounded connections (idle and receive timeouts, body limits by
    route), the connections and requests in flight (so that stopping can
    wait for them), and the observers of each answered request (access log,
    metrics).

    Twisted's own access log is replaced: it formats a line per request
    through the legacy log system, which costs about half the throughput of
    a small answer.

    @ivar observers: L{RequestObserver}s, called as each request finishes.
    @ivar draining: set once stopping has begun: answers close their
        connection.
    """

    protocol = ReviewsChannel  # type: ignore[assignment]

    def __init__(
        self,
        resource: IResource,
        reactor: Any,
        *,
        routes: Iterable[str] = (),
        body_limits: dict[str, int] | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        receive_timeout: float = RECEIVE_TIMEOUT,
    ) -> None:
        super().__init__(
            resource,
            requestFactory=CappedRequest,
            timeout=idle_timeout,
            reactor=reactor,
        )
        self.noisy = False
        self.displayTracebacks = False
        self.in_flight: InFlight[CappedRequest] = InFlight()
        self.connections: InFlight[ReviewsChannel] = InFlight()
        self.draining = False
        self.observers: list[RequestObserver] = []
        self.receive_timeout = receive_timeout
        limits = BODY_LIMITS if body_limits is None else body_limits
        self._body_limits = {path.encode("ascii"): n for path, n in limits.items()}
        self._max_body = max(self._body_limits.values(), default=0)
        self._routes = {path.encode("ascii"): path for path in routes}
        self._since = SINCE_PATH.encode("ascii") + b"/"

    def body_limit(self, target: bytes | None) -> int:
        """The body limit for a request target (path, query, maybe absolute)."""
        if target is None:
            return self._max_body
        path = target.split(b"?", 1)[0]
        if not path.startswith(b"/"):
            # absolute form: http://host/path
            _, _, rest = path.partition(b"//")
            path = b"/" + rest.partition(b"/")[2]
        return self._body_limits.get(path, 0)

    def route(self, path: bytes) -> str:
        """
        The route a path belongs to, for metrics: a known path, the since
        template, or C{other}, so that clients cannot make up labels.
        """
        route = self._routes.get(path)
        if route is not None:
            return route
        if path.startswith(self._since) and b"/" not in path[len(self._since) :]:
            return SINCE_PATH + "/{date}"
        return "other"

    def log(self, request: Request) -> None:
        """Twisted calls this as each request finishes: tell the observers."""
        if not self.observers:
            return
        duration = self.reactor.seconds() - getattr(request, "started", 0.0)
        route = self.route(request.path)
        for observe in self.observers:
            try:
                observe(request, route, duration)
            except Exception:
                log.failure("Observing a request failed")

    def drain(self) -> Deferred[None]:
        """
        Stopping (the port is closed): idle connections close now, busy ones
        once their answer is sent. Fires when every connection is closed.
        """
        self.draining = True
        for channel in self.connections:
            channel.close_when_done()
        return self.connections.idle()

    def drop_slow_clients(self) -> int:
        """
        Close the connections on which a request has been arriving for longer
        than the receive timeout (slowloris); called every second or so.
        """
        deadline = self.reactor.seconds() - self.receive_timeout
        dropped = 0
        for channel in self.connections:
            since = channel.receiving_since
            if since is not None and since < deadline and channel.transport:
                log.info(
                    "Closed the connection of {client}: its request took more "
                    "than {timeout} s to arrive",
                    client=getattr(channel.transport.getPeer(), "host", "-"),
                    timeout=self.receive_timeout,
                )
                channel.transport.abortConnection()
                dropped += 1
        return dropped


def make_site(
    source: SnapshotSource,
    reactor: Any = None,
    resources: dict[str, IResource] | None = None,
    *,
    body_limits: dict[str, int] | None = None,
    idle_timeout: float = IDLE_TIMEOUT,
    receive_timeout: float = RECEIVE_TIMEOUT,
) -> ReviewsSite:
    """
    The whole HTTP face: documents, the Klein routes, and C{resources}, other
    resources by exact path (C{/mcp}, the hub, C{/healthz}, C{/metrics}).
    """
    if reactor is None:
        from twisted.internet import reactor
    resources = resources or {}
    return ReviewsSite(
        Front(source, ReviewsAPI(source, reactor), resources),
        reactor,
        routes=[*source.snapshot.documents, *resources, SEARCH_PATH],
        body_limits=body_limits,
        idle_timeout=idle_timeout,
        receive_timeout=receive_timeout,
    )


class PathMap(Resource):
    """Resources by exact path, and JSON 404s: the root of a side listener."""

    isLeaf = True

    def __init__(self, resources: dict[str, IResource]) -> None:
        super().__init__()
        self._resources = resources

    def render(self, request: Request) -> bytes | int:
        resource = self._resources.get(request.path.decode("latin-1"))
        if resource is None:
            return json_error(
                request, 404, "not_found", f"There is nothing at {_path(request)}."
            )
        return resource.render(request)


def make_side_site(
    resources: dict[str, IResource],
    reactor: Any,
    *,
    idle_timeout: float = IDLE_TIMEOUT,
    receive_timeout: float = RECEIVE_TIMEOUT,
) -> ReviewsSite:
    """A site answering only C{resources} (C{/metrics} and C{/healthz})."""
    return ReviewsSite(
        PathMap(resources),
        reactor,
        routes=list(resources),
        body_limits={},
        idle_timeout=idle_timeout,
        receive_timeout=receive_timeout,
    )
