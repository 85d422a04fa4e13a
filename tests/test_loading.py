"""
Reading a data directory: what gets published, and the one-line errors an
operator sees for everything that cannot be.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import lxml.html
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from twisted.internet import defer, reactor, task
from twisted.internet.utils import getProcessOutputAndValue
from twisted.logger import LogEvent, LogLevel, formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.fields import InvalidField
from reviewsd.data.links import Links
from reviewsd.data.loading import (
    DEMO_DATA,
    DEPTH_MAX,
    DataError,
    Reader,
    load_dataset,
)
from reviewsd.data.model import REVIEW_FIELDS, Review, review_from_json
from reviewsd.data.openapi import SCHEMAS
from reviewsd.mcp.tools import Tools
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.pages.home import render_home
from tests.support import BASE, BUSINESS, Holder, review, snapshot_of, write_data
from tests.support.daemon import TWISTD, DaemonTestCase, environment, free_port


def capture_events(case: SynchronousTestCase) -> list[LogEvent]:
    events: list[LogEvent] = []
    globalLogPublisher.addObserver(events.append)
    case.addCleanup(globalLogPublisher.removeObserver, events.append)
    return events


class LoadingTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = Path(self.mktemp())

    def error(self, reviews: list[object] | None = None, **kw: object) -> str:
        write_data(self.dir, reviews, **kw)  # type: ignore[arg-type]
        return str(self.assertRaises(DataError, load_dataset, self.dir))

    def test_published_reviews(self) -> None:
        """
        Unverified reviews are left out; the rest come newest first, ties
        broken by id descending.
        """
        write_data(
            self.dir,
            [
                review(1, date="2024-01-01"),
                review(2, date="2024-03-01", verified=False),
                review(3, date="2024-02-01"),
                review(4, date="2024-02-01"),
            ],
        )
        sources, dataset = load_dataset(self.dir)
        self.assertEqual([r.id for r in dataset.reviews], ["r0004", "r0003", "r0001"])
        self.assertEqual(dataset.unpublished, 1)
        self.assertEqual(sources.reviews, self.dir / "reviews.json")

    def test_missing_nullable_fields_read_as_null(self) -> None:
        record = review(1)
        for key in ("author_avatar_url", "text", "source_url", "owner_reply"):
            del record[key]
        write_data(self.dir, [record])
        [loaded] = load_dataset(self.dir)[1].reviews
        self.assertEqual(
            (
                loaded.text,
                loaded.source_url,
                loaded.owner_reply,
                loaded.author_avatar_url,
            ),
            (None, None, None, None),
        )

    def test_jsonl(self) -> None:
        """One object a line; blank lines are skipped."""
        write_data(self.dir, [review(1), review(2)], lines=True)
        with (self.dir / "reviews.jsonl").open("a") as f:
            f.write("\n" + json.dumps(review(3)) + "\n")
        self.assertEqual(len(load_dataset(self.dir)[1].reviews), 3)

    def test_byte_order_mark_is_accepted(self) -> None:
        write_data(self.dir)
        path = self.dir / "reviews.json"
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        self.assertEqual(len(load_dataset(self.dir)[1].reviews), 3)

    def test_malformed_json_names_line_and_column(self) -> None:
        write_data(self.dir)
        (self.dir / "reviews.json").write_text('[\n  {"id": "a",\n  }\n]')
        message = str(self.assertRaises(DataError, load_dataset, self.dir))
        self.assertIn("reviews.json: line 3, column 3: invalid JSON", message)

    def test_malformed_jsonl_names_the_line(self) -> None:
        write_data(self.dir, [review(1), review(2)], lines=True)
        with (self.dir / "reviews.jsonl").open("a") as f:
            f.write('{"id": "x", "rating": 5\n')
        message = str(self.assertRaises(DataError, load_dataset, self.dir))
        self.assertIn("reviews.jsonl: line 3, column 24: invalid JSON", message)

    def test_bad_ratings(self) -> None:
        """Out of range, a float, a boolean or a string: record, id, field."""
        for bad in (0, 6, 4.5, True, "5", None):
            message = self.error([review(1), review(2, rating=bad)])
            self.assertIn(
                "reviews.json: record [1] (id 'r0002'): field 'rating'", message
            )
            self.assertIn("whole number from 1 to 5", message)

    def test_jsonl_error_names_line_and_record(self) -> None:
        message = self.error([review(1), review(2, rating=9)], lines=True)
        self.assertIn(
            "reviews.jsonl: line 2: record [1] (id 'r0002'): field 'rating'", message
        )

    def test_bad_dates(self) -> None:
        for bad in ("2023-02-30", "2023-13-01"):
            message = self.error([review(1, date=bad)])
            self.assertIn("field 'date'", message)
            self.assertIn("is not a calendar date", message)
        for bad in ("2023/02/01", "2023-2-1", "20230201", 20230201, "2023-02-01T00:00"):
            message = self.error([review(1, date=bad)])
            self.assertIn("field 'date': must be a date written YYYY-MM-DD", message)

    def test_owner_reply_checked(self) -> None:
        message = self.error(
            [review(1, owner_reply={"text": "Thanks", "date": "2024-02-31"})]
        )
        self.assertIn("field 'owner_reply.date'", message)
        message = self.error([review(1, owner_reply={"date": "2024-12-31"})])
        self.assertIn("field 'owner_reply.text': is required", message)

    def test_review_edited_after_its_reply(self) -> None:
        """
        Platforms date an edited review by the edit, after the reply: it is
        published, reply and all, with one warning naming file and record;
        read again unchanged, it is not warned about again.
        """
        events = capture_events(self)
        edited = review(
            2, date="2024-05-02", owner_reply={"text": "Thanks!", "date": "2024-05-01"}
        )
        write_data(self.dir, [review(1), edited], lines=True)
        reader = Reader()
        published = {r.id: r for r in reader.read(self.dir)[1].reviews}
        reply = published["r0002"].owner_reply
        assert reply is not None
        self.assertEqual((reply.text, str(reply.date)), ("Thanks!", "2024-05-01"))
        [warning] = [e for e in events if e["log_level"] == LogLevel.warn]
        self.assertEqual(
            formatEvent(warning),
            f"{self.dir / 'reviews.jsonl'}: line 2: record [1] (id 'r0002'): "
            "field 'owner_reply.date': the owner's reply (2024-05-01) is dated "
            "before the review (2024-05-02), which was edited after it was "
            "answered: published with its reply",
        )
        self.assertEqual(warning["file"], str(self.dir / "reviews.jsonl"))
        self.assertEqual((warning["record"], warning["review_id"]), (1, "r0002"))
        with (self.dir / "reviews.jsonl").open("a") as f:
            f.write(json.dumps(review(3)) + "\n")
        self.assertEqual(len(reader.read(self.dir)[1].reviews), 3)
        self.assertEqual(len([e for e in events if e["log_level"] == LogLevel.warn]), 1)

    def test_review_fields_are_read_in_order(self) -> None:
        """The table the records are read by follows Review's fields."""
        self.assertEqual(
            [name for name, _, _ in REVIEW_FIELDS],
            [a.name for a in attrs.fields(Review)],
        )

    def test_duplicate_id(self) -> None:
        message = self.error([review(1), review(2), review(1)])
        self.assertIn(
            "record [2] (id 'r0001'): field 'id': repeats the id of record [0]", message
        )

    def test_unverified_records_are_checked_too(self) -> None:
        message = self.error([review(1, verified=False, rating=0)])
        self.assertIn("field 'rating'", message)

    def test_required_fields(self) -> None:
        for field in ("id", "author", "rating", "date", "source", "verified"):
            record = review(1)
            del record[field]
            message = self.error([record])
            self.assertIn(f"field {field!r}: is required", message)

    def test_wrong_types(self) -> None:
        self.assertIn(
            "field 'verified': must be true or false, got the string 'yes'",
            self.error([review(1, verified="yes")]),
        )
        self.assertIn(
            "field 'text': must be a string, got 42", self.error([review(1, text=42)])
        )
        self.assertIn(
            "record [0]: must be a JSON object, got a JSON array",
            self.error([[1, 2]]),
        )

    def test_urls(self) -> None:
        for bad in ("not a url", "ftp://x.example/a", "https://", "/relative"):
            message = self.error([review(1, source_url=bad)])
            self.assertIn(
                "field 'source_url': must be an absolute http(s) URL", message
            )
        message = self.error([review(1, author_avatar_url="javascript:alert(1)")])
        self.assertIn("field 'author_avatar_url'", message)

    def test_urls_urlsplit_refuses(self) -> None:
        """
        A URL that Python's parser refuses outright (a host that NFKC turns
        into a path, unclosed brackets) is a field error naming the record,
        not a traceback.
        """
        for bad in ("https://exa\uff0fmple.com/x", "http://[::1/x", "https://[x]y/"):
            message = self.error([review(1), review(2, source_url=bad)])
            self.assertIn(
                "record [1] (id 'r0002'): field 'source_url': must be an absolute"
                " http(s) URL",
                message,
            )

    def test_url_oracle(self) -> None:
        """
        Over thousands of URL-like strings, a URL is accepted exactly when
        it has no white space or control character, Python's parser takes
        it, its scheme is http or https, and it names a host.
        """

        def accepted(text: str) -> bool:
            if any(c.isspace() or c < " " for c in text):
                return False
            try:
                parts = urlsplit(text)
            except ValueError:
                return False
            return parts.scheme in ("http", "https") and bool(parts.hostname)

        randomly = random.Random(7)
        pieces = ["http", "https", "HTTP", "ftp", ":", "//", "/", "?", "#", "@"]
        pieces += ["[", "]", "::1", "a", "b.c", "x-y", "8080", ":80", "%20", "_"]
        pieces += [" ", "\t", "é", "\uff0f", "\u200b", "\\", ".", "~", "'"]
        checked = 0
        for _ in range(20_000):
            text = "".join(randomly.choices(pieces, k=randomly.randint(1, 9)))
            for url in (text, "https://" + text, "http://" + text):
                try:
                    review_from_json(review(1, source_url=url))
                except InvalidField:
                    self.assertFalse(accepted(url), url)
                else:
                    self.assertTrue(accepted(url), url)
                    checked += 1
        self.assertGreater(checked, 5_000)

    def test_url_characters(self) -> None:
        """
        A URL with white space or a control character anywhere is refused;
        any other character, printable or not, is accepted.
        """
        blank = [c for c in map(chr, range(0x3001)) if c.isspace() or c < " "]
        self.assertEqual(len(blank), 52)
        for c in blank:
            record = review(1, source_url=f"https://example.com/r?q={c}x")
            self.assertRaises(InvalidField, review_from_json, record)
        for c in ["é", "例", "🙂", "\u200b", "\u00ad", "\ue000", "\x7f"]:
            record = review(1, source_url=f"https://example.com/r?q={c}")
            self.assertEqual(review_from_json(record).source_url, record["source_url"])

    def test_business_checks(self) -> None:
        cases = [
            ({"url": "x"}, "business.json: field 'name': is required"),
            ({"name": "  "}, "field 'name': must not be empty"),
            ({"name": "A", "url": "example.com"}, "field 'url': must be an absolute"),
            ({"name": "A", "logo_url": "nope"}, "field 'logo_url'"),
            (
                {"name": "A", "services": [{"id": "a", "name": "A"}, {"name": "B"}]},
                "field 'services[1].id': is required",
            ),
            (
                {"name": "A", "services": [{"id": "a b", "name": "A"}]},
                "field 'services[0].id': must be letters, digits",
            ),
            (
                {
                    "name": "A",
                    "services": [{"id": "a", "name": "A"}, {"id": "a", "name": "B"}],
                },
                "field 'services[1]': repeats the id 'a' of services[0]",
            ),
            (
                {"name": "A", "technicians": [{"name": "X", "aliases": ["Y", 3]}]},
                "field 'technicians[0].aliases[1]': must be a string",
            ),
            (
                {"name": "A", "service_areas": "Tigard"},
                "field 'service_areas': must be an array",
            ),
            (
                {"name": "A", "geo": {"latitude": 91, "longitude": 0}},
                "field 'geo.latitude'",
            ),
            (["A"], "business.json: must be a JSON object"),
        ]
        for business, expected in cases:
            self.assertIn(expected, self.error(business=business))

    def test_business_metadata_published_as_given(self) -> None:
        business = dict(BUSINESS, founded=1998, hours={"monday": "08:00-17:00"})
        write_data(self.dir, business=business)
        metadata = load_dataset(self.dir)[1].business.metadata
        self.assertEqual(metadata["founded"], 1998)
        self.assertEqual(metadata["hours"], {"monday": "08:00-17:00"})
        self.assertEqual(
            metadata["technicians"], [{"name": "Dev Patel", "aliases": ["Dev"]}]
        )

    def test_not_json(self) -> None:
        write_data(self.dir)
        (self.dir / "reviews.json").write_text('[{"rating": NaN}]')
        self.assertIn("invalid JSON: NaN is not JSON", self.error_from_disk())
        (self.dir / "reviews.json").write_text('{"id": 1}')
        self.assertIn("must hold a JSON array", self.error_from_disk())
        (self.dir / "reviews.json").write_bytes(b'[{"text": "caf\xe9"}]')
        self.assertIn(
            "reviews.json: line 1: is not UTF-8 (byte offset 14)",
            self.error_from_disk(),
        )
        message = self.error([review(1, text="broken \ud800 text")])
        self.assertIn("field 'text': holds an unpaired UTF-16 surrogate", message)

    def test_insights_overlay(self) -> None:
        """An operator's insights.json is checked like the other files."""
        write_data(self.dir)
        faq = [{"question": "Do you do roofs?", "answer": "Yes, since 2011."}]
        (self.dir / "insights.json").write_text(json.dumps({"faq": faq}))
        sources, dataset = load_dataset(self.dir)
        self.assertEqual(sources.insights, self.dir / "insights.json")
        self.assertIn(self.dir / "insights.json", sources.paths)
        self.assertEqual(dataset.insights_overlay, {"faq": faq})
        (self.dir / "insights.json").write_text(
            json.dumps({"faq": [{"question": "Roofs?", "answer": 5}]})
        )
        self.assertIn("insights.json: field 'faq[0].answer'", self.error_from_disk())
        (self.dir / "insights.json").write_text("{")
        self.assertIn(
            "insights.json: line 1, column 2: invalid JSON", self.error_from_disk()
        )

    def error_from_disk(self) -> str:
        return str(self.assertRaises(DataError, load_dataset, self.dir))

    def test_directory_layout(self) -> None:
        self.assertIn("is not a directory", self.error_from_disk())
        write_data(self.dir)
        (self.dir / "reviews.jsonl").write_text("")
        self.assertIn(
            "holds both reviews.json and reviews.jsonl", self.error_from_disk()
        )
        (self.dir / "reviews.jsonl").unlink()
        (self.dir / "reviews.json").unlink()
        self.assertIn(
            "holds neither reviews.json nor reviews.jsonl", self.error_from_disk()
        )
        (self.dir / "business.json").unlink()
        self.assertIn("business.json: is missing", self.error_from_disk())


