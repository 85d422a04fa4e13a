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
    ILogObserver,
    LogEvent,
    Logger,
    LogLevel,
    formatEvent,
    textFileLogObserver,
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
    """The message; an access event's line as it is."""
    if event.get("log_namespace") == ACCESS_NAMESPACE:
        line = event.get("request")
        if isinstance(line, str):
            return line
    return formatEvent(event)


def _plain(value: Any) -> Any:
    """A field as JSON can hold it: anything else as its text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


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
    failure = event.get("log_failure")
    if failure is not None:
        try:
            record["traceback"] = failure.getTraceback()
        except Exception:
            record["traceback"] = repr(failure)
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


def observer_for(
    out: IO[Any], environ: dict[str, str] | os._Environ[str] | None = None
) -> ILogObserver:
    """Text for a terminal, JSON lines for anything else (the journal, a pipe)."""
    if _isatty(out):
        return textFileLogObserver(out)
    return JSONLinesObserver(
        out, journal=_is_journal(out, os.environ if environ is None else environ)
    )


def journal_observer() -> ILogObserver:
    """The factory for C{twistd --logger}: called with no arguments."""
    return observer_for(sys.stdout)


def loggable_uri(uri: bytes) -> str:
    """
    A request target for the log: C{secret} parameters (C{hub.secret}, sent
    by mistake in a query) redacted, and cut at 2,000 bytes.
    """
    if b"?" in uri and b"secret" in uri.lower():
        uri = _SECRET_PARAMETER.sub(rb"\1REDACTED", uri)
    if len(uri) > _URI_MAX:
        uri = uri[:_URI_MAX] + b"..."
    return uri.decode("latin-1")


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
