"""
MCP C{tools/call search_reviews} calls per second on one session, beside the
HTTP search with the same arguments, both loaded by wrk in alternating
rounds against C{twistd -n reviewsd} on the demo data.

    python benchmarks/mcp.py [--rounds 3] [--seconds 5] [--connections 16]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.documents import (
    free_port,
    start_daemon,
    wait_for,
    wrk,
    wrk_arguments,
)

ARGUMENTS = {"rating": 5, "limit": 20}

LUA = """
wrk.method = "POST"
wrk.body = [[%s]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Session-Id"] = "%s"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
"""


def initialize(base: str) -> str:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
        }
    ).encode()
    request = urllib.request.Request(
        base + "/mcp",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request) as response:
        return response.headers["Mcp-Session-Id"]


def main() -> None:
    args = wrk_arguments(__doc__)
    work = Path(tempfile.mkdtemp(prefix="reviewsd-bench-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daemon = start_daemon(port, work)
    try:
        wait_for(base + "/reviews.json")
        session = initialize(base)
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_reviews", "arguments": ARGUMENTS},
        }
        script = work / "call.lua"
        script.write_text(LUA % (json.dumps(call), session))
        search = (
            base
            + "/api/reviews/search?"
            + "&".join(f"{k}={v}" for k, v in ARGUMENTS.items())
        )
        mcp, http = [], []
        for _ in range(args.rounds):
            mcp.append(wrk(base + "/mcp", args.seconds, args.connections, None, script))
            http.append(wrk(search, args.seconds, args.connections, None))
        print(f"arguments {ARGUMENTS}, one MCP session, median of {args.rounds} rounds")
        for label, runs in (("MCP tools/call", mcp), ("HTTP search", http)):
            print(
                f"{label:<16} {statistics.median(r['rps'] for r in runs):>8.0f} req/s"
                f"   p50 {statistics.median(r['p50'] for r in runs):.2f} ms"
                f"   p99 {statistics.median(r['p99'] for r in runs):.2f} ms"
            )
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
