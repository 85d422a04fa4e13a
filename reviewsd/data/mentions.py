"""
Which technicians, services and places a text mentions.

One matcher for search filters, insights and MCP lookups: names, aliases and
keywords are found as whole words or phrases, case-insensitively, so that
C{Dev} is not found in C{Devastated} and C{Mike R.} is found before a comma.

A word is not always the trade it names, and a person is not always the
technician, so a few rules of reading come on top:

  - the longest phrase wins: C{stair railing} (a keyword of one service)
    is not the C{railing} of another, and in the everyday phrases of
    L{EVERYDAY_SENSES} (C{arrival window}, C{money down the drain}) a
    trade word names no trade at all;
  - a keyword that only qualifies another service's keyword names a place
    or a part, not the work: the C{kitchen faucet} is plumbing;
  - a keyword named as the place where something happened (C{the drain in
    our bathroom}, C{paint on the carpet}), as what got damaged (C{flooded
    our kitchen}, C{wet drywall}, C{now we have water damage}), as what
    another service's work was done on (C{painted the kitchen}) or as an
    item of a list another service heads (C{handyman day: shelves, a
    faucet}) counts only when the text names no service outright or as
    what failed (C{the toilet overflowed}), which in turn counts only when
    no service is named outright;
  - a service keyword's plural is found too (C{plumbers}, C{mini splits});
  - a name right after a word for the customer's own people (C{my neighbor
    Mike}, C{Sam, my cousin}) is that person, throughout the text;
  - the first word of a technician's full name, when no other technician's
    name starts with it and it is no other term, is an alias too; a name or
    alias of L{TYPO_MIN} letters or more is found with one typing slip (a
    letter missing, extra, wrong or two swapped, never the first) when no
    other technician's is one slip away and the word is written with a
    capital (or the whole text in lower case).

The rules cost a few microseconds a text: terms and word lists are matched
as character tries, and the words before a keyword are read backwards,
anchored at the keyword.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from functools import lru_cache
from itertools import repeat
from typing import Any

from attrs import frozen

from reviewsd.data.model import Business


@frozen
class Found:
    """What one text mentions: technician names, service ids, place names."""

    technicians: frozenset[str]
    services: frozenset[str]
    areas: frozenset[str]


NOTHING = Found(frozenset(), frozenset(), frozenset())

MATCHING_REVISION = 2
"""
Raised whenever the rules below change what is found for the same terms:
mentions cached under other rules are then found again.
"""

#: Everyday phrases in which a word a business may list as a service
#: keyword names no trade: they are matched like terms, and so hide the
#: keywords inside them, but mention nothing.
EVERYDAY_SENSES = (
    # a window of time
    "arrival window",
    "time window",
    "window of time",
    "hour window",
    "appointment window",
    "delivery window",
    "service window",
    "scheduling window",
    "window between",
    "out the window",
    # money and plans gone
    "money down the drain",
    "circling the drain",
    "pipe dream",
    "went through the roof",
    "go through the roof",
    "goes through the roof",
    "is through the roof",
    "was through the roof",
    "are through the roof",
    "were through the roof",
    "took a bath",
    # other figures of speech
    "under one roof",
    "under the same roof",
    "roof over our heads",
    "all hands on deck",
    "deck of cards",
    "break the mold",
    "breaks the mold",
    "broke the mold",
    "broken the mold",
    "deal breaker",
    "deal-breaker",
    "tie breaker",
    "ice breaker",
    "red carpet treatment",
    "rolled out the red carpet",
    "swept under the carpet",
    "paint a picture",
    "painted a picture",
    "paints a picture",
    "off the shelf",
    "off-the-shelf",
    "shelf life",
    "sink or swim",
    "everything but the kitchen sink",
    "creative outlet",
    "news outlet",
    "outlet mall",
    "baby shower",
    # things at a place, not the work on it
    "kitchen table",
    "porch light",
    "flashing lights",
    "flashing light",
    "toilet paper",
)

#: Words for a person of the customer's, not the business's: a name right
#: after one of them (and that name anywhere else in the text) is theirs.
#: Not the words a technician's own colleague goes by (partner, boss,
#: helper), nor "contractor".
PEOPLE = (
    "neighbor neighbour neighbors neighbours friend friends buddy pal "
    "brother sister brothers sisters husband wife son daughter sons daughters "
    "dad father mom mum mother uncle aunt cousin nephew niece grandson "
    "granddaughter grandpa grandma grandfather grandmother boyfriend "
    "girlfriend fiance fiancé fiancee fiancée roommate landlord tenant realtor "
    "agent inspector adjuster in-law"
).split()

#: Prepositions that name the place where something happened: a keyword
#: after one ("the drain in our bathroom") is a place.  "on", "in" and
#: "through" also say what the work was on or what was put in ("a great job
#: on our deck", "put in new floors", "got through our punch list"): not
#: after the words of L{_WORK}.
_PLACE = (
    "in inside into under underneath beneath behind around near on onto over "
    "below above across through throughout along beside"
).split() + ["next to", "all over"]
_WORK = (
    "work works worked working job jobs quote quoted estimate estimates bid "
    "bids price prices priced pricing warranty guarantee deal discount advice "
    "opinion update updates progress started finished done did spent spend "
    "cost costs money help helped put puts putting got get gets getting went "
    "go goes going came come comes brought bring moved called call"
).split()
#: Verbs whose object is what got damaged or spared, not the work: "the
#: dishwasher flooded our kitchen", "saved our carpet".  A determiner must
#: follow, so that "damaged drywall" (the work) is not one.
_HARM = (
    "flooded soaked ruined damaged destroyed stained scratched dented gouged "
    "chipped wrecked saved spared protected covered"
).split()
#: Adjectives for what water got into: "wet drywall" is the damage, the
#: restoration the work.
_WET = "wet damp soaked soggy waterlogged water-logged moldy mouldy".split()
#: What a text says the customer was left with: "now we have water damage".
_AFTERMATH = "caused causing cause causes".split() + [
    "led to",
    "leading to",
    "resulted in",
    "resulting in",
    "left us with",
    "now we have",
    "now there is",
    "now there's",
    "now we've got",
]
#: A failure of the thing named, which is then the cause of the work:
#: "after our toilet overflowed".
_FAILED = "overflowed overflowing burst failed failing broke died quit".split() + [
    "backed up",
    "backing up",
    "stopped working",
    "gave out",
    "sprang a leak",
]
_DETERMINER = "the our my his her their your a an this that its some".split()
_FUNCTION = (
    "and or but then to of for with was were is are be been had has have it "
    "they we he she i you not no so as at by if"
).split()


def _trie(terms: Iterable[str]) -> dict[str, Any]:
    """The terms as a trie of characters, white space as one " " step."""
    trie: dict[str, Any] = {}
    for term in terms:
        node = trie
        for i, word in enumerate(term.split()):
            if i:
                node = node.setdefault(" ", {})
            for char in word:
                node = node.setdefault(char, {})
        node[""] = {}
    return trie


def _alternatives(node: dict[str, Any]) -> str:
    """
    The regular expression of a trie node's continuations, longest first:
    at most one can match a text, so the first match is the longest, and
    hundreds of terms cost little more than a few.
    """
    branches = [
        (r"\s+" if key == " " else re.escape(key)) + _alternatives(child)
        for key, child in sorted(node.items())
        if key
    ]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if "" in node:
        return f"(?:{body})?"
    return body


def _any(words: Iterable[str]) -> str:
    """A regular expression for any of C{words}."""
    return f"(?:{_alternatives(_trie(words))})"


def _backwards(words: Iterable[str]) -> str:
    """A regular expression for any of C{words} spelled backwards."""
    return _any(w[::-1] for w in words)


# The words before a keyword are read backwards, from the keyword on, so
# that each is one anchored match rather than a search ending at the
# keyword: up to two words (say "upstairs", "guest") between the keyword
# and the preposition or verb (or its determiner), none of them a function
# word.
_FREE_WORDS = (
    rf"(?:\s+(?!{_backwards(_FUNCTION + _DETERMINER)}(?![\w'-]))[\w'-]+){{0,2}}"
)
_DETERMINED = rf"\s+{_backwards(_DETERMINER)}"
_SIDELINE_BEFORE = re.compile(
    rf"{_FREE_WORDS}(?:"
    rf"(?:{_DETERMINED})?\s+{_backwards(_PLACE)}"
    rf"(?:\s+(?P<work>{_backwards(_WORK)})(?![\w'-]))?"
    rf"|{_DETERMINED}\s+{_backwards(_HARM)}"
    rf"|(?:{_DETERMINED})?\s+{_backwards(_AFTERMATH)}"
    rf"|\s+{_backwards(_WET)}"
    rf")(?![\w-])"
)
_SIDELINE_AFTER = re.compile(rf"\s+(?:[\w'-]+\s+)?{_any(_FAILED)}(?!\w)")
_PEOPLE_BEFORE = re.compile(
    rf"\s*,?\s*(?:s')?(?:wal-ni-)?{_backwards(PEOPLE)}(?![\w-])"
)
_PEOPLE_AFTER = re.compile(
    rf"\s*(?:,|\(|-)\s*(?:{_any(_DETERMINER)}\s+)?{_any(PEOPLE)}(?!\w)"
)
_BETWEEN_COMPOUND = re.compile(r"[\s-]*")
_LIST = re.compile(r":\s")
_SENTENCE_ENDS = (". ", "! ", "? ", "\n")
_DETERMINER_BETWEEN = re.compile(rf"\s+{_any(_DETERMINER)}\s+")

#: A name this long or longer is found with one typing slip.
TYPO_MIN = 6

_SERVICES = "services"
_TECHNICIANS = "technicians"
_AREAS = "areas"


def fold(text: str) -> str:
    """The key two spellings share when they differ only in case."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=8)
