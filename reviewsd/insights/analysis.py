"""
The analysis of one review text: what the cache keeps per review.

L{analyse} depends on the text alone (never on the rating, the date or the
business), so it is cached by review id and text hash; the rating-aware and
business-aware parts are decided when the document is derived.  An analysis
is an L{Analysis}; L{reviewsd.insights.cache} stores it for every review, in
a compact form of its own.

Each sentence is cut into clauses and segments (L{reviewsd.insights.clauses});
each segment is scored (L{reviewsd.insights.sentiment}: VADER, the domain
lexicon and the implicit outcomes of C{outcomes.json}, found once per
sentence); each cue of an aspect, topic or problem is placed in its
segment, and an aspect counts only where its segment carries an opinion.
Typographic apostrophes are read as ASCII ones (VADER's negations are
spelled C{didn't}); quotes keep the text as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from reviewsd.insights.clauses import CONCEDED, PLAIN, VERDICT, Segment, segments
from reviewsd.insights.cues import CueSet
from reviewsd.insights.data import ASPECTS, DATA_DIGEST, PROBLEMS, TOPICS
from reviewsd.insights.detector import DETECTOR_DIGEST, Detector, sentence_features
from reviewsd.insights.detector import load as load_detector
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    POSITIVE_THRESHOLD,
    VADER_VERSION,
    SentenceScorer,
)
from reviewsd.insights.text import Words, normalise, split_sentences

#: Bumped when this module's output changes for the same text.
ANALYSIS_REVISION = 6

#: What the lexicon's reading of a text depends on: this code, the data
#: files and VADER.  The detector's weights are fitted on that reading.
LEXICON_VERSION = f"{ANALYSIS_REVISION}-{DATA_DIGEST[:16]}-vader-{VADER_VERSION}"

#: What a cached analysis is valid for: the lexicon and the detector.
ENGINE_VERSION = f"{LEXICON_VERSION}-detector-{DETECTOR_DIGEST[:16]}"

#: How much more the last opinionated sentence of a review weighs.
LAST = 1.5

#: An aspect is mentioned with an opinion when its clause scores at least
#: this far from 0: a clause that is only open (a word such as "still" or
#: "finally", telling that something turned out one way or the other)
#: leaves the review open, not an aspect.
ASPECT_FLOOR = 0.03

QUOTE_MIN_SCORE = 0.5
QUOTE_MIN_CHARS = 30
QUOTE_MAX_CHARS = 120
QUOTES_PER_REVIEW = 3


AspectMention = tuple[str, float, tuple[str, ...]]
"""
An aspect the text gives an opinion on: C{(aspect id, score, phrases)},
the score the weighted mean of the opinions of the segments that mention
it, the phrases the candidates around its cues, in text order: 2 or 3
words of the cue's segment holding a word of opinion; the cue alone only
when it scores as an opinion by itself, such as C{"on time"} or C{"good
job"}, not C{"showed up"}.
"""

ProblemMention = Sequence[Any]
"""
A kind of problem whose cues the text holds, in its stored form: C{[problem
id, [[compound, [phrase, ...]], ...]]}, the opinion and phrases of each
segment that holds one of its cues, in text order.  Only reviews of 1 to
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

    @ivar score: the review's sentiment score from its text alone, the
        weighted mean of the scores of its opinionated sentences; when no
        sentence carries sentiment, the tone of its words (the least score
        of a side, L{reviewsd.insights.detector.TONE_SCORE}, or C{0.0});
        C{None} when the text has no sentence.
    @ivar sentence_scores: the score of every sentence, the weighted mean
        of its opinionated segments (0 when none is), in text order.
    @ivar aspects: the aspects the text gives an opinion on, sorted by id,
        as the detector decides from the lexicon's reading and, where that
        has none, the tone's: one the lexicon found with the weighted mean
        of its segments' opinions and its phrases; one the detector adds
        with the side it reads, no phrase.
    @ivar topics: the topic ids the text mentions, sorted.
    @ivar problems: every kind of problem whose cues appear, sorted by id,
        with the opinion and phrases of each segment that holds one of its
        cues, in text order.
    @ivar quotes: sentences of 30 to 120 characters scoring at least 0.5,
        best first, at most three.
    @ivar extremes: the highest and the lowest score of any segment, at
        least and at most 0: whether the text praises, blames or both, and
        how strongly (L{reviewsd.insights.verdict} reads them).
    """

    score: float | None
    sentence_scores: Sequence[float]
    aspects: tuple[AspectMention, ...]
    topics: tuple[str, ...]
    problems: Sequence[ProblemMention]
    quotes: tuple[Quote, ...]
    extremes: tuple[float, float]


def _quote_rank(quote: Quote) -> tuple[float, int, str]:
    sentence, compound, aspect_ids = quote
    return (-compound, -len(aspect_ids), sentence)


class Evidence(NamedTuple):
    """
    What the aspect detector reads of a text: the features of each sentence
    (L{sentence_features}), each sentence's score, the text's score (C{None}
    without a sentence) and the aspects the lexicon finds.
    """

    sentences: list[list[str]]
    sentence_scores: list[float]
    score: float | None
    found: tuple[AspectMention, ...]


class Analyser:
    """
    Holds the scorer, the compiled cue sets and the aspect detector;
    reusable across reviews.
    """

    def __init__(self, detector: Detector | None = None) -> None:
        self._detector = detector
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
        self,
        words: Words,
        segment: Segment,
        first: int,
        last: int,
        opinions: list[bool] | None = None,
        names: list[bool] | None = None,
    ) -> list[str]:
        return words.phrases(
            first,
            last,
            bare=self._opinion(words, first, last),
            low=segment.first,
            high=segment.last,
            opinions=opinions,
            names=names,
        )

    @property
    def detector(self) -> Detector:
        """The detector given, else the shipped one, read on first use."""
        if self._detector is None:
            self._detector = load_detector([a.id for a in ASPECTS])
        return self._detector

    def evidence(self, text: str) -> Evidence:
        """What the detector reads of C{text} (L{Evidence})."""
        sentences, compounds, score, found = self._read(text)
        return Evidence([s.features for s in sentences], compounds, score, found)

    def _read(
        self, text: str
    ) -> tuple[list[_Sentence], list[float], float | None, tuple[AspectMention, ...]]:
        """
        Each sentence's segments scored and weighed (a sentence that begins
        with a turn outweighs the one before), the sentences' scores, the
        review's score (the weighted mean of its opinionated sentences) and
        the aspects the lexicon finds, each with the weighted mean of its
        opinions.
        """
        sentences = [self._sentence(s) for s in split_sentences(text)]
        for before, after in zip(sentences, sentences[1:], strict=False):
            if after.turned:
                before.weigh(CONCEDED)
                after.weigh(VERDICT)
        compounds = [sentence.score() for sentence in sentences]
        weighted = [
            (compound, sentence.weight())
            for compound, sentence in zip(compounds, sentences, strict=True)
            if compound
        ]
        if len(weighted) > 1:
            # the reviewer's last word weighs as a verdict
            compound, weight = weighted[-1]
            weighted[-1] = (compound, weight * LAST)
        aspect_values: dict[str, list[tuple[float, float]]] = {}
        aspect_phrases: dict[str, list[str]] = {}
        for sentence in sentences:
            for aspect, value, k, found in sentence.aspects:
                aspect_values.setdefault(aspect, []).append(
                    (value, sentence.weights[k])
                )
                known = aspect_phrases.setdefault(aspect, [])
                known.extend(p for p in found if p not in known)
        return (
            sentences,
            compounds,
            None if not sentences else _mean(weighted) if weighted else 0.0,
            tuple(
                (aspect, _mean(values), tuple(aspect_phrases[aspect]))
                for aspect, values in sorted(aspect_values.items())
            ),
        )

    def analyse(self, text: str) -> Analysis:
        """
        The analysis of one review text: the lexicon's reading of it, with
        the tone of its words where the lexicon reads no opinion, and the
        aspects the detector decides from that reading.
        """
        sentences, compounds, read, found = self._read(text)
        features = [s.features for s in sentences]
        # where the lexicon reads no opinion, the tone of the words may have one
        score = self.detector.tone(features) if read == 0.0 else read
        problems: dict[str, list[list[Any]]] = {}
        topics: set[str] = set()
        quotes: list[Quote] = []
        for compound, sentence in zip(compounds, sentences, strict=True):
            for problem, value, phrases in sentence.problems:
                problems.setdefault(problem, []).append([value, phrases])
            topics.update(sentence.topics)
            if (
                compound >= QUOTE_MIN_SCORE
                and QUOTE_MIN_CHARS <= len(sentence.text) <= QUOTE_MAX_CHARS
            ):
                mentioned = tuple(sorted({a for a, _, _, _ in sentence.aspects}))
                quotes.append((sentence.text, compound, mentioned))
        quotes.sort(key=_quote_rank)
        return Analysis(
            score=score,
            sentence_scores=compounds,
            aspects=self.detector.decide(features, compounds, score or 0.0, found),
            topics=tuple(sorted(topics)),
            problems=[[problem, problems[problem]] for problem in sorted(problems)],
            quotes=tuple(quotes[:QUOTES_PER_REVIEW]),
            extremes=(
                max([0.0, *(x for sentence in sentences for x in sentence.scores)]),
                min([0.0, *(x for sentence in sentences for x in sentence.scores)]),
            ),
        )

    def _sentence(self, sentence: str) -> _Sentence:
        """One sentence: its segments scored, its cues found and placed."""
        plain = normalise(sentence)
        folded = plain.casefold()
        words = Words(folded)
        scored = plain if len(plain) == len(folded) else folded
        found, turned = segments(words, scored)
        scorer = self.scorer
        matches = scorer.find(scored)
        scores = [scorer.score(scored, s.start, s.end, matches) for s in found]
        if not found:
            return _Sentence(
                sentence, found, scores, turned, sentence_features(words.words, ())
            )
        holder = [0] * len(words)  # the segment of each word
        for k, segment in enumerate(found):
            holder[segment.first : segment.last + 1] = [k] * (
                segment.last + 1 - segment.first
            )
        aspect_matches = self.aspects.find(words)
        for start, end, index in matches:
            ids = scorer.aspects[index]
            if ids:
                span = words.covering(start, end)
                if span is not None:
                    aspect_matches.extend((aspect, *span) for aspect in ids)
        cued = {holder[first] for _, first, _ in aspect_matches}
        result = _Sentence(
            sentence,
            found,
            scores,
            turned,
            sentence_features(
                words.words, sorted({aspect for aspect, _, _ in aspect_matches})
            ),
        )
        opinions: list[bool] | None = None
        names: list[bool] | None = None
        for aspect, first, last in aspect_matches:
            k = holder[first]
            value = _opinion_of(found, scores, k, cued)
            if abs(value) >= ASPECT_FLOOR:
                if opinions is None or names is None:
                    opinions = scorer.opinions(words, scored, matches)
                    names = _names(words, scored)
                phrases = self._phrases(words, found[k], first, last, opinions, names)
                result.aspects.append((aspect, value, k, phrases))
        # a kind of problem once per segment, with the phrases of its cues;
        # not in a positive segment, which is never a complaint
        problems: dict[tuple[str, int], list[str]] = {}
        for problem, first, last in self.problems.find(words):
            k = holder[first]
            if _opinion_of(found, scores, k, set()) >= POSITIVE_THRESHOLD:
                continue
            known = problems.setdefault((problem, k), [])
            for phrase in self._phrases(words, found[k], first, last):
                if phrase not in known:
                    known.append(phrase)
        result.problems = [
            (problem, _opinion_of(found, scores, k, set()), phrases)
            for (problem, k), phrases in problems.items()
        ]
        result.topics = self.topics.ids(words)
        return result


def _names(words: Words, sentence: str) -> list[bool]:
    """Whether each word is written as a name: capitalised, not first."""
    return [
        i > 0 and sentence[start].isupper() and word != "i"
        for i, (word, start) in enumerate(zip(words.words, words.starts, strict=True))
    ]


def _mean(pairs: Sequence[tuple[float, float]]) -> float:
    """The weighted mean of C{(value, weight)} pairs, rounded to 4 places."""
    return round(
        sum([value * weight for value, weight in pairs])
        / sum([weight for _, weight in pairs]),
        4,
    )


def _opinion_of(
    found: Sequence[Segment], scores: Sequence[float], k: int, cued: set[int]
) -> float:
    """
    The opinion segment C{k} gives its cues: its own score, or when it has
    none ("the tile work, wow, stunning"), that of the next segment of its
    clause without a cue of its own, else of the one before.
    """
    if scores[k]:
        return scores[k]
    clause = found[k].clause
    for j in (k + 1, k - 1):
        if 0 <= j < len(found) and found[j].clause == clause and j not in cued:
            if scores[j]:
                return scores[j]
    return 0.0


class _Sentence:
    """What one sentence contributes to the analysis of its review."""

    __slots__ = (
        "text",
        "segments",
        "scores",
        "weights",
        "turned",
        "aspects",
        "problems",
        "topics",
        "features",
    )

    def __init__(
        self,
        text: str,
        found: list[Segment],
        scores: list[float],
        turned: bool,
        features: list[str],
    ) -> None:
        self.text = text
        self.segments = found
        self.scores = scores
        self.weights = [s.weight for s in found]
        self.turned = turned
        #: (aspect id, opinion, segment, phrases) of each cue with an opinion
        self.aspects: list[tuple[str, float, int, list[str]]] = []
        #: (problem id, opinion, phrases) of each cue
        self.problems: list[tuple[str, float, list[str]]] = []
        self.topics: set[str] = set()
        #: what the detector reads of it (L{sentence_features})
        self.features = features

    def weigh(self, factor: float) -> None:
        """Weigh the sentence C{factor} times what it weighed."""
        self.weights = [w * factor for w in self.weights]

    def weight(self) -> float:
        """How much the sentence weighs in the review: its segments' mean."""
        return sum(self.weights) / len(self.weights) if self.weights else PLAIN

    def score(self) -> float:
        """The weighted mean of the sentence's opinionated segments, or 0."""
        pairs = [(s, w) for s, w in zip(self.scores, self.weights, strict=True) if s]
        return _mean(pairs) if pairs else 0.0


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
