"""
C{reviewsd import}: turn exports (a Google Business Profile API response, a
CSV file) into a data directory's C{reviews.jsonl}, merged by id and written
in one step, so that a running daemon reloads once.  It reads files only:
nothing goes over the network.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any, TextIO

from reviewsd.cli.csvfile import FIELDS, CSVOptions, read_csv
from reviewsd.cli.google import read_google
from reviewsd.cli.imported import Imported, UnusableExport
from reviewsd.cli.merge import BrokenReviews, Merge, merge, write_atomically
from reviewsd.data.loading import BUSINESS, REVIEWS_ARRAY, REVIEWS_LINES

HELP = "merge reviews exported from a platform into a data directory"

_FIELD_LINES = textwrap.fill(
    f"fields ({', '.join(FIELDS)}) or mapped with --column FIELD=HEADER.",
    width=76,
    initial_indent=" " * 21,
    subsequent_indent=" " * 21,
)

DESCRIPTION = f"""\
Read reviews exported from a platform and merge them into DIR/{REVIEWS_LINES}
by id: a new id is added, a changed review replaces the one with its id (in
place, keeping the fields the export does not give), anything else in the
file is left as it is. The file is replaced in one step (a temporary file in
DIR, flushed, renamed over it), so a daemon serving DIR reloads once; when
nothing changed, nothing is written. No network access: FILE is what you
downloaded (see the README for how).

  --from google-api  the JSON of the Google Business Profile API's
                     accounts.locations.reviews.list: one file per page, or
                     a directory of them. A review's text is kept in the
                     language it was written in (Google's "(Translated by
                     Google) ... (Original) ..." gives the original).
  --from csv         a CSV file with a header row; columns named like the
{_FIELD_LINES}

Publishing: a new review gets "verified": true (--verified no holds new
ones back until you set it yourself); a review already in the file keeps its
"verified", unless a CSV's verified column says otherwise.

Exit status: 0 when every review was imported, 1 when some were refused (the
others are written), 2 when nothing could be done.
"""


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "import",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "--from",
        dest="form",
        required=True,
        choices=("google-api", "csv"),
        help="what FILE holds",
    )
    command.add_argument(
        "--data",
        required=True,
        type=Path,
        metavar="DIR",
        help=f"the data directory; created, with its {REVIEWS_LINES}, if need be",
    )
    command.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="exported files, or directories of them (*.json, *.csv)",
    )
    command.add_argument(
        "--verified",
        choices=("yes", "no"),
        default="yes",
        help='"verified" of new reviews: yes (default) publishes them, no holds '
        "them back; reviews already in the file keep theirs",
    )
    command.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would change, and write nothing",
    )
    google = command.add_argument_group("google-api")
    google.add_argument(
        "--date",
        choices=("updated", "created"),
        default="updated",
        help="which time dates a review: updated (default: its last edit, so "
        "that feeds and incremental sync carry an edited review again) or created",
    )
    table = command.add_argument_group("csv")
    table.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="FIELD=HEADER",
        help="read FIELD from the column HEADER (repeatable), e.g. "
        "--column text='Review text' --column owner_reply_text=Response",
    )
    table.add_argument(
        "--source",
        help="the source of every review (google, yelp, ...) where there is "
        "no source column",
    )
    table.add_argument(
        "--date-format",
        metavar="FORMAT",
        help="how the dates are written, for strptime (e.g. %%m/%%d/%%Y); "
        "default YYYY-MM-DD or RFC 3339 timestamps",
    )
    table.add_argument(
        "--delimiter", default=",", help="the field separator (default ',')"
    )


def run(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        imported = read(arguments)
        result, target = apply(arguments.data, imported, arguments)
    except (UnusableExport, BrokenReviews) as e:
        err.write(f"reviewsd import: {e}\n")
        return 2
    out.write(summary(result, target, dry_run=arguments.dry_run) + "\n")
    for origin, reason in result.refused:
        out.write(f"refused: {origin}: {reason}\n")
    if not (arguments.data / BUSINESS).is_file():
        out.write(
            f"next: write {arguments.data / BUSINESS} (see the README), then "
            f"run: reviewsd check {arguments.data}\n"
        )
    return 1 if result.refused else 0


def read(arguments: argparse.Namespace) -> list[Imported]:
    """The records of the files named, in the form asked for."""
    for path in arguments.files:
        if not path.exists():
            raise UnusableExport(f"{path}: no such file or directory")
    if arguments.form == "google-api":
        return read_google(arguments.files, dated=arguments.date)
    columns = {}
    for mapping in arguments.column:
        name, equals, header = mapping.partition("=")
        if not equals or name.strip() not in FIELDS or not header.strip():
            raise UnusableExport(
                f"--column {mapping!r}: write FIELD=HEADER, FIELD one of "
                + ", ".join(FIELDS)
            )
        columns[name.strip()] = header.strip()
    options = CSVOptions(
        columns, arguments.source, arguments.date_format, arguments.delimiter
    )
    return read_csv(arguments.files, options)


def apply(
    directory: Path, imported: list[Imported], arguments: argparse.Namespace
) -> tuple[Merge, Path]:
    """Merge into the directory's reviews, and write them unless told not to."""
    if (directory / REVIEWS_ARRAY).exists():
        raise UnusableExport(
            f"{directory} keeps its reviews in {REVIEWS_ARRAY}; import merges "
            f"into {REVIEWS_LINES}: write each record of the array on a line of "
            f"its own in {REVIEWS_LINES}, and remove {REVIEWS_ARRAY}"
        )
    target = directory / REVIEWS_LINES
    try:
        content = target.read_bytes()
    except FileNotFoundError:
        content = b""
    except OSError as e:
        raise UnusableExport(f"{target}: cannot be read: {e.strerror}") from None
    result = merge(content, target, imported, verified=arguments.verified == "yes")
    if result.writes and not arguments.dry_run:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            write_atomically(target, result.content)
        except OSError as e:
            raise UnusableExport(f"{target}: cannot be written: {e}") from None
    return result, target


def summary(result: Merge, target: Path, *, dry_run: bool) -> str:
    counts = (
        f"{len(result.added)} added, {len(result.changed)} changed, "
        f"{len(result.unchanged)} unchanged, {len(result.refused)} refused"
    )
    if dry_run:
        return f"{target} (dry run, nothing written): {counts}"
    if not result.writes:
        return f"{target}: {counts}; nothing to write"
    return f"{target}: {counts}"
