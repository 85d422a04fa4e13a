"""
Where log events go, and the access log.

C{twistd --logger=reviewsd.logs.journal_observer} writes one JSON object a
line when standard output is a pipe or the journal (journald keeps each line
as one entry, with its priority when the output is the journal), and
readable text on a terminal.

The access log is a L{twisted.logger} event per request with its fields
(client, method, uri, status, bytes, duration) in the C{reviewsd.access}
namespace, and its line ready made.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from datetime import datetime, timezone
from typing import IO, Any

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
from twisted.python.compat import ioType
from twisted.web.http import Request
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

    def __init__(self, out: IO[Any], journal: bool = False) -> None:
        self._out = out
        self._journal = journal
        self._binary = ioType(out) is not str

    def __call__(self, event: LogEvent) -> None:
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


def text_observer(out: IO[Any]) -> ILogObserver:
    """Readable text, one safe line an event (L{_classic_text})."""
    return FileLogObserver(out, _classic_text)


def observer_for(
    out: IO[Any], environ: dict[str, str] | os._Environ[str] | None = None
) -> ILogObserver:
    """Text for a terminal, JSON lines for anything else (the journal, a pipe)."""
    if _isatty(out):
        return text_observer(out)
    return JSONLinesObserver(
        out, journal=_is_journal(out, os.environ if environ is None else environ)
    )


def journal_observer() -> ILogObserver:
    """The factory for C{twistd --logger}: called with no arguments."""
    return observer_for(sys.stdout)


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


def log_access(request: Request, route: str, duration: float) -> None:
    """
    One access log event; an observer of L{reviewsd.web.site.ReviewsSite}.

    Per request, this is the daemon's largest cost after the network: the
    event is built here rather than by L{Logger.info} (which checks its level
    and merges keywords on each call), and the line is formatted once, as a
    format string with no fields left, which Twisted's pure-Python formatter
    renders fastest. The fields are in the event too, for JSON; C{request}
    is the line.
    """
    client = getattr(request.getClientAddress(), "host", "-")
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
