"""
What reviewsd assumes of Twisted beyond its public API, checked on its own
(over real requests on a real channel, and real TLS contexts) so that an
upgrade that changes it fails here, saying what changed, rather than as a
wrong answer or a TLS failure somewhere else.

L{reviewsd.twisted_private} says why each assumption is needed.
"""

from __future__ import annotations

import importlib
from typing import Any

import trustme
from OpenSSL.crypto import X509StoreContext, X509StoreContextError
from OpenSSL.SSL import Context
from twisted.copyright import version as twisted_version
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.protocol import Factory
from twisted.internet.ssl import (
    Certificate,
    CertificateOptions,
    platformTrust,
    trustRootFromCertificates,
)
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import globalLogPublisher
from twisted.protocols.basic import LineReceiver
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.client import HTTPConnectionPool
from twisted.web.http import HTTPChannel
from twisted.web.http_headers import Headers
from twisted.web.resource import Resource
from twisted.web.server import Request, Site
from zope.interface import implementer

from reviewsd.twisted_private import (
    BadRequests,
    CombinedTrust,
    IOpenSSLTrustRoot,
    hold_parsing,
    parser_idle,
    pending_target,
    raw_block,
    resume_parsing,
    set_answering,
    set_raw,
)
from reviewsd.websub.outbound import GuardedClient, OutboundPolicy
from tests.support.dns import StubResolver

UPGRADE = (
    f"Twisted {twisted_version} changed a private API reviewsd relies on; "
    "adapt reviewsd/twisted_private.py: "
)


def _private(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise AssertionError(f"{UPGRADE}{module}.{name} is gone ({e})") from None


@implementer(IOpenSSLTrustRoot)
class _Recording:
    """A trust root that records the contexts it is asked to fill."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def _addCACertsToContext(self, context: Context) -> None:
        self.contexts.append(context)


def _authority() -> Certificate:
    return Certificate.loadPEM(trustme.CA().cert_pem.bytes())


class TrustRootTests(SynchronousTestCase):
    """C{IOpenSSLTrustRoot}, implemented by L{CombinedTrust}."""

    def test_interface(self) -> None:
        """The interface is where it was, with the one method it had."""
        interface = _private("twisted.internet._sslverify", "IOpenSSLTrustRoot")
        self.assertIs(
            interface,
            IOpenSSLTrustRoot,
            f"{UPGRADE}IOpenSSLTrustRoot is another object now",
        )
        self.assertEqual(
            sorted(interface.names()),
            ["_addCACertsToContext"],
            f"{UPGRADE}IOpenSSLTrustRoot's methods changed",
        )

    def test_public_roots_implement_it(self) -> None:
        """The roots L{CombinedTrust} combines are still trust roots."""
        roots = {
            "platformTrust()": platformTrust(),
            "trustRootFromCertificates()": trustRootFromCertificates([_authority()]),
        }
        for name, root in roots.items():
            self.assertTrue(
                IOpenSSLTrustRoot.providedBy(root),
                f"{UPGRADE}{name} is no longer an IOpenSSLTrustRoot",
            )
            self.assertTrue(
                callable(getattr(root, "_addCACertsToContext", None)),
                f"{UPGRADE}{name} has no _addCACertsToContext",
            )

    def test_twisted_calls_it(self) -> None:
        """Twisted fills each new TLS context through the trust root's method."""
        recording = _Recording()
        try:
            context = CertificateOptions(
                trustRoot=CombinedTrust(recording)
            ).getContext()
        except Exception as e:
            raise AssertionError(f"{UPGRADE}a CombinedTrust is refused ({e!r})") from e
        self.assertEqual(
            recording.contexts,
            [context],
            f"{UPGRADE}CertificateOptions no longer calls _addCACertsToContext",
        )

    def test_combined_trust_trusts_the_extra_authority(self) -> None:
        """
        A context made with the platform's roots and an extra authority
        verifies a certificate the extra authority issued, and one without
        it does not.
        """
        authority = _authority()
        combined = CombinedTrust(
            platformTrust(), trustRootFromCertificates([authority])
        )
        context = CertificateOptions(trustRoot=combined).getContext()
        X509StoreContext(
            context.get_cert_store(), authority.original
        ).verify_certificate()
        alone = CertificateOptions(trustRoot=platformTrust()).getContext()
        with self.assertRaises(X509StoreContextError):
            X509StoreContext(
                alone.get_cert_store(), authority.original
            ).verify_certificate()


@implementer(IStreamClientEndpoint)
class _Endpoint:
    """Records the factory the pool asks it to connect."""

    def __init__(self) -> None:
        self.factories: list[object] = []

    def connect(self, factory: object) -> Deferred[object]:
        self.factories.append(factory)
        return Deferred()


class QuietConnectionTests(SynchronousTestCase):
    """
    The client keeps the pool's per-connection factories from logging, by
    their public C{noisy} attribute: that holds while the pool's factories
    are L{Factory} instances.
    """

    def test_pool_factories_are_factories(self) -> None:
        endpoint = _Endpoint()
        HTTPConnectionPool(MemoryReactorClock(), persistent=False).getConnection(
            ("https", b"example.com", 443), endpoint
        )
        (factory,) = endpoint.factories
        self.assertIsInstance(
            factory,
            Factory,
            f"Twisted {twisted_version}'s HTTPConnectionPool no longer connects "
            "with a Factory: the outbound client's connections log again",
        )

    def test_no_factory_log_lines(self) -> None:
        logged: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(logged.append)
        self.addCleanup(globalLogPublisher.removeObserver, logged.append)
        reactor = MemoryReactorClock()
        resolver = StubResolver({"hook.example": ["8.8.8.8"]})
        client = GuardedClient(reactor, OutboundPolicy(), resolver)
        client.get("https://hook.example/")
        ((_, _, factory, _, _),) = reactor.tcpClients
        factory.doStart()  # what the connector does first
        self.assertEqual(
            [e for e in logged if "Starting factory" in e.get("log_format", "")], []
        )


BLOCK = raw_block(
    (b"ETag", b'"abc"'),
    (b"Content-Type", b"application/json"),
    (b"Content-Length", b"2"),
    (b"X-Left-Out", None),
    (b"x-lower-case", b"kept"),
)


class _Answering(Resource):
    """Sets L{BLOCK} at once, as the documents are answered."""

    isLeaf = True

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Request] = []

    def render(self, request: Request) -> bytes:
        self.requests.append(request)
        set_raw(request, BLOCK)
        return b"{}"