def _pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    # A lookahead at every word start, so that every place a term starts is
    # seen; the longest term starting at a place is the one reported (find()
    # then keeps the leftmost-longest ones that do not overlap). Runs of
    # white space in a phrase match any white space; lookarounds rather than
    # \b, because terms may start or end with punctuation ("Mike R.", "A/C").
    # Matched against casefolded text, three times faster than IGNORECASE.
    # A thousand-odd terms (with the slips of names) make a pattern that takes
    # some 50 ms to build: kept for the last few sets of terms, since every
    # reload of unchanged business data asks for the same one.
    trie = _trie(terms)
    if not trie:
        return None
    return re.compile(rf"(?<!\w)(?=({_alternatives(trie)})(?!\w))")


def plural(term: str) -> str | None:
    """
    The regular plural of a keyword (C{plumber}: C{plumbers}, C{mini
    split}: C{mini splits}, C{GFCI}: C{GFCIs}), or None: for a keyword
    ending in punctuation or a short word (C{A/C}, C{AC}), or in "s"
    (C{gutters}), whose plural is irregular or the keyword itself.
    """
    words = term.split()
    last = words[-1] if words else ""
    if len(last) < 3 or not last.isalpha():
        return None
    if last.isupper():
        return term + "s"
    if not last.islower():
        return None
    if last.endswith(("s", "x", "z", "ch", "sh")):
        return None if last.endswith("s") else term + "es"
    if last.endswith("y") and last[-2] not in "aeiou":
        return term[:-1] + "ies"
    return term + "s"


