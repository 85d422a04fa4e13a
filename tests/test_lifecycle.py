"""
Stopping: the listener drains requests in flight (for a bounded time),
services stop one after the other, and a port that cannot be listened on
stops start-up.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.error import CannotListenError

from reviewsd.ops.lifecycle import InOrder, Listener
from reviewsd.web.site import InFlight
from tests.support.site import ACCEPT, INITIALIZE, Answer, Connection, SiteTestCase


class DrainTests(SiteTestCase):
    def listener(self, timeout: float = 10) -> tuple[Listener, Any]:
        self.port_endpoint = _Endpoint()
        listener = Listener(
            "tcp:8080",
            self.port_endpoint,
            self.site,
            clock=self.clock,
            drain_timeout=timeout,
        )
        listener.privilegedStartService()
        listener.startService()
        return listener, self.port_endpoint

    def test_waits_for_requests_in_flight(self) -> None:
        listener, endpoint = self.listener()
        idle = Connection(self.site)
        idle.request("GET", "/reviews.json")
        busy = Connection(self.site)
        busy.send(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        )
        busy.send(
            f"Accept: {ACCEPT}\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n".encode()
        )
        busy.send(INITIALIZE[:10])
        stopped = listener.stopService()
        self.assertTrue(endpoint.port.stopped)
        self.assertFalse(idle.transport.connected)  # idle: closed at once
        self.assertNoResult(stopped)
        busy.transport.clear()
        busy.send(INITIALIZE[10:])
        answer = Answer(busy.transport.value())
        self.assertEqual(answer.code, 200)
        self.assertIn("mcp-session-id", answer.headers)
        self.assertFalse(busy.transport.connected)  # closed once answered
        self.successResultOf(stopped)

    def test_bounded(self) -> None:
        listener, _ = self.listener(timeout=5)
        stuck = Connection(self.site)
        stuck.send(b"GET /reviews.json HTTP/1.1\r\n")
        stopped = listener.stopService()
        self.clock.advance(4.9)
        self.assertNoResult(stopped)
        self.clock.advance(0.2)
        self.successResultOf(stopped)
        self.assertIn(
            "were still in flight",
            " ".join(e.get("log_format", "") for e in self.events),
        )

    def test_cannot_listen_stops_start_up(self) -> None:
        class Busy:
            def listen(self, factory: Any) -> Deferred[Any]:
                return defer.fail(
                    CannotListenError(
                        "127.0.0.1", 8080, OSError(98, "Address already in use")
                    )
                )

        listener = Listener(
            "tcp:8080", Busy(), self.site, clock=self.clock, drain_timeout=1
        )
        error = self.assertRaises(SystemExit, listener.privilegedStartService)
        self.assertEqual(
            str(error),
            "reviewsd: cannot listen on 'tcp:8080': [Errno 98] Address already in use",
        )

    def test_in_order_stops_one_after_the_other(self) -> None:
        from twisted.application.service import Service

        stopped: list[str] = []
        gates: dict[str, Deferred[None]] = {}

        class Step(Service):
            def __init__(self, name: str) -> None:
                self.name = name

            def stopService(self) -> Deferred[None]:
                super().stopService()
                stopped.append(self.name)
                gates[self.name] = Deferred()
                return gates[self.name]

        top = InOrder()
        for name in ("data", "hub", "listener"):
            Step(name).setServiceParent(top)
        top.startService()
        done = top.stopService()
        self.assertEqual(stopped, ["listener"])
        gates["listener"].callback(None)
        self.assertEqual(stopped, ["listener", "hub"])
        gates["hub"].callback(None)
        gates["data"].callback(None)
        self.successResultOf(done)

    def test_in_flight_idle(self) -> None:
        in_flight: InFlight[str] = InFlight()
        self.successResultOf(in_flight.idle())
        in_flight.add("a")
        waiting = in_flight.idle()
        self.assertNoResult(waiting)
        in_flight.discard("a")
        self.successResultOf(waiting)


class _Port:
    stopped = False

    def stopListening(self) -> None:
        self.stopped = True


class _Endpoint:
    def __init__(self) -> None:
        self.port = _Port()

    def listen(self, factory: Any) -> Deferred[Any]:
        return defer.succeed(self.port)
