"""
The log observers: one JSON object per line (with journal priorities
under systemd), and the access log, its secrets redacted.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from twisted.logger import Logger, formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.logs import (
    EVENT_TEXT_MAX,
    TRACEBACK_MAX,
    JSONLinesObserver,
    event_as_json,
    log_access,
    loggable_uri,
    observer_for,
)
from tests.support.site import Connection, SiteTestCase


class JSONLogTests(SynchronousTestCase):
    def events(self, observer: Any) -> Logger:
        return Logger(namespace="reviewsd.test", observer=observer)

    def test_one_json_object_per_line(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out))
        log.info("Publishing {count} reviews of {business}", count=3, business="Acme")
        log.warn("Odd {path!r}", path=Path("/srv/x"), raw=b"\xff", when={1, 2})
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        first, second = (json.loads(line) for line in lines)
        self.assertEqual(first["text"], "Publishing 3 reviews of Acme")
        self.assertEqual(first["level"], "info")
        self.assertEqual(first["namespace"], "reviewsd.test")
        self.assertEqual((first["count"], first["business"]), (3, "Acme"))
        self.assertRegex(first["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertNotIn("log_format", first)
        self.assertEqual(second["level"], "warn")
        self.assertEqual(second["text"], "Odd PosixPath('/srv/x')")
        self.assertEqual((second["path"], second["raw"]), ("/srv/x", "\ufffd"))

    def test_failures_carry_their_traceback(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out))
        try:
            raise ZeroDivisionError("division by zero")
        except ZeroDivisionError:
            log.failure("Reload failed")
        [record] = map(json.loads, out.getvalue().splitlines())
        self.assertEqual(record["level"], "critical")
        self.assertIn("ZeroDivisionError", record["traceback"])

    def test_journal_gets_priorities(self) -> None:
        out = io.StringIO()
        log = self.events(JSONLinesObserver(out, journal=True))
        log.error("broken")
        log.info("fine")
        lines = out.getvalue().splitlines()
        self.assertEqual([line[:3] for line in lines], ["<3>", "<6>"])
        self.assertEqual(json.loads(lines[0][3:])["text"], "broken")

    def test_observer_for_terminal_pipe_and_journal(self) -> None:
        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        terminal = Terminal()
        self.events(observer_for(terminal, {})).info("hello {who}", who="you")
        self.assertIn("[reviewsd.test#info] hello you", terminal.getvalue())
        self.assertRaises(ValueError, json.loads, terminal.getvalue())

        with tempfile.TemporaryFile("w+") as journal:
            stat = os.fstat(journal.fileno())
            environ = {"JOURNAL_STREAM": f"{stat.st_dev}:{stat.st_ino}"}
            self.events(observer_for(journal, environ)).warn("hello")
            self.events(observer_for(journal, {})).warn("again")
            journal.seek(0)
            lines = journal.read().splitlines()
        self.assertTrue(lines[0].startswith("<4>{"), lines[0])
        self.assertEqual(json.loads(lines[1])["text"], "again")

    def test_legacy_events(self) -> None:
        from twisted.python import log as legacy

        out = io.StringIO()
        observer = JSONLinesObserver(out)
        globalLogPublisher.addObserver(observer)
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        legacy.msg("Site starting on 8080")
        record = json.loads(out.getvalue().splitlines()[-1])
        self.assertEqual(record["text"], "Site starting on 8080")
        self.assertNotIn("message", record)

    def test_uris_lose_their_secrets(self) -> None:
        self.assertEqual(
            loggable_uri(b"/api/websub/hub?hub.secret=s3cret&hub.mode=subscribe"),
            "/api/websub/hub?hub.secret=REDACTED&hub.mode=subscribe",
        )
        self.assertEqual(
            loggable_uri(b"/x?HUB.SECRET=a&b=1"), "/x?HUB.SECRET=REDACTED&b=1"
        )
        self.assertEqual(loggable_uri(b"/secret=x"), "/secret=x")
        self.assertEqual(len(loggable_uri(b"/" + b"a" * 5000)), 2003)

    def test_uris_lose_their_control_characters(self) -> None:
        """Control and non-ASCII bytes percent-encoded; at most 2,000 characters."""
        self.assertEqual(
            loggable_uri(b"/a\x1b[31m\x7f\x9b\r\nb c\xc3\xa9"),
            "/a%1B[31m%7F%9B%0D%0Ab%20c%C3%A9",
        )
        self.assertEqual(loggable_uri(b"/%1B?q=%0A"), "/%1B?q=%0A")
        long = loggable_uri(b"/" + b"\x9b" * 5000)
        self.assertEqual(len(long), 2003)
        self.assertTrue(long.startswith("/%9B%9B") and long.endswith("..."))
        event = {"log_format": "{x}", "x": "y", "log_time": 0.0}
        self.assertEqual(
            json.loads(event_as_json(event))["time"], "1970-01-01T00:00:00.000Z"
        )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class HostileFieldTests(SynchronousTestCase):
    """
    Whatever a client put in an event's fields, each event is one line of
    bounded length, with no control character in the text log.
    """

    def setUp(self) -> None:
        self.terminal = Terminal()
        self.text = Logger(
            namespace="reviewsd.test", observer=observer_for(self.terminal, {})
        )
        self.lines = io.StringIO()
        self.json = Logger(
            namespace="reviewsd.test", observer=JSONLinesObserver(self.lines)
        )

    def test_text_log_escapes_control_characters(self) -> None:
        hostile = (
            "a\x1b[31mred\x07\r\n2025-01-01T00:00:00+0000 [x#info] forged\u202e\x9b"
        )
        self.text.info("client {name} said {{hi}}", name=hostile)
        written = self.terminal.getvalue()
        self.assertEqual(written.count("\n"), 1, written)
        for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
            self.assertNotIn(raw, written)
        self.assertIn(
            "client a\\x1b[31mred\\x07\\r\\n2025-01-01T00:00:00+0000 [x#info] "
            "forged\\u202e\\x9b said {hi}",
            written,
        )
        self.assertRegex(written, r"^\d{4}-\d\d-\d\dT[^ ]+ \[reviewsd.test#info\] ")

    def test_tracebacks_keep_their_lines(self) -> None:
        try:
            raise ValueError("bad \x1b[2J value")
        except ValueError:
            self.text.failure("Failed on {what}", what="x\ny")
        written = self.terminal.getvalue()
        self.assertIn("Failed on x\\ny\n\tTraceback (most recent call last):", written)
        self.assertIn("\tbuiltins.ValueError: bad \\x1b[2J value", written)
        self.assertNotIn("\x1b", written)

    def test_one_event_costs_a_few_kilobytes_at_most(self) -> None:
        huge = "x" * 1_000_000
        for log in (self.text, self.json):
            log.info("got {value}", value=huge, raw=huge.encode(), nested={"k": [huge]})
            try:
                raise ValueError(huge)
            except ValueError:
                log.failure("failed with {value}", value=huge)
        text = self.terminal.getvalue()
        self.assertLess(len(text), 2 * EVENT_TEXT_MAX + TRACEBACK_MAX + 2000)
        self.assertIn("x" * 4000 + "\u2026", text)
        self.assertIn("characters left out", text)
        first, second = map(json.loads, self.lines.getvalue().splitlines())
        self.assertLess(
            len(self.lines.getvalue()), 6 * EVENT_TEXT_MAX + TRACEBACK_MAX + 2000
        )
        self.assertEqual(len(first["text"]), EVENT_TEXT_MAX)
        self.assertEqual(len(first["value"]), EVENT_TEXT_MAX)
        self.assertEqual(len(first["raw"]), EVENT_TEXT_MAX)
        self.assertEqual(len(first["nested"]["k"][0]), EVENT_TEXT_MAX)
        self.assertLess(len(second["traceback"]), TRACEBACK_MAX + 100)
        self.assertIn("ValueError: xxx", second["traceback"])

    def test_deep_fields(self) -> None:
        deep: list[Any] = []
        for _ in range(5000):
            deep = [deep]
        self.json.info("deep", value=deep)
        record = json.loads(self.lines.getvalue())
        self.assertEqual(record["text"], "deep")


class AccessLogTests(SiteTestCase):
    def test_one_event_per_request_with_its_fields(self) -> None:
        self.site.observers.append(log_access)
        connection = Connection(self.site)
        self.clock.advance(5)
        answer = connection.request("GET", "/reviews.json")
        connection.request("GET", "/nowhere?hub.secret=s3cret")
        access = [e for e in self.events if e.get("log_namespace") == "reviewsd.access"]
        self.assertEqual(len(access), 2)
        first, second = access
        self.assertEqual(
            {k: first[k] for k in ("client", "method", "uri", "status", "bytes")},
            {
                "client": "203.0.113.9",
                "method": "GET",
                "uri": "/reviews.json",
                "status": 200,
                "bytes": len(answer.body),
            },
        )
        self.assertEqual(first["duration"], 0.0)  # the clock did not move
        self.assertEqual(
            (second["status"], second["uri"]), (404, "/nowhere?hub.secret=REDACTED")
        )
        line = json.loads(event_as_json(first))
        self.assertEqual(
            line["text"],
            f'203.0.113.9 "GET /reviews.json" 200 {len(answer.body)} 0.0000s',
        )

    def test_off(self) -> None:
        Connection(self.site).request("GET", "/reviews.json")
        self.assertEqual(
            [e for e in self.events if e.get("log_namespace") == "reviewsd.access"], []
        )

    def test_duration_from_first_line_to_answer(self) -> None:
        self.site.observers.append(log_access)
        connection = Connection(self.site)
        connection.send(b"GET /reviews.json HTTP/1.1\r\n")
        self.clock.advance(0.25)
        connection.send(b"Host: x\r\n\r\n")
        [event] = [
            e for e in self.events if e.get("log_namespace") == "reviewsd.access"
        ]
        self.assertEqual(event["duration"], 0.25)

    def test_a_line_with_braces(self) -> None:
        """The line is the event's format: a brace in it stays a brace."""
        self.site.observers.append(log_access)
        Connection(self.site).request("GET", "/{x}?a={{b}}")
        [event] = [
            e for e in self.events if e.get("log_namespace") == "reviewsd.access"
        ]
        self.assertEqual(formatEvent(event), event["request"])
        self.assertIn('"GET /{x}?a={{b}}" 404', formatEvent(event))

    def test_control_characters_in_the_target(self) -> None:
        """Twisted lets DEL and some high bytes through: none reaches the log raw."""
        self.site.observers.append(log_access)
        text = Terminal()
        observer = observer_for(text, {})
        globalLogPublisher.addObserver(observer)
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        connection = Connection(self.site)
        connection.send(b"GET /a\x7f\x9b31m HTTP/1.1\r\nHost: x\r\n\r\n")
        [event] = [
            e for e in self.events if e.get("log_namespace") == "reviewsd.access"
        ]
        self.assertEqual(event["uri"], "/a%7F%9B31m")
        self.assertIn('"GET /a%7F%9B31m" ', text.getvalue())
