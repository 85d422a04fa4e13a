"""
Operations: sd_notify on a real datagram socket, JSON log lines and the
access log, metrics and health, request limits and timeouts, draining on
stop, and the real daemon stopped by SIGTERM with a request in flight.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer, reactor, task
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.error import CannotListenError
from twisted.internet.task import Clock
from twisted.internet.testing import (
    MemoryReactorClock,
    StringTransportWithDisconnection,
)
from twisted.internet.threads import deferToThread
from twisted.logger import (
    Logger,
    LogLevel,
    formatEvent,
    globalLogPublisher,
)
from twisted.trial.unittest import SkipTest, SynchronousTestCase, TestCase
from twisted.web.resource import Resource

from reviewsd.data.links import HUB_PATH, MCP_PATH
from reviewsd.data.loading import DEMO_DATA
from reviewsd.logs import (
    JSONLinesObserver,
    event_as_json,
    log_access,
    loggable_uri,
    observer_for,
)
from reviewsd.mcp.tools import Tools
from reviewsd.mcp.transport import MCPResource, Sessions
from reviewsd.ops.health import HealthResource, data_status
from reviewsd.ops.lifecycle import InOrder, Listener
from reviewsd.ops.metrics import CountingClient, Metrics
from reviewsd.ops.systemd import Notifier, notify
from reviewsd.publishing.service import ReviewsData
from reviewsd.web.http import InFlight, ReviewsSite, make_side_site, make_site
from reviewsd.websub.records import PendingVerification, Subscription
from tests.support import Holder, review, snapshot_of, write_data
from tests.support.daemon import TWISTD, _Daemon, environment, free_port

BASE = "https://reviews.example.com"
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


# --- sd_notify ------------------------------------------------------------


class NotifySocket:
    """A real AF_UNIX datagram socket standing in for systemd's."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setblocking(False)

    def received(self) -> list[bytes]:
        messages = []
        while True:
            try:
                messages.append(self.sock.recv(4096))
            except BlockingIOError:
                return messages

    @defer.inlineCallbacks
    def wait(self, seconds: float = 15) -> Any:
        """The messages received, once there is one (or C{seconds} passed)."""
        messages: list[bytes] = []
        for _ in range(int(seconds / 0.05)):
            messages += self.received()
            if messages:
                break
            yield task.deferLater(reactor, 0.05, lambda: None)
        return messages

    def close(self) -> None:
        self.sock.close()


def short_temp_dir(case: SynchronousTestCase) -> str:
    """AF_UNIX paths are limited to 108 bytes: trial's temp paths are long."""
    directory = tempfile.mkdtemp(prefix="rd-")
    case.addCleanup(shutil.rmtree, directory, True)
    return directory


class NotifyTests(SynchronousTestCase):
    def setUp(self) -> None:
        directory = short_temp_dir(self)
        self.socket = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(self.socket.close)
        self.environ = {"NOTIFY_SOCKET": self.socket.path}

    def test_sends_one_datagram(self) -> None:
        self.assertTrue(notify(b"READY=1\nSTATUS=up", self.environ))
        self.assertEqual(self.socket.received(), [b"READY=1\nSTATUS=up"])

    def test_nothing_without_notify_socket(self) -> None:
        self.assertFalse(notify(b"READY=1", {}))
        self.assertEqual(self.socket.received(), [])

    def test_abstract_namespace(self) -> None:
        name = f"reviewsd-test-{os.getpid()}-{id(self)}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind("\0" + name)
        self.assertTrue(notify(b"STOPPING=1", {"NOTIFY_SOCKET": "@" + name}))
        self.assertEqual(sock.recv(4096), b"STOPPING=1")

    def test_reloading_carries_monotonic_time(self) -> None:
        notify(b"RELOADING=1", self.environ)
        [message] = self.socket.received()
        first, second = message.split(b"\n")
        self.assertEqual(first, b"RELOADING=1")
        self.assertRegex(second.decode(), r"^MONOTONIC_USEC=\d+$")

    def test_failure_is_logged_not_raised(self) -> None:
        missing = os.path.join(os.path.dirname(self.socket.path), "missing")
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        self.assertFalse(notify(b"READY=1", {"NOTIFY_SOCKET": missing}))
        self.assertFalse(notify(b"READY=1", {"NOTIFY_SOCKET": "vsock:2:9"}))
        self.assertEqual(
            [
                e["log_level"]
                for e in events
                if e.get("log_namespace") == "reviewsd.ops.systemd"
            ],
            [LogLevel.warn, LogLevel.warn],
        )

    def test_notifier_ready_after_listening_and_stopping_at_shutdown(self) -> None:
        """
        READY=1 (with STATUS and MAINPID) only once ready() fires; STOPPING=1
        from the reactor's before-shutdown trigger.
        """
        memory = MemoryReactorClock()
        listening: Deferred[str] = Deferred()
        notifier = Notifier(
            memory, lambda: listening, lambda s: notify(s, self.environ)
        )
        notifier.startService()
        self.assertEqual(self.socket.received(), [])
        listening.callback("Serving 3 reviews on tcp:8080")
        [ready] = self.socket.received()
        self.assertEqual(
            ready.split(b"\n"),
            [
                b"READY=1",
                b"STATUS=Serving 3 reviews on tcp:8080",
                b"MAINPID=%d" % os.getpid(),
            ],
        )
        [(trigger, args, kwargs)] = memory.triggers["before"]["shutdown"]
        trigger(*args, **kwargs)
        self.assertEqual(self.socket.received(), [b"STOPPING=1"])
        notifier.stopService()  # the trigger has fired: nothing to remove

    def test_notifier_stopped_before_ready(self) -> None:
        triggers = Triggers()
        listening: Deferred[str] = Deferred()
        notifier = Notifier(
            triggers,  # type: ignore[arg-type]
            lambda: listening,
            lambda s: notify(s, self.environ),
        )
        notifier.startService()
        self.assertEqual(len(triggers.handles), 1)
        notifier.stopService()
        self.assertEqual(triggers.handles, [])
        listening.callback("late")
        self.assertEqual(self.socket.received(), [])


