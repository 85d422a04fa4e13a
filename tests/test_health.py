"""
C{/healthz}: starting, ok and stopping, and the reload service's own
figures through health and metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor
from twisted.trial.unittest import TestCase

from reviewsd.ops.health import HealthResource, data_status
from reviewsd.ops.metrics import Metrics
from reviewsd.publishing.service import CurrentSnapshot, ReviewsData
from reviewsd.web.site import make_side_site
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
