"""
C{reviewsd import}: a Google Business Profile API response or a CSV export
into a data directory's C{reviews.jsonl}, merged by id and written in one
step; and against the real daemon, one reload and one WebSub delivery.
"""

from __future__ import annotations

import copy
import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor, task
from twisted.internet.utils import getProcessOutputAndValue
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.cli.command import main
from reviewsd.cli.google import original
from reviewsd.data.links import HUB_PATH, REVIEWS_PATH
from reviewsd.data.loading import check_directory, load_dataset
from tests.support import BUSINESS, review, write_data
from tests.support.daemon import DaemonTestCase, environment, free_port
from tests.support.tls import TLSFiles, listen_https
from tests.support.websub import Subscriber

FIXTURES = Path(__file__).parent / "fixtures"
GOOGLE = FIXTURES / "google-api"
CSV = FIXTURES / "reviews.csv"

EDITED = "AbFvOqnB3sLe8KtW5yDf1QrZ7mXc2hPv"
"""The fixture's review edited after the owner replied to it."""

CSV_COLUMNS = [
    "--column",
    "id=Review ID",
    "--column",
    "author=Reviewer",
    "--column",
    "rating=Stars",
    "--column",
    "date=Posted",
    "--column",
    "text=review text",
    "--column",
    "source_url=Link",
    "--column",
    "owner_reply_text=Response",
    "--column",
    "owner_reply_date=Response date",
    "--date-format",
    "%m/%d/%Y",
    "--source",
    "yelp",
]


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


def new_data(directory: Path) -> Path:
    """A data directory with a business and no reviews yet."""
    directory.mkdir(parents=True)
    (directory / "business.json").write_text(json.dumps(BUSINESS))
    return directory


