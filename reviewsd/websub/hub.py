"""
The WebSub hub: verification of intent, content distribution, retries,
lease expiry and the state that survives a restart.

State lives in memory, where the reactor thread reads and changes it, and
every change is written through to L{HubStore} in order. Nothing here
blocks: outbound requests go through the injected treq-like client, time
is the injected clock, and SQLite runs in a worker thread.

Hub policy beyond the letter of WebSub 7: a subscription whose callback
fails 3 deliveries in a row is I{denied} (WebSub 5.2 allows a denial at any
time): it is removed and its callback is told with a best-effort
C{hub.mode=denied} request. A 410 Gone removes it at once, without notice.
A new subscription whose verification reached a callback server that
already holds its share (L{HubConfig.max_per_host}) is denied the same way.

The hub's store may be unusable (L{StoreUnusable} at start): the hub then
answers nothing but L{HubUnavailable}, and says why in L{Hub.state} and
L{Hub.problem}, which health and metrics read.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from attrs import define, evolve, field, frozen
from twisted.application.internet import TimerService
from twisted.application.service import Service
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from reviewsd.data.links import topic_link_header
from reviewsd.websub.outbound import OutboundRefused
from reviewsd.websub.quota import address_scope, callback_scope
from reviewsd.websub.records import Key, PendingVerification, Subscription
from reviewsd.websub.requests import HubRequest
from reviewsd.websub.store import HubStore, StoreUnusable

log = Logger()


class TopicSource(Protocol):
    """Where the hub reads what a topic holds now."""

    def topic_content(self, topic_url: str) -> tuple[bytes, bytes, bytes] | None:
        """
        The topic's current content as C{(body, content_type, validator)},
        the validator changing whenever the body does (its ETag); C{None}
        for a topic that does not exist.
        """


class HubClient(Protocol):
    """The part of C{treq}'s interface the hub uses."""

    def get(self, url: str, **kwargs: Any) -> Deferred[Any]: ...

    def post(
        self, url: str, data: bytes | None = None, **kwargs: Any
    ) -> Deferred[Any]: ...


@frozen
class HubConfig:
    """
    @ivar hub_url: this hub's public URL, sent in every C{Link} header.
    @ivar topics: the topic URLs subscribers may subscribe to.
    @ivar lease_default: the lease when none is asked for, in seconds.
    @ivar lease_min: leases asked for are raised to at least this.
    @ivar lease_max: and lowered to at most this: no lease is perpetual.
    @ivar retry_base: seconds before retrying a failed delivery; doubles.
    @ivar max_per_host: subscriptions and pending requests per callback
        server: per registrable domain of a name, and per address (see
        L{reviewsd.websub.quota}); a request for one more is refused.
    @ivar max_subscriptions: subscriptions and pending requests in all; a
        request for one more is refused.
    @ivar max_failures: consecutive failed deliveries that deny a
        subscription.
    @ivar sweep_interval: seconds between looks for expired leases.
    """

    hub_url: str
    topics: tuple[str, ...]
    lease_default: int = 864000
    lease_min: int = 300
    lease_max: int = 2592000
    retry_base: float = 30.0
    max_per_host: int = 100
    max_subscriptions: int = 10000
    max_failures: int = 3
    sweep_interval: float = 60.0
    user_agent: str = "reviewsd-websub-hub"

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.lease_min <= self.lease_max:
            raise ValueError(
                f"leases: need 1 <= minimum ({self.lease_min}) <= maximum "
                f"({self.lease_max})"
            )
        if not self.lease_min <= self.lease_default <= self.lease_max:
            raise ValueError(
                f"the default lease ({self.lease_default}) must be between the "
                f"minimum ({self.lease_min}) and the maximum ({self.lease_max})"
            )
        if (
            self.retry_base <= 0
            or self.max_per_host < 1
            or self.max_subscriptions < 1
            or self.max_failures < 1
        ):
            raise ValueError(
                "retry_base, max_per_host, max_subscriptions and max_failures "
                "must be positive"
            )

    def lease_for(self, requested: int | None) -> int:
        """The lease granted for a requested one (WebSub 5.1: the hub's call)."""
        lease = self.lease_default if requested is None else requested
        return max(self.lease_min, min(self.lease_max, lease))


