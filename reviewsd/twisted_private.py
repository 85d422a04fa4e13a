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
"""

from __future__ import annotations

from OpenSSL.SSL import Context
from twisted.internet._sslverify import IOpenSSLTrustRoot
from twisted.web.http import HTTPChannel, Request
from twisted.web.http_headers import Headers
from zope.interface import implementer

__all__ = [
    "CombinedTrust",
    "IOpenSSLTrustRoot",
    "RawHeaders",
    "pending_target",
    "raw_block",
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


@implementer(IOpenSSLTrustRoot)
class CombinedTrust:
    """Trust what any one of several trust roots trusts."""

    def __init__(self, *roots: IOpenSSLTrustRoot) -> None:
        self._roots = roots

    def _addCACertsToContext(self, context: Context) -> None:
        for root in self._roots:
            root._addCACertsToContext(context)
