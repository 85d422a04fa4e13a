"""
The WebSub hub, unit by unit: request parsing, the resource, verification,
distribution, retries, leases and persistence, driven with
C{treq.testing.StubTreq} subscribers, a C{task.Clock} and SQLite run in the
calling thread.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from attrs import frozen
from treq.testing import StubTreq
from twisted.internet import defer, task
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import formatEvent, globalLogPublisher
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from twisted.web._newclient import ResponseNeverReceived
from twisted.web.test.requesthelper import DummyRequest

from reviewsd.websub import (
    BadHubRequest,
    Hub,
    HubConfig,
    HubRequest,
    HubResource,
    parse_hub_request,
)
from reviewsd.websub.hub import redact, signature, with_query
from reviewsd.websub.outbound import (
    AddressRefused,
    GuardedClient,
    OutboundPolicy,
    OutboundTimeout,
)
from reviewsd.websub.requests import normalize_url
from reviewsd.websub.store import HubStore, SynchronousPool
from tests.support.dns import StubResolver
from tests.support.websub import Subscriber

BASE = "https://reviews.example.com"
HUB = BASE + "/api/websub/hub"
ATOM = BASE + "/feed.xml"
JSON_FEED = BASE + "/api/feed.json"
REVIEWS = BASE + "/reviews.json"
TOPICS = (ATOM, JSON_FEED, REVIEWS)
FORM = b"application/x-www-form-urlencoded"
CALLBACK = "https://subscriber.example/hook?id=7"
DAY = 86400


def form(**fields: str) -> bytes:
    return urlencode({k.replace("_", ".", 1): v for k, v in fields.items()}).encode()


def parse(body: bytes, content_type: bytes | None = FORM) -> HubRequest:
    return parse_hub_request(content_type, body, TOPICS)


class RequestParsingTests(SynchronousTestCase):
    def bad(self, body: bytes, content_type: bytes | None = FORM) -> BadHubRequest:
        error = self.assertRaises(BadHubRequest, parse, body, content_type)
        return error

    def test_minimal(self) -> None:
        request = parse(
            form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        )
        self.assertEqual(
            request, HubRequest("subscribe", ATOM, CALLBACK, lease_seconds=None)
        )

    def test_lease_secret_and_unknown_parameters(self) -> None:
        """Unknown parameters (websub.rocks 102, PuSH 0.3) are ignored."""
        body = (
            form(
                hub_mode="subscribe",
                hub_topic=JSON_FEED,
                hub_callback=CALLBACK,
                hub_lease_seconds="3600",
                hub_secret="a" * 199,
            )
            + b"&foo=bar&hub.foo=hub.bar&hub.verify=sync&hub.verify_token=x"
        )
        request = parse(body, FORM + b"; charset=UTF-8")
        self.assertEqual(request.lease_seconds, 3600)
        self.assertEqual(request.secret, b"a" * 199)
        self.assertNotIn("aaa", repr(request))

    def test_topic_normalized(self) -> None:
        """Unreserved escapes are decoded, scheme and host case ignored."""
        for spelling in (
            "https://reviews.example.com/feed%2Exml",
            "HTTPS://Reviews.Example.COM/feed.xml",
            "https://reviews.example.com:443/%66eed.xml",
        ):
            request = parse(
                form(hub_mode="subscribe", hub_topic=spelling, hub_callback=CALLBACK)
            )
            self.assertEqual(request.topic, ATOM)

    def test_callback_normalized(self) -> None:
        request = parse(
            form(
                hub_mode="subscribe",
                hub_topic=ATOM,
                hub_callback="https://Sub.Example:443/%7Euser/cb?x=%2f",
            )
        )
        self.assertEqual(request.callback, "https://sub.example/~user/cb?x=%2F")

    def test_unsubscribe_ignores_lease_and_secret(self) -> None:
        request = parse(
            form(
                hub_mode="unsubscribe",
                hub_topic=ATOM,
                hub_callback=CALLBACK,
                hub_lease_seconds="soon",
                hub_secret="x" * 500,
            )
        )
        self.assertEqual(request, HubRequest("unsubscribe", ATOM, CALLBACK))

    def test_empty_secret_is_no_secret(self) -> None:
        request = parse(
            form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
            + b"&hub.secret="
        )
        self.assertIsNone(request.secret)

    def test_400s(self) -> None:
        """Every malformed request is a 400 naming what is wrong."""
        good = {"hub.mode": "subscribe", "hub.topic": ATOM, "hub.callback": CALLBACK}
        cases: list[tuple[dict[str, str | None], str]] = [
            ({"hub.mode": None}, "hub.mode is missing"),
            ({"hub.mode": ""}, "hub.mode is missing"),
            ({"hub.mode": "Subscribe"}, "not known"),
            ({"hub.mode": "publish"}, "publish is not accepted"),
            ({"hub.topic": None}, "hub.topic is missing"),
            ({"hub.topic": BASE + "/other.xml"}, "not a topic of this hub"),
            ({"hub.topic": "http://reviews.example.com/feed.xml"}, "not a topic"),
            ({"hub.topic": BASE + "%2Ffeed.xml"}, "not a topic"),
            ({"hub.callback": None}, "hub.callback is missing"),
            ({"hub.callback": "http://subscriber.example/hook"}, "https"),
            ({"hub.callback": "/hook"}, "https"),
            ({"hub.callback": "subscriber.example/hook"}, "https"),
            ({"hub.callback": "https:///hook"}, "valid host"),
            ({"hub.callback": "https://u:p@subscriber.example/"}, "user information"),
            ({"hub.callback": "https://subscriber.example/#x"}, "fragment"),
            ({"hub.callback": "https://subscriber.example/#"}, "fragment"),
            ({"hub.callback": "https://subscriber.example/a b"}, "without spaces"),
            ({"hub.callback": "https://subscrïber.example/"}, "ASCII"),
            ({"hub.callback": "https://subscriber.example:99999/"}, "port"),
            ({"hub.callback": "https://subscriber.example:0/"}, "valid host"),
            ({"hub.callback": "https://bad_host-.example/"}, "valid host"),
            ({"hub.callback": "https://x.example/" + "a" * 2100}, "longer than"),
            ({"hub.lease_seconds": "abc"}, "whole number"),
            ({"hub.lease_seconds": "1.5"}, "whole number"),
            ({"hub.lease_seconds": "-5"}, "whole number"),
            ({"hub.lease_seconds": " 60"}, "whole number"),
            ({"hub.lease_seconds": ""}, "whole number"),
            ({"hub.lease_seconds": "0"}, "at least 1"),
            ({"hub.lease_seconds": "9" * 40}, "too large"),
            ({"hub.secret": "s" * 200}, "shorter than 200 bytes"),
            ({"hub.secret": "é" * 100}, "shorter than 200 bytes"),
        ]
        for change, expected in cases:
            fields = {**good, **change}
            body = urlencode({k: v for k, v in fields.items() if v is not None})
            error = self.bad(body.encode())
            self.assertEqual(error.status, 400, change)
            self.assertIn(expected, error.reason, change)
        repeated = form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        error = self.bad(repeated + b"&hub.mode=unsubscribe")
        self.assertIn("more than once", error.reason)
        self.assertEqual(self.bad(b"hub.mode=%FF").status, 400)
        self.assertEqual(self.bad(b"\xff\xfe").status, 400)
        self.assertEqual(self.bad(b"&".join([b"a=1"] * 100)).status, 400)

    def test_415s(self) -> None:
        body = form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        for content_type in (
            None,
            b"application/json",
            b"multipart/form-data; boundary=x",
            FORM + b"; charset=iso-8859-1",
        ):
            self.assertEqual(self.bad(body, content_type).status, 415, content_type)

    def test_normalize_url(self) -> None:
        self.assertEqual(
            normalize_url("HTTPS://A.example:443?q=%7e%3a"),
            "https://a.example/?q=~%3A",
        )
        self.assertEqual(normalize_url("https://[::1]:8443/x"), "https://[::1]:8443/x")


class ConfigTests(SynchronousTestCase):
    def test_bad_settings(self) -> None:
        for settings in (
            {"lease_min": 0},
            {"lease_min": 500, "lease_max": 400, "lease_default": 450},
            {"lease_default": 10},
            {"lease_default": 10**9},
            {"retry_base": 0},
            {"max_per_host": 0},
        ):
            self.assertRaises(ValueError, HubConfig, HUB, TOPICS, **settings)

    def test_lease_for(self) -> None:
        config = HubConfig(HUB, TOPICS, lease_default=600, lease_min=60, lease_max=900)
        self.assertEqual(
            [config.lease_for(n) for n in (None, 1, 60, 700, 10**6)],
            [600, 60, 60, 700, 900],
        )


class HelperTests(SynchronousTestCase):
    def test_signature(self) -> None:
        """HMAC-SHA256 of the exact body, as hex (RFC 4231-style vector)."""
        self.assertEqual(
            signature(b"key", b"The quick brown fox jumps over the lazy dog"),
            b"sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
        )

    def test_with_query(self) -> None:
        params = [("hub.mode", "subscribe"), ("hub.topic", ATOM)]
        encoded = "hub.mode=subscribe&hub.topic=" + quote(ATOM, safe="")
        self.assertEqual(with_query("https://a/cb", params), "https://a/cb?" + encoded)
        self.assertEqual(
            with_query("https://a/cb?x=1", params), "https://a/cb?x=1&" + encoded
        )
        self.assertEqual(with_query("https://a/cb?", params), "https://a/cb?" + encoded)

    def test_redact(self) -> None:
        self.assertEqual(redact(CALLBACK), "https://subscriber.example/hook?...")


# --- the hub ----------------------------------------------------------------


def etag(body: bytes) -> bytes:
    return b'"' + hashlib.sha256(body).hexdigest()[:22].encode() + b'"'


class FakeTopics:
    """A L{reviewsd.websub.TopicSource} whose content tests change."""

    def __init__(self) -> None:
        self.content = {
            ATOM: (b"<feed>1</feed>", b"application/atom+xml"),
            JSON_FEED: (b'{"items":[1]}', b"application/json"),
            REVIEWS: (b'{"reviews":[1]}', b"application/json"),
        }

    def topic_content(self, topic_url: str) -> tuple[bytes, bytes, bytes] | None:
        found = self.content.get(topic_url)
        if found is None:
            return None
        body, content_type = found
        return body, content_type, etag(body)

    def change(self, topic: str, body: bytes) -> None:
        self.content[topic] = (body, self.content[topic][1])


class Scripted:
    """
    A treq-like client: requests go to a StubTreq subscriber, except for
    URLs told to fail with an exception or to hang.
    """

    def __init__(self, stub: StubTreq) -> None:
        self._stub = stub
        self.errors: dict[str, Exception] = {}
        self.hang: set[str] = set()
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def _match(self, url: str, table: Any) -> str | None:
        for prefix in table:
            if url.startswith(prefix):
                return prefix  # type: ignore[no-any-return]
        return None

    def _request(self, method: str, url: str, **kwargs: Any) -> Deferred[Any]:
        self.calls.append((method, url, kwargs))
        prefix = self._match(url, self.errors)
        if prefix is not None:
            return defer.fail(self.errors[prefix])
        if self._match(url, self.hang) is not None:
            return Deferred()
        return getattr(self._stub, method.lower())(url, **kwargs)  # type: ignore[no-any-return]

    def get(self, url: str, **kwargs: Any) -> Deferred[Any]:
        return self._request("GET", url, **kwargs)

    def post(self, url: str, data: bytes | None = None, **kwargs: Any) -> Deferred[Any]:
        return self._request("POST", url, data=data, **kwargs)


class HubTestCase(SynchronousTestCase):
    """A started hub on a clock, its subscriber, and its SQLite file."""

    def setUp(self) -> None:
        self.clock = task.Clock()
        self.clock.advance(1_700_000_000)
        self.subscriber = Subscriber()
        self.client = Scripted(StubTreq(self.subscriber))
        self.topics = FakeTopics()
        directory = Path(self.mktemp())
        directory.mkdir(parents=True)
        self.db = directory / "websub.sqlite3"
        self.hub = self.start_hub()

    def start_hub(self, client: Any = None, **config: Any) -> Hub:
        hub = Hub(
            HubConfig(hub_url=HUB, topics=TOPICS, **config),
            client or self.client,
            topics=self.topics,
            clock=self.clock,
            store=HubStore(SynchronousPool(self.db)),
        )
        hub.startService()

        def stop() -> None:
            if hub.running:
                self.successResultOf(hub.stopService())

        self.addCleanup(stop)
        return hub

    def restart(self, client: Any = None, **config: Any) -> Hub:
        self.successResultOf(self.hub.stopService())
        self.hub = self.start_hub(client, **config)
        return self.hub

    def request(
        self,
        mode: str = "subscribe",
        topic: str = ATOM,
        callback: str = CALLBACK,
        lease: int | None = None,
        secret: bytes | None = None,
    ) -> None:
        self.successResultOf(
            self.hub.accept(HubRequest(mode, topic, callback, lease, secret))  # type: ignore[arg-type]
        )

    def retries(self) -> list[float]:
        """In how many seconds each scheduled delivery retry runs."""
        now = self.clock.seconds()
        return [
            call.getTime() - now
            for call in self.clock.getDelayedCalls()
            if getattr(call.func, "__name__", "") == "_retry"
        ]

    def gets(self, path: str = "/hook") -> list[Any]:
        return self.subscriber.requests(b"GET", path)

    def posts(self, path: str = "/hook") -> list[Any]:
        return self.subscriber.requests(b"POST", path)


class VerificationTests(HubTestCase):
    def test_verification_request(self) -> None:
        """
        A GET to the callback, its own query kept, with mode, topic, a
        random challenge and the lease.
        """
        self.request(lease=3600)
        (check,) = self.gets()
        self.assertEqual(check.param("id"), "7")
        self.assertEqual(check.param("hub.mode"), "subscribe")
        self.assertEqual(check.param("hub.topic"), ATOM)
        self.assertEqual(check.param("hub.lease_seconds"), "3600")
        self.assertGreaterEqual(len(check.param("hub.challenge") or ""), 40)
        self.assertEqual(check.host, b"subscriber.example")
        self.assertEqual(self.client.calls[0][2]["allow_redirects"], False)
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.expires, self.clock.seconds() + 3600)
        self.assertEqual(subscription.failures, 0)

    def test_challenges_are_fresh(self) -> None:
        self.request()
        self.request()
        challenges = {c.param("hub.challenge") for c in self.gets()}
        self.assertEqual(len(challenges), 2)

    def test_lease_clamped(self) -> None:
        for asked, granted in ((None, 864000), (10, 300), (10**12, 2592000)):
            self.request(lease=asked, callback=f"https://s.example/l{asked}")
            (check,) = self.subscriber.requests(b"GET", f"/l{asked}")
            self.assertEqual(check.param("hub.lease_seconds"), str(granted))

    def test_failures_change_nothing(self) -> None:
        """
        Redirects, other statuses, wrong bodies, timeouts, connection
        errors and refused addresses all fail verification.
        """
        answers = {
            "/not-found": lambda c: (404, c.encode()),
            "/error": lambda c: (500, c.encode()),
            "/redirect": lambda c: (302, c.encode()),
            "/moved": lambda c: (301, b""),
            "/wrong": lambda c: (200, b"nope"),
            "/newline": lambda c: (200, c.encode() + b"\n"),
            "/empty": lambda c: (200, b""),
            "/no-content": lambda c: (204, b""),
        }
        self.subscriber.verify_answer.update(answers)
        self.client.errors["https://s.example/timeout"] = OutboundTimeout("slow")
        self.client.errors["https://s.example/refused"] = ConnectionRefusedError()
        self.client.errors["https://s.example/private"] = AddressRefused(
            "s.example", "10.0.0.1", "private"
        )
        paths = [*answers, "/timeout", "/refused", "/private"]
        for path in paths:
            self.request(callback="https://s.example" + path)
        self.assertEqual(self.hub.subscriptions(), [])
        self.assertEqual(self.hub.pending(), [])
        self.assertEqual(len(self.client.calls), len(paths))

    def test_renewal(self) -> None:
        """A verified renewal replaces lease and secret."""
        self.request(lease=1000, secret=b"one")
        self.clock.advance(500)
        self.request(lease=5000, secret=b"two")
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.secret, b"two")
        self.assertEqual(subscription.expires, self.clock.seconds() + 5000)
        self.assertEqual(len(self.hub.subscriptions()), 1)

    def test_failed_renewal_keeps_the_subscription(self) -> None:
        self.request(lease=1000, secret=b"one")
        before = self.hub.subscription(ATOM, CALLBACK)
        self.subscriber.verify_answer["/hook"] = lambda c: (404, b"")
        self.request(lease=5000, secret=b"two")
        self.request(lease=5000)
        self.assertEqual(self.hub.subscription(ATOM, CALLBACK), before)

    def test_unsubscribe(self) -> None:
        self.request()
        self.request("unsubscribe")
        check = self.gets()[-1]
        self.assertEqual(check.param("hub.mode"), "unsubscribe")
        self.assertEqual(check.param("hub.topic"), ATOM)
        self.assertIsNone(check.param("hub.lease_seconds"))
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))

    def test_failed_unsubscribe(self) -> None:
        self.request()
        self.subscriber.verify_answer["/hook"] = lambda c: (200, b"no")
        self.request("unsubscribe")
        self.assertIsNotNone(self.hub.subscription(ATOM, CALLBACK))

    def test_unsubscribe_unknown(self) -> None:
        """Nothing to undo: nobody is asked."""
        self.request("unsubscribe")
        self.assertEqual(self.subscriber.seen, [])

    def test_latest_request_wins(self) -> None:
        """A request while one is being verified supersedes it."""
        self.client.hang.add(CALLBACK)
        self.request(secret=b"first")
        self.client.hang.clear()
        self.request(secret=b"second")
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.secret, b"second")

    def test_per_host_bound(self) -> None:
        hub = self.restart(max_per_host=2)
        self.request(callback="https://a.example/1")
        self.client.hang.add("https://a.example/2")
        self.request(callback="https://a.example/2")
        failure = self.failureResultOf(
            hub.accept(HubRequest("subscribe", ATOM, "https://a.example/3"))
        )
        self.assertIn("a.example", str(failure.value))
        # renewals and other hosts are fine
        self.request(callback="https://a.example/1")
        self.request(callback="https://b.example/1")
        # a removed subscription frees its place
        self.request("unsubscribe", callback="https://a.example/1")
        self.request(callback="https://a.example/3")
        self.assertIsNotNone(hub.subscription(ATOM, "https://a.example/3"))


class DeliveryTests(HubTestCase):
    def test_delivery(self) -> None:
        """
        The full body with the topic's Content-Type, one Link header naming
        hub and topic, and the signature of the exact bytes.
        """
        self.request(secret=b"key")
        self.request(topic=JSON_FEED, callback="https://s.example/plain")
        body = b"The quick brown fox jumps over the lazy dog"
        self.topics.change(ATOM, body)
        self.successResultOf(self.hub.publish(ATOM))
        (delivery,) = self.posts()
        self.assertEqual(delivery.body, body)
        self.assertEqual(delivery.param("id"), "7")
        self.assertEqual(delivery.headers[b"content-type"], [b"application/atom+xml"])
        self.assertEqual(
            delivery.headers[b"link"],
            [f'<{HUB}>; rel="hub", <{ATOM}>; rel="self"'.encode()],
        )
        expected = hmac.new(b"key", body, hashlib.sha256).hexdigest()
        self.assertEqual(
            delivery.headers[b"x-hub-signature"], [b"sha256=" + expected.encode()]
        )
        self.assertEqual(
            expected, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        )
        self.assertEqual(self.posts("/plain"), [])
        self.successResultOf(self.hub.publish(JSON_FEED))
        (plain,) = self.posts("/plain")
        self.assertNotIn(b"x-hub-signature", plain.headers)
        self.assertEqual(plain.headers[b"content-type"], [b"application/json"])
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.acknowledged, etag(body))

    def test_any_2xx_acknowledges(self) -> None:
        for number, code in enumerate((200, 201, 202, 204, 299)):
            path = f"/ok{number}"
            self.subscriber.delivery_status[path] = code
            self.request(callback="https://s.example" + path)
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(self.subscriber.deliveries, 5)
        self.assertEqual(self.retries(), [])

    def test_retries_then_denial(self) -> None:
        """
        Retried after 30 s, then 60 s; the third failure removes the
        subscription and tells the callback with hub.mode=denied.
        """
        self.request()
        self.subscriber.delivery_status["/hook"] = 500
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(len(self.posts()), 1)
        self.clock.advance(29.9)
        self.assertEqual(len(self.posts()), 1)
        self.clock.advance(0.1)
        self.assertEqual(len(self.posts()), 2)
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.failures, 2)
        self.clock.advance(59.9)
        self.assertEqual(len(self.posts()), 2)
        self.clock.advance(0.1)
        self.assertEqual(len(self.posts()), 3)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))
        denied = self.gets()[-1]
        self.assertEqual(denied.param("hub.mode"), "denied")
        self.assertEqual(denied.param("hub.topic"), ATOM)
        self.assertIn("3 consecutive deliveries failed", denied.param("hub.reason"))
        self.assertEqual(denied.param("id"), "7")
        self.clock.advance(10_000)
        self.assertEqual(len(self.posts()), 3)

    def test_retry_base(self) -> None:
        self.restart(retry_base=5)
        self.request()
        self.client.errors[CALLBACK] = OutboundTimeout("slow")
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(self.retries(), [5])
        self.clock.advance(5)
        self.assertEqual(self.retries(), [10])

    def test_each_failure_kind_counts(self) -> None:
        self.request()
        failures = [
            ConnectionRefusedError(),
            OutboundTimeout("slow"),
        ]
        self.client.errors[CALLBACK] = failures[0]
        self.successResultOf(self.hub.publish(ATOM))
        self.client.errors[CALLBACK] = failures[1]
        self.clock.advance(30)
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.failures, 2)
        del self.client.errors[CALLBACK]
        self.subscriber.delivery_status["/hook"] = 307
        self.clock.advance(60)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))

    def test_success_resets_the_count(self) -> None:
        self.request()
        self.subscriber.delivery_status["/hook"] = 503
        self.successResultOf(self.hub.publish(ATOM))
        self.clock.advance(30)
        self.subscriber.delivery_status["/hook"] = 204
        self.clock.advance(60)
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.failures, 0)
        self.subscriber.delivery_status["/hook"] = 503
        self.successResultOf(self.hub.publish(ATOM))
        self.clock.advance(30)
        self.assertIsNotNone(self.hub.subscription(ATOM, CALLBACK))

    def test_gone(self) -> None:
        """410 removes the subscription at once, with no retry or notice."""
        self.request()
        self.subscriber.delivery_status["/hook"] = 410
        self.successResultOf(self.hub.publish(ATOM))
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))
        self.clock.advance(10_000)
        self.assertEqual(len(self.posts()), 1)
        self.assertEqual(len(self.gets()), 1)

    def test_newer_publish_supersedes_a_retry(self) -> None:
        self.request()
        self.subscriber.delivery_status["/hook"] = 500
        self.successResultOf(self.hub.publish(ATOM))
        self.subscriber.delivery_status["/hook"] = 200
        self.clock.advance(10)
        self.topics.change(ATOM, b"<feed>2</feed>")
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(self.posts()[-1].body, b"<feed>2</feed>")
        self.clock.advance(10_000)
        self.assertEqual(len(self.posts()), 2)

    def test_retry_sends_current_content(self) -> None:
        self.request()
        self.subscriber.delivery_status["/hook"] = 500
        self.successResultOf(self.hub.publish(ATOM))
        self.topics.change(ATOM, b"<feed>3</feed>")
        self.subscriber.delivery_status["/hook"] = 200
        self.clock.advance(30)
        self.assertEqual(self.posts()[-1].body, b"<feed>3</feed>")

    def test_refused_callback_gets_no_denial(self) -> None:
        """A callback the guard refuses is not contacted for the notice."""
        self.request()
        self.client.errors[CALLBACK] = AddressRefused("s", "10.0.0.1", "private")
        self.successResultOf(self.hub.publish(ATOM))
        self.clock.advance(30)
        self.clock.advance(60)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))
        self.assertEqual(
            [method for method, _, _ in self.client.calls],
            ["GET", "POST", "POST", "POST"],
        )

    def test_unknown_topic_publishes_nothing(self) -> None:
        self.request()
        self.successResultOf(self.hub.publish(BASE + "/nothing"))
        self.assertEqual(self.posts(), [])

    def test_publish_while_an_attempt_is_in_flight(self) -> None:
        """
        One attempt at a time per subscriber: a publish during one waits
        for it, then the newest content goes.
        """
        client = Controlled()
        self.restart(client)
        self.successResultOf(self.hub.accept(HubRequest("subscribe", ATOM, CALLBACK)))
        client.answer_challenge()
        first = self.hub.publish(ATOM)
        self.topics.change(ATOM, b"<feed>2</feed>")
        second = self.hub.publish(ATOM)
        self.topics.change(ATOM, b"<feed>3</feed>")
        third = self.hub.publish(ATOM)
        self.assertEqual(len(client.pending), 1)
        client.respond(204)
        self.successResultOf(first)
        self.assertNoResult(second)
        (_, _, kwargs, _) = client.pending[0]
        self.assertEqual(kwargs["data"], b"<feed>3</feed>")
        client.respond(204)
        self.successResultOf(second)
        self.successResultOf(third)
        self.assertEqual(client.pending, [])


@frozen
class Answer:
    code: int
    body: bytes = b""

    def content(self) -> Deferred[bytes]:
        return defer.succeed(self.body)


class Controlled:
    """A treq-like client whose answers the test gives, one by one."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, str, dict[str, Any], Deferred[Answer]]] = []
        self.canceller: Any = None

    def get(self, url: str, **kwargs: Any) -> Deferred[Answer]:
        d: Deferred[Answer] = Deferred(self.canceller)
        self.pending.append(("GET", url, kwargs, d))
        return d

    def post(
        self, url: str, data: bytes | None = None, **kwargs: Any
    ) -> Deferred[Answer]:
        d: Deferred[Answer] = Deferred()
        self.pending.append(("POST", url, {"data": data, **kwargs}, d))
        return d

    def answer_challenge(self) -> None:
        method, url, _, d = self.pending.pop(0)
        challenge = url.split("hub.challenge=")[1].split("&")[0]
        d.callback(Answer(200, challenge.encode()))

    def respond(self, code: int) -> None:
        _, _, _, d = self.pending.pop(0)
        d.callback(Answer(code))


