"""
The one guarded HTTP client for every request this daemon sends to a URL
that somebody else chose (WebSub verification, delivery and denial).

A callback URL is attacker-controlled, so the client refuses to become a
proxy into the host's network (SSRF): every address a name resolves to is
checked, and the connection goes to a checked address, never to a second
resolution of the name (DNS rebinding). TLS is verified for the original
host name (service-identity), redirects are never followed, and every
request has a connect timeout, a total timeout, a cap on the body it reads
and a place in a bounded queue.

twisted.web's C{Agent} is used directly rather than through
C{treq.HTTPClient.request}, which always adds gzip decoding: a small
compressed answer could inflate past any cap in one C{decompress} call.
The interface is treq's (C{get}, C{post}, C{request}, responses with
C{.code}, C{.headers} and C{.content()}), so code that sends requests can be
given C{treq.testing.StubTreq} in tests.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen
from twisted.internet import defer
from twisted.internet.address import IPv4Address as TwistedIPv4
from twisted.internet.address import IPv6Address as TwistedIPv6
from twisted.internet.defer import Deferred, DeferredSemaphore, succeed
from twisted.internet.endpoints import (
    TCP4ClientEndpoint,
    TCP6ClientEndpoint,
    wrapClientTLS,
)
from twisted.internet.error import ConnectError, DNSLookupError
from twisted.internet.interfaces import (
    IHostnameResolver,
    IHostResolution,
    IOpenSSLClientConnectionCreator,
    IProtocol,
    IProtocolFactory,
    IPushProducer,
    IResolutionReceiver,
    IStreamClientEndpoint,
)
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.internet.ssl import (
    Certificate,
    optionsForClientTLS,
    platformTrust,
    trustRootFromCertificates,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.client import (
    URI,
    Agent,
    HTTPConnectionPool,
    PartialDownloadError,
    ResponseDone,
)
from twisted.web.http import PotentialDataLoss
from twisted.web.http_headers import Headers
from twisted.web.iweb import IAgentEndpointFactory, IBodyProducer, IResponse
from zope.interface import implementer

from reviewsd.twisted_private import CombinedTrust, IOpenSSLTrustRoot

log = Logger()

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HeadersLike = Headers | Mapping[Any, Any] | None

# --- address policy ---------------------------------------------------------

LOOPBACK = "loopback"
PRIVATE = "private"
CGNAT = "carrier-grade NAT"
LINK_LOCAL = "link-local"
UNIQUE_LOCAL = "unique-local"
SITE_LOCAL = "site-local"
BENCHMARKING = "benchmarking"
CLOUD_METADATA = "cloud metadata"
UNSPECIFIED = "unspecified"
MULTICAST = "multicast"
BROADCAST = "broadcast"
DOCUMENTATION = "documentation"
RESERVED = "reserved"
IPV4_COMPATIBLE = "IPv4-compatible"

PRIVATE_CLASSES = frozenset(
    {LOOPBACK, PRIVATE, CGNAT, LINK_LOCAL, UNIQUE_LOCAL, SITE_LOCAL, BENCHMARKING}
)
"""
What C{allow_private} admits: addresses of this host and of networks a lab
or test bed uses. Everything else that is not global unicast (multicast,
unspecified, documentation, reserved, cloud metadata) is never a callback.
"""

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

_IPV4_CLASSES: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), UNSPECIFIED),
    (_V4("10.0.0.0/8"), PRIVATE),
    (_V4("100.64.0.0/10"), CGNAT),
    (_V4("127.0.0.0/8"), LOOPBACK),
    (_V4("169.254.169.254/32"), CLOUD_METADATA),
    (_V4("169.254.0.0/16"), LINK_LOCAL),
    (_V4("172.16.0.0/12"), PRIVATE),
    (_V4("192.0.0.0/24"), RESERVED),
    (_V4("192.0.2.0/24"), DOCUMENTATION),
    (_V4("192.88.99.0/24"), RESERVED),
    (_V4("192.168.0.0/16"), PRIVATE),
    (_V4("198.18.0.0/15"), BENCHMARKING),
    (_V4("198.51.100.0/24"), DOCUMENTATION),
    (_V4("203.0.113.0/24"), DOCUMENTATION),
    (_V4("224.0.0.0/4"), MULTICAST),
    (_V4("255.255.255.255/32"), BROADCAST),
    (_V4("240.0.0.0/4"), RESERVED),
)

_IPV6_CLASSES: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), UNSPECIFIED),
    (_V6("::1/128"), LOOPBACK),
    (_V6("64:ff9b:1::/48"), PRIVATE),  # local-use NAT64 (RFC 8215)
    (_V6("100::/64"), RESERVED),  # discard-only
    (_V6("2001::/32"), RESERVED),  # Teredo: a tunnel to an address it hides
    (_V6("2001:2::/48"), BENCHMARKING),
    (_V6("2001:db8::/32"), DOCUMENTATION),
    (_V6("3fff::/20"), DOCUMENTATION),
    (_V6("fd00:ec2::254/128"), CLOUD_METADATA),
    (_V6("fc00::/7"), UNIQUE_LOCAL),
    (_V6("fe80::/10"), LINK_LOCAL),
    (_V6("fec0::/10"), SITE_LOCAL),
    (_V6("ff00::/8"), MULTICAST),
)

_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")
_COMPATIBLE = _V6("::/96")
_NAT64 = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")
_GLOBAL_UNICAST = _V6("2000::/3")


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address]:
    """
    The IPv4 address an IPv6 address stands for, and the form it takes,
    or C{("", 0.0.0.0)} for a plain IPv6 address.
    """
    packed = int(address)
    if address in _MAPPED:
        return "IPv4-mapped", ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if address in _TRANSLATED:
        return "IPv4-translated", ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return "6to4", ipaddress.IPv4Address((packed >> 80) & 0xFFFFFFFF)
    if address in _COMPATIBLE:
        return IPV4_COMPATIBLE, ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return "", ipaddress.IPv4Address(0)


def _classify(address: IPAddress) -> tuple[str, str] | None:
    """C{(form, class)} of a non-public address: C{("IPv4-mapped", "private")}."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, name in _IPV4_CLASSES:
            if address in network:
                return "", name
        return None if address.is_global else ("", RESERVED)
    if address.scope_id:
        address = ipaddress.IPv6Address(address.compressed.split("%")[0])
    for network6, name in _IPV6_CLASSES:
        if address in network6:
            return "", name
    form, inner = embedded_ipv4(address)
    if form == IPV4_COMPATIBLE:
        # deprecated (RFC 4291 2.5.5.1) and never routed: refused whatever
        # it embeds
        return "", IPV4_COMPATIBLE
    if form:
        embedded = _classify(inner)
        return None if embedded is None else (form, embedded[1])
    return None if address in _GLOBAL_UNICAST else ("", RESERVED)