def nested(depth: int, closed: bool = True) -> str:
    """A JSON array C{depth} levels deep (not closed: also malformed)."""
    return "[" * depth + ("]" * depth if closed else "")


class NestingTests(SynchronousTestCase):
    """
    Nesting at any depth, in any data file, is the one-line located error
    (or data, where a parser takes it), never a RecursionError.
    """

    def setUp(self) -> None:
        self.dir = Path(self.mktemp())

    def error(self) -> str:
        message = str(self.assertRaises(DataError, load_dataset, self.dir))
        self.assertNotIn("\n", message)
        return message

    def test_past_the_parsers_depth(self) -> None:
        for depth in (1025, 100_000):
            for name in ("business.json", "reviews.json", "insights.json"):
                write_data(self.dir)
                (self.dir / name).write_text(nested(depth, closed=depth < 5000))
                self.assertIn(
                    f"{name}: line 1, column 1026: invalid JSON", self.error()
                )
                (self.dir / "insights.json").unlink(missing_ok=True)
            (self.dir / "reviews.json").unlink()
            write_data(self.dir, [review(1), review(2)], lines=True)
            with (self.dir / "reviews.jsonl").open("a") as f:
                f.write('{"id": ' + nested(depth) + "}\n")
            self.assertIn(
                "reviews.jsonl: line 3, column 1032: invalid JSON", self.error()
            )
            (self.dir / "reviews.jsonl").unlink()

    def test_deeper_than_the_standard_library_takes(self) -> None:
        """A thousand levels: orjson reads them, and the checks say what is wrong."""
        write_data(self.dir, business=[])
        (self.dir / "business.json").write_text(nested(1000))
        self.assertIn("business.json: must be a JSON object", self.error())
        write_data(self.dir)
        (self.dir / "insights.json").write_text(nested(1000))
        self.assertIn("insights.json: must be a JSON object", self.error())
        (self.dir / "insights.json").write_text(
            json.dumps({"faq": "x"})[:-1] + ', "summary": ' + nested(1000) + "}"
        )
        self.assertIn("insights.json: field 'faq': must be an array", self.error())
        (self.dir / "insights.json").unlink()
        deep = json.dumps(review(1))[:-1] + ', "extra": ' + nested(1000) + "}"
        (self.dir / "reviews.json").write_text(f"[{deep}]")
        [loaded] = load_dataset(self.dir)[1].reviews
        self.assertEqual(loaded.id, "r0001")

    def test_business_fields_are_shallow(self) -> None:
        """The business is published as written: renderers need it shallow."""
        shallow = json.dumps(BUSINESS)[:-1] + ', "extra": ' + nested(DEPTH_MAX) + "}"
        write_data(self.dir)
        (self.dir / "business.json").write_text(shallow)
        load_snapshot(self.dir, Links(BASE))
        for depth in (DEPTH_MAX + 1, 1000):
            deep = json.dumps(BUSINESS)[:-1] + ', "extra": ' + nested(depth) + "}"
            (self.dir / "business.json").write_text(deep)
            self.assertIn(
                "business.json: field 'extra': nests values deeper than 100 levels",
                self.error(),
            )

    def test_a_reload_keeps_the_last_reading(self) -> None:
        reader = Reader()
        write_data(self.dir, [review(0), review(1)])
        first = reader.read(self.dir)[1].reviews
        (self.dir / "reviews.json").write_text(nested(100_000, closed=False))
        self.assertRaises(DataError, reader.read, self.dir)
        write_data(self.dir, [review(0), review(1)])
        again = reader.read(self.dir)[1].reviews
        self.assertEqual(list(map(id, again)), list(map(id, first)))


