"""
Request limits and timeouts: bodies capped per route, bounded headers,
idle connections closed and slow clients dropped.
"""

from __future__ import annotations

from typing import Any

from reviewsd.data.links import HUB_PATH
from tests.support.site import INITIALIZE, Connection, SiteTestCase


class LimitTests(SiteTestCase):
    def test_bodies_capped_per_route(self) -> None:
        connection = Connection(self.site)
        answer = self.mcp_post(connection, b" " * (1024 * 1024 + 1))
        self.assertEqual(answer.code, 413)
        answer = self.mcp_post(connection, INITIALIZE + b" " * (512 * 1024))
        self.assertEqual(answer.code, 200)
        form = "Content-Type: application/x-www-form-urlencoded"
        self.assertEqual(self.site.body_limit(b"/api/websub/hub?x=1"), 64 * 1024)
        self.assertEqual(self.site.body_limit(b"http://h.example/mcp"), 1024 * 1024)
        self.assertEqual(self.site.body_limit(b"/reviews.json"), 0)
        answer = connection.request("POST", HUB_PATH, form, body=b"a" * 70_000)
        self.assertEqual(answer.body, b"hub")  # the stand-in answers...
        self.assertTrue(self.last_request().too_large)  # ...but the hub's is 413

    def last_request(self) -> Any:
        return self.site_requests[-1][0]

    def last_body(self) -> bytes | None:
        return self.site_requests[-1][1]

    def setUp(self) -> None:
        super().setUp()
        self.site_requests: list[Any] = []
        self.site.observers.append(self.keep)

    def keep(self, request: Any, route: str, duration: float) -> None:
        kept = None
        if request.content is not None:
            request.content.seek(0)
            kept = request.content.read()
        self.site_requests.append((request, kept))

    def test_get_only_routes_keep_no_body(self) -> None:
        connection = Connection(self.site)
        answer = connection.request("GET", "/reviews.json", body=b"x" * 5000)
        self.assertEqual(answer.code, 200)
        request = self.last_request()
        self.assertFalse(request.too_large)
        self.assertEqual(self.last_body(), b"")
        answer = connection.request("POST", "/reviews.json", body=b"{}")
        self.assertEqual(answer.code, 405)

    def test_chunked_body_over_the_limit(self) -> None:
        connection = Connection(self.site)
        chunk = b"%x\r\n%s\r\n" % (40_000, b"a" * 40_000)
        connection.send(
            b"POST /api/websub/hub HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 2 + b"0\r\n\r\n"
        )
        self.assertTrue(self.last_request().too_large)
        self.assertEqual(self.last_body(), b"")

    def test_headers_are_bounded(self) -> None:
        """16 KiB of request line and headers; one line of 16 KiB at most."""
        many = [f"X-Header-{n}: {'a' * 100}" for n in range(200)]
        connection = Connection(self.site)
        answer = connection.request("GET", "/reviews.json", *many)
        self.assertEqual(answer.code, 400)
        self.assertFalse(connection.transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        connection = Connection(self.site)
        connection.send(b"GET /reviews.json HTTP/1.1\r\nX-Big: " + b"a" * 20_000)
        self.assertFalse(connection.transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        self.assertEqual(len(self.site.connections), 0)

    def test_idle_timeout(self) -> None:
        self.assertEqual(self.site.timeOut, 60)
        connection = Connection(self.site)
        self.clock.advance(59)
        self.assertTrue(connection.transport.connected)
        self.clock.advance(2)
        self.assertFalse(connection.transport.connected)

    def test_slow_clients_are_dropped(self) -> None:
        trickling = Connection(self.site, "198.51.100.1")
        idle = Connection(self.site, "198.51.100.2")
        fast = Connection(self.site, "198.51.100.3")
        for second in range(29):
            trickling.send(b"GET /reviews.json HTTP/1.1\r\n"[second : second + 1])
            self.clock.advance(1)
            self.assertEqual(self.site.drop_slow_clients(), 0)
        fast.request("GET", "/reviews.json")
        self.clock.advance(2)
        self.assertEqual(self.site.drop_slow_clients(), 1)
        self.assertFalse(trickling.transport.connected)
        self.assertTrue(idle.transport.connected)
        self.assertTrue(fast.transport.connected)
        [event] = [
            e for e in self.events if "took more than" in e.get("log_format", "")
        ]
        self.assertEqual(event["client"], "198.51.100.1")
