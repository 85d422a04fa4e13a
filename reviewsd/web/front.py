"""
The root resources: L{Front} answers the main listener (documents from the
snapshot, the computed routes, mounted resources), L{PathMap} a side one.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.web.http import NOT_MODIFIED
from twisted.web.resource import IResource, Resource
from twisted.web.server import NOT_DONE_YET, Request

from reviewsd.data.links import (
    HEALTH_PATH,
    HOME_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    SEARCH_PATH,
    SINCE_PATH,
)
from reviewsd.data.snapshot import (
    Document,
    Representation,
    Snapshot,
    SnapshotSource,
)
from reviewsd.twisted_private import RawHeaders, raw_block, set_raw
from reviewsd.web.conditional import (
    accepts_gzip,
    document_answers,
    not_modified_by,
    serve_document,
)
from reviewsd.web.errors import (
    internal_error,
    json_error,
    method_not_allowed,
    not_found,
)
from reviewsd.web.pages import prefers_json
from reviewsd.web.routes import ReviewsAPI
from reviewsd.web.streaming import LARGE_BODY, stream

_READ_METHODS = b"GET, HEAD, OPTIONS"
_CORS = raw_block((b"Access-Control-Allow-Origin", b"*"))
_SINCE_PREFIX = SINCE_PATH + "/"
_READ_ONLY_MOUNTS = frozenset({HEALTH_PATH})
"""
Mounted resources read with GET alone, answered like the documents for
CORS: C{Access-Control-Allow-Origin} on GET and HEAD, OPTIONS preflights.
(C{/metrics} is for Prometheus, not web pages; C{/mcp} and the hub answer
their own.)
"""


def _decodable(request: Request) -> bool:
    """Whether Klein can decode the URL; it would log an error otherwise."""
    host = request.getHeader(b"host")
    path = request.path
    if path.isascii() and b"%" not in path and (host is None or host.isascii()):
        return True  # (nearly every request)
    try:
        b"/".join(request.postpath or ()).decode("utf-8")
        request.getRequestHostname().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _sent(request: Request, body: bytes) -> int:
    """
    Write an answer whose headers are all set, and end it. Written here, not
    returned: twisted.web would add C{Content-Length: 0} to a 304, which RFC
    9110 forbids. A large body is written a chunk at a time (L{stream}).
    """
    if len(body) >= LARGE_BODY:
        return stream(request, body)
    request.write(body)
    request.finish()
    return NOT_DONE_YET


class Front(Resource):
    """
    The root: the fixed documents are answered straight from the snapshot,
    mounted C{resources} by exact path, everything else by the Klein
    application C{api}.

    GET and HEAD of the computed routes (search, since) call C{api}'s route
    methods directly too, bypassing Klein's routing: binding werkzeug's URL
    map to each request, matching it, and the Deferreds and finish
    notifications around each answer cost about 40% of their throughput (as
    they would of the documents, which are most of the traffic). Everything
    else on those paths still goes through Klein and gets its answers: other
    methods (405 with C{Allow}), unknown paths (404), percent-escapes
    decoded, and the JSON errors of L{ReviewsAPI}.
    """

    isLeaf = True

    def __init__(
        self,
        source: SnapshotSource,
        api: ReviewsAPI,
        resources: dict[str, IResource] | None = None,
    ) -> None:
        super().__init__()
        self._source = source
        self._reviews_api = api
        self._klein_resource: IResource = api.app.resource()
        self._resources = resources or {}
        # what render answers otherwise than with serve_document
        self.prepared = PreparedAnswers(source, {HOME_PATH, *self._resources})

    def _direct(self, request: Request, path: str) -> bytes | int | None:
        """
        GET or HEAD of a computed route, answered by its route method
        without Klein's routing; C{None} for any other path.
        """
        day = path[len(_SINCE_PREFIX) :]
        answer: bytes | Deferred[bytes]
        try:
            if path == SEARCH_PATH:
                answer = self._reviews_api.search(request)
            elif path.startswith(_SINCE_PREFIX) and "/" not in day and "%" not in day:
                # (percent-escapes go to Klein, which decodes them)
                answer = self._reviews_api.since(request, day)
            else:
                return None
        except Exception:
            return internal_error(request, Failure())
        if isinstance(answer, bytes):
            if request.code == NOT_MODIFIED or len(answer) >= LARGE_BODY:
                return _sent(request, answer)
            return answer

        gone: list[Failure] = []
        request.notifyFinish().addErrback(gone.append)

        def send(body: bytes) -> None:
            if not gone:  # the client may have left while the answer was made
                _sent(request, body)

        answer.addErrback(lambda failure: internal_error(request, failure))
        answer.addCallback(send)
        return NOT_DONE_YET

    def render(self, request: Request) -> bytes | int:
        path = request.path.decode("latin-1")
        resource = self._resources.get(path)
        if resource is not None:
            return _mounted(request, path, resource)
        if getattr(request, "too_large", False):
            # (only a CappedRequest is ever too large, and it has its limit)
            return json_error(
                request,
                413,
                "too_large",
                "Request bodies are limited to "
                f"{getattr(request, 'body_limit', 0)} bytes.",
            )
        snapshot = self._source.snapshot
        document = snapshot.documents.get(path)
        method = request.method
        # (a path answered otherwise than by serve_document, below, is one
        # that PreparedAnswers must leave out: it answers the others itself)
        if path == HOME_PATH and prefers_json(request.getHeader(b"accept")):
            # one URL per representation: JSON clients are sent to the dataset
            request.setResponseCode(303)
            request.setHeader(b"Location", snapshot.links.reviews.encode())
            request.setHeader(b"Vary", b"Accept")
            request.setHeader(b"Access-Control-Allow-Origin", b"*")
            return b""
        if document is None:
            if method in (b"GET", b"HEAD"):
                set_raw(request, _CORS)
            if not _decodable(request):
                return json_error(
                    request,
                    400,
                    "bad_request",
                    "The path and Host header must be UTF-8 once percent-decoded.",
                )
            if method in (b"GET", b"HEAD"):
                direct = self._direct(request, path)
                if direct is not None:
                    return direct
            elif method == b"OPTIONS" and _computed(path):
                return _sent(request, _preflight(request))
            return self._klein_resource.render(request)
        if method in (b"GET", b"HEAD"):
            body = serve_document(request, document)
        elif method == b"OPTIONS":
            body = _preflight(request)
        else:
            body = method_not_allowed(request, _READ_METHODS)
            request.setHeader(b"Content-Length", b"%d" % len(body))
        return _sent(request, body)


def _wire(block: RawHeaders) -> bytes:
    """Headers as they are written: a line for each value."""
    return b"".join(
        b"%s: %s\r\n" % (name, value)
        for name, values in block.items()
        for value in values
    )


class _Wire:
    """
    One representation of a document as bytes: its ETag, its headers after
    C{Date} to the blank line, for a 304 and for a 200, and its body.
    """

    __slots__ = ("etag", "not_modified", "ok", "body")

    def __init__(self, answer: tuple[Representation, RawHeaders, RawHeaders]) -> None:
        representation, always, ok = answer
        self.etag = representation.etag
        self.not_modified = _wire(always) + b"\r\n"
        self.ok = _wire(always) + _wire(ok) + b"\r\n"
        self.body = representation.body


class PreparedDocument:
    """A document's answers as bytes (L{PreparedAnswers})."""

    __slots__ = ("identity", "gzipped", "last_modified")

    def __init__(self, document: Document) -> None:
        identity, gzipped = document_answers(document)
        self.identity = _Wire(identity)
        self.gzipped = None if gzipped is None else _Wire(gzipped)
        self.last_modified = document.last_modified

    def answer(
        self,
        head: bool,
        none_match: Sequence[bytes] | None,
        since: Sequence[bytes] | None,
        accept_encoding: bytes | None,
    ) -> tuple[int, bytes, bytes] | None:
        """
        The answer to GET (or HEAD, if C{head}) with these headers: its
        status, its headers after C{Date}, its body; or C{None} if the
        request must answer it (a large body).
        """
        wire = self.identity
        if self.gzipped is not None and accepts_gzip(accept_encoding):
            wire = self.gzipped
        if not_modified_by(none_match, since, wire.etag, self.last_modified):
            return 304, wire.not_modified, b""
        if head:
            return 200, wire.ok, b""
        if len(wire.body) >= LARGE_BODY:
            return None
        return 200, wire.ok, wire.body


