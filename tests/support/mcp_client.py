"""
Drive a reviewsd MCP server with the official Python SDK, the way an
assistant would, and print what happened as JSON. Used by
tests.test_integration and tests.test_mcp_sdk; run by hand as

    python tests/support/mcp_client.py http://127.0.0.1:8080 auto
    python tests/support/mcp_client.py http://127.0.0.1:8080 listen auto DATA_DIR
    python tests/support/mcp_client.py http://127.0.0.1:8080 restart

C{auto} is the modern client (it adopts 2026-07-28 when the server
answers C{server/discover}), C{legacy} the C{initialize} session.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp_types import PromptReference, ResourceTemplateReference

SEARCHES = [
    {"rating": 1, "limit": 5},
    {"min_rating": 4, "query": "on time", "limit": 100},
    {"mentions_technician": "Dev", "since": "2024-01-01"},
]

TOOL_ARGUMENTS = {
    "get_reviews_since": {"date": "2025-01-01", "limit": 3},
    "get_aspect_sentiment": {"aspect": "punctuality"},
    "get_technician": {"name": "Dev"},
    "get_service": {"id": "roofing"},
    "get_service_area": {"name": "Tigard"},
    "get_insights": {"group": "overall_sentiment"},
}
"""Arguments that find something in the demo data; the newest review's id is added."""

PROMPT_ARGUMENTS = {
    "digest_since": {"since": "2026-01-01"},
    "technician_report": {"technician": "mike"},
    "service_report": {"service": "roofing"},
    "service_area_report": {"area": "tigard"},
    "answer_question": {
        "question": "Do they show up on time?",
        "aspect": "punctuality",
    },
}

COMPLETIONS = [
    ("technician_report", "technician", "M"),
    ("service_report", "service", "ro"),
    ("service_area_report", "area", "t"),
    ("answer_question", "aspect", "pu"),
    ("digest_since", "since", "2026-1"),
]


def http_search(base: str, arguments: dict[str, Any]) -> Any:
    query = urllib.parse.urlencode(arguments)
    with urllib.request.urlopen(f"{base}/api/reviews/search?{query}") as response:
        return json.load(response)


