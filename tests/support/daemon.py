"""
Running the real daemon for tests: C{twistd -n reviewsd} in its own process
on a free loopback port, stopped when the test ends.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from treq.client import HTTPClient
from twisted.internet import defer, protocol, reactor, task
from twisted.internet.error import (
    ConnectionRefusedError,
    ProcessDone,
    ProcessTerminated,
)
from twisted.python.failure import Failure
from twisted.trial.unittest import TestCase
from twisted.web.client import Agent

import reviewsd

SOURCE_ROOT = str(Path(reviewsd.__file__).resolve().parent.parent)
TWISTD = [sys.executable, "-c", "from twisted.scripts.twistd import run; run()"]


def environment() -> dict[str, str]:
    """Run the same reviewsd the tests import, found as a plugin."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (SOURCE_ROOT, env.get("PYTHONPATH")) if p
    )
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Daemon(protocol.ProcessProtocol):
    def __init__(self) -> None:
        self.output = b""
        self.ended: defer.Deferred[None] = defer.Deferred()

    def outReceived(self, data: bytes) -> None:
        self.output += data

    errReceived = outReceived

    def processEnded(self, reason: Failure) -> None:
        reason.trap(ProcessDone, ProcessTerminated)
        self.ended.callback(None)


class DaemonTestCase(TestCase):
    timeout = 60

    @defer.inlineCallbacks
    def start(self, base: str, *argv: str, client: HTTPClient | None = None) -> Any:
        """Start twistd, and wait until it answers at C{base}."""
        self.base = base
        self.client = client or HTTPClient(Agent(reactor))
        workdir = self.mktemp()
        os.makedirs(workdir)
        self.daemon = _Daemon()
        process = reactor.spawnProcess(
            self.daemon,
            sys.executable,
            [
                *TWISTD,
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--state-dir",
                os.path.join(workdir, "state"),
                *argv,
            ],
            env=environment(),
            path=workdir,
        )
        self.process = process

        def stop() -> defer.Deferred[None]:
            if not self.daemon.ended.called:
                process.signalProcess(signal.SIGTERM)
            return self.daemon.ended

        self.addCleanup(stop)
        for _ in range(300):
            if self.daemon.ended.called:
                self.fail(f"twistd exited:\n{self.daemon.output.decode()}")
            try:
                yield self.client.get(base + "/reviews.json")
            except ConnectionRefusedError:
                yield task.deferLater(reactor, 0.1, lambda: None)
            else:
                return
        self.fail(f"twistd never answered:\n{self.daemon.output.decode()}")
