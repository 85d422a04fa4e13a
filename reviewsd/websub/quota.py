"""
What the per-server subscription cap counts: each callback is counted
against its I{scopes}, the servers and domains it stands for, so that one
server cannot take more than its share under many names or addresses.

- A callback on a name counts against the name's registrable domain (the
  rule is in L{registrable_domain}): with wildcard DNS, every
  C{*.example.com} is one domain.
- A callback on an address literal, and every subscription once verified
  (at the address its verification reached, see
  L{reviewsd.websub.outbound.OutboundResponse.address}), counts against that
  address's server (L{address_scope}): so C{localhost}, C{127.0.0.1} and
  C{127.0.0.2} are one server, and so are many domains pointing at one
  address.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from reviewsd.websub.outbound import (
    IPAddress,
    address_class,
    embedded_ipv4,
    literal_address,
)

SECOND_LEVELS = frozenset(
    {"ac", "co", "com", "edu", "gov", "ltd", "mil", "ne", "net", "or", "org", "plc"}
)
"""
Second-level labels under which a country-code domain sells names, as in
C{example.co.uk}, C{example.com.au}, C{example.ne.jp}.
"""


def registrable_domain(name: str) -> str:
    """
    The part of a host name that one registrant holds, by a rule that
    needs no public-suffix list: the last two labels
    (C{a.b.example.com} -> C{example.com}), or the last three when the
    top-level label has two letters (a country code) and the second-level
    one is in L{SECOND_LEVELS} (C{shop.example.co.uk} -> C{example.co.uk}).
    A name of one label (C{localhost}) is its own domain. Lower case, no
    trailing dot.

    The rule errs both ways on shared hosting suffixes (all of
    C{*.github.io} is one domain here): a cap shared by more subscribers
    than needed, never a way around it.
    """
    labels = name.lower().rstrip(".").split(".")
    keep = 2
    if (
        len(labels) >= 3
        and len(labels[-1]) == 2
        and labels[-1].isalpha()
        and labels[-2] in SECOND_LEVELS
    ):
        keep = 3
    return ".".join(labels[-keep:])


def address_scope(address: IPAddress | str) -> str:
    """
    The server an address belongs to, as the cap counts it: every loopback
    address is this host; an IPv4 address embedded in an IPv6 form
    (C{::ffff:a.b.c.d}, NAT64, 6to4) is that IPv4 address; any other IPv6
    address counts with its /64, which one host commonly holds whole.
    """
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%")[0])
    if address_class(address) in ("loopback", "IPv4-mapped loopback"):
        return "loopback addresses"
    if isinstance(address, ipaddress.IPv6Address):
        form, inner = embedded_ipv4(address)
        if form and form != "IPv4-compatible":  # that one is never contacted
            return address_scope(inner)
    if isinstance(address, ipaddress.IPv4Address):
        return f"the address {address}"
    network = ipaddress.IPv6Network((int(address) >> 64 << 64, 64))
    return f"the network {network}"


def callback_scope(callback: str) -> str:
    """
    The scope a callback URL counts against before it is verified: its
    address's server when the host is an address, else its registrable
    domain.
    """
    host = urlsplit(callback).hostname or ""
    address = literal_address(host)
    if address is not None:
        return address_scope(address)
    return f"the domain {registrable_domain(host)}"
