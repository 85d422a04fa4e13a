"""
What the words of a review text say that the lexicon does not read: which
aspects it gives an opinion on, their sides, and the tone of a text the
lexicon reads no opinion in, each decided by a small trained linear model
over the text's words and the lexicon's findings.

The lexicon finds an aspect only where one of its cues sits in a segment
with an opinion; readers also mark aspects said in wordings no cue holds
("the crew left at three every day", "we got a text the night before"),
and the lexicon finds some that readers do not ("used the mailing list
discount").  For each aspect a logistic regression weighs the text's words
and word pairs, the aspects whose cues the text holds, and those the
lexicon found with an opinion; the aspect counts when its probability
reaches the model's threshold.  An aspect the lexicon found keeps the
lexicon's opinion and phrases.  One the model adds takes its opinion from
the sentence that is the strongest evidence for it: a second regression
over that sentence's words and scores gives the side, as a value from -1
to 1 that the stars settle when it is open
(L{reviewsd.insights.sentiment.with_stars}).

A text in which the lexicon reads no opinion may still praise or complain
in words it does not know ("heat back on before the kids woke up", "three
visits and the toilet still runs").  A third regression reads the tone of
its words as C{positive}, C{neutral} or C{negative}; where it is sure
enough of a side, the text takes the weakest score of that side
(L{TONE_SCORE}), which the verdict then weighs with the stars
(L{reviewsd.insights.verdict}), and the aspect models read it as they read
any text with an opinion.  Facts alone read as neutral and name no aspect.

The weights are C{detector.json}, fitted by C{benchmarks/train_detector.py}
on labelled reviews; this module only reads them.  Deciding costs a dict
look-up per distinct word and word pair, in plain Python.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

from reviewsd.insights.data import shipped

#: The shape of C{detector.json} this module reads.
FORMAT = 1

#: The score of a text whose tone alone gives it a side: a label's least.
TONE_SCORE = 0.05
#: The classes of the tone model, in the order of its weights' columns.
TONES = ("positive", "neutral", "negative")

#: An aspect as the analysis gives it: C{(aspect id, score, phrases)}.
Mention = tuple[str, float, tuple[str, ...]]


def sentence_features(words: Sequence[str], cues: Iterable[str]) -> list[str]:
    """
    What one sentence tells the models: each word (C{"w late"}), each pair
    of neighbouring words with the sentence's edges (C{"p two hours"},
    C{"p <s> never"}), and each aspect whose cues it holds (C{"c pricing"}).
    """
    features = [f"w {w}" for w in words]
    features += [
        f"p {previous} {word}"
        for previous, word in zip(["<s>", *words], [*words, "</s>"], strict=True)
    ]
    features.extend(f"c {aspect}" for aspect in cues)
    return features


def lexicon_feature(aspect: str) -> str:
    """The feature of an aspect the lexicon found with an opinion."""
    return f"l {aspect}"


def _well_formed(pairs: Any, width: int) -> bool:
    """Whether C{pairs} is C{[[column, weight], ...]}, each column once."""
    return (
        isinstance(pairs, list)
        and all(
            isinstance(p, list)
            and len(p) == 2
            and type(p[0]) is int
            and 0 <= p[0] < width
            and isinstance(p[1], (int, float))
            for p in pairs
        )
        and len({p[0] for p in pairs}) == len(pairs)
    )


def _rows(value: Any, width: int, where: str) -> dict[str, tuple[float, ...]]:
    """
    C{{feature: [[column, weight], ...]}}, checked, as C{{feature: (weight
    of column 0, ..., weight of column width - 1)}}, a column the feature
    does not weigh as C{0.0}: the rows of a text's features, transposed (in
    C), give each column's weights in the order of the features, to be
    added in a tight loop (L{_totals}) rather than pair by pair, each looked
    up by its column.  Adding C{0.0} leaves a total as it was (but for the
    sign of a zero, which no comparison tells), and each column still adds
    its weights in the same order: the sums are the same.
    """
    if not isinstance(value, dict):
        raise ValueError(f"detector model: {where} must be an object")
    rows = {}
    for feature, pairs in value.items():
        if not _well_formed(pairs, width):
            raise ValueError(f"detector model: {where}[{feature!r}] is malformed")
        row = [0.0] * width
        for column, weight in pairs:
            row[column] = float(weight)
        rows[feature] = tuple(row)
    return rows


def _numbers(value: Any, width: int, where: str) -> list[float]:
    if not (
        isinstance(value, list)
        and len(value) == width
        and all(isinstance(x, (int, float)) for x in value)
    ):
        raise ValueError(f"detector model: {where} must be {width} numbers")
    return [float(x) for x in value]


class Detector:
    """The weights of C{detector.json}, ready to score a text's features."""

    def __init__(self, document: Mapping[str, Any], aspect_ids: Sequence[str]) -> None:
        if document.get("format") != FORMAT:
            raise ValueError(f"detector model: format must be {FORMAT}")
        aspects = document.get("aspects")
        if aspects != list(aspect_ids):
            raise ValueError(
                "detector model: aspects must be the taxonomy's, in its order"
            )
        width = len(aspects)
        self.aspects: tuple[str, ...] = tuple(aspects)
        self._bias = _numbers(document.get("bias"), width, "bias")
        threshold = document.get("threshold")
        if not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
            raise ValueError("detector model: threshold must be between 0 and 1")
        #: The threshold as log-odds: an aspect counts at or above it.
        self._cut = math.log(threshold / (1 - threshold))
        #: The weights of each feature, by aspect (L{_rows}).
        self._weights = _rows(document.get("weights"), width, "weights")
        polarity = document.get("polarity")
        if not isinstance(polarity, dict):
            raise ValueError("detector model: polarity must be an object")
        self._polarity_bias, self._sentence_weight, self._score_weight = _numbers(
            polarity.get("numbers"), 3, "polarity.numbers"
        )
        weights = polarity.get("weights")
        if not isinstance(weights, dict) or not all(
            isinstance(w, (int, float)) for w in weights.values()
        ):
            raise ValueError("detector model: polarity.weights must map to numbers")
        self._polarity = {feature: float(w) for feature, w in weights.items()}
        tone = document.get("tone")
        if not isinstance(tone, dict) or tone.get("classes") != list(TONES):
            raise ValueError(f"detector model: tone.classes must be {list(TONES)}")
        sure = tone.get("threshold")
        if not isinstance(sure, (int, float)) or not 0.5 <= sure < 1:
            raise ValueError("detector model: tone.threshold must be from 0.5 to 1")
        self._sure = float(sure)
        self._tone_bias = _numbers(tone.get("bias"), len(TONES), "tone.bias")
        #: The weights of each feature, by tone (L{_rows}).
        self._tone = _rows(tone.get("weights"), len(TONES), "tone.weights")
        self.document = document

    def tone(self, sentences: Sequence[Sequence[str]]) -> float:
        """
        The score the words of a text the lexicon reads no opinion in give
        it: L{TONE_SCORE} on the side the model is sure enough of, else 0.
        """
        distinct = {f for features in sentences for f in features}
        values = _totals(self._tone_bias, map(self._tone.get, distinct))
        top = max(values)
        shares = [math.exp(v - top) for v in values]
        total = sum(shares)
        if shares[0] / total >= self._sure:
            return TONE_SCORE
        if shares[2] / total >= self._sure:
            return -TONE_SCORE
        return 0.0

    def decide(
        self,
        sentences: Sequence[Sequence[str]],
        sentence_scores: Sequence[float],
        score: float,
        found: Sequence[Mention],
    ) -> tuple[Mention, ...]:
        """
        The aspects of a text, sorted by id, from the features of each of
        its sentences (L{sentence_features}), their scores, the text's
        score (the lexicon's, else its tone's) and the aspects the lexicon
        C{found}.  A text with no opinion at all, a C{score} of 0, has none:
        facts alone ("they replaced the gutters in March") say nothing of
        any aspect.
        """
        if not score:
            return ()
        weights = self._weights
        lexicon = {mention[0]: mention for mention in found}
        # the weights of each feature (once, where it first appears), then
        # of each aspect the lexicon found
        features, ends = _distinct(sentences)
        rows = list(map(weights.get, features))
        lexicon_rows = (weights.get(lexicon_feature(aspect)) for aspect in lexicon)
        totals = _totals(self._bias, chain(rows, lexicon_rows))
        decided: list[Mention] = []
        for column, aspect in enumerate(self.aspects):
            if totals[column] < self._cut:
                continue
            known = lexicon.get(aspect)
            if known is not None:
                decided.append(known)
            elif sentences:
                best = _evidence(rows, ends, column)
                value = self.side(sentences[best], sentence_scores[best], score)
                decided.append((aspect, value, ()))
        return tuple(sorted(decided))

    def side(
        self, features: Sequence[str], sentence_score: float, score: float
    ) -> float:
        """
        The opinion of a sentence on an aspect the lexicon did not find, from
        -1 to 1: twice the model's probability that it is favourable, less 1.
        """
        z = (
            self._polarity_bias
            + self._sentence_weight * sentence_score
            + self._score_weight * score
        )
        polarity = self._polarity
        for feature in set(features):
            z += polarity.get(feature, 0.0)
        return round(2.0 / (1.0 + math.exp(-z)) - 1.0, 4)


