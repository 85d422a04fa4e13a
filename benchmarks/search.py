"""
Search at scale: index build time, and the server's time per search request
(parameter checks, index query, answer bytes) for filter-only, text and
combined searches.

    python benchmarks/search.py [--reviews 100000] [--requests 2000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reviewsd.data.links import Links
from reviewsd.data.loading import load_dataset
from reviewsd.data.mentions import Matcher
from reviewsd.data.search import SearchIndex, SearchQuery
from reviewsd.data.synthetic import write
from reviewsd.memory import settle_memory
from reviewsd.publishing.build import build_snapshot

WORDS = [
    "leak",
    "late",
    "quote",
    "dust",
    "the",
    "on time",
    "furnace",
    "rescheduled",
    "hidden fees",
    "perfectly",
    "zzz",
    "professional",
    "a",
]
TECHNICIANS = ["Dev", "Mike", "Rosa Delgado", "Tommy", "Sam"]
SERVICES = ["plumbing", "roofing", "ac-repair", "Flooring", "handyman"]


def filters(rng: random.Random) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for name, values in [
        ("rating", ["1", "3", "5"]),
        ("min_rating", ["2", "3.5", "4"]),
        ("since", ["2022-06-01", "2024-01-01", "2026-01-01"]),
        ("until", ["2026-11-15", "2025-06-30"]),
        ("mentions_technician", TECHNICIANS),
        ("mentions_service", SERVICES),
    ]:
        if rng.random() < 0.4:
            chosen[name] = rng.choice(values)
    if "since" in chosen and "until" in chosen and chosen["since"] > chosen["until"]:
        del chosen["until"]
    chosen["limit"] = rng.choice(["10", "20", "100"])
    return chosen


def measure(snapshot, queries: list[dict[str, str]]) -> tuple[float, float, float]:
    timings = []
    for parameters in queries:
        args = {k.encode(): [v.encode()] for k, v in parameters.items()}
        start = time.perf_counter()
        snapshot.search(SearchQuery.from_query(args))
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    return (
        statistics.median(timings),
        timings[int(len(timings) * 0.99) - 1],
        timings[-1],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()

    directory = write(Path(tempfile.mkdtemp()) / "data", args.reviews)
    start = time.perf_counter()
    sources, dataset = load_dataset(directory)
    loaded = time.perf_counter() - start
    matcher = Matcher(dataset.business)
    start = time.perf_counter()
    found = [matcher.find(r.text) for r in dataset.reviews]
    mentions = [(f.technicians, f.services, f.areas) for f in found]
    matched = time.perf_counter() - start
    start = time.perf_counter()
    SearchIndex(dataset.reviews, mentions, matcher).index_words()
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    snapshot = build_snapshot(dataset, Links("http://localhost:8080"), 0)
    built = time.perf_counter() - start
    settle_memory()  # as the daemon does after each build
    print(f"{len(dataset.reviews)} published reviews")
    print(
        f"load and check: {loaded:.2f} s; mention matching: {matched:.2f} s; "
        f"index build: {indexed:.2f} s; whole snapshot: {built:.2f} s\n"
    )

    rng = random.Random(1)
    kinds = {
        "filter-only": [filters(rng) for _ in range(args.requests)],
        "query": [
            {"query": rng.choice(WORDS), "limit": "20"} for _ in range(args.requests)
        ],
        "combined": [
            {**filters(rng), "query": rng.choice(WORDS)} for _ in range(args.requests)
        ],
    }
    print(
        f"{'search':<12} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
        f"   ({args.requests} each)"
    )
    # a daemon serves before its first word index is built
    p50, p99, worst = measure(snapshot, kinds["query"][: args.requests // 4])
    print(
        f"{'query':<12} {p50:>8.3f} {p99:>8.3f} {worst:>8.3f}"
        "   (before the word index: the first second or so after a start)"
    )
    snapshot.index.index_words()
    settle_memory()
    for kind, queries in kinds.items():
        p50, p99, worst = measure(snapshot, queries)
        print(f"{kind:<12} {p50:>8.3f} {p99:>8.3f} {worst:>8.3f}")
    broad = [{"query": "the", "limit": "100"}] * 50
    p50, p99, worst = measure(snapshot, broad)
    print(
        f"{'query=the':<12} {p50:>8.3f} {p99:>8.3f} {worst:>8.3f}"
        "   (matches most reviews)"
    )
    print("\nexample:", "/api/reviews/search?" + urlencode(kinds["combined"][0]))


if __name__ == "__main__":
    main()
