"""
Requests per second for the dataset documents, beside a bare twisted.web
resource serving the same bytes with the same validators.

    python benchmarks/documents.py [--rounds 3] [--seconds 5] [--connections 16]

Needs wrk (Debian: apt-get install wrk). Starts `twistd -n reviewsd` on the
bundled demo data and the bare resource, each in its own process, and loads
them from wrk in a third, alternating rounds so that machine noise hits both
alike. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("/reviews.json", "/api/feed.json", "/feed.xml")

BARE = r'''
import os, sys
from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.server import Site

port, path, etag, modified, ctype, body_file, access_log = sys.argv[1:8]
body = open(body_file, "rb").read()

class Bare(Resource):
    """The ceiling: a leaf that answers one document with its validators."""
    isLeaf = True
    def render_GET(self, request):
        request.setHeader(b"ETag", etag.encode())
        request.setHeader(b"Last-Modified", modified.encode())
        if request.getHeader(b"if-none-match") == etag.encode():
            request.setResponseCode(304)
            return b""
        request.setHeader(b"Content-Type", ctype.encode())
        return body

site = Site(Bare())
site.noisy = False
if access_log == "off":
    site.log = lambda request: None
else:  # log as twistd does (text lines), so that both sides do the same work
    from twisted.logger import globalLogBeginner, textFileLogObserver
    globalLogBeginner.beginLoggingTo([textFileLogObserver(open(os.devnull, "w"))])
reactor.listenTCP(int(port), site, interface="127.0.0.1")
reactor.run()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str) -> None:
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing answered at {url}")


def start_daemon(
    port: int,
    work: Path,
    *argv: str,
    source: Path = ROOT,
    log: IO[bytes] | None = None,
) -> subprocess.Popen[bytes]:
    """
    twistd -n reviewsd on 127.0.0.1:port, logging text to standard output,
    which is /dev/null: as the bare resource does. (Not --logfile=/dev/null:
    twistd rotates a log file at each megabyte, and as root it would rename
    /dev/null and go on writing a regular file in its place.) C{source} is
    the tree to run; C{log}, a file to keep the output in instead.
    """
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from twisted.scripts.twistd import run; run()",
            "--nodaemon",
            "--pidfile=",
            "--logfile=-",
            "reviewsd",
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--state-dir",
            str(work / "state"),
            *argv,
        ],
        env=dict(os.environ, PYTHONPATH=str(source)),
        cwd=work,
        stdout=subprocess.DEVNULL if log is None else log,
    )


def wrk(
    url: str,
    seconds: int,
    connections: int,
    etag: str | None,
    script: Path | None = None,
) -> dict[str, float]:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if etag:
        command[1:1] = ["-H", f"If-None-Match: {etag}"]
    if script:
        command[1:1] = ["-s", str(script)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    unit = {"us": 0.001, "ms": 1.0, "s": 1000.0}

    def latency(percent: str) -> float:
        value, scale = re.search(
            rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)", out, re.M
        ).groups()
        return float(value) * unit[scale]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} error answers\n{out}")
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": latency("50"),
        "p99": latency("99"),
    }


def wrk_arguments(doc: str) -> argparse.Namespace:
    """The command line every wrk benchmark takes; checks wrk is there."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")
    return args


def main() -> None:
    args = wrk_arguments(__doc__)

    processes: list[subprocess.Popen[bytes]] = []
    work = Path(tempfile.mkdtemp(prefix="reviewsd-bench-"))
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        processes.append(start_daemon(port, work))
        wait_for(base + PATHS[0])

        bare: dict[tuple[str, str], str] = {}
        etags: dict[str, str] = {}
        for path in PATHS:
            with urllib.request.urlopen(base + path) as response:
                body, headers = response.read(), response.headers
            (work / "body").write_bytes(body)
            etags[path] = headers["ETag"]
            for access_log in ("on", "off"):
                bare_port = free_port()
                processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            BARE,
                            str(bare_port),
                            path,
                            headers["ETag"],
                            headers["Last-Modified"],
                            headers["Content-Type"],
                            str(work / "body"),
                            access_log,
                        ]
                    )
                )
                bare[path, access_log] = f"http://127.0.0.1:{bare_port}{path}"
                wait_for(bare[path, access_log])
            (work / "body").unlink()

        print(
            "req/s, median of rounds; bare = a leaf twisted.web resource with the"
            " same bytes and validators,\nlogging each request like reviewsd"
            " (log on) or not (log off); ratio = reviewsd / bare (log on)\n"
        )
        print(
            f"{'endpoint':<16} {'answer':<6} {'reviewsd':>9} {'bare log on':>12}"
            f" {'ratio':>6} {'bare log off':>13} {'p50 ms':>7} {'p99 ms':>7}"
        )
        for path in PATHS:
            for label, tag in (("200", None), ("304", etags[path])):
                runs: dict[str, list[dict[str, float]]] = {
                    "ours": [],
                    "on": [],
                    "off": [],
                }
                for _ in range(args.rounds):
                    runs["ours"].append(
                        wrk(base + path, args.seconds, args.connections, tag)
                    )
                    for log in ("on", "off"):
                        runs[log].append(
                            wrk(bare[path, log], args.seconds, args.connections, tag)
                        )
                rps = {
                    k: statistics.median(r["rps"] for r in v) for k, v in runs.items()
                }
                print(
                    f"{path:<16} {label:<6} {rps['ours']:>9.0f} {rps['on']:>12.0f}"
                    f" {rps['ours'] / rps['on']:>6.2f} {rps['off']:>13.0f}"
                    f" {statistics.median(r['p50'] for r in runs['ours']):>7.2f}"
                    f" {statistics.median(r['p99'] for r in runs['ours']):>7.2f}"
                )
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