class Triggers:
    """The system event triggers of a reactor, with their removal."""

    def __init__(self) -> None:
        self.handles: list[tuple[Any, ...]] = []

    def addSystemEventTrigger(self, *trigger: Any) -> tuple[Any, ...]:  # noqa: N802
        self.handles.append(trigger)
        return trigger

    def removeSystemEventTrigger(self, handle: tuple[Any, ...]) -> None:  # noqa: N802
        self.handles.remove(handle)


# --- logs -------------------------------------------------------------------


class JSONLogTests(SynchronousTestCase):
    def events(self, observer: Any) -> Logger:
        return Logger(namespace="reviewsd.test", observer=observer)

    def test_one_json_object_per_line(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out))
        log.info("Publishing {count} reviews of {business}", count=3, business="Acme")
        log.warn("Odd {path!r}", path=Path("/srv/x"), raw=b"\xff", when={1, 2})
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        first, second = (json.loads(line) for line in lines)
        self.assertEqual(first["text"], "Publishing 3 reviews of Acme")
        self.assertEqual(first["level"], "info")
        self.assertEqual(first["namespace"], "reviewsd.test")
        self.assertEqual((first["count"], first["business"]), (3, "Acme"))
        self.assertRegex(first["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertNotIn("log_format", first)
        self.assertEqual(second["level"], "warn")
        self.assertEqual(second["text"], "Odd PosixPath('/srv/x')")
        self.assertEqual((second["path"], second["raw"]), ("/srv/x", "\ufffd"))

    def test_failures_carry_their_traceback(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out))
        try:
            raise ZeroDivisionError("division by zero")
        except ZeroDivisionError:
            log.failure("Reload failed")
        [record] = map(json.loads, out.getvalue().splitlines())
        self.assertEqual(record["level"], "critical")
        self.assertIn("ZeroDivisionError", record["traceback"])

    def test_journal_gets_priorities(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out, journal=True))
        log.error("broken")
        log.info("fine")
        lines = out.getvalue().splitlines()
        self.assertEqual([line[:3] for line in lines], ["<3>", "<6>"])
        self.assertEqual(json.loads(lines[0][3:])["text"], "broken")

    def test_observer_for_terminal_pipe_and_journal(self) -> None:
        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        terminal = Terminal()
        self.events(observer_for(terminal, {})).info("hello {who}", who="you")
        self.assertIn("[reviewsd.test#info] hello you", terminal.getvalue())
        self.assertRaises(ValueError, json.loads, terminal.getvalue())

        with tempfile.TemporaryFile("w+") as journal:
            stat = os.fstat(journal.fileno())
            environ = {"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino}"}
            self.events(observer_for(journal, environ)).warn("hello")
            self.events(observer_for(journal, {})).warn("again")
            journal.seek(0)
            lines = journal.read().splitlines()
        self.assertTrue(lines[0].startswith("<4>{"), lines[0])
        self.assertEqual(json.loads(lines[1])["text"], "again")

    def test_legacy_events(self) -> None:
        from twisted.python import log as legacy

        out = io.StringIO()
        observer = JSONLinesObserver(out)
        globalLogPublisher.addObserver(observer)
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        legacy.msg("Site starting on 8080")
        record = json.loads(out.getvalue().splitlines()[-1])
        self.assertEqual(record["text"], "Site starting on 8080")
        self.assertNotIn("message", record)

    def test_uris_lose_their_secrets(self) -> None:
        self.assertEqual(
            loggable_uri(b"/api/websub/hub?hub.secret=s3cret&hub.mode=subscribe"),
            "/api/websub/hub?hub.secret=REDACTED&hub.mode=subscribe",
        )
        self.assertEqual(
            loggable_uri(b"/x?HUB.SECRET=a&b=1"), "/x?HUB.SECRET=REDACTED&b=1"
        )
        self.assertEqual(loggable_uri(b"/secret=x"), "/secret=x")
        self.assertEqual(len(loggable_uri(b"/" + b"a" * 5000)), 2003)
        event = {"log_format": "{x}", "x": "y", "log_time": 0.0}
        self.assertEqual(
            json.loads(event_as_json(event))["time"], "1970-01-01T00:00:00.000Z"
        )