class HubUnavailable(Exception):
    """The hub is not running (start-up failed, or it is stopping)."""


class TooManySubscriptions(Exception):
    """
    A cap is reached: the callback's server has the most subscriptions
    allowed, or the hub has.

    @ivar scope: what is full: the callback's server (as
        L{reviewsd.websub.quota} names it), or C{None} for the whole hub.
    """

    def __init__(self, scope: str | None, limit: int) -> None:
        if scope is None:
            message = (
                f"This hub already holds {limit} subscriptions and requests, "
                "the most it keeps; try again later."
            )
        else:
            message = (
                f"Callbacks on {scope} already have {limit} subscriptions or "
                "requests, the most this hub keeps for one callback server."
            )
        super().__init__(message)
        self.scope = scope
        self.limit = limit


def redact(url: str) -> str:
    """A callback URL for logs: its query may carry the subscriber's tokens."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}" + (
        "?..." if parts.query else ""
    )


def with_query(url: str, parameters: list[tuple[str, str]]) -> str:
    """C{url} with C{parameters} appended to its own query (WebSub 5.3)."""
    query = urlencode(parameters)
    if "?" not in url:
        return f"{url}?{query}"
    if url.endswith(("?", "&")):
        return url + query
    return f"{url}&{query}"


def signature(secret: bytes, body: bytes) -> bytes:
    """The C{X-Hub-Signature} value for C{body} (WebSub 7.1, sha256)."""
    return b"sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest().encode()


def _describe(failure: Failure) -> str:
    """One line on why an outbound request failed, for the log."""
    if isinstance(failure.value, OutboundRefused):
        return f"refused: {failure.value.reason}"
    reasons = getattr(failure.value, "reasons", None)
    if reasons and isinstance(reasons[0], Failure):
        # the agent wraps what went wrong (TLS, connection) in a list
        failure = reasons[0]
    return f"{type(failure.value).__name__}: {failure.getErrorMessage()}"


@frozen
class _Outcome:
    """How one delivery attempt ended."""

    acknowledged: bool
    gone: bool
    description: str
    refused: bool = False
    cancelled: bool = False


@define
class _Outbox:
    """
    One subscription's deliveries: at most one attempt in flight, at most
    one retry scheduled, and whether a newer publish must follow.
    """

    running: Deferred[_Outcome] | None = None
    retry: IDelayedCall | None = None
    again: bool = False
    waiters: list[Deferred[None]] = field(factory=list)
    next_waiters: list[Deferred[None]] = field(factory=list)


class Hub(Service):
    """
    The hub service: accepts requests (L{accept}), verifies them, and
    delivers each topic to its subscribers (L{publish}).

    @param client: any object with treq's C{get}/C{post}, such as
        L{reviewsd.websub.outbound.GuardedClient} (or C{StubTreq} in tests).
        Its C{literal_refusal(host)}, when it has one, tells which callbacks
        it would never contact (L{callback_refusal}); the C{address} of its
        responses, when they have one, which server a verification reached.
    @param store_path: the SQLite file, when C{store} is not given.
    @param store: the store to use instead (tests).
    @param clock: time for leases, retries and the expiry sweep.
    """

    def __init__(
        self,
        config: HubConfig,
        client: HubClient,
        store_path: Path | None = None,
        *,
        topics: TopicSource,
        clock: IReactorTime,
        store: HubStore | None = None,
    ) -> None:
        if store is None:
            if store_path is None:
                raise TypeError("Hub needs a store_path or a store")
            store = HubStore.at(store_path, _thread_reactor(clock))
        self.config = config
        self._client = client
        self._store = store
        self._topics = topics
        self._clock = clock
        self._subscriptions: dict[Key, Subscription] = {}
        self._pending: dict[Key, PendingVerification] = {}
        # the keys counted against each scope of the per-server cap, and
        # the scopes of each key in a subscription or pending request
        self._scopes: dict[str, set[Key]] = {}
        self._key_scopes: dict[Key, frozenset[str]] = {}
        self._problem: str | None = None
        self._outboxes: dict[Key, _Outbox] = {}
        self._inflight: set[Deferred[Any]] = set()
        self._ready: Deferred[None] | None = None
        self._stopping = False
        self._sweeper = TimerService(config.sweep_interval, self._sweep)
        self._sweeper.clock = clock

    # --- service ------------------------------------------------------------

    def startService(self) -> None:
        super().startService()
        self._stopping = False
        self._ready = Deferred.fromCoroutine(self._start())
        self._ready.addErrback(self._start_failed)

    def _start_failed(self, failure: Failure) -> None:
        self._stopping = True
        if isinstance(failure.value, StoreUnusable):
            unusable = failure.value
            self._problem = f"its store {unusable}"
            log.error(
                "The WebSub hub is unavailable: its store {path} {problem}. The "
                "data is served without the hub, which answers 503, until the "
                "file is restored (or moved aside, to start with no "
                "subscriptions) and the service restarted.",
                path=str(unusable.path),
                problem=unusable.problem,
            )
            return
        self._problem = f"it could not start: {failure.getErrorMessage()}"
        log.failure(
            "The WebSub hub could not start; the data is served without it", failure
        )

    async def _start(self) -> None:
        await self._store.open()
        subscriptions, pending = await self._store.load()
        now = self._clock.seconds()
        expired = 0
        for subscription in subscriptions:
            if subscription.expires <= now:
                self._store.delete_subscription(subscription.key)
                expired += 1
                continue
            self._subscriptions[subscription.key] = subscription
            self._index(subscription.key)
        for request in pending:
            self._pending[request.key] = request
            self._index(request.key)
        log.info(
            "WebSub hub started: {subscriptions} subscriptions, {pending} "
            "verifications to resume, {expired} expired while stopped",
            subscriptions=len(self._subscriptions),
            pending=len(pending),
            expired=expired,
        )
        if self._stopping:
            return
        for request in pending:
            self._start_verification(request)
        self._catch_up()
        self._sweeper.startService()

    def _catch_up(self) -> None:
        """Send the current content to every subscriber that missed it."""
        behind = 0
        for key, subscription in list(self._subscriptions.items()):
            content = self._topics.topic_content(subscription.topic)
            if content is not None and content[2] != subscription.acknowledged:
                behind += 1
                self._kick(key)
        if behind:
            log.info(
                "Catching up {subscribers} with content they missed",
                subscribers=_subscribers(behind),
                count=behind,
            )

    def stopService(self) -> Deferred[None]:
        """
        Stop: outbound requests in flight are cancelled (what they would
        have changed is still owed, and is redone at the next start), then
        the store is flushed and closed.
        """
        super().stopService()
        self._stopping = True
        return Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if self._ready is not None and not self._ready.called:
            await _quietly(self._ready)
        if self._sweeper.running:
            await _quietly(self._sweeper.stopService())
        for outbox in self._outboxes.values():
            if outbox.retry is not None and outbox.retry.active():
                outbox.retry.cancel()
            outbox.retry = None
        for d in list(self._inflight):
            d.cancel()
        await self._store.close()

    def ready(self) -> Deferred[None]:
        """
        Fires once the started hub has loaded its state and resumed its
        work; fails with L{HubUnavailable} if it is not running.
        """
        return Deferred.fromCoroutine(self._when_ready())

    async def _when_ready(self) -> None:
        if self._stopping or self._ready is None:
            raise HubUnavailable(self._why_not_running())
        if not self._ready.called:
            await _quietly(self._ready)
        if self._stopping:
            raise HubUnavailable(self._why_not_running())

    def _why_not_running(self) -> str:
        if self._problem is not None:
            return f"the WebSub hub is unavailable: {self._problem}"
        return "the WebSub hub is not running"

    @property
    def state(self) -> str:
        """
        C{starting}; C{up}; C{unavailable}: start-up failed, or the last
        write to the store failed (L{problem} says why); C{stopping}.
        """
        if self._problem is not None:
            return "unavailable"
        if self._ready is None:
            return "starting"
        if self._stopping or not self.running:
            return "stopping"
        if not self._ready.called:
            return "starting"
        if self._store.failing is not None:
            return "unavailable"
        return "up"

    @property
    def problem(self) -> str | None:
        """Why the hub is unavailable, naming its store's file; else C{None}."""
        if self._problem is not None:
            return self._problem
        failing = self._store.failing
        if failing is not None and self.state == "unavailable":
            return f"it cannot write its store {self._store.path}: {failing}"
        return None

    # --- what there is ------------------------------------------------------

    def subscription(self, topic: str, callback: str) -> Subscription | None:
        """The active subscription of C{callback} to C{topic}, if any."""
        return self._subscriptions.get((topic, callback))

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    def pending(self) -> list[PendingVerification]:
        return list(self._pending.values())

    def callback_refusal(self, callback: str) -> str | None:
        """
        Why the client would refuse C{callback} without even a lookup (its
        host is an address of a class the address policy refuses), or
        C{None}: names are only judged once resolved.
        """
        refuse = getattr(self._client, "literal_refusal", None)
        if refuse is None:
            return None
        why: str | None = refuse(urlsplit(callback).hostname or "")
        return why

    # --- the caps: per callback server, and in all ---------------------------

    def _scopes_of(self, key: Key) -> frozenset[str]:
        """What C{key} counts against: its URL's scope, and its server's."""
        scopes = {callback_scope(key[1])}
        subscription = self._subscriptions.get(key)
        if subscription is not None and subscription.address is not None:
            try:
                scopes.add(address_scope(subscription.address))
            except ValueError:
                pass  # not an address: nothing more to count
        return frozenset(scopes)

    def _index(self, key: Key) -> None:
        """Count C{key} (a subscription or pending request) where it belongs."""
        self._drop(key)
        scopes = self._scopes_of(key)
        self._key_scopes[key] = scopes
        for scope in scopes:
            self._scopes.setdefault(scope, set()).add(key)

    def _unindex(self, key: Key) -> None:
        """Stop counting C{key}, or what is gone of it."""
        if key in self._subscriptions or key in self._pending:
            self._index(key)
        else:
            self._drop(key)

    def _drop(self, key: Key) -> None:
        for scope in self._key_scopes.pop(key, ()):
            keys = self._scopes.get(scope)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._scopes[scope]

    def _check_room(self, callback: str) -> None:
        """
        @raise TooManySubscriptions: the hub, or C{callback}'s scope, holds
            the most subscriptions and requests allowed.
        """
        limit = self.config.max_subscriptions
        if len(self._key_scopes) >= limit:
            log.warn(
                "Refused a subscription for {callback}: the hub holds {limit} "
                "subscriptions and requests, its most",
                callback=redact(callback),
                limit=limit,
            )
            raise TooManySubscriptions(None, limit)
        scope = callback_scope(callback)
        limit = self.config.max_per_host
        if len(self._scopes.get(scope, ())) >= limit:
            log.warn(
                "Refused a subscription for {callback}: callbacks on {scope} have "
                "{limit} already",
                callback=redact(callback),
                scope=scope,
                limit=limit,
            )
            raise TooManySubscriptions(scope, limit)

    def _server_full(self, key: Key, address: str | None) -> str | None:
        """
        The scope of the server a new subscription's verification reached,
        when it already holds the most subscriptions; else C{None}.
        Renewals keep their place.
        """
        if address is None or key in self._subscriptions:
            return None
        try:
            scope = address_scope(address)
        except ValueError:
            return None
        others = self._scopes.get(scope, set()) - {key}
        return scope if len(others) >= self.config.max_per_host else None

    def _track(self, d: Deferred[Any]) -> Deferred[Any]:
        """Keep C{d} to cancel at stop, until it has fired."""
        self._inflight.add(d)

        def forget(result: object) -> object:
            self._inflight.discard(d)
            return result

        return d.addBoth(forget)

    # --- requests -----------------------------------------------------------

    def accept(self, request: HubRequest) -> Deferred[None]:
        """
        Take a well-formed request: it is stored, then verified. Fires once
        it is stored, when the answer is 202 whatever verification will find.

        @raise TooManySubscriptions: (as a failure) the callback's server,
            or the hub, has its fill; @raise HubUnavailable: the hub is not
            running.
        """
        return Deferred.fromCoroutine(self._accept(request))

    async def _accept(self, request: HubRequest) -> None:
        await self._when_ready()
        key = (request.topic, request.callback)
        known = key in self._subscriptions or key in self._pending
        if request.mode == "unsubscribe" and not known:
            log.info(
                "Unsubscribe request for {callback} from {topic}, which is not "
                "subscribed: nothing to verify",
                callback=redact(request.callback),
                topic=request.topic,
            )
            return
        if not known:
            self._check_room(request.callback)
        pending = PendingVerification(
            id=secrets.token_hex(16),
            mode=request.mode,
            topic=request.topic,
            callback=request.callback,
            lease_seconds=(
                self.config.lease_for(request.lease_seconds)
                if request.mode == "subscribe"
                else None
            ),
            requested=self._clock.seconds(),
            secret=request.secret,
        )
        # the latest request for a (topic, callback) is the one verified
        self._pending[key] = pending
        self._index(key)
        await self._store.put_verification(pending)
        self._start_verification(pending)

    # --- verification of intent (WebSub 5.3) --------------------------------

    def _start_verification(self, pending: PendingVerification) -> None:
        if self._pending.get(pending.key) is not pending or self._stopping:
            return
        self._track(Deferred.fromCoroutine(self._verify(pending))).addErrback(
            self._unexpected, "verifying a WebSub request"
        )

    async def _verify(self, pending: PendingVerification) -> None:
        sent = self._clock.seconds()
        answer = await self._ask_intent(pending)
        if answer is None or self._stopping:
            return
        confirmed, outcome, address = answer
        key = pending.key
        if self._pending.get(key) is not pending:
            log.info(
                "Verification of {mode} for {callback} ({outcome}) was superseded "
                "by a later request",
                mode=pending.mode,
                callback=redact(pending.callback),
                outcome=outcome,
            )
            return
        del self._pending[key]
        self._store.delete_verification(pending)
        full = None if not confirmed else self._server_full(key, address)
        if not confirmed:
            log.warn(
                "Did not verify {mode} of {callback} to {topic}: {outcome}; "
                "nothing changed",
                mode=pending.mode,
                callback=redact(pending.callback),
                topic=pending.topic,
                outcome=outcome,
            )
        elif pending.mode == "unsubscribe":
            self._remove(key, "unsubscribed")
        elif full is not None:
            self._refuse_full(pending, address, full)
        else:
            self._subscribe(pending, sent, address)
        self._unindex(key)

    def _refuse_full(
        self, pending: PendingVerification, address: str | None, scope: str
    ) -> None:
        """A verified subscription whose server has its fill: denied (WebSub 5.2)."""
        limit = self.config.max_per_host
        log.warn(
            "Refused the subscription of {callback} to {topic}: its verification "
            "reached {address}, and callbacks on {scope} have {limit} "
            "subscriptions already",
            callback=redact(pending.callback),
            topic=pending.topic,
            address=address,
            scope=scope,
            limit=limit,
        )
        self._deny(
            pending.topic,
            pending.callback,
            f"callbacks on {scope} already have {limit} subscriptions, the most "
            "this hub keeps for one callback server",
        )

    async def _ask_intent(
        self, pending: PendingVerification
    ) -> tuple[bool, str, str | None] | None:
        """
        Send the callback a challenge: whether it confirmed, what it
        answered, and the address that answered (when the client says);
        C{None} when stopping the service cancelled the request.
        """
        challenge = secrets.token_urlsafe(32)
        parameters = [
            ("hub.mode", pending.mode),
            ("hub.topic", pending.topic),
            ("hub.challenge", challenge),
        ]
        if pending.mode == "subscribe":
            parameters.append(("hub.lease_seconds", str(pending.lease_seconds)))
        try:
            response = await self._client.get(
                with_query(pending.callback, parameters),
                headers={b"User-Agent": [self.config.user_agent.encode()]},
                allow_redirects=False,
            )
            body = await response.content()
        except Exception:
            if self._stopping:
                # cancelled by stopService (a cancelled request may fail as
                # CancelledError or as the agent's ResponseNeverReceived):
                # the request stays stored, and is verified at the next start
                return None
            return False, _describe(Failure()), None
        confirmed = 200 <= response.code < 300 and hmac.compare_digest(
            body, challenge.encode("ascii")
        )
        outcome = f"answered {response.code}" + (
            "" if confirmed or response.code >= 300 else " without the challenge"
        )
        return confirmed, outcome, getattr(response, "address", None)

    def _subscribe(
        self, pending: PendingVerification, sent: float, address: str | None
    ) -> None:
        """
        Make or renew a verified subscription, its lease counted from
        C{sent}, its server the C{address} verification reached.
        """
        assert pending.lease_seconds is not None
        key = pending.key
        earlier = self._subscriptions.get(key)
        if earlier is None:
            content = self._topics.topic_content(pending.topic)
            subscription = Subscription(
                topic=pending.topic,
                callback=pending.callback,
                lease_seconds=pending.lease_seconds,
                expires=sent + pending.lease_seconds,
                secret=pending.secret,
                acknowledged=None if content is None else content[2],
                address=address,
            )
        else:
            subscription = evolve(
                earlier,
                lease_seconds=pending.lease_seconds,
                expires=sent + pending.lease_seconds,
                secret=pending.secret,
                address=address if address is not None else earlier.address,
            )
        self._subscriptions[key] = subscription
        self._store.put_subscription(subscription)
        log.info(
            "{verb} {callback} to {topic} for {lease} s{signed}",
            verb="Renewed" if earlier is not None else "Subscribed",
            callback=redact(pending.callback),
            topic=pending.topic,
            lease=pending.lease_seconds,
            signed=", signed" if pending.secret is not None else "",
        )

    # --- distribution (WebSub 7) --------------------------------------------

    def publish(self, topic_url: str) -> Deferred[None]:
        """
        Deliver C{topic_url}'s current content to each of its subscribers.

        Fires once every subscriber's first attempt at this content has
        ended, well or not; retries go on, on the clock.
        """
        return Deferred.fromCoroutine(self._publish(topic_url))

    async def _publish(self, topic_url: str) -> None:
        try:
            await self._when_ready()
        except HubUnavailable:
            log.warn("Not publishing {topic}: the hub is not running", topic=topic_url)
            return
        if self._topics.topic_content(topic_url) is None:
            log.warn("Not publishing {topic}: no such topic", topic=topic_url)
            return
        keys = [k for k in self._subscriptions if k[0] == topic_url]
        log.info(
            "Publishing {topic} to {subscribers}",
            topic=topic_url,
            subscribers=_subscribers(len(keys)),
            count=len(keys),
        )
        await DeferredList([self._kick(key) for key in keys], consumeErrors=True)

    def _kick(self, key: Key) -> Deferred[None]:
        """
        Deliver the current content to C{key} as soon as possible: now, or
        after the attempt in flight; a scheduled retry is superseded.
        """
        outbox = self._outboxes.setdefault(key, _Outbox())
        done: Deferred[None] = Deferred()
        if outbox.running is not None:
            outbox.again = True
            outbox.next_waiters.append(done)
            return done
        if outbox.retry is not None and outbox.retry.active():
            outbox.retry.cancel()
        outbox.retry = None
        outbox.waiters.append(done)
        self._attempt(key, outbox)
        return done

    def _attempt(self, key: Key, outbox: _Outbox) -> None:
        subscription = self._subscriptions.get(key)
        content = (
            None
            if subscription is None
            else self._topics.topic_content(subscription.topic)
        )
        if subscription is None or content is None or self._stopping:
            self._settle(key, outbox)
            return
        if subscription.expires <= self._clock.seconds():
            self._remove(key, "lease expired")
            self._settle(key, outbox)
            return
        running = Deferred.fromCoroutine(self._deliver(subscription, content))
        outbox.running = running
        self._track(running)
        running.addCallback(self._delivered, key, outbox, content[2])
        running.addErrback(self._unexpected, "delivering WebSub content")

    async def _deliver(
        self, subscription: Subscription, content: tuple[bytes, bytes, bytes]
    ) -> _Outcome:
        body, content_type, _ = content
        headers = {
            b"Content-Type": [content_type],
            b"Link": [topic_link_header(self.config.hub_url, subscription.topic)],
            b"User-Agent": [self.config.user_agent.encode()],
        }
        if subscription.secret is not None:
            headers[b"X-Hub-Signature"] = [signature(subscription.secret, body)]
        try:
            response = await self._client.post(
                subscription.callback,
                data=body,
                headers=headers,
                allow_redirects=False,
            )
            await response.content()  # ignored (WebSub 7), but read: capped
        except Exception:
            if self._stopping:
                return _Outcome(False, False, "cancelled", cancelled=True)
            failure = Failure()
            return _Outcome(
                False,
                False,
                _describe(failure),
                refused=failure.check(OutboundRefused) is not None,
            )
        code = response.code
        return _Outcome(200 <= code < 300, code == 410, f"answered {code}")

    def _delivered(
        self, outcome: _Outcome, key: Key, outbox: _Outbox, validator: bytes
    ) -> None:
        outbox.running = None
        subscription = self._subscriptions.get(key)
        if subscription is None or outcome.cancelled:
            pass
        elif outcome.acknowledged:
            subscription = evolve(subscription, failures=0, acknowledged=validator)
            self._subscriptions[key] = subscription
            self._store.put_subscription(subscription)
        elif outcome.gone:
            self._remove(key, "the callback answered 410 Gone")
            subscription = None
        else:
            subscription = self._failed(subscription, outbox, outcome)
        waiters, outbox.waiters = outbox.waiters, []
        if outbox.again and subscription is not None and not self._stopping:
            outbox.again = False
            outbox.waiters, outbox.next_waiters = outbox.next_waiters, []
            content = self._topics.topic_content(subscription.topic)
            if (
                content is not None
                and content[2] == subscription.acknowledged
                and subscription.failures == 0
            ):
                # what was published meanwhile is what was just acknowledged
                waiters += outbox.waiters
                outbox.waiters = []
                self._settle(key, outbox)
            else:
                if outbox.retry is not None and outbox.retry.active():
                    outbox.retry.cancel()
                outbox.retry = None
                self._attempt(key, outbox)
        else:
            self._settle(key, outbox)
        for waiter in waiters:
            waiter.callback(None)

    def _failed(
        self, subscription: Subscription, outbox: _Outbox, outcome: _Outcome
    ) -> Subscription | None:
        key = subscription.key
        failures = subscription.failures + 1
        if failures >= self.config.max_failures:
            log.warn(
                "Delivery to {callback} failed ({outcome}), {failures} times in a "
                "row: denying the subscription to {topic}",
                callback=redact(subscription.callback),
                outcome=outcome.description,
                failures=failures,
                topic=subscription.topic,
            )
            self._remove(key, "delivery failures")
            if not outcome.refused:
                self._deny(
                    subscription.topic,
                    subscription.callback,
                    f"{failures} consecutive deliveries failed; subscribe again "
                    "when the callback works",
                )
            return None
        subscription = evolve(subscription, failures=failures)
        self._subscriptions[key] = subscription
        self._store.put_subscription(subscription)
        delay = self.config.retry_base * 2 ** (failures - 1)
        log.warn(
            "Delivery to {callback} failed ({outcome}); retrying in {delay} s",
            callback=redact(subscription.callback),
            outcome=outcome.description,
            delay=delay,
        )
        if not outbox.again:
            outbox.retry = self._clock.callLater(delay, self._retry, key, outbox)
        return subscription

    def _retry(self, key: Key, outbox: _Outbox) -> None:
        outbox.retry = None
        if self._outboxes.get(key) is outbox and outbox.running is None:
            self._attempt(key, outbox)

    def _settle(self, key: Key, outbox: _Outbox) -> None:
        """Forget an outbox with nothing left to do; fire its waiters."""
        if outbox.running is not None or (
            outbox.retry is not None and outbox.retry.active()
        ):
            return
        waiters = outbox.waiters + outbox.next_waiters
        outbox.waiters, outbox.next_waiters, outbox.again = [], [], False
        if self._outboxes.get(key) is outbox:
            del self._outboxes[key]
        for waiter in waiters:
            waiter.callback(None)

    def _deny(self, topic: str, callback: str, reason: str) -> None:
        """Tell a callback its subscription is over (WebSub 5.2), best effort."""
        url = with_query(
            callback,
            [
                ("hub.mode", "denied"),
                ("hub.topic", topic),
                ("hub.reason", reason),
            ],
        )
        d = self._client.get(
            url,
            headers={b"User-Agent": [self.config.user_agent.encode()]},
            allow_redirects=False,
        )
        d.addCallback(lambda response: response.content())
        d.addErrback(
            lambda f: log.info(
                "The denial notice to {callback} did not arrive: {why}",
                callback=redact(callback),
                why=_describe(f),
            )
        )
        self._track(d)

    def _remove(self, key: Key, why: str) -> None:
        subscription = self._subscriptions.pop(key, None)
        if subscription is None:
            return
        outbox = self._outboxes.get(key)
        if outbox is not None and outbox.retry is not None:
            if outbox.retry.active():
                outbox.retry.cancel()
            outbox.retry = None
            self._settle(key, outbox)
        self._unindex(key)
        self._store.delete_subscription(key)
        log.info(
            "Removed the subscription of {callback} to {topic}: {why}",
            callback=redact(subscription.callback),
            topic=subscription.topic,
            why=why,
        )

    # --- leases -------------------------------------------------------------

    def _sweep(self) -> None:
        """Remove every subscription whose lease has ended (WebSub 5.3.1)."""
        try:
            now = self._clock.seconds()
            for key in [k for k, s in self._subscriptions.items() if s.expires <= now]:
                self._remove(key, "lease expired")
        except Exception:
            log.failure("The WebSub lease sweep failed; it will run again")

    def _unexpected(self, failure: Failure, doing: str) -> None:
        log.failure("Unexpected error {doing}", failure, doing=doing)


async def _quietly(d: Deferred[Any]) -> None:
    """Wait for C{d}, whatever it fires with (its errors are logged elsewhere)."""
    try:
        await d
    except Exception:
        pass


def _thread_reactor(clock: Any) -> Any:
    """The reactor adbapi's worker thread reports to: C{clock} if it is one."""
    if hasattr(clock, "callFromThread") and hasattr(clock, "getThreadPool"):
        return clock
    from twisted.internet import reactor

    return reactor


def _subscribers(count: int) -> str:
    return f"{count} WebSub subscriber" + ("" if count == 1 else "s")
