"""
Requests per second for small answers, the daemon as installed beside
what a user could run instead, all serving the same bytes.

    python benchmarks/documents.py [--rounds 3] [--seconds 5] [--connections 16]
        [--reviews 300] [--peer-venv DIR | --no-peer] [--baseline TREE]
        [--server-cpu 0] [--wrk-cpu 1]

Needs wrk (Debian: apt-get install wrk). Generates a data directory of
C{--reviews} reviews and starts, each in its own process pinned to
C{--server-cpu} (wrk runs on C{--wrk-cpu}):

  - reviewsd as installed: the unit's logger (C{--logger=
    reviewsd.logs.journal_observer}, JSON lines, here to /dev/null), its
    access log on;
  - reviewsd C{--access-log off};
  - bare: a leaf twisted.web resource answering the same bytes with the
    same validators (304 on a matching C{If-None-Match}, gzip when
    accepted), with no access log: the ceiling of twisted.web;
  - uvicorn+Starlette (uvloop, httptools, no access log) serving the same
    bytes the same way, from C{--peer-venv}, a virtual environment of its
    own made on first use (C{python -m venv DIR && DIR/bin/pip install
    uvicorn starlette uvloop httptools}), never a dependency of reviewsd.

With C{--baseline}, the daemon from another source tree too, access log on
and off (C{git archive HEAD | tar -x -C /tmp/before} makes one from the last
commit). The search row is computed by reviewsd, and a static copy of its
answer for the others. Rounds alternate the servers, so that machine noise
hits all alike. Two tables give the median and the range of the rounds:
requests per second, and requests per second of the server's CPU time,
which other work on the machine disturbs less. Not part of the test suite.

The daemon's HTTP path can be profiled under the same load with py-spy
(C{pip install py-spy} in the peer's environment): C{py-spy record -r 500
-f raw -p PID} while wrk runs.
"""

from __future__ import annotations

import argparse
import json
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
JOURNAL_LOGGER = "reviewsd.logs.journal_observer"
"""The logger the systemd unit gives twistd: the installed configuration."""

SEARCH = "/api/reviews/search?rating=5&limit=20"
ROWS: tuple[tuple[str, str, str], ...] = (
    # label, target, what the request carries
    ("/reviews.json 304", "/reviews.json", "etag"),
    ("/reviews.json gzip 200", "/reviews.json", "gzip"),
    ("/api/feed.json 200", "/api/feed.json", ""),
    ("search rating=5&limit=20", SEARCH, ""),
)

BARE = r'''
import json, sys
from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.server import Site

port, spec_file = int(sys.argv[1]), sys.argv[2]
DOCUMENTS = {}
for target, doc in json.load(open(spec_file)).items():
    reps = {}
    for name in ("identity", "gzip"):
        if doc[name] is not None:
            body_file, etag = doc[name]
            reps[name] = (open(body_file, "rb").read(), etag.encode())
    DOCUMENTS[target.encode()] = (
        reps, doc["content_type"].encode(), doc["last_modified"].encode()
    )

class Bare(Resource):
    """The ceiling: a leaf that answers documents with their validators."""
    isLeaf = True
    def render_GET(self, request):
        reps, content_type, last_modified = DOCUMENTS[request.uri]
        encoding = request.getHeader(b"accept-encoding") or b""
        gzipped = "gzip" in reps and b"gzip" in encoding
        body, etag = reps["gzip" if gzipped else "identity"]
        request.setHeader(b"ETag", etag)
        request.setHeader(b"Last-Modified", last_modified)
        if request.getHeader(b"if-none-match") == etag:
            request.setResponseCode(304)
            return b""
        request.setHeader(b"Content-Type", content_type)
        if gzipped:
            request.setHeader(b"Content-Encoding", b"gzip")
        return body

site = Site(Bare())
site.noisy = False
site.log = lambda request: None  # no access log
reactor.listenTCP(port, site, interface="127.0.0.1")
reactor.run()
'''

