"""
A client's connection to a site, driven by hand on a memory reactor, and
a test case with the site assembled as the daemon assembles it (MCP,
a stand-in hub, metrics watching all of it).
"""

from __future__ import annotations

import json
from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.testing import (
    MemoryReactorClock,
    StringTransportWithDisconnection,
)
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.resource import Resource

from reviewsd.data.links import HUB_PATH, MCP_PATH
from reviewsd.data.loading import DEMO_DATA
from reviewsd.mcp.tools import Tools
from reviewsd.mcp.transport import MCPResource, Sessions
from reviewsd.ops.metrics import Metrics
from reviewsd.web.site import ReviewsSite, make_site
from tests.support import BASE, Holder, snapshot_of

DEMO = snapshot_of(DEMO_DATA, BASE)
ACCEPT = "application/json, text/event-stream"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "ops-test", "version": "1"},
        },
    }
).encode()


class Answer:
    def __init__(self, raw: bytes) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        status, *lines = head.decode("latin-1").split("\r\n")
        self.code = int(status.split()[1])
        self.headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _Transport(StringTransportWithDisconnection):
    """Lenient as real transports are: the producer may go twice."""

    def unregisterProducer(self) -> None:
        self.producer = None


class LaggingReader(StringTransportWithDisconnection):
    """
    A client that reads only when told (L{read}): each write that leaves
    over C{limit} bytes unsent pauses the producer, and once everything is
    read it is resumed, as Twisted's transports do with their buffer size.
    It keeps the size of every write and the most ever left unsent.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.writes: list[int] = []
        self.most_unsent = 0
        self._full = False

    def write(self, data: bytes) -> None:
        super().write(data)
        self.writes.append(len(data))
        unsent = len(self.value())
        self.most_unsent = max(self.most_unsent, unsent)
        if unsent > self.limit and self.producer is not None:
            self._full = True
            self.producer.pauseProducing()

    def writeSequence(self, data: Any) -> None:
        self.write(b"".join(data))

    def read(self) -> bytes:
        data = self.value()
        self.clear()
        if self._full and self.producer is not None:
            self._full = False
            self.producer.resumeProducing()
        return data

    def read_all(self) -> bytes:
        received = b""
        while data := self.read():
            received += data
        return received

    def unregisterProducer(self) -> None:
        self.producer = None


class Connection:
    """A client's connection to C{site}, driven by hand."""

    def __init__(self, site: ReviewsSite, peer: str = "203.0.113.9") -> None:
        self.transport = _Transport(peerAddress=IPv4Address("TCP", peer, 40000))
        self.protocol = site.buildProtocol(self.transport.getPeer())
        self.transport.protocol = self.protocol
        self.protocol.makeConnection(self.transport)

    def send(self, data: bytes) -> None:
        self.protocol.dataReceived(data)

    def request(
        self, method: str, path: str, *headers: str, body: bytes = b""
    ) -> Answer:
        lines = [f"{method} {path} HTTP/1.1", "Host: reviews.example.com", *headers]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        self.transport.clear()
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return Answer(self.transport.value())


class SiteTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = MemoryReactorClock()
        self.metrics = Metrics(self.clock)
        self.holder = Holder(DEMO)
        self.sessions = Sessions(self.clock)
        self.mcp = MCPResource(
            self.metrics.counting_tools(Tools(self.holder)), self.sessions, BASE
        )
        self.hub = Resource()
        self.hub.isLeaf = True
        self.hub.render = lambda request: b"hub"  # type: ignore[method-assign]
        self.site = make_site(
            self.holder, self.clock, {MCP_PATH: self.mcp, HUB_PATH: self.hub}
        )
        self.site.observers.append(self.metrics.observe_request)
        self.metrics.watch(data=self.holder, sessions=self.sessions, sites=[self.site])
        self.events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(self.events.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)

    def mcp_post(self, connection: Connection, body: bytes, *headers: str) -> Answer:
        return connection.request(
            "POST",
            "/mcp",
            "Content-Type: application/json",
            f"Accept: {ACCEPT}",
            *headers,
            body=body,
        )
