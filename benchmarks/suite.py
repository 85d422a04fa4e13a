"""
The benchmark suite: start-up, throughput and latency of every endpoint,
search, MCP, reload and memory, at each data size.

    python benchmarks/suite.py [--sizes 1000,100000] [--rounds 2] [--seconds 3]

Needs wrk (Debian: apt-get install wrk). For each size it generates a data
directory (reviewsd/data/synthetic.py), then measures:

  - start-up: seconds from launching `twistd -n reviewsd` to the first answer,
    cold (empty state directory) and warm (insights cache kept); the daemon
    then builds its word index, and memory after start is taken once it
    has done so (its CPU idle);
  - every document endpoint, 200 and 304: requests per second of the daemon
    as installed (the unit's logger, the access log on) beside a bare
    twisted.web resource serving the same bytes with the same validators
    and no access log, started in the same run, rounds alternated; p50 and
    p99 latency;
  - search: a filter-only and a text query, req/s and latency;
  - MCP tools/call search_reviews at the current revision (stateless);
  - reload: seconds from appending one review to the data file until it is
    served;
  - resident memory of the daemon (VmRSS now, VmHWM peak).

WebSub fan-out is measured by benchmarks/websub.py (its own hub process and
1,000 HTTPS subscribers). Not part of the test suite; it prints what it
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.documents import BARE, JOURNAL_LOGGER, free_port, start_daemon, wrk
from benchmarks.mcp import META, MODERN, lua
from reviewsd.data.synthetic import write

ENDPOINTS = (
    "/reviews.json",
    "/api/feed.json",
    "/feed.xml",
    "/insights.json",
    "/api/reviews/since/2026-06-01",
    "/api/reviews/search?rating=5&since=2025-01-01&limit=20",
)
QUERY = "/api/reviews/search?query=late&limit=20"


def up(url: str, timeout: float) -> float:
    """Seconds until C{url} answers."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            # the first answer, not the time to download a large body
            request = urllib.request.Request(url, method="HEAD")
            urllib.request.urlopen(request, timeout=2).read()
            return time.monotonic() - started
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing answered at {url} in {timeout} s")


def settled(pid: int, timeout: float = 1800) -> None:
    """
    Wait until the process has used under 5 % of a CPU for half a second:
    after the first answer, the daemon goes on building its word index.
    """
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

    started = time.monotonic()
    before = cpu()
    while time.monotonic() - started < timeout:
        time.sleep(0.5)
        now = cpu()
        if now - before < 0.025:
            return
        before = now


def memory(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


class Bare:
    """
    A bare twisted.web resource serving one answer's bytes and validators,
    with no access log.
    """

    def __init__(self, work: Path, url: str) -> None:
        with urllib.request.urlopen(url) as response:
            body, headers = response.read(), response.headers
        self.etag = headers.get("ETag") or ""
        name = f"body-{free_port()}"
        (work / name).write_bytes(body)
        spec = {
            "/": {
                "identity": [str(work / name), self.etag],
                "gzip": None,
                "content_type": headers["Content-Type"],
                "last_modified": headers.get("Last-Modified") or "",
            }
        }
        (work / f"{name}.json").write_text(json.dumps(spec))
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", BARE, str(self.port), str(work / f"{name}.json")]
        )
        self.url = f"http://127.0.0.1:{self.port}/"
        up(self.url, 20)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:  # still sending a large body
            self.process.kill()
            self.process.wait(10)


