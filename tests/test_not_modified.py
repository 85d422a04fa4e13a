"""
A 304 as it goes on the wire: no Content-Length, the validators kept.
"""

from __future__ import annotations

from tests.support.site import Connection, SiteTestCase


class NotModifiedTests(SiteTestCase):
    def test_no_content_length(self) -> None:
        """A 304 is sent as it is, without twisted.web's Content-Length: 0."""
        connection = Connection(self.site)
        for path in ("/reviews.json", "/api/reviews/since/2025-01-01"):
            for method in ("GET", "HEAD"):
                tag = connection.request("GET", path).headers["etag"]
                answer = connection.request(method, path, f"If-None-Match: {tag}")
                self.assertEqual((answer.code, answer.body), (304, b""), path)
                self.assertNotIn("content-length", answer.headers, path)
                self.assertEqual(answer.headers["etag"], tag)
                self.assertEqual(answer.headers["access-control-allow-origin"], "*")