def address_class(address: IPAddress) -> str | None:
    """
    Why C{address} is not a public unicast address (a class name such as
    C{"loopback"} or C{"IPv4-mapped private"}), or C{None} when it is one.
    """
    found = _classify(address)
    if found is None:
        return None
    form, name = found
    return f"{form} {name}" if form else name


def refusal(address: IPAddress, allow_private: bool) -> str | None:
    """
    Why the policy refuses C{address}, or C{None} when it may be contacted.
    """
    found = _classify(address)
    if found is None or (allow_private and found[1] in PRIVATE_CLASSES):
        return None
    return address_class(address)


_LEGACY_IPV4 = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)


def literal_address(host: str) -> IPAddress | None:
    """
    The address a URL's host stands for when it is written as one, without
    a lookup; C{None} for a name. Besides C{[v6]} and dotted quads, the
    forms the system resolver reads as IPv4 (C{2130706433}, C{127.1},
    C{0x7f.0.0.1}) count as literals, so that no spelling of a refused
    address passes for a name.
    """
    host = _strip_brackets(host)
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not _LEGACY_IPV4.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def literal_refusal(host: str, allow_private: bool) -> str | None:
    """
    Why the policy refuses a host written as an address (its class, as
    L{refusal} names it); C{None} for an address it admits, and for a name,
    which is only judged once resolved.
    """
    address = literal_address(host)
    return None if address is None else refusal(address, allow_private)


def connect_address(address: IPAddress) -> IPAddress:
    """Where to connect for a checked address: IPv4 for IPv4-mapped forms."""
    if isinstance(address, ipaddress.IPv6Address) and address in _MAPPED:
        return embedded_ipv4(address)[1]
    return address


# --- errors -----------------------------------------------------------------


