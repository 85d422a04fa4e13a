"""
What one client may cost: the computed answers (search, since) it may ask
for a second, and the connections it may hold open.

A client is an address: an IPv4 address, or the /64 network of an IPv6 one
(one subscriber's share of addresses). A request through a proxy on this
host (a loopback or UNIX socket peer, as the documented deployment puts
nginx or Caddy in front) is counted by the address that proxy appends to
C{X-Forwarded-For}; a loopback peer that sends none is counted as itself.
Connections are counted by peer only, and loopback peers are not counted:
a proxy in front holds the connections of all its clients.
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict
from typing import Any

from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.logger import Logger

log = Logger()

COMPUTED_RATE = 20.0
"""Search and since answers one client may ask for a second, by default."""

COMPUTED_BURST = 20
"""Of which it may ask this many at once, by default."""

CONNECTIONS_PER_ADDRESS = 256
"""Connections one client address may hold open at once, by default."""

MAX_WAIT = 60.0
"""The longest a client over its budget is told to wait."""

CLIENTS = 100_000
"""Clients whose budgets are kept, least recently seen dropped first."""

LOG_EVERY = 10.0
"""Seconds between two log lines about clients over their budget."""


def peer_host(peer: IAddress | None) -> str | None:
    """The client part of a peer address: C{None} for a loopback or UNIX peer."""
    host = getattr(peer, "host", None)
    if not isinstance(host, str) or host == "::1" or host.startswith("127."):
        return None
    return _network(host)


def _network(host: str) -> str:
    """An IPv4 address as it is; an IPv6 one as its /64 network."""
    if ":" not in host:
        return host
    try:
        address = ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError:
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def client_of(request: Any) -> str:
    """
    Who asked: the peer's address, or, from a proxy on this host, the last
    address of C{X-Forwarded-For} (the one the proxy itself added).
    """
    peer = request.getClientAddress()
    host = peer_host(peer)
    if host is not None:
        return host
    forwarded = request.requestHeaders.getRawHeaders(b"x-forwarded-for")
    if forwarded:
        last = forwarded[-1].rsplit(b",", 1)[-1].strip().decode("latin-1")
        if last:
            return _network(last.strip("[]"))
    return str(getattr(peer, "host", "local"))


class SparseLog:
    """
    A warning said at most once every L{LOG_EVERY} seconds, with how many
    times it was not said meanwhile: what clients cause stays visible in the
    log without them setting its volume.
    """

    def __init__(self, format: str) -> None:
        self._format = format + " ({unsaid} more since the last such line)"
        self._said_at = -math.inf
        self._unsaid = 0

    def say(self, now: float, **fields: object) -> None:
        if now - self._said_at < LOG_EVERY:
            self._unsaid += 1
            return
        log.warn(self._format, unsaid=self._unsaid, **fields)
        self._said_at = now
        self._unsaid = 0


class ClientBudget:
    """
    A token bucket for each client: C{rate} tokens a second, at most
    C{burst} kept; each computed answer takes one. Memory is bounded by
    L{CLIENTS}; a client dropped for room starts again with a full bucket,
    which is what one unseen for C{burst / rate} seconds has anyway.
    """

    def __init__(
        self,
        clock: IReactorTime,
        rate: float = COMPUTED_RATE,
        burst: int = COMPUTED_BURST,
        clients: int = CLIENTS,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._clients = clients
        self._buckets: OrderedDict[str, tuple[float, float, float]] = OrderedDict()
        self._said = SparseLog(
            "Client {client} asks for more than {limit} search and since answers"
            " a second: answered 429 until it slows down"
        )

    def wait(self, client: str) -> float:
        """
        Take a token for C{client}: 0 when it had one; else nothing is
        taken, and the seconds until its next free turn: the turns of the
        requests refused meanwhile follow one another C{1 / rate} apart,
        so that connections told to wait do not all come back at once.
        """
        now = self._clock.seconds()
        bucket = self._buckets.get(client)
        if bucket is None:
            tokens, turn = float(self.burst), now
            if len(self._buckets) >= self._clients:
                self._buckets.popitem(last=False)
        else:
            tokens, then, turn = bucket
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            self._buckets.move_to_end(client)
        if tokens >= 1.0:
            self._buckets[client] = (tokens - 1.0, now, turn)
            return 0.0
        turn = max(now + (1.0 - tokens) / self.rate, turn + 1.0 / self.rate)
        turn = min(turn, now + MAX_WAIT)
        self._buckets[client] = (tokens, now, turn)
        self._said.say(now, client=client, limit=f"{self.rate:g}")
        return turn - now


class ConnectionCount:
    """The connections open from each client address (loopback ones not counted)."""

    def __init__(
        self, clock: IReactorTime, limit: int = CONNECTIONS_PER_ADDRESS
    ) -> None:
        self.limit = limit
        self._clock = clock
        self._open: dict[str, int] = {}
        self._said = SparseLog(
            "Client {client} holds {limit} connections: closed another one at once"
        )

    def add(self, host: str) -> bool:
        """Count a new connection from C{host}; C{False} when over the limit."""
        count = self._open.get(host, 0)
        if count >= self.limit:
            self._said.say(self._clock.seconds(), client=host, limit=self.limit)
            return False
        self._open[host] = count + 1
        return True

    def discard(self, host: str) -> None:
        count = self._open.get(host, 0) - 1
        if count > 0:
            self._open[host] = count
        else:
            self._open.pop(host, None)