class PreparedAnswers:
    """
    The answers to GET and HEAD of the documents, as bytes: what a channel
    writes at once, without making a request object, for a request with
    nothing unusual about it. They are made from the header blocks
    L{serve_document} sets, once per document and snapshot, so that both
    ways send the same bytes.

    Left to the request, and so to L{Front.render}: the paths in
    C{excluded} (answered otherwise there), and bodies of L{LARGE_BODY} or
    more, which the request's write streams (L{stream}).
    """

    def __init__(self, source: SnapshotSource, excluded: Collection[str]) -> None:
        self._source = source
        self._excluded = frozenset(path.encode("latin-1") for path in excluded)
        self._snapshot: Snapshot | None = None
        self._documents: dict[bytes, PreparedDocument] = {}

    def find(self, path: bytes) -> PreparedDocument | None:
        """The prepared answers for C{path}, if it is a document's."""
        snapshot = self._source.snapshot
        if snapshot is not self._snapshot:
            self._snapshot, self._documents = snapshot, {}
        prepared = self._documents.get(path)
        if prepared is None:
            if path in self._excluded:
                return None
            document = snapshot.documents.get(path.decode("latin-1"))
            if document is None:
                return None
            prepared = self._documents[path] = PreparedDocument(document)
        return prepared


def _computed(path: str) -> bool:
    """
    Whether C{path} is a GET route of L{ReviewsAPI}: search, since, or one
    review's record or page.
    """
    if path == SEARCH_PATH:
        return True
    for prefix in (REVIEW_RECORD_PREFIX, REVIEW_PAGE_PREFIX):
        if path.startswith(prefix) and "/" not in path[len(prefix) :]:
            return True
    return path.startswith(_SINCE_PREFIX) and "/" not in path[len(_SINCE_PREFIX) :]


