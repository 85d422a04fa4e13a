"""
Large bodies written a chunk at a time: the readers of a document share
its bytes, and each connection holds at most a chunk of them, whatever its
reader's pace.

Written whole, a body is copied once per connection: Twisted's transport
joins what was written since it last sent (the headers, then the body)
into one new bytes object before sending it. Sixteen readers of the 50 MB
C{/reviews.json} held 800 MB of copies, and each slow reader kept its copy
for as long as it took to read it. The transport takes bytes only (a
memoryview is refused), so a chunk is a copy too, but one of bounded size,
and it is written only when the transport has sent everything before it,
so that it is sent as it is, without being joined again.
"""

from __future__ import annotations

from typing import Any, cast
from weakref import WeakKeyDictionary

from twisted.internet.interfaces import IDelayedCall, IPushProducer, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.server import NOT_DONE_YET, Request
from zope.interface import implementer

from reviewsd.memory import Trimmer

log = Logger()

LARGE_BODY = 1024 * 1024
"""Bodies this large are written a chunk at a time; smaller ones at once."""

CHUNK = 256 * 1024
"""
The bytes written at a time: two of the transport's sends (128 KiB each),
so that a chunk is sent without a remainder to join with the next.
"""

STALL_TIMEOUT = 60.0
"""
Seconds a reader may take nothing before its connection is closed, unless
its site has its own idle timeout: the idle timeout does not run while an
answer is being written.
"""


@implementer(IPushProducer)
class _Chunks:
    """
    Writes C{body} to C{request} a chunk at a time, the next one when the
    transport has sent the last (it pauses its producer, the channel, past
    its buffer size, and resumes it when its buffer is empty).
    """

    def __init__(
        self,
        request: Request,
        body: bytes,
        chunk: int,
        clock: IReactorTime,
        trimmer: Trimmer,
        stall_timeout: float,
    ) -> None:
        self._request = request
        self._body: bytes | None = body
        self._sent = 0
        self._chunk = chunk
        self._clock = clock
        self._trimmer = trimmer
        self._stall_timeout = stall_timeout
        self._paused = False
        self._progress = 0.0
        self._watch: IDelayedCall | None = None

    def start(self) -> None:
        self._trimmer.began()
        self._request.registerProducer(self, True)
        self._request.notifyFinish().addErrback(self._lost)
        self.resumeProducing()

    def resumeProducing(self) -> None:
        self._paused = False
        self._progress = self._clock.seconds()
        request, chunk = self._request, self._chunk
        while not self._paused:
            body = self._body
            if body is None:
                return  # stopped meanwhile
            start = self._sent
            self._sent = end = start + chunk
            if end >= len(body):
                request.write(body[start:])
                self._end()
                request.unregisterProducer()
                request.finish()
                return
            request.write(body[start:end])
        if self._watch is None:
            self._watch = self._clock.callLater(self._stall_timeout, self._check)

    def pauseProducing(self) -> None:
        self._paused = True

    def stopProducing(self) -> None:
        """The connection is gone: drop the body, and the chunk goes too."""
        self._end()

    def _lost(self, reason: Failure) -> None:
        self._end()

    def _end(self) -> None:
        if self._body is None:
            return
        self._body = None
        if self._watch is not None:
            if self._watch.active():
                self._watch.cancel()
            self._watch = None
        self._trimmer.ended()

    def _check(self) -> None:
        """Close the connection if its reader took nothing for the timeout."""
        self._watch = None
        if self._body is None:
            return
        waited = self._clock.seconds() - self._progress
        if waited < self._stall_timeout:
            self._watch = self._clock.callLater(
                self._stall_timeout - waited, self._check
            )
            return
        channel = self._request.channel
        transport = getattr(channel, "transport", None)
        log.info(
            "Closed the connection of {client}: it took nothing of {path}"
            " for {timeout} s",
            client=getattr(self._request.getClientAddress(), "host", "-"),
            path=self._request.path.decode("latin-1"),
            timeout=self._stall_timeout,
        )
        self._end()
        if transport is not None:
            transport.abortConnection()


_trimmers: WeakKeyDictionary[IReactorTime, Trimmer] = WeakKeyDictionary()


def trimmer_for(clock: IReactorTime) -> Trimmer:
    """
    The trimmer of the transfers timed by C{clock}: one for the process's
    reactor, whose memory it gives back.
    """
    trimmer = _trimmers.get(clock)
    if trimmer is None:
        trimmer = _trimmers[clock] = Trimmer(clock)
    return trimmer


def _clock(site: Any) -> IReactorTime:
    """The site's reactor (any L{twisted.web.server.Site} has one)."""
    clock = getattr(site, "reactor", None)
    if clock is None:
        from twisted.internet import reactor

        clock = reactor
    return cast(IReactorTime, clock)


def stream(
    request: Request,
    body: bytes,
    *,
    chunk: int = CHUNK,
    clock: IReactorTime | None = None,
) -> int:
    """
    Write C{body} as the whole answer to C{request}, whose headers are all
    set, a chunk at a time; the request finishes once the last is written.
    C{clock} defaults to the request's site's reactor.
    """
    site = getattr(request.channel, "site", None)
    if clock is None:
        clock = _clock(site)
    timeout = getattr(site, "timeOut", None) or STALL_TIMEOUT
    _Chunks(request, body, chunk, clock, trimmer_for(clock), timeout).start()
    return NOT_DONE_YET
