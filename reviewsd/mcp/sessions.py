"""
Legacy MCP sessions that no process holds: a session id carries what the
session needs (its protocol revision, its client's name, when it began)
and an HMAC of it under a key every instance shares, so that a daemon
restarted, or a second one behind the same load balancer, serves a client
that initialized elsewhere.

The key is read from a file: C{--mcp-session-key}, or one made at the
first start in the state directory. Each instance keeps only what is
local: the sessions it saw lately (for the metrics), and the ids it was
asked to end, until they would have expired anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections import OrderedDict
from pathlib import Path

from attrs import frozen
from twisted.internet.interfaces import IReactorTime

from reviewsd.logs import bounded

KEY_MIN_BYTES = 16
"""The shortest key accepted, after white space is stripped."""

LIFETIME = 7 * 24 * 3600.0
"""Seconds a session id is honoured; after that its client initializes again."""

_PREFIX = "s1."
_MAC_BYTES = 16


class SessionKeyError(ValueError):
    """A session key file that cannot serve."""


def load_key(path: Path, create: bool = False) -> bytes:
    """
    The session key in C{path}: its bytes, white space stripped. With
    C{create}, a missing file is made (mode 0600) holding 32 random bytes,
    hex; two instances racing to make it agree on the first one written.

    @raise SessionKeyError: unreadable, or shorter than L{KEY_MIN_BYTES}.
    """
    if create and not path.exists():
        fresh = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            try:
                os.link(fresh, path)
            except FileExistsError:
                pass
        except OSError as e:
            raise SessionKeyError(
                f"cannot create {str(path)!r}: {e.strerror}"
            ) from None
        finally:
            fresh.unlink(missing_ok=True)
    try:
        key = path.read_bytes().strip()
    except OSError as e:
        raise SessionKeyError(f"{str(path)!r}: {e.strerror}") from None
    if len(key) < KEY_MIN_BYTES:
        raise SessionKeyError(
            f"{str(path)!r} holds {len(key)} bytes; a session key needs at least "
            f"{KEY_MIN_BYTES} (such as: openssl rand -hex 32)"
        )
    return key


@frozen
class Session:
    """
    @ivar client: the client's C{clientInfo.name}, cut at
        L{reviewsd.logs.CLIENT_TEXT_MAX} characters.
    @ivar started: when C{initialize} was answered, in seconds since the epoch.
    """

    id: str
    protocol_version: str
    client: str
    started: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """
    Signs and verifies session ids.

    @param idle: seconds after its last request a session stops counting as
        open here (for the metrics; its id stays valid).
    @param limit: the most sessions remembered as open, and as ended.
    @param key: the shared secret; a random one (this process only) if none.
    """

    def __init__(
        self,
        clock: IReactorTime,
        idle: float = 1800.0,
        limit: int = 1000,
        key: bytes | None = None,
        lifetime: float = LIFETIME,
    ) -> None:
        self.clock = clock
        self._idle = idle
        self._limit = limit
        self._key = secrets.token_bytes(32) if key is None else key
        self._lifetime = lifetime
        self._seen: OrderedDict[str, tuple[float, Session]] = OrderedDict()
        self._ended: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        """The sessions that made a request here in the last C{idle} seconds."""
        return len(self._seen)

    def _mac(self, payload: str) -> str:
        digest = hmac.new(self._key, payload.encode("ascii"), hashlib.sha256).digest()
        return _b64(digest[:_MAC_BYTES])

    def open(self, protocol_version: str, client: str) -> Session:
        client = bounded(client)
        started = int(self.clock.seconds())
        payload = _b64(
            json.dumps(
                [protocol_version, client, started, secrets.token_hex(8)],
                separators=(",", ":"),
            ).encode("utf-8")
        )
        session = Session(
            id=f"{_PREFIX}{payload}.{self._mac(payload)}",
            protocol_version=protocol_version,
            client=client,
            started=started,
        )
        self._touch(session)
        return session

    def _touch(self, session: Session) -> None:
        self._seen[session.id] = (self.clock.seconds(), session)
        self._seen.move_to_end(session.id)
        while len(self._seen) > self._limit:
            self._seen.popitem(last=False)

    def _verify(self, session_id: str) -> Session | None:
        if not session_id.startswith(_PREFIX) or len(session_id) > 4096:
            return None
        payload, _, mac = session_id[len(_PREFIX) :].partition(".")
        try:
            valid = hmac.compare_digest(mac, self._mac(payload))
        except (TypeError, UnicodeError):  # not ASCII
            return None
        if not valid:
            return None
        try:
            version, client, started, _ = json.loads(_unb64(payload))
        except (ValueError, binascii.Error, TypeError):
            return None
        return Session(session_id, str(version), str(client), float(started))

    def get(self, session_id: str) -> Session | None:
        """The session C{session_id} names, unless forged, ended or expired."""
        now = self.clock.seconds()
        seen = self._seen.get(session_id)
        session = seen[1] if seen is not None else self._verify(session_id)
        if session is None or session_id in self._ended:
            return None
        if now - session.started > self._lifetime:
            self._seen.pop(session_id, None)
            return None
        self._touch(session)
        return session

    def close(self, session_id: str) -> bool:
        """End a session here: its id is refused until it would expire."""
        session = self.get(session_id)
        if session is None:
            return False
        self._seen.pop(session_id, None)
        self._ended[session_id] = session.started + self._lifetime
        while len(self._ended) > self._limit:
            self._ended.popitem(last=False)
        return True

    def expire(self) -> int:
        """
        Forget what is stale: sessions idle here, ended ids past their
        lifetime. Called periodically; answers how many idle sessions went.
        """
        now = self.clock.seconds()
        stale = [k for k, (seen, _) in self._seen.items() if now - seen > self._idle]
        for key in stale:
            del self._seen[key]
        for key in [k for k, until in self._ended.items() if until < now]:
            del self._ended[key]
        return len(stale)
