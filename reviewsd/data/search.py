"""
Search: checking parameters (one code path for HTTP and MCP) and answering
them from an index built once per snapshot.

The index keeps the reviews in published order (newest first), so a date
window is a contiguous range found by bisection; ratings, technicians and
services have sorted postings; a text query is narrowed by a word index
when its words are rare, and otherwise tests every casefolded text in C.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import date
from itertools import compress, islice, repeat
from operator import contains
from typing import Any

from attrs import frozen

from reviewsd.data.mentions import Matcher
from reviewsd.data.model import Review

LIMIT_DEFAULT = 20
LIMIT_MAX = 100
QUERY_MAX_LENGTH = 200
NAME_MAX_LENGTH = 100

_INTEGER = re.compile(r"\A[+-]?[0-9]+\Z")
_NUMBER = re.compile(r"\A[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_DATE = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def fold_text(text: str) -> str:
    """How review texts and queries are compared: NFC, then Unicode casefold."""
    return unicodedata.normalize("NFC", text).casefold()


# --- parameters -------------------------------------------------------------


@frozen
class Issue:
    """One bad parameter, shaped for the C{issues} array of a 400 answer."""

    path: tuple[str, ...]
    code: str
    message: str
    details: tuple[tuple[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "path": list(self.path),
            "code": self.code,
            "message": self.message,
            **dict(self.details),
        }


class InvalidParameters(ValueError):
    def __init__(self, issues: Sequence[Issue]) -> None:
        super().__init__(issues)
        self.issues = list(issues)

    def as_json(self) -> dict[str, Any]:
        names = ", ".join(dict.fromkeys(i.path[0] for i in self.issues))
        return {
            "error": "invalid_parameters",
            "message": f"Invalid parameters: {names}. See issues for each.",
            "issues": [issue.as_json() for issue in self.issues],
        }


class _Bad(Exception):
    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(code, message)
        self.code, self.message, self.details = code, message, details


def _integer(value: object, low: int, high: int) -> int:
    if isinstance(value, str) and _INTEGER.match(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(
            "invalid_type", f"must be a whole number, got {value!r}", expected="integer"
        )
    return _bounded(value, low, high)


def _number(value: object, low: float, high: float) -> float:
    if isinstance(value, str) and _NUMBER.match(value):
        value = float(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
    ):
        raise _Bad(
            "invalid_type", f"must be a number, got {value!r}", expected="number"
        )
    return _bounded(value, low, high)


def _bounded(value: Any, low: Any, high: Any) -> Any:
    if value < low:
        raise _Bad("too_small", f"must be at least {low}, got {value}", minimum=low)
    if value > high:
        raise _Bad("too_big", f"must be at most {high}, got {value}", maximum=high)
    return value


def parse_date(value: object) -> date:
    """A YYYY-MM-DD calendar date, or L{_Bad} saying what is wrong."""
    if not isinstance(value, str) or not _DATE.match(value):
        raise _Bad("invalid_date", f"must be a date written YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _Bad("invalid_date", f"{value} is not a calendar date") from None


def date_parameter(name: str, value: object) -> date:
    """A date parameter on its own, such as a path segment."""
    try:
        return parse_date(value)
    except _Bad as bad:
        raise InvalidParameters(
            [Issue((name,), bad.code, f"{name} {bad.message}")]
        ) from None


def _string(maximum: int) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str):
            raise _Bad(
                "invalid_type", f"must be a string, got {value!r}", expected="string"
            )
        if not value.strip():
            raise _Bad("empty", "must not be empty")
        if len(value) > maximum:
            raise _Bad(
                "too_long", f"must be at most {maximum} characters", maximum=maximum
            )
        return value

    return check


_CHECKS: dict[str, Callable[[object], Any]] = {
    "rating": lambda v: _integer(v, 1, 5),
    "min_rating": lambda v: _number(v, 1, 5),
    "since": parse_date,
    "until": parse_date,
    "query": _string(QUERY_MAX_LENGTH),
    "mentions_technician": _string(NAME_MAX_LENGTH),
    "mentions_service": _string(NAME_MAX_LENGTH),
    "limit": lambda v: _integer(v, 1, LIMIT_MAX),
}
PARAMETERS = tuple(_CHECKS)


@frozen
class SearchQuery:
    rating: int | None = None
    min_rating: float | None = None
    since: date | None = None
    until: date | None = None
    query: str | None = None
    mentions_technician: str | None = None
    mentions_service: str | None = None
    limit: int = LIMIT_DEFAULT

    @classmethod
    def from_arguments(
        cls, arguments: Mapping[str, object], issues: list[Issue] | None = None
    ) -> SearchQuery:
        """
        Check typed arguments (MCP's JSON, or HTTP's strings); unknown names
        are ignored, C{None} means absent.

        @raise InvalidParameters: one issue per bad parameter.
        """
        issues = [] if issues is None else issues
        values: dict[str, Any] = {}
        for name, check in _CHECKS.items():
            value = arguments.get(name)
            if value is None:
                continue
            try:
                values[name] = check(value)
            except _Bad as bad:
                issues.append(
                    Issue(
                        (name,),
                        bad.code,
                        f"{name} {bad.message}",
                        tuple(bad.details.items()),
                    )
                )
        since, until = values.get("since"), values.get("until")
        if since is not None and until is not None and since > until:
            issues.append(
                Issue(
                    ("since",),
                    "invalid_range",
                    f"since ({since}) is later than until ({until})",
                )
            )
        if issues:
            raise InvalidParameters(issues)
        return cls(**values)

    @classmethod
    def from_query(cls, args: Mapping[bytes, Sequence[bytes]]) -> SearchQuery:
        """Check an HTTP query string: each parameter once, UTF-8, not empty."""
        issues: list[Issue] = []
        arguments: dict[str, object] = {}
        for raw, values in args.items():
            name = raw.decode("utf-8", "replace")
            if name not in _CHECKS:
                continue
            if len(values) != 1:
                issues.append(
                    Issue(
                        (name,),
                        "repeated",
                        f"{name} is given {len(values)} times; give it once",
                    )
                )
                continue
            try:
                text = values[0].decode("utf-8")
            except UnicodeDecodeError:
                issues.append(
                    Issue((name,), "invalid_encoding", f"{name} is not UTF-8")
                )
                continue
            if not text:
                issues.append(
                    Issue(
                        (name,),
                        "empty",
                        f"{name} must not be empty",
                    )
                )
                continue
            arguments[name] = text
        return cls.from_arguments(arguments, issues)


# --- the index --------------------------------------------------------------


def _union(lists: Iterable[Sequence[int]]) -> Sequence[int]:
    lists = list(lists)
    if len(lists) == 1:
        return lists[0]
    return sorted(set().union(*lists))


_WORD = re.compile(r"\w+")


class _Words:
    """
    Which reviews hold which words, to narrow a text query before testing
    it: the query's words must appear inside words of a matching review.

    Postings hold ordinals counted from the oldest review (ordinal M{o} is
    position M{size - 1 - o}), unboxed: adding newer reviews leaves every
    older review's ordinal as it was, so the index of the next snapshot
    shares the arrays of the words it did not add to.

    @param texts: the casefolded texts, by position.
    @param previous: the words of the snapshot before, whose C{keep} oldest
        reviews have the same texts as the oldest here: those are not
        indexed again.
    """

    def __init__(
        self,
        texts: Sequence[str],
        previous: _Words | None = None,
        keep: int = 0,
    ) -> None:
        size = len(texts)
        postings: dict[str, array[int]] = {}
        owned: set[str] = set()  # arrays made here, which may be appended to
        if previous is not None and keep:
            for word, ordinals in previous._postings.items():
                if ordinals[-1] < keep:
                    postings[word] = ordinals  # shared: never changed again
                else:
                    cut = bisect_left(ordinals, keep)
                    if cut:
                        postings[word] = ordinals[:cut]
                        owned.add(word)
        get, words = postings.get, _WORD.findall
        for ordinal in range(keep, size):
            for word in set(words(texts[-1 - ordinal])):
                found = get(word)
                if found is None:
                    postings[word] = array("i", (ordinal,))
                    owned.add(word)
                elif word in owned:
                    found.append(ordinal)
                else:
                    postings[word] = found + array("i", (ordinal,))
                    owned.add(word)
        self._postings: dict[str, array[int]] = postings
        self._size = size

    def candidates(self, needle: str) -> Sequence[int] | None:
        """
        Sorted ordinals that may hold C{needle}, or C{None} when the query
        is too broad for the word index to narrow it.

        A query word with non-word characters on both sides is a whole word
        of the text; one at the start of the query may end a longer word, one
        at the end may begin one, and a query of one word may be inside one.
        """
        best: Sequence[int] | None = None
        lists: list[Sequence[int]]
        for match in _WORD.finditer(needle):
            word = match.group()
            open_left, open_right = match.start() == 0, match.end() == len(needle)
            postings = self._postings
            if not (open_left or open_right):
                lists = [postings.get(word, [])]
            elif open_left and open_right:
                lists = [p for w, p in postings.items() if word in w]
            elif open_left:
                lists = [p for w, p in postings.items() if w.endswith(word)]
            else:
                lists = [p for w, p in postings.items() if w.startswith(word)]
            if sum(map(len, lists)) > self._size // 8:
                continue
            found = _union(lists) if lists else []
            if best is None or len(found) < len(best):
                best = found
        return best


Named = tuple[Collection[str], Collection[str], Collection[str]]
"""What a review mentions: technician names, service ids, place names."""


def _moved(positions: array[int], boundary: int, shift: int) -> array[int]:
    """The positions from C{boundary} on, each moved by C{shift}."""
    tail = positions[bisect_left(positions, boundary) :]
    return array("l", [p + shift for p in tail]) if shift else tail


class SearchIndex:
    """
    Built once per snapshot, off the reactor thread; read-only afterwards,
    but for the word index, which an index built from nothing gets later.

    @param mentions: what each review mentions, position for position, as
        the insights cache holds it.
    @param previous: the index of the snapshot before, with C{origin}: for
        each review, the position of its id there (-1 for a new id).  The
        casefolded text of a text seen there is taken from there; the
        postings of the oldest reviews, when they are the same objects with
        the same mentions as there, are the ones there, moved; the word
        index is that one's, extended.  Without C{previous}, there is no
        word index until L{index_words}: so that a daemon starts serving a
        second sooner at 100,000 reviews, testing texts one by one meanwhile.
    """

    def __init__(
        self,
        reviews: Sequence[Review],
        mentions: Sequence[Named],
        matcher: Matcher,
        previous: SearchIndex | None = None,
        origin: Sequence[int] = (),
    ) -> None:
        self.matcher = matcher
        self.size = size = len(reviews)
        self._reviews, self._mentions = reviews, mentions
        self._days = array("l", (-r.date.toordinal() for r in reviews))
        self._ratings = bytes(r.rating for r in reviews)
        self._texts: list[str] = []
        for position, review in enumerate(reviews):
            before = origin[position] if previous is not None else -1
            if (
                previous is not None
                and before >= 0
                and previous._reviews[before].text == review.text
            ):
                self._texts.append(previous._texts[before])
            else:
                self._texts.append(fold_text(review.text) if review.text else "")

        keep = 0
        if previous is not None:
            limit = min(size, previous.size)
            earlier, said = previous._reviews, previous._mentions
            while (
                keep < limit
                and reviews[-1 - keep] is earlier[-1 - keep]
                and mentions[-1 - keep] is said[-1 - keep]
            ):
                keep += 1
        # Postings give the candidates; one bit per technician or service in
        # a per-review mask checks the other mention filters in O(1).
        self._by_rating = {stars: array("l") for stars in range(1, 6)}
        self._postings: dict[tuple[str, str], array[int]] = {}
        self._bits: dict[tuple[str, str], int] = (
            dict(previous._bits) if previous is not None and keep else {}
        )
        self._masks: list[int] = []
        for position in range(size - keep):
            technicians, services, _ = mentions[position]
            self._by_rating[reviews[position].rating].append(position)
            mask = 0
            for key in [("technician", n) for n in technicians] + [
                ("service", i) for i in services
            ]:
                self._postings.setdefault(key, array("l")).append(position)
                mask |= self._bits.setdefault(key, 1 << len(self._bits))
            self._masks.append(mask)
        if previous is not None and keep:
            # the kept reviews are the last there and the last here
            boundary, shift = previous.size - keep, size - previous.size
            self._masks += previous._masks[boundary:]
            for stars, positions in previous._by_rating.items():
                self._by_rating[stars] += _moved(positions, boundary, shift)
            for key, positions in previous._postings.items():
                moved = _moved(positions, boundary, shift)
                if moved:
                    self._postings.setdefault(key, array("l")).extend(moved)
        self._words: _Words | None = None
        if previous is not None:
            extended = previous._words
            self._words = _Words(self._texts, extended, keep if extended else 0)
        # each rating's texts, for broad queries with a rating filter
        self._texts_by_rating = {
            stars: list(map(self._texts.__getitem__, positions))
            for stars, positions in self._by_rating.items()
        }

    @property
    def has_words(self) -> bool:
        return self._words is not None

    def index_words(self) -> None:
        """Build the word index of an index made without one (blocking)."""
        if self._words is None:
            self._words = _Words(self._texts)

    def window(self, since: date | None, until: date | None) -> tuple[int, int]:
        """Positions C{[start, stop)} of reviews dated within the bounds."""
        start = 0 if until is None else bisect_left(self._days, -until.toordinal())
        stop = (
            self.size if since is None else bisect_right(self._days, -since.toordinal())
        )
        return start, max(start, stop)

    def _mentioning(
        self, kind: str, names: frozenset[str]
    ) -> tuple[Sequence[int], int]:
        """The positions mentioning any of C{names}, and their bits."""
        keys = [(kind, name) for name in sorted(names) if (kind, name) in self._bits]
        bits = 0
        for key in keys:
            bits |= self._bits[key]
        return _union(self._postings[key] for key in keys) if keys else (), bits

    def search(self, q: SearchQuery) -> tuple[int, list[int]]:
        """
        C{(matched, positions)}: how many reviews match, and the first
        C{q.limit} of them, newest first.
        """
        start, stop = self.window(q.since, q.until)
        low = 1 if q.min_rating is None else math.ceil(q.min_rating)
        if q.rating is not None:
            low = max(low, q.rating)
        high = 5 if q.rating is None else q.rating
        if start >= stop or low > high:
            return 0, []

        postings: list[tuple[Sequence[int], int]] = []
        if q.mentions_technician is not None:
            names = self.matcher.technicians_called(q.mentions_technician)
            postings.append(self._mentioning("technician", names))
        if q.mentions_service is not None:
            ids = self.matcher.services_called(q.mentions_service)
            postings.append(self._mentioning("service", ids))
        needle = None if q.query is None else fold_text(q.query)

        if not postings and needle is None:
            return self._by_ratings(low, high, start, stop, q.limit)
        texts = self._texts
        if postings:
            postings.sort(key=lambda p: len(p[0]))
            first = postings[0][0]
            candidates: Iterable[int] = first[
                bisect_left(first, start) : bisect_left(first, stop)
            ]
            if needle is not None:
                candidates = [p for p in candidates if needle in texts[p]]
        else:
            assert needle is not None
            words = self._words
            narrowed = None if words is None else words.candidates(needle)
            if narrowed is None:
                return self._scan(needle, low, high, start, stop, q.limit)
            candidates = self._narrowed(narrowed, needle, start, stop)
        matched = list(candidates)
        if (low, high) != (1, 5):
            # in C too: a table of the allowed ratings, looked up per review
            allowed = bytes(low <= stars <= high for stars in range(6))
            matched = list(
                compress(
                    matched,
                    map(allowed.__getitem__, map(self._ratings.__getitem__, matched)),
                )
            )
        checks = [bits for _, bits in postings[1:]]
        if checks:
            masks = self._masks
            matched = [p for p in matched if all(masks[p] & b for b in checks)]
        return len(matched), matched[: q.limit]

    def _scan(
        self, needle: str, low: int, high: int, start: int, stop: int, limit: int
    ) -> tuple[int, list[int]]:
        """
        A query too broad for the word index, or asked before there is one:
        every text of the window with an allowed rating is tested, in loops
        that run in C. One pass counts
        the matches without listing them; a second lists the first
        C{limit}, stopping there.
        """
        if (low, high) == (1, 5):
            window = range(start, stop)
            count = sum(map(contains, islice(self._texts, start, stop), repeat(needle)))
            hits = map(contains, islice(self._texts, start, stop), repeat(needle))
            return count, list(islice(compress(window, hits), limit))
        count, runs = 0, []
        for stars in range(low, high + 1):
            rated = self._by_rating[stars]
            first, last = bisect_left(rated, start), bisect_left(rated, stop)
            texts = self._texts_by_rating[stars][first:last]
            count += sum(map(contains, texts, repeat(needle)))
            hits = map(contains, texts, repeat(needle))
            runs.append(compress(rated[first:last], hits))
        return count, list(islice(heapq.merge(*runs), limit))

    def _narrowed(
        self, narrowed: Sequence[int], needle: str, start: int, stop: int
    ) -> list[int]:
        """The positions in the window of the candidates that hold C{needle}."""
        texts = self._texts
        # positions [start, stop) are ordinals [size - stop, size - start)
        size, last = self.size, self.size - 1
        window = narrowed[
            bisect_left(narrowed, size - stop) : bisect_left(narrowed, size - start)
        ]
        return [last - o for o in reversed(window) if needle in texts[last - o]]

    def _by_ratings(
        self, low: int, high: int, start: int, stop: int, limit: int
    ) -> tuple[int, list[int]]:
        if (low, high) == (1, 5):
            return stop - start, list(range(start, min(stop, start + limit)))
        runs = []
        for stars in range(low, high + 1):
            postings = self._by_rating[stars]
            runs.append(
                postings[bisect_left(postings, start) : bisect_left(postings, stop)]
            )
        return sum(map(len, runs)), list(islice(heapq.merge(*runs), limit))

    def count_since(self, day: date) -> int:
        """How many reviews are dated on or after C{day}: they come first."""
        return self.window(day, None)[1]