class LeaseTests(HubTestCase):
    def test_expiry(self) -> None:
        self.request(lease=300)
        self.clock.advance(299)
        self.assertIsNotNone(self.hub.subscription(ATOM, CALLBACK))
        self.clock.advance(61)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(self.posts(), [])

    def test_expired_between_sweeps_is_not_delivered(self) -> None:
        self.request(lease=300)
        self.clock.advance(300)
        self.successResultOf(self.hub.publish(ATOM))
        self.assertEqual(self.posts(), [])
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))

    def test_renewal_extends(self) -> None:
        self.request(lease=300)
        self.clock.advance(200)
        self.request(lease=300)
        self.clock.advance(200)
        self.assertIsNotNone(self.hub.subscription(ATOM, CALLBACK))


class PersistenceTests(HubTestCase):
    def test_subscriptions_survive(self) -> None:
        self.request(lease=3600, secret=b"kept")
        before = self.hub.subscription(ATOM, CALLBACK)
        self.restart()
        self.assertEqual(self.hub.subscription(ATOM, CALLBACK), before)

    def test_removal_survives(self) -> None:
        self.request()
        self.request("unsubscribe")
        self.restart()
        self.assertEqual(self.hub.subscriptions(), [])

    def test_pending_verification_resumes(self) -> None:
        """
        A request accepted but not verified when the hub stopped is
        verified at the next start, with a new challenge.
        """
        self.client.hang.add(CALLBACK)
        self.request(lease=7200, secret=b"s")
        self.assertEqual(len(self.hub.pending()), 1)
        self.client.hang.clear()
        self.restart()
        self.assertEqual(self.hub.pending(), [])
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(
            (subscription.lease_seconds, subscription.secret), (7200, b"s")
        )
        first, second = self.client.calls[0][1], self.client.calls[1][1]
        self.assertNotEqual(first, second)  # fresh challenge

    def test_stop_during_verification_keeps_the_request(self) -> None:
        """
        However the cancelled request fails (here as the agent's
        C{ResponseNeverReceived}), the request is kept for the next start.
        """

        def never_received(d: Deferred[Any]) -> None:
            d.errback(ResponseNeverReceived([Failure(defer.CancelledError())]))

        client = Controlled()
        client.canceller = never_received
        self.restart(client)
        self.successResultOf(self.hub.accept(HubRequest("subscribe", ATOM, CALLBACK)))
        self.successResultOf(self.hub.stopService())
        self.hub = self.start_hub()
        self.assertIsNotNone(self.hub.subscription(ATOM, CALLBACK))

    def test_catch_up(self) -> None:
        """
        A subscriber whose last acknowledged content is not the current
        one gets the current content after start-up; one up to date does
        not.
        """
        self.request()
        self.request(topic=JSON_FEED, callback="https://s.example/json")
        self.successResultOf(self.hub.stopService())
        self.topics.change(ATOM, b"<feed>while down</feed>")
        self.hub = self.start_hub()
        (delivery,) = self.posts()
        self.assertEqual(delivery.body, b"<feed>while down</feed>")
        self.assertEqual(self.posts("/json"), [])
        self.restart()
        self.assertEqual(len(self.posts()), 1)

    def test_failures_survive(self) -> None:
        self.request()
        self.subscriber.delivery_status["/hook"] = 500
        self.topics.change(ATOM, b"<feed>new</feed>")
        self.successResultOf(self.hub.publish(ATOM))
        self.restart()
        # the catch-up attempt failed too: two in a row
        subscription = self.hub.subscription(ATOM, CALLBACK)
        assert subscription is not None
        self.assertEqual(subscription.failures, 2)
        self.clock.advance(60)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))

    def test_expired_while_stopped(self) -> None:
        self.request(lease=300)
        self.successResultOf(self.hub.stopService())
        self.clock.advance(301)
        self.hub = self.start_hub()
        self.assertEqual(self.hub.subscriptions(), [])

    def test_stop_cancels_outbound_requests(self) -> None:
        self.request()
        self.client.hang.add(CALLBACK)
        self.topics.change(ATOM, b"<feed>2</feed>")
        publishing = self.hub.publish(ATOM)
        self.successResultOf(self.hub.stopService())
        self.successResultOf(publishing)
        self.assertEqual(self.clock.getDelayedCalls(), [])


