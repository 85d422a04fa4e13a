"""
The C{/insights.json} document, derived from a L{Dataset}.

L{derive_insights} is plain blocking Python, meant for a worker thread; the
same dataset, business and C{generated_at} always give an equal document
(every list has a stated order, floats are rounded), so the daemon's ETag
moves only when the content does.  Treat the returned document, and the
C{per_review} entries it shares with later derivations, as read-only.

Method
======

Sentences are scored with VADER (vaderSentiment) extended by a small domain
lexicon (L{reviewsd.insights.sentiment}); a score is VADER's C{compound}, in
-1..1, labelled C{positive} at >= 0.05, C{negative} at <= -0.05 and
C{neutral} between.  A review's score is the mean of its opinionated
sentences (|compound| >= 0.05), 0 when none is.  A sentence mentions an
aspect, topic or problem when it holds one of the cues of C{aspects.json},
C{topics.json} or C{problems.json} as whole words; an aspect's score in a
review is the mean compound of the sentences that mention it, not the
review's.  Technicians, services and service areas are found by
L{reviewsd.data.mentions.Matcher} (names, aliases, keywords; whole words,
case-insensitive).

Rating-only reviews (C{text} null) count in C{review_count}, C{date_range},
star ratings and C{temporal}; they mention nothing and have no sentiment, so
their C{per_review} sentiment is null and every sentiment figure leaves them
out.  A text without a sentence (only white space) is treated the same way.

Fields
======

Types: C{int}, C{number}, C{string}, C{null}.  C{pct} is a percentage
0..100 rounded to 1 place; C{score} is a number -1..1 rounded to 4 places;
C{rating} is a mean star rating 1..5 rounded to 2 places; C{ids} is a list
of at most 5 review ids, newest first.  Every "or null" is null exactly
when there is nothing to measure (no review, or no scored review).

  - C{version} (int): the schema version of this document, L{INSIGHTS_VERSION}.
  - C{generated_at} (string): as passed in (RFC 3339, from the data's
    modification time).
  - C{model} (string): the method and its versions, e.g. C{"reviewsd-lexicon/1
    (vaderSentiment 3.3.2 + domain lexicon v1; aspect taxonomy v1, topics v1,
    problems v1)"}.
  - C{method} (object): C{positive_threshold} (number, 0.05),
    C{negative_threshold} (number, -0.05), and C{review_score},
    C{aspect_score}, C{rating_only} (strings saying how those are computed).
  - C{review_count} (int): published reviews, rating-only ones included.
  - C{date_range} (object): C{earliest}, C{latest} (C{YYYY-MM-DD} or null).
  - C{overall_sentiment} (object): C{score} (score or null: the mean review
    score), C{positive_pct}, C{neutral_pct}, C{negative_pct} (pct or null:
    the scored reviews by label), C{scored_review_count} (int: reviews with
    a score).
  - C{aspects[]}: every aspect of the taxonomy, most mentioned first (ties in
    taxonomy order), each with C{id} (string), C{label} (string),
    C{mention_count} (int: reviews with a sentence that mentions it),
    C{positive_count}, C{neutral_count}, C{negative_count} (int: those
    reviews by the label of the aspect's score in them; they add up to
    C{mention_count}), C{positive_pct} (pct or null), C{score} (score or
    null: the mean of the per-review aspect scores), C{top_phrases} (up to 5
    strings: phrases of 2 or 3 words around the aspect's cues, casefolded
    but otherwise as customers wrote them, found in the most reviews first,
    among the 10,000 newest mentions) and C{example_review_ids} (ids).
  - C{entities} (object):
      - C{technicians[]}: every technician of the business, most mentioned
        first, then by name, each with C{name} (string), C{mention_count}
        (int: reviews naming them or an alias), C{average_rating} (rating or
        null), C{sentiment_score} (score or null: the mean score of those
        reviews), C{positive_pct} (pct or null: those reviews scored
        positive) and C{example_review_ids} (ids).
      - C{services[]}: every service of the business, most mentioned first,
        then by id, each with C{id} (string: what search's
        C{mentions_service} takes), C{name} (string) and the same figures.
      - C{service_areas[]}: every service area, most mentioned first, then
        by name, each with C{name} (string) and the same figures.
      - C{problems[]}: the kinds of complaint found at least once, most
        reviews first, then by id, each with C{id}, C{label} (strings),
        C{mention_count} (int: reviews rated 1-4 with a negative sentence,
        or rated 1-2 with a neutral one, that holds one of its cues; the
        negative sentences of 5-star reviews describe the trouble that was
        fixed, not a complaint), C{top_phrases} (up to 5 strings from those
        sentences, chosen as for aspects) and C{example_review_ids} (ids).
  - C{topics[]}: the recurring themes found at least once, most reviews
    first, then by id, each with C{id}, C{label} (strings) and the figures
    of technicians (C{mention_count} ... C{example_review_ids}).
  - C{temporal} (object):
      - C{monthly[]}: every month from the first review's to the last's,
        oldest first, months without reviews included, each with C{month}
        (C{YYYY-MM}), C{review_count} (int), C{average_rating} (rating or
        null) and C{sentiment_score} (score or null).
      - C{trend} (string): C{improving}, C{stable} or C{declining}.
      - C{trend_rule} (string): the rule, in words (see
        L{reviewsd.insights.temporal}).
      - C{trend_basis} (object, or null when there are no reviews):
        C{recent} and C{previous} (objects: C{from_month}, C{to_month}
        (C{YYYY-MM}), C{review_count} (int), C{average_rating} (rating or
        null)) and C{change} (number rounded to 2 places, or null when a
        period has no reviews).
  - C{per_review} (object): for every published review id, in the dataset's
    order (newest first), an object with C{sentiment} (C{{score, label}} or
    null), C{sentence_scores} (list of scores, one per sentence in text
    order; empty for rating-only reviews), C{aspects[]} (C{{id, score,
    label}} for each aspect a sentence mentions, by id), C{topics} (sorted
    ids), C{problems} (sorted ids of the kinds of complaint counted for the
    review) and C{mentions} (C{technicians}: names, C{services}: ids,
    C{areas}: names; each a sorted list).  C{label} is C{positive},
    C{neutral} or C{negative}.
  - C{faq[]}: eight C{{question, answer}} objects (strings) a prospective
    customer asks, answered from the figures above.
  - C{summary} (string): two to four sentences built from the figures.
  - C{pull_quote} (string or null): one sentence as written in a review: of
    the sentences of 30 to 120 characters scoring at least 0.5 in the
    best-rated reviews (5 stars when there are any, else 4), the one whose
    aspects customers praise most often; null when there is none.
  - C{pull_quote_review_id} (string or null): the review it comes from.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections import Counter
from itertools import chain, compress
from sys import intern
from typing import Any

import attrs
import orjson

from reviewsd import __version__
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import Business, Dataset, Review
from reviewsd.insights.analysis import Analysis
from reviewsd.insights.cache import Mentions, ReviewCache
from reviewsd.insights.data import ASPECTS, PROBLEMS, STOPWORDS, TOPICS, VERSIONS
from reviewsd.insights.prose import (
    Candidate,
    Figures,
    faq,
    pull_quote,
    quote_order,
    summary,
)
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    POSITIVE_THRESHOLD,
    VADER_VERSION,
    label,
)
from reviewsd.insights.temporal import (
    TREND_RULE,
    MonthTally,
    month_key,
    monthly,
    trend,
)
from reviewsd.memory import paused

#: Schema version of the document; bumped when the taxonomy changes.
INSIGHTS_VERSION = 1

MODEL = (
    f"reviewsd-lexicon/{INSIGHTS_VERSION} (vaderSentiment {VADER_VERSION} + "
    f"domain lexicon v{VERSIONS['sentiment_lexicon.json']}; aspect taxonomy "
    f"v{VERSIONS['aspects.json']}, topics v{VERSIONS['topics.json']}, problems "
    f"v{VERSIONS['problems.json']})"
)

METHOD = {
    "positive_threshold": POSITIVE_THRESHOLD,
    "negative_threshold": NEGATIVE_THRESHOLD,
    "review_score": (
        "Mean VADER compound score of the review's opinionated sentences "
        "(|compound| >= 0.05); 0 when no sentence carries sentiment."
    ),
    "aspect_score": (
        "Mean compound score of the sentences of a review that mention the "
        "aspect; aspect figures average these over the reviews."
    ),
    "rating_only": (
        "Reviews without text count for ratings and monthly figures but have "
        "no sentiment and are left out of every sentiment figure."
    ),
}

EXAMPLES = 5
TOP_PHRASES = 5
#: Top phrases come from the newest mentions only, at most this many per
#: aspect or kind of problem, so that their cost does not grow with the data.
PHRASE_MENTIONS = 10_000


def business_key(business: Business) -> str:
    """
    A fingerprint of what L{Matcher} matches (names, aliases, keywords,
    places) and of the reviewsd version that matches them.
    """
    value = [
        str(__version__),
        [[t.name, list(t.aliases)] for t in business.technicians],
        [[s.id, s.name, list(s.keywords)] for s in business.services],
        list(business.service_areas),
    ]
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def _mentions(matcher: Matcher, text: str) -> Mentions:
    found = matcher.find(text)
    return (
        tuple(sorted(found.technicians)),
        tuple(sorted(found.services)),
        tuple(sorted(found.areas)),
    )


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def _fmean(values: list[float], places: int) -> float | None:
    """The mean, exactly summed: the same whatever order the values came in."""
    return round(math.fsum(values) / len(values), places) if values else None


class _Mentioned:
    """
    Reviews that mention one aspect, kind of problem, topic, technician,
    service or place, by ordinal (oldest first).
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

    def copy(self) -> _Mentioned:
        other = _Mentioned()
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


