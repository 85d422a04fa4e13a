"""
The analysis of one review text: what the cache keeps per review.

L{analyse} depends on the text alone (never on the rating, the date or the
business), so it is cached by review id and text hash; the rating-aware and
business-aware parts are decided when the document is derived.  An analysis
is an L{Analysis}; L{reviewsd.insights.cache} stores it for every review, in
a compact form of its own.

Typographic apostrophes are read as ASCII ones (VADER's negations are
spelled C{didn't}); quotes keep the text as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from reviewsd.insights.cues import CueSet
from reviewsd.insights.data import ASPECTS, DATA_DIGEST, PROBLEMS, TOPICS
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    POSITIVE_THRESHOLD,
    VADER_VERSION,
    SentenceScorer,
)
from reviewsd.insights.text import Words, normalise, split_sentences

#: Bumped when this module's output changes for the same text.
ANALYSIS_REVISION = 1

#: What a cached analysis is valid for: this code, the data files and VADER.
ENGINE_VERSION = f"{ANALYSIS_REVISION}-{DATA_DIGEST[:16]}-vader-{VADER_VERSION}"

QUOTE_MIN_SCORE = 0.5
QUOTE_MIN_CHARS = 30
QUOTE_MAX_CHARS = 120
QUOTES_PER_REVIEW = 3


AspectMention = tuple[str, float, tuple[str, ...]]
"""
An aspect some sentence of the text mentions: C{(aspect id, score,
phrases)}, the score the mean compound of the sentences that mention it,
the phrases the candidates around its cues, in text order: 2 or 3 words of
the cue's clause; the cue alone only when it scores as an opinion by
itself, such as C{"on time"} or C{"good job"}, not C{"showed up"}.
"""

ProblemMention = Sequence[Any]
"""
A kind of problem whose cues the text holds, in its stored form: C{[problem
id, [[compound, [phrase, ...]], ...]]}, the compound and phrases of each
sentence that holds one of its cues, in text order.  Only reviews of 1 to
4 stars look into them (L{reviewsd.insights.tally.counted_problems}): they
are not made into tuples for all the others.
"""

Quote = tuple[str, float, tuple[str, ...]]
"""
A pull-quote candidate: C{(sentence, compound, aspect ids)}, the sentence
as written, the ids of the aspects it mentions sorted.
"""


class Analysis(NamedTuple):
    """
    The analysis of one review text.

    The records inside are plain tuples (the problems lists, as stored),
    unpacked into the names above wherever they are read: a derivation
    keeps the aspects and quotes of every review, and a named tuple takes
    16 bytes more than a tuple (its class's instances hold a spare slot), a
    frozen attrs instance twice the time to make, for millions of them at a
    start.  An analysis itself is dropped once read: a named tuple, the
    quickest to make.

    @ivar score: the review's sentiment score, the mean VADER compound of
        its opinionated sentences (those with C{|compound| >= 0.05});
        C{0.0} when no sentence carries sentiment; C{None} when the text
        has no sentence.
    @ivar sentence_scores: the compound score of every sentence, in text
        order.
    @ivar aspects: every aspect some sentence mentions, sorted by id.
    @ivar topics: the topic ids the text mentions, sorted.
    @ivar problems: every kind of problem whose cues appear, sorted by id,
        with each sentence that holds one of its cues, in text order.
    @ivar quotes: sentences of 30 to 120 characters scoring at least 0.5,
        best first, at most three.
    """

    score: float | None
    sentence_scores: Sequence[float]
    aspects: tuple[AspectMention, ...]
    topics: tuple[str, ...]
    problems: Sequence[ProblemMention]
    quotes: tuple[Quote, ...]


def _quote_rank(quote: Quote) -> tuple[float, int, str]:
    sentence, compound, aspect_ids = quote
    return (-compound, -len(aspect_ids), sentence)


class Analyser:
    """Holds the scorer and the compiled cue sets; reusable across reviews."""

    def __init__(self) -> None:
        self.scorer = SentenceScorer()
        self.aspects = CueSet(ASPECTS)
        self.topics = CueSet(TOPICS)
        self.problems = CueSet(PROBLEMS)
        self._opinions: dict[tuple[str, ...], bool] = {}

    def _opinion(self, words: Words, first: int, last: int) -> bool:
        # A cue is a phrase by itself only when it carries an opinion of its
        # own ("on time", "good job", "hidden fees"), not when it only names
        # the subject ("showed up", "start date").
        if first == last:
            return False
        key = tuple(words.words[first : last + 1])
        known = self._opinions.get(key)
        if known is None:
            score = self.scorer.score(" ".join(key))
            known = score >= POSITIVE_THRESHOLD or score <= NEGATIVE_THRESHOLD
            if len(self._opinions) < 10_000:
                self._opinions[key] = known
        return known

    def _phrases(
        self, words: Words, matches: list[tuple[str, int, int]]
    ) -> dict[str, list[str]]:
        phrases: dict[str, list[str]] = {}
        for category, first, last in matches:
            found = phrases.setdefault(category, [])
            for phrase in words.phrases(
                first, last, bare=self._opinion(words, first, last)
            ):
                if phrase not in found:
                    found.append(phrase)
        return phrases

    def analyse(self, text: str) -> Analysis:
        """The analysis of one review text."""
        compounds: list[float] = []
        aspect_scores: dict[str, list[float]] = {}
        aspect_phrases: dict[str, list[str]] = {}
        problems: dict[str, list[list[Any]]] = {}
        topics: set[str] = set()
        quotes: list[Quote] = []
        for sentence in split_sentences(text):
            plain = normalise(sentence)
            compound = self.scorer.score(plain)
            compounds.append(compound)
            words = Words(plain.casefold())
            aspect_matches = self.aspects.find(words)
            for aspect, found in self._phrases(words, aspect_matches).items():
                aspect_scores.setdefault(aspect, []).append(compound)
                known = aspect_phrases.setdefault(aspect, [])
                known.extend(p for p in found if p not in known)
            matches = self.problems.find(words)
            if matches:
                for problem, found in self._phrases(words, matches).items():
                    problems.setdefault(problem, []).append([compound, found])
            topics.update(self.topics.ids(words))
            if (
                compound >= QUOTE_MIN_SCORE
                and QUOTE_MIN_CHARS <= len(sentence) <= QUOTE_MAX_CHARS
            ):
                mentioned = tuple(sorted({aspect for aspect, _, _ in aspect_matches}))
                quotes.append((sentence, compound, mentioned))
        opinionated = [
            c for c in compounds if c >= POSITIVE_THRESHOLD or c <= NEGATIVE_THRESHOLD
        ]
        if not compounds:
            score = None
        elif opinionated:
            score = round(sum(opinionated) / len(opinionated), 4)
        else:
            score = 0.0
        quotes.sort(key=_quote_rank)
        return Analysis(
            score=score,
            sentence_scores=compounds,
            aspects=tuple(
                (
                    aspect,
                    round(sum(scores) / len(scores), 4),
                    tuple(aspect_phrases[aspect]),
                )
                for aspect, scores in sorted(aspect_scores.items())
            ),
            topics=tuple(sorted(topics)),
            problems=[[problem, problems[problem]] for problem in sorted(problems)],
            quotes=tuple(quotes[:QUOTES_PER_REVIEW]),
        )


_analyser: Analyser | None = None


def analyser() -> Analyser:
    """The process's analyser, built on first use (VADER loads its lexicon)."""
    global _analyser
    if _analyser is None:
        _analyser = Analyser()
    return _analyser


def analyse(text: str) -> Analysis:
    """The analysis of one review text."""
    return analyser().analyse(text)
