"""
Memory under load: the daemon's resident memory after start-up, after a
load run on every kind of endpoint once idle again, and at its peak,
beside a bare twisted.web resource serving the same bytes.

    python benchmarks/memory.py [--reviews 100000] [--rounds 2] [--seconds 4]
        [--connections 16] [--data DIR] [--idle 5] [--split]

Needs wrk (Debian: apt-get install wrk). Generates a data directory
(reviewsd/data/synthetic.py) unless given one, starts `twistd -n reviewsd`
on it in its default configuration twice (cold: empty state directory;
then warm, which is measured), and a bare resource holding the bytes of
every answer loaded. Then wrk -t1 loads each endpoint in turn (documents
200 / 304 / gzip, feeds, search, since, MCP tools/call), rounds alternated
between the two servers so that machine noise hits both alike, while a
thread samples both processes' VmRSS.

Peaks: VmHWM over the whole life includes the snapshot build; the load's
own peak is VmHWM reset after start-up (/proc/PID/clear_refs, 5) where the
kernel allows it, else the sampled maximum.

--split runs the daemon under a probe instead (tracemalloc from start-up
on, which slows it): at start-up, in the middle of each endpoint's load and
once idle, it records Python allocations since start-up by origin, the
bytes held by transports, glibc's heap (mallinfo2), pymalloc's arenas and
/proc/self/smaps, and finally what malloc_trim(0) gives back; the growth is
printed split into those parts. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.documents import TWISTD, free_port, start_daemon
from benchmarks.suite import settled

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


@dataclass(frozen=True)
class Load:
    """One endpoint loaded by wrk, with the request headers that choose it."""

    label: str
    uri: str
    gzip: bool = False
    etag: bool = False
    mcp: bool = False


LOADS = (
    Load("document 200", "/reviews.json"),
    Load("document 304", "/reviews.json", etag=True),
    Load("document gzip", "/reviews.json", gzip=True),
    Load("feed xml", "/feed.xml"),
    Load("feed json gzip", "/api/feed.json", gzip=True),
    Load("search filter", "/api/reviews/search?rating=5&since=2025-01-01&limit=20"),
    Load("search text", "/api/reviews/search?query=late&limit=20"),
    Load("since", "/api/reviews/since/2026-06-01"),
    Load("mcp tools/call", "/mcp", mcp=True),
)

MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
"""A session of the 2025-06-18 revision, as benchmarks have always used."""

LUA = """
wrk.method = "POST"
wrk.body = [[%s]]
%s
"""

MCP_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "search_reviews", "arguments": {"rating": 5, "limit": 20}},
}

BARE = r'''
import json, sys
from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.server import Site

port, manifest = int(sys.argv[1]), json.load(open(sys.argv[2]))
answers = {}
for entry in manifest:
    with open(entry["body_file"], "rb") as f:
        body = f.read()
    headers = [(k.encode(), v.encode()) for k, v in entry["headers"].items()]
    answers[entry["uri"].encode(), entry["gzip"]] = (headers, body)

class Bare(Resource):
    """The floor: the same bytes and validators, nothing else."""
    isLeaf = True
    def render(self, request):
        gzip = b"gzip" in (request.getHeader(b"accept-encoding") or b"")
        headers, body = answers[request.uri, gzip]
        for name, value in headers:
            request.setHeader(name, value)
        tag = request.getHeader(b"if-none-match")
        if tag is not None and tag == request.responseHeaders.getRawHeaders(b"etag")[0]:
            request.setResponseCode(304)
            return b""
        return body

site = Site(Bare())
site.noisy = False
site.log = lambda request: None
reactor.listenTCP(port, site, interface="127.0.0.1")
reactor.run()
'''


# --- measuring a process from outside ---------------------------------------


def status(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM and the rest of /proc/PID/status's sizes, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name.startswith(("Vm", "Rss")) and value.strip().endswith("kB"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+, needs the right to)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class Sampler(threading.Thread):
    """The largest VmRSS of each process, sampled every 50 ms."""

    def __init__(self, pids: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.pids = pids
        self.peak = dict.fromkeys(pids, 0.0)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            for name, pid in self.pids.items():
                try:
                    rss = status(pid)["VmRSS"]
                except (OSError, KeyError):
                    continue
                self.peak[name] = max(self.peak[name], rss)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- load ------------------------------------------------------------------


def wrk(
    url: str, seconds: int, connections: int, headers: list[str], script: Path | None
) -> dict[str, float]:
    """Requests and megabytes per second of one wrk run; errors stop the run."""
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s"]
    for header in headers:
        command += ["-H", header]
    if script is not None:
        command += ["-s", str(script)]
    out = subprocess.run(
        [*command, url], capture_output=True, text=True, check=True
    ).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} error answers\n{out}")
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    scale = {"B": 1 / MIB, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}
    assert transfer is not None
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps is not None
    return {
        "rps": float(rps.group(1)),
        "mib_s": float(transfer.group(1)) * scale[transfer.group(2)],
    }


@dataclass
class Target:
    """A server under load: its process, and how wrk asks each endpoint."""

    name: str
    process: subprocess.Popen[bytes]
    base: str
    etags: dict[str, str] = field(default_factory=dict)
    scripts: dict[str, Path] = field(default_factory=dict)

    def run(self, load: Load, args: argparse.Namespace) -> dict[str, float]:
        headers = []
        if load.gzip:
            headers.append("Accept-Encoding: gzip")
        if load.etag:
            headers.append(f"If-None-Match: {self.etags[load.uri]}")
        return wrk(
            self.base + load.uri,
            args.seconds,
            args.connections,
            headers,
            self.scripts.get(load.uri),
        )


def mcp_session(base: str) -> str:
    """A new MCP session on the daemon at C{base}: its id."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
    }
    request = urllib.request.Request(
        base + "/mcp", data=json.dumps(initialize).encode(), headers=MCP_HEADERS
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.headers["Mcp-Session-Id"])


