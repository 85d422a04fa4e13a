"""
The hub's topics, read from the current snapshot: the documents published
with a WebSub C{Link} header.
"""

from __future__ import annotations

from reviewsd.data.snapshot import SnapshotSource


class SnapshotTopics:
    """
    The WebSub topics' current content, read from whatever holds the current
    snapshot (the L{ReviewsData} service in the daemon).
    """

    def __init__(self, source: SnapshotSource) -> None:
        self._source = source

    def topic_content(self, topic_url: str) -> tuple[bytes, bytes, bytes] | None:
        snapshot = self._source.snapshot
        base = snapshot.links.base
        if not topic_url.startswith(base + "/"):
            return None
        document = snapshot.documents.get(topic_url[len(base) :])
        if document is None or document.links is None:
            return None  # a document, but not a topic (the OpenAPI description)
        return (
            document.identity.body,
            document.content_type,
            document.identity.etag,
        )
