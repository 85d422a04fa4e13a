"""
The WebSub hub, unit by unit: request parsing, the resource, verification,
distribution, retries, leases and persistence, driven with
C{treq.testing.StubTreq} subscribers, a C{task.Clock} and SQLite run in the
calling thread.
"""

from __future__ import annotations

import hashlib
import hmac
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from attrs import frozen
from treq.testing import StubTreq
from twisted.internet import defer, reactor, task
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, formatEvent, globalLogPublisher
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase
from twisted.web._newclient import ResponseNeverReceived
from twisted.web.test.requesthelper import DummyRequest

from reviewsd.websub import (
    BadHubRequest,
    Hub,
    HubConfig,
    HubRequest,
    HubResource,
    HubUnavailable,
    TooManySubscriptions,
    parse_hub_request,
)
from reviewsd.websub import store as store_module
from reviewsd.websub.hub import redact, signature, with_query
from reviewsd.websub.outbound import (
    AddressRefused,
    GuardedClient,
    OutboundPolicy,
    OutboundTimeout,
)
from reviewsd.websub.quota import address_scope, callback_scope, registrable_domain
from reviewsd.websub.requests import normalize_url
from reviewsd.websub.store import SCHEMA_VERSION, HubStore, SynchronousPool
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

    def test_bracketed_hosts_are_ipv6(self) -> None:
        """A bracketed host that is no IPv6 address is a 400, not a 500 or a name."""
        for callback in ("https://[zz]/cb", "https://[v1.x]/cb", "https://[::1/cb"):
            with self.assertRaises(BadHubRequest, msg=callback) as caught:
                parse(form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=callback))
            self.assertIn("valid host", str(caught.exception))
        request = parse(
            form(
                hub_mode="subscribe",
                hub_topic=ATOM,
                hub_callback="https://[2001:db8::1]/cb",
            )
        )
        self.assertEqual(request.callback, "https://[2001:db8::1]/cb")

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