def slips(word: str) -> set[str]:
    """
    Every spelling one typing slip away from C{word} (lower case): a letter
    missing, added, replaced, or two neighbours swapped, the first letter
    kept.
    """
    found: set[str] = set()
    for i in range(1, len(word) + 1):
        head, tail = word[:i], word[i:]
        if tail:
            found.add(head + tail[1:])
        if len(tail) > 1:
            found.add(head + tail[1] + tail[0] + tail[2:])
        for letter in string.ascii_lowercase:
            if tail:
                found.add(head + letter + tail[1:])
            found.add(head + letter + tail)
    found.discard(word)
    return found


class Matcher:
    """
    Finds a business's technicians (by name or alias), services (by name or
    keyword) and service areas in review texts.
    """

    def __init__(self, business: Business) -> None:
        self._owners: dict[str, list[tuple[str, str]]] = {}
        for technician in business.technicians:
            for term in (technician.name, *technician.aliases):
                self._own(term, _TECHNICIANS, technician.name)
        for service in business.services:
            for term in (service.name, *service.keywords):
                self._own(term, _SERVICES, service.id)
        for area in business.service_areas:
            self._own(area, _AREAS, area)
        given = set(self._owners)
        for first, name in _first_names(business):
            if first not in given:
                self._own(first, _TECHNICIANS, name)
        for service in business.services:
            for term in (service.name, *service.keywords):
                more = plural(term)
                if more is not None and fold(more) not in given:
                    self._own(more, _SERVICES, service.id)
        for phrase in EVERYDAY_SENSES:
            self._owners.setdefault(fold(phrase), [])
        self._typos = _typos(self._owners)
        self._pattern = _pattern(tuple(sorted({*self._owners, *self._typos})))
        self._terms = {
            term: tuple(
                frozenset(o for k, o in owners if k == kind)
                for kind in (_TECHNICIANS, _SERVICES, _AREAS)
            )
            for term, owners in self._owners.items()
        }
        self.technician_names = self._index(
            (t.name, t.name) for t in business.technicians
        ) | self._index(
            (alias, t.name) for t in business.technicians for alias in t.aliases
        )
        self.service_ids = self._index(
            (key, s.id) for s in business.services for key in (s.id, s.name)
        )

    def _own(self, term: str, kind: str, owner: str) -> None:
        if term.strip():
            owners = self._owners.setdefault(fold(term), [])
            if (kind, owner) not in owners:
                owners.append((kind, owner))

    @staticmethod
    def _index(pairs: Iterable[tuple[str, str]]) -> dict[str, frozenset[str]]:
        index: dict[str, set[str]] = {}
        for key, value in pairs:
            index.setdefault(fold(key), set()).add(value)
        return {key: frozenset(values) for key, values in index.items()}

    def technicians_called(self, name: str) -> frozenset[str]:
        """The technicians whose name or an alias is C{name}, in any case."""
        return self.technician_names.get(fold(name), frozenset())

    def services_called(self, key: str) -> frozenset[str]:
        """The service ids whose id or name is C{key}, in any case."""
        return self.service_ids.get(fold(key), frozenset())

    def find(self, text: str | None) -> Found:
        """What C{text} mentions, by the rules of the module docstring."""
        if not text or self._pattern is None:
            return NOTHING
        folded = text.casefold()
        spans = self._spans(text, folded)
        if not spans:
            return NOTHING
        backwards = folded[::-1]
        technicians = self._technicians(folded, backwards, spans)
        services = self._services(folded, backwards, spans)
        areas = {o for _, _, t in spans for o in self._terms[t][2]}
        if not (technicians or services or areas):
            return NOTHING
        return Found(
            technicians=frozenset(technicians),
            services=frozenset(services),
            areas=frozenset(areas),
        )

    def _spans(self, text: str, folded: str) -> list[tuple[int, int, str]]:
        """
        The leftmost-longest terms in C{folded}, the casefolded C{text}:
        start, end, term.  A name written with a slip counts where written
        with a capital, or where the whole text is in lower case.
        """
        assert self._pattern is not None
        owners, typos = self._owners, self._typos
        spans: list[tuple[int, int, str]] = []
        end = -1
        for match in self._pattern.finditer(folded):
            start = match.start()
            if start < end:
                continue
            found = match.group(1)
            term = found if found in owners else fold(found)
            if term not in owners:
                # a slip: casefolding must not have moved the offsets (ß)
                if len(text) != len(folded) or not (
                    text[start].isupper() or text.islower()
                ):
                    continue
                term = typos[term]
            end = start + len(found)
            spans.append((start, end, term))
        return spans

    def _technicians(
        self, folded: str, backwards: str, spans: list[tuple[int, int, str]]
    ) -> set[str]:
        """
        The technicians named, less the names another person bears.
        C{backwards} is C{folded} reversed.
        """
        named: list[tuple[str, str]] = []
        others: set[str] = set()
        terms = self._terms
        for start, end, term in spans:
            owners = terms[term][0]
            if not owners:
                continue
            back = len(folded) - start
            if _PEOPLE_BEFORE.match(backwards, back, back + 40) or (
                _PEOPLE_AFTER.match(folded, end, end + 40)
            ):
                others.add(term)
            named.extend((term, owner) for owner in owners)
        return {owner for term, owner in named if term not in others}

    def _services(
        self, folded: str, backwards: str, spans: list[tuple[int, int, str]]
    ) -> set[str]:
        """
        The services named outright; failing those, the ones named as what
        failed; failing those, the ones named as places (or as what another
        service's work was done on, or as an item of another's list).  A
        keyword that qualifies the next one counts for none.  C{backwards}
        is C{folded} reversed.
        """
        # each keyword's services and how plainly it names them: 0 as a
        # place, 1 as what failed, 2 outright
        found: list[tuple[int, frozenset[str], int]] = []
        terms = self._terms
        phrase = 0  # the first span of the run of adjacent terms at hand
        for i, (start, end, term) in enumerate(spans):
            if i and not _BETWEEN_COMPOUND.fullmatch(folded, spans[i - 1][1], start):
                phrase = i
            owners = terms[term][1]
            if not owners:
                continue
            if i + 1 < len(spans):
                after, _, following = spans[i + 1]
                qualified = terms[following][1]
                if (
                    qualified
                    and not qualified & owners
                    and _BETWEEN_COMPOUND.fullmatch(folded, end, after)
                ):
                    continue
            first = spans[phrase][0]
            plainness = _plainness(folded, backwards, first, end)
            if plainness and phrase:
                # the object of another service's work: "painted the kitchen"
                before, previous = spans[phrase - 1][1], spans[phrase - 1][2]
                if terms[previous][1] - owners and _DETERMINER_BETWEEN.fullmatch(
                    folded, before, first
                ):
                    plainness = 0
            found.append((start, owners, plainness))
        if ": " in folded:
            found = _listed(folded, found)
        named: tuple[set[str], set[str], set[str]] = (set(), set(), set())
        for _, owners, plainness in found:
            named[plainness].update(owners)
        return named[2] or named[1] or named[0]


