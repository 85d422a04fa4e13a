"""
Read a data directory into a L{Dataset}, or say exactly what is wrong with it.

Plain blocking Python (it only logs through Twisted), so that it can run in
a worker thread; every failure is a L{DataError} whose text is one line
naming the file, the record (index and id) and the field.  The daemon stops
at the first (L{Reader}); L{check_directory} lists them all.
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
from twisted.logger import Logger

from reviewsd.data.fields import InvalidField
from reviewsd.data.model import (
    Business,
    Dataset,
    Review,
    business_from_json,
    business_problems,
    newest_first,
    review_from_json,
    review_problems,
)
from reviewsd.data.overlay import InsightsOverlayError, check_overlay

log = Logger()

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

    def as_json(self) -> dict[str, Any]:
        """The problem for machines: where, each part its own key, and what."""
        return {
            "file": str(self.path),
            "line": self.line,
            "column": self.column,
            "record": self.record,
            "id": self.record_id,
            "field": self.field,
            "message": self.message,
            "text": str(self),
        }

    def where(self) -> str:
        """The file, line, record and field: the line's start."""
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
        return ": ".join(where)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


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


class Sink:
    """
    Where the problems of a reading go: the daemon's raises the first
    (L{FIRST_ERROR}); L{Findings} keeps every one.

    @ivar every: whether reading goes on after a problem, to find the rest.
    """

    every = False
    refused = False
    """Whether a problem was found: a reading that goes on publishes nothing."""

    def error(self, problem: DataError) -> None:
        raise problem

    def warning(self, problem: DataError) -> None:
        log.warn(
            "{where}: {what}",
            where=problem.where(),
            what=problem.message,
            file=str(problem.path),
            record=problem.record,
            review_id=problem.record_id,
            field=problem.field,
        )


FIRST_ERROR = Sink()


class Findings(Sink):
    """Every problem of a data directory, and what it would publish."""

    every = True

    def __init__(self) -> None:
        self.errors: list[DataError] = []
        self.warnings: list[DataError] = []
        self.dataset: Dataset | None = None

    def error(self, problem: DataError) -> None:
        self.errors.append(problem)
        self.refused = True

    def warning(self, problem: DataError) -> None:
        self.warnings.append(problem)


def find_sources(directory: Path) -> Sources:
    """Name the files of a data directory, or raise L{DataError}."""
    found = _find(directory, FIRST_ERROR)
    assert found is not None  # or it raised
    business, reviews, insights = found
    assert business is not None
    return Sources(business, reviews[0], insights)


