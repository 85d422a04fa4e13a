"""
Answers written from prepared bytes, without Twisted's parser and request
object: the same bytes as Twisted's answer to the same request (but the
Date), for plain GET and HEAD of documents only, every other request left
to Twisted, pipelined ones in order and no faster than the client reads.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
from twisted.internet.address import IPv4Address
from twisted.web.http import datetimeToString

from reviewsd.data.links import HOME_PATH
from reviewsd.data.snapshot import Document
from reviewsd.web.site import PIPELINE_BURST, plain_request
from reviewsd.web.streaming import LARGE_BODY
from tests.support.site import DEMO, SiteTestCase, _Transport

_DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


class _Wire:
    """A connection to the site, bytes in and out, counting request objects."""

    def __init__(self, test: PreparedTests) -> None:
        self.transport = _Transport(peerAddress=IPv4Address("TCP", "203.0.113.9", 1))
        self.channel = test.site.buildProtocol(self.transport.getPeer())
        self.transport.protocol = self.channel
        self.channel.makeConnection(self.transport)

    def exchange(self, data: bytes, pieces: int = 1) -> bytes:
        """Send C{data} (in C{pieces}, the first cut inside the first line)."""
        self.transport.clear()
        if pieces == 1:
            self.channel.dataReceived(data)
        else:
            self.channel.dataReceived(data[:3])
            self.channel.dataReceived(data[3:])
        return self.transport.value()


class PreparedTests(SiteTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.made: list[Any] = []
        make = self.site.requestFactory

        def counting(*args: Any, **kwargs: Any) -> Any:
            request = make(*args, **kwargs)
            self.made.append(request)
            return request

        self.site.requestFactory = counting

    def both_ways(self, data: bytes) -> tuple[bytes, bytes, int]:
        """
        The answer to C{data} sent whole, and sent in two pieces (which
        Twisted's parser reads, with a request object each); and how many
        request objects the first made.
        """
        before = len(self.made)
        whole = _Wire(self).exchange(data)
        made = len(self.made) - before
        pieces = _Wire(self).exchange(data, pieces=2)
        self.assertEqual(len(self.made) - before - made, data.count(b" HTTP/1."))
        return whole, pieces, made

    def assertSameAnswer(self, data: bytes, prepared: bool) -> bytes:
        whole, pieces, made = self.both_ways(data)
        self.assertTrue(whole.startswith(b"HTTP/1."), whole)
        self.assertEqual(_undated(whole), _undated(pieces))
        self.assertEqual(made, 0 if prepared else data.count(b" HTTP/1."), data)
        return whole


def _undated(answer: bytes) -> bytes:
    return _DATE.sub(b"\r\nDate: -\r\n", answer)


def _get(path: str, *headers: str, method: str = "GET") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: reviews.example.com", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


ENCODINGS = ((), ("Accept-Encoding: gzip, br",), ("Accept-Encoding: gzip;q=0",))


class SameBytesTests(PreparedTests):
    def test_every_document_every_way(self) -> None:
        paths = [p for p in DEMO.documents if p != HOME_PATH]
        self.assertGreater(len(paths), 5)
        for path in paths:
            document = DEMO.documents[path]
            etags = [document.identity.etag, b'"other"', b"*"]
            if document.gzipped is not None:
                etags.append(document.gzipped.etag)
            for method in ("GET", "HEAD"):
                for encoding in (
                    (),
                    ("Accept-Encoding: gzip, br",),
                    ("Accept-Encoding: gzip;q=0",),
                ):
                    for condition in (
                        (),
                        *((f"If-None-Match: {etag.decode()}",) for etag in etags),
                        (f'If-None-Match: W/{document.identity.etag.decode()}, "x"',),
                        (f"If-Modified-Since: {document.http_date.decode()}",),
                        ("If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT",),
                        ("If-Modified-Since: yesterday",),
                    ):
                        data = _get(path, *encoding, *condition, method=method)
                        self.assertSameAnswer(data, prepared=True)

    def test_the_date(self) -> None:
        self.clock.advance(1_795_000_000.7)
        answer = _Wire(self).exchange(_get("/reviews.json"))
        self.assertIn(b"\r\nDate: " + datetimeToString(1_795_000_000) + b"\r\n", answer)

    def test_odd_but_plain_headers(self) -> None:
        for headers in (
            ("X-Anything: \x01odd", "accept-encoding:gzip", "HOST: other"),
            ("If-None-Match:", "Cookie: a=b; c"),
            ("Accept-Encoding: identity", "Accept-Encoding: gzip"),
            ("Connection: keep-alive",),  # (what browsers send)
            ("Connection: Keep-Alive", "Connection: close"),  # Twisted reads one
            ("Connection: close,keep-alive",),  # ...split at spaces
        ):
            self.assertSameAnswer(_get("/reviews.json", *headers), prepared=True)


class LeftToTwistedTests(PreparedTests):
    """Anything but a plain GET or HEAD of a document goes to Twisted."""

    def test_other_requests(self) -> None:
        for data in (
            b"GET /reviews.json HTTP/1.0\r\nHost: x\r\n\r\n",
            _get("/reviews.json", "Connection: close"),
            _get("/reviews.json", "Connection: keep-alive, Close"),
            _get("/reviews.json", "Expect: 100-continue"),
            _get("/reviews.json", "Content-Length: 0"),
            _get("/reviews.json?x=1"),
            _get("/reviews.json", method="OPTIONS"),
            _get("/reviews.json", method="get"),
            _get("/reviews.json", method="POST"),
            _get(HOME_PATH),
            _get(HOME_PATH, "Accept: application/json"),
            _get("/healthz"),
            _get("/metrics"),
            _get("/nowhere"),
            _get("/reviews%2Ejson"),
            _get("/api/reviews/search?rating=5"),
            b"GET /reviews.json HTTP/1.1\r\n\r\n",  # no Host: 400
            b"GET /reviews.json HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n",
            b"GET /reviews.json HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n",
            b"GET /reviews.json HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n",
            b"GET  /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n",
            _get("/reviews.json", *(f"X-{n}: y" for n in range(600))),
            _get("/reviews.json", "X-Long: " + "a" * 20_000),
        ):
            whole, pieces, made = self.both_ways(data)
            self.assertEqual(made, 1, data[:80])
            if b"X-Long" not in data:  # (cut at a different place in two pieces)
                self.assertEqual(_undated(whole), _undated(pieces), data[:80])

    def test_plain_request(self) -> None:
        self.assertEqual(
            plain_request(b'HEAD /a HTTP/1.1\r\nHost: x\r\nIf-None-Match:  "e" ', 10),
            (b"HEAD", b"/a", {b"host": [b"x"], b"if-none-match": [b'"e"']}),
        )
        self.assertIsNone(plain_request(b"GET /a HTTP/1.1\r\nHost: x\r\nA: 1", 1))
        self.assertIsNone(plain_request(b"GET /a HTTP/1.1\r\nHost: x\x00", 10))

    def test_while_stopping(self) -> None:
        """Stopping, every answer closes its connection: Twisted's way."""
        self.site.draining = True
        wire = _Wire(self)
        answer = wire.exchange(_get("/reviews.json"))
        self.assertIn(b"\r\nConnection: close\r\n", answer)
        self.assertEqual(len(self.made), 1)
        self.assertFalse(wire.transport.connected)

    def test_large_bodies(self) -> None:
        """Written by the request, which streams them, but for HEAD and 304."""
        large = Document.build(b"x" * (LARGE_BODY + 1), b"text/plain", 0)
        large = attrs.evolve(large, gzipped=None)
        self.holder.snapshot = attrs.evolve(
            DEMO, documents={**DEMO.documents, "/large": large}
        )
        wire = _Wire(self)
        wire.exchange(_get("/large", "If-None-Match: " + large.identity.etag.decode()))
        wire.exchange(_get("/large", method="HEAD"))
        self.assertEqual(len(self.made), 0)
        wire.exchange(_get("/large"))
        self.assertEqual(len(self.made), 1)

    def test_a_new_snapshot(self) -> None:
        wire = _Wire(self)
        wire.exchange(_get("/reviews.json"))
        changed = Document.build(b'{"changed": true}', b"application/json", 1)
        self.holder.snapshot = attrs.evolve(
            DEMO, documents={**DEMO.documents, "/reviews.json": changed}
        )
        answer = wire.exchange(_get("/reviews.json"))
        self.assertTrue(answer.endswith(b'\r\n\r\n{"changed": true}'), answer[-200:])
        self.assertEqual(len(self.made), 0)


class PipelinedTests(PreparedTests):
    def test_in_order_with_twisted_ones(self) -> None:
        """After the first request for Twisted, Twisted reads the rest."""
        data = (
            _get("/reviews.json", method="HEAD")
            + _get("/api/feed.json", "If-None-Match: *")
            + _get("/nowhere")
            + _get("/reviews.json", method="HEAD")
        )
        whole, pieces, made = self.both_ways(data)
        self.assertEqual(made, 2)
        statuses = re.findall(rb"HTTP/1.1 (\d+) ", whole)
        self.assertEqual(statuses, [b"200", b"304", b"404", b"200"])
        self.assertEqual(_undated(whole), _undated(pieces))

    def test_bursts(self) -> None:
        """A burst at a time, as Twisted's answers: then the next turn."""
        wire = _Wire(self)
        wire.transport.clear()
        wire.channel.dataReceived(_get("/reviews.json", method="HEAD") * 40)
        counts = [wire.transport.value().count(b"HTTP/1.1 200")]
        while calls := [
            c
            for c in self.clock.getDelayedCalls()
            if c.getTime() <= self.clock.seconds()
        ]:
            for call in calls:
                self.clock.calls.remove(call)
                call.func(*call.args, **call.kw)
            counts.append(wire.transport.value().count(b"HTTP/1.1 200"))
        self.assertEqual(counts[0], PIPELINE_BURST)
        self.assertEqual(counts[-1], 40)

    def due(self) -> list[Any]:
        """The calls the reactor would make at its next iteration."""
        now = self.clock.seconds()
        return [c for c in self.clock.getDelayedCalls() if c.getTime() <= now]


class CountedTests(PreparedTests):
    def test_metrics_and_observers(self) -> None:
        seen: list[tuple[bytes, bytes, int, int, str]] = []
        self.site.observers.append(
            lambda request, route, duration: seen.append(
                (request.method, request.uri, request.code, request.sentLength, route)
            )
        )
        wire = _Wire(self)
        answer = wire.exchange(_get("/reviews.json"))
        wire.exchange(_get("/reviews.json", "If-None-Match: *"))
        wire.exchange(_get("/reviews.json", method="HEAD"))
        self.assertEqual(len(self.made), 0)
        body = answer.partition(b"\r\n\r\n")[2]
        self.assertEqual(
            seen,
            [
                (b"GET", b"/reviews.json", 200, len(body), "/reviews.json"),
                (b"GET", b"/reviews.json", 304, 0, "/reviews.json"),
                (b"HEAD", b"/reviews.json", 200, 0, "/reviews.json"),
            ],
        )
        for code, count in (("200", 2.0), ("304", 1.0)):
            self.assertEqual(
                self.sample(
                    "reviewsd_http_requests_total", route="/reviews.json", status=code
                ),
                count,
            )
