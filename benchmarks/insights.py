"""
How fast /insights.json is derived: cold, and after one review is added
with the per-review cache warm.

    python benchmarks/insights.py [--reviews 100000] [--seed 1]

Generates N synthetic reviews deterministically (reviewsd/data/synthetic.py:
the demo business's technicians, services and places in varied sentences
of varied sentiment), then times:

  - cold: a derivation with an empty cache (every text analysed), with the
    daemon's default number of analysis processes unless --analysis-processes
    says another (1: in this process only);
  - warm: the same data plus one new review, with the cache of the cold run;
  - load: a new ReviewCache reading the SQLite file the cold run saved, and a
    derivation with it (what a restart costs);
  - analysis: the analysis of one text alone, over the first 2,000 texts;
  - memory: the process's resident memory after those, and what the
    restart's cache and derivation added to it.

Each timed step starts after a full collection of what the ones before left.

It also prints how often the demo data's sentiment agrees with its stars,
and its top three aspects.  Targets: cold at least 2,000
reviews/s; warm under 2 s.  Not part of the test suite, and no assertions:
it prints what it measured.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewsd.config import Options  # noqa: E402
from reviewsd.data.loading import DEMO_DATA, load_dataset  # noqa: E402
from reviewsd.data.mentions import Matcher  # noqa: E402
from reviewsd.data.model import (  # noqa: E402
    Dataset,
    Review,
    business_from_json,
    newest_first,
    review_from_json,
)
from reviewsd.data.synthetic import generate  # noqa: E402
from reviewsd.insights import MEMO_VERSION, ReviewCache, derive_insights  # noqa: E402
from reviewsd.insights.analysis import analyse  # noqa: E402
from reviewsd.insights.workers import AnalysisWorkers  # noqa: E402


def synthetic(count: int, seed: int) -> Dataset:
    """C{count} reviews of the demo business, the same for the same seed."""
    business, records = generate(count, seed)
    reviews = [review_from_json(r) for r in records]
    return Dataset(
        business=business_from_json(business),
        reviews=newest_first([r for r in reviews if r.verified]),
        unpublished=sum(not r.verified for r in reviews),
    )


def added(dataset: Dataset, number: int) -> Dataset:
    """C{dataset} with one more review."""
    latest = max(r.date for r in dataset.reviews)
    review = Review(
        id=f"new{number:07d}",
        author="New customer",
        author_avatar_url=None,
        rating=5,
        date=latest + datetime.timedelta(days=1),
        text="Dev was on time and the new shower looks great. Fair price too.",
        source="synthetic",
        source_url=None,
        owner_reply=None,
        verified=True,
    )
    return Dataset(
        business=dataset.business,
        reviews=newest_first([*dataset.reviews, review]),
        unpublished=0,
    )


def agreement() -> None:
    """How often the demo data's sentiment agrees with its stars."""
    _, demo = load_dataset(DEMO_DATA)
    document = derive_insights(demo, Matcher(demo.business), ReviewCache(), "-")
    labels = {
        rid: (entry["sentiment"] or {}).get("label")
        for rid, entry in orjson.loads(orjson.dumps(document["per_review"])).items()
    }
    high = [r.id for r in demo.reviews if r.text and r.rating >= 4]
    low = [r.id for r in demo.reviews if r.text and r.rating <= 2]
    positive = sum(labels[i] == "positive" for i in high)
    negative = sum(labels[i] == "negative" for i in low)
    print(
        f"demo data: {positive}/{len(high)} written 4-5 star reviews positive "
        f"({100 * positive / len(high):.1f}%), {negative}/{len(low)} written 1-2 "
        f"star reviews negative ({100 * negative / len(low):.1f}%)"
    )
    for aspect in document["aspects"][:3]:
        print(
            f"  {aspect['id']}: {aspect['mention_count']} reviews, "
            f"{aspect['positive_pct']}% positive, score {aspect['score']}, "
            f"phrases {aspect['top_phrases'][:3]}"
        )


def resident() -> float:
    """This process's resident memory (VmRSS) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timer() -> float:
    """
    A clock reading, after a full collection: so that the collector's work
    on what earlier steps left does not land in the next step's time.
    """
    gc.collect()
    return time.perf_counter()


def analysis_time(dataset: Dataset, count: int = 2_000) -> None:
    """The time to analyse one text, over the first C{count} texts."""
    texts = [r.text for r in dataset.reviews if r.text is not None][:count]
    analyse(texts[0])  # loads VADER
    t = time.perf_counter()
    for text in texts:
        analyse(text)
    elapsed = time.perf_counter() - t
    print(f"analysis: {1e6 * elapsed / len(texts):.0f} µs per text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--analysis-processes", type=int, default=None)
    args = parser.parse_args()
    options = Options()
    options.parseOptions(
        []
        if args.analysis_processes is None
        else ["--analysis-processes", str(args.analysis_processes)]
    )
    processes = options["analysis-processes"]

    agreement()

    t = timer()
    dataset = synthetic(args.reviews, args.seed)
    texts = sum(r.text is not None for r in dataset.reviews)
    print(
        f"generated {len(dataset.reviews)} reviews ({texts} with text) "
        f"in {time.perf_counter() - t:.1f} s"
    )
    analysis_time(dataset)
    matcher = Matcher(dataset.business)
    stamp = "2026-11-21T06:00:00Z"

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "insights-cache.sqlite"
        cache = ReviewCache(
            path, workers=AnalysisWorkers(processes), memo_version=MEMO_VERSION
        )
        t = timer()
        document = derive_insights(dataset, matcher, cache, stamp)
        cold = time.perf_counter() - t
        print(
            f"cold: {cold:.2f} s, {len(dataset.reviews) / cold:,.0f} reviews/s "
            f"({cache.analysed} analysed, {processes} analysis processes)"
        )

        t = timer()
        cache.save()
        print(
            f"save: {time.perf_counter() - t:.2f} s, {path.stat().st_size / 1e6:.1f} MB"
        )

        bigger = added(dataset, 1)
        before = cache.analysed
        t = timer()
        document = derive_insights(bigger, matcher, cache, stamp)
        warm = time.perf_counter() - t
        print(
            f"warm, one review added: {warm:.2f} s ({cache.analysed - before} analysed)"
        )
        t = timer()
        cache.save()
        print(f"save after one added: {time.perf_counter() - t:.3f} s")

        biggest = added(bigger, 2)
        before_restart = resident()
        t = timer()
        reloaded = ReviewCache(path, memo_version=MEMO_VERSION)
        load = time.perf_counter() - t
        t = timer()
        again = derive_insights(biggest, matcher, reloaded, stamp)
        print(
            f"restart: load {load:.2f} s ({len(reloaded)} entries), derive "
            f"{time.perf_counter() - t:.2f} s ({reloaded.analysed} analysed)"
        )
        assert again["review_count"] == document["review_count"] + 1
        gc.collect()
        now = resident()
        print(
            f"memory: {now:.0f} MiB resident, the restart's cache and "
            f"derivation {now - before_restart:.0f} MiB of it"
        )


if __name__ == "__main__":
    main()
