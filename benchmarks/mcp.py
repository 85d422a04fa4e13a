"""
MCP C{tools/call search_reviews} calls per second: stateless 2026-07-28
requests beside calls in one legacy session and the HTTP search with the
same arguments, loaded by wrk in alternating rounds against C{twistd -n
reviewsd} on a copy of the demo data; then how long a change notification
takes from the write of a data file to a subscribed client, in each era.

    python benchmarks/mcp.py [--rounds 3] [--seconds 5] [--connections 16]
                             [--edits 10]
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.documents import (
    check_wrk,
    free_port,
    start_daemon,
    wait_for,
    wrk,
    wrk_parser,
)
from reviewsd.data.loading import DEMO_DATA

ARGUMENTS = {"rating": 5, "limit": 20}
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "benchmark", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
JSON_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}

LUA = """
wrk.method = "POST"
wrk.body = [[%s]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
%s
"""


def lua(call: dict[str, Any], headers: dict[str, str]) -> str:
    lines = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items())
    return LUA % (json.dumps(call), lines)


def initialize(base: str) -> str:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}},
        }
    ).encode()
    request = urllib.request.Request(base + "/mcp", data=body, headers=JSON_HEADERS)
    with urllib.request.urlopen(request) as response:
        return str(response.headers["Mcp-Session-Id"])


def rpc(base: str, body: dict[str, Any], **headers: str) -> Any:
    request = urllib.request.Request(
        base + "/mcp",
        data=json.dumps(body).encode(),
        headers={**JSON_HEADERS, **headers},
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def throughput(base: str, work: Path, args: Any) -> None:
    session = initialize(base)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_reviews", "arguments": ARGUMENTS},
    }
    modern = work / "modern.lua"
    modern.write_text(
        lua(
            {**call, "params": {**call["params"], "_meta": META}},
            {
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "search_reviews",
            },
        )
    )
    legacy = work / "legacy.lua"
    legacy.write_text(
        lua(call, {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    )
    search = (
        base
        + "/api/reviews/search?"
        + "&".join(f"{k}={v}" for k, v in ARGUMENTS.items())
    )
    runs: dict[str, list[dict[str, float]]] = {
        f"MCP {MODERN}": [],
        f"MCP {LEGACY} session": [],
        "HTTP search": [],
    }
    for _ in range(args.rounds):
        for results, script in zip(runs.values(), (modern, legacy, None), strict=True):
            url = search if script is None else base + "/mcp"
            results.append(wrk(url, args.seconds, args.connections, None, script))
    print(
        f"tools/call search_reviews {ARGUMENTS}, {args.connections} connections, "
        f"median of {args.rounds} rounds"
    )
    for label, results in runs.items():
        print(
            f"{label:<26} {statistics.median(r['rps'] for r in results):>8.0f} req/s"
            f"   p50 {statistics.median(r['p50'] for r in results):.2f} ms"
            f"   p99 {statistics.median(r['p99'] for r in results):.2f} ms"
        )


class Stream:
    """An event stream read in a thread; C{seen} fires on each updated resource."""

    def __init__(
        self, port: int, method: str, body: bytes | None, headers: dict[str, str]
    ) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.connection.request(method, "/mcp", body=body, headers=headers)
        self.response = self.connection.getresponse()
        if self.response.status != 200:
            raise SystemExit(
                f"no stream: {self.response.status} {self.response.read()!r}"
            )
        self.arrivals: list[float] = []
        self.seen = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                if line.startswith(b"data:") and b"resources/updated" in line:
                    self.arrivals.append(time.monotonic())
                    self.seen.set()
        except (OSError, ValueError, AttributeError):
            pass  # closed: http.client drops its file under the reader

    def close(self) -> None:
        self.connection.close()


def edit(data: Path, number: int) -> float:
    """Change the newest review's text; when the new file was in place."""
    path = data / "reviews.json"
    reviews = json.loads(path.read_text())
    newest = max(reviews, key=lambda r: r["date"])
    newest["text"] = f"Edited for the benchmark, time {number}."
    fresh = path.with_suffix(".tmp")
    fresh.write_text(json.dumps(reviews))
    os.replace(fresh, path)
    return time.monotonic()


def latencies(data: Path, streams: list[Stream], edits: int) -> list[list[float]]:
    """Per stream, the time from each write to its notification."""
    measured: list[list[float]] = [[] for _ in streams]
    for number in range(edits):
        for stream in streams:
            stream.seen.clear()
        written = edit(data, number)
        for stream, values in zip(streams, measured, strict=True):
            if not stream.seen.wait(10):
                raise SystemExit("no notification within 10 s")
            values.append(stream.arrivals[-1] - written)
        time.sleep(0.5)  # past the watcher's settling time
    return measured


def notification_latency(base: str, port: int, data: Path, edits: int) -> None:
    newest = json.load(urllib.request.urlopen(base + "/reviews.json"))["reviews"][0]
    uri = f"{base}/api/reviews/{newest['id']}"
    listen = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"resourceSubscriptions": [uri]}},
    }
    modern = Stream(
        port,
        "POST",
        json.dumps(listen).encode(),
        {
            **JSON_HEADERS,
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "subscriptions/listen",
        },
    )
    session = initialize(base)
    subscribe = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "resources/subscribe",
        "params": {"uri": uri},
    }
    rpc(base, subscribe, **{"Mcp-Session-Id": session})
    legacy = Stream(
        port, "GET", None, {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    )
    try:
        results = latencies(data, [modern, legacy], edits)
    finally:
        modern.close()
        legacy.close()
    print(f"\nchange notification, data file written to client, {edits} edits")
    for label, values in zip(
        (f"{MODERN} subscriptions/listen", f"{LEGACY} session GET stream"),
        results,
        strict=True,
    ):
        print(
            f"{label:<34} median {statistics.median(values) * 1000:6.0f} ms"
            f"   max {max(values) * 1000:6.0f} ms"
        )


def main() -> None:
    parser = wrk_parser(__doc__ or "")
    parser.add_argument("--edits", type=int, default=10)
    args = parser.parse_args()
    check_wrk()
    work = Path(tempfile.mkdtemp(prefix="reviewsd-bench-"))
    data = work / "data"
    shutil.copytree(DEMO_DATA, data)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daemon = start_daemon(port, work, "--data", str(data))
    try:
        wait_for(base + "/reviews.json")
        throughput(base, work, args)
        notification_latency(base, port, data, args.edits)
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
