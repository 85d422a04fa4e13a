"""
What a derivation adds up: each review's contribution (L{Memo}) and the
running totals of a pass over the reviews, oldest first (L{Tally}), from
which L{reviewsd.insights.derive} computes the document.

A memo lives on the review's cache entry between derivations, with the
review's C{per_review} member as JSON, so that a derivation costs a pass
over the memos and the reviews analysed anew; once the document is
published, that JSON is a view of its bytes (L{share_per_review}).  The
cache's file keeps it too (L{Memo.stored}), so that a start reads it back
rather than making it again from the analysis; and it keeps the tally of a
checkpoint (L{Tally.stored}), so that a start adds up only the reviews after
it.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import chain, compress
from sys import intern
from typing import Any

import orjson

from reviewsd._version import __version__
from reviewsd.data.model import Business, Review
from reviewsd.insights.analysis import Analysis, AspectMention
from reviewsd.insights.cache import Mentions, ReviewCache
from reviewsd.insights.data import ASPECTS, PROBLEMS, TOPICS
from reviewsd.insights.prose import Candidate, quote_order
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    OPEN,
    POSITIVE_THRESHOLD,
    label,
    with_stars,
)
from reviewsd.insights.temporal import MonthTally, month_key
from reviewsd.insights.verdict import VERDICT_DIGEST, model

EXAMPLES = 5
#: Top phrases come from the newest mentions only, at most this many per
#: aspect or kind of problem, so that their cost does not grow with the data.
PHRASE_MENTIONS = 10_000


def pct(part: int, whole: int) -> float | None:
    """C{part} as a percentage of C{whole}, rounded to 1 place."""
    return round(100 * part / whole, 1) if whole else None


def exact_mean(values: list[float], places: int) -> float | None:
    """The mean, exactly summed: the same whatever order the values came in."""
    return round(math.fsum(values) / len(values), places) if values else None


def counted_problems(
    analysis: Analysis, rating: int
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """
    The kinds of complaint counted for a review, with their phrases (shared
    strings): from negative sentences in reviews rated 1 to 4, and from
    neutral ones too in reviews rated 1 or 2.
    """
    if rating == 5 or not analysis.problems:
        return ()
    counted = []
    for problem, sentences in analysis.problems:
        phrases: list[str] = []
        hit = False
        for compound, sentence_phrases in sentences:
            if compound <= NEGATIVE_THRESHOLD or (
                rating <= 2 and compound < POSITIVE_THRESHOLD
            ):
                hit = True
                phrases.extend(p for p in sentence_phrases if p not in phrases)
        if hit:
            counted.append((intern(problem), tuple(map(intern, phrases))))
    return tuple(counted)


#: Bumped when what a memo holds, or its stored form, changes.
MEMO_REVISION = 1

#: What a memo kept in the cache's file is valid for, beside its analysis,
#: stars and mentions: its form, the verdict's weights, and the release,
#: whose code writes the C{per_review} member.
MEMO_VERSION = (
    f"{MEMO_REVISION}-verdict-{VERDICT_DIGEST[:16]}-reviewsd-{__version__.public()}"
)


class Memo:
    """
    What one review contributes, for one rating: the parts of its analysis
    that a pass adds up, the very tuples the analysis holds.

    @ivar score: the review's score, on the side of its verdict: the text
        and the stars weighed by the trained model (L{model}).
    @ivar aspects: as L{Analysis.aspects}, the stars as evidence for the
        open ones (L{rated_aspects}).
    @ivar problems: C{(problem id, phrases)} for each kind of complaint
        counted for the review (L{counted_problems}).
    @ivar topics: as L{Analysis.topics}.
    @ivar mentions: the technicians, services and places the text names.
    @ivar quotes: as L{Analysis.quotes}; none below 4 stars, whose
        sentences are never quoted.
    @ivar json: the review's C{per_review} member (L{member_json}).
    """

    __slots__ = (
        "rating",
        "score",
        "aspects",
        "problems",
        "topics",
        "mentions",
        "quotes",
        "json",
    )

    def __init__(
        self, review_id: str, analysis: Analysis, mentions: Mentions, rating: int
    ) -> None:
        self.rating = rating
        self.score = model().score(analysis, rating)
        self.aspects = rated_aspects(analysis.aspects, rating)
        self.problems = counted_problems(analysis, rating)
        self.topics = analysis.topics
        self.mentions = mentions
        self.quotes = analysis.quotes if rating >= 4 else ()
        self.json: bytes | memoryview = member_json(
            review_id,
            analysis,
            self.score,
            self.aspects,
            [problem for problem, _ in self.problems],
            mentions,
        )

    def stored(self) -> tuple[str, bytes]:
        """
        The memo as the cache's file keeps it: a JSON array of the rating,
        score, aspects, problems, topics and quotes, and the member's JSON.
        L{from_stored} reads it back, for the same mentions.
        """
        held = [
            self.rating,
            self.score,
            self.aspects,
            self.problems,
            self.topics,
            self.quotes,
        ]
        return orjson.dumps(held).decode("utf-8"), bytes(self.json)

    @classmethod
    def from_stored(
        cls, review_id: str, stored: tuple[str, bytes], mentions: Mentions
    ) -> Memo | None:
        """
        The memo L{stored} kept, with C{mentions}; C{None} when C{stored}
        is not a memo of C{review_id}'s, to be made again.
        """
        held, json = stored
        if not json.startswith(orjson.dumps(review_id) + b':{"') or json[-1:] != b"}":
            return None
        try:
            rating, score, aspects, problems, topics, quotes = orjson.loads(held)
            if type(rating) is not int or not (
                score is None or type(score) in (float, int)
            ):
                return None
            memo = cls.__new__(cls)
            memo.rating = rating
            memo.score = score
            memo.aspects = tuple(
                [
                    (intern(aspect), value, tuple(map(intern, phrases)))
                    for aspect, value, phrases in aspects
                ]
            )
            memo.problems = tuple(
                [
                    (intern(problem), tuple(map(intern, phrases)))
                    for problem, phrases in problems
                ]
            )
            memo.topics = tuple(map(intern, topics))
            memo.quotes = tuple(
                [
                    (sentence, compound, tuple(map(intern, aspect_ids)))
                    for sentence, compound, aspect_ids in quotes
                ]
            )
        except (TypeError, ValueError):
            return None
        memo.mentions = mentions
        memo.json = json
        return memo


def rated_aspects(
    aspects: tuple[AspectMention, ...], rating: int
) -> tuple[AspectMention, ...]:
    """
    The aspects of an analysis with the stars as evidence for the open ones
    (L{with_stars}); the very tuple when none is open, as nearly always.
    """
    if all(abs(value) >= OPEN for _, value, _ in aspects):
        return aspects
    return tuple(
        [
            (aspect, with_stars(value, rating) or 0.0, phrases)
            for aspect, value, phrases in aspects
        ]
    )


def member_json(
    review_id: str,
    analysis: Analysis,
    score: float | None,
    aspects: tuple[AspectMention, ...],
    problems: list[str],
    mentions: Mentions,
) -> bytes:
    """
    One C{per_review} member: the review's id, then its entry (C{score} and
    C{aspects} with the stars as evidence).
    """
    technicians, services, areas = mentions
    entry = {
        "sentiment": None if score is None else {"score": score, "label": label(score)},
        "sentence_scores": analysis.sentence_scores,
        "aspects": [
            {"id": aspect, "score": value, "label": label(value)}
            for aspect, value, _ in aspects
        ],
        "topics": analysis.topics,
        "problems": problems,
        "mentions": {
            "technicians": technicians,
            "services": services,
            "areas": areas,
        },
    }
    return orjson.dumps({review_id: entry})[1:-1]


_RATING_ONLY = orjson.dumps(
    {
        "sentiment": None,
        "sentence_scores": [],
        "aspects": [],
        "topics": [],
        "problems": [],
        "mentions": {"technicians": [], "services": [], "areas": []},
    }
)


def rating_only_json(review_id: str) -> bytes:
    """The C{per_review} member of a review without text."""
    return orjson.dumps(review_id) + b":" + _RATING_ONLY


class Mentioned:
    """
    Reviews that mention one aspect or kind of problem, by ordinal (oldest
    first).
    """

    __slots__ = ("ordinals", "values", "phrases", "agrees")

    def __init__(self) -> None:
        self.ordinals: list[int] = []
        #: The aspect's score in each of those reviews.
        self.values: list[float] = []
        #: Each mention's phrases, and whether its sentiment agrees with
        #: the stars (positive at 4-5, negative at 1-3).
        self.phrases: list[tuple[str, ...]] = []
        self.agrees: list[bool] = []

    def copy(self) -> Mentioned:
        other = Mentioned()
        other.ordinals, other.values = self.ordinals[:], self.values[:]
        other.phrases, other.agrees = self.phrases[:], self.agrees[:]
        return other

    def counts(self) -> tuple[Counter[str], Counter[str]]:
        """The phrases of the newest mentions, and of those that agree."""
        phrases = self.phrases[-PHRASE_MENTIONS:]
        agreeing = compress(phrases, self.agrees[-PHRASE_MENTIONS:])
        return Counter(chain.from_iterable(phrases)), Counter(
            chain.from_iterable(agreeing)
        )


Index = dict[str, list[int]]
"""The ordinals of the reviews that mention each topic, technician, ...: by key."""


class Members:
    """
    The C{per_review} members of a run of reviews, newest first, as one
    piece of JSON: what a tally read back from the cache's file holds for
    the reviews it had added up (L{Tally.restored}), in place of their memos.
    """

    __slots__ = ("json",)

    def __init__(self, json: bytes) -> None:
        self.json: bytes | memoryview = json


class Tally:
    """
    What a pass over the reviews, oldest first, adds up: the document is
    computed from it.  Because a pass only appends, a copy taken part way
    is where the next derivation can start when its older reviews are the
    same objects (L{ReviewCache.checkpoint}).
    """

    __slots__ = (
        "ids",
        "ratings",
        "scores",
        "months",
        "aspects",
        "problems",
        "topics",
        "technicians",
        "services",
        "areas",
        "per_review",
        "quotes",
        "quoted_rating",
    )

    def __init__(self, business: Business) -> None:
        self.ids: list[str] = []
        self.ratings: list[int] = []
        self.scores: list[float | None] = []
        self.months: dict[int, MonthTally] = {}
        self.aspects = {a.id: Mentioned() for a in ASPECTS}
        self.problems = {p.id: Mentioned() for p in PROBLEMS}
        self.topics: Index = {t.id: [] for t in TOPICS}
        self.technicians: Index = {t.name: [] for t in business.technicians}
        self.services: Index = {s.id: [] for s in business.services}
        self.areas: Index = {a: [] for a in business.service_areas}
        #: Each review's C{per_review} member: its memo, or the JSON of a
        #: review without text; a tally read back from the cache's file
        #: holds the members of the reviews it had added up as one.
        self.per_review: list[Memo | Members | bytes] = []
        #: The best pull-quote candidate for each set of aspects (all that
        #: the choice between candidates of equal aspects depends on), from
        #: the best-rated reviews.
        self.quotes: dict[tuple[str, ...], Candidate] = {}
        self.quoted_rating = 4

    def copy(self, business: Business) -> Tally:
        other = Tally(business)
        other.ids, other.ratings = self.ids[:], self.ratings[:]
        other.scores, other.per_review = self.scores[:], self.per_review[:]
        other.months = {month: t.copy() for month, t in self.months.items()}
        other.aspects = {k: m.copy() for k, m in self.aspects.items()}
        other.problems = {k: m.copy() for k, m in self.problems.items()}
        other.topics, other.technicians, other.services, other.areas = (
            {name: ordinals[:] for name, ordinals in index.items()}
            for index in (self.topics, self.technicians, self.services, self.areas)
        )
        other.quotes, other.quoted_rating = dict(self.quotes), self.quoted_rating
        return other

    def stored(self) -> dict[str, Any]:
        """
        The tally as the cache's file keeps it, for reviews whose ids and
        stars are known beside it: JSON-ready, without the C{per_review}
        members, which the checkpoint keeps as one piece of JSON.
        """
        return {
            "scores": self.scores,
            "months": [
                [month, t.count, t.rating_sum, t.scores]
                for month, t in self.months.items()
            ],
            "aspects": {k: _stored(m) for k, m in self.aspects.items()},
            "problems": {k: _stored(m) for k, m in self.problems.items()},
            "topics": self.topics,
            "technicians": self.technicians,
            "services": self.services,
            "areas": self.areas,
            "quotes": [list(candidate) for candidate in self.quotes.values()],
            "quoted_rating": self.quoted_rating,
        }

    @classmethod
    def restored(
        cls,
        business: Business,
        reviews: list[Review],
        stored: dict[str, Any],
        members: bytes,
    ) -> Tally:
        """
        The tally L{stored} kept, after C{reviews} (oldest first), whose
        C{per_review} C{members} are given (newest first).

        @raise ValueError: C{stored} is not the tally of as many reviews,
            for C{business} (C{TypeError} and C{KeyError} too).
        """
        tally = cls(business)
        tally.ids = [review.id for review in reviews]
        tally.ratings = [review.rating for review in reviews]
        tally.scores = stored["scores"]
        if len(tally.scores) != len(reviews):
            raise ValueError("not the scores of as many reviews")
        for month, count, rating_sum, scores in stored["months"]:
            month_tally = tally.months[month] = MonthTally()
            month_tally.count, month_tally.rating_sum = count, rating_sum
            month_tally.scores = scores
        for group, name in ((tally.aspects, "aspects"), (tally.problems, "problems")):
            kept = stored[name]
            if kept.keys() != group.keys():
                raise ValueError(f"not the {name} of this release")
            for key, value in kept.items():
                group[key] = _restored(value)
        for index, name in (
            (tally.topics, "topics"),
            (tally.technicians, "technicians"),
            (tally.services, "services"),
            (tally.areas, "areas"),
        ):
            kept = stored[name]
            if kept.keys() != index.keys():
                raise ValueError(f"not the {name} of this business")
            index.update(kept)
        tally.quotes = {
            tuple(aspect_ids): Candidate(
                review_id, sentence, rating, compound, tuple(map(intern, aspect_ids))
            )
            for review_id, sentence, rating, compound, aspect_ids in stored["quotes"]
        }
        tally.quoted_rating = int(stored["quoted_rating"])
        tally.per_review = [Members(members)] if reviews else []
        return tally

    # --- adding up ---------------------------------------------------------

    def add_rating_only(self, review: Review) -> None:
        """Add a review without text: it counts for ratings and months only."""
        self.ids.append(review.id)
        self.ratings.append(review.rating)
        self.scores.append(None)
        self._month(review).add(review.rating, None)
        self.per_review.append(rating_only_json(review.id))

    def add(self, ordinal: int, review: Review, memo: Memo) -> None:
        """Add a review with text, the next one (C{ordinal}), by its memo."""
        rating = review.rating
        score = memo.score
        self.ids.append(review.id)
        self.ratings.append(rating)
        self.scores.append(score)
        self._month(review).add(rating, score)
        self.per_review.append(memo)
        aspects = self.aspects
        # whether an aspect's score agrees with the stars: positive at 4-5,
        # negative at 1-3
        agrees = POSITIVE_THRESHOLD.__le__ if rating >= 4 else NEGATIVE_THRESHOLD.__ge__
        for aspect, value, phrases in memo.aspects:
            mentioned = aspects.get(aspect)
            if mentioned is not None:
                mentioned.ordinals.append(ordinal)
                mentioned.values.append(value)
                mentioned.phrases.append(phrases)
                mentioned.agrees.append(agrees(value))
        problems = self.problems
        for problem, phrases in memo.problems:
            mentioned = problems.get(problem)
            if mentioned is not None:
                mentioned.ordinals.append(ordinal)
                mentioned.phrases.append(phrases)
                mentioned.agrees.append(False)
        technicians, services, areas = memo.mentions
        for index, names in (
            (self.topics, memo.topics),
            (self.technicians, technicians),
            (self.services, services),
            (self.areas, areas),
        ):
            for name in names:
                ordinals = index.get(name)
                if ordinals is not None:
                    ordinals.append(ordinal)
        if memo.quotes and rating >= self.quoted_rating:
            self._add_quotes(review, memo)

    def _month(self, review: Review) -> MonthTally:
        """The tally of the review's month."""
        month = month_key(review.date)
        month_tally = self.months.get(month)
        if month_tally is None:
            month_tally = self.months[month] = MonthTally()
        return month_tally

    def _add_quotes(self, review: Review, memo: Memo) -> None:
        """Keep the review's quotes that beat the candidates of their aspects."""
        rating = review.rating
        quotes = self.quotes
        if rating > self.quoted_rating:
            quotes.clear()
            self.quoted_rating = rating
        for sentence, compound, aspect_ids in memo.quotes:
            best = quotes.get(aspect_ids)
            if best is None or quote_order(review.id, sentence, compound) < best.order:
                quotes[aspect_ids] = Candidate(
                    review.id, sentence, rating, compound, aspect_ids
                )

    # --- figures -----------------------------------------------------------

    def figures(self, ordinals: list[int]) -> dict[str, Any]:
        """Statistics of the reviews at C{ordinals}, which mention something."""
        scores = [s for s in map(self.scores.__getitem__, ordinals) if s is not None]
        # a text of facts only ("Dev replaced the faucet in Tigard") neither
        # praises nor blames: it is not counted against the positive share
        opinions = [s for s in scores if s]
        count = len(ordinals)
        return {
            "mention_count": count,
            "average_rating": (
                round(sum(map(self.ratings.__getitem__, ordinals)) / count, 2)
                if count
                else None
            ),
            "sentiment_score": exact_mean(scores, 4),
            "positive_pct": pct(
                sum(map(POSITIVE_THRESHOLD.__le__, opinions)), len(opinions)
            ),
            "example_review_ids": self.newest(ordinals),
        }

    def newest(self, ordinals: list[int]) -> list[str]:
        """The ids of the newest reviews at C{ordinals}, newest first."""
        return [self.ids[o] for o in reversed(ordinals[-EXAMPLES:])]

    def per_review_json(self) -> bytes:
        """The C{per_review} object, newest first, as JSON."""
        return b"{%s}" % self.members_json()

    def members_json(self) -> bytes:
        """The members of the C{per_review} object, newest first, joined."""
        return b",".join([member(m) for m in reversed(self.per_review)])


