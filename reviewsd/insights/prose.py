"""
The FAQ, the summary and the pull quote: sentences built from the derived
figures (and, for the pull quote, chosen from real review text).

Every number in the prose comes from the document's other groups, so the
prose never disagrees with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from reviewsd.insights.temporal import WINDOW_MONTHS

_MONTHS = (
    "January February March April May June July August September October "
    "November December"
).split()

#: An aspect is praised or criticised in the summary only with this many
#: mentions (and at least 5% of the written reviews).
MIN_SUMMARY_MENTIONS = 3
#: ... and is praised when at least this share of its mentions is positive.
PRAISE_PCT = 60


def _month(iso_date: str) -> str:
    year, month, _ = iso_date.split("-")
    return f"{_MONTHS[int(month) - 1]} {year}"


def _reviews(n: int) -> str:
    return f"{n} review" if n == 1 else f"{n} reviews"


def _stars(value: float) -> str:
    return f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "0%" if value is None else f"{round(value):d}%"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _lower(label: str) -> str:
    # "Technical knowledge" -> "technical knowledge"; keeps acronyms ("HVAC").
    first, _, rest = label.partition(" ")
    if first[1:].islower() or len(first) == 1:
        first = first.lower()
    return f"{first} {rest}".strip()


class Figures:
    """The derived groups the prose is written from."""

    def __init__(
        self,
        business_name: str,
        review_count: int,
        date_range: dict[str, str | None],
        ratings: dict[int, int],
        overall: dict[str, Any],
        aspects: list[dict[str, Any]],
        entities: dict[str, list[dict[str, Any]]],
        trend: str,
        trend_basis: dict[str, Any] | None,
    ) -> None:
        self.name = business_name
        self.review_count = review_count
        self.date_range = date_range
        self.ratings = ratings
        self.overall = overall
        self.aspects = {a["id"]: a for a in aspects}
        self.aspect_list = aspects
        self.entities = entities
        self.trend = trend
        self.trend_basis = trend_basis

    @property
    def average_rating(self) -> float | None:
        if not self.review_count:
            return None
        total = sum(stars * n for stars, n in self.ratings.items())
        return total / self.review_count

    def share(self, *stars: int) -> float:
        return 100 * sum(self.ratings.get(s, 0) for s in stars) / self.review_count

    def trend_sentence(self) -> str | None:
        basis = self.trend_basis
        if basis is None or basis["change"] is None:
            return None
        recent, previous = basis["recent"], basis["previous"]
        return (
            f"Over the last {WINDOW_MONTHS} months the average rating is "
            f"{self.trend} ({_stars(recent['average_rating'])} stars from "
            f"{_reviews(recent['review_count'])}, against "
            f"{_stars(previous['average_rating'])} from "
            f"{_reviews(previous['review_count'])} in the {WINDOW_MONTHS} months "
            f"before)."
        )


def _aspect_answer(figures: Figures, aspect_id: str, topic: str) -> str:
    aspect = figures.aspects.get(aspect_id)
    if aspect is None or not aspect["mention_count"]:
        return f"No review talks about {topic} yet."
    m = aspect["mention_count"]
    positive = _pct(aspect["positive_pct"])
    negative = _pct(100 * aspect["negative_count"] / m)
    answer = (
        f"{_lower(aspect['label']).capitalize()} comes up in {_reviews(m)}; "
        f"{positive} of those mentions are positive and {negative} negative."
    )
    phrases = aspect["top_phrases"][:3]
    if phrases:
        answer += " Customers write " + _join([f"“{p}”" for p in phrases]) + "."
    return answer


def _ranked(items: list[dict[str, Any]], key: str, limit: int) -> list[str]:
    shown = [item for item in items if item["mention_count"]][:limit]
    return [
        f"{item[key]} ({_reviews(item['mention_count'])}"
        + (
            ""
            if item["average_rating"] is None
            else f", average {_stars(item['average_rating'])} stars"
        )
        + ")"
        for item in shown
    ]


def faq(figures: Figures) -> list[dict[str, str]]:
    """Eight questions a prospective customer asks, answered with numbers."""
    name = figures.name
    entries: list[tuple[str, str]] = []
    if not figures.review_count:
        rating = f"{name} has no published reviews yet."
    else:
        first, last = figures.date_range["earliest"], figures.date_range["latest"]
        assert first is not None and last is not None
        average = figures.average_rating
        assert average is not None
        rating = (
            f"{_stars(average)} out of 5 stars on average across "
            f"{figures.review_count} verified reviews from {_month(first)} to "
            f"{_month(last)}; {_pct(figures.share(4, 5))} give 4 or 5 stars and "
            f"{_pct(figures.share(1, 2))} give 1 or 2."
        )
        trend = figures.trend_sentence()
        if trend:
            rating += " " + trend
    entries.append((f"How do customers rate {name}?", rating))
    entries.append(
        (
            "Do they show up on time?",
            _aspect_answer(figures, "punctuality", "punctuality"),
        )
    )
    entries.append(
        ("Are their prices fair?", _aspect_answer(figures, "pricing", "pricing"))
    )
    entries.append(
        (
            "How good is the quality of their work?",
            _aspect_answer(figures, "workmanship", "workmanship"),
        )
    )
    entries.append(
        (
            "Do they clean up after the job?",
            _aspect_answer(figures, "cleanliness", "cleanliness"),
        )
    )
    services = _ranked(figures.entities["services"], "name", 3)
    entries.append(
        (
            "Which services are reviewed most?",
            "Most reviewed: " + _join(services) + "."
            if services
            else "No review names one of the business's listed services yet.",
        )
    )
    technicians = _ranked(figures.entities["technicians"], "name", 3)
    entries.append(
        (
            "Which technicians do customers mention?",
            "Most mentioned: " + _join(technicians) + "."
            if technicians
            else "No review names one of the business's technicians yet.",
        )
    )
    problems = [p for p in figures.entities["problems"] if p["mention_count"]][:3]
    entries.append(
        (
            "What do unhappy customers complain about?",
            "The most frequent complaints: "
            + _join(
                [
                    f"{_lower(p['label'])} ({_reviews(p['mention_count'])})"
                    for p in problems
                ]
            )
            + "."
            if problems
            else "No recurring complaint stands out in the reviews.",
        )
    )
    return [{"question": q, "answer": a} for q, a in entries]


def summary(figures: Figures) -> str:
    """Two to four sentences of prose built from the figures."""
    name = figures.name
    if not figures.review_count:
        return (
            f"{name} has no published reviews yet. What customers say will be "
            "summarised here once they review it."
        )
    first, last = figures.date_range["earliest"], figures.date_range["latest"]
    assert first is not None and last is not None
    average = figures.average_rating
    assert average is not None
    scored = figures.overall["scored_review_count"]
    opening = (
        f"{name} has {figures.review_count} verified "
        f"{'review' if figures.review_count == 1 else 'reviews'} from "
        f"{_month(first)} to {_month(last)}, averaging {_stars(average)} out of 5 "
        "stars"
    )
    if scored:
        opening += (
            f"; {_pct(figures.overall['positive_pct'])} of the written reviews read "
            f"positive and {_pct(figures.overall['negative_pct'])} negative."
        )
    else:
        opening += "; none has written text yet."
    sentences = [opening]
    floor = max(MIN_SUMMARY_MENTIONS, 0.05 * scored)
    frequent = [a for a in figures.aspect_list if a["mention_count"] >= floor]
    praised = sorted(
        (a for a in frequent if a["positive_pct"] >= PRAISE_PCT),
        key=lambda a: (-a["positive_count"], a["id"]),
    )[:2]
    if praised:
        sentences.append(
            "Customers most often praise "
            + _join(
                [
                    f"{_lower(a['label'])} ({_pct(a['positive_pct'])} positive in "
                    f"{_reviews(a['mention_count'])})"
                    for a in praised
                ]
            )
            + "."
        )
    else:
        services = _ranked(figures.entities["services"], "name", 1)
        sentences.append(
            f"The most reviewed service is {services[0]}."
            if services
            else "No aspect of the work stands out in the reviews yet."
        )
    problems = [p for p in figures.entities["problems"] if p["mention_count"] >= 2][:2]
    if problems:
        sentences.append(
            "The most frequent complaints are about "
            + _join(
                [
                    f"{_lower(p['label'])} ({_reviews(p['mention_count'])})"
                    for p in problems
                ]
            )
            + "."
        )
    trend = figures.trend_sentence()
    if trend:
        sentences.append(trend)
    return " ".join(sentences)


class Candidate(NamedTuple):
    """A pull-quote candidate: a sentence of a review, as written."""

    review_id: str
    sentence: str
    rating: int
    compound: float
    aspect_ids: Sequence[str]

    @property
    def order(self) -> tuple[float, int, str, str]:
        """How candidates of the same aspects rank: see L{pull_quote}."""
        return quote_order(self.review_id, self.sentence, self.compound)


def quote_order(
    review_id: str, sentence: str, compound: float
) -> tuple[float, int, str, str]:
    """
    How candidates of the same aspects rank (L{Candidate.order}), for a
    sentence not yet made a candidate.
    """
    return (-compound, len(sentence), review_id, sentence)


def pull_quote(
    candidates: list[Candidate],
    aspects: list[dict[str, Any]],
) -> tuple[str | None, str | None]:
    """
    The pull quote and the id of its review: among the candidate sentences
    (from the best-rated reviews), the one whose aspects customers praise
    most often (the sum of those aspects' positive counts), then the most
    positive, then the shortest, then by review id and text.
    """
    if not candidates:
        return None, None
    praise = {a["id"]: a["positive_count"] for a in aspects}

    def rank(candidate: Candidate) -> tuple[Any, ...]:
        weight = sum(praise.get(i, 0) for i in candidate.aspect_ids)
        return (-weight, *candidate.order)

    best = min(candidates, key=rank)
    return best.sentence, best.review_id