def _listed(
    folded: str, found: list[tuple[int, frozenset[str], int]]
) -> list[tuple[int, frozenset[str], int]]:
    """
    C{found}, with the services of the items of a list that a service
    named outright heads ("a handyman day: shelves, a faucet, the tub";
    "kitchen remodel: cabinets, lighting, paint") named as its parts only.
    """
    for colon in _LIST.finditer(folded):
        head = max(map(folded.rfind, _SENTENCE_ENDS, repeat(0), repeat(colon.start())))
        tail = min(
            (
                i
                for i in map(folded.find, _SENTENCE_ENDS, repeat(colon.end()))
                if i >= 0
            ),
            default=len(folded),
        )
        job = frozenset().union(
            *(o for at, o, plain in found if head < at < colon.start() and plain == 2)
        )
        if job:
            found = [
                (
                    at,
                    owners,
                    0 if colon.end() <= at < tail and not owners & job else plain,
                )
                for at, owners, plain in found
            ]
    return found


def _plainness(folded: str, backwards: str, start: int, end: int) -> int:
    """
    How plainly the keyword at C{folded[start:end]} names the work: 0 when
    named as a place, what got damaged or what the customer was left with;
    1 when as what failed (the cause of the work, which may be the work);
    2 otherwise.
    """
    back = len(folded) - start
    before = _SIDELINE_BEFORE.match(backwards, back, back + 60)
    if before is not None and before.group("work") is None:
        return 0
    return 1 if _SIDELINE_AFTER.match(folded, end, end + 40) else 2


def _first_names(business: Business) -> list[tuple[str, str]]:
    """The first words of technicians' names no other technician shares."""
    firsts: dict[str, set[str]] = {}
    for technician in business.technicians:
        words = fold(technician.name).split()
        if len(words) > 1:
            firsts.setdefault(words[0], set()).add(technician.name)
    return [(first, next(iter(n))) for first, n in firsts.items() if len(n) == 1]


def _typos(owners: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """
    Spellings one slip away from a one-word technician term of at least
    L{TYPO_MIN} letters, to that term: none that is a term itself, nor one
    slip away from two technicians' terms.
    """
    claims: dict[str, set[tuple[str, str]]] = {}
    for term, kinds in owners.items():
        names = {o for k, o in kinds if k == _TECHNICIANS}
        if len(names) != 1 or len(term) < TYPO_MIN or not term.isalpha():
            continue
        (name,) = names
        for slip in slips(term):
            claims.setdefault(slip, set()).add((term, name))
    return {
        slip: min(terms)[0]
        for slip, terms in claims.items()
        if slip not in owners and len({n for _, n in terms}) == 1
    }
