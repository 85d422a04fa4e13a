"""
Hostile clients against the real daemon, on loopback: what each costs the
daemon (resident memory) and a well-behaved client beside it (latency).

    python benchmarks/attacks.py [--attack NAME ...] [--source ROOT] [--seconds 10]

Starts `twistd -n reviewsd` on the bundled demo data (from C{--source}, a
source tree: this one by default, or a worktree of another commit to
compare), measures a normal client alone, then runs each chosen attack
(all by default) for a bounded time while the normal client goes on, and
prints a table. Each attack is one function in L{ATTACKS}: it gets the
running daemon and the options, and returns its rows. Not part of the test
suite.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.documents import ROOT, free_port, start_daemon, wait_for, wrk

NORMAL_PATH = "/reviews.json"

Row = tuple[str, str, str]
"""One line of the table: the attack, what was measured, the figure."""


class Daemon:
    """The daemon under attack: its process, address, and memory."""

    def __init__(self, source: Path, work: Path, *options: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        work.mkdir(parents=True)
        self.log = work / "twistd.log"
        log = self.log.open("wb")
        self.process = start_daemon(
            self.port, work, *options, source=source, log=log, one_client=True
        )
        log.close()  # the daemon writes to its own copy
        wait_for(self.base + NORMAL_PATH)

    def rss(self) -> float:
        """Resident memory now, in MiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise SystemExit("no VmRSS: is the daemon still running?")

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_bytes(self) -> int:
        """How much the daemon has logged (its text log, on standard output)."""
        return self.log.stat().st_size

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class NormalClient:
    """
    A well-behaved client: one keep-alive connection asking for
    L{NORMAL_PATH} over and over, reading each answer, in a thread; it keeps
    each request's latency.
    """

    def __init__(self, port: int) -> None:
        self._port = port
        self._stop = threading.Event()
        self.latencies: list[float] = []
        self.errors = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> NormalClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=10)
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                connection.request("GET", NORMAL_PATH)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    self.errors += 1
            except (OSError, http.client.HTTPException):
                self.errors += 1
                connection.close()
                connection = http.client.HTTPConnection(
                    "127.0.0.1", self._port, timeout=10
                )
                time.sleep(0.01)
                continue
            self.latencies.append(time.perf_counter() - started)
            time.sleep(0.002)  # a client, not a load generator
        connection.close()

    def rows(self, attack: str) -> list[Row]:
        if not self.latencies:
            return [(attack, "normal client", f"no answer ({self.errors} errors)")]
        ms = sorted(1000 * x for x in self.latencies)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        return [
            (
                attack,
                "normal client p50 / p99",
                f"{statistics.median(ms):.2f} / {p99:.2f} ms"
                f" ({len(ms)} requests, {self.errors} errors)",
            )
        ]