class _Tally:
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
        "named",
        "per_review",
        "quotes",
        "quoted_rating",
    )

    def __init__(self, business: Business) -> None:
        self.ids: list[str] = []
        self.ratings: list[int] = []
        self.scores: list[float | None] = []
        self.months: dict[int, MonthTally] = {}
        self.aspects = {a.id: _Mentioned() for a in ASPECTS}
        self.problems = {p.id: _Mentioned() for p in PROBLEMS}
        #: topics, technicians, services and places, each by its key
        self.named: tuple[dict[str, list[int]], ...] = (
            {t.id: [] for t in TOPICS},
            {t.name: [] for t in business.technicians},
            {s.id: [] for s in business.services},
            {a: [] for a in business.service_areas},
        )
        #: Each review's C{per_review} member: its memo, or the JSON of a
        #: review without text.
        self.per_review: list[_Memo | bytes] = []
        #: The best pull-quote candidate for each set of aspects (all that
        #: the choice between candidates of equal aspects depends on), from
        #: the best-rated reviews.
        self.quotes: dict[tuple[str, ...], Candidate] = {}
        self.quoted_rating = 4

    def copy(self, business: Business) -> _Tally:
        other = _Tally(business)
        other.ids, other.ratings = self.ids[:], self.ratings[:]
        other.scores, other.per_review = self.scores[:], self.per_review[:]
        other.months = {month: t.copy() for month, t in self.months.items()}
        other.aspects = {k: m.copy() for k, m in self.aspects.items()}
        other.problems = {k: m.copy() for k, m in self.problems.items()}
        other.named = tuple(
            {name: ordinals[:] for name, ordinals in index.items()}
            for index in self.named
        )
        other.quotes, other.quoted_rating = dict(self.quotes), self.quoted_rating
        return other

    def figures(self, ordinals: list[int]) -> dict[str, Any]:
        """Statistics of the reviews at C{ordinals}, which mention something."""
        scores = [s for s in map(self.scores.__getitem__, ordinals) if s is not None]
        count = len(ordinals)
        return {
            "mention_count": count,
            "average_rating": (
                round(sum(map(self.ratings.__getitem__, ordinals)) / count, 2)
                if count
                else None
            ),
            "sentiment_score": _fmean(scores, 4),
            "positive_pct": _pct(
                sum(map(POSITIVE_THRESHOLD.__le__, scores)), len(scores)
            ),
            "example_review_ids": self.newest(ordinals),
        }

    def newest(self, ordinals: list[int]) -> list[str]:
        return [self.ids[o] for o in reversed(ordinals[-EXAMPLES:])]


