"""
C{GET /metrics}: Prometheus metrics, in a registry of this service's own
(not the process-wide default, so that tests and several services in one
process do not mix).

Counters move as things happen (requests, tool calls, deliveries); what is a
state (the snapshot, subscriptions, sessions, requests in flight) is read
when Prometheus scrapes, by L{_StateCollector}. A scrape runs in a worker
thread (prometheus-client's Twisted resource is WSGI): what it reads from
reactor-thread objects is one atomic copy each (C{len()}, C{list()} of a
dict's values), never an iteration over a live structure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.twisted import MetricsResource
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.resource import IResource, Resource
from twisted.web.server import Request as ServerRequest

from reviewsd.logs import AnsweredRequest
from reviewsd.mcp.tools import Tool, ToolCallError, Tools
from reviewsd.ops.health import data_status

log = Logger()

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class Metrics:
    """
    Every metric of the service, and the hooks that feed them.

    @ivar registry: what C{/metrics} answers from.
    """

    def __init__(self, clock: IReactorTime, started: float | None = None) -> None:
        self.registry = CollectorRegistry()
        self._clock = clock
        self.started = clock.seconds() if started is None else started
        self.requests = Counter(
            "reviewsd_http_requests",
            "HTTP requests answered, by route and status code.",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "reviewsd_http_request_duration_seconds",
            "Time from a request's first line to its last byte handed to the "
            "network, by route.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "reviewsd_mcp_tool_calls",
            "MCP tools/call requests, by tool and outcome (ok, not_found, "
            "invalid, error).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.deliveries = Counter(
            "reviewsd_websub_deliveries",
            "WebSub content delivery attempts, by outcome (acknowledged, "
            "failed, gone).",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("acknowledged", "failed", "gone"):
            self.deliveries.labels(outcome)
        self._children: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._state = _StateCollector(self)
        self.registry.register(self._state)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    # --- what is read at scrape time ---------------------------------------

    def watch(
        self,
        *,
        data: Any = None,
        hub: Any = None,
        sessions: Any = None,
        sites: Iterable[Any] = (),
    ) -> None:
        """
        Read these at each scrape: C{data} (L{reviewsd.publishing.service.ReviewsData}:
        the snapshot, C{loaded_at}, C{reloads}, C{failures}), C{hub}
        (L{reviewsd.websub.Hub}: C{subscriptions()}, C{pending()}),
        C{sessions} (MCP sessions: C{len()}), C{sites} (C{in_flight}).
        """
        if data is not None:
            self._state.data = data
        if hub is not None:
            self._state.hub = hub
        if sessions is not None:
            self._state.sessions = sessions
        self._state.sites = list(sites)

    def resource(self) -> IResource:
        """The C{/metrics} resource: prometheus-client's own, for Twisted."""
        return _HeadAsGet(MetricsResource(self.registry))

    # --- hooks --------------------------------------------------------------

    def observe_request(
        self, request: AnsweredRequest, route: str, duration: float
    ) -> None:
        """An observer of L{reviewsd.web.site.ReviewsSite}: one finished request."""
        key = (route, request.code)
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(route, str(request.code)),
                self.latency.labels(route),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(duration)

    def counting_tools(self, tools: Tools) -> CountingTools:
        return CountingTools(tools, self.tool_calls)

    def counting_client(self, client: Any) -> CountingClient:
        return CountingClient(client, self.deliveries)


class _HeadAsGet(Resource):
    """
    HEAD answered as GET, without the body (Twisted leaves it out): the
    WSGI application of prometheus-client answers HEAD 405. The method is
    read once, as the WSGI environment is made, synchronously.
    """

    isLeaf = True

    def __init__(self, wrapped: IResource) -> None:
        super().__init__()
        self._wrapped = wrapped

    def render(self, request: ServerRequest) -> bytes | int:
        if request.method != b"HEAD":
            return self._wrapped.render(request)
        request.method = b"GET"
        try:
            return self._wrapped.render(request)
        finally:
            request.method = b"HEAD"


