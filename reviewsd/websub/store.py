"""
The hub's state in SQLite: subscriptions and pending verifications.

The hub keeps its working state in memory and writes every change through
to the database, in order, from a worker thread (C{twisted.enterprise.adbapi},
one connection), so the reactor never waits on the disk. Writes that arrive
while one is running are committed together in one transaction: a thousand
acknowledgements cost a handful of commits, not a thousand.

WAL journal with C{synchronous=FULL}: a committed write survives C{kill -9}
of the daemon and a power cut.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from twisted.enterprise import adbapi
from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from reviewsd.websub.records import Key, PendingVerification, Subscription

log = Logger()

SCHEMA_VERSION = 1

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS subscriptions (
        topic TEXT NOT NULL,
        callback TEXT NOT NULL,
        lease_seconds INTEGER NOT NULL,
        expires REAL NOT NULL,
        secret BLOB,
        failures INTEGER NOT NULL DEFAULT 0,
        acknowledged BLOB,
        PRIMARY KEY (topic, callback)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS verifications (
        topic TEXT NOT NULL,
        callback TEXT NOT NULL,
        id TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('subscribe', 'unsubscribe')),
        lease_seconds INTEGER,
        secret BLOB,
        requested REAL NOT NULL,
        PRIMARY KEY (topic, callback)
    )
    """,
)

Statement = tuple[str, tuple[Any, ...]]