@attrs.frozen
class Checkpoint:
    """
    A copy of the tally after the oldest reviews of one derivation: the
    reviews themselves (oldest first) and the business fingerprint it is
    valid for.
    """

    key: str
    reviews: tuple[Review, ...]
    tally: _Tally


def top_phrases(
    counts: Counter[str], opinions: Counter[str], limit: int = TOP_PHRASES
) -> list[str]:
    """
    The phrases found in the most reviews; ties go to the phrase found in
    more reviews where the mention's sentiment agrees with the stars
    (C{opinions}), then to the one with fewer stop words, then to three
    words over two, then alphabetically.  A phrase that shares two
    consecutive words with one already chosen is skipped, so that the list
    says different things.
    """
    if not counts:
        return []
    if len(counts) > 20 * limit:
        # Only phrases as frequent as the 20*limit-th can be chosen.
        floor = heapq.nlargest(20 * limit, counts.values())[-1]
        pool = [(p, n) for p, n in counts.items() if n >= floor]
    else:
        pool = list(counts.items())
    pool.sort(
        key=lambda pn: (
            -pn[1],
            -opinions.get(pn[0], 0),
            sum(w in STOPWORDS for w in pn[0].split()),
            abs(pn[0].count(" ") - 2),
            pn[0],
        )
    )
    chosen: list[str] = []
    seen: set[tuple[str, str]] = set()
    for phrase, _ in pool:
        words = phrase.split()
        pairs = set(zip(words, words[1:], strict=False))
        if pairs & seen:
            continue
        chosen.append(phrase)
        seen |= pairs
        if len(chosen) == limit:
            break
    return chosen