def _stored(mentioned: Mentioned) -> list[list[Any]]:
    # only the newest mentions' phrases are ever counted (Mentioned.counts)
    return [
        mentioned.ordinals,
        mentioned.values,
        mentioned.phrases[-PHRASE_MENTIONS:],
        mentioned.agrees,
    ]


def _restored(stored: list[list[Any]]) -> Mentioned:
    ordinals, values, newest, agrees = stored
    count = len(ordinals)
    # kinds of problem have no values
    if (
        len(agrees) != count
        or len(values) not in (0, count)
        or len(newest) != min(count, PHRASE_MENTIONS)
    ):
        raise ValueError("mentions of unequal lengths")
    mentioned = Mentioned()
    mentioned.ordinals, mentioned.values, mentioned.agrees = ordinals, values, agrees
    mentioned.phrases = [()] * (count - len(newest))
    mentioned.phrases += [tuple(map(intern, p)) for p in newest]
    return mentioned


def member(held: Memo | Members | bytes) -> bytes | memoryview:
    """The C{per_review} member of what the tally holds for one review."""
    return held if isinstance(held, bytes) else held.json


def share_per_review(cache: ReviewCache, body: bytes, start: int) -> None:
    """
    Point the memos of C{cache}'s last derivation at their C{per_review}
    members in C{body}, the published document, where that derivation's
    C{per_review} value starts at C{start}: one copy of the members is
    held, not two.
    """
    members, cache.published = cache.published, None
    if members is None:
        return
    view = memoryview(body)
    offset = start + 1  # past the opening brace
    for held in reversed(members):
        size = len(member(held))
        if not isinstance(held, bytes):
            held.json = view[offset : offset + size]
        offset += size + 1