def baseline(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """The daemon left alone: memory, and the normal client's latency."""
    with NormalClient(daemon.port) as client:
        time.sleep(min(args.seconds, 5))
    return [("idle", "RSS", f"{daemon.rss():.0f} MiB"), *client.rows("idle")]


def watch_memory(
    daemon: Daemon, args: argparse.Namespace, until: Callable[[], bool]
) -> tuple[float, bool]:
    """
    Sample the daemon's memory until C{until()} or C{args.seconds} have
    passed, or it exceeds C{args.max_rss}; the peak, and whether it did.
    """
    deadline = time.monotonic() + args.seconds
    peak = daemon.rss()
    while time.monotonic() < deadline and not until() and daemon.alive():
        peak = max(peak, daemon.rss())
        if peak > args.max_rss:
            return peak, True
        time.sleep(0.2)
    return peak, False


def kernel_tcp_memory() -> float:
    """
    What the kernel holds in TCP buffers, in MiB, machine-wide (both ends of
    loopback connections): not the daemon's memory, but what an attack
    costs the machine.
    """
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            fields = line.split()
            return int(fields[fields.index("mem") + 1]) * 4096 / 2**20
    return 0.0


def pipelining(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """
    C{args.connections} connections, each sending C{args.requests}
    pipelined C{GET /reviews.json} and never reading an answer.
    """
    idle = daemon.rss()
    kernel = [kernel_tcp_memory()]
    request = f"GET {NORMAL_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sockets: list[socket.socket] = []
    unsent: dict[socket.socket, memoryview] = {}
    with NormalClient(daemon.port) as client:
        for _ in range(args.connections):
            s = socket.create_connection(("127.0.0.1", daemon.port))
            s.setblocking(False)
            sockets.append(s)
            unsent[s] = memoryview(request * args.requests)

        def send_more() -> bool:
            """Push what the daemon takes; True once everything is sent."""
            for s, data in list(unsent.items()):
                try:
                    sent = s.send(data)
                except BlockingIOError:
                    continue
                except OSError:
                    sent = len(data)
                if sent >= len(data):
                    del unsent[s]
                else:
                    unsent[s] = data[sent:]
            kernel.append(kernel_tcp_memory())
            return False  # never done early: the answers keep coming

        peak, stopped = watch_memory(daemon, args, send_more)
        under = daemon.rss()
    for s in sockets:
        s.close()
    label = f"pipelining ({args.connections} conn x {args.requests})"
    return [
        (
            label,
            "RSS idle / peak / at end",
            f"{idle:.0f} / {peak:.0f} / {under:.0f} MiB",
        ),
        (
            label,
            "growth",
            f"{peak - idle:+.0f} MiB" + (" (stopped at --max-rss)" if stopped else ""),
        ),
        (
            label,
            "kernel TCP buffers before / peak",
            f"{kernel[0]:.0f} / {max(kernel):.0f} MiB (machine-wide)",
        ),
        (
            label,
            "requests left unsent",
            f"{sum(len(v) for v in unsent.values()) // len(request)}",
        ),
        *client.rows(label),
    ]


MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def _post_mcp(
    connection: http.client.HTTPConnection, body: bytes
) -> tuple[http.client.HTTPConnection, int | str]:
    """POST C{body} to /mcp: the status, or C{"error"} (then a new connection)."""
    try:
        connection.request("POST", "/mcp", body, MCP_HEADERS)
        response = connection.getresponse()
        response.read()
        return connection, response.status
    except (OSError, http.client.HTTPException):
        connection.close()
        host, port = connection.host, connection.port
        return http.client.HTTPConnection(host, port, timeout=60), "error"


def _count(path: Path, byte: bytes) -> int:
    """How many times C{byte} is in the file, read a piece at a time."""
    with path.open("rb") as f:
        return sum(piece.count(byte) for piece in iter(lambda: f.read(1 << 20), b""))


def _answers(codes: dict[int | str, int]) -> str:
    return ", ".join(f"{n} x {code}" for code, n in sorted(codes.items(), key=str))


def big_client_info(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """
    C{args.initializes} MCP C{initialize} requests, each naming its client
    with a 1 MB C{clientInfo.name} that starts with control characters:
    what the sessions (memory) and the log keep of them.
    """
    name = "\x1b[31m\r\n" + "n" * (1_000_000 - 5)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1"},
            },
        }
    ).encode()
    idle, logged = daemon.rss(), daemon.log_bytes()
    peak, stopped = idle, False
    codes: dict[int | str, int] = {}
    label = f"big clientInfo ({args.initializes} x 1 MB name)"
    started = time.perf_counter()
    with NormalClient(daemon.port) as client:
        connection = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=60)
        for number in range(args.initializes):
            connection, code = _post_mcp(connection, body)
            codes[code] = codes.get(code, 0) + 1
            if number % 25 == 0:
                peak = max(peak, daemon.rss())
                if peak > args.max_rss or not daemon.alive():
                    stopped = True
                    break
        connection.close()
        elapsed = time.perf_counter() - started
        after = daemon.rss()
    grown = daemon.log_bytes() - logged
    sent = sum(codes.values())
    return [
        (
            label,
            "RSS before / peak / after",
            f"{idle:.0f} / {max(peak, after):.0f} / {after:.0f} MiB"
            + (" (stopped at --max-rss)" if stopped else ""),
        ),
        (label, "answers", f"{_answers(codes)} in {elapsed:.1f} s"),
        (
            label,
            "log growth",
            f"{grown / 2**20:.1f} MiB ({grown / max(sent, 1):,.0f} bytes a request)",
        ),
        (label, "raw ESC bytes in the log", str(_count(daemon.log, b"\x1b"))),
        *client.rows(label),
    ]


def nested_json(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """
    C{POST /mcp} bodies of C{[} x 1,000, then C{[} x 100,000, back to back on
    one connection for half of C{args.seconds} each, with no session: the
    rate, the answers, the log each costs, and whether the daemon stays up.
    """
    rows: list[Row] = []
    with NormalClient(daemon.port) as client:
        for depth in (1_000, 100_000):
            label = f"nested JSON ([ x {depth:,})"
            body = b"[" * depth
            logged = daemon.log_bytes()
            codes: dict[int | str, int] = {}
            connection = http.client.HTTPConnection(
                "127.0.0.1", daemon.port, timeout=60
            )
            started = time.perf_counter()
            deadline = time.monotonic() + args.seconds / 2
            while time.monotonic() < deadline and daemon.alive():
                connection, code = _post_mcp(connection, body)
                codes[code] = codes.get(code, 0) + 1
            elapsed = time.perf_counter() - started
            connection.close()
            sent = sum(codes.values())
            grown = daemon.log_bytes() - logged
            rows += [
                (label, "requests per second", f"{sent / elapsed:,.0f}"),
                (label, "answers", _answers(codes)),
                (label, "log bytes a request", f"{grown / max(sent, 1):,.0f}"),
            ]
        rows += client.rows("nested JSON")
    try:
        wait_for(daemon.base + NORMAL_PATH)
        up = daemon.alive()
    except SystemExit:
        up = False
    rows.append(("nested JSON", "daemon still answering", "yes" if up else "no"))
    return rows


FLOOD_NAMES = (
    "127.0.0.1",
    "127.0.0.2",
    "127.0.0.3",
    "localhost",
    "[::1]",
    "[::ffff:127.0.0.1]",
)
"""One callback server (this process, on every loopback address) by name."""


class _CallbackServer(http.server.ThreadingHTTPServer):
    """HTTPS on every address, IPv4 and IPv6; counts what the hub asks."""

    address_family = socket.AF_INET6
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("::", 0), _Callbacks)
        self.lock = threading.Lock()
        self.modes: dict[str, int] = {}


