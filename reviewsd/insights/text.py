"""
Sentences, words and phrases of a review text.

A small regular-expression splitter, good enough for reviews: a sentence
ends at C{.}, C{!}, C{?} or C{…} (with any closing quotes or brackets)
followed by white space, or at a line break; a period after a known
abbreviation (C{text.json}) or after a single capital letter (C{"Mike R."})
does not end one.  A run-on sentence of more than L{MAX_SENTENCE_WORDS}
words is cut into pieces of that many words, which keeps VADER (quadratic
in a sentence's length) fast on any input.

Words are runs of letters and digits, joined by an apostrophe, a hyphen or
a slash inside them (C{"didn't"}, C{"rip-off"}, C{"10/10"}, C{"a/c"}), or
by a period or comma before digits (C{"$14,800"}, C{"3.5"}).  Cues are
matched word by word, so C{"late"} is a word of C{"2 hours late."} and not
of C{"chocolate"}, and C{"clean"} is not a word of C{"clean-up"}.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from reviewsd.insights.data import (
    ABBREVIATIONS,
    AFTER_DURATIONS,
    DURATIONS,
    MODIFIERS,
    NOT_AFTER,
    NOT_FIRST,
    NOT_LAST,
    OPENS_NOUN,
    OPENS_OBJECT,
    SPELLINGS,
    STOPWORDS,
)

_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?:\s+|$)|\s*\n\s*")
_INITIAL = re.compile(r"(?<!\w)[A-Z]\.$")

WORD = re.compile(r"\$?\w+(?:['’/-]\w+|[.,]\d+)*%?")
#: What between two words ends a clause, so that no phrase spans it.
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]\"“”—–!?]|\s-\s|\.")

#: Longest extracted phrase, in words.
MAX_PHRASE_WORDS = 3
#: Longest sentence, in words separated by white space.
MAX_SENTENCE_WORDS = 80


def normalise(text: str) -> str:
    """Typographic apostrophes as ASCII ones, as VADER and the cues spell them."""
    return text.replace("’", "'").replace("‘", "'")


def split_sentences(text: str) -> list[str]:
    """The sentences of C{text}, stripped, without empty ones."""
    sentences: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        boundary = m.group()
        if boundary[0] == "." and "\n" not in boundary:
            # the word the period ends (str.split's white space is that of
            # the regular expressions; a regular expression searching for
            # it from the sentence's start tried every place before it)
            last = text[start : m.start() + 1].rsplit(None, 1)[-1]
            if last.casefold() in ABBREVIATIONS or _INITIAL.search(last):
                continue
        _add(sentences, text[start : m.end()])
        start = m.end()
    _add(sentences, text[start:])
    return sentences


def _add(sentences: list[str], sentence: str) -> None:
    sentence = sentence.strip()
    if not sentence:
        return
    if sentence.count(" ") < MAX_SENTENCE_WORDS:
        sentences.append(sentence)
        return
    words = sentence.split()
    if len(words) <= MAX_SENTENCE_WORDS:
        sentences.append(sentence)
        return
    for i in range(0, len(words), MAX_SENTENCE_WORDS):
        sentences.append(" ".join(words[i : i + MAX_SENTENCE_WORDS]))


def word_list(text: str) -> list[str]:
    """The words of C{text} (casefold it first to match casefolded words)."""
    return WORD.findall(text)


class Words:
    """
    The words of one casefolded sentence, with where they are and where its
    clauses break.  A word is read without a final C{'s} and as spelled
    correctly (C{text.json}'s C{spellings}: C{"profesional"}), so that cues
    match it.
    """

    __slots__ = ("folded", "words", "starts", "ends", "_breaks")

    def __init__(self, folded: str) -> None:
        self.folded = folded
        found = list(WORD.finditer(folded))
        # the methods mapped over the matches: no Python frame per word
        self.starts = list(map(re.Match.start, found))
        self.ends = list(map(re.Match.end, found))
        words = list(map(re.Match.group, found))
        if "'s" in folded:  # "work's fine": the cue "work"
            words = [w[:-2] if w.endswith("'s") else w for w in words]
        if not SPELLINGS.keys().isdisjoint(words):
            words = [SPELLINGS.get(w, w) for w in words]
        self.words = words
        self._breaks: list[bool] | None = None

    def __len__(self) -> int:
        return len(self.words)

    def covering(self, start: int, end: int) -> tuple[int, int] | None:
        """The first and last word overlapping C{folded[start:end]}."""
        first = bisect_right(self.ends, start)
        last = bisect_left(self.starts, end) - 1
        return (first, last) if first <= last else None

    def clause_breaks(self) -> list[bool]:
        """C{breaks[i]}: punctuation between word C{i - 1} and word C{i}."""
        if self._breaks is None:
            folded, starts, ends = self.folded, self.starts, self.ends
            self._breaks = [False] + [
                folded[ends[i - 1] : starts[i]] != " "
                and _CLAUSE_BREAK.search(folded, ends[i - 1], starts[i]) is not None
                for i in range(1, len(starts))
            ]
        return self._breaks

    def phrases(
        self,
        first: int,
        last: int,
        *,
        bare: bool = False,
        low: int = 0,
        high: int | None = None,
        opinions: list[bool] | None = None,
        names: list[bool] | None = None,
    ) -> list[str]:
        """
        The phrases of two to L{MAX_PHRASE_WORDS} words that hold words
        C{first} to C{last}, stay inside their clause (and words C{low} to
        C{high}), and neither begin nor end with a stop word or a number
        outside them, nor with a word that leaves the phrase unfinished
        (C{text.json}'s C{phrase_edges}: not C{"not book"}, C{"months
        past"}), nor right after a negation that it would contradict
        (L{_cut_off}: not C{"on time"} of C{"not on time"}), nor short of
        the noun or the object that finishes them (L{_stops_short}): for
        the cue C{"price"} in C{"a fair price, and fast"}, C{"fair
        price"}.  With C{opinions} (whether each word of the
        sentence carries an opinion), only phrases holding such a word;
        with C{names} (whether each word is written as a name), none that
        begins with a name before the cue.
        Those words alone are one of them only when C{bare} is true.
        Phrases are the casefolded text as written, white space collapsed.
        """
        core = last - first + 1
        if core >= MAX_PHRASE_WORDS:
            whole = (
                bare
                and core > 1
                and self.words[first] not in NOT_FIRST
                and self.words[last] not in NOT_LAST
                and not self._cut_off(first)
                and not self._stops_short(first, last)
            )
            return [self._text(first, last)] if whole else []
        breaks = self.clause_breaks()
        room = MAX_PHRASE_WORDS - core
        floor, ceiling = low, len(self.words) - 1 if high is None else high
        low = first
        while low > floor and first - low < room and not breaks[low]:
            low -= 1
        high = last
        while high < ceiling and high - last < room and not breaks[high + 1]:
            high += 1
        found = []
        words = self.words
        for a in range(low, first + 1):
            if (a < first and self._stop(a)) or words[a] in NOT_FIRST:
                continue
            if self._cut_off(a):
                continue
            if a < first and names is not None and names[a]:
                continue  # "thimbleberry called back": a name, then its doing
            for b in range(last, min(high, a + MAX_PHRASE_WORDS - 1) + 1):
                if b - a < 1 or (b > last and self._stop(b)) or words[b] in NOT_LAST:
                    continue
                if self._stops_short(a, b):
                    continue
                if a == first and b == last and not bare:
                    continue
                if opinions is not None and not (
                    (a == first and b == last) or any(opinions[a : b + 1])
                ):
                    continue
                found.append(self._text(a, b))
        return found

    def _cut_off(self, a: int) -> bool:
        """
        Whether a phrase that begins with word C{a} would be cut from the
        word before it in its clause, one of C{text.json}'s C{not_after}:
        a negation it would contradict (C{"on time"} of C{"not on time"}),
        or C{"per"} (C{"sheet price"} of C{"a per sheet price"}).
        """
        return a > 0 and not self.clause_breaks()[a] and self.words[a - 1] in NOT_AFTER

    def _stops_short(self, a: int, b: int) -> bool:
        """
        Whether the phrase of words C{a} to C{b} stops, within its clause,
        short of the noun its last word qualifies ("diagnosed a failing" of
        "diagnosed a failing bearing", "charged a $95" of "charged a $95
        fee") or of the object of its last word, a verb ("mike diagnosed"
        of "Mike diagnosed a failing bearing").  After an article, a past
        participle, a number or one of C{text.json}'s modifiers qualifies a
        noun to come; a noun ends its phrase ("worth the price", "kept us in
        the loop", "waited a week for an opening").  A span of time stops
        short of the word that finishes it ("estimate 3 weeks" of "3 weeks
        out").
        """
        words = self.words
        if b + 1 == len(words) or self.clause_breaks()[b + 1]:
            return False
        word = words[b]
        if word in DURATIONS and words[b + 1] in AFTER_DURATIONS:
            return True
        participle = len(word) > 4 and word.endswith("ed")
        if b > a and words[b - 1] in OPENS_NOUN and not self._stop(b + 1):
            if participle or word in MODIFIERS or any(c.isdigit() for c in word):
                return True
        verb = participle or (len(word) > 4 and word.endswith("ing"))
        return verb and words[b + 1] in OPENS_OBJECT

    def _stop(self, i: int) -> bool:
        word = self.words[i]
        return word in STOPWORDS or word.isdigit()

    def _text(self, a: int, b: int) -> str:
        return " ".join(self.folded[self.starts[a] : self.ends[b]].split())