class _StateCollector:
    """What is read when Prometheus scrapes."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self.data: Any = None
        self.hub: Any = None
        self.sessions: Any = None
        self.sites: list[Any] = []

    def collect(self) -> Iterator[Metric]:
        now = self._metrics._clock.seconds()
        for part in (self._data, self._hub, self._others):
            try:
                families = list(part(now))
            except Exception:
                # one part that cannot be read must not fail the whole scrape
                log.failure("Cannot read {part} for /metrics", part=part.__name__)
                continue
            yield from families

    def _data(self, now: float) -> Iterator[Metric]:
        if self.data is not None:
            status = data_status(self.data, self._metrics.started)
            yield GaugeMetricFamily(
                "reviewsd_data_loaded",
                "1 once data is loaded and served.",
                value=1 if status.loaded else 0,
            )
            yield GaugeMetricFamily(
                "reviewsd_reviews",
                "Published reviews in the current snapshot.",
                value=status.reviews,
            )
            yield GaugeMetricFamily(
                "reviewsd_snapshot_age_seconds",
                "Seconds since the current snapshot was loaded.",
                value=max(0.0, now - status.loaded_at),
            )
            yield GaugeMetricFamily(
                "reviewsd_snapshot_loaded_timestamp_seconds",
                "When the current snapshot was loaded (Unix time).",
                value=status.loaded_at,
            )
            if status.modified is not None:
                yield GaugeMetricFamily(
                    "reviewsd_data_last_modified_timestamp_seconds",
                    "When the data files last changed (Unix time): the "
                    "documents' Last-Modified.",
                    value=status.modified,
                )
            yield CounterMetricFamily(
                "reviewsd_reloads",
                "Reloads that swapped new data in.",
                value=status.reloads,
            )
            yield CounterMetricFamily(
                "reviewsd_reload_failures",
                "Reloads refused: the data did not load, the previous data "
                "kept serving.",
                value=status.reload_failures,
            )

    def _hub(self, now: float) -> Iterator[Metric]:
        state = getattr(self.hub, "state", None)
        if state is not None:
            yield GaugeMetricFamily(
                "reviewsd_websub_hub_up",
                "1 while the WebSub hub takes requests and stores them; 0 while "
                "it starts, stops, or is unavailable (/healthz's hub_problem and "
                "the log say why).",
                value=1 if state == "up" else 0,
            )
            if state in ("starting", "unavailable"):
                return  # its subscriptions are not known (or not stored)
        if self.hub is not None:
            family = GaugeMetricFamily(
                "reviewsd_websub_subscriptions",
                "WebSub subscriptions by state: active, failing (the last "
                "delivery failed; retrying), pending_subscribe and "
                "pending_unsubscribe (verification of intent not done).",
                labels=["state"],
            )
            counts = {
                "active": 0,
                "failing": 0,
                "pending_subscribe": 0,
                "pending_unsubscribe": 0,
            }
            for subscription in self.hub.subscriptions():
                counts["failing" if subscription.failures else "active"] += 1
            for pending in self.hub.pending():
                counts[f"pending_{pending.mode}"] = (
                    counts.get(f"pending_{pending.mode}", 0) + 1
                )
            for state, count in counts.items():
                family.add_metric([state], count)
            yield family

    def _others(self, now: float) -> Iterator[Metric]:
        if self.sessions is not None:
            yield GaugeMetricFamily(
                "reviewsd_mcp_sessions",
                "Open MCP sessions.",
                value=len(self.sessions),
            )
        if self.sites:
            yield GaugeMetricFamily(
                "reviewsd_http_requests_in_flight",
                "HTTP requests begun and not yet answered.",
                value=sum(len(site.in_flight) for site in self.sites),
            )


class CountingTools:
    """
    The MCP tool registry, counting each call by tool and outcome; the tool
    label is C{unknown} for names that are not tools, so that callers cannot
    make up labels.
    """

    def __init__(self, tools: Tools, calls: Counter) -> None:
        self._tools = tools
        self._calls = calls
        self._names = frozenset(tool.name for tool in tools)
        self.listing = tools.listing
        self.source = tools.source

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def title(self) -> str:
        return self._tools.title()

    def instructions(self) -> str:
        return self._tools.instructions()

    def call(self, name: str, arguments: Any) -> bytes:
        label = name if name in self._names else "unknown"
        try:
            result: bytes = self._tools.call(name, arguments)
        except ToolCallError:
            self._calls.labels(label, "invalid").inc()
            raise
        except Exception:
            self._calls.labels(label, "error").inc()
            raise
        outcome = "not_found" if result.endswith(b'"isError":true}') else "ok"
        self._calls.labels(label, outcome).inc()
        return result


class CountingClient:
    """
    The hub's outbound client, counting content deliveries (its POSTs) by
    outcome; verification requests (GETs) pass through.
    """

    def __init__(self, client: Any, deliveries: Counter) -> None:
        self._client = client
        self._deliveries = deliveries

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def get(self, url: str, **kwargs: Any) -> Deferred[Any]:
        return self._client.get(url, **kwargs)

    def post(self, url: str, data: bytes | None = None, **kwargs: Any) -> Deferred[Any]:
        d: Deferred[Any] = self._client.post(url, data=data, **kwargs)

        def answered(response: Any) -> Any:
            code = response.code
            outcome = (
                "acknowledged"
                if 200 <= code < 300
                else ("gone" if code == 410 else "failed")
            )
            self._deliveries.labels(outcome).inc()
            return response

        def failed(failure: Failure) -> Failure:
            if not failure.check(CancelledError):  # stopping: not an outcome
                self._deliveries.labels("failed").inc()
            return failure

        return d.addCallbacks(answered, failed)
