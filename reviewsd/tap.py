"""
C{twistd reviewsd}: the wiring of the services the options name.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from twisted.application.service import IService
from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.endpoints import serverFromString
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.resource import IResource

from reviewsd import __version__
from reviewsd.config import Options, effective_configuration
from reviewsd.data.links import HEALTH_PATH, HUB_PATH, MCP_PATH, METRICS_PATH, Links
from reviewsd.data.loading import DataError, Reader
from reviewsd.insights import MEMO_VERSION, ReviewCache
from reviewsd.insights.workers import AnalysisWorkers
from reviewsd.logs import AccessLog
from reviewsd.mcp.resources import Catalogue
from reviewsd.mcp.sessions import SessionKeyError, load_key
from reviewsd.mcp.subscriptions import Notifications
from reviewsd.mcp.tools import Tools
from reviewsd.mcp.transport import MCPResource, Sessions
from reviewsd.ops.health import HealthResource
from reviewsd.ops.lifecycle import Every, InOrder, Listener
from reviewsd.ops.metrics import Metrics
from reviewsd.ops.signals import ReloadOnSignal
from reviewsd.ops.systemd import Notifier, notify
from reviewsd.publishing.build import load_snapshot
from reviewsd.publishing.service import CurrentSnapshot, ReviewsData
from reviewsd.publishing.watching import DirectoryWatcher
from reviewsd.web.budget import ClientBudget, ConnectionCount
from reviewsd.web.site import (
    RequestObserver,
    ReviewsSite,
    make_side_site,
    make_site,
)
from reviewsd.websub import Hub, HubConfig, HubResource
from reviewsd.websub.outbound import GuardedClient, OutboundPolicy
from reviewsd.websub.topics import SnapshotTopics

__all__ = ["Options", "makeService"]

log = Logger()


def makeService(options: Options, reactor: Any = None) -> IService:
    """
    Load the data, then wire the services; a data directory that cannot be
    published stops start-up here, before twistd daemonizes, with one line.

    The services start in the order added, and stop one at a time, last
    first: the notifier, the listeners (which let requests finish), then the
    hub and the data they use.

    @param reactor: the global reactor unless given (tests give a fake one).
    """
    if reactor is None:
        from twisted.internet import reactor
    links = Links(options["base-url"])
    current, cache, reader = _load(options, links)
    started = reactor.seconds()
    metrics = Metrics(reactor, started)
    # built before the data service, which publishes each change to it
    hub = _hub(options, links, current, metrics, reactor)

    top = InOrder()
    # told of each reload, as the hub is; stopped before the listeners drain
    notifications = Notifications(reactor, Catalogue(current))
    data = ReviewsData(
        options["data"],
        current,
        reactor,
        cache,
        reader,
        publish=hub.publish,
        notify=notify,  # RELOADING=1 and READY=1 around each reload
        swapped=notifications.changed,
    )
    data.setServiceParent(top)
    DirectoryWatcher(options["data"], data.reload, reactor).setServiceParent(top)
    ReloadOnSignal(data.reload, reactor).setServiceParent(top)
    sessions = Sessions(reactor, key=_session_key(options))
    Every(60, sessions.expire, clock=reactor).setServiceParent(top)
    hub.setServiceParent(top)

    mcp = MCPResource(
        metrics.counting_tools(Tools(current)),
        sessions,
        options["base-url"],
        tuple(options["mcp-allowed-origin"]),
        source=current,
        notifications=notifications,
    )
    health = HealthResource(data, reactor, started, hub=hub)
    resources: dict[str, IResource] = {
        MCP_PATH: mcp,
        HUB_PATH: HubResource(hub),
        HEALTH_PATH: health,
    }
    access_log = AccessLog(reactor) if options["access-log"] else None
    if access_log is not None:
        # stopped after the listeners: the lines of every answer are written
        access_log.setServiceParent(top)
    sites = _sites(options, current, resources, metrics, reactor, access_log)
    listeners = []
    for description, site in sites:
        Every(1, site.drop_slow_clients, clock=reactor).setServiceParent(top)
        listener = Listener(
            description,
            serverFromString(reactor, description),
            site,
            clock=reactor,
            drain_timeout=options["shutdown-timeout"],
        )
        listener.setServiceParent(top)
        listeners.append(listener)
    notifications.setServiceParent(top)
    metrics.watch(
        data=data, hub=hub, sessions=sessions, sites=[site for _, site in sites]
    )
    Notifier(reactor, partial(_serving, listeners, hub, data)).setServiceParent(top)
    return top


def _load(
    options: Options, links: Links
) -> tuple[CurrentSnapshot, ReviewCache, Reader]:
    """
    Log the configuration, make the state directory, and load the data with
    the insights cache kept there; either failing is one line.
    """
    configuration = effective_configuration(options)
    log.info(
        "reviewsd {version} starting: {settings}",
        version=__version__.public(),
        configuration=configuration,
        settings=", ".join(f"{k}={v!r}" for k, v in configuration.items()),
    )
    try:
        options["state-dir"].mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise SystemExit(
            f"reviewsd: --state-dir {str(options['state-dir'])!r}: {e.strerror}"
        ) from None
    cache = ReviewCache(
        options["state-dir"] / "insights-cache.sqlite3",
        workers=AnalysisWorkers(options["analysis-processes"]),
        memo_version=MEMO_VERSION,
    )
    reader = Reader()  # kept, so that a reload re-reads only what changed
    try:
        snapshot = load_snapshot(options["data"], links, cache=cache, reader=reader)
    except DataError as e:
        raise SystemExit(f"reviewsd: cannot publish the data: {e}") from None
    return CurrentSnapshot(snapshot), cache, reader


def _session_key(options: Options) -> bytes:
    """The key of MCP session ids: the configured file, or the state directory's."""
    path = options["mcp-session-key"]
    try:
        if path is None:
            return load_key(options["state-dir"] / "mcp-session.key", create=True)
        return load_key(path)
    except SessionKeyError as e:
        raise SystemExit(f"reviewsd: --mcp-session-key {e}") from None


