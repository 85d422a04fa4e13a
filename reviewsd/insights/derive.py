"""
The C{/insights.json} document, derived from a L{Dataset}.

L{derive_insights} is plain blocking Python, meant for a worker thread; the
same dataset, business and C{generated_at} always give an equal document
(every list has a stated order, floats are rounded), so the daemon's ETag
moves only when the content does.  Treat the returned document, and the
C{per_review} entries it shares with later derivations, as read-only.

Method
======

Each sentence is cut into clauses at contrast words and punctuation
(L{reviewsd.insights.clauses}); each clause is scored with VADER
(vaderSentiment), extended by a domain lexicon and by the implicit outcomes
of C{outcomes.json} (L{reviewsd.insights.sentiment}); a score is VADER's
C{compound}, in -1..1, labelled C{positive} at >= 0.05, C{negative} at <=
-0.05 and C{neutral} between.  The clause after a turn ("but", "however")
weighs 1.5, a conceded one ("although ...") 0.5; a sentence's score is the
weighted mean of its opinionated clauses, a review's the weighted mean of
its opinionated sentences, 0 when none is.  A clause mentions an aspect,
topic or problem when it holds one of the cues of C{aspects.json},
C{topics.json}, C{problems.json} or C{outcomes.json} as whole words; an
aspect counts for a review only where its clause carries an opinion, and
its score is the weighted mean of those clauses' scores, not the review's.
A review's label weighs its text and its stars
(L{reviewsd.insights.verdict}): a text without any opinion is neutral, a
clear one-sided text keeps its own label, and the others are labelled by
a small logistic regression over the text's features and the stars,
trained on labelled reviews; the review's score then takes the label's
side.  An aspect's score strictly between -0.15 and 0.15, not 0, takes the
side of 4-5 stars or 1-2 stars (L{reviewsd.insights.sentiment.with_stars}).
Technicians, services and service areas are found by
L{reviewsd.data.mentions.Matcher}.

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
    C{negative_threshold} (number, -0.05), C{review_score},
    C{aspect_score}, C{stars}, C{rating_only} (strings saying how those
    are computed) and C{evaluation} (object: how the analysis agrees with
    human readers on the labelled reviews, C{held_out} and C{development}
    figures, and C{limits}, what it cannot do; C{measured.json}).
  - C{review_count} (int): published reviews, rating-only ones included.
  - C{date_range} (object): C{earliest}, C{latest} (C{YYYY-MM-DD} or null).
  - C{overall_sentiment} (object): C{score} (score or null: the mean review
    score), C{positive_pct}, C{neutral_pct}, C{negative_pct} (pct or null:
    the scored reviews by label), C{scored_review_count} (int: reviews with
    a score).
  - C{aspects[]}: every aspect of the taxonomy, most mentioned first (ties in
    taxonomy order), each with C{id} (string), C{label} (string),
    C{mention_count} (int: reviews with a clause that gives it an opinion),
    C{positive_count}, C{neutral_count}, C{negative_count} (int: those
    reviews by the label of the aspect's score in them; they add up to
    C{mention_count}), C{positive_pct} (pct or null), C{score} (score or
    null: the mean of the per-review aspect scores), C{top_phrases} (up to 5
    strings: phrases of 2 or 3 words around the aspect's cues inside their
    clause, holding a word of opinion and neither beginning nor ending
    mid-thought, casefolded but otherwise as customers wrote them, found in
    the most reviews first, among the 10,000 newest mentions) and
    C{example_review_ids} (ids).
  - C{entities} (object):
      - C{technicians[]}: every technician of the business, most mentioned
        first, then by name, each with C{name} (string), C{mention_count}
        (int: reviews naming them or an alias), C{average_rating} (rating or
        null), C{sentiment_score} (score or null: the mean score of those
        reviews), C{positive_pct} (pct or null: the share of those reviews
        scored positive, of those with an opinion; a text of facts only
        neither praises nor blames; null when none has one) and
        C{example_review_ids} (ids).
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
    null; the review's score with the stars as evidence for an open text),
    C{sentence_scores} (list of scores, one per sentence in text order, from
    the text alone; empty for rating-only reviews), C{aspects[]} (C{{id,
    score, label}} for each aspect the text gives an opinion on, by id),
    C{topics} (sorted
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
from array import array
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any

import attrs
import orjson

from reviewsd import __version__
from reviewsd.data.mentions import MATCHING_REVISION, Matcher
from reviewsd.data.model import Business, Dataset, Review
from reviewsd.insights.cache import Entry, ReviewCache, mentions_in
from reviewsd.insights.data import (
    ASPECTS,
    MEASURED,
    PROBLEMS,
    STOPWORDS,
    TOPICS,
    VERSIONS,
)
from reviewsd.insights.detector import DETECTOR_DIGEST, TONE_SCORE
from reviewsd.insights.prose import Figures, faq, pull_quote, summary
from reviewsd.insights.sentiment import (
    NEGATIVE_THRESHOLD,
    OPEN,
    POSITIVE_THRESHOLD,
    VADER_VERSION,
)
from reviewsd.insights.tally import Memo, Tally, exact_mean, pct
from reviewsd.insights.temporal import TREND_RULE, monthly, trend
from reviewsd.insights.verdict import model as verdict_model
from reviewsd.memory import paused

#: Schema version of the document; bumped when the taxonomy changes.
INSIGHTS_VERSION = 1

MODEL = (
    f"reviewsd-lexicon/{INSIGHTS_VERSION} (clauses + vaderSentiment {VADER_VERSION} "
    f"+ domain lexicon v{VERSIONS['sentiment_lexicon.json']} + implicit outcomes "
    f"v{VERSIONS['outcomes.json']}; aspect taxonomy v{VERSIONS['aspects.json']}, "
    f"topics v{VERSIONS['topics.json']}, problems v{VERSIONS['problems.json']}; "
    f"aspect detector and tone {DETECTOR_DIGEST[:12]}; "
    f"review verdict v{verdict_model().version})"
)

METHOD = {
    "positive_threshold": POSITIVE_THRESHOLD,
    "negative_threshold": NEGATIVE_THRESHOLD,
    "review_score": (
        "Each sentence is cut into clauses at contrast words (but, although, "
        "though, however, except, yet) and punctuation; each clause is scored "
        "by VADER with a domain lexicon and the implicit outcomes of "
        "outcomes.json ('still leaks', 'cracked within a month', 'found what "
        "two others missed'). The clause after a turn weighs 1.5, a conceded "
        "one 0.5. A sentence's score is the weighted mean of its opinionated "
        "clauses, the review's the weighted mean of its opinionated sentences; "
        "0 when none is."
    ),
    "aspect_score": (
        "The lexicon finds an aspect where one of its cues is in a clause that "
        "carries an opinion; its score in a review is the weighted mean of "
        "those clauses' scores (a cue in a clause without one takes its "
        "neighbour's in the same clause of the sentence). A trained detector "
        "(one logistic regression per aspect over the review's words, word "
        "pairs, cues and the lexicon's findings; detector.json) then decides "
        "which aspects the review gives an opinion on: one the lexicon found "
        "keeps its score; one it adds takes the side a second regression "
        "reads in the sentence that is the strongest evidence for it, from -1 "
        "to 1. A text with no opinion, neither the lexicon's nor its tone's, "
        "names no aspect. Aspect figures average these over the reviews."
    ),
    "stars": (
        f"A review's label weighs its text and its stars. Where the lexicon "
        f"reads no opinion, a trained regression reads the tone of the words "
        f"(positive, neutral or negative); when it is sure of a side, the text "
        f"takes that side's least score ({TONE_SCORE}). A text without any "
        f"opinion is neutral, and a clear one (a score at least {OPEN} from 0, "
        f"every sentence on its side, no clause against it) keeps its own "
        f"label, whatever the stars. The others (faint words such as 'fine', "
        f"praise and complaint together, sarcasm, sentences the lexicon reads "
        f"no opinion in) are labelled by a multinomial logistic regression "
        f"over the star rating and the text's features (its score by side, "
        f"praise and blame together, the share of sentences without an "
        f"opinion, the kinds of problem named) crossed with the stars, fitted "
        f"on hand-labelled reviews the lexicon was not written against "
        f"(verdict.json); the review's score then takes the label's side. An "
        f"aspect's score between -{OPEN} and {OPEN}, not 0, takes the side of "
        f"4-5 stars (positive) or 1-2 (negative)."
    ),
    "rating_only": (
        "Reviews without text count for ratings and monthly figures but have "
        "no sentiment and are left out of every sentiment figure."
    ),
    "evaluation": MEASURED,
}

TOP_PHRASES = 5

#: How many of the newest reviews a derivation's checkpoint leaves out:
#: new reviews, and replies to recent ones, land there, so that the next
#: derivation adds up only those.
CHECKPOINT_DISTANCE = 2_000


def business_key(business: Business) -> str:
    """
    A fingerprint of what L{Matcher} matches (names, aliases, keywords,
    places) and of the reviewsd version and rules that match them.
    """
    value = [
        str(__version__),
        MATCHING_REVISION,
        [[t.name, list(t.aliases)] for t in business.technicians],
        [[s.id, s.name, list(s.keywords)] for s in business.services],
        list(business.service_areas),
    ]
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


#: Bumped when a checkpoint's stored form (L{Checkpoint.stored}) changes.
CHECKPOINT_REVISION = 1


@attrs.frozen
class Checkpoint:
    """
    A copy of the tally after the oldest reviews of one derivation: the
    reviews themselves (oldest first) and the business fingerprint it is
    valid for.

    @ivar lineage: shared by the checkpoints each made by a derivation
        that started at the one before: each still holds where a later one
        does, for the reviews it added up are the same.
    """

    key: str
    reviews: tuple[Review, ...]
    tally: Tally
    lineage: object = attrs.field(factory=object, eq=False)

    def mark(self) -> tuple[object, int]:
        """What the cache remembers of the checkpoint its file holds."""
        return self.lineage, len(self.reviews)

    def supersedes(self, saved: tuple[object, int] | None) -> bool:
        """
        Whether a file holding the checkpoint C{saved} names (L{mark})
        should be given this one: unless that one still holds and is less
        than L{CHECKPOINT_DISTANCE} reviews behind, so that a reload of
        newer reviews does not write a checkpoint each time.
        """
        if saved is None:
            return True
        lineage, size = saved
        return (
            lineage is not self.lineage
            or len(self.reviews) - size >= CHECKPOINT_DISTANCE
        )

    def stored(self) -> tuple[bytes, bytes]:
        """
        The checkpoint as the cache's file keeps it (L{restored} reads it
        back): its tally, with a digest of its reviews instead of them, and
        their C{per_review} members, newest first.
        """
        value = {
            "revision": CHECKPOINT_REVISION,
            "key": self.key,
            "count": len(self.reviews),
            "digest": reviews_digest(self.reviews),
            "tally": self.tally.stored(),
        }
        return orjson.dumps(value), self.tally.members_json()


def reviews_digest(reviews: Sequence[Review]) -> str:
    """
    A SHA-256 of what each of C{reviews} brings to a tally beside its
    memo, and of what its memo is made from: id, stars, date and text.
    """
    # a few lists, each hashed at once in C
    ids = [review.id for review in reviews]
    texts = [review.text for review in reviews]
    digest = hashlib.sha256()
    for numbers in (
        map(len, ids),
        [review.rating for review in reviews],
        [review.date.toordinal() for review in reviews],
        [-1 if text is None else len(text) for text in texts],
    ):
        digest.update(array("q", numbers).tobytes())
    for strings in (ids, [text or "" for text in texts]):
        digest.update("".join(strings).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def restored(dataset: Dataset, key: str, cache: ReviewCache) -> Checkpoint | None:
    """
    The checkpoint the cache's file kept (L{ReviewCache.stored_checkpoint}),
    when it still holds for the oldest of C{dataset}'s reviews, with the
    business fingerprint C{key}: their ids, stars, dates and texts are the
    same.  (The file keeps it with the memos of the same version.)
    """
    stored, cache.stored_checkpoint = cache.stored_checkpoint, None
    if stored is None:
        return None
    raw, members = stored
    try:
        value = orjson.loads(raw)
        count = value["count"]
        if (
            value["revision"] != CHECKPOINT_REVISION
            or value["key"] != key
            or not 0 < count <= len(dataset.reviews)
        ):
            return None
        reviews = dataset.reviews[len(dataset.reviews) - count :][::-1]
        if value["digest"] != reviews_digest(reviews):
            return None
        newest = orjson.dumps(reviews[-1].id) + b":{"
        if not (members.startswith(newest) and members.endswith(b"}")):
            return None
        tally = Tally.restored(dataset.business, list(reviews), value["tally"], members)
    except (ValueError, TypeError, KeyError):
        return None
    return Checkpoint(key, reviews, tally)


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
        tally = _add_up(dataset, matcher, cache)
        cache.retain(tally.ids)
        cache.published = tally.per_review
        return _document(dataset, tally, generated_at)


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


def _add_up(dataset: Dataset, matcher: Matcher, cache: ReviewCache) -> Tally:
    """
    The tally of every review, oldest first: from the cache's checkpoint
    when it still holds (the last derivation's, or at a start the one its
    file kept), leaving there a new one L{CHECKPOINT_DISTANCE} reviews from
    the newest.
    """
    business = dataset.business
    key = business_key(business)
    reviews = dataset.reviews
    size = len(reviews)
    checkpoint = restored(dataset, key, cache)
    if checkpoint is not None:
        cache.adopt(checkpoint)
    start = _resume(reviews, key, cache.checkpoint)
    tally = cache.checkpoint.tally.copy(business) if start else Tally(business)
    if not start:
        cache.checkpoint = None  # of no more use, and holding old memos
    mark = max(start, size - CHECKPOINT_DISTANCE)
    # the texts this derivation reads, all at once for a cache with workers
    cache.prepare(
        ((review.id, review.text) for review in reviews[: size - start] if review.text),
        business,
        key,
    )
    cache.recall(review.id for review in reviews[: size - start] if review.text)
    for ordinal in range(start, size):
        if ordinal == mark and mark > start:
            cache.checkpoint = Checkpoint(
                key,
                reviews[size - ordinal :][::-1],
                tally.copy(business),
                cache.checkpoint.lineage if start else object(),
            )
        review = reviews[-1 - ordinal]
        text = review.text
        if text is None:
            tally.add_rating_only(review)
            continue
        entry = cache.entry(review.id, text)
        memo: Memo | None = entry.memo
        if (
            memo is None
            or memo.rating != review.rating
            or entry.mentions_key != key
            or entry.mentions is None
        ):
            memo = _memo(review, text, entry, key, matcher, cache)
        tally.add(ordinal, review, memo)
    return tally


def _memo(
    review: Review,
    text: str,
    entry: Entry,
    key: str,
    matcher: Matcher,
    cache: ReviewCache,
) -> Memo:
    """
    What C{review} contributes, when its cache C{entry} has no memo for it
    in memory: the one the cache's file kept, or one made from the analysis
    when the text is new, or its stars or the business fingerprint C{key}
    changed.
    """
    review_id = review.id
    find = partial(mentions_in, matcher, text)
    if entry.mentions_key != key or entry.mentions is None:
        cache.mentions(review_id, entry, key, find)  # and forgets the memo
    memo: Memo | None = entry.memo
    if memo is None and entry.kept is not None and entry.mentions is not None:
        memo = entry.memo = Memo.from_stored(review_id, entry.kept, entry.mentions)
        entry.kept = None
    if memo is None or memo.rating != review.rating:
        entry, analysis = cache.read(review_id, entry)
        mentions = entry.mentions
        if entry.mentions_key != key or mentions is None:  # a new entry
            mentions = cache.mentions(review_id, entry, key, find)
        memo = Memo(review_id, analysis, mentions, review.rating)
        cache.remember(review_id, entry, memo)
    return memo


def _document(dataset: Dataset, tally: Tally, generated_at: str) -> dict[str, Any]:
    """The document, from the tally of C{dataset}'s reviews."""
    overall_sentiment = _overall_sentiment(tally.scores)
    aspects = _aspects(tally)
    entities = _entities(tally, dataset.business)
    dates = [r.date for r in dataset.reviews]
    date_range = {
        "earliest": min(dates).isoformat() if dates else None,
        "latest": max(dates).isoformat() if dates else None,
    }
    trend_word, trend_basis = trend(tally.months)
    figures = Figures(
        business_name=dataset.business.name,
        review_count=len(tally.ids),
        date_range=date_range,
        ratings={stars: tally.ratings.count(stars) for stars in range(1, 6)},
        overall=overall_sentiment,
        aspects=aspects,
        entities=entities,
        trend=trend_word,
        trend_basis=trend_basis,
    )
    quote, quote_id = pull_quote(list(tally.quotes.values()), aspects)
    return {
        "version": INSIGHTS_VERSION,
        "generated_at": generated_at,
        "model": MODEL,
        "method": dict(METHOD),
        "review_count": len(tally.ids),
        "date_range": date_range,
        "overall_sentiment": overall_sentiment,
        "aspects": aspects,
        "entities": entities,
        "topics": _topics(tally),
        "temporal": {
            "monthly": monthly(tally.months),
            "trend": trend_word,
            "trend_rule": TREND_RULE,
            "trend_basis": trend_basis,
        },
        # already JSON: a hundred thousand entries are not worth objects
        "per_review": orjson.Fragment(tally.per_review_json()),
        "faq": faq(figures),
        "summary": summary(figures),
        "pull_quote": quote,
        "pull_quote_review_id": quote_id,
    }


