"""
The analysis of many new review texts at once, spread over worker
processes: a cold start analyses every review, and one Python thread uses
one core however many the machine has.

Only a batch of at least L{AnalysisWorkers.smallest} texts goes to the
processes; fewer are analysed in the calling thread, where starting the
processes (each imports the analysis and reads VADER and the detector,
about a second) would cost more than it saves.  The processes live for one
batch, so an idle daemon holds no more memory than before.  They are
started with "spawn", never forked from the threaded daemon, and give back
each analysis in its stored form (L{reviewsd.insights.cache.to_stored}):
the same text the calling thread would have stored.  Processes that cannot
be started, that die or that fail cost the speed only: the batch is then
analysed in the calling thread, and the log says why.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from twisted.logger import Logger

from reviewsd.insights.analysis import analyse
from reviewsd.insights.cache import to_stored

log = Logger()


def stored_analysis(text: str) -> str:
    """What a worker does with one text: its analysis, in the stored form."""
    return to_stored(analyse(text))


class AnalysisWorkers:
    """
    Analyses a batch of texts in C{processes} worker processes, for a
    L{reviewsd.insights.cache.ReviewCache}.
    """

    def __init__(
        self,
        processes: int,
        *,
        smallest: int = 5_000,
        chunk: int = 250,
        task: Callable[[str], str] = stored_analysis,
    ) -> None:
        self.processes = processes
        #: The fewest texts worth starting the processes for.
        self.smallest = smallest
        #: How many texts a worker takes at a time.
        self.chunk = chunk
        #: What a worker does with one text (a module's function: the
        #: workers import it by name).
        self.task = task
        #: Why the last batch given to the processes was not analysed there.
        self.failure: str | None = None

    def __call__(self, texts: Sequence[str]) -> list[str] | None:
        """
        The stored analyses of C{texts}, in their order; C{None} when the
        calling thread should analyse them itself (too few texts, fewer
        than two processes, or processes that failed).
        """
        if self.processes < 2 or len(texts) < self.smallest:
            return None
        context = multiprocessing.get_context("spawn")
        started = time.monotonic()
        try:
            with ProcessPoolExecutor(self.processes, mp_context=context) as pool:
                stored = list(pool.map(self.task, texts, chunksize=self.chunk))
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
        return stored