async def tools(client: Client, arguments: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {"calls": {}}
    listed = (await client.list_tools()).tools
    report["tools"] = {
        t.name: {
            "title": t.title,
            "read_only": t.annotations.read_only_hint,
            "open_world": t.annotations.open_world_hint,
            "required": t.input_schema.get("required", []),
        }
        for t in listed
    }
    for tool in listed:
        given = arguments.get(tool.name, {})
        result = await client.call_tool(tool.name, given)
        report["calls"][tool.name] = {
            "arguments": given,
            "is_error": result.is_error,
            "structured": result.structured_content,
            "text": result.content[0].text if result.content else None,
        }
    return report


async def resources(client: Client) -> dict[str, Any]:
    """Every page of the list, the templates, and a read of each kind."""
    listed, cursor, pages = [], None, 0
    while True:
        page = await client.list_resources(cursor=cursor)
        listed += [r.uri for r in page.resources]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    templates = (await client.list_resource_templates()).resource_templates
    reads = {}
    for uri in listed[:4]:
        contents = (await client.read_resource(uri)).contents
        reads[uri] = [
            {"uri": c.uri, "mime": c.mime_type, "json": json.loads(c.text)}
            for c in contents
        ]
    return {
        "uris": listed,
        "pages": pages,
        "templates": [t.uri_template for t in templates],
        "reads": reads,
    }


async def prompts(client: Client, template: str) -> dict[str, Any]:
    listed = (await client.list_prompts()).prompts
    got = {}
    for prompt in listed:
        result = await client.get_prompt(prompt.name, PROMPT_ARGUMENTS[prompt.name])
        got[prompt.name] = {
            "arguments": [a.name for a in prompt.arguments or []],
            "text": result.messages[0].content.text,
            "embedded": [
                m.content.resource.uri
                for m in result.messages
                if m.content.type == "resource"
            ],
        }
    completions = {}
    for name, argument, typed in COMPLETIONS:
        done = await client.complete(
            PromptReference(type="ref/prompt", name=name),
            {"name": argument, "value": typed},
        )
        completions[f"{name}.{argument}"] = done.completion.values
    review = await client.complete(
        ResourceTemplateReference(type="ref/resource", uri=template),
        {"name": "id", "value": "01"},
    )
    completions["review.id"] = {
        "values": review.completion.values,
        "total": review.completion.total,
        "has_more": review.completion.has_more,
    }
    return {"prompts": got, "completions": completions}


def newest_review(base: str) -> str:
    with urllib.request.urlopen(f"{base}/reviews.json") as response:
        return str(json.load(response)["reviews"][0]["id"])


async def main(base: str, mode: str, arguments: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {"mode": mode}
    arguments = {
        **TOOL_ARGUMENTS,
        "get_review": {"id": newest_review(base)},
        **arguments,
    }
    async with Client(f"{base}/mcp", mode=mode) as client:
        report["protocol_version"] = client.protocol_version
        report["server"] = client.server_info.model_dump()
        report["instructions"] = client.instructions
        report.update(await tools(client, arguments))
        report["searches"] = []
        for search in SEARCHES:
            result = await client.call_tool("search_reviews", search)
            report["searches"].append(
                {"mcp": result.structured_content, "http": http_search(base, search)}
            )
        missing = await client.call_tool("get_technician", {"name": "Nobody Atall"})
        report["unknown_technician"] = {
            "is_error": missing.is_error,
            "text": missing.content[0].text,
        }
        report["resources"] = await resources(client)
        template = report["resources"]["templates"][0]
        report.update(await prompts(client, template))
    return report


def edit_newest_review(data: Path) -> float:
    """Change the newest review's text; answer when the file was replaced."""
    path = data / "reviews.json"
    reviews = json.loads(path.read_text())
    newest = max(reviews, key=lambda r: r["date"])
    newest["text"] = (newest.get("text") or "") + " Edited."
    fresh = path.with_suffix(".tmp")
    fresh.write_text(json.dumps(reviews))
    os.replace(fresh, path)
    return time.monotonic()


async def listen(base: str, mode: str, data: Path) -> dict[str, Any]:
    """
    Subscribe to the newest review and the list, edit the data, and time
    the notifications: C{subscriptions/listen} for a modern client, the
    session's stream and C{resources/subscribe} for a legacy one.
    """
    events: list[tuple[float, str, str | None]] = []
    arrived = anyio.Event()

    async def legacy_handler(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            events.append((time.monotonic(), message.method, message.params.uri))
            arrived.set()
        elif isinstance(message, types.ResourceListChangedNotification):
            events.append((time.monotonic(), message.method, None))

    client = Client(
        f"{base}/mcp",
        mode=mode,
        message_handler=legacy_handler if mode == "legacy" else None,
    )
    async with client:
        version = client.protocol_version
        first = (await client.list_resources()).resources
        uri = next(r.uri for r in first if "/api/reviews/" in r.uri)
        if mode == "legacy":
            await client.subscribe_resource(uri)
            await anyio.sleep(0.5)  # the session's GET stream opens meanwhile
            written = edit_newest_review(data)
            with anyio.fail_after(10):
                await arrived.wait()
            honoured: Any = None
        else:
            async with client.listen(
                resources_list_changed=True, resource_subscriptions=[uri]
            ) as subscription:
                honoured = subscription.honored.model_dump(
                    by_alias=True, exclude_none=True
                )
                written = edit_newest_review(data)
                with anyio.fail_after(10):
                    async for event in subscription:
                        name = type(event).__name__
                        events.append(
                            (time.monotonic(), name, getattr(event, "uri", None))
                        )
                        if name == "ResourceUpdated":
                            break
        after = (await client.read_resource(uri)).contents[0].text
    return {
        "protocol_version": version,
        "uri": uri,
        "honoured": honoured,
        "events": [
            {"after": at - written, "what": what, "uri": u} for at, what, u in events
        ],
        "read_after": json.loads(after),
    }


async def restart(base: str) -> dict[str, Any]:
    """
    A legacy session across a restart of the daemon: a call, then (once
    told on standard input that the daemon is back) another.
    """
    async with Client(f"{base}/mcp", mode="legacy") as client:
        before = await client.call_tool("get_business", {})
        print("CALLED", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        after = await client.call_tool("get_business", {})
        listed = await client.list_tools()
        return {
            "protocol_version": client.protocol_version,
            "before": before.is_error,
            "after": after.is_error,
            "tools": len(listed.tools),
        }


if __name__ == "__main__":
    base, mode = sys.argv[1], sys.argv[2]
    if mode == "listen":
        report = asyncio.run(listen(base, sys.argv[3], Path(sys.argv[4])))
    elif mode == "restart":
        report = asyncio.run(restart(base))
    else:
        given = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
        report = asyncio.run(main(base, mode, given))
    print(json.dumps(report))
