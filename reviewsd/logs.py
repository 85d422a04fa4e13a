"""
Where log events go, and the access log.

C{twistd --logger=reviewsd.logs.journal_observer} writes one JSON object a
line when standard output is a pipe or the journal (journald keeps each line
as one entry, with its priority when the output is the journal), and
readable text on a terminal.

The access log (L{AccessLog}) is one line per request with its fields
(client, method, uri, status, bytes, duration) in the C{reviewsd.access}
namespace. Under the observer of C{journal_observer}, lines are formatted
straight to bytes in that observer's format and written in batches, a
second apart at most (nginx's way: a few percent of a small answer, where
an event through L{twisted.logger} cost 40%); under any other observer,
each line is a L{twisted.logger} event with the same fields.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import IO, Any, Protocol

from twisted.application.service import Service
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import (
    FileLogObserver,
    ILogObserver,
    LogEvent,
    Logger,
    LogLevel,
    formatEvent,
    formatEventAsClassicLogText,
    formatTime,
)
from twisted.python import threadable
from twisted.python.compat import ioType
from zope.interface import implementer

ACCESS_NAMESPACE = "reviewsd.access"
access = Logger(namespace=ACCESS_NAMESPACE)

_PRIORITIES = {
    LogLevel.debug: 7,
    LogLevel.info: 6,
    LogLevel.warn: 4,
    LogLevel.error: 3,
    LogLevel.critical: 2,
}
_LEGACY = frozenset(
    {"message", "isError", "system", "time", "format", "why", "failure", "printed"}
)
_OWN = frozenset({"time", "level", "namespace", "text", "traceback"})
_SECRET_PARAMETER = re.compile(rb"([?&][^=&#]*secret[^=&#]*=)[^&#]*", re.IGNORECASE)
_URI_MAX = 2000
_URI_UNSAFE = re.compile(rb"[\x00-\x20\x7f-\xff]")

#: The most characters of a client's string kept or logged (a name, a version).
CLIENT_TEXT_MAX = 256
#: The most characters of one event's message, of one field, in the log.
EVENT_TEXT_MAX = 4096
#: The most characters of one traceback in the log (its start and its end).
TRACEBACK_MAX = 16384

# C0 and C1 controls but tab, and the invisible characters that reorder or
# break a line on display: what could forge a log line or drive a terminal
_CONTROLS = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
# the same, sparing the line breaks of a traceback
_CONTROLS_BUT_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """
    C{text} with control characters written as escapes (C{\\x1b}, C{\\n}):
    what a client sends cannot colour a terminal or forge a log line.
    """
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)


def bounded(text: str, limit: int = CLIENT_TEXT_MAX) -> str:
    """At most C{limit} characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def loggable_text(text: str, limit: int = CLIENT_TEXT_MAX) -> str:
    """A client's string for the log: cut to C{limit}, controls escaped."""
    return escape_controls(bounded(text, limit))


def _capped_traceback(text: str) -> str:
    """A traceback cut in its middle: where it started, and how it ended."""
    if len(text) > TRACEBACK_MAX:
        half = TRACEBACK_MAX // 2
        left = len(text) - 2 * half
        text = f"{text[:half]}\n[... {left} characters left out ...]\n{text[-half:]}"
    if _CONTROLS_BUT_LINES.search(text) is None:
        return text
    return _CONTROLS_BUT_LINES.sub(_escape, text)


def _traceback(event: LogEvent) -> str | None:
    failure = event.get("log_failure")
    if failure is None:
        return None
    try:
        return _capped_traceback(failure.getTraceback())
    except Exception:
        return _capped_traceback(repr(failure))


_second: list[Any] = [None, ""]


