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

from reviewsd.insights.data import ABBREVIATIONS, STOPWORDS

_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?:\s+|$)|\s*\n\s*")
_LAST_WORD = re.compile(r"(\S+)$")
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
        if m.group()[0] == "." and "\n" not in m.group():
            last = _LAST_WORD.search(text, start, m.start() + 1)
            if last is not None and (
                last.group(1).casefold() in ABBREVIATIONS
                or _INITIAL.search(last.group(1))
            ):
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
    clauses break.
    """

    __slots__ = ("folded", "words", "starts", "ends", "_breaks")

    def __init__(self, folded: str) -> None:
        self.folded = folded
        self.words: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        for m in WORD.finditer(folded):
            self.words.append(m.group())
            self.starts.append(m.start())
            self.ends.append(m.end())
        self._breaks: list[bool] | None = None

    def __len__(self) -> int:
        return len(self.words)

    def covering(self, start: int, end: int) -> tuple[int, int] | None:
        """The first and last word overlapping C{folded[start:end]}."""
        first = bisect_right(self.ends, start)
        last = bisect_left(self.starts, end) - 1
        return (first, last) if first <= last else None

    def _clause_breaks(self) -> list[bool]:
        # breaks[i]: a clause ends between word i - 1 and word i.
        if self._breaks is None:
            folded, starts, ends = self.folded, self.starts, self.ends
            self._breaks = [False] + [
                folded[ends[i - 1] : starts[i]] != " "
                and _CLAUSE_BREAK.search(folded, ends[i - 1], starts[i]) is not None
                for i in range(1, len(starts))
            ]
        return self._breaks

    def phrases(self, first: int, last: int, *, bare: bool = False) -> list[str]:
        """
        The phrases of two to L{MAX_PHRASE_WORDS} words that hold words
        C{first} to C{last}, stay inside their clause, and neither begin nor
        end with a stop word or a number outside them: for the cue
        C{"price"} in C{"a fair price, and fast"}, C{"fair price"}.  Those
        words alone are one of them only when C{bare} is true.  Phrases are
        the casefolded text as written, white space collapsed.
        """
        core = last - first + 1
        if core >= MAX_PHRASE_WORDS:
            return [self._text(first, last)] if bare and core > 1 else []
        breaks = self._clause_breaks()
        room = MAX_PHRASE_WORDS - core
        low = first
        while low > 0 and first - low < room and not breaks[low]:
            low -= 1
        high = last
        while (
            high < len(self.words) - 1 and high - last < room and not breaks[high + 1]
        ):
            high += 1
        found = []
        for a in range(low, first + 1):
            if a < first and self._stop(a):
                continue
            for b in range(last, min(high, a + MAX_PHRASE_WORDS - 1) + 1):
                if b - a < 1 or (b > last and self._stop(b)):
                    continue
                if a == first and b == last and not bare:
                    continue
                found.append(self._text(a, b))
        return found

    def _stop(self, i: int) -> bool:
        word = self.words[i]
        return word in STOPWORDS or word.isdigit()

    def _text(self, a: int, b: int) -> str:
        return " ".join(self.folded[self.starts[a] : self.ends[b]].split())
