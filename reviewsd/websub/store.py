"""
The hub's state in SQLite: subscriptions and pending verifications.

The hub keeps its working state in memory and writes every change through
to the database, in order, from a worker thread (C{twisted.enterprise.adbapi},
one connection), so the reactor never waits on the disk. Writes that arrive
while one is running are committed together in one transaction: a thousand
acknowledgements cost a handful of commits, not a thousand.

Durability:

 - A new store is created whole: the schema is written in one transaction
   to a temporary file beside it, which is synced and renamed into place,
   and the directory is synced. The file at the store's path is either
   absent or a complete store: no crash leaves a file that opens as an
   empty database.
 - Then WAL journal with C{synchronous=FULL}: a committed write survives
   C{kill -9} of the daemon and a power cut. The C{-wal} file is part of
   the store: a copy of the main file alone may lack the latest changes
   (never the schema); copy with C{sqlite3 websub.sqlite3 .backup}.
 - An existing file is used only if it is a whole store of a schema this
   version knows (an older one is brought up to date in one transaction).
   Anything else (zero length, not SQLite, damaged, other tables, a
   directory) is refused with L{StoreUnusable}, naming the file and the
   problem, and left as it is: never reinitialised.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from twisted.enterprise import adbapi
from twisted.internet.defer import Deferred, fail, maybeDeferred, succeed
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure

from reviewsd.websub.records import Key, PendingVerification, Subscription

log = Logger()

SCHEMA_VERSION = 2

_SCHEMA = (
    """
    CREATE TABLE subscriptions (
        topic TEXT NOT NULL,
        callback TEXT NOT NULL,
        lease_seconds INTEGER NOT NULL,
        expires REAL NOT NULL,
        secret BLOB,
        failures INTEGER NOT NULL DEFAULT 0,
        acknowledged BLOB,
        address TEXT,
        PRIMARY KEY (topic, callback)
    )
    """,
    """
    CREATE TABLE verifications (
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

_VERIFICATION_COLUMNS = [
    "topic",
    "callback",
    "id",
    "mode",
    "lease_seconds",
    "secret",
    "requested",
]
_COLUMNS: dict[int, dict[str, list[str]]] = {
    1: {
        "subscriptions": [
            "topic",
            "callback",
            "lease_seconds",
            "expires",
            "secret",
            "failures",
            "acknowledged",
        ],
        "verifications": _VERIFICATION_COLUMNS,
    },
}
_COLUMNS[2] = {
    "subscriptions": [*_COLUMNS[1]["subscriptions"], "address"],
    "verifications": _VERIFICATION_COLUMNS,
}
"""Each known schema version's tables and their columns, in order."""

_UPGRADES: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE subscriptions ADD COLUMN address TEXT",),
}
"""The statements that bring schema version N to N + 1."""

Statement = tuple[str, tuple[Any, ...]]

