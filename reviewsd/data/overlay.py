"""
The operator's C{insights.json}: curated or precomputed groups that replace
the derived ones.

It is a JSON object whose keys are top-level groups of the document; each
one present replaces the derived group whole (an C{faq} written by hand,
a C{summary}, a C{pull_quote}, or C{aspects} computed elsewhere).  The
groups the data itself fixes (C{version}, C{generated_at}, C{review_count},
C{date_range}, C{method}) and C{per_review} (the search index reads it)
cannot be replaced.

L{check_overlay} holds every group to the shape the derived one has (the
same fields, no others, the same types and ranges), so the published
document keeps its schema; a wrong shape raises L{InsightsOverlayError}
naming the field, e.g. C{faq[2].answer}.  Replacing C{pull_quote} without
C{pull_quote_review_id} sets the latter to null.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from reviewsd.data.model import describe


class InsightsOverlayError(ValueError):
    """
    An overlay that cannot be published.

    @ivar field: where the problem is (C{faq[2].answer}), or C{None} when
        the whole value is wrong.
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return self.message if self.field is None else f"{self.field}: {self.message}"


Check = Callable[[Any, str], None]


def _fail(field: str, message: str, value: object) -> InsightsOverlayError:
    return InsightsOverlayError(field, f"{message}, got {describe(value)}")


def _string(*, nullable: bool = False, empty: bool = False) -> Check:
    def check(value: Any, field: str) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or (not empty and not value.strip()):
            what = "a string" if empty else "a non-empty string"
            raise _fail(
                field, f"must be {what}" + (" or null" if nullable else ""), value
            )

    return check


def _number(
    low: float, high: float, *, nullable: bool = False, whole: bool = False
) -> Check:
    def check(value: Any, field: str) -> None:
        if value is None and nullable:
            return
        ok = (
            not isinstance(value, bool)
            and isinstance(value, (int, float))
            and (not whole or isinstance(value, int))
            and math.isfinite(value)
            and low <= value <= high
        )
        if not ok:
            kind = "a whole number" if whole else "a number"
            upper = "" if math.isinf(high) else f" to {high:g}"
            raise _fail(
                field,
                f"must be {kind} from {low:g}{upper}"
                + (" or null" if nullable else ""),
                value,
            )

    return check


def _enum(*choices: str) -> Check:
    def check(value: Any, field: str) -> None:
        if value not in choices:
            raise _fail(field, "must be one of " + ", ".join(map(repr, choices)), value)

    return check


def _list(item: Check) -> Check:
    def check(value: Any, field: str) -> None:
        if not isinstance(value, list):
            raise _fail(field, "must be an array", value)
        for i, element in enumerate(value):
            item(element, f"{field}[{i}]")

    return check


def _object(fields: dict[str, Check], *, nullable: bool = False) -> Check:
    def check(value: Any, field: str) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            raise _fail(
                field, "must be a JSON object" + (" or null" if nullable else ""), value
            )
        for key in value:
            if key not in fields:
                raise InsightsOverlayError(
                    f"{field}.{key}",
                    "is not a field of this group (expected " + ", ".join(fields) + ")",
                )
        for key, inner in fields.items():
            if key not in value:
                raise InsightsOverlayError(f"{field}.{key}", "is required")
            inner(value[key], f"{field}.{key}")

    return check


COUNT = _number(0, math.inf, whole=True)
PCT = _number(0, 100, nullable=True)
SCORE = _number(-1, 1, nullable=True)
RATING = _number(1, 5, nullable=True)
IDS = _list(_string())
PHRASES = _list(_string())
MONTH = _string()

_STATS = {
    "mention_count": COUNT,
    "average_rating": RATING,
    "sentiment_score": SCORE,
    "positive_pct": PCT,
    "example_review_ids": IDS,
}
_PERIOD = _object(
    {
        "from_month": MONTH,
        "to_month": MONTH,
        "review_count": COUNT,
        "average_rating": RATING,
    }
)

GROUPS: dict[str, Check] = {
    "model": _string(),
    "overall_sentiment": _object(
        {
            "score": SCORE,
            "positive_pct": PCT,
            "neutral_pct": PCT,
            "negative_pct": PCT,
            "scored_review_count": COUNT,
        }
    ),
    "aspects": _list(
        _object(
            {
                "id": _string(),
                "label": _string(),
                "mention_count": COUNT,
                "positive_count": COUNT,
                "neutral_count": COUNT,
                "negative_count": COUNT,
                "positive_pct": PCT,
                "score": SCORE,
                "top_phrases": PHRASES,
                "example_review_ids": IDS,
            }
        )
    ),
    "entities": _object(
        {
            "technicians": _list(_object({"name": _string(), **_STATS})),
            "services": _list(_object({"id": _string(), "name": _string(), **_STATS})),
            "problems": _list(
                _object(
                    {
                        "id": _string(),
                        "label": _string(),
                        "mention_count": COUNT,
                        "top_phrases": PHRASES,
                        "example_review_ids": IDS,
                    }
                )
            ),
            "service_areas": _list(_object({"name": _string(), **_STATS})),
        }
    ),
    "topics": _list(_object({"id": _string(), "label": _string(), **_STATS})),
    "temporal": _object(
        {
            "monthly": _list(
                _object(
                    {
                        "month": MONTH,
                        "review_count": COUNT,
                        "average_rating": RATING,
                        "sentiment_score": SCORE,
                    }
                )
            ),
            "trend": _enum("improving", "stable", "declining"),
            "trend_rule": _string(),
            "trend_basis": _object(
                {
                    "recent": _PERIOD,
                    "previous": _PERIOD,
                    "change": _number(-4, 4, nullable=True),
                },
                nullable=True,
            ),
        }
    ),
    "faq": _list(_object({"question": _string(), "answer": _string()})),
    "summary": _string(nullable=True),
    "pull_quote": _string(nullable=True),
    "pull_quote_review_id": _string(nullable=True),
}

#: Groups the data fixes, which an overlay cannot replace.
FIXED = (
    "version",
    "generated_at",
    "method",
    "review_count",
    "date_range",
    "per_review",
)


def check_overlay(value: object) -> dict[str, Any]:
    """
    Admit the parsed JSON of an operator's C{insights.json}, or raise
    L{InsightsOverlayError} naming the bad field.
    """
    if not isinstance(value, dict):
        raise _fail_whole(value)
    for key, group in value.items():
        if key in FIXED:
            raise InsightsOverlayError(
                key, "is derived from the data and cannot be replaced"
            )
        check = GROUPS.get(key)
        if check is None:
            raise InsightsOverlayError(
                key,
                "is not a group of insights.json (replaceable: "
                + ", ".join(GROUPS)
                + ")",
            )
        check(group, key)
    return dict(value)


def _fail_whole(value: object) -> InsightsOverlayError:
    return InsightsOverlayError(None, f"must be a JSON object, got {describe(value)}")


def apply_overlay(document: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """
    A new document in which each group of C{overlay} (checked by
    L{check_overlay}) replaces the derived one.
    """
    result = dict(document)
    result.update(overlay)
    if "pull_quote" in overlay and "pull_quote_review_id" not in overlay:
        result["pull_quote_review_id"] = None
    return result