class OutboundRefused(Exception):
    """
    The guard refused a request before anything was sent.

    @ivar reason: why, in a few words fit for a log line.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class URLRefused(OutboundRefused):
    """The URL itself is not one the client may contact (scheme, userinfo)."""


class AddressRefused(OutboundRefused):
    """
    The host resolved to an address the policy refuses; nothing was
    contacted, not even the other addresses of the same name.
    """

    def __init__(self, host: str, address: str, address_class: str) -> None:
        super().__init__(f"{host} resolves to {address}, a {address_class} address")
        self.host = host
        self.address = address
        self.address_class = address_class


class OutboundTimeout(defer.TimeoutError):
    """No complete answer within the total timeout; the request was dropped."""


# --- the policy and the client ---------------------------------------------


@frozen
class OutboundPolicy:
    """
    @ivar allow_private: admit loopback and private networks (tests, labs).
    @ivar extra_ca_pem: PEM certificates trusted beside the system's.
    @ivar connect_timeout: seconds for each TCP connection attempt.
    @ivar total_timeout: seconds for the whole request, from its turn in
        the queue to the last byte of the body read.
    @ivar max_body: bytes of a response body kept; the rest is not read.
    @ivar concurrency: requests in flight at once; more wait their turn.
    """

    allow_private: bool = False
    extra_ca_pem: bytes | None = field(default=None, repr=False)
    connect_timeout: float = 10.0
    total_timeout: float = 30.0
    max_body: int = 65536
    concurrency: int = 64


_PEM_CERTIFICATE = re.compile(
    rb"-----BEGIN CERTIFICATE-----\r?\n.+?\r?\n-----END CERTIFICATE-----", re.DOTALL
)


def load_certificates(pem: bytes) -> list[Certificate]:
    """
    Every certificate in a PEM bundle.

    @raise ValueError: there is none, or one cannot be read; the message
        says which, for a one-line start-up error.
    """
    blocks = _PEM_CERTIFICATE.findall(pem)
    if not blocks:
        raise ValueError("no PEM certificate found")
    certificates = []
    for number, block in enumerate(blocks, 1):
        try:
            certificates.append(Certificate.loadPEM(block))
        except Exception as e:
            raise ValueError(f"certificate {number} cannot be read: {e}") from None
    return certificates


@implementer(IResolutionReceiver)
class _Addresses:
    """Collects a resolution's addresses into a Deferred list."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.done: Deferred[list[str]] = Deferred()

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        if isinstance(address, (TwistedIPv4, TwistedIPv6)):
            self.found.append(address.host)

    def resolutionComplete(self) -> None:
        if not self.done.called:
            self.done.callback(self.found)


@frozen
class OutboundResponse:
    """
    A response whose body has been read, up to the policy's cap.

    @ivar truncated: the body was longer than the cap and was cut there.
    @ivar address: the checked address the request was sent to: the
        server that answered, whatever name the URL gave it.
    """

    code: int
    phrase: bytes
    headers: Headers
    body: bytes = field(repr=False)
    truncated: bool = False
    address: str | None = None

    def content(self) -> Deferred[bytes]:
        """The body, as C{treq}'s responses give it."""
        return succeed(self.body)


class _CappedBody(Protocol):
    """Reads a response body into memory, stopping at a limit."""

    def __init__(self, limit: int, done: Deferred[tuple[bytes, bool]]) -> None:
        self._limit = limit
        self._done = done
        self._parts: list[bytes] = []
        self._size = 0

    def dataReceived(self, data: bytes) -> None:
        if self._done.called:
            return
        room = self._limit - self._size
        if len(data) > room:
            self._parts.append(data[:room])
            self._done.callback((b"".join(self._parts), True))
            # the rest is not wanted: close the connection instead of reading it
            IPushProducer(self.transport).stopProducing()
            return
        self._parts.append(data)
        self._size += len(data)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self._done.called:
            return
        if reason.check(ResponseDone, PotentialDataLoss):
            self._done.callback((b"".join(self._parts), False))
        elif reason.check(PartialDownloadError):
            self._done.callback((b"".join(self._parts), True))
        else:
            self._done.errback(reason)


def _read_body(response: IResponse, limit: int) -> Deferred[tuple[bytes, bool]]:
    def cancel(d: Deferred[tuple[bytes, bool]]) -> None:
        transport = getattr(protocol, "transport", None)
        if transport is not None:
            transport.stopProducing()

    done: Deferred[tuple[bytes, bool]] = Deferred(cancel)
    protocol = _CappedBody(limit, done)
    response.deliverBody(protocol)
    return done


@implementer(IBodyProducer)
class _BytesProducer:
    """A request body that is already in memory, written in one go."""

    def __init__(self, body: bytes) -> None:
        self._body = body
        self.length = len(body)

    def startProducing(self, consumer: Any) -> Deferred[None]:
        consumer.write(self._body)
        return succeed(None)

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        pass