# --- an in-memory client connection to a site ------------------------------


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

    def unregisterProducer(self) -> None:  # noqa: N802
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


class AccessLogTests(SiteTestCase):
    def test_one_event_per_request_with_its_fields(self) -> None:
        self.site.observers.append(log_access)
        connection = Connection(self.site)
        self.clock.advance(5)
        answer = connection.request("GET", "/reviews.json")
        connection.request("GET", "/nowhere?hub.secret=s3cret")
        access = [e for e in self.events if e.get("log_namespace") == "reviewsd.access"]
        self.assertEqual(len(access), 2)
        first, second = access
        self.assertEqual(
            {k: first[k] for k in ("client", "method", "uri", "status", "bytes")},
            {
                "client": "203.0.113.9",
                "method": "GET",
                "uri": "/reviews.json",
                "status": 200,
                "bytes": len(answer.body),
            },
        )
        self.assertEqual(first["duration"], 0.0)  # the clock did not move
        self.assertEqual(
            (second["status"], second["uri"]), (404, "/nowhere?hub.secret=REDACTED")
        )
        line = json.loads(event_as_json(first))
        self.assertEqual(
            line["text"],
            f'203.0.113.9 "GET /reviews.json" 200 {len(answer.body)} 0.0000s',
        )

    def test_off(self) -> None:
        Connection(self.site).request("GET", "/reviews.json")
        self.assertEqual(
            [e for e in self.events if e.get("log_namespace") == "reviewsd.access"], []
        )

    def test_duration_from_first_line_to_answer(self) -> None:
        self.site.observers.append(log_access)
        connection = Connection(self.site)
        connection.send(b"GET /reviews.json HTTP/1.1\r\n")
        self.clock.advance(0.25)
        connection.send(b"Host: x\r\n\r\n")
        [event] = [
            e for e in self.events if e.get("log_namespace") == "reviewsd.access"
        ]
        self.assertEqual(event["duration"], 0.25)

    def test_a_line_with_braces(self) -> None:
        """The line is the event's format: a brace in it stays a brace."""
        self.site.observers.append(log_access)
        Connection(self.site).request("GET", "/{x}?a={{b}}")
        [event] = [
            e for e in self.events if e.get("log_namespace") == "reviewsd.access"
        ]
        self.assertEqual(formatEvent(event), event["request"])
        self.assertIn('"GET /{x}?a={{b}}" 404', formatEvent(event))


class NotModifiedTests(SiteTestCase):
    def test_no_content_length(self) -> None:
        """A 304 is sent as it is, without twisted.web's Content-Length: 0."""
        connection = Connection(self.site)
        for path in ("/reviews.json", "/api/reviews/since/2025-01-01"):
            for method in ("GET", "HEAD"):
                tag = connection.request("GET", path).headers["etag"]
                answer = connection.request(method, path, f"If-None-Match: {tag}")
                self.assertEqual((answer.code, answer.body), (304, b""), path)
                self.assertNotIn("content-length", answer.headers, path)
                self.assertEqual(answer.headers["etag"], tag)
                self.assertEqual(answer.headers["access-control-allow-origin"], "*")


