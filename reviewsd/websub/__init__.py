"""
The WebSub hub (W3C WebSub Recommendation) for this service's topics.

L{Hub} is the service (verification, distribution, leases, persistence),
L{HubResource} the C{POST /api/websub/hub} endpoint, L{TopicSource} what the
hub reads topics from, and L{HubConfig} its settings.
"""

from reviewsd.websub.hub import (
    Hub,
    HubConfig,
    HubUnavailable,
    TooManySubscriptions,
    TopicSource,
)
from reviewsd.websub.requests import BadHubRequest, HubRequest, parse_hub_request
from reviewsd.websub.resource import HubResource

__all__ = [
    "BadHubRequest",
    "Hub",
    "HubConfig",
    "HubRequest",
    "HubResource",
    "HubUnavailable",
    "TooManySubscriptions",
    "TopicSource",
    "parse_hub_request",
]
