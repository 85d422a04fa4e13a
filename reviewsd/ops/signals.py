"""
SIGHUP, the signal C{systemctl reload} and C{kill -HUP} send, as a reload.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from twisted.application.service import Service


class ReloadOnSignal(Service):
    """
    SIGHUP forces a reload; the handler only hands the work to the reactor,
    which is all a signal handler may safely do.
    """

    def __init__(self, reload: Callable[[], object], reactor: Any) -> None:
        self._reload = reload
        self._reactor = reactor
        self._previous: Any = None

    def _handler(self, signum: int, frame: object) -> None:
        self._reactor.callFromThread(self._reload)

    def startService(self) -> None:
        super().startService()
        self._previous = signal.signal(signal.SIGHUP, self._handler)

    def stopService(self) -> None:
        super().stopService()
        signal.signal(signal.SIGHUP, self._previous or signal.SIG_DFL)