STARLETTE = r"""
import json, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

port, spec_file = int(sys.argv[1]), sys.argv[2]
DOCUMENTS = {}
for target, doc in json.load(open(spec_file)).items():
    reps = {}
    for name in ("identity", "gzip"):
        if doc[name] is not None:
            body_file, etag = doc[name]
            reps[name] = (open(body_file, "rb").read(), etag)
    DOCUMENTS[target] = (reps, doc["content_type"], doc["last_modified"])

async def document(request):
    target = request.scope["path"]
    query = request.scope["query_string"]
    if query:
        target += "?" + query.decode("latin-1")
    reps, content_type, last_modified = DOCUMENTS[target]
    gzipped = "gzip" in reps and "gzip" in request.headers.get("accept-encoding", "")
    body, etag = reps["gzip" if gzipped else "identity"]
    headers = {"ETag": etag, "Last-Modified": last_modified}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return Response(body, headers=headers, media_type=content_type)

app = Starlette(routes=[Route("/{path:path}", document)])
uvicorn.run(
    app, host="127.0.0.1", port=port, loop="uvloop", http="httptools",
    access_log=False, log_level="warning",
)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str) -> None:
    for _ in range(600):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing answered at {url}")


def pinned(cpu: str | None, command: list[str]) -> list[str]:
    """C{command} run on CPU C{cpu} (taskset), or anywhere if C{None}."""
    return command if cpu is None else ["taskset", "-c", cpu, *command]


TWISTD = ("-c", "from twisted.scripts.twistd import run; run()")
"""Python's arguments that run twistd."""


def many_clients(source: Path) -> list[str]:
    """
    The options that lift the per-client budget of search and since answers
    (C{--computed-rate}, C{--computed-burst}), for a tree that has one: a
    load generator on one address stands for many clients, and measures what
    the server can answer, not what one client may ask. Checking the budget
    stays in every answer measured.
    """
    if not (source / "reviewsd" / "web" / "budget.py").exists():
        return []
    return ["--computed-rate", "1000000", "--computed-burst", "1000000"]


def start_daemon(
    port: int,
    work: Path,
    *argv: str,
    source: Path = ROOT,
    log: IO[bytes] | None = None,
    logger: str | None = None,
    cpu: str | None = None,
    one_client: bool = False,
    program: Sequence[str] = TWISTD,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """
    twistd -n reviewsd on 127.0.0.1:port, logging to standard output, which
    is /dev/null. (Not --logfile=/dev/null: twistd rotates a log file at each
    megabyte, and as root it would rename /dev/null and go on writing a
    regular file in its place.) C{source} is the tree to run; C{log}, a file
    to keep the output in instead; C{logger}, twistd's C{--logger} (its own
    text format unless given); C{cpu}, the CPU to pin it to. Its clients
    count as many (L{many_clients}) unless C{one_client}, as an attack's do.
    C{program} runs twistd (Python's arguments before twistd's own), C{env}
    adds to its environment.
    """
    logging = [f"--logger={logger}"] if logger else []
    budget = [] if one_client else many_clients(source)
    return subprocess.Popen(
        pinned(
            cpu,
            [
                sys.executable,
                *program,
                "--nodaemon",
                "--pidfile=",
                "--logfile=-",
                *logging,
                "reviewsd",
                "--listen",
                f"tcp:{port}:interface=127.0.0.1",
                "--state-dir",
                str(work / "state"),
                *budget,
                *argv,
            ],
        ),
        env={**os.environ, "PYTHONPATH": str(source), **(env or {})},
        cwd=work,
        stdout=subprocess.DEVNULL if log is None else log,
    )


def wrk(
    url: str,
    seconds: int,
    connections: int,
    etag: str | None,
    script: Path | None = None,
    *,
    headers: Sequence[str] = (),
    cpu: str | None = None,
    refusals: bool = False,
) -> dict[str, float]:
    """
    wrk's figures: requests a second, the count, p50 and p99 in ms, and the
    answers that were not 2xx or 3xx (C{refused}), which end the benchmark
    unless C{refusals} are expected.
    """
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    for header in headers:
        command[1:1] = ["-H", header]
    if etag:
        command[1:1] = ["-H", f"If-None-Match: {etag}"]
    if script:
        command[1:1] = ["-s", str(script)]
    out = subprocess.run(
        pinned(cpu, command), capture_output=True, text=True, check=True
    ).stdout
    unit = {"us": 0.001, "ms": 1.0, "s": 1000.0}

    def latency(percent: str) -> float:
        value, scale = re.search(
            rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)", out, re.M
        ).groups()
        return float(value) * unit[scale]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx and not refusals:
        raise SystemExit(f"{url}: {non2xx.group(1)} error answers\n{out}")
    return {
        "refused": float(non2xx.group(1)) if non2xx else 0.0,
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": float(re.search(r"(\d+) requests in", out).group(1)),
        "p50": latency("50"),
        "p99": latency("99"),
    }