class NestingDaemonTests(DaemonTestCase):
    """The real daemon, on nested data: at start, and when it reloads."""

    @defer.inlineCallbacks
    def test_start_up_says_one_line_and_exits(self) -> Any:
        data = write_data(Path(self.mktemp()))
        (data / "reviews.json").write_text(nested(100_000, closed=False))
        port = free_port()
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [
                *TWISTD[1:],
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--data",
                str(data),
                "--listen",
                f"tcp:{port}:interface=127.0.0.1",
                "--state-dir",
                os.path.abspath(self.mktemp()),
            ],
            env=environment(),
            reactor=reactor,
        )
        self.assertEqual(code, 1, out + err)
        self.assertEqual(
            (out + err).decode(),
            f"reviewsd: cannot publish the data: {data / 'reviews.json'}: line 1, "
            "column 1026: invalid JSON: depth limit exceeded\n",
        )

    @defer.inlineCallbacks
    def test_reload_keeps_serving_the_old_data(self) -> Any:
        data = write_data(Path(self.mktemp()).absolute(), [review(1), review(2)])
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        yield self.start(
            base, "--data", str(data), "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        (data / "reviews.json").write_text(nested(100_000, closed=False))
        for _ in range(100):
            if b"Reload refused" in self.daemon.output:
                break
            yield task.deferLater(reactor, 0.1, lambda: None)
        output = self.daemon.output.decode()
        [line] = [x for x in output.splitlines() if "Reload refused" in x]
        self.assertIn(
            f"{data / 'reviews.json'}: line 1, column 1026: invalid JSON", line
        )
        self.assertNotIn("Traceback", output)
        response = yield self.client.get(base + "/reviews.json")
        body = yield response.json()
        self.assertEqual([r["id"] for r in body["reviews"]], ["r0002", "r0001"])


class ExampleDataTests(SynchronousTestCase):
    def test_example_directory_loads(self) -> None:
        """etc/example-data, the JSONL example in the docs, stays valid."""
        example = Path(__file__).parent.parent / "etc" / "example-data"
        sources, dataset = load_dataset(example)
        self.assertEqual(sources.reviews.name, "reviews.jsonl")
        self.assertGreater(len(dataset.reviews), 5)
        self.assertGreater(dataset.unpublished, 0)


class DemoDataTests(SynchronousTestCase):
    """The bundled demo is a believable data set, and the default."""

    def setUp(self) -> None:
        self.dataset = load_dataset(DEMO_DATA)[1]

    def test_business(self) -> None:
        business = self.dataset.business
        for key in ("address", "telephone", "hours", "service_areas", "url"):
            self.assertTrue(business.metadata.get(key), key)
        self.assertGreaterEqual(len(business.services), 8)
        self.assertGreaterEqual(len(business.technicians), 5)
        self.assertTrue(all(t.aliases for t in business.technicians))

    def test_reviews(self) -> None:
        reviews = self.dataset.reviews
        self.assertGreaterEqual(len(reviews), 200)
        self.assertGreater(self.dataset.unpublished, 0)
        self.assertEqual({r.rating for r in reviews}, {1, 2, 3, 4, 5})
        span = reviews[0].date - reviews[-1].date
        self.assertGreaterEqual(span, datetime.timedelta(days=3 * 365))
        self.assertTrue(any(r.text is None for r in reviews))
        low = [r for r in reviews if r.rating <= 2]
        self.assertGreater(sum(r.owner_reply is not None for r in low), 0.8 * len(low))
        technicians = [
            name
            for t in self.dataset.business.technicians
            for name in (t.name, *t.aliases)
        ]
        mentioning = [
            r for r in reviews if r.text and any(n in r.text for n in technicians)
        ]
        self.assertGreater(len(mentioning), len(reviews) // 5)
        texts = " ".join(r.text or "" for r in reviews).lower()
        for topic in ("on time", "price", "clean", "call", "leak"):
            self.assertIn(topic, texts)


class ReaderTests(SynchronousTestCase):
    """A reader re-reads only the records whose bytes changed."""

    def setUp(self) -> None:
        self.dir = Path(self.mktemp())

    def test_unchanged_records_are_kept(self) -> None:
        for lines in (False, True):
            reader = Reader()
            write_data(self.dir, [review(n) for n in range(3)], lines=lines)
            first = {r.id: r for r in reader.read(self.dir)[1].reviews}
            write_data(
                self.dir,
                [review(0), review(1, text="Changed."), review(2), review(3)],
                lines=lines,
            )
            second = {r.id: r for r in reader.read(self.dir)[1].reviews}
            self.assertIs(second["r0000"], first["r0000"])
            self.assertIs(second["r0002"], first["r0002"])
            self.assertEqual(second["r0001"].text, "Changed.")
            self.assertIn("r0003", second)
            for name in ("reviews.json", "reviews.jsonl"):
                (self.dir / name).unlink(missing_ok=True)

    def test_refused_reading_changes_nothing(self) -> None:
        """
        A broken file is refused whole, even where its other records were
        read before; fixed, its records are the earlier reading's again.
        """
        reader = Reader()
        write_data(self.dir, [review(0), review(1)], lines=True)
        first = reader.read(self.dir)[1].reviews
        write_data(self.dir, [review(0), review(1), review(0)], lines=True)
        error = self.assertRaises(DataError, reader.read, self.dir)
        self.assertIn("repeats the id of record [0]", str(error))
        write_data(self.dir, [review(0), review(1), review(2, rating=9)], lines=True)
        error = self.assertRaises(DataError, reader.read, self.dir)
        self.assertIn("line 3", str(error))
        write_data(self.dir, [review(0), review(1)], lines=True)
        again = reader.read(self.dir)[1].reviews
        self.assertEqual(list(map(id, again)), list(map(id, first)))

    def test_line_separator_inside_a_string(self) -> None:
        """JSONL records end at LF only: U+2028 may sit inside a text."""
        write_data(self.dir, [review(0)], lines=True)
        record = json.dumps(
            review(0, text="one\u2028two\u2029three"), ensure_ascii=False
        )
        (self.dir / "reviews.jsonl").write_text(record + "\n", encoding="utf-8")
        [loaded] = load_dataset(self.dir)[1].reviews
        self.assertEqual(loaded.text, "one\u2028two\u2029three")


BUSINESS_SCHEMA = Draft202012Validator(
    {"$ref": "urn:schemas#/components/schemas/Business"},
    registry=Registry().with_resource(
        "urn:schemas",
        Resource(
            contents={"components": {"schemas": SCHEMAS}}, specification=DRAFT202012
        ),
    ),
)

HOURS_FORMS: list[tuple[str, Any, list[tuple[str, str]], dict[str, Any]]] = [
    (
        "an object, day to hours",
        {"monday": "07:00-17:00", "saturday": "8:00 AM - 12:00 PM", "sunday": "closed"},
        [
            ("Monday", "07:00-17:00"),
            ("Saturday", "8:00 AM - 12:00 PM"),
            ("Sunday", "closed"),
        ],
        {
            "openingHoursSpecification": [
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": "https://schema.org/Monday",
                    "opens": "07:00",
                    "closes": "17:00",
                },
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": "https://schema.org/Saturday",
                    "opens": "08:00",
                    "closes": "12:00",
                },
            ]
        },
    ),
    (
        "a string in openingHours syntax",
        "Mo-Fr 07:00-18:00; Sa 08:00-12:00",
        [("Monday to Friday", "07:00-18:00"), ("Saturday", "08:00-12:00")],
        {"openingHours": ["Mo-Fr 07:00-18:00", "Sa 08:00-12:00"]},
    ),
    (
        "a sentence",
        "By appointment, seven days a week",
        [("", "By appointment, seven days a week")],
        {},
    ),
    (
        "a list of openingHours strings",
        ["Mo-Fr 07:00-18:00", "Sa 08:00-12:00", "Sa 13:00-15:00"],
        [("Monday to Friday", "07:00-18:00"), ("Saturday", "08:00-12:00, 13:00-15:00")],
        {"openingHours": ["Mo-Fr 07:00-18:00", "Sa 08:00-12:00", "Sa 13:00-15:00"]},
    ),
    (
        "a list of lines as a listing prints them",
        ["Monday: 9:00 AM \u2013 5:00 PM", "Sunday: Closed"],
        [("Monday", "9:00 AM \u2013 5:00 PM"), ("Sunday", "Closed")],
        {
            "openingHoursSpecification": [
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": "https://schema.org/Monday",
                    "opens": "09:00",
                    "closes": "17:00",
                }
            ]
        },
    ),
    (
        "a list of opening-hours specifications",
        [
            {
                "@type": "OpeningHoursSpecification",
                "dayOfWeek": [
                    "https://schema.org/Monday",
                    "https://schema.org/Tuesday",
                    "https://schema.org/Wednesday",
                    "https://schema.org/Thursday",
                    "https://schema.org/Friday",
                ],
                "opens": "07:00",
                "closes": "18:00",
            },
            {"days": "Saturday", "opens": "08:00:00", "closes": "12:00:00"},
            {
                "dayOfWeek": "PublicHolidays",
                "opens": "00:00",
                "closes": "00:00",
                "validFrom": "2026-12-25",
                "validThrough": "2026-12-25",
            },
        ],
        [
            ("Monday to Friday", "07:00\u201318:00"),
            ("Saturday", "08:00\u201312:00"),
            ("Public holidays (2026-12-25)", "Closed"),
        ],
        {
            "openingHoursSpecification": [
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": [
                        f"https://schema.org/{day}"
                        for day in (
                            "Monday",
                            "Tuesday",
                            "Wednesday",
                            "Thursday",
                            "Friday",
                        )
                    ],
                    "opens": "07:00",
                    "closes": "18:00",
                },
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": "https://schema.org/Saturday",
                    "opens": "08:00:00",
                    "closes": "12:00:00",
                },
                {
                    "@type": "OpeningHoursSpecification",
                    "dayOfWeek": "https://schema.org/PublicHolidays",
                    "opens": "00:00",
                    "closes": "00:00",
                    "validFrom": "2026-12-25",
                    "validThrough": "2026-12-25",
                },
            ]
        },
    ),
]


