"""
What one client may cost: its budget of search and since answers (429 with
Retry-After past it, and its connection left unread until its turn), who a
client is (behind a proxy on this host too), and the connections one
address may hold; in memory, and on the real daemon.
"""

from __future__ import annotations

import socket
from typing import Any

from twisted.internet import defer
from twisted.internet.address import IPv4Address, UNIXAddress
from twisted.internet.task import Clock
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.links import HUB_PATH, MCP_PATH
from reviewsd.web.budget import (
    ClientBudget,
    ConnectionCount,
    client_of,
    peer_host,
)
from reviewsd.web.site import make_site
from tests.support.daemon import DaemonTestCase, free_port
from tests.support.site import Answer, Connection, SiteTestCase


class _Asked:
    """What L{client_of} reads of a request: its peer and its headers."""

    def __init__(self, peer: Any, *forwarded: str) -> None:
        self._peer = peer
        self.requestHeaders = Headers()
        if forwarded:
            self.requestHeaders.setRawHeaders(b"x-forwarded-for", list(forwarded))

    def getClientAddress(self) -> Any:
        return self._peer


def _peer(host: str) -> IPv4Address:
    return IPv4Address("TCP", host, 5555)


class ClientTests(SynchronousTestCase):
    def test_a_client_is_its_address(self) -> None:
        self.assertEqual(client_of(_Asked(_peer("203.0.113.7"))), "203.0.113.7")

    def test_ipv6_counts_by_its_64(self) -> None:
        one = client_of(_Asked(_peer("2001:db8:1:2::7")))
        other = client_of(_Asked(_peer("2001:db8:1:2:ffff::1")))
        self.assertEqual(one, "2001:db8:1:2::/64")
        self.assertEqual(one, other)
        self.assertNotEqual(one, client_of(_Asked(_peer("2001:db8:1:3::7"))))
        self.assertEqual(
            client_of(_Asked(_peer("::ffff:198.51.100.4"))), "198.51.100.4"
        )

    def test_behind_a_proxy_on_this_host(self) -> None:
        """The last X-Forwarded-For address: the one the proxy itself added."""
        proxied = _Asked(_peer("127.0.0.1"), "10.0.0.1, 198.51.100.4")
        self.assertEqual(client_of(proxied), "198.51.100.4")
        unix = _Asked(UNIXAddress(b"/run/reviewsd.sock"), "a", "2001:db8::9")
        self.assertEqual(client_of(unix), "2001:db8::/64")
        self.assertEqual(client_of(_Asked(_peer("127.0.0.1"))), "127.0.0.1")

    def test_others_cannot_claim_an_address(self) -> None:
        spoofed = _Asked(_peer("203.0.113.7"), "198.51.100.4")
        self.assertEqual(client_of(spoofed), "203.0.113.7")

    def test_loopback_connections_are_not_counted(self) -> None:
        self.assertIsNone(peer_host(_peer("127.0.0.1")))
        self.assertIsNone(peer_host(IPv4Address("TCP", "::1", 1)))
        self.assertEqual(peer_host(_peer("203.0.113.7")), "203.0.113.7")


class ClientBudgetTests(SynchronousTestCase):
    def test_burst_then_rate(self) -> None:
        clock = Clock()
        budget = ClientBudget(clock, rate=4, burst=3)
        self.assertEqual([budget.wait("a") for _ in range(3)], [0.0] * 3)
        self.assertAlmostEqual(budget.wait("a"), 0.25)
        self.assertEqual(budget.wait("b"), 0.0)  # each client its own
        clock.advance(0.25)
        self.assertEqual(budget.wait("a"), 0.0)
        clock.advance(10)
        self.assertEqual([budget.wait("a") for _ in range(3)], [0.0] * 3)
        self.assertGreater(budget.wait("a"), 0)

    def test_refused_requests_get_turns_apart(self) -> None:
        """Connections told to wait come back one by one, not at once."""
        clock = Clock()
        budget = ClientBudget(clock, rate=10, burst=1)
        budget.wait("a")
        waits = [budget.wait("a") for _ in range(4)]
        for got, expected in zip(waits, [0.1, 0.2, 0.3, 0.4], strict=True):
            self.assertAlmostEqual(got, expected)
        clock.advance(0.1)
        self.assertEqual(budget.wait("a"), 0.0)

    def test_memory_is_bounded(self) -> None:
        clock = Clock()
        budget = ClientBudget(clock, rate=1, burst=1, clients=3)
        for n in range(10):
            budget.wait(f"10.0.0.{n}")
        self.assertEqual(len(budget._buckets), 3)
        # the client seen last keeps its (empty) bucket
        self.assertGreater(budget.wait("10.0.0.9"), 0)

    def test_connection_count(self) -> None:
        count = ConnectionCount(Clock(), limit=2)
        self.assertTrue(count.add("a"))
        self.assertTrue(count.add("a"))
        self.assertFalse(count.add("a"))
        self.assertTrue(count.add("b"))
        count.discard("a")
        self.assertTrue(count.add("a"))


