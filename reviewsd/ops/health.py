"""
C{GET /healthz}: whether data is loaded and how old it is, for load
balancers, probes and people; the same figures feed the metrics.

200 while the service serves data; 503 before any data is loaded and while
it stops (the listener is closed and requests in flight are finishing), so
that a balancer stops sending it requests.

A WebSub hub that is unavailable (its store unusable) does not make the
answer 503: the data is served, and a balancer should keep sending reads.
The status is C{degraded} instead, and C{hub} and C{hub_problem} say what
is wrong, for monitoring to alert on (as on the C{reviewsd_websub_hub_up}
metric).
"""

from __future__ import annotations

from typing import Any, Protocol

from attrs import frozen
from twisted.internet.interfaces import IReactorTime
from twisted.web.resource import Resource
from twisted.web.server import Request

from reviewsd.data.documents import to_json
from reviewsd.data.links import REVIEWS_PATH, rfc3339
from reviewsd.web.errors import method_not_allowed


class HubStatus(Protocol):
    """What health reads of the WebSub hub (L{reviewsd.websub.Hub})."""

    @property
    def state(self) -> str:
        """C{starting}, C{up}, C{unavailable} or C{stopping}."""

    @property
    def problem(self) -> str | None:
        """Why it is unavailable, naming the file at fault."""


@frozen
class DataStatus:
    """
    What is being served, read from the service holding the snapshot.

    @ivar loaded_at: when the current snapshot was swapped in (the start
        when the holder does not say).
    @ivar modified: the data's C{Last-Modified}: when its files changed.
    @ivar reloads: reloads that swapped new data in; C{reload_failures}:
        reloads refused (the previous data kept serving).
    """

    loaded: bool
    reviews: int
    loaded_at: float
    modified: float | None
    reloads: int
    reload_failures: int


def data_status(source: Any, started: float) -> DataStatus:
    """
    Read C{source} (a L{reviewsd.publishing.service.ReviewsData}) as it is now: its
    C{snapshot}, and the C{loaded_at}, C{reloads} and C{failures} it keeps
    when it reloads.
    """
    snapshot = getattr(source, "snapshot", None)
    loaded_at = getattr(source, "loaded_at", None)
    if snapshot is None:
        return DataStatus(False, 0, started, None, 0, 0)
    document = snapshot.documents.get(REVIEWS_PATH)
    return DataStatus(
        loaded=True,
        reviews=len(snapshot.dataset.reviews),
        loaded_at=started if loaded_at is None else float(loaded_at),
        modified=None if document is None else float(document.last_modified),
        reloads=int(getattr(source, "reloads", 0)),
        reload_failures=int(getattr(source, "failures", 0)),
    )


class HealthResource(Resource):
    """
    The health answer, as JSON: C{status} (C{ok}, C{degraded}, C{starting},
    C{stopping}), C{data_loaded}, C{reviews}, C{loaded_at} and
    C{snapshot_age_seconds}, C{data_modified} and C{data_age_seconds},
    C{reloads}, C{reload_failures}, and with a hub C{hub} (its state) and
    C{hub_problem}.
    """

    isLeaf = True

    def __init__(
        self,
        source: Any,
        clock: IReactorTime,
        started: float,
        hub: HubStatus | None = None,
    ) -> None:
        super().__init__()
        self._source = source
        self._clock = clock
        self._started = started
        self._hub = hub

    def _status(self, loaded: bool, stopping: bool) -> str:
        if stopping:
            return "stopping"
        if not loaded:
            return "starting"
        if self._hub is not None and self._hub.state == "unavailable":
            return "degraded"
        return "ok"

    def answer(self, stopping: bool = False) -> tuple[int, dict[str, Any]]:
        now = self._clock.seconds()
        status = data_status(self._source, self._started)
        body: dict[str, Any] = {
            "status": self._status(status.loaded, stopping),
            "data_loaded": status.loaded,
            "reviews": status.reviews,
            "loaded_at": rfc3339(status.loaded_at),
            "snapshot_age_seconds": round(max(0.0, now - status.loaded_at), 3),
            "data_modified": None
            if status.modified is None
            else rfc3339(status.modified),
            "data_age_seconds": None
            if status.modified is None
            else round(max(0.0, now - status.modified), 3),
            "reloads": status.reloads,
            "reload_failures": status.reload_failures,
        }
        if self._hub is not None:
            body["hub"] = self._hub.state
            body["hub_problem"] = self._hub.problem
        return (200 if status.loaded and not stopping else 503), body

    def render_GET(self, request: Request) -> bytes:
        site = getattr(request, "site", None)
        code, body = self.answer(stopping=bool(getattr(site, "draining", False)))
        request.setResponseCode(code)
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-store")
        data = to_json(body)
        request.setHeader(b"Content-Length", b"%d" % len(data))
        return b"" if request.method == b"HEAD" else data

    render_HEAD = render_GET

    def render(self, request: Request) -> bytes:
        if request.method in (b"GET", b"HEAD"):
            return self.render_GET(request)
        # OPTIONS preflights are answered in front of this resource
        return method_not_allowed(request, b"GET, HEAD, OPTIONS")
