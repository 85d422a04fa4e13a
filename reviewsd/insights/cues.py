"""
Whole-word cue matching for aspects, topics and kinds of problem.

L{reviewsd.data.mentions} stays the one matcher for technicians, services and
places; this one finds the cues of C{aspects.json}, C{topics.json} and
C{problems.json}.  Both match whole words, case-insensitively.  Here the
sentence is split into words once (L{reviewsd.insights.text.Words}) and a
cue is a sequence of words looked up by its first word, which is several
times faster than one regular expression of hundreds of alternatives and
keeps the same meaning: C{"late"} is found in C{"2 hours late."} but not in
C{"chocolate"}.  Every occurrence of every cue is reported, overlapping ones
included, so that C{"never called back"} counts for a category listing it
and for one listing C{"never called"}.

A cue's C{exclude} phrases cancel the category's matches they overlap
(C{"gutters cleaned"} is a service, not a word about cleanliness); its
C{patterns} are regular expressions over the casefolded sentence, matched
as whole words (L{reviewsd.insights.patterns.PatternSet}).
"""

from __future__ import annotations

from collections.abc import Sequence

from reviewsd.insights.data import Category
from reviewsd.insights.patterns import PatternSet
from reviewsd.insights.text import Words, normalise, word_list

Match = tuple[str, int, int]

#: The cues beginning with each word, longest first: C{(length, the words
#: after the first, owners)}; the words after the first are a list, to be
#: compared with a slice of the sentence's words as they are.
_Index = dict[str, list[tuple[int, list[str], tuple[str, ...]]]]


def _index(pairs: dict[tuple[str, ...], list[str]]) -> _Index:
    index: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for words, owners in pairs.items():
        index.setdefault(words[0], []).append((words, tuple(dict.fromkeys(owners))))
    for candidates in index.values():
        candidates.sort(key=lambda c: (-len(c[0]), c[0]))
    return {
        first: [(len(cue), list(cue[1:]), owners) for cue, owners in candidates]
        for first, candidates in index.items()
    }


def _occurrences(index: _Index, words: list[str]) -> list[Match]:
    found: list[Match] = []
    if index.keys().isdisjoint(words):
        return found
    for i, word in enumerate(words):
        candidates = index.get(word)
        if candidates is None:
            continue
        for size, rest, owners in candidates:
            # a slice that runs past the last word is shorter than C{rest}
            if size == 1 or words[i + 1 : i + size] == rest:
                last = i + size - 1
                found.extend((owner, i, last) for owner in owners)
    return found


class CueSet:
    """Finds which categories a sentence mentions, and at which words."""

    def __init__(self, categories: Sequence[Category]) -> None:
        self.categories = tuple(categories)
        cues: dict[tuple[str, ...], list[str]] = {}
        exclusions: dict[tuple[str, ...], list[str]] = {}
        patterns: list[tuple[str, str, str]] = []
        for category in self.categories:
            for cue in category.cues:
                words = tuple(word_list(normalise(cue).casefold()))
                if words:
                    cues.setdefault(words, []).append(category.id)
            for phrase in category.exclude:
                words = tuple(word_list(normalise(phrase).casefold()))
                if words:
                    exclusions.setdefault(words, []).append(category.id)
            for pattern in category.patterns:
                patterns.append((f"p{len(patterns)}", pattern, category.id))
        self._cues = _index(cues)
        self._exclusions = _index(exclusions)
        self._patterns = PatternSet([p for _, p, _ in patterns]) if patterns else None
        self._pattern_owner = [owner for _, _, owner in patterns]

    def find(self, words: Words) -> list[Match]:
        """
        Every match in a sentence, as C{(category id, first word, last word)},
        sorted.
        """
        found = self._unsorted(words)
        found.sort()
        return found

    def _unsorted(self, words: Words) -> list[Match]:
        """Every match in a sentence, in no particular order."""
        found = _occurrences(self._cues, words.words)
        if self._patterns is not None:
            for start, end, index in self._patterns.finditer(words.folded):
                span = words.covering(start, end)
                if span is not None:
                    found.append((self._pattern_owner[index], *span))
        if found and self._exclusions:
            excluded = _occurrences(self._exclusions, words.words)
            if excluded:
                found = [
                    (owner, first, last)
                    for owner, first, last in found
                    if not any(
                        owner == x_owner and first <= x_last and x_first <= last
                        for x_owner, x_first, x_last in excluded
                    )
                ]
        return found

    def ids(self, words: Words) -> set[str]:
        """The categories a sentence mentions."""
        return {owner for owner, _, _ in self._unsorted(words)}