def _strip_brackets(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _as_headers(headers: HeadersLike) -> Headers:
    if headers is None:
        return Headers()
    if isinstance(headers, Headers):
        return headers.copy()
    result = Headers()
    for name, value in headers.items():
        values = value if isinstance(value, list) else [value]
        result.setRawHeaders(name, values)
    return result


@implementer(IStreamClientEndpoint)
class _GuardedEndpoint:
    """
    Connects to C{host}:C{port} through the guard: resolve, check, pin; the
    address connected to is appended to C{reached}.
    """

    def __init__(
        self, client: GuardedClient, host: str, port: int, reached: list[str]
    ) -> None:
        self._client = client
        self._host = host
        self._port = port
        self._reached = reached

    def connect(self, factory: IProtocolFactory) -> Deferred[IProtocol]:
        if isinstance(factory, Factory):
            # the pool makes a factory per connection, and one connection
            # per request is normal: no "Starting factory" log lines
            factory.noisy = False
        return Deferred.fromCoroutine(
            self._client._connect(self._host, self._port, factory, self._reached)
        )


@implementer(IAgentEndpointFactory)
class _GuardedEndpoints:
    """The endpoints of one request, which note where they connected."""

    def __init__(self, client: GuardedClient, reached: list[str]) -> None:
        self._client = client
        self._reached = reached

    def endpointForURI(self, uri: URI) -> IStreamClientEndpoint:
        if uri.scheme != b"https":
            raise URLRefused("only https URLs are contacted")
        host = _strip_brackets(uri.host.decode("ascii"))
        return _GuardedEndpoint(self._client, host, uri.port, self._reached)


class GuardedClient:
    """
    The HTTP client for URLs chosen by others, with C{treq}'s interface.

    @param reactor: the reactor to connect and time with.
    @param policy: addresses, trust, timeouts, body cap, concurrency.
    @param resolver: an C{IHostnameResolver}; the reactor's by default
        (injected in tests, so that no name is really looked up).
    """

    _TLS_CACHE = 256

    def __init__(
        self,
        reactor: Any,
        policy: OutboundPolicy,
        resolver: IHostnameResolver | None = None,
    ) -> None:
        self._reactor = reactor
        self._policy = policy
        self._resolver = resolver
        roots: list[IOpenSSLTrustRoot] = [platformTrust()]
        if policy.extra_ca_pem is not None:
            extra = load_certificates(policy.extra_ca_pem)
            roots.append(trustRootFromCertificates(extra))
        self._trust = CombinedTrust(*roots)
        self._tls: OrderedDict[str, IOpenSSLClientConnectionCreator] = OrderedDict()
        self._queue = DeferredSemaphore(policy.concurrency)
        # one connection per request, never kept: callbacks are on other
        # people's hosts, and rarely asked twice in a row
        self._pool = HTTPConnectionPool(reactor, persistent=False)

    @property
    def policy(self) -> OutboundPolicy:
        return self._policy

    def literal_refusal(self, host: str) -> str | None:
        """
        Why this client would refuse C{host} without a lookup (an address
        literal the policy refuses), or C{None}: see L{literal_refusal}.
        """
        return literal_refusal(host, self._policy.allow_private)

    @property
    def in_flight(self) -> int:
        """Requests holding one of the C{concurrency} places now."""
        return self._policy.concurrency - self._queue.tokens

    @property
    def queued(self) -> int:
        """Requests waiting for a place."""
        return len(self._queue.waiting)

    # --- treq's interface ---------------------------------------------------

    def get(
        self, url: str, headers: HeadersLike = None, **kwargs: Any
    ) -> Deferred[OutboundResponse]:
        return self.request("GET", url, headers=headers, **kwargs)

    def post(
        self,
        url: str,
        data: bytes | None = None,
        headers: HeadersLike = None,
        **kwargs: Any,
    ) -> Deferred[OutboundResponse]:
        return self.request("POST", url, headers=headers, data=data, **kwargs)

    def request(
        self,
        method: str,
        url: str,
        headers: HeadersLike = None,
        data: bytes | None = None,
        allow_redirects: bool = False,
        **ignored: Any,
    ) -> Deferred[OutboundResponse]:
        """
        Send one request and read its answer, up to the cap.

        Redirects are never followed, whatever C{allow_redirects} says: a
        3xx is returned like any other answer. Fails with L{URLRefused} or
        L{AddressRefused} when the guard refuses (nothing was sent), with
        C{defer.TimeoutError} past the total timeout, and with the
        connection's error otherwise.
        """
        try:
            target = self._check_url(url)
        except OutboundRefused as e:
            log.warn(
                "Refused an outbound {method}: {reason}", method=method, reason=e.reason
            )
            return defer.fail(e)
        body = None if data is None else _BytesProducer(data)
        return self._queue.run(
            self._timed, method.encode("ascii"), target, _as_headers(headers), body
        )

    # --- inside -------------------------------------------------------------

    def _check_url(self, url: str) -> bytes:
        try:
            raw = url.encode("ascii")
        except UnicodeEncodeError:
            raise URLRefused("the URL is not ASCII") from None
        uri = URI.fromBytes(raw)
        if uri.scheme != b"https":
            raise URLRefused("only https URLs are contacted")
        if b"@" in uri.netloc:
            raise URLRefused("URLs with user information are not contacted")
        if not uri.host:
            raise URLRefused("the URL has no host")
        return raw

    def _timed(
        self,
        method: bytes,
        url: bytes,
        headers: Headers,
        body: IBodyProducer | None,
    ) -> Deferred[OutboundResponse]:
        d = Deferred.fromCoroutine(self._exchange(method, url, headers, body))
        expired = []

        def expire() -> None:
            expired.append(True)
            d.cancel()

        timer = self._reactor.callLater(self._policy.total_timeout, expire)

        def done(result: Any) -> Any:
            if timer.active():
                timer.cancel()
            if expired and isinstance(result, Failure):
                # cancelling reports itself in several ways (a cancelled
                # connection attempt is ConnectingCancelledError): one name
                return Failure(
                    OutboundTimeout(
                        f"no complete answer in {self._policy.total_timeout} s"
                    )
                )
            return result

        return d.addBoth(done)

    async def _exchange(
        self,
        method: bytes,
        url: bytes,
        headers: Headers,
        body: IBodyProducer | None,
    ) -> OutboundResponse:
        reached: list[str] = []
        # an agent per request (it is only a few references; the pool is
        # shared) so that the endpoint can say which address it reached
        agent = Agent.usingEndpointFactory(
            self._reactor, _GuardedEndpoints(self, reached), pool=self._pool
        )
        response = await agent.request(method, url, headers, body)
        data, truncated = await _read_body(response, self._policy.max_body)
        return OutboundResponse(
            code=response.code,
            phrase=response.phrase,
            headers=response.headers,
            body=data,
            truncated=truncated,
            address=reached[-1] if reached else None,
        )

    async def _resolve(self, host: str, port: int) -> list[IPAddress]:
        literal = literal_address(host)
        if literal is not None:
            return [literal]
        resolver = self._resolver or self._reactor.nameResolver
        receiver = _Addresses()
        resolver.resolveHostName(receiver, host, portNumber=port)
        found = await receiver.done
        addresses: list[IPAddress] = []
        for text in found:
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                continue
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise DNSLookupError(f"{host} has no address")
        return addresses

    async def _checked(self, host: str, port: int) -> list[IPAddress]:
        addresses = await self._resolve(host, port)
        for address in addresses:
            why = refusal(address, self._policy.allow_private)
            if why is not None:
                log.warn(
                    "Refused to contact {host}: it resolves to {address}, "
                    "a {address_class} address",
                    host=host,
                    address=str(address),
                    address_class=why,
                )
                raise AddressRefused(host, str(address), why)
        return addresses

    def _tls_for(self, host: str) -> IOpenSSLClientConnectionCreator:
        options = self._tls.get(host)
        if options is None:
            options = optionsForClientTLS(host, trustRoot=self._trust)
            self._tls[host] = options
            if len(self._tls) > self._TLS_CACHE:
                self._tls.popitem(last=False)
        else:
            self._tls.move_to_end(host)
        return options

    async def _connect(
        self, host: str, port: int, factory: IProtocolFactory, reached: list[str]
    ) -> IProtocol:
        addresses = await self._checked(host, port)
        error: Exception | None = None
        for address in addresses:
            target = connect_address(address)
            tcp_type = (
                TCP4ClientEndpoint
                if isinstance(target, ipaddress.IPv4Address)
                else TCP6ClientEndpoint
            )
            tcp = tcp_type(
                self._reactor,
                str(target),
                port,
                timeout=self._policy.connect_timeout,
            )
            try:
                protocol: IProtocol = await wrapClientTLS(
                    self._tls_for(host), tcp
                ).connect(factory)
            except ConnectError as e:
                error = e
                continue
            reached.append(str(target))
            return protocol
        assert error is not None
        raise error


__all__ = [
    "AddressRefused",
    "GuardedClient",
    "OutboundPolicy",
    "OutboundRefused",
    "OutboundResponse",
    "OutboundTimeout",
    "URLRefused",
    "address_class",
    "connect_address",
    "literal_address",
    "literal_refusal",
    "load_certificates",
    "refusal",
]
