"""
A host name resolver answering from a table: nothing is looked up.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer


@implementer(IHostnameResolver)
class StubResolver:
    """Answers from a table, and remembers what it was asked."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def resolveHostName(
        self,
        receiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        self.asked.append(hostName)
        receiver.resolutionBegan(None)
        for text in self.answers.get(hostName, []):
            kind = IPv6Address if ":" in text else IPv4Address
            receiver.addressResolved(kind("TCP", text, portNumber))
        receiver.resolutionComplete()
        return None