def _problems(analysis: Analysis, rating: int) -> list[tuple[str, list[str]]]:
    """
    The kinds of complaint counted for a review, with their phrases: from
    negative sentences in reviews rated 1 to 4, and from neutral ones too
    in reviews rated 1 or 2.
    """
    counted: list[tuple[str, list[str]]] = []
    if rating == 5:
        return counted
    for problem, sentences in analysis["p"]:
        phrases: list[str] = []
        hit = False
        for compound, sentence_phrases in sentences:
            if compound <= NEGATIVE_THRESHOLD or (
                rating <= 2 and compound < POSITIVE_THRESHOLD
            ):
                hit = True
                phrases.extend(p for p in sentence_phrases if p not in phrases)
        if hit:
            counted.append((problem, phrases))
    return counted


class _Memo:
    """
    What one review contributes, for one rating: kept on its cache entry
    between derivations, with its C{per_review} entry as JSON, so that a
    derivation costs a pass over these and the reviews analysed anew.
    Once published, that JSON is a view of the published document
    (L{share_per_review}).
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
        self.score = analysis["s"]
        # phrases and ids repeat across reviews: one string object each
        self.aspects = tuple(
            (
                intern(aspect),
                value,
                tuple(map(intern, phrases)),
                (value >= POSITIVE_THRESHOLD and rating >= 4)
                or (value <= NEGATIVE_THRESHOLD and rating <= 3),
            )
            for aspect, value, phrases in analysis["a"]
        )
        self.problems = tuple(
            (intern(problem), tuple(map(intern, phrases)))
            for problem, phrases in _problems(analysis, rating)
        )
        self.topics = tuple(map(intern, analysis["t"]))
        self.mentions = mentions
        # only the best-rated reviews' sentences can be the pull quote
        self.quotes = (
            tuple(
                (sentence, compound, tuple(map(intern, aspect_ids)))
                for sentence, compound, aspect_ids in analysis["q"]
            )
            if rating >= 4
            else ()
        )
        score = self.score
        technicians, services, areas = mentions
        self.json = _entry_json(
            review_id,
            {
                "sentiment": (
                    None if score is None else {"score": score, "label": label(score)}
                ),
                "sentence_scores": analysis["c"],
                "aspects": [
                    {"id": aspect, "score": value, "label": label(value)}
                    for aspect, value, _ in analysis["a"]
                ],
                "topics": analysis["t"],
                "problems": [problem for problem, _ in self.problems],
                "mentions": {
                    "technicians": technicians,
                    "services": services,
                    "areas": areas,
                },
            },
        )


def _member(held: _Memo | bytes) -> bytes | memoryview:
    return held if held.__class__ is bytes else held.json  # type: ignore[union-attr]


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
        size = len(_member(held))
        if held.__class__ is not bytes:
            held.json = view[offset : offset + size]  # type: ignore[union-attr]
        offset += size + 1


def _entry_json(review_id: str, value: dict[str, Any]) -> bytes:
    """One C{per_review} member: the review's id, then its entry."""
    return orjson.dumps({review_id: value})[1:-1]


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


