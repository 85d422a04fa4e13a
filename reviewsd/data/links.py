"""
The public paths of the service, and their absolute URLs under a base URL.

Feeds, pages, WebSub topics, link headers, metrics labels and the health
check all name these, so they live in one place.
"""

from __future__ import annotations

from datetime import datetime, timezone

from attrs import frozen

HOME_PATH = "/"
DEVELOPERS_PATH = "/developers"
STYLESHEET_PATH = "/style.css"
REVIEWS_PATH = "/reviews.json"
INSIGHTS_PATH = "/insights.json"
LLMS_PATH = "/llms.txt"
JSON_FEED_PATH = "/api/feed.json"
ATOM_FEED_PATH = "/feed.xml"
HUB_PATH = "/api/websub/hub"
SEARCH_PATH = "/api/reviews/search"
SINCE_PATH = "/api/reviews/since"
OPENAPI_PATH = "/.well-known/openapi.json"
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"


def rfc3339(seconds: float) -> str:
    """An instant in whole seconds, as RFC 3339 in UTC (C{...T06:00:00Z})."""
    moment = datetime.fromtimestamp(int(seconds), timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def topic_link_header(hub: str, topic: str) -> bytes:
    """WebSub discovery in HTTP (C{Link}): where to subscribe, and to what."""
    return f'<{hub}>; rel="hub", <{topic}>; rel="self"'.encode()


@frozen
class Links:
    """
    @ivar base: the public URL prefix, without a trailing slash.
    """

    base: str

    def url(self, path: str) -> str:
        return self.base + path

    @property
    def home(self) -> str:
        return self.base + "/"

    @property
    def reviews(self) -> str:
        return self.url(REVIEWS_PATH)

    @property
    def json_feed(self) -> str:
        return self.url(JSON_FEED_PATH)

    @property
    def atom_feed(self) -> str:
        return self.url(ATOM_FEED_PATH)

    @property
    def insights(self) -> str:
        return self.url(INSIGHTS_PATH)

    @property
    def hub(self) -> str:
        return self.url(HUB_PATH)

    def topic_links(self, path: str) -> bytes:
        """The WebSub C{Link} header of the topic at C{path}."""
        return topic_link_header(self.hub, self.url(path))