class HoursTests(SynchronousTestCase):
    """
    C{hours} in each form listings use: published as written (in
    C{/reviews.json} and by the MCP C{get_business} tool), shown on C{/} as
    a table, and marked up as schema.org C{openingHours} or
    C{openingHoursSpecification}.
    """

    def snapshot(self, hours: Any) -> Any:
        directory = write_data(
            Path(self.mktemp()), business=dict(BUSINESS, hours=hours)
        )
        return snapshot_of(directory)

    def test_each_form_round_trips(self) -> None:
        for name, hours, rows, marked_up in HOURS_FORMS:
            snapshot = self.snapshot(hours)
            body = json.loads(snapshot.documents["/reviews.json"].identity.body)
            self.assertEqual(body["business"]["hours"], hours, name)
            self.assertEqual(list(BUSINESS_SCHEMA.iter_errors(body["business"])), [])
            tool = json.loads(Tools(Holder(snapshot)).call("get_business", {}))
            self.assertEqual(
                tool["structuredContent"]["business"]["hours"], hours, name
            )
            page = lxml.html.fromstring(render_home(snapshot))
            shown = [
                (
                    "".join(row.xpath("th//text()")),
                    "".join(row.xpath("td//text()")),
                )
                for row in page.xpath(
                    "//section[@id='contact']//table[@class='hours']//tr"
                )
            ]
            self.assertEqual(shown, rows, name)
            [block] = page.xpath("//script[@type='application/ld+json']")
            thing = json.loads(block.text)
            self.assertEqual(
                {
                    key: thing[key]
                    for key in ("openingHours", "openingHoursSpecification")
                    if key in thing
                },
                marked_up,
                name,
            )

    def test_a_sentence_spans_the_table(self) -> None:
        page = lxml.html.fromstring(render_home(self.snapshot("Call for hours")))
        [cell] = page.xpath("//table[@class='hours']//td")
        self.assertEqual((cell.get("colspan"), cell.text), ("2", "Call for hours"))

    def test_garbage_is_a_located_error(self) -> None:
        cases = [
            (
                42,
                "field 'hours': must be an object (day to hours), a string, or an",
            ),
            ([7, 9], "field 'hours[0]': must be an openingHours string"),
            (
                [{"dayOfWeek": "Monday", "closes": "17:00"}],
                "field 'hours[0].opens': is required",
            ),
            (
                [{"opens": "08:00", "closes": "17:00"}],
                "field 'hours[0].dayOfWeek': is required",
            ),
            (
                [
                    {
                        "dayOfWeek": ["Monday", "Caturday"],
                        "opens": "8",
                        "closes": "17:00",
                    }
                ],
                "field 'hours[0].dayOfWeek[1]': must be a day of the week",
            ),
            (
                [{"dayOfWeek": "Monday", "opens": "25:00", "closes": "17:00"}],
                "field 'hours[0].opens': must be a time written HH:MM",
            ),
            ({"monday": 8}, "field 'hours.monday': must be the hours as a string"),
            (["Mo-Fr 08:00-17:00", ""], "field 'hours[1]': must not be empty"),
        ]
        for hours, expected in cases:
            directory = write_data(
                Path(self.mktemp()), business=dict(BUSINESS, hours=hours)
            )
            message = str(self.assertRaises(DataError, load_dataset, directory))
            self.assertIn(f"{directory / 'business.json'}: {expected}", message)
