"""
sd_notify on a real datagram socket, and the service telling systemd the
daemon is ready (once it listens) and stopping.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.ops.systemd import Notifier, notify
from tests.support.systemd import NotifySocket, short_temp_dir


class NotifyTests(SynchronousTestCase):
    def setUp(self) -> None:
        directory = short_temp_dir(self)
        self.socket = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(self.socket.close)
        self.environ = {"NOTIFY_SOCKET": self.socket.path}

    def test_sends_one_datagram(self) -> None:
        self.assertTrue(notify(b"READY=1\nSTATUS=up", self.environ))
        self.assertEqual(self.socket.received(), [b"READY=1\nSTATUS=up"])

    def test_nothing_without_notify_socket(self) -> None:
        self.assertFalse(notify(b"READY=1", {}))
        self.assertEqual(self.socket.received(), [])

    def test_abstract_namespace(self) -> None:
        name = f"reviewsd-test-{os.getpid()}-{id(self)}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind("\0" + name)
        self.assertTrue(notify(b"STOPPING=1", {"NOTIFY_SOCKET": "@" + name}))
        self.assertEqual(sock.recv(4096), b"STOPPING=1")

    def test_reloading_carries_monotonic_time(self) -> None:
        notify(b"RELOADING=1", self.environ)
        [message] = self.socket.received()
        first, second = message.split(b"\n")
        self.assertEqual(first, b"RELOADING=1")
        self.assertRegex(second.decode(), r"^MONOTONIC_USEC=\d+$")

    def test_failure_is_logged_not_raised(self) -> None:
        missing = os.path.join(os.path.dirname(self.socket.path), "missing")
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        self.assertFalse(notify(b"READY=1", {"NOTIFY_SOCKET": missing}))
        self.assertFalse(notify(b"READY=1", {"NOTIFY_SOCKET": "vsock:2:9"}))
        self.assertEqual(
            [
                e["log_level"]
                for e in events
                if e.get("log_namespace") == "reviewsd.ops.systemd"
            ],
            [LogLevel.warn, LogLevel.warn],
        )

    def test_notifier_ready_after_listening_and_stopping_at_shutdown(self) -> None:
        """
        READY=1 (with STATUS and MAINPID) only once ready() fires; STOPPING=1
        from the reactor's before-shutdown trigger.
        """
        memory = MemoryReactorClock()
        listening: Deferred[str] = Deferred()
        notifier = Notifier(
            memory, lambda: listening, lambda s: notify(s, self.environ)
        )
        notifier.startService()
        self.assertEqual(self.socket.received(), [])
        listening.callback("Serving 3 reviews on tcp:8080")
        [ready] = self.socket.received()
        self.assertEqual(
            ready.split(b"\n"),
            [
                b"READY=1",
                b"STATUS=Serving 3 reviews on tcp:8080",
                b"MAINPID=%d" % os.getpid(),
            ],
        )
        [(trigger, args, kwargs)] = memory.triggers["before"]["shutdown"]
        trigger(*args, **kwargs)
        self.assertEqual(self.socket.received(), [b"STOPPING=1"])
        notifier.stopService()  # the trigger has fired: nothing to remove

    def test_notifier_stopped_before_ready(self) -> None:
        triggers = Triggers()
        listening: Deferred[str] = Deferred()
        notifier = Notifier(
            triggers,  # type: ignore[arg-type]
            lambda: listening,
            lambda s: notify(s, self.environ),
        )
        notifier.startService()
        self.assertEqual(len(triggers.handles), 1)
        notifier.stopService()
        self.assertEqual(triggers.handles, [])
        listening.callback("late")
        self.assertEqual(self.socket.received(), [])


class Triggers:
    """The system event triggers of a reactor, with their removal."""

    def __init__(self) -> None:
        self.handles: list[tuple[Any, ...]] = []

    def addSystemEventTrigger(self, *trigger: Any) -> tuple[Any, ...]:
        self.handles.append(trigger)
        return trigger

    def removeSystemEventTrigger(self, handle: tuple[Any, ...]) -> None:
        self.handles.remove(handle)
