"""
The public paths of the service, and their absolute URLs under a base URL.

Feeds, WebSub topics and link headers all name these, so they live in one
place.
"""

from __future__ import annotations

from attrs import frozen

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
