"""
The Prometheus metrics: requests by route and status, latency, the
snapshot, MCP sessions and tool calls, WebSub subscriptions and
deliveries, and a real scrape of C{GET /metrics}.
"""

from __future__ import annotations

import json
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer, reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from reviewsd.ops.health import HealthResource
from reviewsd.ops.metrics import CountingClient, Metrics
from reviewsd.web.site import make_site
from reviewsd.websub.records import PendingVerification, Subscription
from tests.support import Holder
from tests.support.site import DEMO, INITIALIZE, Connection, SiteTestCase


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

    @defer.inlineCallbacks
    def test_head(self) -> Any:
        """HEAD answers as GET does, without the body."""
        import treq

        metrics = Metrics(reactor)
        site = make_site(Holder(DEMO), reactor, {"/metrics": metrics.resource()})
        port = reactor.listenTCP(0, site, interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        url = f"http://127.0.0.1:{port.getHost().port}/metrics"
        head = yield treq.head(url, persistent=False)
        body = yield head.content()
        get = yield treq.get(url, persistent=False)
        yield get.content()
        self.assertEqual((head.code, body), (200, b""))
        self.assertEqual(
            head.headers.getRawHeaders("content-type"),
            get.headers.getRawHeaders("content-type"),
        )

    def test_registries_are_separate(self) -> None:
        a, b = Metrics(Clock()), Metrics(Clock())
        a.deliveries.labels("failed").inc()
        self.assertEqual(
            b.registry.get_sample_value(
                "reviewsd_websub_deliveries_total", {"outcome": "failed"}
            ),
            0,
        )