class _Targets(Request):
    """Records the pending target when the body's length is known."""

    seen: list[bytes | None] = []

    def gotLength(self, length: int | None) -> None:
        self.seen.append(pending_target(self.channel))
        super().gotLength(length)


def _site(resource: Resource, request: type[Request] = Request) -> Site:
    """A site whose idle timeouts are on a clock of its own, not the reactor."""
    return Site(resource, requestFactory=request, reactor=MemoryReactorClock())


def _exchange(site: Site, data: bytes) -> bytes:
    """Send C{data} on a new connection to C{site}; what came back."""
    transport = StringTransport()
    channel = site.buildProtocol(None)
    channel.makeConnection(transport)
    channel.dataReceived(data)
    return transport.value()


class RawHeadersTests(SynchronousTestCase):
    def test_headers_keep_a_dict(self) -> None:
        """L{Headers} keeps its headers in C{_rawHeaders}: names to lists."""
        headers = Headers()
        self.assertIsInstance(headers._rawHeaders, dict)
        headers.setRawHeaders(b"etag", [b'"x"'])
        self.assertEqual(list(headers._rawHeaders.values()), [[b'"x"']])

    def test_block(self) -> None:
        """A block holds what L{Headers} would, with C{None} values left out."""
        expected = Headers()
        expected.setRawHeaders(b"ETag", [b'"abc"'])
        expected.setRawHeaders(b"Content-Type", [b"application/json"])
        expected.setRawHeaders(b"Content-Length", [b"2"])
        expected.setRawHeaders(b"x-lower-case", [b"kept"])
        self.assertEqual(BLOCK, dict(expected.getAllRawHeaders()))

    def test_set_on_a_request_is_sent(self) -> None:
        """
        A block set on a real request is what the public API reads, what a
        later C{setHeader} replaces, and what is written on the wire; its
        C{Content-Length} is seen by Twisted, which then does not chunk.
        """
        resource = _Answering()
        wire = _exchange(_site(resource), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        [request] = resource.requests
        headers = request.responseHeaders
        self.assertEqual(headers.getRawHeaders(b"etag"), [b'"abc"'])
        self.assertEqual(headers.getRawHeaders("ETag"), ['"abc"'])
        self.assertEqual(headers.getRawHeaders(b"X-Lower-Case"), [b"kept"])
        self.assertFalse(headers.hasHeader(b"x-left-out"))
        head, _, body = wire.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        self.assertEqual(lines[0], b"HTTP/1.1 200 OK")
        for line in (
            b'ETag: "abc"',
            b"Content-Type: application/json",
            b"Content-Length: 2",
            b"X-Lower-Case: kept",
        ):
            self.assertEqual(lines.count(line), 1, line)
        self.assertNotIn(b"Transfer-Encoding: chunked", lines)
        self.assertEqual(body, b"{}")

        request.setHeader(b"etag", b'"def"')
        self.assertEqual(headers.getRawHeaders(b"ETag"), [b'"def"'])
        self.assertEqual(BLOCK[b"ETag"], [b'"abc"'])  # the shared block is intact


class PendingTargetTests(SynchronousTestCase):
    def setUp(self) -> None:
        _Targets.seen = []
        self.site = _site(_Answering(), _Targets)

    def test_target_before_the_body(self) -> None:
        """The request target is known once the headers are, with its query."""
        _exchange(
            self.site,
            b"POST /mcp?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        )
        self.assertEqual(_Targets.seen, [b"/mcp?x=1"])

    def test_chunked_and_absolute(self) -> None:
        _exchange(
            self.site,
            b"POST http://h.example/api/websub/hub HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        )
        self.assertEqual(_Targets.seen, [b"http://h.example/api/websub/hub"])

    def test_no_channel_state(self) -> None:
        """A channel that has no request line gives C{None}."""
        channel = self.site.buildProtocol(None)
        self.assertIsNone(pending_target(channel))


class _Lines(LineReceiver):
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def lineReceived(self, line: bytes) -> None:
        self.lines.append(line)
        if line == b"hold":
            hold_parsing(self)


class ParsingHoldTests(SynchronousTestCase):
    """L{LineReceiver} checks C{paused} before each line it parses."""

    def test_the_flag(self) -> None:
        self.assertIs(
            _private("twisted.protocols.basic", "LineReceiver").paused,
            False,
            f"{UPGRADE}LineReceiver.paused is no longer False by default",
        )

    def test_hold_and_resume(self) -> None:
        """
        Held while parsing, the lines already read wait, and those that
        arrive are kept; resumed, all are parsed, in order.
        """
        lines = _Lines()
        lines.makeConnection(StringTransport())
        lines.dataReceived(b"a\r\nhold\r\nb\r\nc\r\n")
        self.assertEqual(lines.lines, [b"a", b"hold"], UPGRADE + "paused is ignored")
        lines.dataReceived(b"d\r\n")
        self.assertEqual(lines.lines, [b"a", b"hold"], UPGRADE + "paused is ignored")
        resume_parsing(lines)
        self.assertEqual(lines.lines, [b"a", b"hold", b"b", b"c", b"d"])
        lines.dataReceived(b"e\r\n")
        self.assertEqual(lines.lines[-1], b"e")

    def test_idle(self) -> None:
        """
        A parser is idle between lines, not with part of a line, nor while
        parsing, held, or reading raw bytes.
        """
        seen: list[bool] = []

        class Watching(_Lines):
            def lineReceived(self, line: bytes) -> None:
                seen.append(parser_idle(self))
                super().lineReceived(line)

        lines = Watching()
        lines.makeConnection(StringTransport())
        self.assertTrue(parser_idle(lines), UPGRADE + "a new parser is not idle")
        lines.dataReceived(b"a\r\nb")
        self.assertEqual(seen, [False], UPGRADE + "_busyReceiving is not kept")
        self.assertFalse(parser_idle(lines), UPGRADE + "_buffer is not kept")
        lines.dataReceived(b"\r\n")
        self.assertTrue(parser_idle(lines))
        lines.setRawMode()
        self.assertFalse(parser_idle(lines), UPGRADE + "line_mode is not kept")
        lines.setLineMode()
        lines.dataReceived(b"hold\r\n")
        self.assertFalse(parser_idle(lines), UPGRADE + "paused is not kept")
        resume_parsing(lines)
        self.assertTrue(parser_idle(lines))

    def test_an_http_channel_holds(self) -> None:
        """An L{HTTPChannel} answers no pipelined request while held."""
        site = _site(_Answering())
        site.protocol = HTTPChannel  # type: ignore[assignment]
        transport = StringTransport()
        channel = site.buildProtocol(None)
        channel.makeConnection(transport)
        hold_parsing(channel)
        channel.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
        self.assertEqual(transport.value(), b"")
        resume_parsing(channel)
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 2)


class AnsweringTests(SynchronousTestCase):
    """
    L{HTTPChannel} pauses its transport when the transport pauses it, unless
    C{_handlingRequest} says it is answering.
    """

    def paused_by_transport(self, answering: bool) -> str:
        site = _site(_Answering())
        site.protocol = HTTPChannel  # type: ignore[assignment]
        transport = StringTransport()
        channel = site.buildProtocol(None)
        channel.makeConnection(transport)
        set_answering(channel, answering)
        channel.pauseProducing()  # as the transport does, its buffer full
        state = transport.producerState
        set_answering(channel, False)
        channel.resumeProducing()
        self.assertEqual(transport.producerState, "producing")
        return str(state)

    def test_answering(self) -> None:
        self.assertEqual(
            self.paused_by_transport(answering=True),
            "producing",
            UPGRADE + "HTTPChannel._handlingRequest no longer keeps it reading",
        )

    def test_not_answering(self) -> None:
        self.assertEqual(self.paused_by_transport(answering=False), "paused")


class _Refusing(BadRequests):
    def bad_request(self, headers_too_large: bool) -> None:
        self.refused.append(headers_too_large)
        super().bad_request(headers_too_large)


class BadRequestsTests(SynchronousTestCase):
    """
    L{HTTPChannel} answers malformed requests from
    C{_respondToBadRequestAndDisconnect}, after counting their header bytes
    in C{_receivedHeaderSize} and their headers in C{_receivedHeaderCount}.
    """

    def exchange(self, data: bytes) -> tuple[list[bool], bytes]:
        site = _site(_Answering())
        site.protocol = _Refusing  # type: ignore[assignment]
        transport = StringTransport()
        channel = site.buildProtocol(None)
        channel.refused = []
        channel.makeConnection(transport)
        channel.dataReceived(data)
        return channel.refused, transport.value()

    def test_the_private_names(self) -> None:
        channel = _private("twisted.web.http", "HTTPChannel")
        for name in (
            "_respondToBadRequestAndDisconnect",
            "_receivedHeaderSize",
            "_receivedHeaderCount",
        ):
            self.assertTrue(hasattr(channel, name), f"{UPGRADE}HTTPChannel.{name}")

    def test_malformed(self) -> None:
        for data in (
            b"NONSENSE\r\n\r\n",
            b"GET / HTTP/1.1\r\nNo colon\r\n\r\n",
            b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        ):
            refused, wire = self.exchange(data)
            self.assertEqual(refused, [False], UPGRADE + repr(data))
            self.assertEqual(wire, b"HTTP/1.1 400 Bad Request\r\n\r\n")

    def test_headers_too_large(self) -> None:
        many = b"".join(b"X-%d: %s\r\n" % (n, b"a" * 100) for n in range(200))
        tiny = b"".join(b"X-%d: a\r\n" % n for n in range(501))
        for data in (many, tiny):
            refused, _ = self.exchange(b"GET / HTTP/1.1\r\n" + data + b"\r\n")
            self.assertEqual(refused, [True], UPGRADE + "header limits not counted")

    def test_good_requests(self) -> None:
        refused, wire = self.exchange(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(refused, [])
        self.assertTrue(wire.startswith(b"HTTP/1.1 200 OK"))
