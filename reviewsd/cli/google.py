"""
Reviews from the Google Business Profile API: the JSON that
C{accounts.locations.reviews.list} answers (one file per page, or a
directory of them), as saved from C{curl}.

A page is C{{"reviews": [...], "averageRating", "totalReviewCount",
"nextPageToken"}}; each review has C{reviewId}, C{reviewer} (C{displayName},
C{profilePhotoUrl}, C{isAnonymous}), C{starRating} (C{ONE} to C{FIVE}),
C{comment}, C{createTime}, C{updateTime} and C{reviewReply} (C{comment},
C{updateTime}).  The answer of C{locations.batchGetReviews}
(C{locationReviews[].review}) is read too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from reviewsd.cli.imported import Imported, UnusableExport, calendar_date, expand

SOURCE = "google"
STARS = {"ONE": 1, "TWO": 2, "THREE": 3, "FOUR": 4, "FIVE": 5}
ANONYMOUS = "Anonymous"
"""The author of a review whose reviewer chose to stay anonymous and left no name."""

TRANSLATED = "(Translated by Google)"
ORIGINAL = "(Original)"


def read_google(paths: Sequence[Path], *, dated: str = "updated") -> list[Imported]:
    """
    Every review of the pages in C{paths}.

    @param dated: which time dates a review: C{updated} (its last edit, so
        that an edited review reaches feeds and incremental sync again) or
        C{created}.
    """
    found: list[Imported] = []
    for path in expand(paths, ".json"):
        for origin, item in _reviews(path):
            found.append(_review(origin, item, dated))
    return found


def _reviews(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        page = orjson.loads(path.read_bytes())
    except OSError as e:
        raise UnusableExport(f"{path}: cannot be read: {e.strerror}") from None
    except orjson.JSONDecodeError as e:
        raise UnusableExport(f"{path}: is not JSON: {e}") from None
    if isinstance(page, dict) and isinstance(page.get("locationReviews"), list):
        for i, item in enumerate(page["locationReviews"]):
            review = item.get("review") if isinstance(item, dict) else None
            yield f"{path}: locationReviews[{i}].review", review
        return
    if isinstance(page, dict) and ("reviews" in page or "totalReviewCount" in page):
        reviews = page.get("reviews") or []  # the last page may have none
    elif isinstance(page, list):
        reviews = page
    else:
        raise UnusableExport(
            f"{path}: is not an answer of accounts.locations.reviews.list "
            '(a JSON object with "reviews")'
        )
    if not isinstance(reviews, list):
        raise UnusableExport(f'{path}: "reviews" is not an array')
    for i, item in enumerate(reviews):
        yield f"{path}: reviews[{i}]", item


def _review(origin: str, item: Any, dated: str) -> Imported:
    if not isinstance(item, dict):
        return Imported(origin, reason="is not a review object")
    review_id = item.get("reviewId") or str(item.get("name") or "").rpartition("/")[2]
    if not isinstance(review_id, str) or not review_id:
        return Imported(origin, reason="has no reviewId")
    origin = f"{origin} (id {review_id!r})"
    rating = STARS.get(str(item.get("starRating")))
    if rating is None:
        return Imported(
            origin,
            reason=f"starRating is {item.get('starRating')!r}, not ONE to FIVE",
        )
    try:
        date = _time(item, "updateTime" if dated == "updated" else "createTime")
        reply = _reply(item.get("reviewReply"))
    except ValueError as e:
        return Imported(origin, reason=str(e))
    reviewer = item.get("reviewer")
    if not isinstance(reviewer, dict):
        reviewer = {}
    anonymous = reviewer.get("isAnonymous") is True
    name = reviewer.get("displayName")
    photo = reviewer.get("profilePhotoUrl")
    comment = item.get("comment")
    return Imported(
        origin,
        {
            "id": review_id,
            "author": name if isinstance(name, str) and name.strip() else ANONYMOUS,
            "author_avatar_url": photo
            if isinstance(photo, str) and not anonymous
            else None,
            "rating": rating,
            "date": date,
            "text": (original(comment) or None) if isinstance(comment, str) else None,
            "source": SOURCE,
            "owner_reply": reply,
        },
    )


def _time(item: dict[str, Any], key: str) -> str:
    """The date of C{item[key]}, or of C{createTime} when the other is missing."""
    value = item.get(key) or item.get("createTime")
    if not isinstance(value, str):
        raise ValueError(f"has no {key}")
    try:
        return calendar_date(value).isoformat()
    except ValueError:
        raise ValueError(f"{key} {value!r} is not an RFC 3339 timestamp") from None


def _reply(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict) or not isinstance(value.get("comment"), str):
        return None
    text = original(value["comment"])
    if not text:
        return None
    updated = value.get("updateTime")
    if not isinstance(updated, str):
        raise ValueError("reviewReply has no updateTime")
    try:
        date = calendar_date(updated).isoformat()
    except ValueError:
        raise ValueError(
            f"reviewReply.updateTime {updated!r} is not an RFC 3339 timestamp"
        ) from None
    return {"text": text, "date": date}


def original(comment: str) -> str:
    """
    The text as its author wrote it: Google gives a review in another
    language as C{(Translated by Google) ... (Original) ...}, or as the
    original followed by C{(Translated by Google) ...}.
    """
    at_original, at_translated = comment.find(ORIGINAL), comment.find(TRANSLATED)
    if at_original >= 0:
        end = at_translated if at_translated > at_original else len(comment)
        return comment[at_original + len(ORIGINAL) : end].strip()
    if at_translated > 0:
        return comment[:at_translated].strip()
    if at_translated == 0:
        return comment[len(TRANSLATED) :].strip()
    return comment.strip()
