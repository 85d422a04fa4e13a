"""
Change notifications: the event streams open to MCP clients, and what a
reload tells them.

A modern client opens a stream with C{subscriptions/listen}, naming what it
wants; the stream is the answer to that request. A legacy client opens
one with C{GET /mcp} in its session and names resources with
C{resources/subscribe}. Either way, when a reload (the one that feeds the
WebSub hub) changes a resource, its subscribers are told at once, and every
stream that asked hears that the list of resources changed.

Streams are bounded per client (its address; the oldest gives way) and in
all (one more is refused), kept alive by comments through idle proxies,
and ended cleanly when the service stops: a modern stream with the
C{subscriptions/listen} result the revision calls a graceful close.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from twisted.application.service import Service
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.web.server import Request

from reviewsd.data.documents import to_json
from reviewsd.data.snapshot import Snapshot
from reviewsd.mcp.protocol import SUBSCRIPTION_ID, invalid_params
from reviewsd.mcp.resources import Catalogue

log = Logger()

STREAMS_MAX = 1000
"""Streams open at once, in all."""
STREAMS_PER_CLIENT = 8
"""Streams one client address may hold; its oldest ends for a new one."""
URIS_MAX = 100
"""Resources one stream, or one legacy session, may watch."""
URI_MAX_LENGTH = 2048
SESSIONS_MAX = 10000
"""Legacy sessions whose resource subscriptions are remembered."""
KEEPALIVE = 20.0
"""Seconds between the comments that keep a quiet stream open."""


class StreamRefused(Exception):
    """No stream now: too many in all, or the service is stopping."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.message, self.retry_after = message, retry_after


def event(message: dict[str, Any] | bytes) -> bytes:
    """One server-sent event carrying a JSON-RPC message."""
    data = message if isinstance(message, bytes) else to_json(message)
    return b"event: message\ndata: " + data + b"\n\n"


def start_stream(request: Request) -> None:
    request.setResponseCode(200)
    request.setHeader(b"Content-Type", b"text/event-stream")
    request.setHeader(b"Cache-Control", b"no-store")
    request.setHeader(b"X-Accel-Buffering", b"no")


class Stream:
    """
    One open stream. A modern one has its C{subscription_id} (the listen
    request's id) and its own filter; a legacy one has its C{session}, whose
    subscriptions the registry holds.
    """

    def __init__(
        self,
        request: Request,
        client: str,
        *,
        subscription_id: Any = None,
        session: str | None = None,
        list_changed: bool = False,
        uris: frozenset[str] = frozenset(),
    ) -> None:
        self.request = request
        self.client = client
        self.subscription_id = subscription_id
        self.session = session
        self.list_changed = list_changed
        self.uris = uris
        self.open = True

    @property
    def modern(self) -> bool:
        return self.session is None

    def send(self, message: dict[str, Any] | bytes) -> None:
        if self.open:
            self.request.write(event(message))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        params = dict(params or {})
        if self.modern:
            params["_meta"] = {SUBSCRIPTION_ID: self.subscription_id}
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params:
            message["params"] = params
        self.send(message)


def listen_filter(
    notifications: Any, catalogue: Catalogue
) -> tuple[dict[str, Any], bool, frozenset[str]]:
    """
    The filter a C{subscriptions/listen} request asks for, checked: the
    part honoured (resource subscriptions of this server's URIs and the
    resource list; the tool and prompt lists never change here), whether
    the list is watched, and the URIs watched.
    """
    if not isinstance(notifications, dict):
        raise invalid_params("subscriptions/listen needs params.notifications.")
    uris = notifications.get("resourceSubscriptions", [])
    if uris is None:
        uris = []
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise invalid_params("resourceSubscriptions must be a list of URIs.")
    if len(uris) > URIS_MAX or any(len(u) > URI_MAX_LENGTH for u in uris):
        raise invalid_params(
            f"resourceSubscriptions takes at most {URIS_MAX} URIs of at most "
            f"{URI_MAX_LENGTH} characters."
        )
    for name in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
        if not isinstance(notifications.get(name, False), (bool, type(None))):
            raise invalid_params(f"{name} must be true or false.")
    honoured: dict[str, Any] = {}
    list_changed = notifications.get("resourcesListChanged") is True
    if list_changed:
        honoured["resourcesListChanged"] = True
    known = [u for u in dict.fromkeys(uris) if catalogue.known(u)]
    if known:
        honoured["resourceSubscriptions"] = known
    return honoured, list_changed, frozenset(known)