def _time(event: LogEvent) -> str:
    """RFC 3339 UTC with milliseconds; the seconds part is kept per second."""
    when = event.get("log_time")
    if when is None:
        return ""
    whole = int(when)
    if _second[0] != whole:
        _second[:] = [
            whole,
            datetime.fromtimestamp(whole, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        ]
    return f"{_second[1]}.{int((when - whole) * 1000):03d}Z"


def _text(event: LogEvent) -> str:
    """The message, cut at L{EVENT_TEXT_MAX}; an access event's line as it is."""
    if event.get("log_namespace") == ACCESS_NAMESPACE:
        line = event.get("request")
        if isinstance(line, str):
            return line
    return bounded(formatEvent(event), EVENT_TEXT_MAX)


def _plain(value: Any, depth: int = 0) -> Any:
    """
    A field as JSON can hold it: anything else as its text; strings cut at
    L{EVENT_TEXT_MAX}, containers nested past a few levels left out.
    """
    if isinstance(value, str):
        return value if len(value) <= EVENT_TEXT_MAX else bounded(value, EVENT_TEXT_MAX)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, bytes):
        text = value[: 4 * EVENT_TEXT_MAX].decode("utf-8", "replace")
        return bounded(text, EVENT_TEXT_MAX)
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value] if depth < 8 else "[...]"
    if isinstance(value, dict):
        if depth >= 8:
            return "{...}"
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return bounded(str(value), EVENT_TEXT_MAX)


def event_as_json(event: LogEvent) -> str:
    """
    One event as one line of JSON: C{time} (UTC), C{level}, C{namespace},
    C{text} (the formatted message), C{traceback} for failures, and the
    event's own fields.
    """
    level = event.get("log_level")
    record: dict[str, Any] = {
        "time": _time(event),
        "level": getattr(level, "name", "info"),
        "namespace": event.get("log_namespace", "-"),
        "text": _text(event),
    }
    traceback = _traceback(event)
    if traceback is not None:
        record["traceback"] = traceback
    legacy = "log_legacy" in event
    for key, value in event.items():
        if key.startswith("log_") or key in _OWN or (legacy and key in _LEGACY):
            continue
        record[key] = _plain(value)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


@implementer(ILogObserver)
class JSONLinesObserver:
    """
    Writes each event as a line of JSON (L{event_as_json}); for the journal
    the line starts with the event's syslog priority (C{<3>}), which journald
    takes off and keeps as the entry's priority.
    """

    before_event: Callable[[], None] | None = None

    def __init__(self, out: IO[Any], journal: bool = False) -> None:
        self._out = out
        self._journal = journal
        self._binary = ioType(out) is not str
        self._bytes = _BinaryWriting(out)
        self.access_style = "journal" if journal else "json"

    def write_access(self, lines: bytes) -> None:
        """Access lines formatted by L{AccessFormat}, after what was written."""
        self._bytes.write_bytes(lines)

    def __call__(self, event: LogEvent) -> None:
        if self.before_event is not None:
            self.before_event()
        try:
            line = event_as_json(event)
        except Exception as e:  # never lose an event to a formatting bug
            line = json.dumps({"text": f"Unloggable event: {e!r}", "level": "error"})
        if self._journal:
            priority = _PRIORITIES.get(event.get("log_level"), 6)
            line = f"<{priority}>{line}"
        if self._binary:
            self._out.write((line + "\n").encode("utf-8"))
        else:
            self._out.write(line + "\n")
        self._out.flush()