#: How many of the newest reviews a derivation's checkpoint leaves out:
#: new reviews, and replies to recent ones, land there, so that the next
#: derivation adds up only those.
CHECKPOINT_DISTANCE = 2_000


def derive_insights(
    dataset: Dataset,
    matcher: Matcher,
    cache: ReviewCache,
    generated_at: str,
) -> dict[str, Any]:
    """
    The whole C{/insights.json} document for C{dataset} (see the module
    docstring for every field).  Texts not in C{cache} are analysed and
    added to it; reviews no longer published are dropped from it.  Saving
    the cache is the caller's business.
    """
    with paused():
        return _derive(dataset, matcher, cache, generated_at)


def _resume(
    reviews: tuple[Review, ...], key: str, checkpoint: Checkpoint | None
) -> int:
    """How many of the oldest reviews C{checkpoint} has added up already."""
    if checkpoint is None or checkpoint.key != key:
        return 0
    done = len(checkpoint.reviews)
    if done > len(reviews):
        return 0
    kept = checkpoint.reviews
    for ordinal in range(done):
        if reviews[-1 - ordinal] is not kept[ordinal]:
            return 0
    return done


def _derive(
    dataset: Dataset,
    matcher: Matcher,
    cache: ReviewCache,
    generated_at: str,
) -> dict[str, Any]:
    business = dataset.business
    key = business_key(business)
    reviews = dataset.reviews
    size = len(reviews)
    start = _resume(reviews, key, cache.checkpoint)
    tally = cache.checkpoint.tally.copy(business) if start else _Tally(business)
    if not start:
        cache.checkpoint = None  # of no more use, and holding old memos
    mark = max(start, size - CHECKPOINT_DISTANCE)

    ids, ratings, scores = tally.ids, tally.ratings, tally.scores
    months, aspects, problems = tally.months, tally.aspects, tally.problems
    per_review, quotes = tally.per_review, tally.quotes
    topics, technicians, services, areas = tally.named

    for ordinal in range(start, size):
        if ordinal == mark and mark > start:
            cache.checkpoint = Checkpoint(
                key, reviews[size - ordinal :][::-1], tally.copy(business)
            )
        review = reviews[-1 - ordinal]
        rating = review.rating
        review_id = review.id
        ids.append(review_id)
        ratings.append(rating)
        month = month_key(review.date)
        month_tally = months.get(month)
        if month_tally is None:
            month_tally = months[month] = MonthTally()
        text = review.text
        if text is None:
            scores.append(None)
            month_tally.add(rating, None)
            per_review.append(orjson.dumps(review_id) + b":" + _RATING_ONLY)
            continue
        entry = cache.entry(review_id, text)
        if entry.mentions_key != key or entry.mentions is None:
            cache.mentions(review_id, entry, key, lambda t=text: _mentions(matcher, t))
        memo = entry.memo
        if memo is None or memo.rating != rating:
            entry, analysis = cache.read(review_id, entry)
            mentions = cache.mentions(
                review_id, entry, key, lambda t=text: _mentions(matcher, t)
            )
            memo = entry.memo = _Memo(review_id, analysis, mentions, rating)
        score = memo.score
        scores.append(score)
        month_tally.add(rating, score)
        per_review.append(memo)

        for aspect, value, phrases, agrees in memo.aspects:
            mentioned = aspects.get(aspect)
            if mentioned is not None:
                mentioned.ordinals.append(ordinal)
                mentioned.values.append(value)
                mentioned.phrases.append(phrases)
                mentioned.agrees.append(agrees)
        for problem, phrases in memo.problems:
            mentioned = problems.get(problem)
            if mentioned is not None:
                mentioned.ordinals.append(ordinal)
                mentioned.phrases.append(phrases)
                mentioned.agrees.append(False)
        found_technicians, found_services, found_areas = memo.mentions
        for index, names in (
            (topics, memo.topics),
            (technicians, found_technicians),
            (services, found_services),
            (areas, found_areas),
        ):
            for name in names:
                ordinals = index.get(name)
                if ordinals is not None:
                    ordinals.append(ordinal)

        if memo.quotes and rating >= tally.quoted_rating:
            if rating > tally.quoted_rating:
                quotes.clear()
                tally.quoted_rating = rating
            for sentence, compound, aspect_ids in memo.quotes:
                candidate = (review_id, sentence, rating, compound, aspect_ids)
                best = quotes.get(aspect_ids)
                if best is None or quote_order(candidate) < quote_order(best):
                    quotes[aspect_ids] = candidate
    cache.retain(ids)
    cache.published = per_review

    scored = [s for s in scores if s is not None]
    positive = sum(map(POSITIVE_THRESHOLD.__le__, scored))
    negative = sum(map(NEGATIVE_THRESHOLD.__ge__, scored))
    overall_sentiment = {
        "score": _fmean(scored, 4),
        "positive_pct": _pct(positive, len(scored)),
        "neutral_pct": _pct(len(scored) - positive - negative, len(scored)),
        "negative_pct": _pct(negative, len(scored)),
        "scored_review_count": len(scored),
    }

    aspect_list = []
    for aspect in ASPECTS:
        mentioned = aspects[aspect.id]
        values = mentioned.values
        count = len(values)
        positive = sum(map(POSITIVE_THRESHOLD.__le__, values))
        negative = sum(map(NEGATIVE_THRESHOLD.__ge__, values))
        aspect_list.append(
            {
                "id": aspect.id,
                "label": aspect.label,
                "mention_count": count,
                "positive_count": positive,
                "neutral_count": count - positive - negative,
                "negative_count": negative,
                "positive_pct": _pct(positive, count),
                "score": _fmean(values, 4),
                "top_phrases": top_phrases(*mentioned.counts()),
                "example_review_ids": tally.newest(mentioned.ordinals),
            }
        )
    # Most mentioned first; sorted() is stable, so ties keep taxonomy order.
    aspect_list.sort(key=lambda a: -a["mention_count"])

    def ranked(items: list[dict[str, Any]], by: str) -> list[dict[str, Any]]:
        return sorted(items, key=lambda item: (-item["mention_count"], item[by]))

    entities = {
        "technicians": ranked(
            [
                {"name": name, **tally.figures(ordinals)}
                for name, ordinals in technicians.items()
            ],
            "name",
        ),
        "services": ranked(
            [
                {"id": s.id, "name": s.name, **tally.figures(services[s.id])}
                for s in business.services
            ],
            "id",
        ),
        "problems": ranked(
            [
                {
                    "id": p.id,
                    "label": p.label,
                    "mention_count": len(problems[p.id].ordinals),
                    "top_phrases": top_phrases(*problems[p.id].counts()),
                    "example_review_ids": tally.newest(problems[p.id].ordinals),
                }
                for p in PROBLEMS
                if problems[p.id].ordinals
            ],
            "id",
        ),
        "service_areas": ranked(
            [
                {"name": name, **tally.figures(ordinals)}
                for name, ordinals in areas.items()
            ],
            "name",
        ),
    }
    topic_list = ranked(
        [
            {"id": t.id, "label": t.label, **tally.figures(topics[t.id])}
            for t in TOPICS
            if topics[t.id]
        ],
        "id",
    )

    dates = [r.date for r in dataset.reviews]
    date_range = {
        "earliest": min(dates).isoformat() if dates else None,
        "latest": max(dates).isoformat() if dates else None,
    }
    trend_word, trend_basis = trend(months)
    figures = Figures(
        business_name=business.name,
        review_count=len(ids),
        date_range=date_range,
        ratings={stars: ratings.count(stars) for stars in range(1, 6)},
        overall=overall_sentiment,
        aspects=aspect_list,
        entities=entities,
        trend=trend_word,
        trend_basis=trend_basis,
    )
    quote, quote_id = pull_quote(list(quotes.values()), aspect_list)

    return {
        "version": INSIGHTS_VERSION,
        "generated_at": generated_at,
        "model": MODEL,
        "method": dict(METHOD),
        "review_count": len(ids),
        "date_range": date_range,
        "overall_sentiment": overall_sentiment,
        "aspects": aspect_list,
        "entities": entities,
        "topics": topic_list,
        "temporal": {
            "monthly": monthly(months),
            "trend": trend_word,
            "trend_rule": TREND_RULE,
            "trend_basis": trend_basis,
        },
        # already JSON: a hundred thousand entries are not worth objects
        "per_review": orjson.Fragment(
            b"{%s}" % b",".join([_member(m) for m in reversed(per_review)])
        ),
        "faq": faq(figures),
        "summary": summary(figures),
        "pull_quote": quote,
        "pull_quote_review_id": quote_id,
    }
