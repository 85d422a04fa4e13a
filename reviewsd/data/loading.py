"""
Read a data directory into a L{Dataset}, or say exactly what is wrong with it.

Plain blocking Python with no Twisted in it, so that it can run in a worker
thread; every failure is a L{DataError} whose text is one line naming the
file, the record (index and id) and the field.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from attrs import frozen

from reviewsd.data.model import (
    Dataset,
    InvalidField,
    Review,
    business_from_json,
    newest_first,
    review_from_json,
)
from reviewsd.data.overlay import InsightsOverlayError, check_overlay

BUSINESS = "business.json"
REVIEWS_ARRAY = "reviews.json"
REVIEWS_LINES = "reviews.jsonl"
INSIGHTS = "insights.json"

DEMO_DATA = Path(__file__).parent.parent / "demo"
DEMO_CHANGED = 1794528000.0
"""When the demo data last changed: 2026-11-13, the date of its newest review."""

#: The deepest nesting of the business's fields, which are published as given.
DEPTH_MAX = 100


class DataError(Exception):
    """
    A data directory that cannot be published; C{str()} is the one line an
    operator needs.
    """

    def __init__(
        self,
        path: Path,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        record: int | None = None,
        record_id: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message
        self.line = line
        self.column = column
        self.record = record
        self.record_id = record_id
        self.field = field

    def __str__(self) -> str:
        where = [str(self.path)]
        if self.line is not None:
            where.append(
                f"line {self.line}"
                + ("" if self.column is None else f", column {self.column}")
            )
        if self.record is not None:
            where.append(
                f"record [{self.record}]"
                + ("" if self.record_id is None else f" (id {self.record_id!r})")
            )
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{': '.join(where)}: {self.message}"


@frozen
class Sources:
    """
    The files one data directory is read from.

    @ivar insights: the operator's curated insights, when there are any.
    """

    business: Path
    reviews: Path
    insights: Path | None = None

    @property
    def paths(self) -> tuple[Path, ...]:
        extra = () if self.insights is None else (self.insights,)
        return (self.business, self.reviews, *extra)

    def last_modified(self) -> float:
        """
        When the data last changed on disk: the newest file's mtime; for the
        bundled demo, whose files are as old as its installation, the date
        of its newest review, L{DEMO_CHANGED}.
        """
        if self.business.parent.resolve() == DEMO_DATA.resolve():
            return DEMO_CHANGED
        return max(os.stat(path).st_mtime for path in self.paths)


def find_sources(directory: Path) -> Sources:
    """Name the files of a data directory, or raise L{DataError}."""
    if not directory.is_dir():
        raise DataError(directory, "is not a directory")
    business = directory / BUSINESS
    if not business.is_file():
        raise DataError(business, "is missing: every data directory needs one")
    array, lines = directory / REVIEWS_ARRAY, directory / REVIEWS_LINES
    if array.exists() and lines.exists():
        raise DataError(
            directory,
            f"holds both {REVIEWS_ARRAY} and {REVIEWS_LINES}; keep only one",
        )
    if not (array.is_file() or lines.is_file()):
        raise DataError(directory, f"holds neither {REVIEWS_ARRAY} nor {REVIEWS_LINES}")
    insights = directory / INSIGHTS
    return Sources(
        business=business,
        reviews=array if array.is_file() else lines,
        insights=insights if insights.is_file() else None,
    )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _located(path: Path, error: json.JSONDecodeError, line_offset: int) -> DataError:
    return DataError(
        path,
        f"invalid JSON: {error.msg}",
        line=error.lineno + line_offset,
        column=error.colno,
    )


def _decode(path: Path, text: str, *, line_offset: int = 0) -> Any:
    """
    One JSON value, by the standard library; nesting deeper than the stack
    allows it (a thousand levels less the caller's) goes to orjson, which
    takes up to 1,024 levels and says where deeper nesting starts, so that
    any depth gives a value or the one-line located error.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise _located(path, e, line_offset) from None
    except ValueError as e:
        raise DataError(path, f"invalid JSON: {e}") from None
    except RecursionError:
        pass
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise _located(path, e, line_offset) from None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, checked to be UTF-8, without a byte order mark."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(path, f"cannot be read: {e.strerror}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(
            path, f"is not UTF-8 (byte offset {e.start})", line=line
        ) from None
    return data.removeprefix(codecs.BOM_UTF8)


def _read_text(path: Path) -> str:
    return _read_bytes(path).decode("utf-8")


def _parse(path: Path, raw: bytes, *, line_offset: int = 0) -> Any:
    """
    One JSON value, by orjson; what orjson refuses goes to L{_decode}, for
    its message or for a value the checks will name (a lone surrogate).
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _decode(path, raw.decode("utf-8"), line_offset=line_offset)


def _shallow(path: Path, value: Any) -> Any:
    """
    C{value}, unless it nests deeper than L{DEPTH_MAX}: what is published as
    the operator wrote it (the business's own fields) must be shallow enough
    for every renderer, which recurses.
    """
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        stack = [(item, 1)]
        while stack:
            node, level = stack.pop()
            if level > DEPTH_MAX:
                raise DataError(
                    path, f"nests values deeper than {DEPTH_MAX} levels", field=key
                )
            if isinstance(node, dict):
                stack += ((v, level + 1) for v in node.values())
            elif isinstance(node, list):
                stack += ((v, level + 1) for v in node)
    return value


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


def _records(path: Path) -> Iterator[tuple[int | None, bytes | None, Any]]:
    """
    (line, key, value) for each record: the line is known only for JSONL;
    the key is a digest of the record's bytes, and C{value} is the raw bytes
    of a JSONL line, still to be parsed, or an array item's parsed value.
    """
    data = _read_bytes(path)
    if path.name == REVIEWS_LINES:
        # split on LF only: U+2028 and friends may sit inside JSON strings
        for number, line in enumerate(data.split(b"\n"), start=1):
            if line.strip():
                yield number, _digest(line), line
        return
    value = _parse(path, data)
    if not isinstance(value, list):
        raise DataError(path, "must hold a JSON array of review objects")
    for item in value:
        try:
            key: bytes | None = _digest(orjson.dumps(item))
        except TypeError:
            key = None  # what orjson cannot write is checked, and refused
        yield None, key, item


def _review(path: Path, index: int, line: int | None, value: Any) -> Review:
    if isinstance(value, bytes):
        value = _parse(path, value, line_offset=(line or 1) - 1)
    try:
        return review_from_json(value)
    except InvalidField as e:
        record_id = value.get("id") if isinstance(value, dict) else None
        raise DataError(
            path,
            e.message,
            line=line,
            record=index,
            record_id=record_id if isinstance(record_id, str) else None,
            field=e.field,
        ) from None


class Reader:
    """
    Reads data directories, remembering the review records of its last
    successful reading by a digest of their bytes: a record read again
    unchanged is neither parsed nor checked again, and is the same
    L{Review} object, so a reload costs what changed.
    """

    def __init__(self) -> None:
        self._known: dict[bytes, Review] = {}

    def read(self, directory: Path) -> tuple[Sources, Dataset]:
        """
        Read and check a whole data directory.

        Unverified reviews are checked like the others (a broken record is
        broken whether or not it is shown) but never published.
        """
        sources = find_sources(directory)
        try:
            business = business_from_json(
                _shallow(
                    sources.business,
                    _decode(sources.business, _read_text(sources.business)),
                )
            )
        except InvalidField as e:
            raise DataError(sources.business, e.message, field=e.field) from None

        known, seen = self._known, {}
        published: list[Review] = []
        first_seen: dict[str, int] = {}
        unpublished = 0
        path = sources.reviews
        for index, (line, key, value) in enumerate(_records(path)):
            review = None if key is None else known.get(key)
            if review is None:
                review = _review(path, index, line, value)
            if key is not None:
                seen[key] = review
            if review.id in first_seen:
                raise DataError(
                    path,
                    f"repeats the id of record [{first_seen[review.id]}]",
                    line=line,
                    record=index,
                    record_id=review.id,
                    field="id",
                )
            first_seen[review.id] = index
            if review.verified:
                published.append(review)
            else:
                unpublished += 1
        overlay = None
        if sources.insights is not None:
            try:
                overlay = check_overlay(
                    _decode(sources.insights, _read_text(sources.insights))
                )
            except InsightsOverlayError as e:
                raise DataError(sources.insights, e.message, field=e.field) from None
        self._known = seen  # only now: a refused reading keeps the last one's
        return sources, Dataset(
            business=business,
            reviews=newest_first(published),
            unpublished=unpublished,
            insights_overlay=overlay,
        )


def load_dataset(directory: Path) -> tuple[Sources, Dataset]:
    """Read and check a whole data directory, once."""
    return Reader().read(directory)
