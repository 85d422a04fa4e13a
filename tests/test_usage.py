"""
What an operator reads of the options: the help text, and what twistd
prints for a bad value.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from twisted.internet import defer
from twisted.internet.utils import getProcessOutputAndValue
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase, TestCase

from reviewsd.config import Options
from tests.support.daemon import TWISTD, environment


class HelpTests(SynchronousTestCase):
    def test_help_is_wrapped_prose(self) -> None:
        """
        Every option's help is text wrapped to the width, with no run of
        spaces from the indentation of a docstring's continuation lines.
        """
        lines = Options().getUsage(width=80).splitlines()
        (first,) = [i for i, line in enumerate(lines) if "--mcp-allowed-origin" in line]
        column = lines[first].index("Also accept")
        for line in lines:
            self.assertNotIn("  ", line[column:].strip(), line)
        entry = [lines[first][column:]]
        for line in lines[first + 1 :]:
            if line[:column].strip():
                break
            entry.append(line[column:])
        self.assertEqual(
            " ".join(entry),
            "Also accept /mcp requests from web pages of this origin, such as "
            "https://app.example (repeatable; * accepts any) [default: the base "
            "URL's origin and localhost].",
        )

    def test_outside_twistd_an_error_is_raised(self) -> None:
        """Parsed on their own (tests, tools), the options raise the error."""
        options = Options()
        self.assertRaises(usage.UsageError, options.parseOptions, ["--lease-min=x"])


class TwistdTests(TestCase):
    timeout = 60

    @defer.inlineCallbacks
    def test_bad_value_is_one_line_on_stderr(self) -> Any:
        """
        twistd itself prints its synopsis, the usage and the error on
        standard output; for reviewsd's options it is one line on standard
        error, and exit status 1.
        """
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [*TWISTD[1:], "-n", "reviewsd", "--lease-min", "x"],
            env=environment(),
        )
        self.assertEqual(code, 1)
        self.assertEqual(out, b"")
        self.assertEqual(err, b"reviewsd: --lease-min 'x': must be a whole number\n")

    @defer.inlineCallbacks
    def test_unknown_option_is_one_line_on_stderr(self) -> Any:
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [*TWISTD[1:], "reviewsd", "--listen-on", "tcp:80"],
            env=environment(),
        )
        self.assertEqual(code, 1)
        self.assertEqual(out, b"")
        self.assertTrue(re.fullmatch(rb"reviewsd: [^\n]*listen-on[^\n]*\n", err), err)
