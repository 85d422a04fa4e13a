"""
VADER's compound score, computed as vaderSentiment computes it, faster.

C{SentimentIntensityAnalyzer.polarity_scores} lowercases a clause's whole
word list again for every word it weighs (for negations, idioms, "but"),
and walks every character of the text looking for emoji; scoring every
clause of every review, that was a quarter of the analysis.  L{compound}
follows the same rules, in the same order, with the words lowercased once
and emoji looked up only in text that is not ASCII, using
vaderSentiment's own constants and its own C{_but_check}, and the
arithmetic of its C{score_valence}; the tests check that it gives the same score as
C{polarity_scores} on every clause of the demo data and the labelled
reviews.
"""

from __future__ import annotations

import math
import string

from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    C_INCR,
    N_SCALAR,
    NEGATE,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
    scalar_inc_dec,
)

_PUNCTUATION = string.punctuation
_NEGATE = frozenset(NEGATE)


def _negated(word: str) -> bool:
    return word in _NEGATE or "n't" in word


def _token(word: str) -> str:
    """A word without the punctuation around it, unless that leaves two
    characters or fewer (an emoticon such as C{":)"})."""
    stripped = word.strip(_PUNCTUATION)
    return word if len(stripped) <= 2 else stripped


class Vader:
    """The compound score of one analyser (with its lexicon, as extended)."""

    def __init__(self, analyzer: SentimentIntensityAnalyzer) -> None:
        self._analyzer = analyzer
        self._lexicon = analyzer.lexicon
        self._emojis = analyzer.emojis

    def _without_emoji(self, text: str) -> str:
        """The text with its emoji read as their descriptions, as VADER does."""
        emojis = self._emojis
        pieces = []
        prev_space = True
        for c in text:
            description = emojis.get(c)
            if description is not None:
                if not prev_space:
                    pieces.append(" ")
                pieces.append(description)
                prev_space = False
            else:
                pieces.append(c)
                prev_space = c == " "
        return "".join(pieces)

    def compound(self, text: str) -> float:
        """C{polarity_scores(text)["compound"]}."""
        if not text.isascii():
            text = self._without_emoji(text)
        text = text.strip()
        words = [_token(w) for w in text.split()]
        lowered = [w.lower() for w in words]
        lexicon = self._lexicon
        if lexicon.keys().isdisjoint(lowered):
            return 0.0  # no word to weigh: every valence is 0, and so the sum
        capitals = sum(map(str.isupper, words))
        cap_diff = 0 < len(words) - capitals < len(words)
        sentiments: list[float] = []
        n = len(words)
        for i, low in enumerate(lowered):
            if (
                low in BOOSTER_DICT
                or (low == "kind" and i < n - 1 and lowered[i + 1] == "of")
                or low not in lexicon  # _valence's 0, without the call
            ):
                sentiments.append(0)
                continue
            sentiments.append(self._valence(words, lowered, i, cap_diff))
        if "but" in lowered:
            sentiments = SentimentIntensityAnalyzer._but_check(words, sentiments)
        return _score(sentiments, text)

    def _valence(
        self, words: list[str], lowered: list[str], i: int, cap_diff: bool
    ) -> float:
        """C{sentiment_valence} of word C{i}, the lowercased words given."""
        lexicon = self._lexicon
        low = lowered[i]
        if low not in lexicon:
            return 0
        valence = lexicon[low]
        n = len(words)
        if low == "no" and i != n - 1 and lowered[i + 1] in lexicon:
            valence = 0.0
        if (
            (i > 0 and lowered[i - 1] == "no")
            or (i > 1 and lowered[i - 2] == "no")
            or (i > 2 and lowered[i - 3] == "no" and lowered[i - 1] in ("or", "nor"))
        ):
            valence = lexicon[low] * N_SCALAR
        if words[i].isupper() and cap_diff:
            valence = valence + C_INCR if valence > 0 else valence - C_INCR
        for start_i in range(3):
            before = i - (start_i + 1)
            if i > start_i and lowered[before] not in lexicon:
                s = scalar_inc_dec(words[before], valence, cap_diff)
                if start_i == 1 and s != 0:
                    s = s * 0.95
                if start_i == 2 and s != 0:
                    s = s * 0.9
                valence = valence + s
                valence = _negation(valence, lowered, start_i, i)
                if start_i == 2:
                    valence = _idioms(valence, lowered, i)
        return _least(valence, lowered, i, lexicon)