def fetch(base: str, load: Load, session: str | None) -> tuple[bytes, Any]:
    """The bytes and headers of one answer, asked as wrk asks it."""
    headers = {"Accept-Encoding": "gzip"} if load.gzip else {}
    data = None
    if load.mcp:
        assert session is not None
        data = json.dumps(MCP_CALL).encode()
        headers |= MCP_HEADERS | {"Mcp-Session-Id": session}
    request = urllib.request.Request(base + load.uri, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read(), response.headers


def start_bare(work: Path, daemon: Target) -> Target:
    """The bare resource, holding the daemon's answer to every load."""
    session = mcp_session(daemon.base)
    manifest = []
    for number, load in enumerate(LOADS):
        if load.etag:
            continue  # the same answer as without, given its ETag
        body, headers = fetch(daemon.base, load, session)
        body_file = work / f"bare-{number}"
        body_file.write_bytes(body)
        kept = ("ETag", "Last-Modified", "Content-Type", "Content-Encoding")
        manifest.append(
            {
                "uri": load.uri,
                "gzip": load.gzip,
                "headers": {k: headers[k] for k in kept if headers[k]},
                "body_file": str(body_file),
            }
        )
        if not load.gzip and headers["ETag"]:
            daemon.etags[load.uri] = headers["ETag"]
    (work / "bare.json").write_text(json.dumps(manifest))
    (work / "bare.py").write_text(BARE)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(work / "bare.py"), str(port), str(work / "bare.json")]
    )
    bare = Target("bare", process, f"http://127.0.0.1:{port}", dict(daemon.etags))
    up(process, bare.base + "/reviews.json", 60)
    for target in (daemon, bare):
        script = work / f"mcp-{target.name}.lua"
        mcp = MCP_HEADERS | {"Mcp-Session-Id": session}
        lines = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in mcp.items())
        script.write_text(LUA % (json.dumps(MCP_CALL), lines))
        target.scripts["/mcp"] = script
    return bare