class QuotaTests(SynchronousTestCase):
    """What the per-server cap counts a callback against."""

    def test_registrable_domain(self) -> None:
        for name, domain in [
            ("example.com", "example.com"),
            ("a.b.example.com", "example.com"),
            ("WWW.Example.COM.", "example.com"),
            ("shop.example.co.uk", "example.co.uk"),
            ("example.co.uk", "example.co.uk"),
            ("x.example.com.au", "example.com.au"),
            ("a.example.ne.jp", "example.ne.jp"),
            ("a.co.example", "co.example"),  # not a country code: two labels
            ("a.b.io", "b.io"),
            ("localhost", "localhost"),
        ]:
            self.assertEqual(registrable_domain(name), domain, name)

    def test_address_scope(self) -> None:
        for address, scope in [
            ("127.0.0.1", "loopback addresses"),
            ("127.9.9.9", "loopback addresses"),
            ("::1", "loopback addresses"),
            ("::ffff:127.0.0.2", "loopback addresses"),
            ("8.8.8.8", "the address 8.8.8.8"),
            ("::ffff:8.8.8.8", "the address 8.8.8.8"),
            ("64:ff9b::808:808", "the address 8.8.8.8"),
            ("2002:808:808::1", "the address 8.8.8.8"),
            ("10.0.0.1", "the address 10.0.0.1"),
            ("2606:4700::1111", "the network 2606:4700::/64"),
            ("2606:4700::ffff:1:2", "the network 2606:4700::/64"),
            ("fe80::1%eth0", "the network fe80::/64"),
        ]:
            self.assertEqual(address_scope(address), scope, address)

    def test_callback_scope(self) -> None:
        for callback, scope in [
            ("https://hooks.example.com:8443/a?b=c", "the domain example.com"),
            ("https://[::1]:8443/", "loopback addresses"),
            ("https://2130706433/", "loopback addresses"),
            ("https://93.184.215.14/", "the address 93.184.215.14"),
        ]:
            self.assertEqual(callback_scope(callback), scope, callback)


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
    URLs told to fail with an exception or to hang; answers to URLs in
    C{addresses} say they came from that address, as the guarded client's
    do.
    """

    def __init__(self, stub: StubTreq) -> None:
        self._stub = stub
        self.errors: dict[str, Exception] = {}
        self.hang: set[str] = set()
        self.addresses: dict[str, str] = {}
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
        d: Deferred[Any] = getattr(self._stub, method.lower())(url, **kwargs)
        reached = self._match(url, self.addresses)
        if reached is not None:

            def from_address(response: Any) -> Any:
                response.address = self.addresses[reached]
                return response

            d.addCallback(from_address)
        return d

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
            store=HubStore.synchronous(self.db),
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


class ServerCapTests(HubTestCase):
    """
    The per-server cap counts servers, not host names: addresses of one
    server, names of one registrable domain, and names whose verification
    reached one address; and there is a cap on the whole hub.
    """

    def refused(self, callback: str, hub: Hub | None = None) -> str:
        failure = self.failureResultOf(
            (hub or self.hub).accept(HubRequest("subscribe", ATOM, callback)),
            TooManySubscriptions,
        )
        return str(failure.value)

    def test_loopback_addresses_are_one_server(self) -> None:
        """127.0.0.1, 127.0.0.2, [::1] and [::ffff:127.0.0.1] share a cap."""
        self.restart(max_per_host=2)
        self.request(callback="https://127.0.0.1/a")
        self.request(callback="https://127.0.0.2/b")
        for callback in (
            "https://127.0.0.3/c",
            "https://[::1]/d",
            "https://[::ffff:127.0.0.1]/e",
            "https://2130706433/f",
        ):
            self.assertIn("loopback addresses", self.refused(callback))
        # another server is not held back
        self.request(callback="https://8.8.8.8/a")
        self.assertEqual(len(self.hub.subscriptions()), 3)

    def test_an_address_in_any_form(self) -> None:
        """An IPv4 address counts the same in its IPv6 forms; IPv6 by /64."""
        self.restart(max_per_host=1)
        self.request(callback="https://8.8.8.8/a")
        self.assertIn("8.8.8.8", self.refused("https://[::ffff:8.8.8.8]/b"))
        self.client.hang.add("https://[2606:4700::1]/")  # pending counts too
        self.request(callback="https://[2606:4700::1]/a")
        self.assertIn("2606:4700::/64", self.refused("https://[2606:4700::ffff:2]/b"))
        self.client.hang.add("https://[2606:4700:0:1::1]/")
        self.request(callback="https://[2606:4700:0:1::1]/a")
        self.assertEqual(len(self.hub.pending()), 2)

    def test_names_count_by_registrable_domain(self) -> None:
        """Wildcard DNS gives no more room: every name under a domain shares it."""
        self.restart(max_per_host=2)
        self.request(callback="https://a.hooks.example/1")
        self.request(callback="https://b.hooks.example/1")
        message = self.refused("https://c.d.hooks.example/1")
        self.assertIn("the domain hooks.example", message)
        self.assertIn("2 subscriptions", message)
        self.request(callback="https://www.shop.co.uk/1")
        self.request(callback="https://shop.co.uk/2")
        self.assertIn("shop.co.uk", self.refused("https://x.shop.co.uk/3"))
        self.request(callback="https://other.co.uk/1")

    def test_names_of_one_server_are_counted_once_verified(self) -> None:
        """
        Names under different domains that reach one address hold its
        server's share: a verification reaching a full server is denied.
        """
        self.restart(max_per_host=2)
        for n in range(4):
            self.client.addresses[f"https://name{n}.example/"] = "8.8.4.4"
            self.request(callback=f"https://name{n}.example/hook")
        self.assertEqual(
            sorted(s.callback for s in self.hub.subscriptions()),
            ["https://name0.example/hook", "https://name1.example/hook"],
        )
        self.assertEqual(self.hub.pending(), [])
        denials = [g for g in self.gets("/hook") if g.param("hub.mode") == "denied"]
        self.assertEqual(len(denials), 2)
        self.assertIn("the address 8.8.4.4", denials[0].param("hub.reason") or "")
        # a literal of that server is refused at once; renewals keep their place
        self.assertIn("8.8.4.4", self.refused("https://8.8.4.4/x"))
        self.request(callback="https://name0.example/hook", lease=3600)
        subscription = self.hub.subscription(ATOM, "https://name0.example/hook")
        assert subscription is not None
        self.assertEqual(subscription.lease_seconds, 3600)

    def test_the_server_survives_a_restart(self) -> None:
        """The address a subscription was verified at is stored with it."""
        self.restart(max_per_host=1)
        self.client.addresses["https://one.example/"] = "9.9.9.9"
        self.request(callback="https://one.example/hook")
        hub = self.restart(max_per_host=1)
        subscription = hub.subscription(ATOM, "https://one.example/hook")
        assert subscription is not None
        self.assertEqual(subscription.address, "9.9.9.9")
        self.assertIn("9.9.9.9", self.refused("https://9.9.9.9/x", hub))

    def test_overall_cap(self) -> None:
        hub = self.restart(max_subscriptions=3)
        for n in range(2):
            self.request(callback=f"https://s{n}.example/hook")
        self.client.hang.add("https://pending.example/")
        self.request(callback="https://pending.example/hook")
        message = self.refused("https://s9.example/hook", hub)
        self.assertIn("This hub already holds 3 subscriptions", message)
        # renewals are not new; a removed subscription frees its place
        self.request(callback="https://s0.example/hook")
        self.request("unsubscribe", callback="https://s1.example/hook")
        self.request(callback="https://s9.example/hook")
        self.assertIsNotNone(hub.subscription(ATOM, "https://s9.example/hook"))

    def test_counts_follow_removals(self) -> None:
        """Every way a subscription or request ends gives its place back."""
        self.restart(max_per_host=1)
        self.subscriber.verify_answer["/no"] = lambda c: (404, b"")
        self.request(callback="https://a.example/no")  # not verified
        self.request(callback="https://a.example/yes")
        self.request("unsubscribe", callback="https://a.example/yes")
        self.request(callback="https://a.example/again", lease=300)
        self.clock.advance(400)  # lease expired
        self.request(callback="https://a.example/last")
        self.assertEqual(
            [s.callback for s in self.hub.subscriptions()],
            ["https://a.example/last"],
        )


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

    def test_publish_logs_the_subscribers_in_words(self) -> None:
        """One subscriber is a subscriber, not "1 subscribers"."""
        self.request()
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        self.successResultOf(self.hub.publish(ATOM))
        lines = [formatEvent(e) for e in events if "subscribers" in e]
        self.assertEqual(lines, [f"Publishing {ATOM} to 1 WebSub subscriber"])

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


OLD_SCHEMA = """
CREATE TABLE subscriptions (
    topic TEXT NOT NULL, callback TEXT NOT NULL, lease_seconds INTEGER NOT NULL,
    expires REAL NOT NULL, secret BLOB, failures INTEGER NOT NULL DEFAULT 0,
    acknowledged BLOB, PRIMARY KEY (topic, callback));
