"""
C{/healthz}: starting, ok, degraded and stopping, the reload service's own
figures through health and metrics, and the WebSub hub's state through
both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import define
from treq.testing import StubTreq
from twisted.internet import defer, reactor
from twisted.trial.unittest import TestCase
from twisted.web.resource import Resource

from reviewsd.ops.health import HealthResource, data_status
from reviewsd.ops.metrics import Metrics
from reviewsd.publishing.service import CurrentSnapshot, ReviewsData
from reviewsd.web.site import make_side_site
from reviewsd.websub import Hub, HubConfig, HubUnavailable
from reviewsd.websub.topics import SnapshotTopics
from tests.support import Holder, review, snapshot_of, write_data
from tests.support.site import DEMO, Answer, Connection, SiteTestCase


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
        data = ReviewsData(directory, CurrentSnapshot(snapshot_of(directory)), reactor)
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


@define
class FakeHub:
    state: str
    problem: str | None = None

    def subscriptions(self) -> list[Any]:
        return []

    def pending(self) -> list[Any]:
        return []


class HubHealthTests(SiteTestCase):
    """The hub's state in /healthz: C{degraded} with 200 while data is served."""

    def test_states(self) -> None:
        hub = FakeHub("up")
        health = HealthResource(self.holder, self.clock, 0.0, hub=hub)
        connection = Connection(make_side_site({"/healthz": health}, self.clock))
        answer = connection.request("GET", "/healthz")
        self.assertEqual(answer.code, 200)
        self.assertEqual(
            (answer.json["status"], answer.json["hub"], answer.json["hub_problem"]),
            ("ok", "up", None),
        )
        hub.state, hub.problem = "starting", None
        self.assertEqual(health.answer()[1]["status"], "ok")
        hub.state, hub.problem = "unavailable", "its store /x is empty"
        answer = connection.request("GET", "/healthz")
        self.assertEqual(answer.code, 200)
        self.assertEqual(
            (answer.json["status"], answer.json["hub"], answer.json["hub_problem"]),
            ("degraded", "unavailable", "its store /x is empty"),
        )
        code, body = health.answer(stopping=True)
        self.assertEqual((code, body["status"]), (503, "stopping"))

    def test_without_a_hub(self) -> None:
        _, body = HealthResource(self.holder, self.clock, 0.0).answer()
        self.assertNotIn("hub", body)

    def test_metric(self) -> None:
        hub = FakeHub("up")
        self.metrics.watch(hub=hub)
        self.assertEqual(self.sample("reviewsd_websub_hub_up"), 1)
        hub.state = "unavailable"
        self.assertEqual(self.sample("reviewsd_websub_hub_up"), 0)


class BrokenStoreHealthTests(TestCase):
    """
    A hub whose store file is garbage, as the daemon wires it: the data is
    served, /healthz says degraded and why, the metrics say the hub is
    down, and do not claim it holds no subscriptions.
    """

    @defer.inlineCallbacks
    def test_garbage_store(self) -> Any:
        directory = Path(self.mktemp()).resolve()
        directory.mkdir(parents=True)
        store = directory / "websub.sqlite3"
        store.write_bytes(b"\x00garbage" * 500)
        holder = Holder(DEMO)
        hub = Hub(
            HubConfig(hub_url="https://r.example/hub", topics=("https://r.example/",)),
            StubTreq(Resource()),
            store_path=store,
            topics=SnapshotTopics(holder),
            clock=reactor,
        )
        hub.startService()
        self.addCleanup(hub.stopService)
        yield self.assertFailure(hub.ready(), HubUnavailable)

        started = reactor.seconds()
        health = HealthResource(holder, reactor, started, hub=hub)
        code, body = health.answer()
        self.assertEqual(
            (code, body["status"], body["hub"]), (200, "degraded", "unavailable")
        )
        self.assertIn(str(store), body["hub_problem"])
        self.assertIn("not a database", body["hub_problem"])

        metrics = Metrics(reactor, started)
        metrics.watch(data=holder, hub=hub)
        get = metrics.registry.get_sample_value
        self.assertEqual(get("reviewsd_websub_hub_up"), 0)
        self.assertIsNone(get("reviewsd_websub_subscriptions", {"state": "active"}))
        self.assertEqual(get("reviewsd_data_loaded"), 1)
