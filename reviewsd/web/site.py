"""
Connection and request policy: body limits by route, idle and receive
timeouts, the connections and requests in flight (so that stopping can wait
for them), and the observers of each answered request; and the two sites
built with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import (
    IAddress,
    IDelayedCall,
    IPushProducer,
    ITCPTransport,
)
from twisted.internet.protocol import connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http
from twisted.web.http import datetimeToString
from twisted.web.resource import IResource
from twisted.web.server import Request, Site
from twisted.web.server import version as server_version

from reviewsd.data.links import (
    HUB_PATH,
    MCP_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    SEARCH_PATH,
    SINCE_PATH,
)
from reviewsd.data.snapshot import SnapshotSource
from reviewsd.logs import AnsweredRequest
from reviewsd.twisted_private import (
    BadRequests,
    hold_parsing,
    parser_idle,
    pending_target,
    resume_parsing,
    set_answering,
)
from reviewsd.web.budget import ClientBudget, ConnectionCount, client_of, peer_host
from reviewsd.web.errors import closing_error, json_error
from reviewsd.web.front import Front, PathMap, PreparedAnswers
from reviewsd.web.routes import ReviewsAPI

log = Logger()

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

PIPELINE_BURST = 16
"""
Pipelined requests answered in a row on one connection before the others
get their turn (at the reactor's next iteration).
"""


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

    def gotLength(self, length: int | None) -> None:
        if length == 0:  # no body: nothing to limit (most requests)
            super().gotLength(0)
            return
        if self._site is not None:
            # the request line is in, but not parsed into self.path yet
            self.body_limit = self._site.body_limit(pending_target(self.channel))
        if length is not None and length > self.body_limit:
            self._discarding = True
            self.too_large = self.body_limit > 0
            length = 0  # nothing is kept: no temporary file for a large body
        elif length is None:
            length = self.body_limit  # chunked: memory, unless it may be large
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._discarding:
            return
        content = self.content
        assert content is not None  # made by gotLength, before any chunk
        if content.tell() + len(data) > self.body_limit:
            self._discarding = True
            self.too_large = self.body_limit > 0
            content.seek(0)
            content.truncate()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        channel = self.channel
        if isinstance(channel, ReviewsChannel):
            channel.receiving_since = None
        site = self._site
        if site is not None and site.draining:
            # stopping: answer, then close, so that the client goes elsewhere
            channel.persistent = False
            self.responseHeaders.setRawHeaders(b"Connection", [b"close"])
        super().requestReceived(command, path, version)

    def process(self) -> None:
        """
        Answer the request; an HTTP/1.1 one without Host is a 400 (RFC 9112),
        and a search or since from a client over its budget a 429.
        """
        if self.clientproto == b"HTTP/1.1" and not self.requestHeaders.hasHeader(
            b"host"
        ):
            self._answer_error(
                json_error(
                    self,
                    400,
                    "bad_request",
                    "An HTTP/1.1 request must have a Host header.",
                )
            )
            return
        site = self._site
        if site is not None and site.budget is not None and site.computed(self):
            wait = site.budget.wait(client_of(self))
            if wait:
                self._over_budget(site.budget, wait)
                return
        super().process()

    def _over_budget(self, budget: ClientBudget, wait: float) -> None:
        """
        Answer 429, and read nothing more on this connection until its
        turn (L{ClientBudget.wait}): a client that does not wait costs no
        more than one that does.
        """
        retry = max(1, math.ceil(wait))
        self.setHeader(b"Retry-After", b"%d" % retry)
        body = json_error(
            self,
            429,
            "rate_limited",
            f"This client asked for more than {budget.rate:g} search and since"
            f" answers a second (or {budget.burst} at once); ask again in"
            f" {retry} s.",
            retry_after=retry,
        )
        if isinstance(self.channel, ReviewsChannel):
            self.channel.rest(wait)
        self._answer_error(body)

    def _answer_error(self, body: bytes) -> None:
        self.setHeader(b"Content-Length", b"%d" % len(body))
        if self.method != b"HEAD":
            self.write(body)
        self.finish()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._site is not None:
                self._site.in_flight.discard(self)

    def connectionLost(self, reason: Failure) -> None:
        super().connectionLost(reason)
        if self._site is not None:
            self._site.in_flight.discard(self)


_HEADER_LINES = re.compile(rb"(?:[-!#$%&'*+.^_`|~0-9A-Za-z]+:[^\r\n\x00]*\r\n)*")
"""Header lines as Twisted takes them: a token, a colon, no NUL, CR or LF."""

_UNUSUAL = frozenset({b"content-length", b"expect", b"transfer-encoding"})
"""Headers that make a request one for Twisted's parser to read."""

_STATUS = {
    code: b"HTTP/1.1 %d %s\r\nServer: %s\r\nDate: "
    % (code, http.RESPONSES[code], server_version)
    for code in (200, 304)
}
"""What a prepared answer starts with, as Twisted writes it, to the date."""


def plain_request_line(line: bytes) -> tuple[bytes, bytes] | None:
    """The method and target of a GET or HEAD request line in HTTP/1.1."""
    parts = line.split(b" ")
    if len(parts) != 3:
        return None
    method, target, version = parts
    if version != b"HTTP/1.1" or (method != b"GET" and method != b"HEAD"):
        return None
    return method, target


def plain_headers(block: bytes, max_headers: int) -> dict[bytes, list[bytes]] | None:
    """
    The headers (by lower-case name) of a request's header lines, each with
    its line end, if they have a Host, say the request has no body and the
    connection stays open, and hold nothing Twisted's parser would treat
    specially or refuse; C{None} otherwise.
    """
    if _HEADER_LINES.fullmatch(block) is None:
        return None
    lines = block.split(b"\r\n")
    del lines[-1]
    if len(lines) > max_headers:
        return None
    headers: dict[bytes, list[bytes]] = {}
    for line in lines:
        name, _, value = line.partition(b":")
        name = name.lower()
        if name in _UNUSUAL:
            return None
        headers.setdefault(name, []).append(value.strip(b" \t"))
    if b"host" not in headers:
        return None
    connection = headers.get(b"connection")
    if connection is not None and b"close" in connection[0].lower().split(b" "):
        return None  # (as Twisted reads it: the first value, split at spaces)
    return headers


def plain_request(
    head: bytes, max_headers: int
) -> tuple[bytes, bytes, dict[bytes, list[bytes]]] | None:
    """
    The method, target and headers of a request head (without its blank
    line) if both are plain (L{plain_request_line}, L{plain_headers}).
    """
    line_end = head.find(b"\r\n")
    request = None if line_end < 0 else plain_request_line(head[:line_end])
    if request is None:
        return None
    headers = plain_headers(head[line_end + 2 :] + b"\r\n", max_headers)
    return None if headers is None else (*request, headers)


class PreparedRequest:
    """
    A request answered from L{PreparedAnswers}, as the observers of each
    answered request see it (L{AnsweredRequest}).
    """

    __slots__ = ("method", "uri", "path", "code", "sentLength", "_client")

    content = None
    """It had no body (as a request without one has an empty C{content})."""

    def __init__(
        self, method: bytes, uri: bytes, code: int, sent: int, client: IAddress
    ) -> None:
        self.method = method
        self.uri = self.path = uri
        self.code = code
        self.sentLength = sent
        self._client = client

    def getClientAddress(self) -> IAddress:
        return self._client


class ReviewsChannel(BadRequests):
    """
    An HTTP/1.1 connection that its site knows of, so that stopping can
    close it once its answer is sent, and that knows since when a request
    has been arriving on it, so that a client that trickles one is cut off.

    It answers pipelined requests only as fast as its client reads them:
    once the transport holds more unsent bytes than its buffer size (it
    then pauses this channel, its producer), the requests read and not yet
    answered wait, and the socket is not read, until the client has taken
    the answers (the transport resumes this channel). Twisted's channel
    pauses reading there, but goes on answering every pipelined request it
    has already read, each answer kept whole in the transport's buffer; a
    client that sent a thousand and read none held a hundred megabytes. And
    after L{PIPELINE_BURST} answers in a row, the connection waits for the
    reactor's next iteration, so that one client's pipeline does not hold
    the others up.

    Requests too malformed to answer as requests are answered as JSON, then
    the connection closes: 414 for a request line over L{MAX_LENGTH}, 431
    for a header line over it or headers over C{totalHeadersSize} or
    C{maxHeaders}, 400 for the rest.

    Between requests, a plain GET or HEAD of a document that arrives whole
    (L{plain_request}) is answered from its prepared bytes
    (L{PreparedAnswers}) in one write, without Twisted's parser and request
    object, which cost more than half of such an answer; any other request
    goes to Twisted's parser, and so does everything after it in the bytes
    read.

    (Twisted's default wraps the channel to offer HTTP/2 when the C{h2}
    package is installed; this service does not offer HTTP/2.)

    @ivar receiving_since: when the first byte of the request arriving now
        came, or C{None} between requests.
    """

    site: ReviewsSite
    receiving_since: float | None = None
    _peer: IAddress | None = None
    _host: IAddress | None = None
    _send_buffer_full = False
    _held = False
    _not_reading = False
    _answered = 0
    _next_turn: IDelayedCall | None = None
    _counted: str | None = None

    def getPeer(self) -> IAddress:
        """
        The client's address, asked of the transport once per connection:
        each request asks for it (and for L{getHost}, a system call).
        """
        if self._peer is None:
            self._peer = super().getPeer()
        return self._peer

    def getHost(self) -> IAddress:
        if self._host is None:
            self._host = super().getHost()
        return self._host

    def connectionMade(self) -> None:
        super().connectionMade()
        self.site.connections.add(self)
        limit = self.site.connection_limit
        host = peer_host(self.getPeer())
        if limit is None or host is None:
            return
        if limit.add(host):
            self._counted = host
        else:
            self._refuse(
                503,
                "too_many_connections",
                f"This client holds {limit.limit} connections already;"
                " use those (HTTP/1.1 keeps them open for more requests).",
            )

    def dataReceived(self, data: bytes) -> None:
        self._answered = 0
        held = self._held  # (not by answers to these very bytes)
        if not held and self._may_answer_prepared():
            data = self._answer_prepared(data)
            if not data:
                self.resetTimeout()  # (as Twisted's parser does for what it reads)
                return
        if held and not self._not_reading:
            # kept unparsed until the release; no more read until then
            self._not_reading = True
            if IPushProducer.providedBy(self.transport):
                self.transport.pauseProducing()
        if self.receiving_since is None:
            self.receiving_since = self.site.reactor.seconds()
        super().dataReceived(data)

    def _may_answer_prepared(self) -> bool:
        """Whether bytes read now begin a request nothing is answering."""
        return (
            self.site.prepared is not None
            and not self.requests
            and not self._send_buffer_full
            and bool(self.persistent)
            and not self.site.draining
            and parser_idle(self)
        )

    def _answer_prepared(self, data: bytes) -> bytes:
        """
        Answer the plain requests for documents at the start of C{data};
        return what is left for Twisted's parser, from the first other
        request on. After L{PIPELINE_BURST} answers, or once the client
        lags, the rest waits as it would after Twisted's answers.
        """
        head_max = min(self.totalHeadersSize, self.MAX_LENGTH)
        while True:
            end = self._send_prepared(data, head_max)
            if end < 0:
                return data
            data = data[end:]
            self._answered += 1
            if not data:
                return data
            if self._send_buffer_full or self._answered >= PIPELINE_BURST:
                self._hold()
                return data

    def _send_prepared(self, data: bytes, head_max: int) -> int:
        """
        Write the prepared answer to the request C{data} starts with, if it
        is plain and for a document; return where the request ends, or -1.
        The request line is read first, so that the others cost little here.
        """
        line_end = data.find(b"\r\n", 0, head_max)
        if line_end < 0 or data.find(b"?", 0, line_end) >= 0:
            return -1  # (no document has a query; a search has)
        request = plain_request_line(data[:line_end])
        if request is None:
            return -1
        method, target = request
        site = self.site
        assert site.prepared is not None
        document = site.prepared.find(target)
        end = data.find(b"\r\n\r\n", line_end, head_max + 4)
        if document is None or end < 0:
            return -1
        started = site.reactor.seconds()
        headers = plain_headers(data[line_end + 2 : end + 2], self.maxHeaders)
        if headers is None:
            return -1
        encoding = headers.get(b"accept-encoding")
        answer = document.answer(
            method == b"HEAD",
            headers.get(b"if-none-match"),
            headers.get(b"if-modified-since"),
            None if encoding is None else encoding[-1],
        )
        if answer is None:
            return -1
        code, rest, body = answer
        self._write_prepared(code, rest, body)
        record = PreparedRequest(method, target, code, len(body), self.getPeer())
        site.answered(record, site.reactor.seconds() - started)
        return end + 4

    def _write_prepared(self, code: int, rest: bytes, body: bytes) -> None:
        """
        Write an answer as Twisted would: while it is written, a transport
        that pauses this channel (its buffer full) leaves it reading, as
        during Twisted's answers, and what follows waits (L{_hold}).
        """
        transport = self.transport
        assert transport is not None
        set_answering(self, True)
        # the body apart: the transport keeps it as it is until it sends
        transport.write(b"".join((_STATUS[code], self.site.date_line(), rest)))
        if body:
            transport.write(body)
        set_answering(self, False)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self._next_turn is not None and self._next_turn.active():
            self._next_turn.cancel()
        super().connectionLost(reason)
        self.site.connections.discard(self)
        if self._counted is not None and self.site.connection_limit is not None:
            self.site.connection_limit.discard(self._counted)

    def close_when_done(self) -> None:
        """Close now if no request is under way, else after its answer."""
        self.persistent = False
        if not self.requests:
            self.loseConnection()

    # --- answering no faster than the client reads ------------------------

    def pauseProducing(self) -> None:
        """The transport holds more than its buffer size: the client lags."""
        self._send_buffer_full = True
        super().pauseProducing()

    def resumeProducing(self) -> None:
        """The transport has sent everything: answer what was held."""
        self._send_buffer_full = False
        super().resumeProducing()
        # (an answer's producer, resumed above, may have filled it again)
        if self._held and self._next_turn is None and not self._send_buffer_full:
            self._release()

    def requestDone(self, request: http.Request) -> None:
        self._answered += 1
        if not self._held and (
            self._send_buffer_full or self._answered >= PIPELINE_BURST
        ):
            # before Twisted's requestDone, which parses what is buffered
            self._hold()
        super().requestDone(request)

    def _hold(self) -> None:
        """
        Parse nothing more until the client has read, or until the next
        turn; and read nothing more once a read comes meanwhile (not at
        once: most clients send nothing before their answer, and pausing
        and resuming the socket costs two system calls).
        """
        self._held = True
        hold_parsing(self)
        if not self._send_buffer_full:
            self._next_turn = self.site.reactor.callLater(0, self._turn)

    def rest(self, seconds: float) -> None:
        """
        Parse and read nothing more for C{seconds} once the answer under way
        is sent: a client over its budget was told to wait that long.
        """
        if self._next_turn is not None and self._next_turn.active():
            self._next_turn.cancel()
        self._held = True
        hold_parsing(self)
        self._next_turn = self.site.reactor.callLater(seconds, self._turn)

    def _turn(self) -> None:
        self._next_turn = None
        if not self._send_buffer_full:
            self._release()

    def _release(self) -> None:
        self._held = False
        self._answered = 0
        if self._not_reading:
            self._not_reading = False
            if IPushProducer.providedBy(self.transport):
                self.transport.resumeProducing()
        resume_parsing(self)

    # --- requests that cannot be read -------------------------------------

    def lineLengthExceeded(self, line: bytes) -> None:
        """A line over L{MAX_LENGTH}: the request line, or a header line."""
        if pending_target(self) is None:
            self._refuse(
                414,
                "uri_too_long",
                f"The request line is over {self.MAX_LENGTH} bytes.",
            )
        else:
            self._refuse(431, "headers_too_large", self._headers_limit())

    def bad_request(self, headers_too_large: bool) -> None:
        if headers_too_large:
            self._refuse(431, "headers_too_large", self._headers_limit())
        else:
            self._refuse(400, "bad_request", "The request is malformed.")

    def _headers_limit(self) -> str:
        return (
            f"The request line and headers are limited to {self.totalHeadersSize}"
            f" bytes, {self.maxHeaders} headers and {self.MAX_LENGTH} bytes a line."
        )

    def _refuse(self, code: int, error: str, message: str) -> None:
        """Answer a request that cannot be read, and close the connection."""
        self.persistent = False
        hold_parsing(self)  # what follows is not read
        if self.transport is not None:
            self.transport.write(closing_error(code, error, message))
            self.loseConnection()


RequestObserver = Callable[[AnsweredRequest, str, float], object]
"""Called with each answered request, its route and its duration."""


_REVIEW_ROUTES = tuple(
    (prefix.encode("ascii"), prefix + "{id}")
    for prefix in (REVIEW_RECORD_PREFIX, REVIEW_PAGE_PREFIX)
)
"""The metrics routes of one review's record and page, by path prefix."""


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

    # Twisted types this as the factory of the channel that may negotiate
    # HTTP/2; any HTTPChannel serves, and this one is HTTP/1.1 only.
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
        observers: Sequence[RequestObserver] = (),
        prepared: PreparedAnswers | None = None,
        budget: ClientBudget | None = None,
        connection_limit: ConnectionCount | None = None,
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
        self.observers: list[RequestObserver] = list(observers)
        self.receive_timeout = receive_timeout
        limits = BODY_LIMITS if body_limits is None else body_limits
        self._body_limits = {path.encode("ascii"): n for path, n in limits.items()}
        self._max_body = max(self._body_limits.values(), default=0)
        self._routes = {path.encode("ascii"): path for path in routes}
        self._since = SINCE_PATH.encode("ascii") + b"/"
        self.prepared = prepared
        self.budget = budget
        self.connection_limit = connection_limit
        self._search = SEARCH_PATH.encode("ascii")
        self._date_second = -1
        self._date_line = b""

    def date_line(self) -> bytes:
        """The value of the C{Date} header now, and its line end: made once a second."""
        now = int(self.reactor.seconds())
        if now != self._date_second:
            self._date_second = now
            self._date_line = datetimeToString(now) + b"\r\n"
        return self._date_line

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

    def computed(self, request: http.Request) -> bool:
        """Whether C{request} is a GET or HEAD of search or since."""
        if request.method not in (b"GET", b"HEAD"):
            return False
        path = request.path
        return path == self._search or self._is_since(path)

    def _is_since(self, path: bytes) -> bool:
        """Whether C{path} is one of C{/api/reviews/since/{date}}."""
        return path.startswith(self._since) and b"/" not in path[len(self._since) :]

    def route(self, path: bytes) -> str:
        """
        The route a path belongs to, for metrics: a known path, the since
        template, a review's record or page template, or C{other}, so that
        clients cannot make up labels.
        """
        route = self._routes.get(path)
        if route is not None:
            return route
        if self._is_since(path):
            return SINCE_PATH + "/{date}"
        for prefix, template in _REVIEW_ROUTES:
            if path.startswith(prefix) and b"/" not in path[len(prefix) :]:
                return template
        return "other"

    def log(self, request: http.Request) -> None:
        """Twisted calls this as each request finishes: tell the observers."""
        if self.observers:
            duration = self.reactor.seconds() - getattr(request, "started", 0.0)
            self.answered(request, duration)

    def answered(self, request: AnsweredRequest, duration: float) -> None:
        """Tell the observers of an answered request."""
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
                cast(ITCPTransport, channel.transport).abortConnection()
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
    observers: Sequence[RequestObserver] = (),
    budget: ClientBudget | None = None,
    connection_limit: ConnectionCount | None = None,
) -> ReviewsSite:
    """
    The whole HTTP face: documents, the Klein routes, and C{resources}, other
    resources by exact path (C{/mcp}, the hub, C{/healthz}, C{/metrics}).
    C{budget} bounds each client's search and since answers a second,
    C{connection_limit} its open connections (neither, when C{None}).
    """
    if reactor is None:
        from twisted.internet import reactor
    resources = resources or {}
    front = Front(source, ReviewsAPI(source, reactor), resources)
    return ReviewsSite(
        front,
        reactor,
        routes=[*source.snapshot.documents, *resources, SEARCH_PATH],
        body_limits=body_limits,
        idle_timeout=idle_timeout,
        receive_timeout=receive_timeout,
        observers=observers,
        prepared=front.prepared,
        budget=budget,
        connection_limit=connection_limit,
    )


def make_side_site(
    resources: dict[str, IResource],
    reactor: Any,
    *,
    idle_timeout: float = IDLE_TIMEOUT,
    receive_timeout: float = RECEIVE_TIMEOUT,
    observers: Sequence[RequestObserver] = (),
) -> ReviewsSite:
    """A site answering only C{resources} (C{/metrics} and C{/healthz})."""
    return ReviewsSite(
        PathMap(resources),
        reactor,
        routes=list(resources),
        body_limits={},
        idle_timeout=idle_timeout,
        receive_timeout=receive_timeout,
        observers=observers,
    )