class Notifications(Service):
    """
    The open streams and the legacy sessions' subscriptions; told of each
    reload by L{changed}.
    """

    def __init__(
        self,
        clock: IReactorTime,
        catalogue: Catalogue,
        *,
        total: int = STREAMS_MAX,
        per_client: int = STREAMS_PER_CLIENT,
        keepalive: float = KEEPALIVE,
    ) -> None:
        self._clock = clock
        self.catalogue = catalogue
        self._total = total
        self._per_client = per_client
        self._keepalive = LoopingCall(self.keep_alive)
        self._keepalive.clock = clock
        self._keepalive_interval = keepalive
        self._streams: dict[int, Stream] = {}
        self._subscriptions: OrderedDict[str, set[str]] = OrderedDict()
        self.stopping = False
        self.identity: Callable[[], dict[str, Any]] = dict
        """The server's identity, for the C{_meta} of a stream's closing result."""

    def __len__(self) -> int:
        return len(self._streams)

    def startService(self) -> None:
        super().startService()
        self.stopping = False
        self._keepalive.start(self._keepalive_interval, now=False)

    def stopService(self) -> None:
        """End every stream: the listeners need not wait for them to drain."""
        super().stopService()
        self.stopping = True
        if self._keepalive.running:
            self._keepalive.stop()
        for stream in list(self._streams.values()):
            self._end(stream)

    # --- opening and ending ---------------------------------------------------

    def _admit(self, stream: Stream) -> None:
        if self.stopping:
            raise StreamRefused("The server is stopping: try again shortly.", 5)
        if stream.session is not None:
            for other in list(self._streams.values()):
                if other.session == stream.session:
                    self._end(other)  # one stream per session: the newest
        mine = [s for s in self._streams.values() if s.client == stream.client]
        for oldest in mine[: max(0, len(mine) - self._per_client + 1)]:
            self._end(oldest)
        if len(self._streams) >= self._total:
            raise StreamRefused(
                "Too many notification streams are open: try again later.", 60
            )
        self._streams[id(stream)] = stream
        start_stream(stream.request)
        stream.request.notifyFinish().addBoth(self._gone, stream)

    def _gone(self, result: object, stream: Stream) -> None:
        stream.open = False
        self._streams.pop(id(stream), None)

    def _end(self, stream: Stream) -> None:
        """End a stream as the server: a modern one gets its result first."""
        if not stream.open:
            return
        if stream.modern:
            stream.send(
                {
                    "jsonrpc": "2.0",
                    "id": stream.subscription_id,
                    "result": {
                        "resultType": "complete",
                        "_meta": {
                            SUBSCRIPTION_ID: stream.subscription_id,
                            **self.identity(),
                        },
                    },
                }
            )
        stream.open = False
        self._streams.pop(id(stream), None)
        if not stream.request.finished:
            stream.request.finish()

    def listen(
        self, request: Request, client: str, request_id: Any, notifications: Any
    ) -> None:
        """
        Answer C{subscriptions/listen}: the stream, acknowledged at once.

        @raise StreamRefused: no stream now.
        @raise RPCError: a filter that is not one.
        """
        honoured, list_changed, uris = listen_filter(notifications, self.catalogue)
        stream = Stream(
            request,
            client,
            subscription_id=request_id,
            list_changed=list_changed,
            uris=uris,
        )
        self._admit(stream)
        stream.notify(
            "notifications/subscriptions/acknowledged", {"notifications": honoured}
        )

    def open_session_stream(self, request: Request, client: str, session: str) -> None:
        """A legacy session's C{GET} stream, replacing one it had."""
        stream = Stream(request, client, session=session, list_changed=True)
        self._admit(stream)
        request.write(b": this session's notifications\n\n")

    # --- legacy subscriptions -------------------------------------------------

    def subscribe(self, session: str, uri: Any) -> None:
        if not isinstance(uri, str) or len(uri) > URI_MAX_LENGTH:
            raise invalid_params("resources/subscribe needs params.uri (a string).")
        if not self.catalogue.known(uri):
            raise invalid_params(f"No resource of this server has the URI {uri}.")
        watched = self._subscriptions.setdefault(session, set())
        self._subscriptions.move_to_end(session)
        if uri not in watched and len(watched) >= URIS_MAX:
            raise invalid_params(f"A session may watch at most {URIS_MAX} resources.")
        watched.add(uri)
        while len(self._subscriptions) > SESSIONS_MAX:
            self._subscriptions.popitem(last=False)

    def unsubscribe(self, session: str, uri: Any) -> None:
        if not isinstance(uri, str):
            raise invalid_params("resources/unsubscribe needs params.uri (a string).")
        self._subscriptions.get(session, set()).discard(uri)

    def end_session(self, session: str) -> None:
        self._subscriptions.pop(session, None)
        for stream in list(self._streams.values()):
            if stream.session == session:
                self._end(stream)

    # --- telling ---------------------------------------------------------------

    def _watched(self, stream: Stream) -> Iterable[str]:
        if stream.session is None:
            return stream.uris
        return self._subscriptions.get(stream.session, ())

    def changed(self, old: Snapshot, new: Snapshot) -> int:
        """
        A reload swapped C{new} in for C{old}: tell each stream what it
        watches that changed. Answers how many notifications were sent.
        """
        streams = list(self._streams.values())
        if not streams:
            return 0
        watched: set[str] = set()
        for stream in streams:
            watched.update(self._watched(stream))
        updated = set(self.catalogue.updated(old, new, watched))
        list_changed = self.catalogue.list_changed(old, new)
        sent = 0
        for stream in streams:
            if list_changed and stream.list_changed:
                stream.notify("notifications/resources/list_changed")
                sent += 1
            for uri in sorted(updated.intersection(self._watched(stream))):
                stream.notify("notifications/resources/updated", {"uri": uri})
                sent += 1
        if sent:
            log.info(
                "Told MCP clients of changed resources: {count} notifications on "
                "{streams} streams",
                count=sent,
                streams=len(streams),
            )
        return sent

    def keep_alive(self) -> None:
        """A comment on each stream: proxies close connections that go quiet."""
        for stream in list(self._streams.values()):
            if stream.open:
                stream.request.write(b":\n\n")
