"""
The C{reviewsd} command: C{reviewsd check DIR} lists every problem of a
data directory, where the daemon stops at the first.
"""

from __future__ import annotations

import configparser
import io
import json
import sys
from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor
from twisted.internet.utils import getProcessOutputAndValue
from twisted.trial.unittest import SynchronousTestCase, TestCase

from reviewsd.cli.command import main
from reviewsd.data.loading import DataError, check_directory, load_dataset
from tests.support import BUSINESS, review, write_data
from tests.support.daemon import SOURCE_ROOT, environment


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def broken(directory: Path) -> Path:
    """A data directory with problems in every file, and one edited review."""
    business = dict(BUSINESS, url="example.com", hours=[{"dayOfWeek": "Monday"}])
    records = [
        review(0),
        review(1, rating=9, date="2024-02-30"),
        review(2, date="2024-05-02", owner_reply={"text": "Hi", "date": "2024-05-01"}),
        review(0),
    ]
    write_data(directory, records, business=business, lines=True)
    with (directory / "reviews.jsonl").open("a") as f:
        f.write('{"id": "r9", "rating": \n')
    (directory / "insights.json").write_text(json.dumps({"faq": 1, "summary": 2}))
    return directory


class CheckTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = Path(self.mktemp()).absolute()

    def test_every_problem_one_line_each(self) -> None:
        """
        Every problem of every file, each on one line naming the file, the
        line or record and the field; the edited review as a warning; exit 1.
        """
        broken(self.dir)
        code, out, err = run("check", str(self.dir))
        self.assertEqual(code, 1)
        business = self.dir / "business.json"
        reviews = self.dir / "reviews.jsonl"
        insights = self.dir / "insights.json"
        self.assertEqual(
            out.splitlines(),
            [
                f"{business}: field 'url': must be an absolute http(s) URL, got "
                "the string 'example.com'",
                f"{business}: field 'hours[0].opens': is required",
                f"{reviews}: line 2: record [1] (id 'r0001'): field 'rating': "
                "must be a whole number from 1 to 5, got 9",
                f"{reviews}: line 2: record [1] (id 'r0001'): field 'date': "
                "'2024-02-30' is not a calendar date",
                f"{reviews}: line 4: record [3] (id 'r0000'): field 'id': "
                "repeats the id of record [0]",
                f"{reviews}: line 5, column 24: invalid JSON: Expecting value",
                f"{insights}: field 'faq': must be an array, got 1",
                f"{insights}: field 'summary': must be a non-empty string or "
                "null, got 2",
                f"warning: {reviews}: line 3: record [2] (id 'r0002'): field "
                "'owner_reply.date': the owner's reply (2024-05-01) is dated "
                "before the review (2024-05-02), which was edited after it was "
                "answered: published with its reply",
            ],
        )
        self.assertEqual(
            err,
            f"{self.dir}: 8 problems and 1 warning; the daemon would refuse this "
            "data\n",
        )

    def test_json(self) -> None:
        broken(self.dir)
        code, out, err = run("check", "--json", str(self.dir))
        self.assertEqual((code, err), (1, ""))
        report = json.loads(out)
        self.assertEqual(
            (report["directory"], report["ok"], report["reviews"]),
            (str(self.dir), False, None),
        )
        self.assertEqual(len(report["errors"]), 8)
        self.assertEqual(
            report["errors"][2],
            {
                "file": str(self.dir / "reviews.jsonl"),
                "line": 2,
                "column": None,
                "record": 1,
                "id": "r0001",
                "field": "rating",
                "message": "must be a whole number from 1 to 5, got 9",
                "text": f"{self.dir / 'reviews.jsonl'}: line 2: record [1] "
                "(id 'r0001'): field 'rating': must be a whole number from 1 "
                "to 5, got 9",
            },
        )
        self.assertEqual(report["errors"][5]["column"], 24)
        [warning] = report["warnings"]
        self.assertEqual(
            (warning["id"], warning["field"]), ("r0002", "owner_reply.date")
        )

    def test_good_data(self) -> None:
        """Nothing on stdout, a summary on stderr, exit 0; warnings do not fail."""
        write_data(
            self.dir, [review(n) for n in range(4)] + [review(9, verified=False)]
        )
        self.assertEqual(
            run("check", str(self.dir)),
            (0, "", f"{self.dir}: OK, 4 reviews to publish (1 unverified left out)\n"),
        )
        report = json.loads(run("check", "--json", str(self.dir))[1])
        self.assertEqual(
            (report["ok"], report["errors"], report["warnings"], report["reviews"]),
            (True, [], [], {"published": 4, "unverified": 1}),
        )
        edited = review(
            1, date="2024-03-02", owner_reply={"text": "x", "date": "2024-03-01"}
        )
        write_data(self.dir, [edited])
        code, out, err = run("check", str(self.dir))
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith("warning: "), out)
        self.assertIn("1 review to publish (0 unverified left out), 1 warning", err)

    def test_directory_layout(self) -> None:
        code, out, _ = run("check", str(self.dir))
        self.assertEqual((code, out), (1, f"{self.dir}: is not a directory\n"))
        self.dir.mkdir()
        (self.dir / "reviews.json").write_text("[]")
        (self.dir / "reviews.jsonl").write_text(json.dumps(review(1, rating=0)) + "\n")
        code, out, _ = run("check", str(self.dir))
        self.assertEqual(code, 1)
        self.assertEqual(
            out.splitlines(),
            [
                f"{self.dir / 'business.json'}: is missing: every data directory "
                "needs one",
                f"{self.dir}: holds both reviews.json and reviews.jsonl; keep only one",
                f"{self.dir / 'reviews.jsonl'}: line 1: record [0] (id 'r0001'): "
                "field 'rating': must be a whole number from 1 to 5, got 0",
            ],
        )

    def test_the_daemon_stops_at_the_first(self) -> None:
        """
        The daemon's one line (at start-up and reload) is the first of the
        problems C{check} lists.
        """
        cases: list[dict[str, Any]] = [
            {"reviews": [review(1, rating=0, date="x", verified="no")]},
            {"reviews": [review(1), review(2), review(1), review(2)]},
            {"business": {"name": "", "url": "x"}},
            {
                "business": dict(BUSINESS, hours=[1, 2]),
                "reviews": [review(1, rating=0)],
            },
        ]
        for number, case in enumerate(cases):
            directory = Path(self.mktemp())
            write_data(directory, case.get("reviews"), case.get("business"))
            first = str(self.assertRaises(DataError, load_dataset, directory))
            findings = check_directory(directory)
            self.assertGreater(len(findings.errors), 1, number)
            self.assertEqual(str(findings.errors[0]), first, number)


