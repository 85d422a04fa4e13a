"""
Drive a reviewsd MCP server with the official Python SDK, the way an
assistant would, and print what happened as JSON. Used by
tests.test_integration; run by hand as

    python tests/mcp_client.py http://127.0.0.1:8080 legacy
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.parse
import urllib.request
from typing import Any

from mcp import Client

SEARCHES = [
    {"rating": 1, "limit": 5},
    {"min_rating": 4, "query": "on time", "limit": 100},
    {"mentions_technician": "Dev", "since": "2024-01-01"},
]


def http_search(base: str, arguments: dict[str, Any]) -> Any:
    query = urllib.parse.urlencode(arguments)
    with urllib.request.urlopen(f"{base}/api/reviews/search?{query}") as response:
        return json.load(response)


async def main(base: str, mode: str) -> dict[str, Any]:
    report: dict[str, Any] = {"mode": mode, "calls": {}}
    async with Client(f"{base}/mcp", mode=mode) as client:
        report["protocol_version"] = client.protocol_version
        report["server"] = client.server_info.model_dump()
        report["instructions"] = client.instructions
        tools = (await client.list_tools()).tools
        report["tools"] = {
            t.name: {
                "title": t.title,
                "read_only": t.annotations.read_only_hint,
                "open_world": t.annotations.open_world_hint,
                "required": t.input_schema.get("required", []),
            }
            for t in tools
        }
        for tool in tools:
            arguments = (
                json.loads(sys.argv[3]).get(tool.name, {}) if len(sys.argv) > 3 else {}
            )
            result = await client.call_tool(tool.name, arguments)
            report["calls"][tool.name] = {
                "arguments": arguments,
                "is_error": result.is_error,
                "structured": result.structured_content,
                "text": result.content[0].text if result.content else None,
            }
        report["searches"] = []
        for arguments in SEARCHES:
            result = await client.call_tool("search_reviews", arguments)
            report["searches"].append(
                {
                    "mcp": result.structured_content,
                    "http": http_search(base, arguments),
                }
            )
        missing = await client.call_tool("get_technician", {"name": "Nobody Atall"})
        report["unknown_technician"] = {
            "is_error": missing.is_error,
            "text": missing.content[0].text,
        }
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