class MetricsTests(SiteTestCase):
    def test_requests_by_route_and_status_move(self) -> None:
        connection = Connection(self.site)
        name = "reviewsd_http_requests_total"
        self.assertIsNone(self.sample(name, route="/reviews.json", status="200"))
        connection.request("GET", "/reviews.json")
        connection.request("GET", "/reviews.json")
        connection.request("GET", "/api/reviews/since/2025-01-01")
        connection.request("GET", "/api/reviews/since/2025-02-30")
        connection.request("GET", "/api/reviews/search?limit=1")
        connection.request("GET", "/wp-admin/../etc/passwd")
        connection.request("FROB", "/reviews.json")
        self.assertEqual(self.sample(name, route="/reviews.json", status="200"), 2)
        self.assertEqual(self.sample(name, route="/reviews.json", status="405"), 1)
        since = "/api/reviews/since/{date}"
        self.assertEqual(self.sample(name, route=since, status="200"), 1)
        self.assertEqual(self.sample(name, route=since, status="400"), 1)
        self.assertEqual(
            self.sample(name, route="/api/reviews/search", status="200"), 1
        )
        self.assertEqual(self.sample(name, route="other", status="404"), 1)
        self.assertEqual(
            self.sample(
                "reviewsd_http_request_duration_seconds_count", route="/reviews.json"
            ),
            3,
        )

    def test_latency_histogram(self) -> None:
        connection = Connection(self.site)
        connection.send(b"GET /feed.xml HTTP/1.1\r\nHost: x\r\n")
        self.clock.advance(0.3)
        connection.send(b"\r\n")
        bucket = "reviewsd_http_request_duration_seconds_bucket"
        self.assertEqual(self.sample(bucket, route="/feed.xml", le="0.25"), 0)
        self.assertEqual(self.sample(bucket, route="/feed.xml", le="0.5"), 1)
        self.assertAlmostEqual(
            self.sample(
                "reviewsd_http_request_duration_seconds_sum", route="/feed.xml"
            ),
            0.3,
        )

    def test_snapshot_gauges(self) -> None:
        self.assertEqual(self.sample("reviewsd_reviews"), len(DEMO.dataset.reviews))
        self.assertEqual(self.sample("reviewsd_data_loaded"), 1)
        self.assertEqual(self.sample("reviewsd_snapshot_age_seconds"), 0)
        self.clock.advance(42)
        self.assertEqual(self.sample("reviewsd_snapshot_age_seconds"), 42)
        self.assertEqual(
            self.sample("reviewsd_data_last_modified_timestamp_seconds"),
            DEMO.documents["/reviews.json"].last_modified,
        )
        self.assertEqual(self.sample("reviewsd_reloads_total"), 0)
        self.holder.reloads, self.holder.failures = 3, 1  # type: ignore[attr-defined]
        self.holder.loaded_at = 40.0  # type: ignore[attr-defined]
        self.assertEqual(self.sample("reviewsd_reloads_total"), 3)
        self.assertEqual(self.sample("reviewsd_reload_failures_total"), 1)
        self.assertEqual(self.sample("reviewsd_snapshot_age_seconds"), 2)

    def test_mcp_sessions_and_tool_calls(self) -> None:
        connection = Connection(self.site)
        self.assertEqual(self.sample("reviewsd_mcp_sessions"), 0)
        answer = self.mcp_post(connection, INITIALIZE)
        session = answer.headers["mcp-session-id"]
        self.assertEqual(self.sample("reviewsd_mcp_sessions"), 1)
        for name, arguments in [
            ("get_business", {}),
            ("get_technician", {"name": "Nobody Atall"}),
            ("search_reviews", {"limit": 0}),
            ("no_such_tool", {}),
        ]:
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ).encode()
            self.assertEqual(
                self.mcp_post(connection, body, f"Mcp-Session-Id: {session}").code, 200
            )
        calls = "reviewsd_mcp_tool_calls_total"
        self.assertEqual(self.sample(calls, tool="get_business", outcome="ok"), 1)
        self.assertEqual(
            self.sample(calls, tool="get_technician", outcome="not_found"), 1
        )
        self.assertEqual(
            self.sample(calls, tool="search_reviews", outcome="invalid"), 1
        )
        self.assertEqual(self.sample(calls, tool="unknown", outcome="invalid"), 1)

    def test_in_flight(self) -> None:
        connection = Connection(self.site)
        connection.send(b"POST /mcp HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345")
        self.assertEqual(self.sample("reviewsd_http_requests_in_flight"), 1)
        connection.transport.loseConnection()
        self.assertEqual(self.sample("reviewsd_http_requests_in_flight"), 0)

    def test_websub_subscriptions_and_deliveries(self) -> None:
        class FakeHub:
            def subscriptions(self) -> list[Subscription]:
                return [
                    Subscription("t", "https://a.example/1", 60, 1e10),
                    Subscription("t", "https://a.example/2", 60, 1e10, failures=2),
                ]

            def pending(self) -> list[PendingVerification]:
                return [
                    PendingVerification(
                        "i", "subscribe", "t", "https://b.example", 60, 0.0
                    ),
                    PendingVerification(
                        "j", "unsubscribe", "t", "https://c.example", None, 0.0
                    ),
                ]

        class Response:
            def __init__(self, code: int) -> None:
                self.code = code

        class FakeClient:
            def __init__(self) -> None:
                self.answers: list[Deferred[Any]] = []

            def post(
                self, url: str, data: bytes | None = None, **kw: Any
            ) -> Deferred[Any]:
                d: Deferred[Any] = Deferred()
                self.answers.append(d)
                return d

            def get(self, url: str, **kw: Any) -> Deferred[Any]:
                return defer.succeed(Response(200))

        self.metrics.watch(hub=FakeHub())
        subscriptions = "reviewsd_websub_subscriptions"
        for state, count in [
            ("active", 1),
            ("failing", 1),
            ("pending_subscribe", 1),
            ("pending_unsubscribe", 1),
        ]:
            self.assertEqual(self.sample(subscriptions, state=state), count, state)
        fake = FakeClient()
        client: CountingClient = self.metrics.counting_client(fake)
        results = [client.post("https://a.example/1", data=b"x") for _ in range(4)]
        client.get("https://a.example/1")
        fake.answers[0].callback(Response(204))
        fake.answers[1].callback(Response(500))
        fake.answers[2].callback(Response(410))
        results[3].cancel()  # the hub stopping: not an outcome
        self.failureResultOf(results[3])
        deliveries = "reviewsd_websub_deliveries_total"
        self.assertEqual(self.sample(deliveries, outcome="acknowledged"), 1)
        self.assertEqual(self.sample(deliveries, outcome="failed"), 1)
        self.assertEqual(self.sample(deliveries, outcome="gone"), 1)

    def test_a_broken_part_does_not_fail_the_scrape(self) -> None:
        class Broken:
            def subscriptions(self) -> list[Any]:
                raise RuntimeError("no")

        self.metrics.watch(hub=Broken())
        self.assertEqual(self.sample("reviewsd_reviews"), len(DEMO.dataset.reviews))
        self.assertIsNone(self.sample("reviewsd_websub_subscriptions", state="active"))
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)