class _Callbacks(http.server.BaseHTTPRequestHandler):
    """A WebSub subscriber on every path: confirms, acknowledges, counts."""

    server: _CallbackServer

    def do_GET(self) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        mode = query.get("hub.mode", [""])[0]
        with self.server.lock:
            self.server.modes[mode] = self.server.modes.get(mode, 0) + 1
        body = query.get("hub.challenge", [""])[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def _subscriptions(base: str) -> dict[str, float]:
    """The daemon's C{reviewsd_websub_subscriptions} gauge, by state."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.findall(
        r'^reviewsd_websub_subscriptions\{state="(\w+)"\} (\S+)$', text, re.MULTILINE
    )
    return {state: float(value) for state, value in found}


def _flood(daemon: Daemon, port: int, per_name: int) -> tuple[list[Row], int]:
    """Ask C{per_name} subscriptions under each name: a row per name, and the 202s."""
    label = f"host-name flood ({len(FLOOD_NAMES)} names x {per_name})"
    connection = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    rows: list[Row] = []
    accepted = 0
    for name in FLOOD_NAMES:
        codes: dict[int | str, int] = {}
        for number in range(per_name):
            form = urllib.parse.urlencode(
                {
                    "hub.mode": "subscribe",
                    "hub.topic": daemon.base + "/feed.xml",
                    "hub.callback": f"https://{name}:{port}/{number}",
                }
            )
            connection.request(
                "POST",
                "/api/websub/hub",
                form,
                {"Content-Type": "application/x-www-form-urlencoded"},
            )
            response = connection.getresponse()
            response.read()
            codes[response.status] = codes.get(response.status, 0) + 1
        accepted += codes.get(202, 0)
        rows.append((label, f"answers for {name}", _answers(codes)))
    connection.close()
    return rows, accepted


def hostname_flood(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """
    One HTTPS callback server on loopback, subscribed C{args.per_name}
    times under each of L{FLOOD_NAMES}, on a daemon of its own started
    with C{--allow-private-callbacks} and the server's throwaway CA as
    C{--callback-ca} (the daemon given stays idle): how many requests are
    accepted, and how many subscriptions the one server holds once every
    verification is done, against C{--max-subscriptions-per-host} (100).
    """
    import ssl

    import trustme

    work = Path(tempfile.mkdtemp(prefix="reviewsd-flood-"))
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert(*(name.strip("[]") for name in FLOOD_NAMES)).configure_cert(context)
    server = _CallbackServer()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    flooded = Daemon(
        args.source.resolve(),
        work / "daemon",
        "--allow-private-callbacks",
        "--callback-ca",
        str(work / "ca.pem"),
    )
    try:
        rows, accepted = _flood(flooded, server.server_address[1], args.per_name)
        deadline = time.monotonic() + max(args.seconds, 60)
        states = _subscriptions(flooded.base)
        while states.get("pending_subscribe") and time.monotonic() < deadline:
            time.sleep(0.5)
            states = _subscriptions(flooded.base)
    finally:
        flooded.stop()
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    label = rows[0][0]
    return [
        *rows,
        (label, "accepted (202)", f"{accepted} of {len(FLOOD_NAMES) * args.per_name}"),
        (
            label,
            "subscriptions the one server holds",
            f"{states.get('active', 0):.0f}"
            f" ({states.get('pending_subscribe', 0):.0f} still pending)",
        ),
        (
            label,
            "verifications / denials it received",
            f"{server.modes.get('subscribe', 0)} / {server.modes.get('denied', 0)}",
        ),
    ]


def _review_days(base: str) -> list[str]:
    """Every day from the oldest review's to the newest's, shuffled alike each run."""
    with urllib.request.urlopen(base + NORMAL_PATH, timeout=30) as response:
        dates = [r["date"] for r in json.load(response)["reviews"]]
    first, last = date.fromisoformat(min(dates)), date.fromisoformat(max(dates))
    days = [
        (first + timedelta(days=n)).isoformat() for n in range((last - first).days + 2)
    ]
    random.Random(9).shuffle(days)
    return days


_BUSTER = """
local days = {%s}
local n = 0
%s
request = function()
  n = n + 1
  return wrk.format(nil, "/api/reviews/since/" .. days[n %% #days + 1])
end
delay = function()
  return %d
end
"""
"""
wrk's requests: each the next of C{days}, a new date until all were asked;
each connection waits the given milliseconds before each request.
"""


def since_busting(daemon: Daemon, args: argparse.Namespace) -> list[Row]:
    """
    C{args.busters} connections from wrk (in its own process, so that the
    normal client does not share an interpreter with them), each asking for
    C{/api/reviews/since/{date}} with a date no request asked before (until
    every day of the data's range has been asked), as fast as answers come;
    once accepting gzip (as browsers and most clients do), once not; once
    at about C{args.buster_rate} requests a second; then, for reference, as
    fast asking for one date over and over: what any client as fast costs
    the normal one. The busters are one client (127.0.0.1), held to its
    budget of search and since answers; the normal client asks for a
    document, which is not counted. (C{--daemon-option=--computed-rate=1e6}
    shows them unchecked.)
    """
    every = _review_days(daemon.base)
    script = Path(tempfile.mkdtemp(prefix="reviewsd-busting-")) / "busting.lua"
    rows: list[Row] = []
    paced = int(1000 * args.busters / args.buster_rate)
    for days, gzip, pause in (
        (every, True, 0),
        (every, False, 0),
        (every, True, paced),
        (every[:1], True, 0),
    ):
        encoding = "gzip" if gzip else "identity"
        label = f"since-busting ({args.busters} conn, {encoding}, {len(days)} dates"
        label += f", {pause} ms apart)" if pause else ")"
        header = 'wrk.headers["Accept-Encoding"] = "gzip"' if gzip else ""
        dates = ",".join(f'"{d}"' for d in days)
        script.write_text(_BUSTER % (dates, header, pause))
        with NormalClient(daemon.port) as client:
            busted = wrk(
                daemon.base,
                int(args.seconds),
                args.busters,
                None,
                script,
                refusals=True,
            )
        answered = (busted["requests"] - busted["refused"]) / args.seconds
        rows.append(
            (
                label,
                "buster answers/s (200, 429), p50 / p99",
                f"{answered:.0f}/s, {busted['refused'] / args.seconds:.0f}/s,"
                f" {busted['p50']:.1f} / {busted['p99']:.1f} ms",
            )
        )
        rows += client.rows(label)
    shutil.rmtree(script.parent, ignore_errors=True)
    return rows


ATTACKS: dict[str, Callable[[Daemon, argparse.Namespace], list[Row]]] = {
    "pipelining": pipelining,
    "big-client-info": big_client_info,
    "nested-json": nested_json,
    "hostname-flood": hostname_flood,
    "since-busting": since_busting,
}
"""Every attack by name, in the order they run."""


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--attack",
        action="append",
        choices=sorted(ATTACKS),
        help="an attack to run (repeatable); all by default",
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=ROOT,
        help="the source tree whose reviewsd runs (default: this one)",
    )
    parser.add_argument(
        "--daemon-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="an option for the daemon, such as --daemon-option=--computed-rate=50",
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument(
        "--busters",
        type=int,
        default=8,
        help="connections asking for a new date each time (since-busting)",
    )
    parser.add_argument(
        "--buster-rate",
        type=float,
        default=300,
        help="requests a second of the paced since-busting round",
    )
    parser.add_argument(
        "--initializes",
        type=int,
        default=1000,
        help="MCP initializes with a 1 MB client name (big-client-info)",
    )
    parser.add_argument(
        "--per-name",
        type=int,
        default=150,
        help="subscriptions asked under each name (hostname-flood)",
    )
    parser.add_argument(
        "--max-rss",
        type=float,
        default=4096,
        help="stop an attack once the daemon holds this many MiB",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    work = Path(tempfile.mkdtemp(prefix="reviewsd-attacks-"))
    rows: list[Row] = []
    try:
        for name in args.attack or list(ATTACKS):
            # a daemon per attack: one attack's leftovers do not skew the next
            daemon = Daemon(args.source.resolve(), work / name, *args.daemon_option)
            try:
                if not rows:
                    rows += baseline(daemon, args)
                rows += ATTACKS[name](daemon, args)
            finally:
                daemon.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"reviewsd from {args.source.resolve()}")
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for attack, what, figure in rows:
        print(f"{attack:<{widths[0]}}  {what:<{widths[1]}}  {figure}")


if __name__ == "__main__":
    main()
