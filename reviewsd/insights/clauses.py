"""
Clauses of a sentence, and how much each weighs in the review's verdict.

Reviewers put the verdict after a turn ("nice people, I{but} it dragged on
for months") and put what they concede in a clause of its own ("I{although}
it took a while, ..."; "great work I{except} the cleanup").  A sentence is
cut where C{text.json}'s C{contrast} words say, into I{clauses} whose
weight is L{CONCEDED}, L{PLAIN} or L{VERDICT}; each clause is cut further
at punctuation and at joins such as C{"and the ..."} into I{segments}, the
units that are scored and to which an aspect's cue gives its opinion (in
C{"friendly tech, terrible work"} the tech is praised and the work is not).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from reviewsd.insights.data import CONTRAST
from reviewsd.insights.text import Words

CONCEDED = 0.5
PLAIN = 1.0
VERDICT = 1.5

(
    _TURN,
    _WEAK_TURN,
    _CONCESSION,
    _VERDICT,
    _EXCEPTION,
    _COMPLAINT_TURN,
    _MINOR,
) = range(7)
_PLAIN = -1

#: What between two words ends a segment: punctuation, but not quotes
#: (a word in quotes is read with them: C{the "fixed" toilet}).
_SEGMENT_BREAK = re.compile(r"[,;:()\[\]—–!?…]|\s-\s|\.")


class Segment(NamedTuple):
    """
    Words C{first} to C{last} of a sentence, whose scored text is the
    sentence's characters C{start} to C{end} (the contrast words that
    begin it left out: VADER weighs the words after C{"but"} again and
    reads C{"despite"} as a negation), in clause C{clause} of the
    sentence, of weight C{weight}.
    """

    first: int
    last: int
    start: int
    end: int
    clause: int
    weight: float


def _index(
    groups: dict[str, tuple[str, ...]],
) -> dict[str, list[tuple[tuple[str, ...], int]]]:
    index: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    for key, role in (
        ("exceptions", _EXCEPTION),
        ("turns", _TURN),
        ("complaint_turns", _COMPLAINT_TURN),
        ("minor", _MINOR),
        ("weak_turns", _WEAK_TURN),
        ("concessions", _CONCESSION),
        ("verdicts", _VERDICT),
    ):
        for phrase in groups[key]:
            words = tuple(phrase.split())
            index.setdefault(words[0], []).append((words, role))
    for candidates in index.values():
        candidates.sort(key=lambda c: -len(c[0]))
    return index


_MARKERS = _index(CONTRAST)
_JOINS = frozenset(CONTRAST["joins"])
_SUBJECTS = frozenset(CONTRAST["subjects"])
_BREAKS = frozenset(CONTRAST["breaks"])


def _markers(words: list[str], breaks: list[bool]) -> list[tuple[int, int, int]]:
    """
    The contrast markers, as C{(first word, first word of the text to
    score, role)}.
    """
    found = []
    n = len(words)
    covered = 0  # words before this one belong to a marker or an exception
    for i, word in enumerate(words):
        candidates = _MARKERS.get(word)
        if candidates is None or i < covered:
            continue
        for phrase, role in candidates:
            size = len(phrase)
            if i + size > n or tuple(words[i : i + size]) != phrase:
                continue
            if role == _EXCEPTION:
                covered = i + size
                break
            if i + size == n:
                break  # "Pricey though." turns on the sentence before
            if role == _WEAK_TURN:
                if not (i == 0 or breaks[i] or words[i - 1] == "and"):
                    break
                role = _TURN
            if role == _COMPLAINT_TURN:
                found.append((i, i, _TURN))  # its words are scored
            elif role == _MINOR:
                found.append((i, i, _MINOR))
            else:
                found.append((i, i + size, role))
            covered = i + size
            break
    return found


def _segment_breaks(words: Words) -> list[bool]:
    folded, starts, ends = words.folded, words.starts, words.ends
    return [False] + [
        (gap := folded[ends[i - 1] : starts[i]]) != " "
        and gap != ":"  # "3:45"
        and _SEGMENT_BREAK.search(gap) is not None
        for i in range(1, len(starts))
    ]


def _clauses(
    tokens: list[str], breaks: list[bool]
) -> tuple[list[int], list[int], list[float], bool]:
    """
    Where the clauses of a sentence start (word indexes), where the text to
    score of each starts, and their weights; whether the sentence begins
    with a turn.
    """
    n = len(tokens)
    markers = _markers(tokens, breaks)
    starts: dict[int, tuple[int, int]] = {0: (_PLAIN, 0)}
    for first, body, role in markers:
        starts[first] = (role, body)
        if role == _CONCESSION:
            end = next((j for j in range(body, n) if breaks[j]), n)
            if end < n and end not in starts:
                starts[end] = (_PLAIN, end)
    order = sorted(starts)
    roles = [starts[i][0] for i in order]
    bodies = [starts[i][1] for i in order]
    weights = [PLAIN] * len(order)
    last_turn = max(
        (k for k, role in enumerate(roles) if role == _TURN and order[k] > 0),
        default=-1,
    )
    # a concession outweighed by what follows it ("although X, Y")
    leading = any(
        role == _CONCESSION and k < len(roles) - 1 for k, role in enumerate(roles)
    )
    for k, role in enumerate(roles):
        if role == _MINOR:
            weights[k] = CONCEDED
        elif role == _CONCESSION:
            weights[k] = CONCEDED if k < len(roles) - 1 else PLAIN
        elif k < last_turn:
            weights[k] = CONCEDED
        elif role in (_TURN, _VERDICT) or k > last_turn >= 0 or leading:
            weights[k] = VERDICT
    turned = bool(markers) and markers[0][0] == 0 and markers[0][2] == _TURN
    return order, bodies, weights, turned


def segments(words: Words, text: str) -> tuple[list[Segment], bool]:
    """
    The segments of a sentence, C{words} its words and C{text} the
    sentence (of the length of C{words.folded}), and whether the sentence
    begins with a turn (it then outweighs the sentence before).  A sentence
    without words (C{"👍"}) is one segment.
    """
    n = len(words)
    if not n:
        return ([Segment(0, -1, 0, len(text), 0, PLAIN)] if text.strip() else []), False
    tokens = words.words
    breaks = _segment_breaks(words)
    order, bodies, weights, turned = _clauses(tokens, breaks)
    # where a segment ends inside its clause: punctuation, or a join
    cuts = {
        j
        for j in range(1, n)
        if breaks[j]
        or tokens[j] in _BREAKS
        or (tokens[j] in _JOINS and j + 1 < n and tokens[j + 1] in _SUBJECTS)
    }
    cuts.update(order)
    cuts.add(n)
    cuts.discard(0)
    starts = words.starts
    found: list[Segment] = []
    k = 0
    clauses = len(order)
    piece = 0
    for j in sorted(cuts):
        while k + 1 < clauses and order[k + 1] <= piece:
            k += 1
        body = bodies[k] if piece == order[k] else piece
        if body < j:
            found.append(
                Segment(
                    piece,
                    j - 1,
                    starts[body] if body else 0,
                    starts[j] if j < n else len(text),
                    k,
                    weights[k],
                )
            )
        piece = j
    return found, turned
