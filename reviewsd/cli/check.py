"""
C{reviewsd check DIR}: every problem of a data directory, one located line
each, checked as the daemon checks it at start-up and reload, which stop at
the first.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from reviewsd.data.loading import Findings, check_directory

HELP = "check a data directory and list every problem"

DESCRIPTION = """\
Check a data directory as the daemon does when it starts or reloads, without
starting anything, and list every problem (the daemon names only the first),
one line each: the file, the line or record, the field, and what is wrong.
Reviews edited after their owner's reply are listed as warnings: they are
published.

Exit status: 0 when the daemon would publish the directory, 1 when it would
refuse it.
"""


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "check",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "directory", metavar="DIR", type=Path, help="the data directory"
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (errors, warnings, counts) instead of lines",
    )


def run(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    findings = check_directory(arguments.directory)
    if arguments.json:
        json.dump(report(arguments.directory, findings), out, indent=2)
        out.write("\n")
    else:
        for problem in findings.errors:
            out.write(f"{problem}\n")
        for problem in findings.warnings:
            out.write(f"warning: {problem}\n")
        err.write(summary(arguments.directory, findings) + "\n")
    return 1 if findings.errors else 0


def report(directory: Path, findings: Findings) -> dict[str, Any]:
    """The findings as one JSON object."""
    dataset = findings.dataset
    return {
        "directory": str(directory),
        "ok": not findings.errors,
        "errors": [problem.as_json() for problem in findings.errors],
        "warnings": [problem.as_json() for problem in findings.warnings],
        "reviews": (
            None
            if dataset is None
            else {"published": len(dataset.reviews), "unverified": dataset.unpublished}
        ),
    }


def summary(directory: Path, findings: Findings) -> str:
    warned = _count(len(findings.warnings), "warning")
    if findings.errors:
        return (
            f"{directory}: {_count(len(findings.errors), 'problem')}"
            f"{f' and {warned}' if findings.warnings else ''}; "
            "the daemon would refuse this data"
        )
    assert findings.dataset is not None
    return (
        f"{directory}: OK, {_count(len(findings.dataset.reviews), 'review')} "
        f"to publish ({findings.dataset.unpublished} unverified left out)"
        f"{f', {warned}' if findings.warnings else ''}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
