"""
The published records, and the checks that admit a raw JSON value as one.

Checks raise L{InvalidField} naming the field; L{reviewsd.data.loading} adds the
file and record, so the operator gets one line that says where to look.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any
from urllib.parse import urlsplit

from attrs import frozen

from reviewsd.data.fields import InvalidField, attempt, describe, string
from reviewsd.data.hours import Hours, read_hours

JSONObject = dict[str, Any]


@frozen
class OwnerReply:
    text: str
    date: datetime.date


@frozen
class Review:
    id: str
    author: str
    author_avatar_url: str | None
    rating: int
    date: datetime.date
    text: str | None
    source: str
    source_url: str | None
    owner_reply: OwnerReply | None
    verified: bool

    @property
    def edited_after_reply(self) -> bool:
        """
        Whether the owner's reply is dated before the review: the customer
        edited the review after it was answered, and the platform dates it
        by the edit.
        """
        return self.owner_reply is not None and self.owner_reply.date < self.date

    def as_record(self) -> JSONObject:
        """The record as every document publishes it: every field, nulls too."""
        reply = self.owner_reply
        return {
            "id": self.id,
            "author": self.author,
            "author_avatar_url": self.author_avatar_url,
            "rating": self.rating,
            "date": self.date.isoformat(),
            "text": self.text,
            "source": self.source,
            "source_url": self.source_url,
            "owner_reply": (
                None
                if reply is None
                else {"text": reply.text, "date": reply.date.isoformat()}
            ),
            "verified": self.verified,
        }


@frozen
class Service:
    id: str
    name: str
    keywords: tuple[str, ...]


@frozen
class Technician:
    name: str
    aliases: tuple[str, ...]


@frozen
class Business:
    """
    @ivar metadata: the public object as the operator wrote it, checked and
        with C{services} and C{technicians} normalised; it is published
        as-is and never mutated.
    @ivar hours: C{metadata}'s C{hours}, read for the pages to show and mark up.
    """

    name: str
    url: str | None
    service_areas: tuple[str, ...]
    services: tuple[Service, ...]
    technicians: tuple[Technician, ...]
    metadata: JSONObject
    hours: Hours | None = None


@frozen
class Dataset:
    """
    One consistent reading of a data directory.

    @ivar reviews: the published (verified) reviews, newest first: date
        descending, then id descending.
    @ivar unpublished: how many records were left out as unverified.
    @ivar insights_overlay: groups of C{/insights.json} the operator wrote,
        checked, replacing the derived ones.
    """

    business: Business
    reviews: tuple[Review, ...]
    unpublished: int
    insights_overlay: JSONObject | None = None


def newest_first(reviews: Sequence[Review]) -> tuple[Review, ...]:
    """The one order every list of reviews is published in."""
    return tuple(sorted(reviews, key=attrgetter("date", "id"), reverse=True))


# --- checks -----------------------------------------------------------------

_MISSING = object()
_DATE = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_SERVICE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def _nonempty(value: object, field: str) -> str:
    return string(value, field, empty_ok=False)


def _url(value: object, field: str) -> str:
    """
    An absolute http(s) URL naming a host, without white space or control
    characters, that Python's parser takes.
    """
    text = string(value, field)
    if _blank(text) or not (_PLAIN_URL.match(text) or _absolute(text)):
        raise InvalidField(
            field, f"must be an absolute http(s) URL, got {describe(value)}"
        )
    return text


#: An http(s) URL whose host is plain ASCII, with no user and no brackets:
#: one that C{urlsplit} takes, with that host, found ten times faster.
_PLAIN_URL = re.compile(
    r"https?://[\w.~%!$&'()*+,;=-]+(?::[0-9]*)?(?:[/?#]|\Z)", re.ASCII
)


def _absolute(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # unclosed brackets, a host that NFKC changes
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _blank(text: str) -> bool:
    """
    Whether C{text} holds white space or a control character.  Each such
    character but the space is unprintable, so text that is printable and
    spaceless has none: only other text, rare, is read a character at a
    time (a long URL takes a microsecond, not ten).
    """
    if text.isprintable() and " " not in text:
        return False
    return any(c.isspace() or ord(c) < 0x20 for c in text)


def _date(value: object, field: str) -> datetime.date:
    if not isinstance(value, str) or not _DATE.match(value):
        raise InvalidField(
            field, f"must be a date written YYYY-MM-DD, got {describe(value)}"
        )
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise InvalidField(field, f"{value!r} is not a calendar date") from None


def _boolean(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidField(field, f"must be true or false, got {describe(value)}")
    return value


def _rating(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise InvalidField(
            field, f"must be a whole number from 1 to 5, got {describe(value)}"
        )
    return value


def _object(value: object, field: str | None) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidField(field, f"must be a JSON object, got {describe(value)}")
    return value


def _array(value: object, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidField(field, f"must be an array, got {describe(value)}")
    return value


def _strings(value: object, field: str) -> tuple[str, ...]:
    return tuple(
        string(item, f"{field}[{i}]", empty_ok=False)
        for i, item in enumerate(_array(value, field))
    )


def _required(record: Mapping[str, Any], key: str, check: Callable[..., Any]) -> Any:
    value = record.get(key, _MISSING)
    if value is _MISSING:
        raise InvalidField(key, "is required")
    return check(value, key)


def _nullable(record: Mapping[str, Any], key: str, check: Callable[..., Any]) -> Any:
    value = record.get(key)
    return None if value is None else check(value, key)


def _owner_reply(value: object, field: str) -> OwnerReply:
    reply = _object(value, field)
    try:
        return OwnerReply(
            text=_required(reply, "text", string),
            date=_required(reply, "date", _date),
        )
    except InvalidField as e:
        raise e.within(field) from None


REVIEW_FIELDS: tuple[tuple[str, bool, Callable[..., Any]], ...] = (
    ("id", True, _nonempty),
    ("author", True, string),
    ("author_avatar_url", False, _url),
    ("rating", True, _rating),
    ("date", True, _date),
    ("text", False, string),
    ("source", True, _nonempty),
    ("source_url", False, _url),
    ("owner_reply", False, _owner_reply),
    ("verified", True, _boolean),
)
"""
A review's fields in the order of L{Review}'s: name, whether required, and
the check that reads it.
"""


def review_from_json(value: object) -> Review:
    """
    Admit one review record, or raise L{InvalidField}.

    Nullable fields may be missing; unknown fields are ignored and never
    published.  A reply dated before the review is admitted: platforms date
    a review edited after it was answered by the edit (see
    L{Review.edited_after_reply}).
    """
    record = _object(value, None)
    # positional, in the order of Review's fields: the reading of every
    # record, at start-up and for each changed one on reload
    return Review(
        *[
            (_required if required else _nullable)(record, key, check)
            for key, required, check in REVIEW_FIELDS
        ]
    )


def review_problems(value: object) -> list[InvalidField]:
    """Every problem of one review record, not only the first."""
    try:
        record = _object(value, None)
    except InvalidField as e:
        return [e]
    problems = []
    for key, required, check in REVIEW_FIELDS:
        try:
            (_required if required else _nullable)(record, key, check)
        except InvalidField as e:
            problems.append(e)
    return problems


def _service(value: object, field: str) -> Service:
    record = _object(value, field)
    try:
        service_id = _required(record, "id", string)
        if not _SERVICE_ID.match(service_id):
            raise InvalidField(
                "id",
                f"must be letters, digits, '.', '_' or '-' (used in URLs), "
                f"got {service_id!r}",
            )
        return Service(
            id=service_id,
            name=_required(record, "name", _nonempty),
            keywords=_strings(record.get("keywords", []), "keywords"),
        )
    except InvalidField as e:
        raise e.within(field) from None


def _technician(value: object, field: str) -> Technician:
    record = _object(value, field)
    try:
        return Technician(
            name=_required(record, "name", _nonempty),
            aliases=_strings(record.get("aliases", []), "aliases"),
        )
    except InvalidField as e:
        raise e.within(field) from None


def _unique(values: Sequence[str], field: str, what: str) -> None:
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        key = value.casefold()
        if key in seen:
            raise InvalidField(
                f"{field}[{i}]", f"repeats the {what} {value!r} of {field}[{seen[key]}]"
            )
        seen[key] = i


def _coordinate(value: object, field: str, bound: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidField(field, f"must be a number, got {describe(value)}")
    if not -bound <= value <= bound:
        raise InvalidField(field, f"must be between -{bound} and {bound}")
    return float(value)


def _geo(value: object, field: str) -> Mapping[str, Any]:
    geo = _object(value, field)
    _required(geo, "latitude", lambda v, f: _coordinate(v, f"{field}.{f}", 90))
    _required(geo, "longitude", lambda v, f: _coordinate(v, f"{field}.{f}", 180))
    return geo


def business_from_json(value: object) -> Business:
    """
    Admit the business metadata, or raise L{InvalidField}.

    Every key is public and published; the known ones are checked, and any
    key named C{url} or ending in C{_url} must hold a URL.
    """
    problems: list[InvalidField] = []
    business = _read_business(value, problems)
    if business is None:
        raise problems[0]
    return business


def business_problems(value: object) -> list[InvalidField]:
    """Every problem of the business metadata, not only the first."""
    problems: list[InvalidField] = []
    _read_business(value, problems)
    return problems


def _read_business(value: object, problems: list[InvalidField]) -> Business | None:
    """
    The business, or C{None} with each of its problems added to
    C{problems}: every field is checked, whatever the others hold.
    """
    record = attempt(problems, _object, value, None)
    if record is None:
        return None
    name = attempt(problems, _required, record, "name", _nonempty)
    for key, item in record.items():
        if (key == "url" or key.endswith("_url")) and item is not None:
            attempt(problems, _url, item, key)
    for key in ("description", "telephone", "email"):
        attempt(problems, _nullable, record, key, string)
    attempt(problems, _nullable, record, "geo", _geo)
    attempt(problems, _nullable, record, "address", _address)
    hours = (
        None if record.get("hours") is None else read_hours(record["hours"], problems)
    )
    categories = attempt(
        problems, _strings, record.get("categories") or [], "categories"
    )
    areas = attempt(
        problems, _strings, record.get("service_areas") or [], "service_areas"
    )
    services = _each(problems, record, "services", _service)
    technicians = _each(problems, record, "technicians", _technician)
    attempt(problems, _unique, [s.id for s in services], "services", "id")
    attempt(problems, _unique, [t.name for t in technicians], "technicians", "name")
    attempt(problems, _unique, areas or (), "service_areas", "place")
    if problems:
        return None
    metadata = dict(record)
    metadata.update(
        categories=list(categories),
        service_areas=list(areas),
        services=[
            {"id": s.id, "name": s.name, "keywords": list(s.keywords)} for s in services
        ],
        technicians=[{"name": t.name, "aliases": list(t.aliases)} for t in technicians],
    )
    return Business(
        name=name,
        url=record.get("url"),
        service_areas=areas,
        services=services,
        technicians=technicians,
        metadata=metadata,
        hours=hours,
    )


def _each(
    problems: list[InvalidField],
    record: Mapping[str, Any],
    key: str,
    read: Callable[[object, str], Any],
) -> tuple[Any, ...]:
    """Each item of the array C{record[key]} that C{read} admits."""
    items = attempt(problems, _array, record.get(key) or [], key) or []
    read_items = (
        attempt(problems, read, item, f"{key}[{i}]") for i, item in enumerate(items)
    )
    return tuple(item for item in read_items if item is not None)


def _address(value: object, field: str) -> object:
    """Free-form, but a string or an object, not a number or an array of junk."""
    if isinstance(value, str):
        return string(value, field)
    return _object(value, field)
