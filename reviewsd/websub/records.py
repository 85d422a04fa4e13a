"""
What the hub remembers: subscriptions and the verifications still to make.

Frozen records: a change is a new record (C{attrs.evolve}), so the copy a
pending write holds never changes under it.
"""

from __future__ import annotations

from attrs import field, frozen

from reviewsd.websub.requests import Mode

Key = tuple[str, str]
"""A subscription's identity: (topic, callback)."""


@frozen
class Subscription:
    """
    An active, verified subscription.

    @ivar expires: when the lease ends, in the hub clock's seconds.
    @ivar secret: the HMAC key for C{X-Hub-Signature}, or C{None}; kept out
        of C{repr} so that it never reaches a log.
    @ivar failures: consecutive failed delivery attempts.
    @ivar acknowledged: the validator (ETag) of the last content the
        subscriber acknowledged, or that was current when it subscribed;
        a different current validator after a restart means it missed
        something.
    @ivar address: the address the verification of intent reached (the
        callback's server, counted by the per-server cap); C{None} when
        the client does not say.
    """

    topic: str
    callback: str
    lease_seconds: int
    expires: float
    secret: bytes | None = field(default=None, repr=False)
    failures: int = 0
    acknowledged: bytes | None = None
    address: str | None = None

    @property
    def key(self) -> Key:
        return (self.topic, self.callback)


@frozen
class PendingVerification:
    """
    An accepted request whose verification of intent has not completed.

    @ivar id: random; tells this request from a later one for the same key.
    @ivar lease_seconds: the lease to offer (subscribe), already clamped.
    @ivar requested: when it was accepted, in the hub clock's seconds.
    """

    id: str
    mode: Mode
    topic: str
    callback: str
    lease_seconds: int | None
    requested: float
    secret: bytes | None = field(default=None, repr=False)

    @property
    def key(self) -> Key:
        return (self.topic, self.callback)
