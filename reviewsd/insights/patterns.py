"""
Many regular expressions, each tried only where it can start.

One alternation of the few hundred patterns of C{outcomes.json} and the
lexicon's phrases costs milliseconds a sentence: at every word the regular
expression engine tries every alternative.  A L{PatternSet} works out,
from each pattern's source, the literal texts a match must begin with, up
to six characters (C{"still "} for C{"still (?:leaks|drips)"}, C{"leak a"}
and C{"leaks "} for C{"leaks? again"}), and at each place a match may
begin tries only the patterns whose beginnings are there, in their order.  The
matches are those of the one alternation, wrapped in C{(?<!\\w)...(?!\\w)}
and scanned with C{finditer}: leftmost first, the earliest pattern among
those matching at a place, none overlapping.

The beginnings are read by L{beginnings}, a small reader of the syntax the
data files use (literals, escapes, C{(?:...|...)} groups, character sets,
quantifiers); anything else ends a beginning early, which only makes a
pattern tried at more places, never missed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

#: More beginnings than this for one pattern: tried everywhere.
_MAX_BEGINNINGS = 400
#: Beginnings are read this far, enough to tell the patterns apart.
_ENOUGH = 6
_SPECIAL = set(".^$*+?{}[]\\|()")
_QUANTIFIER = re.compile(r"[?*+]|\{(\d*)(?:,(\d*))?\}")
#: Up to this many patterns, one alternation of them is quicker than the
#: trie and the candidates.  Only one: an alternation tries each of its
#: patterns at every place, and each word of their alternatives of words
#: in turn (the aspects' six patterns, as one alternation, took half as
#: long again on the labelled reviews).
_FEW = 1
#: How many beginnings' candidates are remembered (a few megabytes).
_MEMO = 50_000
#: Where a match may begin: not after a word character, and not at a space.
_STARTS = re.compile(r"(?<!\w)\S")


def _scan(source: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """
    Each character of C{source} from C{start} that is neither escaped nor in
    a character set, with its index and its group depth (a parenthesis
    counts at the depth outside the group it opens or closes).
    """
    depth = 0
    i = start
    in_set = False
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_set:
            in_set = c != "]"
        elif c == "[":
            in_set = True
        else:
            if c == ")":
                depth -= 1
            yield i, c, depth
            if c == "(":
                depth += 1
        i += 1


def _group_end(source: str, start: int) -> int:
    """The index of the parenthesis closing the group opened at C{start}."""
    for i, c, depth in _scan(source, start):
        if c == ")" and depth == 0:
            return i
    raise ValueError(f"unbalanced group in {source!r}")


def _alternatives(body: str) -> list[str]:
    """The top-level alternatives of a group's body."""
    found, start = [], 0
    for i, c, depth in _scan(body):
        if c == "|" and depth == 0:
            found.append(body[start:i])
            start = i + 1
    found.append(body[start:])
    return found


def _set_members(body: str) -> set[str] | None:
    """The characters of a character set's body, if it lists them plainly."""
    if body.startswith("^"):
        return None
    members: set[str] = set()
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            escaped = body[i + 1 : i + 2]
            if escaped == "d":
                members.update("0123456789")
            elif escaped.isalnum():
                return None  # \w, \s, \u...
            else:
                members.add(escaped)
            i += 2
            continue
        if i + 2 < len(body) and body[i + 1] == "-":
            return None  # a range
        members.add(c)
        i += 1
    return members


def beginnings(source: str) -> set[str] | None:
    """
    The literal texts every match of C{source} begins with (one of them),
    or C{None} when a match may begin with anything.  A top-level
    alternation (C{"a|b"}) begins as any of its alternatives does.
    """
    found = frozenset().union(
        *(_read(a, frozenset({""})) for a in _alternatives(source))
    )
    if "" in found or len(found) > _MAX_BEGINNINGS:
        return None
    return set(found)


def _item(source: str, i: int) -> tuple[set[str] | None, list[str], int]:
    """
    The item of C{source} at C{i}: the characters it matches (C{None} when
    it is not literal), the alternatives of a group, and where it ends.
    """
    c = source[i]
    if c == "(":
        end = _group_end(source, i)
        body = source[i + 1 : end]
        if not body.startswith("?:"):
            return None, [], end + 1  # a lookaround or a capturing group
        return None, _alternatives(body[2:]), end + 1
    if c == "[":
        end = source.index("]", i + 2 if source[i + 1] == "]" else i + 1)
        return _set_members(source[i + 1 : end]), [], end + 1
    if c == "\\":
        escaped = source[i + 1 : i + 2]
        if escaped == "d":
            return set("0123456789"), [], i + 2
        return (None if escaped.isalnum() else {escaped}), [], i + 2
    if c in _SPECIAL:
        return None, [], i + 1
    return {c}, [], i + 1