class SiteBudgetTests(SiteTestCase):
    """The budget as a client meets it, on the site the daemon assembles."""

    def setUp(self) -> None:
        super().setUp()
        self.site = make_site(
            self.holder,
            self.clock,
            {MCP_PATH: self.mcp, HUB_PATH: self.hub},
            budget=ClientBudget(self.clock, rate=2, burst=3),
            connection_limit=ConnectionCount(self.clock, limit=2),
        )
        self.site.observers.append(self.metrics.observe_request)
        self.metrics.watch(data=self.holder, sessions=self.sessions, sites=[self.site])

    def test_a_cache_busting_client_is_told_to_wait(self) -> None:
        buster = Connection(self.site, "198.51.100.4")
        days = [f"2024-0{n}-01" for n in range(1, 8)]
        codes = [
            buster.request("GET", f"/api/reviews/since/{d}").code for d in days[:3]
        ]
        self.assertEqual(codes, [200, 200, 200])
        refused = buster.request("GET", f"/api/reviews/since/{days[3]}")
        self.assertEqual(refused.code, 429)
        self.assertEqual(refused.headers["retry-after"], "1")
        self.assertEqual(refused.json["error"], "rate_limited")
        self.assertEqual(refused.json["retry_after"], 1)
        self.assertIn("2 search and since answers a second", refused.json["message"])
        self.assertEqual(
            self.sample(
                "reviewsd_http_requests_total",
                route="/api/reviews/since/{date}",
                status="429",
            ),
            1.0,
        )

        # the connection is not read until its turn: asking again at once
        # gets nothing yet, then the answer
        buster.transport.clear()
        buster.send(
            f"GET /api/reviews/since/{days[4]} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
        self.assertEqual(buster.transport.value(), b"")
        self.clock.advance(0.5)
        self.assertEqual(Answer(buster.transport.value()).code, 200)

        # another client, and the documents of this one, are not held up
        other = Connection(self.site, "203.0.113.50")
        self.assertEqual(
            other.request("GET", f"/api/reviews/since/{days[5]}").code, 200
        )
        self.assertEqual(other.request("GET", "/api/reviews/search?rating=5").code, 200)
        second = Connection(self.site, "198.51.100.4")
        self.assertEqual(second.request("GET", "/reviews.json").code, 200)
        self.assertEqual(second.request("OPTIONS", "/api/reviews/search").code, 204)
        self.assertEqual(second.request("GET", "/api/reviews/search").code, 429)

    def test_over_budget_is_logged_sparingly(self) -> None:
        for _ in range(120):
            # a new connection each time: none waits for its turn
            connection = Connection(self.site, "198.51.100.4")
            connection.send(b"GET /api/reviews/search HTTP/1.1\r\nHost: x\r\n\r\n")
            connection.transport.loseConnection()
            self.clock.advance(0.1)
        said = [
            e
            for e in self.events
            if "search and since answers" in str(e.get("log_format"))
        ]
        self.assertTrue(said)
        self.assertLessEqual(len(said), 2)  # 12 seconds: one line per 10 at most
        self.assertEqual(said[0]["client"], "198.51.100.4")
        self.assertGreater(said[-1]["unsaid"], 10)

    def test_connections_per_address(self) -> None:
        held = [Connection(self.site, "198.51.100.4") for _ in range(2)]
        third = Connection(self.site, "198.51.100.4")
        answer = Answer(third.transport.value())
        self.assertEqual(answer.code, 503)
        self.assertEqual(answer.json["error"], "too_many_connections")
        self.assertFalse(third.transport.connected)
        # others, and loopback peers (a proxy in front), are not held back
        self.assertEqual(
            Connection(self.site, "203.0.113.50").request("GET", "/reviews.json").code,
            200,
        )
        proxies = [Connection(self.site, "127.0.0.1") for _ in range(5)]
        self.assertEqual(proxies[-1].request("GET", "/reviews.json").code, 200)
        # a closed connection makes room
        held[0].transport.loseConnection()
        again = Connection(self.site, "198.51.100.4")
        self.assertEqual(again.request("GET", "/reviews.json").code, 200)


def _ask(port: int, paths: list[str]) -> list[bytes]:
    """Each path asked in turn on one connection; each answer's head."""
    heads = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        reader = s.makefile("rb")
        for path in paths:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            head = b""
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                head += line
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
            heads.append(head)
    return heads


class DaemonBudgetTests(DaemonTestCase):
    """The real daemon, over real sockets, with a small budget."""

    @defer.inlineCallbacks
    def test_busting_client_told_to_wait(self) -> Any:
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}",
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--computed-rate",
            "1",
            "--computed-burst",
            "3",
        )
        days = [f"/api/reviews/since/2024-0{n}-01" for n in range(1, 6)]
        heads = yield deferToThread(_ask, port, days)
        codes = [int(head.split()[1]) for head in heads]
        self.assertEqual(codes[:3], [200, 200, 200])
        self.assertEqual(codes[3], 429)
        self.assertIn(b"Retry-After: 1", heads[3])
        # the fifth waited for its turn on the same connection, and got it
        self.assertEqual(codes[4], 200)
        response = yield self.client.get(f"http://127.0.0.1:{port}/reviews.json")
        self.assertEqual(response.code, 200)
        yield response.content()
