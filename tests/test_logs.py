"""
The log observers: one JSON object per line (with journal priorities
under systemd), and the access log, its secrets redacted: its lines as
the observers write events, in batches that a clean stop writes whole and
a crash loses at most the last second of.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from twisted.internet import defer, reactor, task
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.task import Clock
from twisted.internet.threads import deferToThread
from twisted.logger import Logger, formatEvent, globalLogPublisher
from twisted.python import threadable
from twisted.trial.unittest import SynchronousTestCase, TestCase

from reviewsd.logs import (
    ACCESS_FLUSH_INTERVAL,
    ACCESS_NAMESPACE,
    EVENT_TEXT_MAX,
    TRACEBACK_MAX,
    AccessFormat,
    AccessLog,
    JSONLinesObserver,
    _classic_text,
    event_as_json,
    installed_destination,
    journal_observer,
    log_access,
    loggable_uri,
    observer_for,
    text_observer,
)
from tests.support.daemon import TWISTD, _Daemon, environment, free_port
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


class _Answered:
    """An answered request, as the access log reads it."""

    def __init__(
        self,
        uri: bytes,
        code: int = 200,
        sent: int = 1234,
        method: bytes = b"GET",
        client: Any = None,
    ) -> None:
        self.method, self.uri, self.path = method, uri, uri.split(b"?")[0]
        self.code, self.sentLength = code, sent
        self.client = client or IPv4Address("TCP", "203.0.113.9", 40000)

    def getClientAddress(self) -> Any:
        return self.client


ODD_REQUESTS = [
    _Answered(b"/reviews.json"),
    _Answered(b"/reviews.json", 304, 0, b"HEAD"),
    _Answered(b'/a"b\\c%d{x}?q={{y}}&z=%s', 404, 55),
    _Answered(b"/api/websub/hub?hub.secret=s3cret&x=1", 202, 0, b"POST"),
    _Answered(b"/a\x1b[31m\x7f\x9b\xc3\xa9 b", 404, 7),
    _Answered(b"/" + b"a" * 3000, 414, 0),
    _Answered(b"/feed.xml", client=IPv6Address("TCP", "2001:db8::1", 5)),
]


class AccessFormatTests(SynchronousTestCase):
    """
    The access lines made straight as bytes say what L{log_access}'s event
    says, as each observer writes that event.
    """

    def event(self, request: _Answered, duration: float) -> dict[str, Any]:
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        try:
            log_access(request, "route", duration)
        finally:
            globalLogPublisher.removeObserver(events.append)
        [event] = [e for e in events if e.get("log_namespace") == ACCESS_NAMESPACE]
        return event

    def test_json(self) -> None:
        for style, prefix in (("json", b""), ("journal", b"<6>")):
            lines = AccessFormat(style)
            for request in ODD_REQUESTS:
                event = self.event(request, 0.000197)
                line = lines.line(request, 0.000197, event["log_time"])
                self.assertTrue(line.startswith(prefix + b"{"), line)
                self.assertTrue(line.endswith(b"}\n"), line)
                self.assertEqual(line.count(b"\n"), 1)
                mine = json.loads(line[len(prefix) :])
                theirs = json.loads(event_as_json(event))
                self.assertEqual(mine, theirs)
                self.assertEqual(list(mine), list(theirs))  # in the same order

    def test_duration_to_the_microsecond(self) -> None:
        """Twisted's durations have float noise in their last digits."""
        request = _Answered(b"/reviews.json")
        line = AccessFormat("json").line(request, 4.792213439941406e-05, 1.0)
        self.assertIn(b'"duration":0.000048}', line)
        self.assertIn(
            b'"text":"203.0.113.9 \\"GET /reviews.json\\" 200 1234 0.0000s"', line
        )

    def test_durations(self) -> None:
        """Formatted as Twisted's formatter does, small ones without a float."""
        request = _Answered(b"/")
        for duration in (0.0, 4.9999999999999996e-05, 5e-05, 0.00015, 2.5, -1e-07):
            for style in ("json", "text"):
                line = AccessFormat(style).line(request, duration, 0.0)
                self.assertIn(b" 200 1234 %ss" % f"{duration:.4f}".encode(), line)
            record = json.loads(AccessFormat("json").line(request, duration, 0.0))
            self.assertEqual(record["duration"], float(f"{duration:.6f}"))

    def test_text(self) -> None:
        lines = AccessFormat("text")
        for request in ODD_REQUESTS:
            event = self.event(request, 1.5)
            line = lines.line(request, 1.5, event["log_time"])
            self.assertEqual(line.decode("utf-8"), _classic_text(event))

    def test_times(self) -> None:
        """Each second's text is made anew; milliseconds as the JSON observer's."""
        lines = AccessFormat("json")
        request = _Answered(b"/")
        for when in (0.0, 0.999, 1.0, 86400.25, 1_795_000_000.5):
            event = self.event(request, 0.0)
            event["log_time"] = when
            mine = json.loads(lines.line(request, 0.0, when))
            self.assertEqual(mine["time"], json.loads(event_as_json(event))["time"])

    def test_kinds_of_answer_are_kept_in_bounds(self) -> None:
        lines = AccessFormat("json")
        for n in range(2000):
            line = lines.line(_Answered(b"/%d" % n), 0.0, 0.0)
            self.assertEqual(json.loads(line)["uri"], f"/{n}")
        self.assertLessEqual(len(lines._kept), 512)

    def test_no_such_style(self) -> None:
        self.assertRaises(ValueError, AccessFormat, "xml")