_UPSERT_SUBSCRIPTION = (
    "INSERT OR REPLACE INTO subscriptions (topic, callback, lease_seconds, "
    "expires, secret, failures, acknowledged) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_DELETE_SUBSCRIPTION = "DELETE FROM subscriptions WHERE topic = ? AND callback = ?"
_UPSERT_VERIFICATION = (
    "INSERT OR REPLACE INTO verifications (topic, callback, id, mode, "
    "lease_seconds, secret, requested) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_DELETE_VERIFICATION = (
    "DELETE FROM verifications WHERE topic = ? AND callback = ? AND id = ?"
)


class Pool(Protocol):
    """What the store needs of C{adbapi.ConnectionPool}."""

    def runInteraction(
        self, interaction: Callable[..., Any], *args: Any
    ) -> Deferred[Any]: ...

    def close(self) -> None: ...


def _configure(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA busy_timeout=5000")


def adbapi_pool(path: Path, reactor: Any = None) -> Pool:
    """One SQLite connection, used from one worker thread."""
    if reactor is None:
        from twisted.internet import reactor
    return adbapi.ConnectionPool(
        "sqlite3",
        str(path),
        check_same_thread=False,
        cp_min=1,
        cp_max=1,
        cp_openfun=_configure,
        cp_reactor=reactor,
    )


class SynchronousPool:
    """
    The same interactions run at once in the calling thread: for tests on a
    C{task.Clock}, where no worker thread may run.
    """

    def __init__(self, path: Path | str) -> None:
        self._connection = sqlite3.connect(str(path))
        _configure(self._connection)

    def runInteraction(
        self, interaction: Callable[..., Any], *args: Any
    ) -> Deferred[Any]:
        cursor = self._connection.cursor()
        try:
            result = interaction(cursor, *args)
        except BaseException:
            self._connection.rollback()
            return fail(Failure())
        finally:
            cursor.close()
        self._connection.commit()
        return succeed(result)

    def close(self) -> None:
        self._connection.close()


def _create(cursor: Any, path: str | None) -> None:
    for statement in _SCHEMA:
        cursor.execute(statement)
    cursor.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if path is not None:
        # subscribers' secrets are in here (and in the write-ahead log)
        for name in (path, path + "-wal", path + "-shm"):
            if os.path.exists(name):
                os.chmod(name, 0o600)


def _load(cursor: Any) -> tuple[list[Subscription], list[PendingVerification]]:
    cursor.execute(
        "SELECT topic, callback, lease_seconds, expires, secret, failures, "
        "acknowledged FROM subscriptions"
    )
    subscriptions = [
        Subscription(
            topic=topic,
            callback=callback,
            lease_seconds=lease,
            expires=expires,
            secret=None if secret is None else bytes(secret),
            failures=failures,
            acknowledged=None if acknowledged is None else bytes(acknowledged),
        )
        for topic, callback, lease, expires, secret, failures, acknowledged in (
            cursor.fetchall()
        )
    ]
    cursor.execute(
        "SELECT id, mode, topic, callback, lease_seconds, secret, requested "
        "FROM verifications ORDER BY requested"
    )
    verifications = [
        PendingVerification(
            id=id_,
            mode=mode,
            topic=topic,
            callback=callback,
            lease_seconds=lease,
            requested=requested,
            secret=None if secret is None else bytes(secret),
        )
        for id_, mode, topic, callback, lease, secret, requested in cursor.fetchall()
    ]
    return subscriptions, verifications


def _execute(cursor: Any, statements: Sequence[Statement]) -> None:
    for sql, parameters in statements:
        cursor.execute(sql, parameters)


class HubStore:
    """
    Ordered, batched write-through of the hub's state.

    Every write is queued; the queue is committed in one transaction when
    no commit is running, so writes keep their order and concurrent ones
    share a commit. L{close} waits for the queue to drain.
    """

    def __init__(self, pool: Pool, path: Path | None = None) -> None:
        self._pool = pool
        self._path = path
        self._queue: list[tuple[Statement, Deferred[None] | None]] = []
        self._running: Deferred[None] | None = None
        self._closed = False
        self._drained: list[Deferred[None]] = []

    @classmethod
    def at(cls, path: Path, reactor: Any = None) -> HubStore:
        """The store in the SQLite file C{path}, used from a worker thread."""
        return cls(adbapi_pool(path, reactor), path)

    def create(self) -> Deferred[None]:
        """Create the tables if this is a new database."""
        return self._pool.runInteraction(
            _create, None if self._path is None else str(self._path)
        )

    def load(
        self,
    ) -> Deferred[tuple[list[Subscription], list[PendingVerification]]]:
        """Everything stored: subscriptions, and verifications to resume."""
        return self._pool.runInteraction(_load)

    # --- writes -------------------------------------------------------------

    def put_subscription(self, subscription: Subscription) -> None:
        s = subscription
        self._write(
            _UPSERT_SUBSCRIPTION,
            (
                s.topic,
                s.callback,
                s.lease_seconds,
                s.expires,
                s.secret,
                s.failures,
                s.acknowledged,
            ),
        )

    def delete_subscription(self, key: Key) -> None:
        self._write(_DELETE_SUBSCRIPTION, key)

    def put_verification(self, pending: PendingVerification) -> Deferred[None]:
        """Store an accepted request; fires once it is committed."""
        p = pending
        return self._write(
            _UPSERT_VERIFICATION,
            (
                p.topic,
                p.callback,
                p.id,
                p.mode,
                p.lease_seconds,
                p.secret,
                p.requested,
            ),
            wait=True,
        )

    def delete_verification(self, pending: PendingVerification) -> None:
        """Forget C{pending}, but not a later request for the same key."""
        self._write(_DELETE_VERIFICATION, (pending.topic, pending.callback, pending.id))

    def _write(
        self, sql: str, parameters: tuple[Any, ...], wait: bool = False
    ) -> Deferred[None]:
        if self._closed:
            log.error("A WebSub change came after the store was closed: {sql}", sql=sql)
            return (
                fail(RuntimeError("the hub store is closed")) if wait else succeed(None)
            )
        done: Deferred[None] | None = Deferred() if wait else None
        self._queue.append(((sql, parameters), done))
        if self._running is None:
            self._flush()
        return done if done is not None else succeed(None)

    def _flush(self) -> None:
        batch, self._queue = self._queue, []
        running = self._pool.runInteraction(_execute, [s for s, _ in batch])
        self._running = running

        def committed(result: object) -> None:
            self._running = None
            failure = result if isinstance(result, Failure) else None
            if failure is not None:
                log.failure(
                    "Could not store {count} WebSub change(s)",
                    failure,
                    count=len(batch),
                )
            for _, waiter in batch:
                if waiter is None:
                    continue
                if failure is None:
                    waiter.callback(None)
                else:
                    waiter.errback(failure)
            if self._queue:
                self._flush()
            else:
                drained, self._drained = self._drained, []
                for d in drained:
                    d.callback(None)

        running.addBoth(committed)

    def flushed(self) -> Deferred[None]:
        """Fires when every write queued so far is committed."""
        if self._running is None and not self._queue:
            return succeed(None)
        d: Deferred[None] = Deferred()
        self._drained.append(d)
        return d

    async def close(self) -> None:
        """Commit what is queued, then close the database."""
        await self.flushed()
        self._closed = True
        self._pool.close()