def wrk_arguments(doc: str) -> argparse.Namespace:
    """The command line every wrk benchmark takes; checks wrk is there."""
    parser = wrk_parser(doc)
    args = parser.parse_args()
    check_wrk()
    return args


def wrk_parser(doc: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    return parser


def check_wrk() -> None:
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")


def peer_python(venv: Path) -> Path:
    """
    The Python of the peer's own virtual environment, made on first use:
    uvicorn, Starlette, uvloop and httptools are the benchmark's, never
    reviewsd's.
    """
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} for uvicorn+Starlette", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = [str(python), "-c", "import uvicorn, starlette, uvloop, httptools"]
    if subprocess.run(probe, capture_output=True).returncode != 0:
        packages = ["uvicorn", "starlette", "uvloop", "httptools"]
        subprocess.run([str(python), "-m", "pip", "install", *packages], check=True)
    return python


def fetch(url: str, *headers: tuple[str, str]) -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=dict(headers))
    with urllib.request.urlopen(request) as response:
        return response.read(), dict(response.headers)


def copy_answers(base: str, work: Path) -> tuple[Path, dict[str, str]]:
    """
    The daemon's answers, as a file the bare and peer servers read: each
    target's representations (body file, ETag), type and date; and each
    target's identity ETag, for the 304 rows.
    """
    spec: dict[str, dict[str, object]] = {}
    etags: dict[str, str] = {}
    for number, target in enumerate(sorted({row[1] for row in ROWS})):
        entry: dict[str, object] = {}
        gzip = (("Accept-Encoding", "gzip"),)
        for name, headers in (("identity", ()), ("gzip", gzip)):
            body, answer = fetch(base + target, *headers)
            if name == "gzip" and answer.get("Content-Encoding") != "gzip":
                entry[name] = None
                continue
            body_file = work / f"body-{number}-{name}"
            body_file.write_bytes(body)
            entry[name] = (str(body_file), answer["ETag"])
            if name == "identity":
                answer_etag = answer["ETag"]
            entry["content_type"] = answer["Content-Type"]
            entry["last_modified"] = answer["Last-Modified"]
        spec[target] = entry
        etags[target] = answer_etag
    spec_file = work / "answers.json"
    spec_file.write_text(json.dumps(spec))
    return spec_file, etags


Servers = dict[str, tuple[str, int]]
"""Base URL and process id by column name."""


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used, user and system."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_servers(
    args: argparse.Namespace, work: Path, processes: list[subprocess.Popen[bytes]]
) -> tuple[Servers, dict[str, str]]:
    """
    Every column's server, each pinned to the server CPU, answering; and
    the identity ETag of each target.
    """
    sys.path.insert(0, str(ROOT))
    from reviewsd.data.synthetic import write

    data = write(work / "data", args.reviews)
    servers: Servers = {}
    daemons = [("access log on", ROOT, ()), ("access log off", ROOT, ("off",))]
    if args.baseline is not None:
        daemons += [
            ("baseline log on", args.baseline, ()),
            ("baseline log off", args.baseline, ("off",)),
        ]
    for column, source, extra in daemons:
        port = free_port()
        access = ("--access-log", *extra) if extra else ()
        daemon_work = work / column.replace(" ", "-")
        daemon_work.mkdir()
        daemon = start_daemon(
            port,
            daemon_work,
            "--data",
            str(data),
            *access,
            source=source,
            logger=JOURNAL_LOGGER,
            cpu=args.server_cpu,
        )
        processes.append(daemon)
        servers[column] = (f"http://127.0.0.1:{port}", daemon.pid)
        wait_for(servers[column][0] + "/reviews.json")
    spec_file, etags = copy_answers(servers["access log on"][0], work)
    peers = [("bare twisted.web", Path(sys.executable), BARE)]
    if args.peer_venv is not None:
        peers.append(("uvicorn+Starlette", peer_python(args.peer_venv), STARLETTE))
    for column, python, program in peers:
        port = free_port()
        command = [str(python), "-c", program, str(port), str(spec_file)]
        process = subprocess.Popen(pinned(args.server_cpu, command))
        processes.append(process)
        servers[column] = (f"http://127.0.0.1:{port}", process.pid)
        wait_for(servers[column][0] + "/reviews.json")
    return servers, etags


