"""
twistd under a probe that records where the daemon's memory is, for
benchmarks/memory.py --split: run as

    PROBE_OUT=FILE python benchmarks/memory_probe.py TWISTD-ARGUMENTS...

On each SIGUSR2 it appends a JSON record to FILE, labelled with the text of
/tmp/probe-label-PID: the first starts tracemalloc (so that only what is
allocated after start-up is traced, at a tolerable cost); each later one
records the Python allocations since then by origin, the bytes waiting in
TCP transports (and how many of them are the transports' own copies),
glibc's heap (mallinfo2) and resident memory by mapping kind
(/proc/self/smaps). pymalloc's arenas are read at the first only: Python
does not report them while tracemalloc hooks the allocator (they are
anonymous mappings, so the growth of those bounds theirs). The one
labelled C{idle} finally calls malloc_trim(0) and records what that gave
back.

Imports only the standard library and Twisted, so that the daemon's own
code comes from PYTHONPATH.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def status() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name.startswith("Vm") and value.strip().endswith("kB"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo() -> dict[str, float]:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {
        "heap_arenas": info.arena / MIB,  # sbrk'd and arena heaps
        "heap_in_use": info.uordblks / MIB,
        "heap_free_kept": info.fordblks / MIB,
        "mmapped": info.hblkhd / MIB,
    }


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("wb") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _pymalloc() -> dict[str, float]:
    """pymalloc's arenas: allocated, and the bytes in their free pools/blocks."""
    out = Path(tempfile.gettempdir()) / f"pymalloc-{os.getpid()}"
    with _stderr_to(out):
        sys._debugmallocstats()
    text = out.read_text()
    out.unlink()

    def number(label: str) -> float:
        found = re.search(rf"^{re.escape(label)}\s*=\s*([\d,]+)", text, re.M)
        return int(found.group(1).replace(",", "")) / MIB if found else 0.0

    arenas = re.search(r"^\d+ arenas \* \d+ bytes/arena\s*=\s*([\d,]+)", text, re.M)
    if arenas is None:
        return {}  # not printed while tracemalloc hooks the allocator
    allocated = int(arenas.group(1).replace(",", "")) / MIB
    used = number("# bytes in allocated blocks")
    return {
        "pymalloc_arenas": allocated,
        "pymalloc_used": used,
        "pymalloc_free": allocated - used,
    }


def _smaps() -> dict[str, float]:
    """Resident memory by mapping kind: heap, anonymous, files."""
    kinds: dict[str, float] = {}
    kind = "anon"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split()
            name = parts[5] if len(parts) > 5 else ""
            kind = (
                "smaps_heap"
                if name == "[heap]"
                else "smaps_file"
                if name.startswith("/")
                else "smaps_anon"
            )
        elif line.startswith("Rss:"):
            kinds[kind] = kinds.get(kind, 0.0) + int(line.split()[1]) / 1024
    return kinds


def _transports() -> dict[str, float]:
    """Bytes waiting in TCP transports, and how many are their own copies."""

    from twisted.internet.tcp import Server

    held = own = 0
    connections = 0
    for thing in gc.get_objects():
        if isinstance(thing, Server):
            connections += 1
            size = len(thing.dataBuffer) + thing._tempDataLen
            held += size
            if sys.getrefcount(thing.dataBuffer) <= 3:
                own += len(thing.dataBuffer)
            own += thing._tempDataLen
    return {
        "connections": connections,
        "transport_bytes": held / MIB,
        "transport_own_copies": own / MIB,
    }


def _python(snapshot: Any) -> dict[str, float]:
    """Python allocations made since start-up and alive, by origin."""
    groups: dict[str, float] = {}
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename
        if "twisted/internet" in name:
            group = "py_twisted_internet"
        elif "twisted/web" in name:
            group = "py_twisted_web"
        elif "/reviewsd/" in name:
            group = "py_reviewsd"
        else:
            group = "py_other"
        groups[group] = groups.get(group, 0.0) + stat.size / MIB
    return groups


def _record() -> None:
    import tracemalloc

    label_file = Path(tempfile.gettempdir()) / f"probe-label-{os.getpid()}"
    label = label_file.read_text() if label_file.exists() else "?"
    record: dict[str, Any] = {"label": label, "rss": status()["VmRSS"]}
    if not tracemalloc.is_tracing():
        record |= _pymalloc()  # (only while tracemalloc is off)
        tracemalloc.start(1)
    else:
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        record |= {"traced": current / MIB, "traced_peak": peak / MIB}
        record |= _python(tracemalloc.take_snapshot())
    record |= _mallinfo() | _smaps() | _transports()
    if label == "idle":
        started = time.perf_counter()
        ctypes.CDLL(None).malloc_trim(0)
        record["trim_ms"] = (time.perf_counter() - started) * 1000
        record["rss_after_trim"] = status()["VmRSS"]
    with open(os.environ["PROBE_OUT"], "a") as f:
        f.write(json.dumps(record) + "\n")


def main() -> None:
    """twistd, with the probe on SIGUSR2."""
    sys.argv[0] = "twistd"
    signal.signal(signal.SIGUSR2, lambda number, frame: _record())
    from twisted.scripts.twistd import run

    run()


if __name__ == "__main__":
    main()