def _find(
    directory: Path, sink: Sink
) -> tuple[Path | None, list[Path], Path | None] | None:
    """The business file, the review files and the insights file there are."""
    if not directory.is_dir():
        sink.error(DataError(directory, "is not a directory"))
        return None
    business = directory / BUSINESS
    if not business.is_file():
        sink.error(DataError(business, "is missing: every data directory needs one"))
    array, lines = directory / REVIEWS_ARRAY, directory / REVIEWS_LINES
    if array.exists() and lines.exists():
        sink.error(
            DataError(
                directory,
                f"holds both {REVIEWS_ARRAY} and {REVIEWS_LINES}; keep only one",
            )
        )
    reviews = [path for path in (array, lines) if path.is_file()]
    if not reviews:
        sink.error(
            DataError(directory, f"holds neither {REVIEWS_ARRAY} nor {REVIEWS_LINES}")
        )
    insights = directory / INSIGHTS
    return (
        business if business.is_file() else None,
        reviews,
        insights if insights.is_file() else None,
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


def _review(
    path: Path,
    index: int,
    line: int | None,
    value: Any,
    sink: Sink,
    first_seen: dict[str, int],
) -> Review | None:
    """
    One record, or C{None} when it is refused (and reading goes on: the id
    of a refused record is still taken, for the records after it).
    """
    if isinstance(value, bytes):
        try:
            value = _parse(path, value, line_offset=(line or 1) - 1)
        except DataError as e:
            sink.error(e)
            return None
    try:
        review = review_from_json(value)
    except InvalidField as e:
        record_id = value.get("id") if isinstance(value, dict) else None
        if isinstance(record_id, str):
            first_seen.setdefault(record_id, index)
        for problem in review_problems(value) if sink.every else [e]:
            sink.error(
                DataError(
                    path,
                    problem.message,
                    line=line,
                    record=index,
                    record_id=record_id if isinstance(record_id, str) else None,
                    field=problem.field,
                )
            )
        return None
    if review.edited_after_reply:
        assert review.owner_reply is not None
        sink.warning(
            DataError(
                path,
                f"the owner's reply ({review.owner_reply.date}) is dated before "
                f"the review ({review.date}), which was edited after it was "
                "answered: published with its reply",
                line=line,
                record=index,
                record_id=review.id,
                field="owner_reply.date",
            )
        )
    return review


def _business(path: Path, sink: Sink) -> Business | None:
    try:
        value = _shallow(path, _decode(path, _read_text(path)))
    except DataError as e:
        sink.error(e)
        return None
    try:
        return business_from_json(value)
    except InvalidField as e:
        for problem in business_problems(value) if sink.every else [e]:
            sink.error(DataError(path, problem.message, field=problem.field))
    return None


def _overlay(path: Path, sink: Sink) -> dict[str, Any] | None:
    """The operator's insights, checked group by group when all are wanted."""
    try:
        value = _decode(path, _read_text(path))
    except DataError as e:
        sink.error(e)
        return None
    if not sink.every or not isinstance(value, dict):
        try:
            return check_overlay(value)
        except InsightsOverlayError as e:
            sink.error(DataError(path, e.message, field=e.field))
            return None
    refused = False
    for key, group in value.items():
        try:
            check_overlay({key: group})
        except InsightsOverlayError as e:
            sink.error(DataError(path, e.message, field=e.field))
            refused = True
    return None if refused else dict(value)


class Reader:
    """
    Reads data directories, remembering the review records of its last
    successful reading by a digest of their bytes: a record read again
    unchanged is neither parsed nor checked again, and is the same
    L{Review} object, so a reload costs what changed (and a review edited
    after its reply is warned about once, not at every reload).
    """

    def __init__(self) -> None:
        self._known: dict[bytes, Review] = {}

    def read(self, directory: Path) -> tuple[Sources, Dataset]:
        """
        Read and check a whole data directory, raising the first problem.

        Unverified reviews are checked like the others (a broken record is
        broken whether or not it is shown) but never published.
        """
        read = self._read(directory, FIRST_ERROR)
        assert read is not None  # or it raised
        return read

    def _read(self, directory: Path, sink: Sink) -> tuple[Sources, Dataset] | None:
        found = _find(directory, sink)
        if found is None:
            return None
        business_path, review_paths, insights = found
        business = None if business_path is None else _business(business_path, sink)
        seen: dict[bytes, Review] = {}
        published: list[Review] = []
        unpublished = 0
        for path in review_paths:
            for review in self._reviews(path, sink, seen):
                if review.verified:
                    published.append(review)
                else:
                    unpublished += 1
        overlay = None if insights is None else _overlay(insights, sink)
        if (
            business is None
            or business_path is None
            or len(review_paths) != 1
            or sink.refused
        ):
            return None
        self._known = seen  # only now: a refused reading keeps the last one's
        return Sources(business_path, review_paths[0], insights), Dataset(
            business=business,
            reviews=newest_first(published),
            unpublished=unpublished,
            insights_overlay=overlay,
        )

    def _reviews(
        self, path: Path, sink: Sink, seen: dict[bytes, Review]
    ) -> Iterator[Review]:
        """The admitted records of one file, each id once."""
        known = self._known
        first_seen: dict[str, int] = {}
        try:
            for index, (line, key, value) in enumerate(_records(path)):
                review = None if key is None else known.get(key)
                if review is None:
                    review = _review(path, index, line, value, sink, first_seen)
                    if review is None:
                        continue
                if key is not None:
                    seen[key] = review
                if review.id in first_seen:
                    sink.error(
                        DataError(
                            path,
                            f"repeats the id of record [{first_seen[review.id]}]",
                            line=line,
                            record=index,
                            record_id=review.id,
                            field="id",
                        )
                    )
                    continue
                first_seen[review.id] = index
                yield review
        except DataError as e:
            sink.error(e)


def load_dataset(directory: Path) -> tuple[Sources, Dataset]:
    """Read and check a whole data directory, once."""
    return Reader().read(directory)


def check_directory(directory: Path) -> Findings:
    """
    Every problem of a data directory, each a L{DataError}, and the reviews
    edited after their reply as warnings; with no error, the L{Dataset} it
    would publish.  Nothing is started and nothing is logged.
    """
    findings = Findings()
    read = Reader()._read(directory, findings)
    if read is not None:
        findings.dataset = read[1]
    return findings