def up(process: subprocess.Popen[bytes], url: str, timeout: float) -> float:
    """Seconds until C{url} answers a HEAD; stops if the process ends."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            raise SystemExit(f"the server for {url} ended: {process.returncode}")
        try:
            request = urllib.request.Request(url, method="HEAD")
            urllib.request.urlopen(request, timeout=2).read()
            return time.monotonic() - started
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing answered at {url} in {timeout} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


# --- the run ----------------------------------------------------------------


def launch(
    port: int, work: Path, args: argparse.Namespace, probe: bool
) -> subprocess.Popen[bytes]:
    """The daemon in its default configuration, under the probe if asked."""
    log = (work / "daemon.log").open("ab")
    return start_daemon(
        port,
        work,
        "--data",
        str(args.data),
        source=args.source,
        log=log,
        program=[str(ROOT / "benchmarks" / "memory_probe.py")] if probe else TWISTD,
        env={"PROBE_OUT": str(work / "probe")},
    )


def start(work: Path, args: argparse.Namespace) -> tuple[Target, dict[str, float]]:
    """
    A cold start (fills the insights cache), stopped; then the warm start
    that is measured: RSS at the first answer and once settled.
    """
    figures: dict[str, float] = {}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if not (work / "state").exists():
        cold = launch(port, work, args, False)
        figures["cold_s"] = up(cold, base + "/reviews.json", 1800)
        cold_status = status(cold.pid)
        figures["cold_first_rss"] = cold_status["VmRSS"]
        figures["cold_hwm"] = cold_status["VmHWM"]
        settled(cold.pid)
        figures["cold_settled_rss"] = status(cold.pid)["VmRSS"]
        stop(cold)
    daemon = launch(port, work, args, args.split)
    figures["warm_s"] = up(daemon, base + "/reviews.json", 1800)
    figures["first_rss"] = status(daemon.pid)["VmRSS"]
    settled(daemon.pid)
    now = status(daemon.pid)
    figures["settled_rss"], figures["start_hwm"] = now["VmRSS"], now["VmHWM"]
    return Target("reviewsd", daemon, base), figures


def run_load(
    targets: list[Target], args: argparse.Namespace, on_each: Any = None
) -> tuple[dict[tuple[str, str], list[dict[str, float]]], dict[str, float]]:
    """Every load, in rounds alternated between targets; the sampled peaks."""
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    sampler = Sampler({t.name: t.process.pid for t in targets})
    sampler.start()
    try:
        for _ in range(args.rounds):
            for load in LOADS:
                for target in targets:
                    if on_each is not None:
                        timer = threading.Timer(
                            args.seconds / 2, on_each, (target, load)
                        )
                        timer.start()
                    runs = results.setdefault((target.name, load.label), [])
                    runs.append(target.run(load, args))
                    print(
                        f"  {target.name:<8} {load.label:<16}"
                        f" {runs[-1]['rps']:>9.1f} req/s"
                        f" {runs[-1]['mib_s']:>8.1f} MiB/s"
                        f"  RSS {status(target.process.pid)['VmRSS']:>6.0f} MiB"
                        f"  load {loadavg()}",
                        flush=True,
                    )
    finally:
        sampler.stopping.set()
        sampler.join()
    return results, sampler.peak


def idle(targets: list[Target], seconds: float) -> dict[str, float]:
    """RSS once each target has settled, and C{seconds} more have passed."""
    for target in targets:
        settled(target.process.pid)
    time.sleep(seconds)
    return {t.name: status(t.process.pid)["VmRSS"] for t in targets}


def report(
    figures: dict[str, dict[str, float]],
    results: dict[tuple[str, str], list[dict[str, float]]],
) -> None:
    ours, bare = figures["reviewsd"], figures["bare"]
    print("\n| RSS, MiB | reviewsd | bare twisted.web |")
    print("|---|---:|---:|")
    for label, key in (
        ("after start-up (first answer)", "first_rss"),
        ("after start-up (settled: word index built)", "settled_rss"),
        ("after the load, idle again", "idle_rss"),
        ("peak during the load (VmHWM reset after start-up)", "load_hwm"),
        ("peak during the load (sampled every 50 ms)", "sampled_peak"),
        ("peak over the whole life (VmHWM, incl. the build)", "life_hwm"),
    ):
        print(f"| {label} | {ours.get(key, 0):.0f} | {bare.get(key, 0):.0f} |")
    base = ours["settled_rss"]
    print(
        f"\nafter load / after start-up (settled): {ours['idle_rss'] / base:.2f}"
        f" (target <= 1.10); load peak / start-up: {ours['load_hwm'] / base:.2f}"
        " (target <= 1.50)"
    )
    if "cold_first_rss" in ours:
        print(
            f"cold start: {ours['cold_s']:.1f} s to the first answer,"
            f" {ours['cold_first_rss']:.0f} MiB then,"
            f" {ours['cold_settled_rss']:.0f} MiB settled,"
            f" build peak {ours['cold_hwm']:.0f} MiB"
        )
    print(f"warm start: {ours['warm_s']:.1f} s to the first answer")
    print("\n| endpoint | reviewsd req/s | MiB/s | bare req/s | MiB/s |")
    print("|---|---:|---:|---:|---:|")
    for load in LOADS:
        row = [f"| {load.label}"]
        for name in ("reviewsd", "bare"):
            runs = results[name, load.label]
            rps = sorted(r["rps"] for r in runs)
            row.append(
                f"{sum(rps) / len(rps):.1f} ({'-'.join(f'{r:.0f}' for r in rps)})"
            )
            row.append(f"{sum(r['mib_s'] for r in runs) / len(runs):.0f}")
        print(" | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--idle", type=float, default=5.0)
    parser.add_argument("--data", type=Path, help="a data directory to use")
    parser.add_argument("--work", type=Path, help="keep state here between runs")
    parser.add_argument("--split", action="store_true")
    parser.add_argument(
        "--source", type=Path, default=ROOT, help="the tree to run (this one)"
    )
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")
    work = args.work or Path(tempfile.mkdtemp(prefix="reviewsd-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.data is None:
        from reviewsd.data.synthetic import write

        args.data = write(work / "data", args.reviews)
    print(f"load average before: {loadavg()} on {os.cpu_count()} CPUs", flush=True)
    targets: list[Target] = []
    try:
        daemon, ours = start(work, args)
        targets.append(daemon)
        if args.split:
            probe(daemon, "start")
        bare = start_bare(work, daemon)
        targets.append(bare)
        theirs = {"first_rss": status(bare.process.pid)["VmRSS"]}
        theirs["settled_rss"] = theirs["first_rss"]
        theirs["life_hwm"] = status(bare.process.pid)["VmHWM"]
        ours["life_hwm"] = ours["start_hwm"]
        resettable = all(reset_peak(t.process.pid) for t in targets)
        results, sampled = run_load(
            targets,
            args,
            (lambda t, load: probe(t, load.label)) if args.split else None,
        )
        for name, figures in (("reviewsd", ours), ("bare", theirs)):
            pid = daemon.process.pid if name == "reviewsd" else bare.process.pid
            figures["sampled_peak"] = sampled[name]
            hwm = status(pid)["VmHWM"]
            figures["load_hwm"] = hwm if resettable else sampled[name]
            figures["life_hwm"] = max(figures["life_hwm"], hwm)
        for name, rss in idle(targets, args.idle).items():
            (ours if name == "reviewsd" else theirs)["idle_rss"] = rss
        if args.split:
            probe(daemon, "idle")
            time.sleep(2)
            print_split(work / "probe")
        report({"reviewsd": ours, "bare": theirs}, results)
        print(f"load average after: {loadavg()}")
    finally:
        for target in targets:
            stop(target.process)
            label = Path(tempfile.gettempdir()) / f"probe-label-{target.process.pid}"
            label.unlink(missing_ok=True)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


# --- the probe, inside the daemon (--split) ----------------------------------


def probe(target: Target, label: str) -> None:
    """Ask the probe in the daemon to record now, under C{label}."""
    if target.name != "reviewsd":
        return
    (Path(tempfile.gettempdir()) / f"probe-label-{target.process.pid}").write_text(
        label
    )
    target.process.send_signal(signal.SIGUSR2)


def print_split(path: Path) -> None:
    """The records of the probe, and the growth from start-up to idle split."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    keys = sorted({k for r in records for k in r if k != "label"})
    print("\nprobe records (MiB):")
    print("| " + " | ".join(["label", *keys]) + " |")
    for r in records:
        print(
            "| "
            + " | ".join([r["label"], *(f"{r[k]:.1f}" if k in r else "" for k in keys)])
            + " |"
        )
    first, last = records[0], records[-1]
    print("\ngrowth from start-up to idle (MiB):")
    for key in (
        "rss",
        "traced",
        "heap_in_use",
        "heap_free_kept",
        "mmapped",
        "smaps_heap",
        "smaps_anon",
    ):
        print(f"  {key:<16} {last.get(key, 0) - first.get(key, 0):+8.1f}")
    if "rss_after_trim" in last:
        given = last["rss"] - last["rss_after_trim"]
        print(
            f"  malloc_trim(0) then gave back {given:.1f}"
            f" in {last.get('trim_ms', 0):.1f} ms"
        )


if __name__ == "__main__":
    main()
