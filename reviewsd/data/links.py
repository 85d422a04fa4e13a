"""
The public paths of the service, and their absolute URLs under a base URL.

Feeds, pages, WebSub topics, link headers, metrics labels and the health
check all name these, so they live in one place.
"""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import quote

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
ROBOTS_PATH = "/robots.txt"
SITEMAP_PATH = "/sitemap.xml"
REVIEW_PAGE_PREFIX = "/reviews/"
"""One review's HTML page is C{/reviews/{id}}, the id percent-encoded."""
REVIEW_RECORD_PREFIX = "/api/reviews/"
"""
One review's JSON record is C{/api/reviews/{id}}. The ids C{search} and
C{since} are shadowed there by the routes of those names.
"""


def review_path(prefix: str, review_id: str) -> str:
    """The path of one review under C{prefix}, its id percent-encoded."""
    return prefix + quote(review_id, safe="")


def sitemap_part_path(number: int) -> str:
    """
    The path of sitemap file C{number} (from 1): beyond the protocol's
    50,000 URLs a file, L{SITEMAP_PATH} is an index of these.
    """
    return f"/sitemap-{number}.xml"


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

    def review_page(self, review_id: str) -> str:
        """The permalink of one review: its HTML page."""
        return self.url(review_path(REVIEW_PAGE_PREFIX, review_id))

    def review_record(self, review_id: str) -> str:
        """The URL of one review's JSON record."""
        return self.url(review_path(REVIEW_RECORD_PREFIX, review_id))

    @property
    def hub(self) -> str:
        return self.url(HUB_PATH)

    def topic_links(self, path: str) -> bytes:
        """The WebSub C{Link} header of the topic at C{path}."""
        return topic_link_header(self.hub, self.url(path))
