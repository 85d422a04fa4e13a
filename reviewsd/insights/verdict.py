"""
A review's verdict: its sentiment label, decided from the analysis of its
text and its star rating by a small trained linear model.

The text's score (L{Analysis.score}) comes from rules written against the
development reviews; on fresh text it misses what a reader takes from the
stars: sarcasm, faint words, praise and blame of equal weight, a minor
complaint under five stars, a complaint in words the lexicon does not know.

The text decides alone where the labelling guide's first rule says it
does (L{decided_by_text}): without any opinion it is C{neutral}, and a
clear one-sided text keeps its own label, whatever the stars.  The others
are decided by a multinomial logistic regression over C{positive},
C{neutral} and C{negative} that weighs a few features of the analysis
(L{TEXT_FEATURES}), each alone or crossed with a set of star ratings, so
that the stars are evidence for how far to trust the text, never copied.
Its weights are C{verdict.json}, fitted by C{benchmarks/train_verdict.py}
on labelled reviews the lexicon was not written against; this module only
reads them.  Deciding costs a few multiplications per review, in plain
Python.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reviewsd.insights.analysis import Analysis
from reviewsd.insights.data import shipped
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    OPEN,
    POSITIVE_THRESHOLD,
    label,
)

CLASSES = ("positive", "neutral", "negative")
RATINGS = (1, 2, 3, 4, 5)
#: The shape of C{verdict.json} this module reads.
FORMAT = 1


def _ending(analysis: Analysis) -> float:
    for value in reversed(analysis.sentence_scores):
        if value:
            return value
    return 0.0


def _unread(scores: Sequence[float]) -> float:
    return (
        sum(NEGATIVE_THRESHOLD < s < POSITIVE_THRESHOLD for s in scores) / len(scores)
        if scores
        else 0.0
    )


TextFeature = Callable[[Analysis], float]

#: What the model may read of an analysis, by name.
TEXT_FEATURES: Mapping[str, TextFeature] = {
    "bias": lambda a: 1.0,
    # the text's own verdict, by side
    "positive": lambda a: max(0.0, a.score or 0.0),
    "negative": lambda a: max(0.0, -(a.score or 0.0)),
    # a score that leaves the verdict open: faint words, balanced halves
    "faint": lambda a: float(abs(a.score or 0.0) < OPEN),
    # the strongest praise and blame of any segment, and both at once
    "praise": lambda a: a.extremes[0],
    "blame": lambda a: -a.extremes[1],
    "mixed": lambda a: min(a.extremes[0], -a.extremes[1]),
    # the last sentence with an opinion: where the reviewer ends
    "ending": _ending,
    # the share of sentences the lexicon reads no opinion in, where a
    # complaint or a praise in words it does not know would be
    "unread": lambda a: _unread(a.sentence_scores),
    # the kinds of problem named in segments that are not praise
    "problems": lambda a: float(len(a.problems)),
}


def two_sided(analysis: Analysis) -> bool:
    """Whether the text both praises and blames, in different segments."""
    highest, lowest = analysis.extremes
    return highest >= POSITIVE_THRESHOLD and lowest <= NEGATIVE_THRESHOLD


def decided_by_text(analysis: Analysis) -> bool:
    """
    Whether the text decides the label alone, whatever the stars: it has
    no opinion at all (C{neutral}), or a clear one that nothing in it goes
    against: a score at least L{OPEN} from 0, no segment of the other
    side, and every sentence of its side.  A sentence without an opinion
    is where a complaint or a praise the lexicon does not know would be:
    the stars are evidence for it.
    """
    score = analysis.score
    if not score:
        return True
    if abs(score) < OPEN or two_sided(analysis):
        return False
    scores = analysis.sentence_scores
    if score > 0:
        return min(scores) >= POSITIVE_THRESHOLD
    return max(scores) <= NEGATIVE_THRESHOLD


def star_set(name: str) -> frozenset[int]:
    """
    The ratings a name such as C{"stars1-2"} or C{"stars5"} stands for.

    @raise ValueError: not such a name.
    """
    if not name.startswith("stars"):
        raise ValueError(f"not a set of star ratings: {name!r}")
    low, _, high = name[len("stars") :].partition("-")
    first, last = int(low), int(high or low)
    if not 1 <= first <= last <= 5:
        raise ValueError(f"not a set of star ratings: {name!r}")
    return frozenset(range(first, last + 1))


def parse_feature(name: str) -> tuple[str, frozenset[int]]:
    """
    The text feature and the star ratings of a model feature: C{"positive"}
    (under any stars), C{"positive*stars1-2"} (under 1 or 2 stars only),
    C{"stars5"} (the constant, under 5 stars).

    @raise ValueError: not a feature this module knows.
    """
    text, _, stars = name.partition("*")
    if not stars and text.startswith("stars"):
        text, stars = "bias", text
    if text not in TEXT_FEATURES:
        raise ValueError(f"unknown text feature {text!r} in {name!r}")
    return text, star_set(stars) if stars else frozenset(RATINGS)


def feature_values(
    names: Sequence[str], analysis: Analysis, rating: int
) -> list[float]:
    """The values of the model features C{names}, for training and tests."""
    values = []
    for name in names:
        text, ratings = parse_feature(name)
        values.append(TEXT_FEATURES[text](analysis) if rating in ratings else 0.0)
    return values


Row = tuple[TextFeature, tuple[float, float, float]]


class Model:
    """
    The weights of C{verdict.json}, folded into one small table per star
    rating: for each text feature the model reads, its weight for each
    class under that rating.
    """

    def __init__(self, document: Mapping[str, Any]) -> None:
        if document.get("format") != FORMAT:
            raise ValueError(f"verdict model: format must be {FORMAT}")
        if tuple(document.get("classes", ())) != CLASSES:
            raise ValueError(f"verdict model: classes must be {list(CLASSES)}")
        names = document.get("features")
        weights = document.get("weights")
        if not isinstance(names, list) or not isinstance(weights, dict):
            raise ValueError("verdict model: features and weights missing")
        columns: list[list[float]] = []
        for c in CLASSES:
            column = weights.get(c)
            if not (
                isinstance(column, list)
                and len(column) == len(names)
                and all(isinstance(x, (int, float)) for x in column)
            ):
                raise ValueError("verdict model: one weight per feature and class")
            columns.append([float(x) for x in column])
        self.document = document
        self.version: int = document.get("version", 0)
        tables: dict[int, dict[str, list[float]]] = {r: {} for r in RATINGS}
        for i, name in enumerate(names):
            text, ratings = parse_feature(name)
            for rating in ratings:
                row = tables[rating].setdefault(text, [0.0, 0.0, 0.0])
                for k in range(3):
                    row[k] += columns[k][i]
        #: Per rating: the constant per class, then the other features.
        self._tables: dict[int, tuple[list[float], list[Row]]] = {}
        for rating, table in tables.items():
            constant = table.pop("bias", [0.0, 0.0, 0.0])
            rows: list[Row] = [
                (TEXT_FEATURES[text], (row[0], row[1], row[2]))
                for text, row in sorted(table.items())
            ]
            self._tables[rating] = (constant, rows)

    def scores(self, analysis: Analysis, rating: int) -> list[float]:
        """The model's score of each class (log-odds up to a constant)."""
        constant, rows = self._tables[rating]
        positive, neutral, negative = constant
        for feature, (wp, wu, wn) in rows:
            value = feature(analysis)
            if value:
                positive += wp * value
                neutral += wu * value
                negative += wn * value
        return [positive, neutral, negative]

    def label(self, analysis: Analysis, rating: int) -> str | None:
        """
        The review's label: C{None} without a sentence; the text's own when
        it decides alone (L{decided_by_text}); else the model's most likely
        class.
        """
        score = analysis.score
        if score is None:
            return None
        if decided_by_text(analysis) or rating not in self._tables:
            return label(score)
        values = self.scores(analysis, rating)
        best = max(range(3), key=values.__getitem__)
        return CLASSES[best]

    def score(self, analysis: Analysis, rating: int) -> float | None:
        """
        The review's score: the text's, moved to the side of the label when
        they differ, keeping its magnitude (at least a label's, 0.05); 0
        when the label is C{neutral} and the text's is not.
        """
        score = analysis.score
        if not score:
            return score  # no sentence, or no opinion: the text decides
        verdict = self.label(analysis, rating)
        if verdict == label(score):
            return score
        if verdict == "neutral":
            return 0.0
        magnitude = max(abs(score), POSITIVE_THRESHOLD)
        return magnitude if verdict == "positive" else -magnitude


def load(name: str = "verdict.json") -> Model:
    """The model shipped beside this module."""
    return Model(json.loads(shipped(name)))


#: The weights' digest: what a review's label, once made, is valid for.
VERDICT_DIGEST = hashlib.sha256(shipped("verdict.json")).hexdigest()


_model: Model | None = None


def model() -> Model:
    """The process's model, read on first use."""
    global _model
    if _model is None:
        _model = load()
    return _model
