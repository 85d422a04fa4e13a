"""
The time series of the reviews and its direction.

C{monthly} has one entry per calendar month from the earliest review's month
to the latest's, months without reviews included (with C{review_count} 0
and null averages), oldest first.

The trend compares the average star rating of the last L{WINDOW_MONTHS}
calendar months (ending with the latest review's month, so it depends on
the data only, never on the clock) with the L{WINDOW_MONTHS} months before:
C{improving} when it rose by at least L{THRESHOLD} stars, C{declining} when
it fell by at least as much, C{stable} otherwise, and C{stable} as well when
either window has fewer than L{MIN_REVIEWS} reviews (no evidence of a
change).  L{TREND_RULE} says so in the document.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

WINDOW_MONTHS = 6
THRESHOLD = 0.25
MIN_REVIEWS = 3

TREND_RULE = (
    f"Average star rating of the last {WINDOW_MONTHS} calendar months (ending "
    f"with the month of the latest review) minus that of the {WINDOW_MONTHS} "
    f"months before: 'improving' at +{THRESHOLD} stars or more, 'declining' at "
    f"-{THRESHOLD} or less, otherwise 'stable'; 'stable' as well when either "
    f"period has fewer than {MIN_REVIEWS} reviews."
)


def month_key(date: datetime.date) -> int:
    """Months since year 0: consecutive months are consecutive integers."""
    return date.year * 12 + date.month - 1


def month_name(key: int) -> str:
    """C{YYYY-MM} for a L{month_key}."""
    return f"{key // 12:04d}-{key % 12 + 1:02d}"


class MonthTally:
    """One month's reviews; scores are summed exactly, in any order."""

    __slots__ = ("count", "rating_sum", "scores")

    def __init__(self) -> None:
        self.count = 0
        self.rating_sum = 0
        self.scores: list[float] = []

    def add(self, rating: int, score: float | None) -> None:
        self.count += 1
        self.rating_sum += rating
        if score is not None:
            self.scores.append(score)

    @property
    def scored(self) -> int:
        return len(self.scores)

    @property
    def score_sum(self) -> float:
        return math.fsum(self.scores)

    def copy(self) -> MonthTally:
        tally = MonthTally()
        tally.count, tally.rating_sum = self.count, self.rating_sum
        tally.scores = self.scores[:]
        return tally


def monthly(tallies: dict[int, MonthTally]) -> list[dict[str, Any]]:
    """Every month from the first to the last with reviews, oldest first."""
    if not tallies:
        return []
    empty = MonthTally()
    out = []
    for key in range(min(tallies), max(tallies) + 1):
        tally = tallies.get(key, empty)
        out.append(
            {
                "month": month_name(key),
                "review_count": tally.count,
                "average_rating": (
                    round(tally.rating_sum / tally.count, 2) if tally.count else None
                ),
                "sentiment_score": (
                    round(tally.score_sum / tally.scored, 4) if tally.scored else None
                ),
            }
        )
    return out


def _period(
    tallies: dict[int, MonthTally], first: int, last: int
) -> tuple[int, int, dict[str, Any]]:
    count = total = 0
    for key, tally in tallies.items():
        if first <= key <= last:
            count += tally.count
            total += tally.rating_sum
    return (
        count,
        total,
        {
            "from_month": month_name(first),
            "to_month": month_name(last),
            "review_count": count,
            "average_rating": round(total / count, 2) if count else None,
        },
    )


def trend(tallies: dict[int, MonthTally]) -> tuple[str, dict[str, Any] | None]:
    """
    The trend word and its basis: the C{recent} and C{previous} periods and
    the C{change} in average rating (null when a period has no reviews);
    the basis is C{None} when there are no reviews at all.
    """
    if not tallies:
        return "stable", None
    last = max(tallies)
    r_count, r_total, recent = _period(tallies, last - WINDOW_MONTHS + 1, last)
    p_count, p_total, previous = _period(
        tallies, last - 2 * WINDOW_MONTHS + 1, last - WINDOW_MONTHS
    )
    change = None
    word = "stable"
    if r_count and p_count:
        # From the exact averages, so that rounding never moves the verdict.
        exact = r_total / r_count - p_total / p_count
        change = round(exact, 2)
        if min(r_count, p_count) >= MIN_REVIEWS:
            if exact >= THRESHOLD - 1e-9:
                word = "improving"
            elif exact <= -THRESHOLD + 1e-9:
                word = "declining"
    return word, {"recent": recent, "previous": previous, "change": change}
