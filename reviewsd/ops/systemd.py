"""
Telling systemd how the service is doing (C{Type=notify}): C{READY=1} once
it listens, C{RELOADING=1} and C{READY=1} around a reload, C{STOPPING=1}
when it begins to stop.

The protocol is one datagram to the AF_UNIX socket named in
C{$NOTIFY_SOCKET} (sd_notify(3)); a few lines here cost less than a
dependency. Without C{$NOTIFY_SOCKET} (not under systemd) nothing is sent.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorCore
from twisted.logger import Logger

log = Logger()


def notify(state: bytes, environ: Mapping[str, str] | None = None) -> bool:
    """
    Send C{state} (C{b"READY=1"}, C{b"RELOADING=1"}, ...: newline-separated
    assignments) to systemd; returns whether it was sent.

    C{RELOADING=1} gets the C{MONOTONIC_USEC=} that systemd 253 and later
    ask for. A failure is logged, never raised: the service goes on.
    """
    if environ is None:
        environ = os.environ
    address = environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # the abstract namespace
    elif not address.startswith("/"):
        log.warn(
            "Not notifying systemd: unsupported NOTIFY_SOCKET {address!r}",
            address=address,
        )
        return False
    lines = state.split(b"\n")
    if b"RELOADING=1" in lines and not any(
        line.startswith(b"MONOTONIC_USEC=") for line in lines
    ):
        state += b"\nMONOTONIC_USEC=%d" % (time.monotonic_ns() // 1000)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state)
    except OSError as e:
        log.warn(
            "Cannot notify systemd of {state}: {error}",
            state=state.decode("utf-8", "replace"),
            error=e,
        )
        return False
    return True


class Notifier(Service):
    """
    C{READY=1} once C{ready()} fires (the listeners are up and the hub has
    loaded its state), and C{STOPPING=1} first thing at shutdown, from a
    reactor trigger that runs before twistd stops the services.

    @param ready: called at start; returns a Deferred firing when the
        service can take requests, with the C{STATUS=} line to show.
    """

    def __init__(
        self,
        reactor: IReactorCore,
        ready: Callable[[], Deferred[str]],
        send: Callable[[bytes], object] = notify,
    ) -> None:
        self._reactor = reactor
        self._ready = ready
        self.send = send
        self._trigger: Any = None

    def startService(self) -> None:
        super().startService()
        self._trigger = self._reactor.addSystemEventTrigger(
            "before", "shutdown", self.stopping
        )
        self._ready().addCallbacks(self._announce, self._failed)

    def _announce(self, status: str) -> None:
        if not self.running:
            return
        self.send(
            b"READY=1\nSTATUS=%s\nMAINPID=%d" % (status.encode("utf-8"), os.getpid())
        )

    def _failed(self, failure: Any) -> None:
        log.failure("Start-up did not complete; not telling systemd READY", failure)

    def stopping(self) -> None:
        """Stopping has begun: systemd shows it, and waits."""
        self._trigger = None  # fired: removing it now would warn
        self.send(b"STOPPING=1")

    def stopService(self) -> None:
        super().stopService()
        if self._trigger is not None:
            self._reactor.removeSystemEventTrigger(self._trigger)
            self._trigger = None
