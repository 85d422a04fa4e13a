"""
What an export's reader gives the import: review records in the data
directory's form, or why one could not be read.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

_TIMESTAMP = re.compile(
    r"\A(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?\Z"
)


class UnusableExport(Exception):
    """An input the import cannot use at all: nothing is written."""


@frozen
class Imported:
    """
    One record of an export.

    @ivar origin: where it is, for messages: C{page-1.json: reviews[3]}.
    @ivar record: the review's fields the export gives, in the data
        directory's form (the others are kept from the record being
        replaced, or null); C{None} when it cannot be read.
    @ivar reason: why it cannot, when it cannot.
    """

    origin: str
    record: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def review_id(self) -> str | None:
        value = None if self.record is None else self.record.get("id")
        return value if isinstance(value, str) else None


def expand(paths: Sequence[Path], suffix: str) -> Iterator[Path]:
    """
    The files named, a directory standing for its files ending in C{suffix},
    in name order (the pages of a listing, in the order they were saved).
    """
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.name.endswith(suffix))
        else:
            yield path


def calendar_date(text: str) -> datetime.date:
    """
    The UTC date of an RFC 3339 timestamp (C{2024-05-01T17:22:03.123456789Z}),
    or the date itself when written C{YYYY-MM-DD}; ValueError otherwise.
    """
    text = text.strip()
    if len(text) == 10:
        return datetime.date.fromisoformat(text)
    match = _TIMESTAMP.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a date or an RFC 3339 timestamp")
    year, month, day, hour, minute, second = map(int, match.groups()[:6])
    sign, zone_hours, zone_minutes = match.group(8, 9, 10)
    offset = datetime.timedelta(0)
    if sign is not None:
        offset = datetime.timedelta(hours=int(zone_hours), minutes=int(zone_minutes))
        offset = -offset if sign == "-" else offset
    moment = datetime.datetime(
        year, month, day, hour, minute, second, tzinfo=datetime.timezone(offset)
    )
    return moment.astimezone(datetime.timezone.utc).date()