CREATE TABLE verifications (
    topic TEXT NOT NULL, callback TEXT NOT NULL, id TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('subscribe', 'unsubscribe')),
    lease_seconds INTEGER, secret BLOB, requested REAL NOT NULL,
    PRIMARY KEY (topic, callback));
"""
"""The schema of the first stores (version 1), before addresses were kept."""


def old_store(path: Path, subscriptions: int, version: int = 1) -> None:
    """A version 1 store holding C{subscriptions} subscriptions."""
    connection = sqlite3.connect(path)
    connection.executescript(OLD_SCHEMA)
    connection.executemany(
        "INSERT INTO subscriptions VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (ATOM, f"https://s{n}.example/", 3600, 4e9, None, 0, None)
            for n in range(subscriptions)
        ],
    )
    connection.execute(f"PRAGMA user_version = {version}")
    connection.commit()
    connection.close()


class StoreFileTests(TestCase):
    """
    The store's file, with the real reactor and worker threads: a new one
    is whole from the start, an older one is brought up to date, and one
    that is not a usable store is refused and left as it is, with the hub
    unavailable, saying why, and the rest of the service unaffected.
    """

    def setUp(self) -> None:
        directory = Path(self.mktemp()).resolve()
        directory.mkdir(parents=True)
        self.path = directory / "websub.sqlite3"
        self.events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(self.events.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def hub(self) -> Hub:
        hub = Hub(
            HubConfig(hub_url=HUB, topics=TOPICS),
            Scripted(StubTreq(Subscriber())),
            store_path=self.path,
            topics=FakeTopics(),
            clock=reactor,
        )
        hub.startService()
        self.addCleanup(lambda: hub.stopService() if hub.running else None)
        return hub

    @defer.inlineCallbacks
    def refused(self, problem: str) -> Any:
        """Start a hub on the file: it is unavailable, saying C{problem}."""
        before = self.path.read_bytes() if self.path.is_file() else None
        hub = self.hub()
        failure = yield self.assertFailure(hub.ready(), HubUnavailable)
        self.assertEqual(hub.state, "unavailable")
        assert hub.problem is not None
        self.assertIn(str(self.path), hub.problem)
        self.assertIn(problem, hub.problem)
        self.assertIn(problem, str(failure))
        [error] = [e for e in self.events if e.get("log_level") == LogLevel.error]
        self.assertEqual(error["path"], str(self.path))
        self.assertIn(problem, formatEvent(error))
        self.assertIn("503", formatEvent(error))
        self.assertNotIn("log_failure", error)  # one line, no traceback
        accepted = hub.accept(HubRequest("subscribe", ATOM, CALLBACK))
        yield self.assertFailure(accepted, HubUnavailable)
        if before is not None:
            self.assertEqual(self.path.read_bytes(), before, "the file was changed")
        return hub

    @defer.inlineCallbacks
    def test_new_store_is_whole(self) -> Any:
        """
        Right after start, the main file alone (no write-ahead log: what a
        crash or a careless copy may leave) holds the schema.
        """
        hub = self.hub()
        yield hub.ready()
        self.assertEqual(hub.state, "up")
        copy = self.path.with_name("copy.sqlite3")
        shutil.copyfile(self.path, copy)
        connection = sqlite3.connect(copy)
        self.addCleanup(connection.close)
        tables = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        self.assertEqual(tables, [("subscriptions",), ("verifications",)])
        self.assertEqual(
            connection.execute("PRAGMA user_version").fetchone(), (SCHEMA_VERSION,)
        )
        self.assertEqual(self.path.stat().st_mode & 0o777, 0o600)
        self.assertEqual(list(self.path.parent.glob(".*.new")), [])

    def test_empty_file(self) -> Any:
        """A zero-length file is refused: never an empty hub in its place."""
        self.path.touch()
        return self.refused("is empty (0 bytes)")

    def test_not_sqlite(self) -> Any:
        self.path.write_bytes(b"garbage " * 1000)
        return self.refused("cannot be read as a SQLite database")

    def test_a_directory(self) -> Any:
        self.path.mkdir()
        return self.refused("is a directory")

    def test_other_tables(self) -> Any:
        connection = sqlite3.connect(self.path)
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.commit()
        connection.close()
        return self.refused("is not a WebSub hub store of a known schema")

    def test_no_tables(self) -> Any:
        connection = sqlite3.connect(self.path)
        connection.execute("PRAGMA user_version = 7")
        connection.execute("PRAGMA user_version = 0")
        connection.commit()
        connection.close()
        return self.refused("holds no tables")

    def test_newer_schema(self) -> Any:
        old_store(self.path, 1, version=SCHEMA_VERSION + 1)
        return self.refused("was written by a newer reviewsd")

    @defer.inlineCallbacks
    def test_older_schema_brought_up_to_date(self) -> Any:
        """The subscriptions of an older store are kept, and stored anew."""
        old_store(self.path, 25)
        hub = self.hub()
        yield hub.ready()
        self.assertEqual(len(hub.subscriptions()), 25)
        yield hub.stopService()
        connection = sqlite3.connect(self.path)
        self.addCleanup(connection.close)
        self.assertEqual(
            connection.execute("PRAGMA user_version").fetchone(), (SCHEMA_VERSION,)
        )
        columns = [r[1] for r in connection.execute("PRAGMA table_info(subscriptions)")]
        self.assertEqual(columns[-1], "address")

    def test_log_without_its_store(self) -> Any:
        """A write-ahead log without its main file may hold subscriptions."""
        Path(f"{self.path}-wal").write_bytes(b"x" * 100)
        return self.refused("is missing, but its write-ahead log")


class StorePreparationTests(SynchronousTestCase):
    """Creating the file: a crash part-way leaves no file at all."""

    def test_crash_before_the_rename(self) -> None:
        directory = Path(self.mktemp())
        directory.mkdir()
        path = directory / "websub.sqlite3"

        def crash(source: Any, destination: Any) -> None:
            raise OSError("the power went out")

        self.patch(store_module.os, "rename", crash)
        self.assertRaises(OSError, store_module.prepare, path)
        self.assertEqual(list(directory.iterdir()), [])

    def test_write_failures_make_the_hub_unavailable(self) -> None:
        """A commit that fails shows in the hub's state until one succeeds."""
        directory = Path(self.mktemp())
        directory.mkdir()
        pools: list[Flaky] = []

        def connect(path: Path) -> Flaky:
            pools.append(Flaky(SynchronousPool(path)))
            return pools[-1]

        store = HubStore(directory / "websub.sqlite3", connect, store_module._run_here)
        clock = task.Clock()
        hub = Hub(
            HubConfig(hub_url=HUB, topics=TOPICS),
            Scripted(StubTreq(Subscriber())),
            topics=FakeTopics(),
            clock=clock,
            store=store,
        )
        hub.startService()
        self.addCleanup(hub.stopService)
        self.assertEqual(hub.state, "up")
        pools[0].broken = True
        self.failureResultOf(hub.accept(HubRequest("subscribe", ATOM, CALLBACK)))
        self.assertEqual(hub.state, "unavailable")
        self.assertIn("cannot write its store", hub.problem or "")
        self.assertIn(str(directory / "websub.sqlite3"), hub.problem or "")
        self.flushLoggedErrors(sqlite3.OperationalError)
        pools[0].broken = False
        self.successResultOf(hub.accept(HubRequest("subscribe", ATOM, CALLBACK)))
        self.assertEqual((hub.state, hub.problem), ("up", None))


