"""
Clause sentiment: VADER (vaderSentiment) with a domain lexicon and the
implicit outcomes of C{outcomes.json}.

Each clause gets VADER's C{compound} score (-1..1).  Before scoring, every
domain phrase of C{sentiment_lexicon.json} (C{"on time"}, C{"no show"},
C{"hidden fees"}) and every match of a pattern of C{outcomes.json}
(C{"still leaks"}, C{"cracked within a month"}) is rewritten into one
token that carries its valence, and the domain words are added to VADER's
lexicon, so VADER's own rules (negation, boosters, capitals, punctuation)
apply to them; emoji add their valence afterwards.

Labels use VADER's standard thresholds: positive at C{compound >= 0.05},
negative at C{compound <= -0.05}, neutral between.  A review's label weighs
its text and its stars in L{reviewsd.insights.verdict}; an aspect's score
takes the stars as evidence only where it leaves the verdict open
(L{with_stars}).
"""

from __future__ import annotations

import math
import re
from importlib.metadata import PackageNotFoundError, version

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from reviewsd.data.mentions import fold
from reviewsd.insights.data import (
    EMOJI_VALENCES,
    OUTCOMES,
    PHRASE_VALENCES,
    SPELLINGS,
    WORD_VALENCES,
)
from reviewsd.insights.patterns import PatternSet
from reviewsd.insights.text import Words
from reviewsd.insights.vader import Vader

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


#: A text score closer to 0 than this leaves the verdict open ("fine",
#: "ok", praise and complaint of equal weight): the stars settle it.
OPEN = 0.15


def with_stars(score: float | None, rating: int) -> float | None:
    """
    A score (an aspect's, in a review) with the review's star rating as
    evidence: a score that leaves the verdict open (0 < |score| < L{OPEN})
    takes the side of the stars, positive at 4-5 and negative at 1-2,
    keeping at least the magnitude of a label; 3 stars leave it as it is.
    No opinion at all (0) stays neutral, and a clear one keeps its sign,
    whatever the stars.
    """
    if score is None or not score or abs(score) >= OPEN or rating == 3:
        return score
    magnitude = max(abs(score), POSITIVE_THRESHOLD)
    return magnitude if rating >= 4 else -magnitude


Match = tuple[int, int, int]
"""Where a phrase or pattern matched: C{(start, end, index)}."""


def _token(phrase: str) -> str:
    return "rvwd_" + re.sub(r"\W+", "_", fold(phrase)).strip("_")


class SentenceScorer:
    """VADER with the domain lexicon; one instance per process is enough."""

    def __init__(self) -> None:
        self._vader = SentimentIntensityAnalyzer()
        lexicon = self._vader.lexicon
        for word, valence in WORD_VALENCES.items():
            lexicon[word.casefold()] = valence
        for misspelled, meant in SPELLINGS.items():
            if meant in lexicon:
                lexicon.setdefault(misspelled, lexicon[meant])
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
        sources = [pattern for pattern, _, _ in OUTCOMES]
        self._replacements = [f"rvwd_p{i}" for i in range(len(sources))]
        #: The aspects each source mentions (only outcomes mention any).
        self.aspects = [ids for _, _, ids in OUTCOMES]
        for token, (_, valence, _) in zip(self._replacements, OUTCOMES, strict=True):
            lexicon[token] = valence
        for phrase in multi:
            escaped = r"\s+".join(map(re.escape, phrase.split()))
            sources.append(escaped.replace("n't", "n'?t"))
            self._replacements.append(self._tokens[phrase])
            self.aspects.append(())
        # Matched on the lowercased sentence whenever lowercasing keeps
        # every character's position, else without case.
        self._matches = PatternSet(sources)
        self._matches_any_case = PatternSet(sources, re.IGNORECASE)
        self._lexicon = lexicon
        self._compound = Vader(self._vader).compound

    def find(self, sentence: str) -> list[Match]:
        """
        Where the domain phrases and the patterns of C{outcomes.json} are
        in C{sentence}: C{(start, end, index)}, left to right; an index
        less than C{len(OUTCOMES)} is an outcome's.
        """
        lowered = sentence.lower()
        if len(lowered) != len(sentence):
            return list(self._matches_any_case.finditer(sentence))
        return list(self._matches.finditer(lowered))

    def opinions(self, words: Words, sentence: str, matches: list[Match]) -> list[bool]:
        """
        Whether each of C{words} (those of C{sentence}) carries an opinion:
        a word of the lexicon with a valence, or a word of a phrase or
        pattern that has one (C{matches}, L{find}'s).
        """
        lexicon = self._lexicon
        found = [bool(lexicon.get(word)) for word in words.words]
        for start, end, index in matches:
            if lexicon.get(self._replacements[index]):
                span = words.covering(start, end)
                if span is not None:
                    for i in range(span[0], span[1] + 1):
                        found[i] = True
        return found

    def rewrite(
        self,
        sentence: str,
        start: int = 0,
        end: int | None = None,
        matches: list[Match] | None = None,
    ) -> str:
        """
        C{sentence[start:end]} with each domain phrase and each match of a
        pattern of C{outcomes.json} turned into its token: those of
        C{matches} (L{find}'s, of the whole sentence) that lie inside it,
        or, without C{matches}, those L{find} finds in it.
        """
        stop = len(sentence) if end is None else end
        if matches is None:
            sentence, start, stop = sentence[start:stop], 0, stop - start
            matches = self.find(sentence)
        pieces = []
        at = start
        replacements = self._replacements
        for first, last, index in matches:
            # a match running on into the next clause ("told 8 weeks and it
            # took 13") counts in the clause where it begins
            if start <= first < stop and first >= at:
                pieces.append(sentence[at:first])
                pieces.append(replacements[index])
                at = min(last, stop)
        pieces.append(sentence[at:stop])
        return "".join(pieces)

    def score(
        self,
        sentence: str,
        start: int = 0,
        end: int | None = None,
        matches: list[Match] | None = None,
    ) -> float:
        """
        VADER's compound score of C{sentence[start:end]} (L{rewrite}),
        rounded to 4 places, with the valence of its emoji
        (C{EMOJI_VALENCES}) added to VADER's sum.
        """
        rewritten = self.rewrite(sentence, start, end, matches)
        emoji = 0.0
        if not rewritten.isascii():
            kept = []
            for c in rewritten:
                valence = EMOJI_VALENCES.get(c)
                if valence is None:
                    kept.append(c)
                else:
                    emoji += valence
                    kept.append(" ")
            if emoji:
                rewritten = "".join(kept)
        compound = self._compound(rewritten)
        if not emoji:
            return compound
        # VADER's compound is x / sqrt(x * x + 15) of its sum x: add to x
        total = compound * math.sqrt(15 / max(1e-9, 1 - compound * compound)) + emoji
        return round(total / math.sqrt(total * total + 15), 4)
