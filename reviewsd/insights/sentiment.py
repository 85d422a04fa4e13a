"""
Sentence sentiment: VADER (vaderSentiment) with a small domain lexicon.

Each sentence gets VADER's C{compound} score (-1..1).  Before scoring, every
domain phrase of C{sentiment_lexicon.json} (C{"on time"}, C{"no show"},
C{"hidden fees"}) is rewritten into one token that carries the phrase's
valence, and the domain words are added to VADER's lexicon, so VADER's own
rules (negation, boosters, C{but}, capitals, punctuation) apply to them.

Labels use VADER's standard thresholds: positive at C{compound >= 0.05},
negative at C{compound <= -0.05}, neutral between.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from reviewsd.data.mentions import fold
from reviewsd.insights.data import PHRASE_VALENCES, WORD_VALENCES

POSITIVE_THRESHOLD = 0.05
NEGATIVE_THRESHOLD = -0.05

try:
    VADER_VERSION = version("vaderSentiment")
except PackageNotFoundError:  # pragma: no cover - installed without metadata
    VADER_VERSION = "unknown"


def label(score: float | None) -> str | None:
    """C{positive}, C{neutral} or C{negative} by VADER's thresholds."""
    if score is None:
        return None
    if score >= POSITIVE_THRESHOLD:
        return "positive"
    if score <= NEGATIVE_THRESHOLD:
        return "negative"
    return "neutral"


def _token(phrase: str) -> str:
    return "rvwd_" + re.sub(r"\W+", "_", fold(phrase)).strip("_")


class SentenceScorer:
    """VADER with the domain lexicon; one instance per process is enough."""

    def __init__(self) -> None:
        self._vader = SentimentIntensityAnalyzer()
        lexicon = self._vader.lexicon
        for word, valence in WORD_VALENCES.items():
            lexicon[word.casefold()] = valence
        self._tokens: dict[str, str] = {}
        multi = []
        for phrase, valence in PHRASE_VALENCES.items():
            if len(phrase.split()) == 1:
                # One token already ("no-show", "10/10"): a lexicon word.
                lexicon[phrase.casefold()] = valence
                continue
            token = _token(phrase)
            lexicon[token] = valence
            self._tokens[fold(phrase)] = token
            multi.append(fold(phrase))
        multi.sort(key=lambda p: (-len(p), p))
        alternatives = "|".join(r"\s+".join(map(re.escape, p.split())) for p in multi)
        pattern = rf"(?<!\w)(?:{alternatives})(?!\w)"
        # Matched on the lowercased sentence (three times faster than
        # IGNORECASE) whenever lowercasing keeps every character's position.
        self._phrases = re.compile(pattern) if multi else None
        self._phrases_any_case = re.compile(pattern, re.IGNORECASE) if multi else None

    def rewrite(self, sentence: str) -> str:
        """C{sentence} with each domain phrase turned into its token."""
        if self._phrases is None or self._phrases_any_case is None:
            return sentence
        lowered = sentence.lower()
        if len(lowered) != len(sentence):
            return self._phrases_any_case.sub(
                lambda m: self._tokens[fold(m.group())], sentence
            )
        pieces = []
        end = 0
        for m in self._phrases.finditer(lowered):
            pieces.append(sentence[end : m.start()])
            pieces.append(self._tokens[fold(m.group())])
            end = m.end()
        if not pieces:
            return sentence
        pieces.append(sentence[end:])
        return "".join(pieces)

    def score(self, sentence: str) -> float:
        """VADER's compound score of one sentence, rounded to 4 places."""
        return float(self._vader.polarity_scores(self.rewrite(sentence))["compound"])
