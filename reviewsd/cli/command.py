"""
The C{reviewsd} command line: its subcommands, and running one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from reviewsd._version import __version__
from reviewsd.cli import check, importing

DESCRIPTION = """\
Work on a reviewsd data directory (business.json, reviews.jsonl or
reviews.json, and optionally insights.json) without starting the daemon,
which `twistd reviewsd --data DIR` runs.
"""

EPILOG = """\
From a Google Business Profile API response to a served data directory:

  reviewsd import --from google-api --data /srv/reviews reviews-page-*.json
  reviewsd check /srv/reviews
  twistd -n reviewsd --data /srv/reviews

`reviewsd COMMAND --help` describes each command.
"""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="reviewsd",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__.public()}"
    )
    commands = top.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    check.add_parser(commands)
    importing.add_parser(commands)
    return top


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one command; its exit status."""
    arguments = parser().parse_args(argv)
    run = check.run if arguments.command == "check" else importing.run
    try:
        return run(arguments, out or sys.stdout, err or sys.stderr)
    except BrokenPipeError:
        # the reader went away (| head): say nothing more, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
