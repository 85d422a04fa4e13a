"""
The analysis of one review text: what the cache keeps per review.

L{analyse} depends on the text alone (never on the rating, the date or the
business), so it is cached by review id and text hash; the rating-aware and
business-aware parts are decided when the document is derived.

An analysis is a small JSON-ready dict with short keys (it is stored for
every review):

  - C{"s"}: the review's sentiment score, the mean VADER compound of its
    opinionated sentences (those with C{|compound| >= 0.05}); C{0.0} when
    no sentence carries sentiment; C{None} when the text has no sentence.
  - C{"c"}: the compound score of every sentence, in text order.
  - C{"a"}: C{[[aspect id, score, [phrase, ...]], ...]} sorted by id: every
    aspect some sentence mentions, with the mean compound of those
    sentences and the candidate phrases around its cues (2 or 3 words of
    the cue's clause; the cue alone only when it scores as an opinion by
    itself, such as C{"on time"} or C{"good job"}, not C{"showed up"}).
  - C{"t"}: the topic ids the text mentions, sorted.
  - C{"p"}: C{[[problem id, [[compound, [phrase, ...]], ...]], ...]} sorted
    by id: for each kind of problem whose cues appear, the compound and
    candidate phrases of every sentence that holds one.
  - C{"q"}: pull-quote candidates, C{[[sentence, compound, [aspect id, ...]]]}:
    sentences of 30 to 120 characters scoring at least 0.5, best first, at
    most three.

Typographic apostrophes are read as ASCII ones (VADER's negations are
spelled C{didn't}); quotes keep the text as written.
"""

from __future__ import annotations

from typing import Any

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

Analysis = dict[str, Any]


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
        """The analysis of one review text (see the module docstring)."""
        compounds: list[float] = []
        aspect_scores: dict[str, list[float]] = {}
        aspect_phrases: dict[str, list[str]] = {}
        problems: dict[str, list[list[Any]]] = {}
        topics: set[str] = set()
        quotes: list[list[Any]] = []
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
                mentioned = sorted({aspect for aspect, _, _ in aspect_matches})
                quotes.append([sentence, compound, mentioned])
        opinionated = [
            c for c in compounds if c >= POSITIVE_THRESHOLD or c <= NEGATIVE_THRESHOLD
        ]
        if not compounds:
            score = None
        elif opinionated:
            score = round(sum(opinionated) / len(opinionated), 4)
        else:
            score = 0.0
        quotes.sort(key=lambda q: (-q[1], -len(q[2]), q[0]))
        return {
            "s": score,
            "c": compounds,
            "a": [
                [aspect, round(sum(scores) / len(scores), 4), aspect_phrases[aspect]]
                for aspect, scores in sorted(aspect_scores.items())
            ],
            "t": sorted(topics),
            "p": [[problem, problems[problem]] for problem in sorted(problems)],
            "q": quotes[:QUOTES_PER_REVIEW],
        }


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