class HelpTests(SynchronousTestCase):
    def help(self, *argv: str) -> str:
        out = io.StringIO()
        self.patch(sys, "stdout", out)
        error = self.assertRaises(SystemExit, main, [*argv, "--help"])
        self.assertEqual(error.code, 0)
        return out.getvalue()

    def test_help(self) -> None:
        """Each command says what it does, its options and its exit status."""
        top = self.help()
        self.assertIn("check     check a data directory and list every problem", top)
        self.assertIn("reviewsd import --from google-api --data /srv/reviews", top)
        check = self.help("check")
        self.assertIn("Exit status: 0 when the daemon would publish", check)
        self.assertIn("--json", check)
        imported = self.help("import")
        for words in ("--from {google-api,csv}", "--verified {yes,no}", "--column"):
            self.assertIn(words, imported)
        self.assertIn('a new review gets "verified": true', imported)

    def test_a_command_is_required(self) -> None:
        err = io.StringIO()
        self.patch(sys, "stderr", err)
        error = self.assertRaises(SystemExit, main, [])
        self.assertEqual(error.code, 2)
        self.assertIn("the following arguments are required: COMMAND", err.getvalue())


class ConsoleScriptTests(TestCase):
    """The console script setup.cfg installs, and C{python -m reviewsd}."""

    def entry_point(self) -> tuple[str, str]:
        config = configparser.ConfigParser()
        config.read(Path(SOURCE_ROOT) / "setup.cfg")
        [line] = config["options.entry_points"]["console_scripts"].strip().splitlines()
        name, _, target = (part.strip() for part in line.partition("="))
        self.assertEqual(name, "reviewsd")
        module, _, function = target.partition(":")
        return module, function

    @defer.inlineCallbacks
    def test_check_as_a_process(self) -> Any:
        directory = broken(Path(self.mktemp()).absolute())
        module, function = self.entry_point()
        script = f"import sys; from {module} import {function}; sys.exit({function}())"
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            ["-c", script, "check", "--json", str(directory)],
            env=environment(),
            reactor=reactor,
        )
        self.assertEqual(code, 1, err)
        self.assertEqual(len(json.loads(out)["errors"]), 8)
        write_data(directory / "good")
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            ["-m", "reviewsd", "check", str(directory / "good")],
            env=environment(),
            reactor=reactor,
        )
        self.assertEqual((code, out), (0, b""), err)
        self.assertIn(b"OK, 3 reviews to publish", err)
