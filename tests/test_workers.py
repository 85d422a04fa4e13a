"""
Many new texts read at once in worker processes
(reviewsd.insights.workers), and the cache's use of them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twisted.internet import defer
from twisted.logger import capturedLogs
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.mentions import Matcher
from reviewsd.data.model import Business, business_from_json
from reviewsd.data.synthetic import write as write_synthetic
from reviewsd.insights import ReviewCache
from reviewsd.insights.analysis import analyse
from reviewsd.insights.cache import Reading, to_stored
from reviewsd.insights.derive import business_key
from reviewsd.insights.workers import AnalysisWorkers, reading
from tests.support.daemon import DaemonTestCase, free_port
from tests.support.insights import BUSINESS, Counting, dataset, derive, record

TEXTS = [
    "Dev was on time and the new shower looks great.",
    "Late and rude, and the faucet still drips.",
    "Fair price for the furnace tune-up.",
    "They replaced the gutters in March.",
    "Mike found the leak two other plumbers missed!",
    "Nice people, but it dragged on for months.",
]


def _die(text: str) -> Reading:
    """A worker's task that kills its process."""
    os._exit(3)


class Recording:
    """Workers that read in this process and record each batch."""

    def __init__(self, decline: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.decline = decline

    def __call__(
        self, texts: Sequence[str], business: Business
    ) -> list[Reading] | None:
        self.batches.append(list(texts))
        if self.decline:
            return None
        matcher = Matcher(business)
        return [reading(matcher, t) for t in texts]


class WorkersTests(SynchronousTestCase):
    def test_same_as_this_process(self) -> None:
        """
        Worker processes give each text's analysis in the stored form this
        process would have made, and what it mentions of the business given,
        in the texts' order.
        """
        business = business_from_json(BUSINESS)
        workers = AnalysisWorkers(2, smallest=len(TEXTS), chunk=2)
        read = workers(TEXTS, business)
        self.assertEqual(
            [analysis for analysis, _ in read or []],
            [to_stored(analyse(t)) for t in TEXTS],
        )
        self.assertEqual(
            [mentions for _, mentions in read or []],
            [
                (("Dev Patel",), (), ()),
                ((), (), ()),
                ((), ("ac-repair",), ()),
                ((), ("roofing",), ()),
                (("Michael Reyes",), (), ()),
                ((), (), ()),
            ],
        )
        self.assertIsNone(workers.failure)

    def test_too_few_for_processes(self) -> None:
        """
        Fewer texts than are worth starting processes for, or one process,
        are left to the calling thread.
        """
        business = business_from_json(BUSINESS)
        self.assertIsNone(AnalysisWorkers(2, smallest=len(TEXTS) + 1)(TEXTS, business))
        self.assertIsNone(AnalysisWorkers(1, smallest=1)(TEXTS, business))

    def test_dead_workers(self) -> None:
        """
        Workers that die leave the batch to the calling thread, and the log
        and C{failure} say why.
        """
        workers = AnalysisWorkers(2, smallest=1, task=_die)
        with capturedLogs() as events:
            self.assertIsNone(workers(TEXTS, business_from_json(BUSINESS)))
        assert workers.failure is not None
        self.assertIn("BrokenProcessPool", workers.failure)
        (event,) = [e for e in events if "worker processes failed" in e["log_format"]]
        self.assertEqual(event["count"], len(TEXTS))


class PreparedTests(SynchronousTestCase):
    def records(self) -> list[dict[str, object]]:
        return [record(n, text) for n, text in enumerate(TEXTS, 1)] + [record(99, None)]

    def test_derivation_with_workers(self) -> None:
        """
        A derivation hands the texts the cache lacks to the workers in one
        batch, uses their analyses and says what it says without them; a
        later one hands over only the texts that changed.
        """
        counting, workers = Counting(), Recording()
        cache = ReviewCache(analyser=counting, workers=workers)
        document = derive(dataset(self.records()), cache)
        self.assertEqual(document, derive(dataset(self.records())))
        self.assertEqual([sorted(b) for b in workers.batches], [sorted(TEXTS)])
        self.assertEqual((counting.texts, cache.analysed), ([], len(TEXTS)))
        changed = self.records()
        changed[0]["text"] = "Dev was early and the shower looks great."
        derive(dataset(changed), cache)
        self.assertEqual(
            workers.batches[1:], [["Dev was early and the shower looks great."]]
        )
        self.assertEqual(counting.texts, [])

    def test_mentions_from_workers(self) -> None:
        """
        A text the workers read is taken with the mentions they found, for
        the business fingerprint given: derivation does not read it again.
        Texts that name the same things share one copy of them.
        """
        business = business_from_json(BUSINESS)
        cache = ReviewCache(workers=Recording())
        reviews = [(f"r{n}", text) for n, text in enumerate(TEXTS, 1)]
        cache.prepare(reviews, business, "key")
        for review_id, text, mentions in [
            ("r1", TEXTS[0], (("Dev Patel",), (), ())),
            ("r5", TEXTS[4], (("Michael Reyes",), (), ())),
        ]:
            entry = cache.entry(review_id, text)
            self.assertEqual((entry.mentions_key, entry.mentions), ("key", mentions))
            self.assertEqual(cache.mentioned(review_id), mentions)
        self.assertEqual(cache.entry("r2", TEXTS[1]).mentions, ((), (), ()))
        self.assertIs(
            cache.entry("r2", TEXTS[1]).mentions, cache.entry("r6", TEXTS[5]).mentions
        )

    def test_derivation_reads_no_mentions_again(self) -> None:
        """
        A derivation whose workers read every text asks its own matcher for
        no mentions.
        """
        data = dataset(self.records())
        found: list[str | None] = []
        find = Matcher.find

        def counted(matcher: Matcher, text: str | None) -> object:
            found.append(text)
            return find(matcher, text)

        matcher = Matcher(data.business)
        readings = {t: reading(matcher, t) for t in TEXTS}  # before counting
        cache = ReviewCache(workers=lambda texts, _: [readings[t] for t in texts])
        self.patch(Matcher, "find", counted)
        document = derive(data, cache)
        self.assertEqual(found, [])
        self.patch(Matcher, "find", find)
        self.assertEqual(document, derive(dataset(self.records())))
        self.assertEqual(
            cache.entry("r001", TEXTS[0]).mentions_key, business_key(data.business)
        )

    def test_declined(self) -> None:
        """Workers that decline a batch leave it to the cache's analyser."""
        counting, workers = Counting(), Recording(decline=True)
        cache = ReviewCache(analyser=counting, workers=workers)
        derive(dataset(self.records()), cache)
        self.assertEqual(sorted(counting.texts), sorted(TEXTS))
        self.assertEqual(len(workers.batches), 1)

    def test_real_processes(self) -> None:
        """A derivation with worker processes says what one without says."""
        cache = ReviewCache(workers=AnalysisWorkers(2, smallest=2))
        with capturedLogs() as events:
            document = derive(dataset(self.records()), cache)
        self.assertEqual(document, derive(dataset(self.records())))
        self.assertEqual(cache.analysed, len(TEXTS))
        (event,) = [e for e in events if e["log_namespace"].endswith("workers")]
        self.assertEqual((event["count"], event["processes"]), (len(TEXTS), 2))


class DaemonTests(DaemonTestCase):
    """The real daemon's first start on thousands of reviews."""

    timeout = 120

    @defer.inlineCallbacks
    def test_first_start_in_processes(self) -> Any:
        """
        twistd analyses the texts of a first start in worker processes and
        publishes their insights.
        """
        data = write_synthetic(Path(self.mktemp()).resolve(), 7_000)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        yield self.start(
            base,
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--data",
            str(data),
            "--analysis-processes",
            "2",
        )
        response = yield self.client.get(base + "/insights.json")
        self.assertEqual(response.code, 200)
        insights = yield response.json()
        output = self.daemon.output.decode()
        self.assertRegex(output, r"analysed \d{4} texts in 2 worker processes in")
        self.assertNotIn("worker processes failed", output)
        self.assertGreater(insights["review_count"], 6_000)
        self.assertTrue(insights["aspects"])
