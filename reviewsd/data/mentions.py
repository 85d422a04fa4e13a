"""
Which technicians, services and places a text mentions.

One matcher for search filters, insights and MCP lookups: names, aliases and
keywords are found as whole words or phrases, case-insensitively, so that
C{Dev} is not found in C{Devastated} and C{Mike R.} is found before a comma.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from attrs import frozen

from reviewsd.data.model import Business


@frozen
class Found:
    """What one text mentions: technician names, service ids, place names."""

    technicians: frozenset[str]
    services: frozenset[str]
    areas: frozenset[str]


NOTHING = Found(frozenset(), frozenset(), frozenset())


def fold(text: str) -> str:
    """The key two spellings share when they differ only in case."""
    return " ".join(text.casefold().split())


def _pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    # A lookahead at every word start, so that overlapping terms are all
    # found: "pipe" inside "burst pipe" too. Longest first, so that the
    # longest term starting at a place is the one reported; the shorter ones
    # it begins with come from _prefixes. Runs of white space in a phrase
    # match any white space; lookarounds rather than \b, because terms may
    # start or end with punctuation ("Mike R.", "A/C"). Matched against
    # casefolded text, three times faster than IGNORECASE.
    words = sorted(terms, key=len, reverse=True)
    if not words:
        return None
    alternatives = "|".join(r"\s+".join(map(re.escape, w.split())) for w in words)
    return re.compile(rf"(?<!\w)(?=({alternatives})(?!\w))")


def _prefixes(terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each term, the shorter terms it begins with as whole words."""
    terms = list(terms)
    return {
        term: tuple(
            t
            for t in terms
            if len(t) < len(term)
            and term.startswith(t)
            and not (term[len(t)].isalnum() or term[len(t)] == "_")
        )
        for term in terms
    }


class Matcher:
    """
    Finds a business's technicians (by name or alias), services (by name or
    keyword) and service areas in review texts.
    """

    def __init__(self, business: Business) -> None:
        self._owners: dict[str, list[tuple[str, str]]] = {}
        for technician in business.technicians:
            for term in (technician.name, *technician.aliases):
                self._own(term, "technicians", technician.name)
        for service in business.services:
            for term in (service.name, *service.keywords):
                self._own(term, "services", service.id)
        for area in business.service_areas:
            self._own(area, "areas", area)
        self._pattern = _pattern(self._owners)
        self._prefixes = _prefixes(self._owners)
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
            self._owners.setdefault(fold(term), []).append((kind, owner))

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
        if not text or self._pattern is None:
            return NOTHING
        found: dict[str, set[str]] = {
            "technicians": set(),
            "services": set(),
            "areas": set(),
        }
        for match in self._pattern.finditer(text.casefold()):
            term = fold(match.group(1))
            for each in (term, *self._prefixes.get(term, ())):
                for kind, owner in self._owners.get(each, ()):
                    found[kind].add(owner)
        if not any(found.values()):
            return NOTHING
        return Found(
            technicians=frozenset(found["technicians"]),
            services=frozenset(found["services"]),
            areas=frozenset(found["areas"]),
        )
