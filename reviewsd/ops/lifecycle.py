"""
Starting and stopping well: listening ports that say when they are up, and
that stop by refusing new connections and then letting the requests in
flight finish, for a bounded time; timers on the clock they are given; and
a service tree that stops one child after the other, so that nothing a
request still needs is stopped under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.application.internet import TimerService
from twisted.application.service import IService, MultiService, Service
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import (
    IListeningPort,
    IReactorTime,
    IStreamServerEndpoint,
)
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()


def _first(d: Deferred[None], clock: IReactorTime, timeout: float) -> Deferred[bool]:
    """C{d}, or a timeout: fires with whether C{d} fired first."""
    result: Deferred[bool] = Deferred()

    def expired() -> None:
        if not result.called:
            result.callback(False)

    call = clock.callLater(timeout, expired)

    def done(_: object) -> None:
        if call.active():
            call.cancel()
        if not result.called:
            result.callback(True)

    d.addBoth(done)
    return result


class Listener(Service):
    """
    One listening endpoint serving a site.

    Start-up: listening happens in C{privilegedStartService} (before twistd
    drops privileges), and a port that cannot be had stops start-up with one
    line. L{listening} fires with the port once it accepts connections.

    Stop: the port is closed first, so that no new connection is accepted
    (under socket activation systemd keeps its copy, and connections wait
    in its queue for the next start), then the site drains: the requests in
    flight get up to C{drain_timeout} seconds to finish and be sent.

    @param site: the factory; its C{drain()} (a Deferred firing once its
        connections are closed) is used when it has one.
    """

    def __init__(
        self,
        description: str,
        endpoint: IStreamServerEndpoint,
        site: Any,
        *,
        clock: IReactorTime,
        drain_timeout: float,
    ) -> None:
        self.description = description
        self._endpoint = endpoint
        self._site = site
        self._clock = clock
        self._drain_timeout = drain_timeout
        self._port: IListeningPort | None = None
        self._waiting: Deferred[IListeningPort] | None = None
        self._listeners: list[Deferred[IListeningPort]] = []

    def listening(self) -> Deferred[IListeningPort]:
        """Fires with the port once it listens; fails if it never will."""
        d: Deferred[IListeningPort] = Deferred()
        if self._port is not None:
            d.callback(self._port)
        else:
            self._listeners.append(d)
        return d

    def _listened(self, port: IListeningPort) -> None:
        self._port = port
        listeners, self._listeners = self._listeners, []
        for d in listeners:
            d.callback(port)

    def privilegedStartService(self) -> None:
        super().privilegedStartService()
        self._waiting = self._endpoint.listen(self._site)
        failed: list[Failure] = []
        self._waiting.addCallbacks(self._listened, failed.append)
        if failed:
            failure = failed[0]
            error = failure.value
            if isinstance(error, CannotListenError):
                raise SystemExit(
                    f"reviewsd: cannot listen on {self.description!r}: "
                    f"{error.socketError or error}"
                )
            raise SystemExit(
                f"reviewsd: cannot listen on {self.description!r}: "
                f"{failure.getErrorMessage()}"
            )
        if self._port is None:
            # an endpoint that listens later (none of the built-in ones)
            self._waiting.addErrback(self._never_listened)

    def _never_listened(self, failure: Failure) -> None:
        log.failure("Cannot listen on {listen}", failure, listen=self.description)
        listeners, self._listeners = self._listeners, []
        for d in listeners:
            d.errback(failure)

    def startService(self) -> None:
        if self._waiting is None:
            self.privilegedStartService()
        super().startService()

    def stopService(self) -> Deferred[None]:
        super().stopService()
        return Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if self._waiting is not None and not self._waiting.called:
            self._waiting.cancel()
        if self._port is not None:
            port, self._port = self._port, None
            await maybeDeferred(port.stopListening)
        drain = getattr(self._site, "drain", None)
        if drain is None:
            return
        busy = len(getattr(self._site, "in_flight", ()))
        drained = drain()
        if drained.called:
            return
        log.info(
            "Stopped listening on {listen}; waiting up to {timeout} s for "
            "{count} requests in flight",
            listen=self.description,
            timeout=self._drain_timeout,
            count=busy,
        )
        if not await _first(drained, self._clock, self._drain_timeout):
            log.warn(
                "{count} requests on {listen} were still in flight after "
                "{timeout} s; they are cut off",
                count=len(self._site.in_flight),
                listen=self.description,
                timeout=self._drain_timeout,
            )


class Every(TimerService):
    """
    Calls C{call} every C{step} seconds on the given clock, from the start
    on: L{TimerService} takes no clock, and runs on the global reactor.
    """

    def __init__(
        self, step: float, call: Callable[[], object], *, clock: IReactorTime
    ) -> None:
        super().__init__(step, call)
        self.clock = clock


class InOrder(MultiService):
    """
    Children start in the order added and stop in the reverse order, each
    once the one after it has finished stopping (L{MultiService} stops them
    all at once): the listeners drain before the hub and the data stop.
    """

    def stopService(self) -> Deferred[None]:
        Service.stopService(self)
        return Deferred.fromCoroutine(self._stop_each(list(reversed(list(self)))))

    async def _stop_each(self, services: list[IService]) -> None:
        for service in services:
            try:
                await maybeDeferred(service.stopService)
            except Exception:
                log.failure("Stopping {service} failed", service=service)
