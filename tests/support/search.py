"""
The demo data's snapshot with its word index built, and a search through
the same argument checks as HTTP and MCP: shared by the search and MCP
tests, which must agree.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.search import SearchQuery
from reviewsd.data.snapshot import Snapshot
from tests.support import snapshot_of

DEMO = snapshot_of(DEMO_DATA)
DEMO.index.index_words()


def search(snapshot: Snapshot, **parameters: Any) -> dict[str, Any]:
    """Through the same checks as HTTP and MCP arguments."""
    arguments = {
        k: v.isoformat() if isinstance(v, date) else v for k, v in parameters.items()
    }
    return json.loads(snapshot.search(SearchQuery.from_arguments(arguments)))