def _read(source: str, prefixes: frozenset[str]) -> frozenset[str]:
    """
    C{prefixes} extended by what C{source} must begin with, as far as it
    is literal.
    """
    i = 0
    while (
        i < len(source)
        and len(prefixes) <= _MAX_BEGINNINGS
        and min(map(len, prefixes)) < _ENOUGH
    ):
        members, alternatives, end = _item(source, i)
        if members is None and not alternatives:
            return prefixes
        m = _QUANTIFIER.match(source, end)
        text = "" if m is None else m.group()
        rest = source[end:] if m is None else source[m.end() :]
        once = text in ("", "?")
        if alternatives:
            taken = [_read(a + rest if once else a, prefixes) for a in alternatives]
            found = frozenset().union(*taken)
        else:
            extended = frozenset(p + c for p in prefixes for c in members or ())
            found = _read(rest, extended) if once else extended
        may_skip = text in ("?", "*") or (
            text.startswith("{") and m is not None and m.group(1) in ("", "0")
        )
        if may_skip:
            found |= _read(rest, prefixes)
        return found
    return prefixes


def _trie(words: Iterable[str]) -> str:
    """A regular expression matching any of C{words}, factored as a trie."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for c in word:
            node = node.setdefault(c, {})
        node[""] = {}
    return _trie_source(tree)


def _trie_source(node: dict[str, Any]) -> str:
    if "" in node:
        return ""  # a shorter beginning ends here: enough to be a place
    branches = [re.escape(c) + _trie_source(child) for c, child in sorted(node.items())]
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


class PatternSet:
    """
    Patterns matched as whole words in order of priority (see the module
    docstring); L{finditer} gives C{(start, end, index)} of each match.
    """

    def __init__(self, sources: Sequence[str], flags: int = 0) -> None:
        self.sources = tuple(sources)
        self._compiled = [re.compile(f"(?:{s})(?!\\w)", flags) for s in sources]
        for source, compiled in zip(sources, self._compiled, strict=True):
            if compiled.groups:
                raise ValueError(f"pattern {source!r}: use (?:...) groups")
        self._index: dict[str, list[int]] = {}
        self._anywhere: list[int] = []
        for index, source in enumerate(self.sources):
            # Without case, a beginning could be spelled many ways: tried
            # everywhere (the rare texts that lowercasing lengthens).
            found = None if flags & re.IGNORECASE else beginnings(source)
            if found is None:
                self._anywhere.append(index)
            else:
                for beginning in found:
                    self._index.setdefault(beginning, []).append(index)
        self._lengths = sorted({len(b) for b in self._index})
        #: The candidates of each text a match may begin with, as found.
        self._memo: dict[str, list[int]] = {}
        # Where some beginning is: one regular expression of them all, as a
        # trie (the engine then reads each character once), to skip the
        # places where no pattern can match at C{C} speed.
        self._places = (
            _STARTS
            if self._anywhere or not self._index
            else re.compile(rf"(?<!\w)(?={_trie(self._index)})")
        )
        # Few patterns (L{_FEW}): one alternation is quicker than the trie
        # and the candidates, and finds the same matches.
        self._few = (
            re.compile(
                r"(?<!\w)(?:"
                + "|".join(f"(?P<p{i}>{s})" for i, s in enumerate(sources))
                + r")(?!\w)",
                flags,
            )
            if len(sources) <= _FEW
            else None
        )

    def anywhere(self) -> list[str]:
        """The patterns tried at every place (their beginnings unknown)."""
        return [self.sources[i] for i in self._anywhere]

    def _candidates(self, window: str) -> list[int]:
        """
        The patterns that may match where C{window} (the text's next
        L{_ENOUGH} characters) begins, in order, remembered.
        """
        index = self._index
        merged = set(self._anywhere)
        for size in self._lengths:
            merged.update(index.get(window[:size], ()))
        found = sorted(merged)
        if len(self._memo) < _MEMO:
            self._memo[window] = found
        return found

    def finditer(self, text: str) -> Iterator[tuple[int, int, int]]:
        """C{(start, end, pattern index)} of each match, left to right."""
        if self._few is not None:
            for found in self._few.finditer(text):
                yield found.start(), found.end(), int((found.lastgroup or "p0")[1:])
            return
        compiled = self._compiled
        memo = self._memo
        pos = 0
        for start in self._places.finditer(text):
            at = start.start()
            if at < pos:
                continue
            window = text[at : at + _ENOUGH]
            candidates = memo.get(window)  # looked up here: most are known
            if candidates is None:
                candidates = self._candidates(window)
            for index in candidates:
                m = compiled[index].match(text, at)
                if m is not None:
                    pos = m.end()
                    yield at, pos, index
                    break
