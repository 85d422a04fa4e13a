"""
HTTP behaviour of the main site, in memory: the documents (validators,
conditional requests, HEAD, gzip, CORS), JSON errors, what Klein still
answers beside the fast path, and the observers of answered requests.
"""

from __future__ import annotations

import gzip
import json
from email.utils import formatdate
from typing import Any

from treq import content
from treq.testing import RequestTraversalAgent
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers
from twisted.web.server import Request
from twisted.web.static import Data
from twisted.web.test.requesthelper import DummyRequest

from reviewsd.data.links import HEALTH_PATH
from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.snapshot import Snapshot
from reviewsd.ops.health import HealthResource
from reviewsd.web.conditional import CACHE_CONTROL, accepts_gzip, serve_document
from reviewsd.web.site import ReviewsSite, make_side_site, make_site
from tests.support import Holder, snapshot_of
from tests.support.site import Answer as WireAnswer
from tests.support.site import Connection, SiteTestCase

URL = "http://reviews.example.com"
TOPICS = {
    "/reviews.json": "application/json",
    "/api/feed.json": "application/json",
    "/feed.xml": "application/atom+xml",
}
DOCUMENTS = {
    **TOPICS,
    "/insights.json": "application/json",
    "/llms.txt": "text/plain; charset=utf-8",
    "/.well-known/openapi.json": "application/json",
}
SNAPSHOT = snapshot_of(DEMO_DATA)


class Answer:
    """
    A response as sent: read through the bare agent, because treq would ask
    for gzip and decode it, and Twisted's client hides Content-Length.
    """

    def __init__(self, response: Any, body: bytes) -> None:
        self.code = response.code
        self.headers = response.headers
        self.body = body
        self.length = response.length

    def header(self, name: str) -> str | None:
        values = self.headers.getRawHeaders(name.encode("ascii"))
        return None if values is None else values[-1].decode("latin-1")


class DocumentHTTPTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.agent = RequestTraversalAgent(make_site(Holder(SNAPSHOT)).resource)

    def request(self, method: str, path: str, **headers: str) -> Answer:
        response = self.successResultOf(
            self.agent.request(
                method.encode("ascii"),
                (URL + path).encode("ascii"),
                Headers({k.replace("_", "-"): [v] for k, v in headers.items()}),
            )
        )
        return Answer(response, self.successResultOf(content(response)))

    def test_get(self) -> None:
        """Every document answers with its bytes, type, validators and CORS."""
        for path, content_type in DOCUMENTS.items():
            answer = self.request("GET", path)
            document = SNAPSHOT.documents[path]
            self.assertEqual(answer.code, 200)
            self.assertEqual(answer.body, document.identity.body)
            self.assertEqual(answer.header("Content-Type"), content_type)
            self.assertEqual(answer.length, len(answer.body))
            etag = answer.header("ETag")
            assert etag is not None
            self.assertRegex(etag, r'^"[A-Za-z0-9_-]{22}"$')
            self.assertEqual(
                answer.header("Last-Modified"),
                formatdate(document.last_modified, usegmt=True),
            )
            self.assertEqual(answer.header("Access-Control-Allow-Origin"), "*")
            self.assertEqual(answer.header("Vary"), "Accept-Encoding")
            if path in TOPICS:  # WebSub discovery on the three topics
                self.assertIn('rel="hub"', answer.header("Link") or "")
                self.assertIn(
                    f'<https://reviews.example.com{path}>; rel="self"',
                    answer.header("Link") or "",
                )
            else:
                self.assertIsNone(answer.header("Link"))

    def test_query_string_ignored(self) -> None:
        self.assertEqual(self.request("GET", "/reviews.json?x=1").code, 200)

    def test_if_none_match(self) -> None:
        """A matching tag (alone, in a list, weak, or *) gives 304 with no body."""
        etag = self.request("GET", "/feed.xml").header("ETag")
        assert etag is not None
        for value in (etag, f'"nope", {etag}', f"W/{etag}", "*", f' "a" ,W/{etag} '):
            answer = self.request("GET", "/feed.xml", If_None_Match=value)
            self.assertEqual((answer.code, answer.body), (304, b""), value)
            self.assertEqual(answer.header("ETag"), etag)
            self.assertIsNotNone(answer.header("Last-Modified"))
        for value in ('"nope"', etag.strip('"'), 'W/"other"'):
            self.assertEqual(
                self.request("GET", "/feed.xml", If_None_Match=value).code, 200, value
            )

    def test_if_modified_since(self) -> None:
        last = self.request("GET", "/reviews.json").header("Last-Modified")
        assert last is not None
        earlier = formatdate(
            SNAPSHOT.documents["/reviews.json"].last_modified - 1, usegmt=True
        )
        later = formatdate(
            SNAPSHOT.documents["/reviews.json"].last_modified + 3600, usegmt=True
        )
        self.assertEqual(
            self.request("GET", "/reviews.json", If_Modified_Since=last).code, 304
        )
        self.assertEqual(
            self.request("GET", "/reviews.json", If_Modified_Since=later).code, 304
        )
        self.assertEqual(
            self.request("GET", "/reviews.json", If_Modified_Since=earlier).code, 200
        )
        self.assertEqual(
            self.request("GET", "/reviews.json", If_Modified_Since="yesterday").code,
            200,
        )

    def test_if_none_match_decides_over_if_modified_since(self) -> None:
        last = self.request("GET", "/reviews.json").header("Last-Modified")
        answer = self.request(
            "GET",
            "/reviews.json",
            If_None_Match='"stale"',
            If_Modified_Since=last or "",
        )
        self.assertEqual(answer.code, 200)

    def test_head(self) -> None:
        for path in DOCUMENTS:
            get = self.request("GET", path)
            head = self.request("HEAD", path)
            self.assertEqual((head.code, head.body), (200, b""))
            for name in ("ETag", "Content-Type", "Last-Modified"):
                self.assertEqual(head.header(name), get.header(name), name)
            etag = get.header("ETag") or ""
            self.assertEqual(self.request("HEAD", path, If_None_Match=etag).code, 304)

    def test_gzip(self) -> None:
        """gzip when accepted, with its own strong tag, decoding to the same bytes."""
        plain = self.request("GET", "/reviews.json")
        packed = self.request(
            "GET", "/reviews.json", Accept_Encoding="gzip, deflate, br"
        )
        self.assertEqual(packed.header("Content-Encoding"), "gzip")
        self.assertEqual(packed.length, len(packed.body))
        self.assertLess(len(packed.body), len(plain.body) // 3)
        self.assertEqual(gzip.decompress(packed.body), plain.body)
        self.assertNotEqual(packed.header("ETag"), plain.header("ETag"))
        again = self.request(
            "GET",
            "/reviews.json",
            Accept_Encoding="gzip",
            If_None_Match=packed.header("ETag") or "",
        )
        self.assertEqual(again.code, 304)
        refused = self.request(
            "GET", "/reviews.json", Accept_Encoding="gzip;q=0, identity"
        )
        self.assertIsNone(refused.header("Content-Encoding"))
        self.assertEqual(refused.body, plain.body)

    def test_accept_encoding_parsing(self) -> None:
        for value, expected in [
            (None, False),
            (b"", False),
            (b"identity", False),
            (b"gzip", True),
            (b"GZIP", True),
            (b"x-gzip", True),
            (b"br;q=1.0, gzip;q=0.5", True),
            (b"gzip;q=0", False),
            (b"gzip;q=0.0, *;q=1", False),
            (b"*", True),
            (b"*;q=0", False),
            (b"gzip;q=bogus", False),
        ]:
            self.assertEqual(accepts_gzip(value), expected, value)

    def test_authorization_ignored(self) -> None:
        plain = self.request("GET", "/reviews.json")
        with_auth = self.request(
            "GET", "/reviews.json", Authorization="Bearer nonsense"
        )
        self.assertEqual((with_auth.code, with_auth.body), (200, plain.body))

    def test_not_found_is_json(self) -> None:
        for path in ("/nope", "/reviews.json/", "/api/feed.xml", "/" + "a" * 5000):
            answer = self.request("GET", path)
            self.assertEqual(answer.code, 404, path)
            self.assertEqual(answer.header("Content-Type"), "application/json")
            error = json.loads(answer.body)
            self.assertEqual(error["error"], "not_found")
            self.assertIsInstance(error["message"], str)

    def test_undecodable_path_is_a_json_400(self) -> None:
        for path in ("/%ff%00", "/api/%c3%28"):
            answer = self.request("GET", path)
            self.assertEqual(answer.code, 400, path)
            self.assertEqual(json.loads(answer.body)["error"], "bad_request")

    def test_method_not_allowed_is_json(self) -> None:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            answer = self.request(method, "/api/feed.json")
            self.assertEqual(answer.code, 405)
            self.assertEqual(answer.header("Allow"), "GET, HEAD, OPTIONS")
            self.assertEqual(json.loads(answer.body)["error"], "method_not_allowed")

    def test_computed_routes_off_the_fast_path(self) -> None:
        """
        GET and HEAD of search and since skip Klein's routing; every other
        request on those paths is still routed, and answered, by Klein.
        """
        for method, path in (
            ("POST", "/api/reviews/search"),
            ("DELETE", "/api/reviews/since/2025-01-01"),
            ("PUT", "/api/reviews/search"),
        ):
            answer = self.request(method, path)
            self.assertEqual(answer.code, 405, (method, path))
            self.assertEqual(
                answer.header("Allow"), "GET, HEAD, OPTIONS", (method, path)
            )
            self.assertEqual(answer.header("Content-Type"), "application/json")
            self.assertEqual(json.loads(answer.body)["error"], "method_not_allowed")
        for path in ("/api/reviews/since/2025-01-01/more", "/api/reviews/sinc"):
            answer = self.request("GET", path)
            self.assertEqual(answer.code, 404, path)
            self.assertEqual(json.loads(answer.body)["error"], "not_found")

    def test_fast_path_and_klein_agree(self) -> None:
        """A since date with percent-escapes goes to Klein: the same answer."""
        direct = self.request("GET", "/api/reviews/since/2025-01-01")
        routed = self.request("GET", "/api/reviews/since/2025%2D01%2D01")
        self.assertEqual((routed.code, routed.body), (200, direct.body))
        self.assertEqual(routed.header("ETag"), direct.header("ETag"))
        bad = self.request("GET", "/api/reviews/since/2025%2D13%2D01")
        self.assertEqual(bad.code, 400)
        self.assertEqual(
            json.loads(bad.body)["error"],
            json.loads(self.request("GET", "/api/reviews/since/2025-13-01").body)[
                "error"
            ],
        )

    def test_pages(self) -> None:
        """The HTML pages: a strict CSP, and / sends JSON clients to the dataset."""
        for path in ("/", "/developers"):
            answer = self.request("GET", path)
            self.assertEqual(answer.code, 200)
            self.assertEqual(answer.header("Content-Type"), "text/html; charset=utf-8")
            self.assertIn(
                "default-src 'none'", answer.header("Content-Security-Policy") or ""
            )
            self.assertIsNotNone(answer.header("ETag"))
        home = self.request("GET", "/")
        self.assertEqual(home.header("Vary"), "Accept-Encoding, Accept")
        self.assertIn('/reviews.json>; rel="alternate"', home.header("Link") or "")
        style = self.request("GET", "/style.css")
        self.assertEqual(style.header("Content-Type"), "text/css; charset=utf-8")
        self.assertIsNone(style.header("Content-Security-Policy"))
        for accept in ("application/json", "application/json, text/html;q=0.5"):
            redirect = self.request("GET", "/", Accept=accept)
            self.assertEqual(redirect.code, 303, accept)
            self.assertEqual(
                redirect.header("Location"), "https://reviews.example.com/reviews.json"
            )
            self.assertEqual(redirect.header("Vary"), "Accept")
        for accept in ("text/html,application/xhtml+xml,*/*;q=0.8", "*/*"):
            self.assertEqual(self.request("GET", "/", Accept=accept).code, 200, accept)

    def test_caching_policy_documented(self) -> None:
        """The developer guide states the Cache-Control the answers carry."""
        answer = self.request("GET", "/reviews.json")
        policy = answer.header("Cache-Control") or ""
        self.assertEqual(policy.encode(), CACHE_CONTROL)
        self.assertIn(policy, self.request("GET", "/developers").body.decode())

    def test_a_fault_is_a_json_500(self) -> None:
        """A fault in a computed route is logged, and answered as JSON."""

        def broken(snapshot: Snapshot, query: object) -> bytes:
            raise RuntimeError("the index is broken")

        self.patch(Snapshot, "search", broken)
        answer = self.request("GET", "/api/reviews/search?rating=5")
        self.assertEqual(answer.code, 500)
        self.assertEqual(answer.header("Content-Type"), "application/json")
        self.assertEqual(json.loads(answer.body)["error"], "internal_error")
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_cors_preflight(self) -> None:
        answer = self.request(
            "OPTIONS",
            "/reviews.json",
            Origin="https://app.example",
            Access_Control_Request_Method="GET",
            Access_Control_Request_Headers="if-none-match",
        )
        self.assertEqual(answer.code, 204)
        self.assertEqual(answer.header("Access-Control-Allow-Origin"), "*")
        self.assertIn(
            "If-None-Match", answer.header("Access-Control-Allow-Headers") or ""
        )

    def test_preflight_on_every_get_route(self) -> None:
        """
        OPTIONS is answered as on the documents on search, since and
        C{/healthz} (mounted on the main site or on a side one), whose GET
        answers carry the same CORS header.
        """
        clock = MemoryReactorClock()
        health = HealthResource(Holder(SNAPSHOT), clock, 0.0)
        sites = [
            make_site(Holder(SNAPSHOT), clock, {HEALTH_PATH: health}),
            make_side_site({HEALTH_PATH: health}, clock),
        ]
        self.agent = RequestTraversalAgent(sites[0].resource)
        expected = self.preflight("/reviews.json")
        for path in (
            "/api/reviews/search",
            "/api/reviews/search?rating=5",
            "/api/reviews/since/2025-01-01",
            "/api/reviews/since/2025-13-01",
            HEALTH_PATH,
        ):
            self.assertEqual(self.preflight(path), expected, path)
        self.agent = RequestTraversalAgent(sites[1].resource)
        self.assertEqual(self.preflight(HEALTH_PATH), expected)
        for site in sites:
            self.agent = RequestTraversalAgent(site.resource)
            for method in ("GET", "HEAD"):
                answer = self.request(method, HEALTH_PATH)
                self.assertEqual(answer.code, 200)
                self.assertEqual(answer.header("Access-Control-Allow-Origin"), "*")

    def preflight(self, path: str) -> tuple[int, bytes, dict[str, str | None]]:
        answer = self.request(
            "OPTIONS",
            path,
            Origin="https://app.example",
            Access_Control_Request_Method="GET",
            Access_Control_Request_Headers="if-none-match",
        )
        names = (
            "Allow",
            "Access-Control-Allow-Origin",
            "Access-Control-Allow-Methods",
            "Access-Control-Allow-Headers",
            "Access-Control-Max-Age",
            "Content-Length",
        )
        return answer.code, answer.body, {name: answer.header(name) for name in names}


class HostTests(SiteTestCase):
    """RFC 9112, 3.2: an HTTP/1.1 request without Host is answered 400."""

    def test_http_1_1_without_host(self) -> None:
        connection = Connection(self.site)
        for method in ("GET", "HEAD", "POST"):
            connection.transport.clear()
            connection.send(f"{method} /reviews.json HTTP/1.1\r\n\r\n".encode())
            answer = WireAnswer(connection.transport.value())
            self.assertEqual(answer.code, 400, method)
            self.assertEqual(answer.headers["content-type"], "application/json")
            if method != "HEAD":
                self.assertEqual(json.loads(answer.body)["error"], "bad_request")
                length = int(answer.headers["content-length"])
                self.assertEqual(length, len(answer.body))
        self.assertTrue(connection.transport.connected)
        self.assertEqual(connection.request("GET", "/reviews.json").code, 200)

    def test_http_1_0_needs_no_host(self) -> None:
        connection = Connection(self.site)
        connection.send(b"GET /reviews.json HTTP/1.0\r\n\r\n")
        self.assertEqual(WireAnswer(connection.transport.value()).code, 200)


class PrecomputedTests(SynchronousTestCase):
    """Serving a document hands out bytes built once, not per request."""

    def test_bytes_are_shared(self) -> None:
        document = SNAPSHOT.documents["/reviews.json"]
        assert document.gzipped is not None
        for encoding, expected in (
            (b"gzip", document.gzipped.body),
            (b"", document.identity.body),
        ):
            for _ in range(2):
                request = DummyRequest([b"reviews.json"])
                request.requestHeaders.setRawHeaders(b"accept-encoding", [encoding])
                self.assertIs(serve_document(request, document), expected)


class ObserverTests(SynchronousTestCase):
    """The observers of answered requests are given to the site as it is made."""

    def exchange(self, site: ReviewsSite, path: bytes) -> None:
        channel = site.buildProtocol(None)
        channel.makeConnection(StringTransport())
        channel.dataReceived(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")

    def test_observers(self) -> None:
        seen: list[tuple[bytes, str, int]] = []

        def observe(request: Request, route: str, duration: float) -> None:
            seen.append((request.path, route, request.code))

        main = make_site(Holder(SNAPSHOT), MemoryReactorClock(), observers=[observe])
        side = make_side_site(
            {"/metrics": Data(b"", "text/plain")},
            MemoryReactorClock(),
            observers=(observe,),
        )
        self.exchange(main, b"/reviews.json")
        self.exchange(main, b"/api/reviews/since/2025-01-01")
        self.exchange(side, b"/metrics")
        self.exchange(side, b"/nope")
        self.assertEqual(
            seen,
            [
                (b"/reviews.json", "/reviews.json", 200),
                (b"/api/reviews/since/2025-01-01", "/api/reviews/since/{date}", 200),
                (b"/metrics", "/metrics", 200),
                (b"/nope", "other", 404),
            ],
        )
        self.assertEqual(
            make_site(Holder(SNAPSHOT), MemoryReactorClock()).observers, []
        )