def _is_journal(out: IO[Any], environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether C{out} is systemd's journal stream (C{$JOURNAL_STREAM})."""
    stream = environ.get("JOURNAL_STREAM", "")
    device, _, inode = stream.partition(":")
    try:
        stat = os.fstat(out.fileno())
        return (stat.st_dev, stat.st_ino) == (int(device), int(inode))
    except (ValueError, OSError, AttributeError):
        return False


def _isatty(out: IO[Any]) -> bool:
    try:
        return out.isatty()
    except (ValueError, AttributeError):
        return False


def _classic_text(event: LogEvent) -> str | None:
    """
    An event as L{twisted.logger.textFileLogObserver} writes it (time,
    C{[system]}, message, indented traceback), but with its message cut at
    L{EVENT_TEXT_MAX} and control characters escaped: one event, one line
    of bounded length, whatever a client put in its fields.
    """
    text = escape_controls(_text(event))
    traceback = _traceback(event)
    if traceback is not None:
        text = f"{text}\n{traceback}"
    shown: LogEvent = {
        key: event[key]
        for key in ("log_time", "log_system", "log_namespace", "log_level")
        if key in event
    }
    shown["log_format"] = text.replace("{", "{{").replace("}", "}}")
    return formatEventAsClassicLogText(shown, formatTime=formatTime)


class TextObserver(FileLogObserver):
    """Readable text, one safe line an event (L{_classic_text})."""

    access_style = "text"
    before_event: Callable[[], None] | None = None

    def __init__(self, out: IO[Any]) -> None:
        super().__init__(out, _classic_text)
        self._bytes = _BinaryWriting(out)

    def write_access(self, lines: bytes) -> None:
        """Access lines formatted by L{AccessFormat}, after what was written."""
        self._bytes.write_bytes(lines)

    def __call__(self, event: LogEvent) -> None:
        if self.before_event is not None:
            self.before_event()
        super().__call__(event)


def text_observer(out: IO[Any]) -> TextObserver:
    """Readable text, one safe line an event (L{_classic_text})."""
    return TextObserver(out)


def observer_for(
    out: IO[Any], environ: dict[str, str] | os._Environ[str] | None = None
) -> TextObserver | JSONLinesObserver:
    """Text for a terminal, JSON lines for anything else (the journal, a pipe)."""
    if _isatty(out):
        return text_observer(out)
    return JSONLinesObserver(
        out, journal=_is_journal(out, os.environ if environ is None else environ)
    )


def journal_observer() -> ILogObserver:
    """
    The factory for C{twistd --logger}: called with no arguments. The
    observer is also where L{AccessLog} writes its lines, straight.
    """
    observer = observer_for(sys.stdout)
    _installed[:] = [observer]
    return observer


def _percent(match: re.Match[bytes]) -> bytes:
    return b"%%%02X" % match.group()[0]


def loggable_uri(uri: bytes) -> str:
    """
    A request target for the log: C{secret} parameters (C{hub.secret}, sent
    by mistake in a query) redacted, control and non-ASCII bytes
    percent-encoded (no raw control character reaches the log), and cut at
    2,000 characters.
    """
    if b"?" in uri and b"secret" in uri.lower():
        uri = _SECRET_PARAMETER.sub(rb"\1REDACTED", uri)
    cut = len(uri) > _URI_MAX
    uri = uri[:_URI_MAX]
    if _URI_UNSAFE.search(uri) is not None:
        uri = _URI_UNSAFE.sub(_percent, uri)
        cut = cut or len(uri) > _URI_MAX
        uri = uri[:_URI_MAX]
    return uri.decode("ascii") + ("..." if cut else "")


class AnsweredRequest(Protocol):
    """
    What the access log and the metrics read of an answered request: a
    L{twisted.web.http.Request}, or the record of an answer sent without
    one.
    """

    @property
    def method(self) -> bytes: ...

    @property
    def uri(self) -> bytes: ...

    @property
    def path(self) -> bytes: ...

    @property
    def code(self) -> int: ...

    @property
    def sentLength(self) -> int: ...

    def getClientAddress(self) -> Any: ...


def _client(request: AnsweredRequest) -> str:
    return str(getattr(request.getClientAddress(), "host", "-"))


def log_access(request: AnsweredRequest, route: str, duration: float) -> None:
    """
    One access log event through L{twisted.logger}: what L{AccessLog} does
    when the log's observer is not one of this module's. The fields are in
    the event, for JSON; C{request} is the line, which is also the event's
    format (braces doubled), rendered fastest by Twisted's formatter.
    """
    client = _client(request)
    method = request.method.decode("latin-1")
    uri = loggable_uri(request.uri)
    status = request.code
    sent = request.sentLength
    line = f'{client} "{method} {uri}" {status} {sent} {duration:.4f}s'
    access.observer(
        {
            "log_logger": access,
            "log_level": LogLevel.info,
            "log_namespace": ACCESS_NAMESPACE,
            "log_source": None,
            "log_format": (
                line.replace("{", "{{").replace("}", "}}")
                if "{" in line or "}" in line
                else line
            ),
            "log_time": time.time(),
            "request": line,
            "client": client,
            "method": method,
            "uri": uri,
            "status": status,
            "bytes": sent,
            "duration": duration,
        }
    )


# --- access lines as bytes, written in batches ---------------------------

ACCESS_FLUSH_INTERVAL = 1.0
"""
Seconds an access line waits, at most, before it is written: what a crash
of the daemon (C{SIGKILL}, an out-of-memory kill) can lose. A clean stop
writes every line.
"""

ACCESS_BUFFER_MAX = 256
"""Access lines kept before they are written, whatever the time (60-80 KiB)."""

_JSON_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
_KEPT = 512


class _Stamps:
    """
    A line's time as each format writes it, made once a second: RFC 3339 UTC
    (to the second, as L{event_as_json} writes it before its milliseconds)
    for JSON, Twisted's local time (as L{formatTime}) for text.
    """

    __slots__ = ("second", "utc", "local")

    def __init__(self) -> None:
        self.second = -1
        self.utc = b""
        self.local = b""

    def now(self, second: int) -> None:
        """Make the texts of C{second}."""
        self.second = second
        moment = datetime.fromtimestamp(second, timezone.utc)
        self.utc = moment.strftime("%Y-%m-%dT%H:%M:%S").encode()
        self.local = formatTime(second).encode()


_Key = tuple[str, bytes, bytes, int, int]
"""Client, method, target, status and bytes: what a line says but time."""

_Answered = tuple[_Key, float, float]
"""An answered request as the access log keeps it: its key, when, duration."""


class AccessFormat:
    """
    Access lines as bytes, in the format of one of this module's observers:
    C{"json"} (as L{event_as_json} writes an access event, its C{duration}
    to the microsecond), C{"journal"} (the same, after the journal priority
    C{<6>}) or C{"text"} (as L{_classic_text}).

    A line costs one bytes formatting of its time and duration (one float
    at most): the rest is kept as a template for the last few hundred kinds
    of answer (most traffic is a few documents answered to a few clients),
    the time's text for a second.
    """

    def __init__(self, style: str) -> None:
        if style not in ("json", "journal", "text"):
            raise ValueError(f"no access line style {style!r}")
        self.style = style
        self._prefix = b"<6>" if style == "journal" else b""
        self._stamps = _Stamps()
        self._kept: dict[_Key, bytes] = {}

    def _template(self, key: _Key) -> bytes:
        """The line of C{key} with its time and duration left to fill in."""
        host, method_bytes, target, status, sent = key
        client, method = host, method_bytes.decode("latin-1")
        uri = loggable_uri(target)
        if self.style == "text":
            head = escape_controls(f'{client} "{method} {uri}" {status} {sent} ')
            return b"%%s [%s#info] %s%%.4fs\n" % (
                ACCESS_NAMESPACE.encode(),
                head.replace("%", "%%").encode(),
            )
        client, method, uri = map(_json_content, (client, method, uri))
        head = f'{client} \\"{method} {uri}\\" {status} {sent} '.replace("%", "%%")
        fields = (
            f'"client":"{client}","method":"{method}","uri":"{uri}",'
            f'"status":{status},"bytes":{sent},'
        ).replace("%", "%%")
        return (
            self._prefix
            + b'{"time":"%%s.%%03dZ","level":"info","namespace":"%s",'
            % ACCESS_NAMESPACE.encode()
            + f'"text":"{head}%ss","request":"{head}%ss",{fields}'.encode()
            + b'"duration":%.6f}\n'
        )

    def _kept_template(self, key: _Key) -> bytes:
        """L{_template}, kept (a few hundred at most)."""
        if len(self._kept) >= _KEPT:
            self._kept.clear()
        template = self._kept[key] = self._template(key)
        return template

    def lines(self, answered: list[_Answered]) -> bytes:
        """
        The access lines of answered requests (L{answered_key}, when,
        duration), made in one loop: at the flush of a batch, rather than
        one at a time between answers.
        """
        kept, stamps, text = self._kept, self._stamps, self.style == "text"
        made = []
        for key, when, duration in answered:
            template = kept.get(key) or self._kept_template(key)
            second = int(when)
            if second != stamps.second:
                stamps.now(second)
            if text:
                made.append(template % (stamps.local, duration))
                continue
            # (most answers take under 50 us: no float to format)
            seconds = b"0.0000" if 0.0 <= duration < 0.00005 else b"%.4f" % duration
            millis = int((when - second) * 1000)
            made.append(template % (stamps.utc, millis, seconds, seconds, duration))
        return b"".join(made)

    def line(self, request: AnsweredRequest, duration: float, when: float) -> bytes:
        """The access line of C{request}, answered in C{duration} at C{when}."""
        return self.lines([(answered_key(request), when, duration)])


def answered_key(request: AnsweredRequest) -> _Key:
    """What an access line says of C{request}: its client, method, target..."""
    return (
        getattr(request.getClientAddress(), "host", "-"),
        request.method,
        request.uri,
        request.code,
        request.sentLength,
    )


def _json_content(text: str) -> str:
    """C{text} as the inside of a JSON string, as L{json.dumps} writes it."""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return json.dumps(text, ensure_ascii=False)[1:-1]


class AccessDestination(Protocol):
    """
    An observer that access lines may be written to directly: its format,
    a way to write lines, and the flush to run before any other event it
    writes, so that the stream keeps the order things happened in.
    """

    access_style: str
    before_event: Callable[[], None] | None

    def write_access(self, lines: bytes) -> None: ...


class _BinaryWriting:
    """Writes bytes to a text or binary stream, after what it holds."""

    def __init__(self, out: IO[Any]) -> None:
        self._out = out
        self._binary = ioType(out) is not str

    def write_bytes(self, data: bytes) -> None:
        out = self._out
        if self._binary:
            out.write(data)
            out.flush()
            return
        buffer = getattr(out, "buffer", None)
        if buffer is None:
            out.write(data.decode("utf-8"))
        else:
            out.flush()  # what the text layer holds goes first
            buffer.write(data)
            buffer.flush()


_installed: list[AccessDestination] = []


def installed_destination() -> AccessDestination | None:
    """The observer twistd logs to, if C{journal_observer} made it."""
    return _installed[-1] if _installed else None


class AccessLog(Service):
    """
    The access log: a L{reviewsd.web.site.RequestObserver} writing one line
    per request to C{destination}'s observer, in its format, in batches: on
    C{clock}, L{ACCESS_FLUSH_INTERVAL} after the first line of a batch; once
    L{ACCESS_BUFFER_MAX} lines wait; before any other event that observer
    writes; and when the service stops (after the listeners, which stop
    first). Not running, each line is written at once.

    An answer costs keeping what its line says (L{answered_key}), its time
    and duration; the lines are made as a batch is written, in one loop
    (L{AccessFormat.lines}), which costs less than a line at a time
    between answers.

    C{destination} is called as the service starts (twistd makes its log
    observer after the services): with none, each line is a L{twisted.logger}
    event (L{log_access}), as any observer can take.
    """

    def __init__(
        self,
        clock: IReactorTime,
        destination: Callable[[], AccessDestination | None] = installed_destination,
        interval: float = ACCESS_FLUSH_INTERVAL,
        buffer_max: int = ACCESS_BUFFER_MAX,
    ) -> None:
        self._clock = clock
        self._find = destination
        self._interval = interval
        self._buffer_max = buffer_max
        self._destination: AccessDestination | None = None
        self._format: AccessFormat | None = None
        self._lines: list[_Answered] = []
        self._timer: IDelayedCall | None = None

    def startService(self) -> None:
        super().startService()
        destination = self._destination = self._find()
        if destination is not None:
            self._format = AccessFormat(destination.access_style)
            destination.before_event = self._flush_first

    def stopService(self) -> None:
        super().stopService()
        self.flush()

    def __call__(self, request: AnsweredRequest, route: str, duration: float) -> None:
        if self._format is None:
            log_access(request, route, duration)
            return
        lines = self._lines
        lines.append((answered_key(request), self._clock.seconds(), duration))
        if len(lines) >= self._buffer_max or not self.running:
            self.flush()
        elif self._timer is None:
            self._timer = self._clock.callLater(self._interval, self._on_time)

    def _on_time(self) -> None:
        self._timer = None
        self.flush()

    def _flush_first(self) -> None:
        """Before another event: the lines so far, if on the reactor's thread."""
        if self._lines and threadable.isInIOThread():
            self.flush()

    def flush(self) -> None:
        """Write the lines waiting, in one write."""
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None
        if not self._lines or self._destination is None or self._format is None:
            return
        lines, self._lines = self._lines, []
        try:
            self._destination.write_access(self._format.lines(lines))
        except Exception:
            # (not retried: a full disk or a closed pipe would keep them all)
            access.failure("Writing {count} access lines failed", count=len(lines))