def _hub(
    options: Options,
    links: Links,
    current: CurrentSnapshot,
    metrics: Metrics,
    reactor: Any,
) -> Hub:
    """The WebSub hub: its topics' content is read from the current snapshot."""
    client = GuardedClient(
        reactor,
        OutboundPolicy(
            allow_private=options["allow-private-callbacks"],
            extra_ca_pem=options["callback-ca"],
        ),
    )
    return Hub(
        HubConfig(
            hub_url=links.hub,
            topics=(links.atom_feed, links.json_feed, links.reviews),
            lease_default=options["lease-default"],
            lease_min=options["lease-min"],
            lease_max=options["lease-max"],
            retry_base=options["retry-base"],
            max_per_host=options["max-subscriptions-per-host"],
            max_subscriptions=options["max-subscriptions"],
        ),
        metrics.counting_client(client),
        store_path=options["state-dir"] / "websub.sqlite3",
        topics=SnapshotTopics(current),
        clock=reactor,
    )


def _sites(
    options: Options,
    current: CurrentSnapshot,
    resources: dict[str, IResource],
    metrics: Metrics,
    reactor: Any,
    access_log: AccessLog | None,
) -> list[tuple[str, ReviewsSite]]:
    """
    The sites and where each listens: the whole service on C{--listen}, and
    with C{--metrics-listen} C{/metrics} and C{/healthz} there instead of
    C{/metrics} on the main one. Each request is counted, and logged unless
    the access log is off.
    """
    resources = dict(resources)
    side: dict[str, IResource] = {}
    if options["metrics-listen"] is None:
        resources[METRICS_PATH] = metrics.resource()
    else:
        side = {METRICS_PATH: metrics.resource(), HEALTH_PATH: resources[HEALTH_PATH]}
    observers: list[RequestObserver] = [metrics.observe_request]
    if access_log is not None:
        observers.append(access_log)
    shared: dict[str, Any] = {
        "idle_timeout": options["idle-timeout"],
        "receive_timeout": options["receive-timeout"],
        "observers": observers,
    }
    main = make_site(
        current,
        reactor,
        resources,
        budget=ClientBudget(
            reactor, options["computed-rate"], options["computed-burst"]
        ),
        connection_limit=ConnectionCount(
            reactor, options["max-connections-per-address"]
        ),
        **shared,
    )
    sites = [(options["listen"], main)]
    if side:
        sites.append(
            (options["metrics-listen"], make_side_site(side, reactor, **shared))
        )
    return sites


def _logged_by_the_hub(failure: Failure) -> None:
    """The hub is not running: it logged why; the rest serves all the same."""


def _serving(listeners: list[Listener], hub: Hub, data: ReviewsData) -> Deferred[str]:
    """
    Fires once every listener listens and the hub has loaded its state (or
    failed to), with the C{STATUS=} line systemd shows: the data is served
    either way, so systemd gets C{READY=1}, and the line says when the hub
    is unavailable.
    """
    waits: list[Deferred[Any]] = [listener.listening() for listener in listeners]
    waits.append(hub.ready().addErrback(_logged_by_the_hub))

    def status(_: object) -> str:
        line = f"Serving {len(data.snapshot.dataset.reviews)} reviews on " + ", ".join(
            listener.description for listener in listeners
        )
        if hub.state == "unavailable":
            line += f"; the WebSub hub is unavailable: {hub.problem}"
        return line

    return gatherResults(waits).addCallback(status)