def records(directory: Path) -> dict[str, dict[str, Any]]:
    lines = (directory / "reviews.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def edited_export(directory: Path) -> Path:
    """
    The first page again, with one review edited by its author (new text,
    rating and update time) and one new review.
    """
    page = json.loads((GOOGLE / "page-1.json").read_text())
    changed = page["reviews"][1]
    changed.update(
        starRating="FIVE",
        comment="Arreglaron la fuga el mismo día. Volvieron a revisar sin costo.",
        updateTime="2026-11-10T16:02:11.204Z",
    )
    added = copy.deepcopy(page["reviews"][0])
    added.update(
        reviewId="AbFvOqwN7hRt2LcX5mKd9VsQ3bYe8pJg",
        name="accounts/108233794758290014277/locations/4417396129090061412/"
        "reviews/AbFvOqwN7hRt2LcX5mKd9VsQ3bYe8pJg",
        reviewer={"displayName": "Dana Ruiz"},
        comment="Fast furnace tune-up before the first cold snap.",
        createTime="2026-11-12T08:30:00Z",
        updateTime="2026-11-12T08:30:00Z",
    )
    del added["reviewReply"]
    page["reviews"].insert(0, added)
    directory.mkdir(parents=True)
    (directory / "page-1.json").write_text(json.dumps(page, indent=2))
    return directory


class GoogleImportTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.data = new_data(Path(self.mktemp()).absolute())

    def test_a_realistic_response(self) -> None:
        """
        Two pages: every review with a star rating is added, the one
        without is refused with its reason, and the directory publishes.
        """
        code, out, err = run(
            "import", "--from", "google-api", "--data", self.data, GOOGLE
        )
        self.assertEqual((code, err), (1, ""))
        target = self.data / "reviews.jsonl"
        self.assertEqual(
            out.splitlines(),
            [
                f"{target}: 6 added, 0 changed, 0 unchanged, 1 refused",
                f"refused: {GOOGLE / 'page-2.json'}: reviews[2] (id "
                "'AbFvOqtZ9kVd4RsC7pWm2YxN8bLf3hEq'): starRating is "
                "'STAR_RATING_UNSPECIFIED', not ONE to FIVE",
            ],
        )
        imported = records(self.data)
        self.assertEqual(
            list(imported),
            [
                "AbFvOqsM5cQa0ZeR3nUx8HwB6kTd1fYi",
                "AbFvOqrD2wJh7XmN4bVs9KtF1yPc6eGz",
                "AbFvOqpH6gNs1VbK8cTw3ZyL5rMe9dQj",
                "AbFvOqkT4nPb7YcR2wJx9MhE6dQz0aLu",
                "AbFvOqmW9rYk2VdH3xGz7LpQ1sTn8uEb",
                EDITED,
            ],
            "added oldest first",
        )
        self.assertEqual(
            imported["AbFvOqmW9rYk2VdH3xGz7LpQ1sTn8uEb"],
            {
                "id": "AbFvOqmW9rYk2VdH3xGz7LpQ1sTn8uEb",
                "author": "Margaret Ocampo",
                "author_avatar_url": "https://lh3.googleusercontent.com/a-/ALV-Uj"
                "W4kXq8Zb1mS3r0pTn7uYv2cF6hJdLgQeR9sKwA=s120-c-rp-mo-br100",
                "rating": 5,
                "date": "2026-10-28",
                "text": "Priya and Sam replaced the rotted boards on our deck and "
                "re-stained the whole thing in two days. They covered the flower "
                "beds before they started and cleaned up every screw. Fair "
                "price, too.",
                "source": "google",
                "source_url": None,
                "owner_reply": {
                    "text": "Thank you, Margaret! Sam says your tomatoes made it "
                    "through just fine. Enjoy the deck.",
                    "date": "2026-10-29",
                },
                "verified": True,
            },
        )
        # translated by Google, either way round: the original is kept
        self.assertEqual(
            imported["AbFvOqkT4nPb7YcR2wJx9MhE6dQz0aLu"]["text"],
            "Arreglaron la fuga debajo del fregadero el mismo día que llamé. El "
            "técnico fue muy amable, pero llegó una hora tarde.",
        )
        german = imported["AbFvOqrD2wJh7XmN4bVs9KtF1yPc6eGz"]
        self.assertEqual(
            (german["author"], german["text"]),
            (
                "Jürgen Weiß",
                "Sehr saubere Arbeit am Badezimmer, pünktlich und zum vereinbarten "
                "Preis. Gerne wieder!",
            ),
        )
        # anonymous reviewers: their name as Google gives it, or Anonymous,
        # and never a photo
        anonymous = [imported[EDITED], imported["AbFvOqsM5cQa0ZeR3nUx8HwB6kTd1fYi"]]
        self.assertEqual(
            [(r["author"], r["author_avatar_url"]) for r in anonymous],
            [("Anonymous", None), ("A Google User", None)],
        )
        self.assertIsNone(imported["AbFvOqpH6gNs1VbK8cTw3ZyL5rMe9dQj"]["text"])
        # dated by its last edit, after the reply: published, with a warning
        self.assertEqual(
            (imported[EDITED]["date"], imported[EDITED]["owner_reply"]["date"]),
            ("2026-11-02", "2026-10-01"),
        )
        findings = check_directory(self.data)
        self.assertEqual(findings.errors, [])
        self.assertEqual([w.record_id for w in findings.warnings], [EDITED])
        published = {r.id: r for r in load_dataset(self.data)[1].reviews}
        self.assertEqual(len(published), 6)
        self.assertIsNotNone(published[EDITED].owner_reply)

    def test_pages_as_files_or_a_directory(self) -> None:
        run("import", "--from", "google-api", "--data", self.data, GOOGLE)
        other = new_data(Path(self.mktemp()))
        pages = sorted(GOOGLE.glob("*.json"))
        run("import", "--from", "google-api", "--data", other, *reversed(pages))
        self.assertEqual(records(other), records(self.data))

    def test_dated_by_creation(self) -> None:
        run(
            "import",
            "--from",
            "google-api",
            "--data",
            self.data,
            "--date",
            "created",
            GOOGLE,
        )
        self.assertEqual(records(self.data)[EDITED]["date"], "2026-09-30")
        self.assertEqual(check_directory(self.data).warnings, [])

    def test_translations(self) -> None:
        for comment, kept in [
            ("(Translated by Google) Great.\n\n(Original)\nGenial.", "Genial."),
            ("Genial.\n\n(Translated by Google)\nGreat.", "Genial."),
            ("(Original)\nGenial.\n\n(Translated by Google)\nGreat.", "Genial."),
            ("(Translated by Google) Great.", "Great."),
            ("  Plain text.\n", "Plain text."),
        ]:
            self.assertEqual(original(comment), kept, comment)

    def test_unusable_input(self) -> None:
        """Nothing is written; exit 2 with the reason."""
        bad = Path(self.mktemp())
        bad.write_text('{"locations": []}')
        code, out, err = run("import", "--from", "google-api", "--data", self.data, bad)
        self.assertEqual((code, out), (2, ""))
        self.assertIn("is not an answer of accounts.locations.reviews.list", err)
        bad.write_text("{")
        self.assertIn(
            "is not JSON",
            run("import", "--from", "google-api", "--data", self.data, bad)[2],
        )
        code, _, err = run(
            "import", "--from", "google-api", "--data", self.data, "nowhere.json"
        )
        self.assertEqual(
            (code, err),
            (2, "reviewsd import: nowhere.json: no such file or directory\n"),
        )
        self.assertFalse((self.data / "reviews.jsonl").exists())


class CSVImportTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.data = new_data(Path(self.mktemp()).absolute())

    def test_columns_mapped_by_name(self) -> None:
        code, out, _ = run(
            "import", "--from", "csv", "--data", self.data, *CSV_COLUMNS, CSV
        )
        self.assertEqual(code, 1)
        self.assertEqual(
            out.splitlines(),
            [
                f"{self.data / 'reviews.jsonl'}: 3 added, 0 changed, 0 unchanged, "
                "2 refused",
                f"refused: {CSV}: line 5 (id 'yelp-2QsE8uJf'): field 'rating': must "
                "be a whole number from 1 to 5, got the string '4.5'",
                f"refused: {CSV}: line 6 (id 'yelp-6TdM1kPw'): date '13/45/2026' is "
                "not a date (%m/%d/%Y)",
            ],
        )
        imported = records(self.data)
        self.assertEqual(
            imported["yelp-9XkQ2mTa"],
            {
                "id": "yelp-9XkQ2mTa",
                "author": "Carmen D.",
                "author_avatar_url": None,
                "rating": 5,
                "date": "2026-11-02",
                "text": "Dev rewired the garage and added two circuits for the shop "
                "tools. Explained everything, permit and all.",
                "source": "yelp",
                "source_url": "https://www.yelp.example.com/biz/thimbleberry-home"
                "?hrid=9XkQ2mTa",
                "owner_reply": {
                    "text": "Thanks Carmen, enjoy the shop!",
                    "date": "2026-11-03",
                },
                "verified": True,
            },
        )
        self.assertEqual(
            (imported["yelp-7BnV3yHd"]["author"], imported["yelp-7BnV3yHd"]["text"]),
            (
                "Ong, Mai",
                'Good work on the gutters. "Clean" is an understatement: '
                "they hosed the driveway.",
            ),
        )
        self.assertIsNone(imported["yelp-4LpW7zRc"]["owner_reply"])
        self.assertEqual(check_directory(self.data).errors, [])

    def test_columns_named_like_the_fields(self) -> None:
        """Case, spaces and dashes aside; a verified column is the operator's word."""
        export = Path(self.mktemp())
        export.write_text(
            "ID;Author;Rating;Date;Text;Source;Owner Reply Text;Owner-Reply-Date;"
            "Verified\n"
            "a1;Ann;FIVE;2026-01-02T23:30:00-08:00;Great;nextdoor;Thanks;2026-01-04;no\n"
            "a2;Bo;4;2026-01-05;;nextdoor;;;\n",
            encoding="utf-8",
        )
        code, _, _ = run(
            "import", "--from", "csv", "--delimiter", ";", "--data", self.data, export
        )
        self.assertEqual(code, 0)
        imported = records(self.data)
        self.assertEqual(
            (
                imported["a1"]["rating"],
                imported["a1"]["date"],
                imported["a1"]["verified"],
            ),
            (5, "2026-01-03", False),
        )
        self.assertEqual(
            (imported["a2"]["text"], imported["a2"]["verified"]), (None, True)
        )

    def test_missing_columns(self) -> None:
        code, out, err = run("import", "--from", "csv", "--data", self.data, CSV)
        self.assertEqual((code, out), (2, ""))
        self.assertIn(
            "has no column for id, author, rating, date, source; its columns are "
            "'Review ID', 'Reviewer', 'Stars'",
            err,
        )
        self.assertIn("--column FIELD=HEADER (or give --source)", err)
        code, _, err = run(
            "import",
            "--from",
            "csv",
            "--data",
            self.data,
            "--column",
            "stars=Stars",
            CSV,
        )
        self.assertEqual(code, 2)
        self.assertIn(
            "--column 'stars=Stars': write FIELD=HEADER, FIELD one of id, author", err
        )
        code, _, err = run(
            "import", "--from", "csv", "--data", self.data, "--column", "id=Nope", CSV
        )
        self.assertIn("has no column 'Nope' (for id)", err)
        self.assertFalse((self.data / "reviews.jsonl").exists())


class MergeTests(SynchronousTestCase):
    """By id: new ones added, changed ones replaced in place, nothing else touched."""

    def setUp(self) -> None:
        self.data = new_data(Path(self.mktemp()).absolute())
        self.target = self.data / "reviews.jsonl"

    def google(self, *extra: str | Path) -> tuple[int, str, str]:
        return run("import", "--from", "google-api", "--data", self.data, *extra)

    def test_reimport_changes_one_and_adds_one(self) -> None:
        """
        The operator's own lines (a review from elsewhere, a blank line) and
        edits the export does not carry (a source_url, verified: false) stay.
        """
        own = json.dumps(review(1, source="yelp"))
        self.target.write_text(own + "\n\n")
        self.google(GOOGLE / "page-1.json")
        lines = self.target.read_text().splitlines()
        luis = next(i for i, line in enumerate(lines) if "AbFvOqkT4n" in line)
        record = json.loads(lines[luis])
        record.update(source_url="https://g.page/r/luis", verified=False)
        lines[luis] = json.dumps(record, ensure_ascii=False)
        self.target.write_text("\n".join(lines) + "\n")
        before = self.target.read_text().splitlines()
        code, out, _ = self.google(edited_export(Path(self.mktemp())))
        self.assertEqual(code, 0)
        self.assertEqual(
            out, f"{self.target}: 1 added, 1 changed, 3 unchanged, 0 refused\n"
        )
        after = self.target.read_text().splitlines()
        self.assertEqual(len(after), len(before) + 1)
        for i, line in enumerate(before):
            if i != luis:
                self.assertEqual(after[i], line, "untouched, byte for byte")
        changed = json.loads(after[luis])
        self.assertEqual(
            (changed["rating"], changed["date"], changed["text"][:30]),
            (5, "2026-11-10", "Arreglaron la fuga el mismo dí"),
        )
        self.assertEqual(
            (changed["source_url"], changed["verified"]),
            ("https://g.page/r/luis", False),
        )
        self.assertEqual(json.loads(after[-1])["author"], "Dana Ruiz")
        self.assertEqual(after[:2], [own, ""])

    def test_nothing_changed_nothing_written(self) -> None:
        self.google(GOOGLE)
        before = os.stat(self.target)
        code, out, _ = self.google(GOOGLE)
        self.assertEqual(code, 1)  # the refused one, again
        self.assertIn(
            "0 added, 0 changed, 6 unchanged, 1 refused; nothing to write", out
        )
        after = os.stat(self.target)
        self.assertEqual(
            (after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns)
        )

    def test_verified_policy(self) -> None:
        """--verified no holds new reviews back; it never changes existing ones."""
        self.google(GOOGLE / "page-2.json")
        self.google("--verified", "no", GOOGLE)
        published = {r["id"]: r["verified"] for r in records(self.data).values()}
        self.assertEqual(
            published,
            {
                "AbFvOqrD2wJh7XmN4bVs9KtF1yPc6eGz": True,
                "AbFvOqsM5cQa0ZeR3nUx8HwB6kTd1fYi": True,
                "AbFvOqmW9rYk2VdH3xGz7LpQ1sTn8uEb": False,
                "AbFvOqkT4nPb7YcR2wJx9MhE6dQz0aLu": False,
                "AbFvOqpH6gNs1VbK8cTw3ZyL5rMe9dQj": False,
                EDITED: False,
            },
        )
        self.assertEqual(load_dataset(self.data)[1].unpublished, 4)

    def test_dry_run(self) -> None:
        code, out, _ = self.google("--dry-run", GOOGLE)
        self.assertIn("(dry run, nothing written): 6 added", out)
        self.assertFalse(self.target.exists())

    def test_written_in_one_step(self) -> None:
        """The file keeps its mode; no temporary file is left behind."""
        self.target.write_text("")
        os.chmod(self.target, 0o640)
        self.google(GOOGLE)
        self.assertEqual(stat.S_IMODE(os.stat(self.target).st_mode), 0o640)
        self.assertEqual(
            sorted(p.name for p in self.data.iterdir()),
            ["business.json", "reviews.jsonl"],
        )

    def test_a_new_directory(self) -> None:
        """Created; and the operator is told what is missing still."""
        directory = Path(self.mktemp()) / "data"
        code, out, _ = run(
            "import", "--from", "google-api", "--data", directory, GOOGLE
        )
        self.assertEqual(code, 1)
        self.assertIn(f"next: write {directory / 'business.json'}", out)
        self.assertEqual(len(records(directory)), 6)

    def test_data_it_cannot_merge_into(self) -> None:
        write_data(self.data / "array")
        code, _, err = run(
            "import", "--from", "google-api", "--data", self.data / "array", GOOGLE
        )
        self.assertEqual(code, 2)
        self.assertIn(
            "keeps its reviews in reviews.json; import merges into reviews.jsonl", err
        )
        self.target.write_text(json.dumps(review(1)) + "\nnot json\n")
        code, _, err = self.google(GOOGLE)
        self.assertEqual(code, 2)
        self.assertIn(
            f"{self.target}: line 2 is not a JSON object with an id; fix it first", err
        )
        self.target.write_text(
            json.dumps(review(1)) + "\n" + json.dumps(review(1)) + "\n"
        )
        code, _, err = self.google(GOOGLE)
        self.assertIn("line 2 repeats the id 'r0001' of line 1", err)

    def test_a_change_the_daemon_would_refuse(self) -> None:
        """A record merged into a broken one is refused; the rest goes in."""
        self.google(GOOGLE / "page-2.json")
        lines = self.target.read_text().splitlines()
        broken = json.loads(lines[0])
        broken["source_url"] = "not a url"
        lines[0] = json.dumps(broken, ensure_ascii=False)
        self.target.write_text("\n".join(lines) + "\n")
        code, out, _ = self.google(GOOGLE)
        self.assertEqual(code, 1)
        self.assertIn(
            f"(id '{broken['id']}'): field 'source_url': must be an absolute "
            "http(s) URL",
            out,
        )
        self.assertIn("4 added, 0 changed, 1 unchanged, 2 refused", out)


class DaemonImportTests(DaemonTestCase):
    """
    A re-import under the running daemon: it reloads once, and a WebSub
    subscriber to C{/reviews.json} gets one delivery, the new document.
    """

    timeout = 120

    @defer.inlineCallbacks
    def test_reimport_reloads_once(self) -> Any:
        root = Path(self.mktemp()).resolve()
        data = new_data(root / "data")
        code, _, _ = run(
            "import", "--from", "google-api", "--data", data, GOOGLE / "page-1.json"
        )
        self.assertEqual(code, 0)
        tls = TLSFiles(root / "tls")
        subscriber = Subscriber()
        listening = listen_https(subscriber, tls)
        self.addCleanup(listening.stopListening)
        callback = f"https://127.0.0.1:{listening.getHost().port}/all"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        yield self.start(
            base,
            "--data",
            str(data),
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--callback-ca",
            str(tls.ca_path),
            "--allow-private-callbacks",
        )
        topic = base + REVIEWS_PATH
        response = yield self.client.post(
            base + HUB_PATH,
            data={
                "hub.mode": "subscribe",
                "hub.topic": topic,
                "hub.callback": callback,
            },
        )
        self.assertEqual(response.code, 202)
        yield subscriber.wait_for(lambda: subscriber.verifications >= 1).addTimeout(
            20, reactor
        )
        yield task.deferLater(reactor, 1.0, lambda: None)

        export = edited_export(root / "export")
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [
                "-m",
                "reviewsd",
                "import",
                "--from",
                "google-api",
                "--data",
                str(data),
                str(export),
            ],
            env=environment(),
            reactor=reactor,
        )
        self.assertEqual(code, 0, err)
        self.assertIn(b"1 added, 1 changed, 3 unchanged, 0 refused", out)

        yield subscriber.wait_for(lambda: subscriber.deliveries >= 1).addTimeout(
            20, reactor
        )
        yield task.deferLater(reactor, 2.0, lambda: None)
        [delivery] = subscriber.requests(b"POST", "/all")
        fresh = yield (yield self.client.get(topic)).content()
        self.assertEqual(delivery.body, fresh)
        document = json.loads(fresh)
        by_id = {r["id"]: r for r in document["reviews"]}
        self.assertEqual(len(by_id), 5)
        self.assertEqual(by_id["AbFvOqkT4nPb7YcR2wJx9MhE6dQz0aLu"]["rating"], 5)
        self.assertEqual(
            by_id["AbFvOqwN7hRt2LcX5mKd9VsQ3bYe8pJg"]["author"], "Dana Ruiz"
        )
        health = yield (yield self.client.get(base + "/healthz")).json()
        self.assertEqual((health["reloads"], health["reload_failures"]), (1, 0))
        output = self.daemon.output.decode()
        self.assertEqual(output.count("Reloaded "), 1, output)
        # the edited review is published, warned about once: not again on reload
        self.assertEqual(
            output.count("which was edited after it was answered"), 1, output
        )
        self.assertIsNotNone(by_id[EDITED]["owner_reply"])