def _score(sentiments: list[float], text: str) -> float:
    """The compound of C{score_valence}: the sum, emphasised, normalised."""
    if not sentiments:
        return 0.0
    total = float(sum(sentiments))
    exclamations = min(text.count("!"), 4) * 0.292
    questions = text.count("?")
    if questions > 1:
        emphasis = exclamations + (questions * 0.18 if questions <= 3 else 0.96)
    else:
        emphasis = exclamations
    if total > 0:
        total += emphasis
    elif total < 0:
        total -= emphasis
    return round(max(-1.0, min(1.0, total / math.sqrt(total * total + 15))), 4)


def _negation(valence: float, lowered: list[str], start_i: int, i: int) -> float:
    """C{_negation_check}."""
    if start_i == 0:
        if _negated(lowered[i - 1]):
            valence = valence * N_SCALAR
    elif start_i == 1:
        if lowered[i - 2] == "never" and lowered[i - 1] in ("so", "this"):
            valence = valence * 1.25
        elif lowered[i - 2] == "without" and lowered[i - 1] == "doubt":
            pass
        elif _negated(lowered[i - 2]):
            valence = valence * N_SCALAR
    else:
        if (lowered[i - 3] == "never" and lowered[i - 2] in ("so", "this")) or (
            lowered[i - 1] in ("so", "this")
        ):
            valence = valence * 1.25
        elif lowered[i - 3] == "without" and "doubt" in (
            lowered[i - 2],
            lowered[i - 1],
        ):
            pass
        elif _negated(lowered[i - 3]):
            valence = valence * N_SCALAR
    return valence


def _idioms(valence: float, lowered: list[str], i: int) -> float:
    """C{_special_idioms_check}."""
    onezero = f"{lowered[i - 1]} {lowered[i]}"
    twoonezero = f"{lowered[i - 2]} {lowered[i - 1]} {lowered[i]}"
    twoone = f"{lowered[i - 2]} {lowered[i - 1]}"
    threetwoone = f"{lowered[i - 3]} {lowered[i - 2]} {lowered[i - 1]}"
    threetwo = f"{lowered[i - 3]} {lowered[i - 2]}"
    for seq in (onezero, twoonezero, twoone, threetwoone, threetwo):
        if seq in SPECIAL_CASES:
            valence = SPECIAL_CASES[seq]
            break
    if len(lowered) - 1 > i:
        zeroone = f"{lowered[i]} {lowered[i + 1]}"
        if zeroone in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroone]
    if len(lowered) - 1 > i + 1:
        zeroonetwo = f"{lowered[i]} {lowered[i + 1]} {lowered[i + 2]}"
        if zeroonetwo in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroonetwo]
    for n_gram in (threetwoone, threetwo, twoone):
        if n_gram in BOOSTER_DICT:
            valence = valence + BOOSTER_DICT[n_gram]
    return valence


def _least(
    valence: float, lowered: list[str], i: int, lexicon: dict[str, float]
) -> float:
    """C{_least_check}."""
    if i > 1 and lowered[i - 1] not in lexicon and lowered[i - 1] == "least":
        if lowered[i - 2] != "at" and lowered[i - 2] != "very":
            valence = valence * N_SCALAR
    elif i > 0 and lowered[i - 1] not in lexicon and lowered[i - 1] == "least":
        valence = valence * N_SCALAR
    return valence