def _overall_sentiment(scores: Sequence[float | None]) -> dict[str, Any]:
    """The C{overall_sentiment} group: the scored reviews by label."""
    scored = [s for s in scores if s is not None]
    positive = sum(map(POSITIVE_THRESHOLD.__le__, scored))
    negative = sum(map(NEGATIVE_THRESHOLD.__ge__, scored))
    return {
        "score": exact_mean(scored, 4),
        "positive_pct": pct(positive, len(scored)),
        "neutral_pct": pct(len(scored) - positive - negative, len(scored)),
        "negative_pct": pct(negative, len(scored)),
        "scored_review_count": len(scored),
    }


def _aspects(tally: Tally) -> list[dict[str, Any]]:
    """The C{aspects} group: every aspect, most mentioned first."""
    aspects: list[dict[str, Any]] = []
    for aspect in ASPECTS:
        mentioned = tally.aspects[aspect.id]
        values = mentioned.values
        count = len(values)
        positive = sum(map(POSITIVE_THRESHOLD.__le__, values))
        negative = sum(map(NEGATIVE_THRESHOLD.__ge__, values))
        aspects.append(
            {
                "id": aspect.id,
                "label": aspect.label,
                "mention_count": count,
                "positive_count": positive,
                "neutral_count": count - positive - negative,
                "negative_count": negative,
                "positive_pct": pct(positive, count),
                "score": exact_mean(values, 4),
                "top_phrases": top_phrases(*mentioned.counts()),
                "example_review_ids": tally.newest(mentioned.ordinals),
            }
        )
    # Most mentioned first; sorted() is stable, so ties keep taxonomy order.
    aspects.sort(key=lambda a: -a["mention_count"])
    return aspects


