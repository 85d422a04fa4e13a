"""
The reading of many new review texts at once, spread over worker
processes: a cold start analyses every review and finds what it mentions,
and one Python thread uses one core however many the machine has.

Only a batch of at least L{AnalysisWorkers.smallest} texts goes to the
processes; fewer are analysed in the calling thread, where starting the
processes (each imports the analysis, reads VADER and the detector and
builds the business's matcher, about a second) would cost more than it
saves.  The processes live for one batch, so an idle daemon holds no more
memory than before.  They are started with "spawn", never forked from the
threaded daemon, and give back each analysis in its stored form
(L{reviewsd.insights.cache.to_stored}) with the text's mentions: what the
calling thread would have stored.  Processes that cannot be started, that
die or that fail cost the speed only: the batch is then read in the calling
thread, and the log says why.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from twisted.logger import Logger

from reviewsd.data.mentions import Matcher
from reviewsd.data.model import Business
from reviewsd.insights.analysis import analyse
from reviewsd.insights.cache import Reading, mentions_in, to_stored

log = Logger()

#: In a worker process, the matcher of the batch's business (L{_begin}).
_matcher: Matcher | None = None


def _begin(business: Business) -> None:
    """A worker process's start: the matcher its texts are read with."""
    global _matcher
    _matcher = Matcher(business)


def reading(matcher: Matcher, text: str) -> Reading:
    """One text's analysis, in the stored form, and what it mentions."""
    return to_stored(analyse(text)), mentions_in(matcher, text)


def _read(text: str) -> Reading:
    """What a worker process does with one text."""
    assert _matcher is not None, "a worker process starts with _begin"
    return reading(_matcher, text)


class AnalysisWorkers:
    """
    Reads a batch of texts in C{processes} worker processes, for a
    L{reviewsd.insights.cache.ReviewCache} (L{reviewsd.insights.cache.Workers}).
    """

    def __init__(
        self,
        processes: int,
        *,
        smallest: int = 5_000,
        chunk: int = 250,
        task: Callable[[str], Reading] = _read,
    ) -> None:
        self.processes = processes
        #: The fewest texts worth starting the processes for.
        self.smallest = smallest
        #: How many texts a worker takes at a time.
        self.chunk = chunk
        #: What a worker does with one text, once the process has begun with
        #: the business (a module's function: the workers import it by name).
        self.task = task
        #: Why the last batch given to the processes was not analysed there.
        self.failure: str | None = None

    def __call__(
        self, texts: Sequence[str], business: Business
    ) -> list[Reading] | None:
        """
        The readings of C{texts}, in their order, their mentions those of
        C{business}; C{None} when the calling thread should read them
        itself (too few texts, fewer than two processes, or processes that
        failed).
        """
        if self.processes < 2 or len(texts) < self.smallest:
            return None
        context = multiprocessing.get_context("spawn")
        started = time.monotonic()
        try:
            with ProcessPoolExecutor(
                self.processes,
                mp_context=context,
                initializer=_begin,
                initargs=(business,),
            ) as pool:
                read = list(pool.map(self.task, texts, chunksize=self.chunk))
        except Exception as e:  # processes not started, dead, or failing
            self.failure = f"{type(e).__name__}: {e}"
            log.warn(
                "analysing {count} texts in {processes} worker processes failed"
                " ({failure}); analysing them in this one",
                count=len(texts),
                processes=self.processes,
                failure=self.failure,
            )
            return None
        self.failure = None
        log.info(
            "analysed {count} texts in {processes} worker processes in {seconds:.1f} s",
            count=len(texts),
            processes=self.processes,
            seconds=time.monotonic() - started,
        )
        return read