class Flaky:
    """A pool whose writes fail while C{broken}."""

    def __init__(self, pool: SynchronousPool) -> None:
        self._pool = pool
        self.broken = False

    def runInteraction(self, interaction: Any, *args: Any) -> Deferred[Any]:
        if self.broken:
            return defer.fail(sqlite3.OperationalError("disk I/O error"))
        return self._pool.runInteraction(interaction, *args)

    def close(self) -> None:
        self._pool.close()


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

    def test_too_many_for_the_hub(self) -> None:
        self.restart(max_subscriptions=1)
        self.http = StubTreq(HubResource(self.hub))
        self.post(form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=CALLBACK))
        code, body, _ = self.post(
            form(
                hub_mode="subscribe",
                hub_topic=ATOM,
                hub_callback="https://other.example/",
            )
        )
        self.assertEqual(code, 403)
        self.assertIn(b"This hub already holds 1 subscriptions", body)

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


class RefusedAddressTests(HubTestCase):
    """
    A callback on an address the outbound client would refuse gets 400 at
    once, saying why: the client's address policy decides, so there is one
    definition of refused. Names are still accepted, and judged when looked
    up.
    """

    def resource(self, **policy: Any) -> StubTreq:
        reactor = MemoryReactorClock()
        self.resolver = StubResolver({"internal.example": ["10.0.0.8"]})
        client = GuardedClient(reactor, OutboundPolicy(**policy), self.resolver)
        self.restart(client)
        return StubTreq(HubResource(self.hub))

    def post(self, http: StubTreq, callback: str) -> tuple[int, bytes]:
        response = self.successResultOf(
            http.post(
                HUB,
                data=form(hub_mode="subscribe", hub_topic=ATOM, hub_callback=callback),
                headers={b"Content-Type": [FORM]},
            )
        )
        return response.code, self.successResultOf(response.content())

    def test_refused_classes(self) -> None:
        http = self.resource()
        for callback, named in [
            ("https://127.0.0.1/hook", b"loopback"),
            ("https://127.0.0.2:8443/hook", b"loopback"),
            ("https://10.1.2.3/hook", b"private"),
            ("https://192.168.0.1/hook", b"private"),
            ("https://169.254.169.254/latest/meta-data/", b"cloud metadata"),
            ("https://169.254.1.1/", b"link-local"),
            ("https://0.0.0.0/", b"unspecified"),
            ("https://224.0.0.1/", b"multicast"),
            ("https://240.0.0.1/", b"reserved"),
            ("https://[::1]/hook", b"loopback"),
            ("https://[fe80::1]/hook", b"link-local"),
            ("https://[fd00::1]/hook", b"unique-local"),
            ("https://[::ffff:10.0.0.1]/hook", b"IPv4-mapped private"),
            ("https://[::ffff:169.254.169.254]/", b"IPv4-mapped cloud metadata"),
            ("https://2130706433/hook", b"loopback"),
            ("https://0x7f.1/hook", b"loopback"),
        ]:
            code, body = self.post(http, callback)
            self.assertEqual(code, 400, callback)
            self.assertIn(b"(" + named + b")", body, callback)
            self.assertIn(b"never calls back", body)
        self.assertEqual(self.hub.pending(), [])
        self.assertEqual(self.resolver.asked, [])

    def test_names_and_public_addresses_are_accepted(self) -> None:
        http = self.resource()
        self.assertEqual(self.post(http, "https://internal.example/hook")[0], 202)
        self.assertEqual(self.post(http, "https://8.8.8.8/hook")[0], 202)

    def test_allow_private(self) -> None:
        """The daemon's --allow-private-callbacks admits loopback, not metadata."""
        http = self.resource(allow_private=True)
        self.assertEqual(self.post(http, "https://127.0.0.1/hook")[0], 202)
        self.assertEqual(self.post(http, "https://[::ffff:10.0.0.1]/hook")[0], 202)
        code, body = self.post(http, "https://169.254.169.254/")
        self.assertEqual(code, 400)
        self.assertIn(b"cloud metadata", body)


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
