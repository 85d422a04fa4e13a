"""
Reviews from a CSV file with a header row, as review platforms and
spreadsheets export them.

Columns are found by name: by default each named like the field it fills
(C{id}, C{author}, C{author_avatar_url}, C{rating}, C{date}, C{text},
C{source}, C{source_url}, C{owner_reply_text}, C{owner_reply_date},
C{verified}; case, spaces and dashes do not matter), or as mapped with
C{--column FIELD=HEADER}.  Other columns are ignored; an empty cell is a
missing value.
"""

from __future__ import annotations

import csv
import datetime
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from reviewsd.cli.imported import Imported, UnusableExport, calendar_date, expand

FIELDS = (
    "id",
    "author",
    "author_avatar_url",
    "rating",
    "date",
    "text",
    "source",
    "source_url",
    "owner_reply_text",
    "owner_reply_date",
    "verified",
)
REQUIRED = ("id", "author", "rating", "date")
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_TRUE = frozenset({"true", "yes", "y", "1"})
_FALSE = frozenset({"false", "no", "n", "0"})


@frozen
class CSVOptions:
    """
    @ivar columns: field to header, where they differ from the field's name.
    @ivar source: the C{source} of every review, where there is no column.
    @ivar date_format: a C{strptime} format for the dates, where they are
        not C{YYYY-MM-DD} or RFC 3339 timestamps.
    """

    columns: Mapping[str, str]
    source: str | None = None
    date_format: str | None = None
    delimiter: str = ","


def header_key(name: str) -> str:
    """A header as it is matched: C{Owner Reply-Date} is C{owner_reply_date}."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def read_csv(paths: Sequence[Path], options: CSVOptions) -> list[Imported]:
    found: list[Imported] = []
    for path in expand(paths, ".csv"):
        try:
            with path.open(newline="", encoding="utf-8-sig") as f:
                rows = csv.reader(f, delimiter=options.delimiter)
                header = next(rows, None)
                if header is None:
                    raise UnusableExport(f"{path}: is empty: a header row is needed")
                where = _columns(path, header, options)
                for row in rows:
                    if any(cell.strip() for cell in row):
                        origin = f"{path}: line {rows.line_num}"
                        found.append(_row(origin, row, where, options))
        except OSError as e:
            raise UnusableExport(f"{path}: cannot be read: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise UnusableExport(f"{path}: is not UTF-8 ({e.reason})") from None
        except csv.Error as e:
            raise UnusableExport(f"{path}: is not CSV: {e}") from None
    return found


def _columns(path: Path, header: list[str], options: CSVOptions) -> dict[str, int]:
    """Each field's column index, from the header."""
    index = {header_key(name): i for i, name in reversed(list(enumerate(header)))}
    where: dict[str, int] = {}
    for field in FIELDS:
        name = options.columns.get(field, field)
        if header_key(name) in index:
            where[field] = index[header_key(name)]
        elif field in options.columns:
            raise UnusableExport(
                f"{path}: has no column {name!r} (for {field}); "
                f"its columns are {', '.join(map(repr, header))}"
            )
    missing = [f for f in REQUIRED if f not in where]
    if "source" not in where and options.source is None:
        missing.append("source")
    if missing:
        raise UnusableExport(
            f"{path}: has no column for {', '.join(missing)}; its columns are "
            f"{', '.join(map(repr, header))}. Name them with --column FIELD=HEADER"
            + (" (or give --source)" if "source" in missing else "")
        )
    return where


def _row(
    origin: str, row: list[str], where: Mapping[str, int], options: CSVOptions
) -> Imported:
    cells = {
        field: row[i].strip() if i < len(row) else "" for field, i in where.items()
    }
    if cells["id"]:
        origin = f"{origin} (id {cells['id']!r})"
    try:
        record = _record(cells, options)
    except ValueError as e:
        return Imported(origin, reason=str(e))
    return Imported(origin, record)


def _record(cells: Mapping[str, str], options: CSVOptions) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": cells["id"],
        "author": cells["author"],
        "rating": _rating(cells["rating"]),
        "date": _date(cells["date"], options.date_format, "date"),
        "source": cells.get("source") or options.source,
    }
    for field in ("author_avatar_url", "text", "source_url"):
        if field in cells:
            record[field] = cells[field] or None
    reply_text, reply_date = (
        cells.get("owner_reply_text"),
        cells.get("owner_reply_date"),
    )
    if reply_text and not reply_date:
        raise ValueError("has an owner reply without an owner_reply_date")
    if reply_date and not reply_text:
        raise ValueError("has an owner_reply_date without an owner reply")
    if "owner_reply_text" in cells:
        record["owner_reply"] = (
            {
                "text": reply_text,
                "date": _date(
                    reply_date or "", options.date_format, "owner_reply_date"
                ),
            }
            if reply_text
            else None
        )
    verified = cells.get("verified", "").lower()
    if verified in _TRUE or verified in _FALSE:
        record["verified"] = verified in _TRUE
    elif verified:
        raise ValueError(f"verified {cells['verified']!r} is not true or false")
    return record


def _rating(text: str) -> int | str:
    """A whole number of stars (C{5}, C{5.0}, C{FIVE}); as written otherwise."""
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    try:
        number = float(text)
    except ValueError:
        return text  # the record's check says what is wrong
    return int(number) if number.is_integer() else text


def _date(text: str, date_format: str | None, column: str) -> str:
    try:
        if date_format is not None:
            parsed = datetime.datetime.strptime(text, date_format)
            return parsed.date().isoformat()
        return calendar_date(text).isoformat()
    except ValueError:
        wanted = date_format or "YYYY-MM-DD or an RFC 3339 timestamp"
        raise ValueError(f"{column} {text!r} is not a date ({wanted})") from None
