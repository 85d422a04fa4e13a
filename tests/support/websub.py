"""
A WebSub subscriber serving callbacks on any path: it answers verification
and acknowledges deliveries as it is told, and records what it received.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from attrs import frozen
from twisted.internet import defer
from twisted.web.resource import Resource
from twisted.web.server import Request


@frozen
class Seen:
    """One request the subscriber received."""

    method: bytes
    path: str
    query: dict[str, list[str]]
    headers: dict[bytes, list[bytes]]
    body: bytes

    @property
    def host(self) -> bytes:
        return self.headers.get(b"host", [b""])[0]

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class Subscriber(Resource):
    """
    A WebSub subscriber serving any number of callback paths: it answers
    verification with the challenge (or as told, per path) and
    acknowledges deliveries (with the status it is told, per path).
    """

    isLeaf = True

    def __init__(self, record: bool = True) -> None:
        super().__init__()
        self.seen: list[Seen] = []
        self.record = record
        self.verify_answer: dict[str, Callable[[str], tuple[int, bytes]]] = {}
        self.delivery_status: dict[str, int] = {}
        self.deliveries = 0
        self.verifications = 0
        self._waiting: list[tuple[Callable[[], bool], defer.Deferred[None]]] = []

    def render(self, request: Request) -> bytes:
        path = request.path.decode()
        query = parse_qs(urlsplit(request.uri.decode()).query, keep_blank_values=True)
        body = request.content.read()
        if self.record:
            self.seen.append(
                Seen(
                    request.method,
                    path,
                    query,
                    {
                        name.lower(): values
                        for name, values in request.requestHeaders.getAllRawHeaders()
                    },
                    body,
                )
            )
        if request.method == b"GET":
            self.verifications += 1
            challenge = query.get("hub.challenge", [""])[0]
            answer = self.verify_answer.get(path)
            code, reply = (
                (200, challenge.encode()) if answer is None else answer(challenge)
            )
            request.setResponseCode(code)
        else:
            self.deliveries += 1
            request.setResponseCode(self.delivery_status.get(path, 202))
            reply = b""
        self._check()
        return reply

    def _check(self) -> None:
        still = []
        for predicate, d in self._waiting:
            if predicate():
                d.callback(None)
            else:
                still.append((predicate, d))
        self._waiting = still

    def wait_for(self, predicate: Callable[[], bool]) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        self._waiting.append((predicate, d))
        self._check()
        return d

    def requests(self, method: bytes, path: str | None = None) -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.method == method and (path is None or s.path == path)
        ]
