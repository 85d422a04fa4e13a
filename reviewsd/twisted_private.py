"""
Every use of Twisted's private APIs, kept here so that a Twisted upgrade
that changes one breaks this small module, and
C{tests/test_twisted_private.py} says so in plain words:

  - L{Headers}' C{_rawHeaders}, to set a prepared block of response
    headers at once (L{set_raw}): the public way costs more per cached
    document than everything else the daemon does for it;
  - L{HTTPChannel}'s C{_path}, the target of a request whose body has not
    arrived yet (L{pending_target}): there is no public way to know it then,
    when the body limit of its route must be chosen;
  - C{twisted.internet._sslverify.IOpenSSLTrustRoot}, to trust the
    platform's certificate authorities and the operator's extra ones for
    WebSub callbacks (L{CombinedTrust}): C{optionsForClientTLS} takes one
    trust root, each public one (C{platformTrust},
    C{trustRootFromCertificates}) holds one kind, and the interface and its
    one method, C{_addCACertsToContext}, are private.
  - L{LineReceiver}'s C{paused}, the flag its parsing loop checks before
    each line (L{hold_parsing}, L{resume_parsing}): L{HTTPChannel} replaces
    the pause and resume of L{LineReceiver} with its own, which stop reading
    the socket but go on answering the pipelined requests already read;
  - L{LineReceiver}'s C{_buffer} and C{_busyReceiving}, which say whether
    it holds bytes it has not parsed (L{parser_idle}): a channel that holds
    none, between requests, may answer a plain request from bytes it has
    just read without handing them to the parser, and there is no public
    way to know that it holds none;
  - L{HTTPChannel}'s C{_handlingRequest} (L{set_answering}): paused by its
    transport while it is not answering, it stops reading the socket, but
    not while it answers; an answer written without a request must say so,
    to be treated as one;
  - L{HTTPChannel}'s C{_respondToBadRequestAndDisconnect}, its bare 400
    (L{BadRequests}), and C{_receivedHeaderSize} and C{_receivedHeaderCount},
    which say whether it is answering headers over its limits: Twisted
    offers no public way to answer a malformed request otherwise.
"""

from __future__ import annotations

from OpenSSL.SSL import Context
from twisted.internet._sslverify import IOpenSSLTrustRoot
from twisted.protocols.basic import LineReceiver
from twisted.web.http import HTTPChannel, Request
from twisted.web.http_headers import Headers
from zope.interface import implementer

__all__ = [
    "BadRequests",
    "CombinedTrust",
    "IOpenSSLTrustRoot",
    "RawHeaders",
    "hold_parsing",
    "parser_idle",
    "pending_target",
    "raw_block",
    "resume_parsing",
    "set_answering",
    "set_raw",
]

RawHeaders = dict[bytes, list[bytes]]
"""Headers as L{Headers} keeps them in C{_rawHeaders}: names, value lists."""


def raw_block(*headers: tuple[bytes, bytes | None]) -> RawHeaders:
    """
    A block of headers for L{set_raw}, encoded and checked once, by
    L{Headers} itself; C{None} values are left out.
    """
    block = Headers()
    for name, value in headers:
        if value is not None:
            block.setRawHeaders(name, [value])
    return dict(block._rawHeaders)


def set_raw(request: Request, block: RawHeaders) -> None:
    """
    Set a block of headers made by L{raw_block} at once.

    The public L{Headers.setRawHeaders} encodes and checks each name and
    value again, one header at a time: for a cached document, that cost more
    than everything else the daemon adds to a request. The value lists are
    shared between requests: nothing appends to them (only C{addRawHeader}
    would, and nothing here calls it on response headers).
    """
    request.responseHeaders._rawHeaders.update(block)


def pending_target(channel: HTTPChannel) -> bytes | None:
    """
    The target of the request whose headers have just arrived on
    C{channel}, before its body: only the channel knows it then (the request
    learns its path once the body is in), and that is when a body limit by
    route must be chosen. C{None} if the channel has no request line.
    """
    return getattr(channel, "_path", None)


def hold_parsing(channel: LineReceiver) -> None:
    """
    Stop C{channel} parsing the bytes it has read and not parsed yet (the
    requests pipelined behind the one just answered, or what follows a
    refused one) until L{resume_parsing}; bytes that arrive meanwhile are
    kept unparsed. (Reading the socket is paused apart, through the
    transport.)
    """
    channel.paused = True


def parser_idle(channel: LineReceiver) -> bool:
    """
    Whether C{channel} is parsing lines and holds no byte it has not parsed
    (nor is parsing some now, nor held by L{hold_parsing}): the bytes that
    arrive next begin a line, so that they may be read apart, as long as
    those that are not are handed to its C{dataReceived} in order.
    """
    return (
        not channel._buffer
        and not channel._busyReceiving
        and bool(channel.line_mode)
        and not channel.paused
    )


def set_answering(channel: HTTPChannel, answering: bool) -> None:
    """
    Tell C{channel} it is writing an answer (or no longer is), as it knows
    when a request of its own is: a transport that pauses it meanwhile
    (its buffer is full) does not stop it reading, which the channel's
    owner decides on.
    """
    channel._handlingRequest = answering


def resume_parsing(channel: LineReceiver) -> None:
    """Parse what L{hold_parsing} held, and go on parsing as bytes arrive."""
    channel.paused = False
    LineReceiver.dataReceived(channel, b"")


class BadRequests(HTTPChannel):
    """
    An L{HTTPChannel} that hands the malformed requests it would answer with
    a bare 400 to L{bad_request}, saying whether their headers were over
    C{totalHeadersSize} or C{maxHeaders}.
    """

    def _respondToBadRequestAndDisconnect(self) -> None:
        self.bad_request(
            headers_too_large=self._receivedHeaderSize > self.totalHeadersSize
            or self._receivedHeaderCount > self.maxHeaders
        )

    def bad_request(self, headers_too_large: bool) -> None:
        """Answer a malformed request and close: Twisted's bare 400 here."""
        HTTPChannel._respondToBadRequestAndDisconnect(self)


@implementer(IOpenSSLTrustRoot)
class CombinedTrust:
    """Trust what any one of several trust roots trusts."""

    def __init__(self, *roots: IOpenSSLTrustRoot) -> None:
        self._roots = roots

    def _addCACertsToContext(self, context: Context) -> None:
        for root in self._roots:
            root._addCACertsToContext(context)
