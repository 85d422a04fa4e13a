"""
Merging imported records into a data directory's C{reviews.jsonl}, by id,
and writing it so that a running daemon sees one change.

A record whose id is new is added (at the end, oldest first); one whose id
is there already replaces it where it stands when it differs, keeping the
fields the import does not give (and, unless the import gives it,
C{verified}); every other line is left as it is, byte for byte.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from reviewsd.cli.imported import Imported
from reviewsd.data.model import review_problems

BLANK = {
    "id": None,
    "author": None,
    "author_avatar_url": None,
    "rating": None,
    "date": None,
    "text": None,
    "source": None,
    "source_url": None,
    "owner_reply": None,
    "verified": None,
}
"""A new record's fields, in the order they are written."""


class BrokenReviews(Exception):
    """A C{reviews.jsonl} whose records cannot be told apart by id."""


@frozen
class Merge:
    """
    The new content of C{reviews.jsonl} and what the import did: the ids
    added, changed and unchanged, and the (origin, reason) of each imported
    record left out.
    """

    content: bytes
    added: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]

    @property
    def writes(self) -> bool:
        return bool(self.added or self.changed)


def existing_records(content: bytes, path: Path) -> dict[str, tuple[int, Any]]:
    """Each record's id: its line index and its value."""
    records: dict[str, tuple[int, Any]] = {}
    for index, line in enumerate(content.split(b"\n")):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        record_id = value.get("id") if isinstance(value, dict) else None
        if not isinstance(record_id, str):
            raise BrokenReviews(
                f"{path}: line {index + 1} is not a JSON object with an id; "
                f"fix it first (reviewsd check {path.parent})"
            )
        if record_id in records:
            raise BrokenReviews(
                f"{path}: line {index + 1} repeats the id {record_id!r} of line "
                f"{records[record_id][0] + 1}; fix it first"
            )
        records[record_id] = (index, value)
    return records


def merge(
    content: bytes, path: Path, imported: Sequence[Imported], *, verified: bool
) -> Merge:
    """
    C{content} (of C{path}) with C{imported} merged in; new records without
    a C{verified} of their own get C{verified}.
    """
    lines = content.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    existing = existing_records(content, path)
    added: list[dict[str, Any]] = []
    changed: list[str] = []
    unchanged: list[str] = []
    refused: list[tuple[str, str]] = []
    taken: dict[str, Imported] = {}
    for item in imported:
        if item.record is None:
            refused.append((item.origin, item.reason or "cannot be read"))
            continue
        record_id = item.record["id"]
        first = taken.setdefault(record_id, item)
        if first is not item:
            if first.record != item.record:
                refused.append(
                    (item.origin, f"repeats the id of {first.origin}, otherwise")
                )
            continue
        if record_id in existing:
            index, old = existing[record_id]
            record = {**old, **item.record}
        else:
            record = {**BLANK, "verified": verified, **item.record}
        reasons = _problems(record)
        if reasons:
            refused.append((item.origin, reasons))
        elif record_id not in existing:
            added.append(record)
        elif record == old:
            unchanged.append(record_id)
        else:
            lines[index] = _line(record)
            changed.append(record_id)
    added.sort(key=lambda r: (r["date"], r["id"]))
    lines += map(_line, added)
    return Merge(
        b"".join(line + b"\n" for line in lines),
        tuple(r["id"] for r in added),
        tuple(changed),
        tuple(unchanged),
        tuple(refused),
    )


def _problems(record: dict[str, Any]) -> str:
    """What the daemon would refuse in C{record}, in one phrase; empty if nothing."""
    return "; ".join(
        f"field {p.field!r}: {p.message}" if p.field else p.message
        for p in review_problems(record)
    )


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")


def write_atomically(path: Path, content: bytes) -> None:
    """
    Replace C{path} with C{content} in one step: a temporary file in the
    same directory, flushed to disk, renamed over it (with the old file's
    mode and, where permitted, owner), then the directory flushed. A daemon
    watching the directory sees one new file, never a half-written one.
    """
    try:
        old = os.stat(path)
    except FileNotFoundError:
        old = None
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        if old is None:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        else:
            os.chmod(temporary, old.st_mode & 0o7777)
            try:
                os.chown(temporary, old.st_uid, old.st_gid)
            except PermissionError:
                pass  # not root: the file is the importing user's
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