def measure_size(count: int, args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"reviewsd-suite-{count}-"))
    data = write(work / "data", count)
    results: dict[str, Any] = {"reviews": count}
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    daemon = start_daemon(port, work, "--data", str(data), logger=JOURNAL_LOGGER)
    results["start_cold_s"] = up(base + "/reviews.json", 1800)
    print(f"{count:,} reviews: cold start {results['start_cold_s']:.1f} s", flush=True)
    daemon.terminate()
    daemon.wait(60)
    daemon = start_daemon(port, work, "--data", str(data), logger=JOURNAL_LOGGER)
    try:
        results["start_warm_s"] = up(base + "/reviews.json", 1800)
        settled(daemon.pid)
        results["rss_after_start_mib"] = memory(daemon.pid)[0]
        print(
            f"{count:,} reviews: warm start {results['start_warm_s']:.1f} s,"
            f" {results['rss_after_start_mib']:.0f} MiB",
            flush=True,
        )

        rows = []
        for path in ENDPOINTS:
            bare = Bare(work, base + path)
            try:
                for label, tag in (("200", None), ("304", bare.etag or None)):
                    if label == "304" and tag is None:
                        continue
                    ours, theirs = [], []
                    for _ in range(args.rounds):
                        ours.append(
                            wrk(base + path, args.seconds, args.connections, tag)
                        )
                        theirs.append(
                            wrk(bare.url, args.seconds, args.connections, tag)
                        )
                    rows.append(
                        {
                            "endpoint": path,
                            "answer": label,
                            "rps": median(ours, "rps"),
                            "bare_rps": median(theirs, "rps"),
                            # a body of hundreds of MB may not finish in a round
                            "ratio": (
                                median(ours, "rps") / median(theirs, "rps")
                                if median(theirs, "rps")
                                else None
                            ),
                            "p50_ms": median(ours, "p50"),
                            "p99_ms": median(ours, "p99"),
                        }
                    )
            finally:
                bare.stop()
        results["endpoints"] = rows

        query = [wrk(base + QUERY, args.seconds, args.connections, None)]
        results["search_query"] = {
            "rps": median(query, "rps"),
            "p50_ms": median(query, "p50"),
            "p99_ms": median(query, "p99"),
        }

        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "search_reviews",
                "arguments": {"rating": 5, "limit": 20},
                "_meta": META,
            },
        }
        script = work / "call.lua"
        script.write_text(
            lua(
                call,
                {
                    "MCP-Protocol-Version": MODERN,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": "search_reviews",
                },
            )
        )
        mcp = [wrk(base + "/mcp", args.seconds, args.connections, None, script)]
        results["mcp_calls_per_s"] = median(mcp, "rps")

        with (data / "reviews.jsonl").open("a") as f:
            f.write(
                json.dumps(
                    {
                        "id": "suite-added",
                        "author": "Reload Test",
                        "rating": 5,
                        "date": "2026-11-20",
                        "text": "Dev was right on time.",
                        "source": "google",
                        "verified": True,
                    }
                )
                + "\n"
            )
        started = time.monotonic()
        while time.monotonic() - started < 600:
            answer = json.load(
                urllib.request.urlopen(base + "/api/reviews/since/2026-11-20")
            )
            if any(r["id"] == "suite-added" for r in answer["reviews"]):
                break
            time.sleep(0.05)
        results["reload_one_review_s"] = time.monotonic() - started
        results["rss_mib"], results["rss_peak_mib"] = memory(daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait(60)
    return results


def report(results: dict[str, Any]) -> None:
    print(f"\n## {results['reviews']:,} reviews\n")
    print(
        f"start to first answer: {results['start_cold_s']:.1f} s cold, "
        f"{results['start_warm_s']:.1f} s warm; one-review reload: "
        f"{results['reload_one_review_s']:.2f} s; memory: "
        f"{results['rss_after_start_mib']:.0f} MiB after start, "
        f"{results['rss_mib']:.0f} MiB at the end, "
        f"{results['rss_peak_mib']:.0f} MiB peak"
    )
    print(
        f"search with query: {results['search_query']['rps']:.0f} req/s, "
        f"p50 {results['search_query']['p50_ms']:.2f} ms, "
        f"p99 {results['search_query']['p99_ms']:.2f} ms; "
        f"MCP tools/call search_reviews ({MODERN}): "
        f"{results['mcp_calls_per_s']:.0f} calls/s\n"
    )
    print(
        f"| {'endpoint':<55} | answer | req/s | bare req/s | ratio | p50 ms | p99 ms |"
    )
    print(f"|{'-' * 57}|--------|-------|------------|-------|--------|--------|")
    for row in results["endpoints"]:
        print(
            f"| {row['endpoint']:<55} | {row['answer']:<6} | {row['rps']:>5.0f} |"
            f" {row['bare_rps']:>10.0f} |"
            f" {'n/a' if row['ratio'] is None else format(row['ratio'], '.2f'):>5} |"
            f" {row['p50_ms']:>6.2f} |"
            f" {row['p99_ms']:>6.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    everything = []
    for size in (int(s) for s in args.sizes.split(",")):
        results = measure_size(size, args)
        report(results)
        everything.append(results)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2))


if __name__ == "__main__":
    main()
