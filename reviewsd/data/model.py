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

JSONObject = dict[str, Any]


class InvalidField(ValueError):
    """
    A value that cannot be published.

    @ivar field: dotted path of the field (C{owner_reply.date},
        C{services[2].id}), or C{None} when the whole record is wrong.
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def within(self, parent: str) -> InvalidField:
        """The same problem, seen from the record that holds C{parent}."""
        field = parent if self.field is None else f"{parent}.{self.field}"
        return InvalidField(field, self.message)


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
    """

    name: str
    url: str | None
    service_areas: tuple[str, ...]
    services: tuple[Service, ...]
    technicians: tuple[Technician, ...]
    metadata: JSONObject


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


def describe(value: object) -> str:
    """A JSON value in a few words, for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    return "a JSON array" if isinstance(value, list) else "a JSON object"


def _text(value: object, field: str, *, empty_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise InvalidField(field, f"must be a string, got {describe(value)}")
    if not empty_ok and not value.strip():
        raise InvalidField(field, "must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidField(
            field, "holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)"
        ) from None
    return value


def _url(value: object, field: str) -> str:
    text = _text(value, field)
    parts = urlsplit(text)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() or ord(c) < 0x20 for c in text)
    ):
        raise InvalidField(
            field, f"must be an absolute http(s) URL, got {describe(value)}"
        )
    return text


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
        _text(item, f"{field}[{i}]", empty_ok=False)
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
            text=_required(reply, "text", _text),
            date=_required(reply, "date", _date),
        )
    except InvalidField as e:
        raise e.within(field) from None


def review_from_json(value: object) -> Review:
    """
    Admit one review record, or raise L{InvalidField}.

    Nullable fields may be missing; unknown fields are ignored and never
    published.
    """
    record = _object(value, None)
    review = Review(
        id=_required(record, "id", lambda v, f: _text(v, f, empty_ok=False)),
        author=_required(record, "author", _text),
        author_avatar_url=_nullable(record, "author_avatar_url", _url),
        rating=_required(record, "rating", _rating),
        date=_required(record, "date", _date),
        text=_nullable(record, "text", _text),
        source=_required(record, "source", lambda v, f: _text(v, f, empty_ok=False)),
        source_url=_nullable(record, "source_url", _url),
        owner_reply=_nullable(record, "owner_reply", _owner_reply),
        verified=_required(record, "verified", _boolean),
    )
    if review.owner_reply is not None and review.owner_reply.date < review.date:
        raise InvalidField(
            "owner_reply.date",
            f"{review.owner_reply.date} is before the review's date {review.date}",
        )
    return review


def _service(value: object, field: str) -> Service:
    record = _object(value, field)
    try:
        service_id = _required(record, "id", _text)
        if not _SERVICE_ID.match(service_id):
            raise InvalidField(
                "id",
                f"must be letters, digits, '.', '_' or '-' (used in URLs), "
                f"got {service_id!r}",
            )
        return Service(
            id=service_id,
            name=_required(record, "name", lambda v, f: _text(v, f, empty_ok=False)),
            keywords=_strings(record.get("keywords", []), "keywords"),
        )
    except InvalidField as e:
        raise e.within(field) from None


def _technician(value: object, field: str) -> Technician:
    record = _object(value, field)
    try:
        return Technician(
            name=_required(record, "name", lambda v, f: _text(v, f, empty_ok=False)),
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
    record = _object(value, None)
    name = _required(record, "name", lambda v, f: _text(v, f, empty_ok=False))
    for key, item in record.items():
        if (key == "url" or key.endswith("_url")) and item is not None:
            _url(item, key)
    for key in ("description", "telephone", "email"):
        _nullable(record, key, _text)
    _nullable(record, "geo", _geo)
    for key in ("address", "hours"):
        _nullable(record, key, _address_or_hours)
    categories = _strings(record.get("categories") or [], "categories")
    areas = _strings(record.get("service_areas") or [], "service_areas")
    services = tuple(
        _service(item, f"services[{i}]")
        for i, item in enumerate(_array(record.get("services") or [], "services"))
    )
    technicians = tuple(
        _technician(item, f"technicians[{i}]")
        for i, item in enumerate(_array(record.get("technicians") or [], "technicians"))
    )
    _unique([s.id for s in services], "services", "id")
    _unique([t.name for t in technicians], "technicians", "name")
    _unique(areas, "service_areas", "place")
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
    )


def _address_or_hours(value: object, field: str) -> object:
    """Free-form, but a string or an object, not a number or an array of junk."""
    if isinstance(value, str):
        return _text(value, field)
    return _object(value, field)