def _totals(
    bias: Sequence[float], rows: Iterable[tuple[float, ...] | None]
) -> Sequence[float]:
    """
    Each column's bias plus its weight in each of C{rows} (L{_rows}; a
    feature without weights is C{None}), added in their order.  A column
    at a time: its weights are a tuple, and adding floats in a loop of
    its own is the quickest Python does it.
    """
    weighed = list(filter(None, rows))
    if not weighed:
        return bias
    totals = []
    for column, total in zip(zip(*weighed, strict=True), bias, strict=True):
        for weight in column:
            total += weight
        totals.append(total)
    return totals


def _distinct(sentences: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
    """
    The features of a text's sentences, each once, where it first appears,
    and where the features that first appear in each sentence end: those
    of sentence C{k} are C{features[ends[k - 1]:ends[k]]}.  (A dict keeps a
    key where it was first put, and puts new ones last.)
    """
    distinct: dict[str, None] = {}
    ends = []
    for features in sentences:
        distinct.update(dict.fromkeys(features))
        ends.append(len(distinct))
    return list(distinct), ends


def _evidence(
    rows: Sequence[tuple[float, ...] | None], ends: Sequence[int], column: int
) -> int:
    """
    The sentence whose features add most to one aspect's log-odds, from the
    rows of the text's features (L{_distinct}; C{None} without weights).
    """
    added = []
    start = 0
    for end in ends:
        total = 0.0
        for row in rows[start:end]:
            if row is not None:
                total += row[column]
        added.append(total)
        start = end
    return max(range(len(ends)), key=added.__getitem__)


#: What a cached analysis depends on of the model: its weights' bytes.
DETECTOR_DIGEST = hashlib.sha256(shipped("detector.json")).hexdigest()


def load(aspect_ids: Sequence[str], name: str = "detector.json") -> Detector:
    """The model shipped beside this module."""
    return Detector(json.loads(shipped(name)), aspect_ids)
