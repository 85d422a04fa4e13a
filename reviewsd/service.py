"""
The service that owns the current snapshot.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from twisted.application.service import Service
from twisted.logger import Logger

from reviewsd.http import SnapshotSource
from reviewsd.insights import ReviewCache
from reviewsd.links import Links
from reviewsd.loading import load_dataset
from reviewsd.snapshot import Snapshot, build_snapshot

log = Logger()


def load_snapshot(
    directory: Path,
    links: Links,
    previous: Snapshot | None = None,
    cache: ReviewCache | None = None,
) -> Snapshot:
    """
    Read, check, analyse and render a data directory: blocking work that
    belongs in a worker thread, or before the reactor runs.

    @raise reviewsd.loading.DataError: the directory cannot be published.
    """
    sources, dataset = load_dataset(directory)
    return build_snapshot(dataset, links, sources.last_modified(), previous, cache)


def save_cache(cache: ReviewCache) -> None:
    """Keep the analyses for the next start; a failure only costs time."""
    if cache.discarded:
        log.warn(
            "Insights cache {path} was discarded ({why}); reviews were analysed anew",
            path=str(cache.path),
            why=cache.discarded,
        )
    try:
        cache.save()
    except (sqlite3.Error, OSError) as e:
        log.warn(
            "Cannot save the insights cache {path}: {error}",
            path=str(cache.path),
            error=e,
        )


class ReviewsData(Service):
    """
    Holds the snapshot every request reads; replacing it is one assignment,
    so a request sees all of one generation or all of the next.
    """

    def __init__(self, directory: Path, snapshot: Snapshot) -> None:
        self.directory = directory
        self.snapshot = snapshot

    def startService(self) -> None:
        super().startService()
        dataset = self.snapshot.dataset
        log.info(
            "Publishing {count} reviews of {business} from {directory}"
            " ({unpublished} unverified left out)",
            count=len(dataset.reviews),
            business=dataset.business.name,
            directory=str(self.directory),
            unpublished=dataset.unpublished,
        )


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