def _ranked(items: list[dict[str, Any]], by: str) -> list[dict[str, Any]]:
    """Most mentioned first, then by the C{by} field."""
    return sorted(items, key=lambda item: (-item["mention_count"], item[by]))


def _entities(tally: Tally, business: Business) -> dict[str, list[dict[str, Any]]]:
    """The C{entities} group: technicians, services, problems and places."""
    return {
        "technicians": _ranked(
            [
                {"name": name, **tally.figures(ordinals)}
                for name, ordinals in tally.technicians.items()
            ],
            "name",
        ),
        "services": _ranked(
            [
                {"id": s.id, "name": s.name, **tally.figures(tally.services[s.id])}
                for s in business.services
            ],
            "id",
        ),
        "problems": _ranked(
            [
                {
                    "id": p.id,
                    "label": p.label,
                    "mention_count": len(mentioned.ordinals),
                    "top_phrases": top_phrases(*mentioned.counts()),
                    "example_review_ids": tally.newest(mentioned.ordinals),
                }
                for p in PROBLEMS
                if (mentioned := tally.problems[p.id]).ordinals
            ],
            "id",
        ),
        "service_areas": _ranked(
            [
                {"name": name, **tally.figures(ordinals)}
                for name, ordinals in tally.areas.items()
            ],
            "name",
        ),
    }


def _topics(tally: Tally) -> list[dict[str, Any]]:
    """The C{topics} group: the topics found at least once."""
    return _ranked(
        [
            {"id": t.id, "label": t.label, **tally.figures(tally.topics[t.id])}
            for t in TOPICS
            if tally.topics[t.id]
        ],
        "id",
    )