_UPSERT_SUBSCRIPTION = (
    "INSERT OR REPLACE INTO subscriptions (topic, callback, lease_seconds, "
    "expires, secret, failures, acknowledged, address) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_DELETE_SUBSCRIPTION = "DELETE FROM subscriptions WHERE topic = ? AND callback = ?"
_UPSERT_VERIFICATION = (
    "INSERT OR REPLACE INTO verifications (topic, callback, id, mode, "
    "lease_seconds, secret, requested) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_DELETE_VERIFICATION = (
    "DELETE FROM verifications WHERE topic = ? AND callback = ? AND id = ?"
)


class StoreUnusable(Exception):
    """
    The store's file cannot be used as it is; it was left untouched.

    @ivar path: the file.
    @ivar problem: what is wrong with it, in a few words (after the path).
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem


class Pool(Protocol):
    """What the store needs of C{adbapi.ConnectionPool}."""

    def runInteraction(
        self, interaction: Callable[..., Any], *args: Any
    ) -> Deferred[Any]: ...

    def close(self) -> None: ...


Runner = Callable[..., "Deferred[Any]"]
"""Runs C{f(*args)} where blocking is allowed; fires with its result."""


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


# --- creating and checking the file (blocking: run in a worker thread) -----


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for name in (path, Path(f"{path}-journal"), Path(f"{path}-wal")):
        try:
            name.unlink()
        except FileNotFoundError:
            pass


def _create_whole(path: Path) -> None:
    """Write a new, empty store to a temporary file and rename it to C{path}."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    _remove(temporary)
    # subscribers' secrets go in here: private from the first byte
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        connection = sqlite3.connect(str(temporary), isolation_level=None)
        try:
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("BEGIN")
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
            # recorded in the file's header; closing checkpoints it back
            connection.execute("PRAGMA journal_mode=WAL")
        finally:
            connection.close()
        _fsync(temporary)
        os.rename(temporary, path)
        _fsync(path.parent, directory=True)
    except BaseException:
        _remove(temporary)
        raise


def _tables(connection: sqlite3.Connection) -> dict[str, list[str]]:
    names = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
    ]
    return {
        name: [row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')]
        for name in names
    }


def _schema_version(path: Path, connection: sqlite3.Connection) -> int:
    """The known schema version the open file holds, or L{StoreUnusable}."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    tables = _tables(connection)
    if version > SCHEMA_VERSION:
        raise StoreUnusable(
            path,
            f"was written by a newer reviewsd (schema version {version}; this "
            f"one knows up to {SCHEMA_VERSION})",
        )
    if not tables:
        raise StoreUnusable(path, "holds no tables: it is not a WebSub hub store")
    if version == 0 and tables == _COLUMNS[1]:
        version = 1  # an early store, created without its version number
    if tables != _COLUMNS.get(version):
        raise StoreUnusable(
            path,
            "is not a WebSub hub store of a known schema (version "
            f"{version}, tables {', '.join(sorted(tables))})",
        )
    damage = [row[0] for row in connection.execute("PRAGMA quick_check")]
    if damage != ["ok"]:
        raise StoreUnusable(path, f"is damaged: {'; '.join(damage[:3])}")
    return int(version)


def _check_and_upgrade(path: Path) -> None:
    connection = sqlite3.connect(str(path), isolation_level=None)
    try:
        version = _schema_version(path, connection)
        if version < SCHEMA_VERSION:
            connection.execute("BEGIN IMMEDIATE")
            for step in range(version, SCHEMA_VERSION):
                for statement in _UPGRADES[step]:
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
            log.info(
                "Brought the WebSub store {path} from schema version {old} to {new}",
                path=str(path),
                old=version,
                new=SCHEMA_VERSION,
            )
    except sqlite3.DatabaseError as e:
        raise StoreUnusable(path, f"cannot be read as a SQLite database: {e}") from e
    finally:
        connection.close()


def prepare(path: Path) -> None:
    """
    Make C{path} ready to open: create a whole new store if there is no
    file, else check that it is one (and bring an older schema up to date).

    @raise StoreUnusable: the file is there but is not a usable store.
    """
    wal = Path(f"{path}-wal")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreUnusable(
                path,
                f"is missing, but its write-ahead log {wal.name} is there and may "
                "hold subscriptions",
            ) from None
        _create_whole(path)
        return
    except OSError as e:
        raise StoreUnusable(path, f"cannot be read: {e.strerror}") from e
    if stat.S_ISDIR(info.st_mode):
        raise StoreUnusable(path, "is a directory, not a SQLite file")
    if not stat.S_ISREG(info.st_mode):
        raise StoreUnusable(path, "is not a regular file")
    if info.st_size == 0 and not (wal.exists() and wal.stat().st_size > 0):
        raise StoreUnusable(path, "is empty (0 bytes): it holds no hub store")
    _check_and_upgrade(path)
    # subscribers' secrets are in here (and in the write-ahead log)
    for name in (path, wal, Path(f"{path}-shm")):
        if name.exists():
            os.chmod(name, 0o600)


def _run_here(f: Callable[..., Any], *args: Any) -> Deferred[Any]:
    return maybeDeferred(f, *args)


def _in_threads(reactor: Any) -> Runner:
    """Run in C{reactor}'s thread pool, asked for only when needed."""

    def run(f: Callable[..., Any], *args: Any) -> Deferred[Any]:
        return deferToThreadPool(reactor, reactor.getThreadPool(), f, *args)

    return run


def _load(cursor: Any) -> tuple[list[Subscription], list[PendingVerification]]:
    cursor.execute(
        "SELECT topic, callback, lease_seconds, expires, secret, failures, "
        "acknowledged, address FROM subscriptions"
    )
    subscriptions = [
        Subscription(
            topic=row[0],
            callback=row[1],
            lease_seconds=row[2],
            expires=row[3],
            secret=None if row[4] is None else bytes(row[4]),
            failures=row[5],
            acknowledged=None if row[6] is None else bytes(row[6]),
            address=row[7],
        )
        for row in cursor.fetchall()
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

    @param connect: opens the database once L{open} has checked the file.
    @param run: runs the blocking check of the file (in a worker thread).
    @ivar failing: why the last commit failed, until one succeeds.
    """

    def __init__(
        self, path: Path, connect: Callable[[Path], Pool], run: Runner
    ) -> None:
        self.path = path
        self._connect = connect
        self._run = run
        self._pool: Pool | None = None
        self._queue: list[tuple[Statement, Deferred[None] | None]] = []
        self._running: Deferred[None] | None = None
        self._closed = False
        self._drained: list[Deferred[None]] = []
        self.failing: str | None = None

    @classmethod
    def at(cls, path: Path, reactor: Any = None) -> HubStore:
        """The store in the SQLite file C{path}, used from worker threads."""
        if reactor is None:
            from twisted.internet import reactor
        return cls(path, partial(adbapi_pool, reactor=reactor), _in_threads(reactor))

    @classmethod
    def synchronous(cls, path: Path) -> HubStore:
        """The store in C{path}, used in the calling thread (tests on a clock)."""
        return cls(path, SynchronousPool, _run_here)

    def open(self) -> Deferred[None]:
        """
        Check the file (creating a new store if there is none), then open it.

        @raise StoreUnusable: (as a failure) the file is not a usable store.
        """
        return Deferred.fromCoroutine(self._open())

    async def _open(self) -> None:
        await self._run(prepare, self.path)
        self._pool = self._connect(self.path)

    def load(
        self,
    ) -> Deferred[tuple[list[Subscription], list[PendingVerification]]]:
        """Everything stored: subscriptions, and verifications to resume."""
        if self._pool is None:
            return fail(RuntimeError("the hub store is not open"))
        return self._pool.runInteraction(_load).addErrback(self._unreadable)

    def _unreadable(self, failure: Failure) -> Failure:
        if failure.check(sqlite3.Error):
            return Failure(StoreUnusable(self.path, f"cannot be read: {failure.value}"))
        return failure

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
                s.address,
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
        if self._closed or self._pool is None:
            log.error(
                "A WebSub change came while the store was not open: {sql}", sql=sql
            )
            return (
                fail(RuntimeError("the hub store is closed")) if wait else succeed(None)
            )
        done: Deferred[None] | None = Deferred() if wait else None
        self._queue.append(((sql, parameters), done))
        if self._running is None:
            self._flush()
        return done if done is not None else succeed(None)

    def _flush(self) -> None:
        assert self._pool is not None
        batch, self._queue = self._queue, []
        running = self._pool.runInteraction(_execute, [s for s, _ in batch])
        self._running = running

        def committed(result: object) -> None:
            self._running = None
            failure = result if isinstance(result, Failure) else None
            if failure is not None:
                self.failing = failure.getErrorMessage()
                log.failure(
                    "Could not store {count} WebSub change(s) in {path}",
                    failure,
                    count=len(batch),
                    path=str(self.path),
                )
            else:
                self.failing = None
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
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._pool.close()