class _Destination:
    """Where an L{AccessLog} writes: each write kept."""

    access_style = "json"
    before_event = None
    broken = False

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write_access(self, lines: bytes) -> None:
        if self.broken:
            raise OSError(28, "No space left on device")
        self.writes.append(lines)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in b"".join(self.writes).splitlines()]


class AccessBatchTests(SynchronousTestCase):
    """
    Lines are written in batches: a second after the first of a batch, once
    the buffer is full, before any other event, and all when the service
    stops; not running, at once.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.destination = _Destination()
        self.log = AccessLog(
            self.clock, lambda: self.destination, interval=1.0, buffer_max=40
        )
        self.log.startService()

    def answer(self, count: int) -> None:
        for n in range(count):
            self.log(_Answered(b"/n/%d" % n), "other", 0.001)

    def test_a_second_after_the_first_line(self) -> None:
        self.answer(3)
        self.clock.advance(0.5)
        self.answer(3)
        self.clock.advance(0.49)
        self.assertEqual(self.destination.writes, [])
        self.clock.advance(0.01)
        self.assertEqual(len(self.destination.writes), 1)  # one write
        self.assertEqual(len(self.destination.lines()), 6)
        self.answer(1)
        self.clock.advance(1)
        self.assertEqual(len(self.destination.writes), 2)
        self.assertEqual(self.clock.getDelayedCalls(), [])  # no timer when idle

    def test_when_the_buffer_is_full(self) -> None:
        self.answer(100)
        self.assertEqual([w.count(b"\n") for w in self.destination.writes], [40, 40])
        self.log.stopService()
        self.assertEqual(len(self.destination.lines()), 100)

    def test_stopping_writes_everything(self) -> None:
        self.answer(7)
        self.log.stopService()
        self.assertEqual(len(self.destination.lines()), 7)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.answer(2)  # stopped: at once
        self.assertEqual(len(self.destination.lines()), 9)
        self.assertEqual(len(self.destination.writes), 3)

    def test_in_order_with_other_events(self) -> None:
        threadable.registerAsIOThread()  # (the reactor's, as in twistd)
        out = io.StringIO()
        observer = JSONLinesObserver(out)
        log = AccessLog(self.clock, lambda: observer)
        log.startService()
        events = Logger(namespace="reviewsd.test", observer=observer)
        log(_Answered(b"/first"), "other", 0.0)
        events.info("between")
        log(_Answered(b"/second"), "other", 0.0)
        log.stopService()
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(
            [r.get("uri", r["text"]) for r in records], ["/first", "between", "/second"]
        )

    def test_a_failed_write(self) -> None:
        """The batch is dropped (not kept to fail again), and that is logged."""
        failures: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(failures.append)
        self.addCleanup(globalLogPublisher.removeObserver, failures.append)
        self.destination.broken = True
        self.answer(3)
        self.clock.advance(1)
        [failure] = [e for e in failures if "access lines failed" in formatEvent(e)]
        self.assertEqual(failure["count"], 3)
        self.assertEqual(len(self.flushLoggedErrors(OSError)), 1)
        self.destination.broken = False
        self.answer(1)  # the next batch is written as usual
        self.clock.advance(1)
        self.assertEqual(len(self.destination.lines()), 1)

    def test_the_observer_twistd_makes(self) -> None:
        """C{journal_observer}'s observer is where the lines go, in its format."""
        from reviewsd import logs

        self.addCleanup(logs._installed.clear)
        out = io.BytesIO()
        self.patch(sys, "stdout", out)
        observer = journal_observer()
        self.assertIs(installed_destination(), observer)
        log = AccessLog(self.clock)
        log.startService()
        log(_Answered(b"/x"), "other", 0.0)
        log.stopService()
        [record] = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(record["uri"], "/x")

    def test_no_destination(self) -> None:
        """Under another observer, each line is an event, at once."""
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        log = AccessLog(self.clock, lambda: None)
        log.startService()
        log(_Answered(b"/x"), "other", 0.5)
        [event] = [e for e in events if e.get("log_namespace") == ACCESS_NAMESPACE]
        self.assertEqual((event["uri"], event["duration"]), ("/x", 0.5))
        self.assertEqual(self.clock.getDelayedCalls(), [])


