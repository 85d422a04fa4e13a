"""
Request limits and timeouts: bodies capped per route, bounded headers,
idle connections closed and slow clients dropped, pipelined requests
answered no faster than the client reads.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from twisted.internet import defer, reactor, task
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest

from reviewsd.data.links import HUB_PATH
from tests.support.daemon import DaemonTestCase, free_port
from tests.support.site import (
    INITIALIZE,
    Answer,
    Connection,
    LaggingReader,
    SiteTestCase,
)


class LimitTests(SiteTestCase):
    def test_bodies_capped_per_route(self) -> None:
        connection = Connection(self.site)
        answer = self.mcp_post(connection, b" " * (1024 * 1024 + 1))
        self.assertEqual(answer.code, 413)
        answer = self.mcp_post(connection, INITIALIZE + b" " * (512 * 1024))
        self.assertEqual(answer.code, 200)
        form = "Content-Type: application/x-www-form-urlencoded"
        self.assertEqual(self.site.body_limit(b"/api/websub/hub?x=1"), 64 * 1024)
        self.assertEqual(self.site.body_limit(b"http://h.example/mcp"), 1024 * 1024)
        self.assertEqual(self.site.body_limit(b"/reviews.json"), 0)
        answer = connection.request("POST", HUB_PATH, form, body=b"a" * 70_000)
        self.assertEqual(answer.body, b"hub")  # the stand-in answers...
        self.assertTrue(self.last_request().too_large)  # ...but the hub's is 413

    def last_request(self) -> Any:
        return self.site_requests[-1][0]

    def last_body(self) -> bytes | None:
        return self.site_requests[-1][1]

    def setUp(self) -> None:
        super().setUp()
        self.site_requests: list[Any] = []
        self.site.observers.append(self.keep)

    def keep(self, request: Any, route: str, duration: float) -> None:
        kept = None
        if request.content is not None:
            request.content.seek(0)
            kept = request.content.read()
        self.site_requests.append((request, kept))

    def test_get_only_routes_keep_no_body(self) -> None:
        connection = Connection(self.site)
        answer = connection.request("GET", "/reviews.json", body=b"x" * 5000)
        self.assertEqual(answer.code, 200)
        request = self.last_request()
        self.assertFalse(request.too_large)
        self.assertEqual(self.last_body(), b"")
        answer = connection.request("POST", "/reviews.json", body=b"{}")
        self.assertEqual(answer.code, 405)

    def test_chunked_body_over_the_limit(self) -> None:
        connection = Connection(self.site)
        chunk = b"%x\r\n%s\r\n" % (40_000, b"a" * 40_000)
        connection.send(
            b"POST /api/websub/hub HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 2 + b"0\r\n\r\n"
        )
        self.assertTrue(self.last_request().too_large)
        self.assertEqual(self.last_body(), b"")

    def test_headers_are_bounded(self) -> None:
        """
        16 KiB of request line and headers; one line of 16 KiB at most:
        beyond, a JSON 431 (414 for the request line), and the connection
        closes.
        """
        many = [f"X-Header-{n}: {'a' * 100}" for n in range(200)]
        connection = Connection(self.site)
        answer = connection.request("GET", "/reviews.json", *many)
        self.assert_refused(answer, 431, "headers_too_large")
        self.assertFalse(connection.transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        for request in (
            b"GET /reviews.json HTTP/1.1\r\nX-Big: " + b"a" * 20_000,
            b"GET /reviews.json HTTP/1.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n",
        ):
            connection = Connection(self.site)
            connection.send(request)
            answer = Answer(connection.transport.value())
            self.assert_refused(answer, 431, "headers_too_large")
            self.assertFalse(connection.transport.connected)
            self.assertEqual(len(self.site.in_flight), 0)
            self.assertEqual(len(self.site.connections), 0)

    def test_request_line_is_bounded(self) -> None:
        for request in (
            b"GET /" + b"a" * 20_000,
            b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        ):
            connection = Connection(self.site)
            connection.send(request)
            answer = Answer(connection.transport.value())
            self.assert_refused(answer, 414, "uri_too_long")
            self.assertFalse(connection.transport.connected)
            self.assertEqual(len(self.site.in_flight), 0)
            self.assertEqual(len(self.site.connections), 0)

    def test_malformed_requests_are_json(self) -> None:
        for request in (
            b"GET /reviews.json HTTP/1.1\r\nNo colon here\r\n\r\n",
            b"NONSENSE\r\n\r\n",
            b"GET /reviews.json HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        ):
            connection = Connection(self.site)
            connection.send(request)
            answer = Answer(connection.transport.value())
            self.assert_refused(answer, 400, "bad_request")
            self.assertFalse(connection.transport.connected)

    def assert_refused(self, answer: Answer, code: int, error: str) -> None:
        self.assertEqual(answer.code, code)
        self.assertEqual(answer.headers["content-type"], "application/json")
        self.assertEqual(answer.headers["connection"], "close")
        self.assertEqual(int(answer.headers["content-length"]), len(answer.body))
        self.assertEqual(answer.json["error"], error)
        self.assertIsInstance(answer.json["message"], str)

    def test_idle_timeout(self) -> None:
        self.assertEqual(self.site.timeOut, 60)
        connection = Connection(self.site)
        self.clock.advance(59)
        self.assertTrue(connection.transport.connected)
        self.clock.advance(2)
        self.assertFalse(connection.transport.connected)

    def test_slow_clients_are_dropped(self) -> None:
        trickling = Connection(self.site, "198.51.100.1")
        idle = Connection(self.site, "198.51.100.2")
        fast = Connection(self.site, "198.51.100.3")
        for second in range(29):
            trickling.send(b"GET /reviews.json HTTP/1.1\r\n"[second : second + 1])
            self.clock.advance(1)
            self.assertEqual(self.site.drop_slow_clients(), 0)
        fast.request("GET", "/reviews.json")
        self.clock.advance(2)
        self.assertEqual(self.site.drop_slow_clients(), 1)
        self.assertFalse(trickling.transport.connected)
        self.assertTrue(idle.transport.connected)
        self.assertTrue(fast.transport.connected)
        [event] = [
            e for e in self.events if "took more than" in e.get("log_format", "")
        ]
        self.assertEqual(event["client"], "198.51.100.1")


GET = b"GET /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n"


class PipeliningTests(SiteTestCase):
    """Pipelined requests are answered no faster than the client reads."""

    def connect(self) -> tuple[LaggingReader, Any]:
        transport = LaggingReader(1024)
        channel = self.site.buildProtocol(None)
        transport.protocol = channel
        channel.makeConnection(transport)
        return transport, channel

    def test_a_client_that_does_not_read(self) -> None:
        """
        A thousand pipelined requests: one answered, the rest waiting (not
        answered into the transport's buffer) until the client reads; once
        more arrives meanwhile, the socket is not read either.
        """
        transport, channel = self.connect()
        channel.dataReceived(GET * 1000)
        self.clock.advance(0)
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 1)
        self.assertEqual(transport.producerState, "producing")
        channel.dataReceived(GET * 10)
        self.assertEqual(transport.producerState, "paused")
        self.clock.advance(0)
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 1)
        answers = 0
        for _ in range(1010):
            answer = transport.read()
            self.assertEqual(answer.count(b"HTTP/1.1 200 OK"), 1)
            answers += 1
        self.assertEqual(transport.read(), b"")
        self.assertEqual(answers, 1010)
        self.assertEqual(transport.producerState, "producing")
        self.assertTrue(transport.connected)
        # and the connection goes on as before
        channel.dataReceived(GET)
        self.assertEqual(transport.read().count(b"HTTP/1.1 200 OK"), 1)

    def test_small_answers_take_turns(self) -> None:
        """
        Pipelined answers that fit the buffer still come a few at a time,
        one burst per reactor iteration, so that other clients get theirs.
        """
        transport, channel = self.connect()
        transport.limit = 10**9
        channel.dataReceived(b"OPTIONS /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n" * 40)
        counts = [transport.value().count(b"HTTP/1.1 204")]
        while turns := self.due():
            # one iteration of a real reactor: what it calls schedules the next
            [turn] = turns
            self.clock.calls.remove(turn)
            turn.func(*turn.args, **turn.kw)
            counts.append(transport.value().count(b"HTTP/1.1 204"))
        self.assertEqual(counts, [16, 32, 40])

    def due(self) -> list[Any]:
        """The calls the reactor would make at its next iteration."""
        now = self.clock.seconds()
        return [c for c in self.clock.getDelayedCalls() if c.getTime() <= now]

    def test_closing_while_waiting(self) -> None:
        for request in (GET, b"OPTIONS /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n"):
            transport, channel = self.connect()
            channel.dataReceived(request * 20)
            transport.loseConnection()
            self.assertEqual(len(self.site.connections), 0)
            self.assertEqual(len(self.site.in_flight), 0)
            self.assertEqual(self.due(), [])


def _rss(pid: int) -> float:
    """A process's resident memory, in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _exchange(port: int, data: bytes) -> bytes:
    """Send C{data} on a new connection; all that comes back until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
    return received


class DaemonLimitTests(DaemonTestCase):
    """The limits of the real daemon, over real sockets."""

    @defer.inlineCallbacks
    def start_daemon(self) -> Any:
        self.port = free_port()
        yield self.start(
            f"http://127.0.0.1:{self.port}",
            "--listen",
            f"tcp:{self.port}:interface=127.0.0.1",
        )

    @defer.inlineCallbacks
    def test_clients_that_pipeline_and_never_read(self) -> Any:
        """
        Five connections each send a thousand pipelined GET /reviews.json
        and read nothing: the daemon's memory hardly grows (it grew by
        110 MB a connection when every answer went to the transport's
        buffer), and a normal client is answered meanwhile.
        """
        if not os.path.exists("/proc/self/status"):
            raise SkipTest("needs /proc to read the daemon's memory")
        yield self.start_daemon()
        pid = self.daemon_pid()
        idle = _rss(pid)
        request = b"GET /reviews.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        peak = idle
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", self.port))
            self.addCleanup(s.close)
            s.setblocking(False)
            s.send(request * 1000)  # 47 kB: the socket takes it at once
        for _ in range(10):
            yield task.deferLater(reactor, 0.2, lambda: None)
            peak = max(peak, _rss(pid))
        response = yield self.client.get(self.base + "/reviews.json")
        self.assertEqual(response.code, 200)
        yield response.content()
        self.assertLess(peak - idle, 40, f"RSS {idle:.0f} MiB -> {peak:.0f} MiB")

    def daemon_pid(self) -> int:
        transport = self.daemon.transport
        assert transport is not None
        return int(transport.pid)

    @defer.inlineCallbacks
    def test_answers_on_the_wire(self) -> Any:
        """
        What a raw client gets: JSON 414 and 431 for lines over 16 KiB, a
        400 for HTTP/1.1 without Host, 204 for preflights of every GET
        route, and HEAD /metrics as GET without its body.
        """
        yield self.start_daemon()
        port = self.port
        for data, code, error in (
            (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n", 414, "uri_too_long"),
            (
                b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n",
                431,
                "headers_too_large",
            ),
            (
                b"GET /reviews.json HTTP/1.1\r\nConnection: close\r\n\r\n",
                400,
                "bad_request",
            ),
        ):
            answer = Answer((yield deferToThread(_exchange, port, data)))
            self.assertEqual((answer.code, answer.json["error"]), (code, error))
            self.assertEqual(answer.headers["content-type"], "application/json")
        for path in (
            "/reviews.json",
            "/api/reviews/search",
            "/api/reviews/since/2025-01-01",
            "/healthz",
        ):
            data = f"OPTIONS {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            answer = Answer((yield deferToThread(_exchange, port, data.encode())))
            self.assertEqual(answer.code, 204, path)
            self.assertEqual(answer.headers["access-control-allow-origin"], "*", path)
        head = yield self.client.head(self.base + "/metrics")
        self.assertEqual((head.code, (yield head.content())), (200, b""))