class ResourceTests(HubTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.http = StubTreq(HubResource(self.hub))

    def post(self, body: bytes, content_type: bytes = FORM) -> tuple[int, bytes, Any]:
        response = self.successResultOf(
            self.http.post(HUB, data=body, headers={b"Content-Type": [content_type]})
        )
        return response.code, self.successResultOf(response.content()), response

    def test_accepted(self) -> None:
        """202 with a short text, and verification after the answer."""
        code, body, response = self.post(
            form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        )
        self.assertEqual(code, 202)
        self.assertTrue(body.startswith(b"Accepted"))
        self.assertEqual(
            response.headers.getRawHeaders(b"content-type"),
            [b"text/plain; charset=utf-8"],
        )
        self.assertEqual(len(self.gets()), 1)

    def test_answer_does_not_depend_on_verification(self) -> None:
        self.subscriber.verify_answer["/hook"] = lambda c: (404, b"")
        code, body, _ = self.post(
            form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        )
        self.assertEqual(code, 202)
        self.assertIsNone(self.hub.subscription(ATOM, CALLBACK))

    def test_bad_request(self) -> None:
        code, body, response = self.post(form(hub_mode="subscribe", hub_topic=ATOM))
        self.assertEqual((code, body), (400, b"hub.callback is missing.\n"))
        self.assertEqual(
            response.headers.getRawHeaders(b"content-type"),
            [b"text/plain; charset=utf-8"],
        )
        self.assertEqual(self.subscriber.seen, [])

    def test_unsupported_media_type(self) -> None:
        code, _, _ = self.post(b'{"hub.mode": "subscribe"}', b"application/json")
        self.assertEqual(code, 415)

    def test_too_large(self) -> None:
        request = DummyRequest([b""])
        request.method = b"POST"
        request.too_large = True  # type: ignore[attr-defined]
        body = HubResource(self.hub).render(request)
        self.assertEqual(request.responseCode, 413)
        self.assertIn(b"too large", body)

    def test_too_many_for_a_host(self) -> None:
        self.restart(max_per_host=1)
        self.http = StubTreq(HubResource(self.hub))
        self.post(form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK))
        code, body, _ = self.post(
            form(hub_mode="subscribe", hub_topic=REVIEWS, hub_callback=CALLBACK)
        )
        self.assertEqual(code, 403)
        self.assertIn(b"subscriber.example", body)

    def test_not_running(self) -> None:
        self.successResultOf(self.hub.stopService())
        code, _, response = self.post(
            form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK)
        )
        self.assertEqual(code, 503)

    def test_other_methods(self) -> None:
        for method in ("GET", "PUT", "DELETE", "PATCH", "OPTIONS"):
            response = self.successResultOf(self.http.request(method, HUB))
            self.assertEqual(response.code, 405, method)
            self.assertEqual(response.headers.getRawHeaders(b"allow"), [b"POST"])
            document = self.successResultOf(response.json())
            self.assertEqual(document["error"], "method_not_allowed")
        head = self.successResultOf(self.http.head(HUB))
        self.assertEqual(head.code, 405)


class SecretTests(HubTestCase):
    def test_secret_never_logged(self) -> None:
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        self.request(secret=b"TOPSECRET-123")
        self.subscriber.delivery_status["/hook"] = 500
        self.successResultOf(self.hub.publish(ATOM))
        self.clock.advance(30)
        self.clock.advance(60)
        self.assertTrue(events)
        for event in events:
            self.assertNotIn("TOPSECRET", formatEvent(event))
            self.assertNotIn("TOPSECRET", repr(event))


class GuardedHubTests(HubTestCase):
    """The hub with the real guarded client: refused callbacks are never dialled."""

    def test_refused_callback_never_contacted(self) -> None:
        reactor = MemoryReactorClock()
        resolver = StubResolver({"internal.example": ["10.0.0.8"]})
        client = GuardedClient(reactor, OutboundPolicy(), resolver)
        self.restart(client)
        for callback in (
            "https://internal.example/hook",
            "https://127.0.0.1/hook",
            "https://[::ffff:169.254.169.254]/hook",
        ):
            self.request(callback=callback)
        self.assertEqual(reactor.tcpClients, [])
        self.assertEqual(self.hub.subscriptions(), [])
        self.assertEqual(resolver.asked, ["internal.example"])
