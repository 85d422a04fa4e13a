"""
systemd's notify socket, stood in for by a real AF_UNIX datagram socket.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from typing import Any

from twisted.internet import defer, reactor, task
from twisted.trial.unittest import SynchronousTestCase


class NotifySocket:
    """A real AF_UNIX datagram socket standing in for systemd's."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setblocking(False)

    def received(self) -> list[bytes]:
        messages = []
        while True:
            try:
                messages.append(self.sock.recv(4096))
            except BlockingIOError:
                return messages

    @defer.inlineCallbacks
    def wait(self, seconds: float = 15) -> Any:
        """The messages received, once there is one (or C{seconds} passed)."""
        messages: list[bytes] = []
        for _ in range(int(seconds / 0.05)):
            messages += self.received()
            if messages:
                break
            yield task.deferLater(reactor, 0.05, lambda: None)
        return messages

    def close(self) -> None:
        self.sock.close()


def short_temp_dir(case: SynchronousTestCase) -> str:
    """AF_UNIX paths are limited to 108 bytes: trial's temp paths are long."""
    directory = tempfile.mkdtemp(prefix="rd-")
    case.addCleanup(shutil.rmtree, directory, True)
    return directory