class MetricsEndpointTests(TestCase):
    """C{GET /metrics} through prometheus-client's Twisted resource, for real."""

    @defer.inlineCallbacks
    def test_scrape(self) -> Any:
        import treq

        metrics = Metrics(reactor)
        holder = Holder(DEMO)
        site = make_site(
            holder,
            reactor,
            {
                "/metrics": metrics.resource(),
                "/healthz": HealthResource(holder, reactor, reactor.seconds()),
            },
        )
        site.observers.append(metrics.observe_request)
        metrics.watch(data=holder, sites=[site])
        port = reactor.listenTCP(0, site, interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        base = f"http://127.0.0.1:{port.getHost().port}"
        for _ in range(3):
            response = yield treq.get(base + "/reviews.json", persistent=False)
            yield response.content()
        response = yield treq.get(base + "/metrics", persistent=False)
        self.assertEqual(response.code, 200)
        self.assertTrue(
            response.headers.getRawHeaders("content-type")[0].startswith("text/plain")
        )
        text = (yield response.text()).replace("\r", "")
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        key = (
            "reviewsd_http_requests_total",
            (("route", "/reviews.json"), ("status", "200")),
        )
        self.assertEqual(samples[key], 3)
        self.assertEqual(samples[("reviewsd_reviews", ())], len(DEMO.dataset.reviews))
        self.assertEqual(samples[("reviewsd_http_requests_in_flight", ())], 1)  # itself
        self.assertIn(("process_resident_memory_bytes", ()), samples)
        response = yield treq.get(base + "/healthz", persistent=False)
        self.assertEqual((yield response.json())["status"], "ok")

    def test_registries_are_separate(self) -> None:
        a, b = Metrics(Clock()), Metrics(Clock())
        a.deliveries.labels("failed").inc()
        self.assertEqual(
            b.registry.get_sample_value(
                "reviewsd_websub_deliveries_total", {"outcome": "failed"}
            ),
            0,
        )


# --- health ---------------------------------------------------------------


class HealthTests(SiteTestCase):
    def test_before_and_after_a_load(self) -> None:
        modified = DEMO.documents["/reviews.json"].last_modified
        self.clock.advance(modified + 1000)
        holder = Holder(None)  # type: ignore[arg-type]
        health = HealthResource(holder, self.clock, self.clock.seconds())
        site = make_side_site({"/healthz": health}, self.clock)
        connection = Connection(site)
        answer = connection.request("GET", "/healthz")
        self.assertEqual(answer.code, 503)
        self.assertEqual(answer.json["status"], "starting")
        self.assertIs(answer.json["data_loaded"], False)

        self.clock.advance(100)
        holder.snapshot = DEMO
        holder.loaded_at = self.clock.seconds()  # type: ignore[attr-defined]
        self.clock.advance(30)
        answer = connection.request("GET", "/healthz")
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.headers["content-type"], "application/json")
        self.assertEqual(answer.headers["cache-control"], "no-store")
        body = answer.json
        self.assertEqual(
            {
                k: body[k]
                for k in (
                    "status",
                    "data_loaded",
                    "reviews",
                    "snapshot_age_seconds",
                    "reloads",
                )
            },
            {
                "status": "ok",
                "data_loaded": True,
                "reviews": len(DEMO.dataset.reviews),
                "snapshot_age_seconds": 30,
                "reloads": 0,
            },
        )
        self.assertEqual(body["data_age_seconds"], 1130)
        self.assertRegex(body["loaded_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(connection.request("HEAD", "/healthz").body, b"")
        self.assertEqual(connection.request("POST", "/healthz").code, 405)
        self.assertEqual(connection.request("GET", "/other").code, 404)

    def test_stopping(self) -> None:
        health = HealthResource(self.holder, self.clock, 0.0)
        site = make_side_site({"/healthz": health}, self.clock)
        connection = Connection(site)
        connection.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        site.drain()
        connection.transport.clear()
        connection.send(b"\r\n")
        answer = Answer(connection.transport.value())
        self.assertEqual((answer.code, answer.json["status"]), (503, "stopping"))
        self.assertEqual(answer.headers["connection"], "close")


class ReloadHealthTests(TestCase):
    """The reload service's own figures, through health and metrics."""

    @defer.inlineCallbacks
    def test_after_a_reload(self) -> Any:
        directory = write_data(Path(self.mktemp()))
        data = ReviewsData(directory, snapshot_of(directory), reactor)
        clock_start = reactor.seconds()
        health = HealthResource(data, reactor, clock_start)
        metrics = Metrics(reactor, clock_start)
        metrics.watch(data=data)
        _, before = health.answer()
        self.assertEqual((before["reviews"], before["reloads"]), (3, 0))
        write_data(directory, [review(n) for n in range(5)])
        swapped = yield data.reload()
        self.assertTrue(swapped)
        (directory / "reviews.json").write_text("[{")
        swapped = yield data.reload()
        self.assertFalse(swapped)
        code, after = health.answer()
        self.assertEqual(code, 200)
        self.assertEqual(
            (after["reviews"], after["reloads"], after["reload_failures"]), (5, 1, 1)
        )
        status = data_status(data, clock_start)
        self.assertGreaterEqual(status.loaded_at, clock_start)
        get = metrics.registry.get_sample_value
        self.assertEqual(get("reviewsd_reviews"), 5)
        self.assertEqual(get("reviewsd_reloads_total"), 1)
        self.assertEqual(get("reviewsd_reload_failures_total"), 1)


# --- limits -----------------------------------------------------------------


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
        """16 KiB of request line and headers; one line of 16 KiB at most."""
        many = [f"X-Header-{n}: {'a' * 100}" for n in range(200)]
        connection = Connection(self.site)
        answer = connection.request("GET", "/reviews.json", *many)
        self.assertEqual(answer.code, 400)
        self.assertFalse(connection.transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        connection = Connection(self.site)
        connection.send(b"GET /reviews.json HTTP/1.1\r\nX-Big: " + b"a" * 20_000)
        self.assertFalse(connection.transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        self.assertEqual(len(self.site.connections), 0)

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


# --- stopping ---------------------------------------------------------------


class DrainTests(SiteTestCase):
    def listener(self, timeout: float = 10) -> tuple[Listener, Any]:
        self.port_endpoint = _Endpoint()
        listener = Listener(
            "tcp:8080",
            self.port_endpoint,
            self.site,
            clock=self.clock,
            drain_timeout=timeout,
        )
        listener.privilegedStartService()
        listener.startService()
        return listener, self.port_endpoint

    def test_waits_for_requests_in_flight(self) -> None:
        listener, endpoint = self.listener()
        idle = Connection(self.site)
        idle.request("GET", "/reviews.json")
        busy = Connection(self.site)
        busy.send(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        )
        busy.send(
            f"Accept: {ACCEPT}\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n".encode()
        )
        busy.send(INITIALIZE[:10])
        stopped = listener.stopService()
        self.assertTrue(endpoint.port.stopped)
        self.assertFalse(idle.transport.connected)  # idle: closed at once
        self.assertNoResult(stopped)
        busy.transport.clear()
        busy.send(INITIALIZE[10:])
        answer = Answer(busy.transport.value())
        self.assertEqual(answer.code, 200)
        self.assertIn("mcp-session-id", answer.headers)
        self.assertFalse(busy.transport.connected)  # closed once answered
        self.successResultOf(stopped)

    def test_bounded(self) -> None:
        listener, _ = self.listener(timeout=5)
        stuck = Connection(self.site)
        stuck.send(b"GET /reviews.json HTTP/1.1\r\n")
        stopped = listener.stopService()
        self.clock.advance(4.9)
        self.assertNoResult(stopped)
        self.clock.advance(0.2)
        self.successResultOf(stopped)
        self.assertIn(
            "were still in flight",
            " ".join(e.get("log_format", "") for e in self.events),
        )

    def test_cannot_listen_stops_start_up(self) -> None:
        class Busy:
            def listen(self, factory: Any) -> Deferred[Any]:
                return defer.fail(
                    CannotListenError(
                        "127.0.0.1", 8080, OSError(98, "Address already in use")
                    )
                )

        listener = Listener(
            "tcp:8080", Busy(), self.site, clock=self.clock, drain_timeout=1
        )
        error = self.assertRaises(SystemExit, listener.privilegedStartService)
        self.assertEqual(
            str(error),
            "reviewsd: cannot listen on 'tcp:8080': [Errno 98] Address already in use",
        )

    def test_in_order_stops_one_after_the_other(self) -> None:
        from twisted.application.service import Service

        stopped: list[str] = []
        gates: dict[str, Deferred[None]] = {}

        class Step(Service):
            def __init__(self, name: str) -> None:
                self.name = name

            def stopService(self) -> Deferred[None]:  # noqa: N802
                super().stopService()
                stopped.append(self.name)
                gates[self.name] = Deferred()
                return gates[self.name]

        top = InOrder()
        for name in ("data", "hub", "listener"):
            Step(name).setServiceParent(top)
        top.startService()
        done = top.stopService()
        self.assertEqual(stopped, ["listener"])
        gates["listener"].callback(None)
        self.assertEqual(stopped, ["listener", "hub"])
        gates["hub"].callback(None)
        gates["data"].callback(None)
        self.successResultOf(done)

    def test_in_flight_idle(self) -> None:
        in_flight: InFlight[str] = InFlight()
        self.successResultOf(in_flight.idle())
        in_flight.add("a")
        waiting = in_flight.idle()
        self.assertNoResult(waiting)
        in_flight.discard("a")
        self.successResultOf(waiting)


class _Port:
    stopped = False

    def stopListening(self) -> None:  # noqa: N802
        self.stopped = True


class _Endpoint:
    def __init__(self) -> None:
        self.port = _Port()

    def listen(self, factory: Any) -> Deferred[Any]:
        return defer.succeed(self.port)


# --- the real daemon ---------------------------------------------------------


class DaemonOperationsTests(TestCase):
    """
    twistd with the journal logger and a notify socket: READY once it
    answers, SIGTERM with a request in flight, STOPPING, JSON lines, and no
    secret in the log.
    """

    timeout = 60

    @defer.inlineCallbacks
    def test_sigterm_with_a_request_in_flight(self) -> Any:
        directory = short_temp_dir(self)
        notifications = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(notifications.close)
        port = free_port()
        workdir = os.path.abspath(self.mktemp())
        os.makedirs(workdir)
        env = environment()
        env["NOTIFY_SOCKET"] = notifications.path
        env.pop("JOURNAL_STREAM", None)
        daemon = _Daemon()
        process = reactor.spawnProcess(
            daemon,
            sys.executable,
            [
                *TWISTD,
                "--nodaemon",
                "--pidfile=",
                "--logger=reviewsd.logs.journal_observer",
                "reviewsd",
                "--listen",
                f"tcp:{port}:interface=127.0.0.1",
                "--state-dir",
                os.path.join(workdir, "state"),
                "--allow-private-callbacks",
            ],
            env=env,
            path=workdir,
        )

        def kill() -> Deferred[None]:
            if not daemon.ended.called:
                process.signalProcess(signal.SIGKILL)
            return daemon.ended

        self.addCleanup(kill)
        ready = yield notifications.wait()
        self.assertEqual(len(ready), 1, daemon.output.decode())
        self.assertTrue(ready[0].startswith(b"READY=1\nSTATUS=Serving 224 reviews"))
        self.assertIn(b"MAINPID=%d" % process.pid, ready[0])

        # answering at once: READY came after the port was listening
        health = yield deferToThread(
            raw_exchange,
            port,
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        self.assertIn(b'"status":"ok"', health)
        secret = b"Sekr1t-" + os.urandom(6).hex().encode()
        form = (
            b"hub.mode=subscribe&hub.topic="
            + f"http://127.0.0.1:{port}/feed.xml".encode()
            + b"&hub.callback=https%3A%2F%2F127.0.0.1%3A9%2Fcb&hub.secret="
            + secret
        )
        answer = yield deferToThread(
            raw_exchange,
            port,
            b"POST /api/websub/hub?hub.secret=" + secret + b" HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n" % len(form) + form,
        )
        self.assertTrue(answer.startswith(b"HTTP/1.1 202"), answer)

        # a request in flight: half its body sent
        client = socket.create_connection(("127.0.0.1", port))
        self.addCleanup(client.close)
        client.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Accept: {ACCEPT}\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n".encode()
            + INITIALIZE[:20]
        )
        yield task.deferLater(reactor, 0.3, lambda: None)
        process.signalProcess(signal.SIGTERM)
        stopping = yield notifications.wait()
        self.assertEqual(stopping, [b"STOPPING=1"])
        refused = yield deferToThread(connection_refused, port)
        self.assertTrue(refused, "still accepting connections while stopping")
        self.assertFalse(daemon.ended.called)
        client.sendall(INITIALIZE[20:])
        reply = yield deferToThread(read_to_close, client)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK"), reply)
        self.assertIn(b"Connection: close", reply)
        self.assertIn(b'"serverInfo"', reply)
        yield daemon.ended

        lines = daemon.output.decode().splitlines()
        records = [json.loads(line) for line in lines]  # every line is JSON
        texts = [r["text"] for r in records]
        self.assertTrue(
            any(t.startswith("reviewsd ") and "starting: " in t for t in texts)
        )
        [config] = [r for r in records if "configuration" in r]
        self.assertEqual(
            config["configuration"]["listen"], f"tcp:{port}:interface=127.0.0.1"
        )
        access = [r for r in records if r["namespace"] == "reviewsd.access"]
        self.assertEqual(
            [(r["method"], r["uri"].split("?")[0], r["status"]) for r in access],
            [
                ("GET", "/healthz", 200),
                ("POST", "/api/websub/hub", 202),
                ("POST", "/mcp", 200),
            ],
        )
        self.assertIn("hub.secret=REDACTED", access[1]["uri"])
        self.assertTrue(
            any("waiting up to 10.0 s for 1 requests" in t for t in texts), texts
        )
        self.assertNotIn(secret.decode(), daemon.output.decode())


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        return read_to_close(s)


def read_to_close(s: socket.socket) -> bytes:
    s.settimeout(10)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def connection_refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return True
    return False


class SocketActivationTests(TestCase):
    """
    C{--listen systemd:...} on a socket passed as systemd passes it, by
    systemd-socket-activate (Debian: systemd) where it is installed.
    """

    timeout = 60

    @defer.inlineCallbacks
    def test_named_socket(self) -> Any:
        activate = shutil.which("systemd-socket-activate")
        if activate is None:
            raise SkipTest("systemd-socket-activate is not installed (Debian: systemd)")
        directory = short_temp_dir(self)
        notifications = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(notifications.close)
        port = free_port()
        workdir = os.path.abspath(self.mktemp())
        os.makedirs(workdir)
        env = environment()
        daemon = _Daemon()
        process = reactor.spawnProcess(
            daemon,
            activate,
            [
                activate,
                "--listen",
                f"127.0.0.1:{port}",
                "--fdname",
                "reviewsd-http",
                "-E",
                f"PYTHONPATH={env['PYTHONPATH']}",
                "-E",
                f"NOTIFY_SOCKET={notifications.path}",
                sys.executable,
                *TWISTD[1:],
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--listen",
                "systemd:domain=INET:name=reviewsd-http",
                "--base-url",
                f"http://127.0.0.1:{port}",
                "--state-dir",
                os.path.join(workdir, "state"),
            ],
            env=env,
            path=workdir,
        )

        def stop() -> Deferred[None]:
            if not daemon.ended.called:
                process.signalProcess(signal.SIGTERM)
            return daemon.ended

        self.addCleanup(stop)
        # the first connection starts the daemon, which answers it
        answer = b""
        for _ in range(100):
            try:
                answer = yield deferToThread(
                    raw_exchange,
                    port,
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                )
                break
            except OSError:
                yield task.deferLater(reactor, 0.1, lambda: None)
        self.assertTrue(answer.startswith(b"HTTP/1.1 200 OK"), daemon.output.decode())
        [ready] = yield notifications.wait()
        self.assertIn(b"systemd:domain=INET:name=reviewsd-http", ready)
        yield stop()
        self.assertEqual(notifications.received(), [b"STOPPING=1"])
