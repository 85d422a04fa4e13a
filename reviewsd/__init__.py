"""
reviewsd: one business's verified customer reviews as a public, read-only
data service (JSON documents, feeds, search, MCP and a WebSub hub).
"""

from reviewsd._version import __version__

__all__ = ["__version__"]