def _mounted(request: Request, path: str, resource: IResource) -> bytes | int:
    """A mounted resource's answer, with the CORS of the read-only ones."""
    if path in _READ_ONLY_MOUNTS:
        if request.method == b"OPTIONS":
            return _sent(request, _preflight(request))
        if request.method in (b"GET", b"HEAD"):
            set_raw(request, _CORS)
    return resource.render(request)


def _preflight(request: Request) -> bytes:
    """
    The answer to OPTIONS on a GET route (a document, search, since,
    C{/healthz}), a CORS preflight most often.
    """
    request.setResponseCode(204)
    for name, value in (
        (b"Allow", _READ_METHODS),
        (b"Access-Control-Allow-Origin", b"*"),
        (b"Access-Control-Allow-Methods", _READ_METHODS),
        (b"Access-Control-Allow-Headers", b"If-None-Match, If-Modified-Since"),
        (b"Access-Control-Max-Age", b"86400"),
    ):
        request.setHeader(name, value)
    return b""


class PathMap(Resource):
    """Resources by exact path, and JSON 404s: the root of a side listener."""

    isLeaf = True

    def __init__(self, resources: dict[str, IResource]) -> None:
        super().__init__()
        self._resources = resources

    def render(self, request: Request) -> bytes | int:
        path = request.path.decode("latin-1")
        resource = self._resources.get(path)
        if resource is None:
            return not_found(request)
        return _mounted(request, path, resource)
