"""
The guarded outbound client: the address policy, pinning the connection
to the checked address, timeouts, the concurrency bound (all on a memory
reactor with a stubbed resolver: nothing is looked up or contacted), and
TLS, redirects and the body cap against a real HTTPS server on loopback.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor
from twisted.internet.error import ConnectionRefusedError, DNSLookupError
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase
from twisted.web.resource import Resource
from twisted.web.server import Request

from reviewsd.websub.outbound import (
    AddressRefused,
    GuardedClient,
    OutboundPolicy,
    URLRefused,
    address_class,
    literal_address,
    literal_refusal,
    load_certificates,
    refusal,
)
from tests.support.dns import StubResolver
from tests.support.tls import TLSFiles, listen_https

REFUSED: dict[str, str] = {
    "127.0.0.1": "loopback",
    "127.255.0.9": "loopback",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.254": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "cloud metadata",
    "169.254.10.1": "link-local",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.254": "carrier-grade NAT",
    "0.0.0.0": "unspecified",
    "0.1.2.3": "unspecified",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "255.255.255.255": "broadcast",
    "240.0.0.1": "reserved",
    "192.0.0.8": "reserved",
    "192.0.2.1": "documentation",
    "198.51.100.7": "documentation",
    "203.0.113.9": "documentation",
    "198.18.0.1": "benchmarking",
    "::": "unspecified",
    "::1": "loopback",
    "fc00::1": "unique-local",
    "fd12:3456::1": "unique-local",
    "fd00:ec2::254": "cloud metadata",
    "fe80::1": "link-local",
    "fe80::1%1": "link-local",
    "fec0::1": "site-local",
    "ff02::1": "multicast",
    "2001:db8::1": "documentation",
    "3fff::1": "documentation",
    "100::1": "reserved",
    "2001::1": "reserved",
    "4000::1": "reserved",
    "::ffff:127.0.0.1": "IPv4-mapped loopback",
    "::ffff:10.0.0.1": "IPv4-mapped private",
    "::ffff:169.254.169.254": "IPv4-mapped cloud metadata",
    "::ffff:0:192.168.0.1": "IPv4-translated private",
    "::127.0.0.1": "IPv4-compatible",
    "::8.8.8.8": "IPv4-compatible",
    "64:ff9b::7f00:1": "NAT64 loopback",
    "64:ff9b::a9fe:a9fe": "NAT64 cloud metadata",
    "64:ff9b:1::1": "private",
    "2002:7f00:1::1": "6to4 loopback",
    "2002:c0a8:101::1": "6to4 private",
}

PUBLIC = [
    "8.8.8.8",
    "93.184.215.14",
    "1.1.1.1",
    "2606:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


class AddressClassTests(SynchronousTestCase):
    def test_refused_classes(self) -> None:
        """Each non-public address is named by its class."""
        for text, expected in REFUSED.items():
            address = ipaddress.ip_address(text)
            self.assertEqual((text, address_class(address)), (text, expected))
            self.assertEqual(refusal(address, allow_private=False), expected)

    def test_public(self) -> None:
        for text in PUBLIC:
            address = ipaddress.ip_address(text)
            self.assertIsNone(address_class(address), text)
            self.assertIsNone(refusal(address, allow_private=False), text)

    def test_allow_private(self) -> None:
        """
        C{allow_private} admits this host and private networks, never
        cloud metadata, multicast, unspecified or reserved addresses.
        """
        allowed = [
            "127.0.0.1",
            "::1",
            "10.0.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ]
        for text in allowed:
            self.assertIsNone(refusal(ipaddress.ip_address(text), True), text)
        still = {
            "169.254.169.254": "cloud metadata",
            "::ffff:169.254.169.254": "IPv4-mapped cloud metadata",
            "0.0.0.0": "unspecified",
            "::": "unspecified",
            "224.0.0.1": "multicast",
            "ff02::1": "multicast",
            "240.0.0.1": "reserved",
            "192.0.2.1": "documentation",
            "::127.0.0.1": "IPv4-compatible",
        }
        for text, expected in still.items():
            self.assertEqual(refusal(ipaddress.ip_address(text), True), expected)


class LiteralTests(SynchronousTestCase):
    """Hosts written as addresses, in every form the system resolver reads."""

    def test_literal_address(self) -> None:
        for host, expected in [
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]", "::1"),
            ("::ffff:10.0.0.1", "::ffff:a00:1"),
            ("fe80::1%eth0", "fe80::1%eth0"),
            ("2130706433", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0x7f.0.0.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("0xa9fea9fe", "169.254.169.254"),
        ]:
            self.assertEqual(str(literal_address(host)), expected, host)
        for name in (
            "example.com",
            "localhost",
            "1.2.3.4.5",
            "deadbeef.example",
            "1e2",
        ):
            self.assertIsNone(literal_address(name), name)

    def test_literal_refusal(self) -> None:
        """The same classes as for resolved addresses; names are not judged."""
        self.assertEqual(literal_refusal("127.0.0.1", False), "loopback")
        self.assertEqual(literal_refusal("2130706433", False), "loopback")
        self.assertEqual(
            literal_refusal("[::ffff:169.254.169.254]", True),
            "IPv4-mapped cloud metadata",
        )
        self.assertIsNone(literal_refusal("127.0.0.1", True))
        self.assertIsNone(literal_refusal("8.8.8.8", False))
        self.assertIsNone(literal_refusal("internal.example", False))
        client = GuardedClient(MemoryReactorClock(), OutboundPolicy())
        self.assertEqual(client.literal_refusal("10.0.0.1"), "private")


class GuardTests(SynchronousTestCase):
    """The guard on a memory reactor: what is refused is never contacted."""

    def setUp(self) -> None:
        self.reactor = MemoryReactorClock()
        self.resolver = StubResolver({})
        self.policy = OutboundPolicy(
            connect_timeout=5.0, total_timeout=20.0, concurrency=2
        )
        self.client = GuardedClient(self.reactor, self.policy, self.resolver)
        self.logged: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(self.logged.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.logged.append)

    def test_each_refused_class_is_never_contacted(self) -> None:
        """
        A name resolving to any refused address fails with
        L{AddressRefused} naming the class, and no connection is attempted.
        """
        for number, (text, expected) in enumerate(REFUSED.items()):
            host = f"callback{number}.example"
            self.resolver.answers[host] = [text]
            failure = self.failureResultOf(
                self.client.post(f"https://{host}/hook", data=b"x"), AddressRefused
            )
            self.assertEqual(failure.value.address_class, expected)
            self.assertEqual(failure.value.host, host)
        self.assertEqual(self.reactor.tcpClients, [])
        warnings = [e for e in self.logged if "address_class" in e]
        self.assertEqual([e["address_class"] for e in warnings], list(REFUSED.values()))

    def test_any_refused_address_refuses_the_name(self) -> None:
        """One bad address among good ones: the whole name is refused."""
        self.resolver.answers["mixed.example"] = ["8.8.8.8", "10.0.0.1"]
        self.failureResultOf(self.client.get("https://mixed.example/"), AddressRefused)
        self.assertEqual(self.reactor.tcpClients, [])

    def test_ip_literals(self) -> None:
        """Literal addresses are checked without a lookup."""
        for url in (
            "https://127.0.0.1/x",
            "https://[::1]:8443/x",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::ffff:10.0.0.1]/",
            "https://2130706433/",
            "https://0x7f.1/",
        ):
            self.failureResultOf(self.client.get(url), AddressRefused)
        self.assertEqual(self.resolver.asked, [])
        self.assertEqual(self.reactor.tcpClients, [])

    def test_refused_urls(self) -> None:
        for url in (
            "http://example.com/",
            "ftp://example.com/",
            "https://user:pw@example.com/",
            "https://example.com\u00e9/",
        ):
            self.failureResultOf(self.client.get(url), URLRefused)
        self.assertEqual(self.resolver.asked, [])

    def test_no_address(self) -> None:
        self.failureResultOf(
            self.client.get("https://nowhere.example/"), DNSLookupError
        )

    def test_connects_to_the_checked_address(self) -> None:
        """
        The connection goes to the address that was checked (the name is
        not looked up again), on the URL's port, with the connect timeout;
        an IPv4-mapped address is dialled as IPv4.
        """
        self.resolver.answers["hook.example"] = ["::ffff:8.8.8.8"]
        self.client.get("https://hook.example:8443/cb?x=1")
        ((host, port, _, timeout, _),) = self.reactor.tcpClients
        self.assertEqual((host, port, timeout), ("8.8.8.8", 8443, 5.0))
        self.assertEqual(self.resolver.asked, ["hook.example"])

    def test_next_address_after_a_refused_connection(self) -> None:
        self.resolver.answers["two.example"] = ["2606:4700::1111", "1.1.1.1"]
        self.client.get("https://two.example/")
        first = self.reactor.tcpClients[0]
        self.assertEqual(first[:2], ("2606:4700::1111", 443))
        first[2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
        self.assertEqual(self.reactor.tcpClients[1][:2], ("1.1.1.1", 443))

    def test_total_timeout(self) -> None:
        """A request still unanswered after the total timeout fails."""
        self.resolver.answers["slow.example"] = ["8.8.8.8"]
        d = self.client.get("https://slow.example/")
        self.assertNoResult(d)
        self.reactor.advance(19.9)
        self.assertNoResult(d)
        self.reactor.advance(0.2)
        self.failureResultOf(d, defer.TimeoutError)

    def test_concurrency_bound(self) -> None:
        """
        Past the bound, requests wait their turn; a waiting request's
        timeout only starts with its turn.
        """
        self.resolver.answers["busy.example"] = ["8.8.8.8"]
        requests = [self.client.get(f"https://busy.example/{n}") for n in range(3)]
        self.assertEqual(len(self.reactor.tcpClients), 2)
        self.reactor.advance(20.1)
        for d in requests[:2]:
            self.failureResultOf(d, defer.TimeoutError)
        self.assertNoResult(requests[2])
        self.assertEqual(len(self.reactor.tcpClients), 3)

    def test_allow_private(self) -> None:
        client = GuardedClient(
            self.reactor, OutboundPolicy(allow_private=True), self.resolver
        )
        self.resolver.answers["lab.example"] = ["10.0.0.5"]
        client.get("https://lab.example/")
        self.assertEqual(self.reactor.tcpClients[0][:2], ("10.0.0.5", 443))
        self.failureResultOf(client.get("https://169.254.169.254/"), AddressRefused)

    def test_certificates(self) -> None:
        tls = TLSFiles(Path(self.mktemp()))
        self.assertEqual(len(load_certificates(tls.ca_pem + b"\n" + tls.ca_pem)), 2)
        self.assertRaises(ValueError, load_certificates, b"not a certificate")
        broken = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        self.assertRaises(ValueError, load_certificates, broken)
        self.assertRaises(
            ValueError,
            GuardedClient,
            self.reactor,
            OutboundPolicy(extra_ca_pem=b"nothing"),
        )


class Answers(Resource):
    """A loopback server with a few canned answers."""

    isLeaf = True

    def __init__(self) -> None:
        super().__init__()
        self.hits = 0

    def render(self, request: Request) -> bytes:
        self.hits += 1
        if request.path == b"/big":
            return b"x" * 200_000
        if request.path == b"/redirect":
            request.redirect(b"https://127.0.0.1:1/elsewhere")
            return b""
        return b"hello " + request.method


class RealTLSTests(TestCase):
    """The client against a real HTTPS server on loopback."""

    timeout = 30

    def setUp(self) -> None:
        self.tls = TLSFiles(Path(self.mktemp()), "127.0.0.1", "hooks.test")
        self.answers = Answers()
        port = listen_https(self.answers, self.tls)
        self.addCleanup(port.stopListening)
        self.port = port.getHost().port

    def client(self, **policy: Any) -> GuardedClient:
        settings: dict[str, Any] = {
            "allow_private": True,
            "extra_ca_pem": self.tls.ca_pem,
            "max_body": 1000,
        }
        settings.update(policy)
        resolver = StubResolver({"hooks.test": ["127.0.0.1"], "other.test": ["::1"]})
        return GuardedClient(reactor, OutboundPolicy(**settings), resolver)

    @defer.inlineCallbacks
    def test_get_and_post(self) -> Any:
        client = self.client()
        response = yield client.get(f"https://127.0.0.1:{self.port}/")
        self.assertEqual((response.code, response.body), (200, b"hello GET"))
        response = yield client.post(f"https://hooks.test:{self.port}/", data=b"x")
        self.assertEqual((yield response.content()), b"hello POST")

    @defer.inlineCallbacks
    def test_the_address_that_answered(self) -> Any:
        """A response says which checked address it came from, whatever the name."""
        client = self.client()
        response = yield client.get(f"https://hooks.test:{self.port}/")
        self.assertEqual(response.address, "127.0.0.1")
        response = yield client.get(f"https://127.0.0.1:{self.port}/")
        self.assertEqual(response.address, "127.0.0.1")

    @defer.inlineCallbacks
    def test_body_cap(self) -> Any:
        response = yield self.client().get(f"https://127.0.0.1:{self.port}/big")
        self.assertEqual(len(response.body), 1000)
        self.assertTrue(response.truncated)

    @defer.inlineCallbacks
    def test_redirect_not_followed(self) -> Any:
        response = yield self.client().get(
            f"https://127.0.0.1:{self.port}/redirect", allow_redirects=True
        )
        self.assertEqual(response.code, 302)
        self.assertEqual(self.answers.hits, 1)

    @defer.inlineCallbacks
    def test_untrusted_certificate(self) -> Any:
        """Without C{--callback-ca} the throwaway CA is not trusted."""
        client = self.client(extra_ca_pem=None)
        yield self.assertFailure(
            client.get(f"https://127.0.0.1:{self.port}/"), Exception
        )
        self.assertEqual(self.answers.hits, 0)

    @defer.inlineCallbacks
    def test_wrong_host_name(self) -> Any:
        """The certificate must name the host in the URL (service-identity)."""
        tls = TLSFiles(Path(self.mktemp()), "elsewhere.test")
        port = listen_https(self.answers, tls)
        self.addCleanup(port.stopListening)
        client = self.client(extra_ca_pem=tls.ca_pem)
        resolver_url = f"https://hooks.test:{port.getHost().port}/"
        yield self.assertFailure(client.get(resolver_url), Exception)
        self.assertEqual(self.answers.hits, 0)

    @defer.inlineCallbacks
    def test_loopback_refused_by_default(self) -> Any:
        client = self.client(allow_private=False)
        yield self.assertFailure(
            client.get(f"https://127.0.0.1:{self.port}/"), AddressRefused
        )
        self.assertEqual(self.answers.hits, 0)