def measure(
    args: argparse.Namespace, servers: Servers, etags: dict[str, str]
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """
    Every row on every server, rounds alternating the servers (each round
    starting with the next one); each run also counts the requests answered
    per second of the server's CPU time, which other work on the machine
    disturbs less than the rate.
    """
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    for label, target, carries in ROWS:
        runs[label] = {column: [] for column in servers}
        headers = ["Accept-Encoding: gzip"] if carries == "gzip" else []
        etag = etags[target] if carries == "etag" else None
        columns = list(servers)
        for turn in range(args.rounds):
            # each round starts with the next server: none is always first
            for column in (
                columns[turn % len(columns) :] + columns[: turn % len(columns)]
            ):
                base, pid = servers[column]
                before = cpu_seconds(pid)
                run = wrk(
                    base + target,
                    args.seconds,
                    args.connections,
                    etag,
                    headers=headers,
                    cpu=args.wrk_cpu,
                )
                run["per_cpu"] = run["requests"] / max(cpu_seconds(pid) - before, 0.01)
                runs[label][column].append(run)
        print(f"measured {label}", file=sys.stderr, flush=True)
    return runs


def cell(runs: list[dict[str, float]], key: str) -> str:
    """The median of the rounds, and their range if more than one."""
    rates = sorted(run[key] for run in runs)
    median = f"{statistics.median(rates):,.0f}"
    if len(rates) == 1:
        return median
    return f"{median} ({rates[0]:,.0f}-{rates[-1]:,.0f})"


def table(
    runs: dict[str, dict[str, list[dict[str, float]]]], servers: Servers, key: str
) -> None:
    """A Markdown table: C{key} per server, and the ratios the goals are about."""
    columns = list(servers)
    title = {"rps": "req/s", "per_cpu": "req per CPU-second"}[key]
    peer = "uvicorn+Starlette" in columns
    print(
        f"| {title} | {' | '.join(columns)} | on/off | on/bare"
        f"{' | on/uvicorn' if peer else ''} | p50 / p99 ms (on) |"
    )
    print(f"|---|{'---|' * len(columns)}---|---|{'---|' if peer else ''}---|")
    for label, by_column in runs.items():
        rate = {c: statistics.median(r[key] for r in by_column[c]) for c in columns}
        on = by_column["access log on"]
        p50 = statistics.median(r["p50"] for r in on)
        p99 = statistics.median(r["p99"] for r in on)
        versus_peer = (
            f" | {rate['access log on'] / rate['uvicorn+Starlette']:.2f}"
            if peer
            else ""
        )
        print(
            f"| {label} | {' | '.join(cell(by_column[c], key) for c in columns)}"
            f" | {rate['access log on'] / rate['access log off']:.2f}"
            f" | {rate['access log on'] / rate['bare twisted.web']:.2f}"
            f"{versus_peer} | {p50:.2f} / {p99:.2f} |"
        )


def main() -> None:
    parser = wrk_parser(__doc__)
    parser.add_argument("--reviews", type=int, default=300)
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=Path.home() / ".cache" / "reviewsd-bench-venv",
        help="the peer's virtual environment, made if missing",
    )
    parser.add_argument("--no-peer", dest="peer_venv", action="store_const", const=None)
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another source tree of reviewsd (an older one: git archive) to compare",
    )
    parser.add_argument("--server-cpu", default="0", help="'' for no pinning")
    parser.add_argument("--wrk-cpu", default="1", help="'' for no pinning")
    args = parser.parse_args()
    args.server_cpu = args.server_cpu or None
    args.wrk_cpu = args.wrk_cpu or None
    check_wrk()

    processes: list[subprocess.Popen[bytes]] = []
    work = Path(tempfile.mkdtemp(prefix="reviewsd-bench-"))
    try:
        servers, etags = start_servers(args, work, processes)
        runs = measure(args, servers, etags)
        print(
            f"\n{args.reviews} reviews; wrk -t1 -c{args.connections}, "
            f"{args.seconds} s, {args.rounds} rounds: median (range)\n"
        )
        table(runs, servers, "rps")
        print()
        table(runs, servers, "per_cpu")
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