class EveryRequestTests(SiteTestCase):
    """Every request through the site has its line, in text and in JSON."""

    REQUESTS = (
        (("GET", "/reviews.json"), 200),
        (("HEAD", "/reviews.json"), 200),
        (("GET", "/reviews.json", "Accept-Encoding: gzip"), 200),
        (("GET", "/api/feed.json", "If-None-Match: *"), 304),
        (("GET", "/nowhere?hub.secret=s3cret"), 404),
        (("GET", "/api/reviews/search?rating=5&limit=2"), 200),
        (("OPTIONS", "/reviews.json"), 204),
        (("DELETE", "/reviews.json"), 405),
        (("GET", "/reviews.json", "Connection: close"), 200),
    )

    def requests(self, destination: Any) -> None:
        log = AccessLog(self.clock, lambda: destination)
        log.startService()
        self.site.observers.append(log)
        for (method, path, *headers), code in self.REQUESTS:
            answer = Connection(self.site).request(method, path, *headers)
            self.assertEqual(answer.code, code, path)
        log.stopService()

    def test_json(self) -> None:
        out = io.StringIO()
        self.requests(JSONLinesObserver(out))
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(
            [(r["method"], r["uri"], r["status"]) for r in records],
            [
                (method, path.replace("s3cret", "REDACTED"), code)
                for (method, path, *_), code in self.REQUESTS
            ],
        )
        self.assertTrue(all(r["namespace"] == ACCESS_NAMESPACE for r in records))
        self.assertEqual(records[0]["client"], "203.0.113.9")
        self.assertGreater(records[0]["bytes"], 1000)
        self.assertEqual(records[1]["bytes"], 0)  # HEAD

    def test_text(self) -> None:
        out = Terminal()
        self.requests(text_observer(out))
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), len(self.REQUESTS))
        for line, ((method, path, *_), code) in zip(lines, self.REQUESTS, strict=True):
            self.assertIn(" [reviewsd.access#info] 203.0.113.9 ", line)
            self.assertIn(
                f'"{method} {path.replace("s3cret", "REDACTED")}" {code} ', line
            )


def _requests(port: int, count: int) -> None:
    """C{count} GETs of C{/reviews.json} on one connection, each answered."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for n in range(count):
            connection.request("GET", f"/reviews.json?n={n}")
            connection.getresponse().read()
    finally:
        connection.close()


class DaemonAccessLogTests(TestCase):
    """
    The real daemon, as systemd runs it (the journal logger): a clean stop
    writes every access line; a crash loses at most the last
    L{ACCESS_FLUSH_INTERVAL} of them.
    """

    timeout = 120

    @defer.inlineCallbacks
    def start(self) -> Any:
        self.port = free_port()
        workdir = os.path.abspath(self.mktemp())
        os.makedirs(workdir)
        env = environment()
        env.pop("JOURNAL_STREAM", None)
        self.daemon = _Daemon()
        self.process = reactor.spawnProcess(
            self.daemon,
            sys.executable,
            [
                *TWISTD,
                "--nodaemon",
                "--pidfile=",
                "--logger=reviewsd.logs.journal_observer",
                "reviewsd",
                "--listen",
                f"tcp:{self.port}:interface=127.0.0.1",
                "--state-dir",
                os.path.join(workdir, "state"),
            ],
            env=env,
            path=workdir,
        )

        def kill() -> Any:
            if not self.daemon.ended.called:
                self.process.signalProcess(signal.SIGKILL)
            return self.daemon.ended

        self.addCleanup(kill)
        for _ in range(600):
            if self.daemon.ended.called:
                self.fail(f"twistd exited:\n{self.daemon.output.decode()}")
            try:
                yield deferToThread(_requests, self.port, 1)
                return
            except OSError:
                yield task.deferLater(reactor, 0.1, lambda: None)
        self.fail(f"twistd never answered:\n{self.daemon.output.decode()}")

    def access_uris(self) -> list[str]:
        records = [json.loads(line) for line in self.daemon.output.splitlines()]
        return [r["uri"] for r in records if r["namespace"] == ACCESS_NAMESPACE]

    @defer.inlineCallbacks
    def test_a_clean_stop_loses_nothing(self) -> Any:
        yield self.start()
        yield deferToThread(_requests, self.port, 300)
        self.process.signalProcess(signal.SIGTERM)
        yield self.daemon.ended
        uris = self.access_uris()
        self.assertEqual(uris[1:], [f"/reviews.json?n={n}" for n in range(300)])

    @defer.inlineCallbacks
    def test_a_crash_loses_at_most_the_last_second(self) -> Any:
        """
        Lines fewer than a buffer's worth (so that only the timer writes
        them) are all there once the interval has passed, and a crash then
        loses none of them.
        """
        yield self.start()
        yield deferToThread(_requests, self.port, 20)
        answered = time.monotonic()
        # (the daemon's timer runs on its own clock: a margin for a busy machine)
        yield task.deferLater(reactor, ACCESS_FLUSH_INTERVAL + 1.0, lambda: None)
        yield deferToThread(_requests, self.port, 20)
        self.process.signalProcess(signal.SIGKILL)
        yield self.daemon.ended
        self.assertGreater(time.monotonic() - answered, ACCESS_FLUSH_INTERVAL)
        uris = self.access_uris()
        # every line older than the interval is there, and no other is made up
        self.assertEqual(uris[1:21], [f"/reviews.json?n={n}" for n in range(20)])
        later = [f"/reviews.json?n={n}" for n in range(len(uris) - 21)]
        self.assertEqual(uris[21:], later)
