"""
Opening hours in the forms operators copy from their listings, read once
into rows for people and schema.org terms for search engines.

C{business.json}'s C{hours} may be:

  - an object, day to text: C{{"monday": "08:00-17:00", "sunday": "closed"}};
  - a string: C{"Mo-Fr 07:00-18:00; Sa 08:00-12:00"}, or any sentence;
  - an array of schema.org C{openingHours} strings (C{"Mo-Fr 07:00-18:00"}),
    or of lines as listings print them (C{"Monday: 9:00 AM - 5:00 PM"});
  - an array of opening-hours specifications, C{{"dayOfWeek" (or "days"),
    "opens", "closes"}}, C{dayOfWeek} a day's name, its schema.org URL or an
    array of them (a single specification object is taken too).

The value is published as written; L{read_hours} checks it and gives the
L{Hours} the landing page shows and marks up.  Strings in schema.org's own
syntax become C{openingHours}, as written; whatever else names days and
times becomes C{openingHoursSpecification}; text that does neither is shown
and not marked up.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from reviewsd.data.fields import InvalidField, attempt, describe, string

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
PUBLIC_HOLIDAYS = "PublicHolidays"
"""schema.org's day for public holidays, which has no place in the week."""

ALL_DAY = ("00:00", "23:59")
"""How schema.org writes open around the clock."""

_NAMES: dict[str, str] = {
    **{day.lower(): day for day in DAYS},
    **{day[:2].lower(): day for day in DAYS},
    **{day[:3].lower(): day for day in DAYS},
    "tues": "Tuesday",
    "weds": "Wednesday",
    "thur": "Thursday",
    "thurs": "Thursday",
    "ph": PUBLIC_HOLIDAYS,
    "publicholidays": PUBLIC_HOLIDAYS,
    "public holidays": PUBLIC_HOLIDAYS,
}
_SCHEMA_URL = re.compile(r"\A(?:https?://schema\.org/|schema:)(\w+)\Z")

_DAY = "(?:Mo|Tu|We|Th|Fr|Sa|Su)"
_HHMM = r"(?:[01]\d|2[0-4]):[0-5]\d"
_OPENING_HOURS = re.compile(
    rf"{_DAY}(?:-{_DAY})?(?:,{_DAY}(?:-{_DAY})?)*"
    rf"(?: {_HHMM}-{_HHMM}(?:,{_HHMM}-{_HHMM})*)?"
)
"""schema.org's C{openingHours} syntax: C{Mo-Fr 07:00-18:00}, C{Mo,We 09:00-12:00}."""

_DASH = r"\s*(?:[-\u2010-\u2015]|to|through|thru|until)\s*"
_RANGE = re.compile(rf"([a-z]+)\.?{_DASH}([a-z]+)\.?", re.IGNORECASE)
_DAYS_AND_TIMES = re.compile(
    r"\s*(?P<days>[^\d:]*?)\s*:?\s*(?P<times>(?:\d|closed|open|all day).*)?",
    re.IGNORECASE | re.DOTALL,
)
_CLOCK = r"(\d{1,2})(?:[:.](\d{2}))?(?::\d{2})?\s*(?:([ap])\.?\s*m\.?)?"
_SPAN = re.compile(rf"{_CLOCK}{_DASH}{_CLOCK}", re.IGNORECASE)
_SPEC_TIME = re.compile(r"\A(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\Z")
_DATE = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_CLOSED = frozenset({"closed", "close"})
_AROUND_THE_CLOCK = frozenset(
    {"open 24 hours", "24 hours", "24h", "24/7", "open all day", "all day"}
)


@frozen
class Opening:
    """When the business opens on some days: one OpeningHoursSpecification."""

    days: tuple[str, ...]
    opens: str
    closes: str
    valid_from: str | None = None
    valid_through: str | None = None

    def json_ld(self) -> dict[str, Any]:
        urls = [f"https://schema.org/{day}" for day in self.days]
        thing: dict[str, Any] = {
            "@type": "OpeningHoursSpecification",
            "dayOfWeek": urls[0] if len(urls) == 1 else urls,
            "opens": self.opens,
            "closes": self.closes,
        }
        if self.valid_from:
            thing["validFrom"] = self.valid_from
        if self.valid_through:
            thing["validThrough"] = self.valid_through
        return thing


@frozen
class HoursRow:
    """
    One row of the hours table: the days in words and when, or (C{days}
    empty) a line of text on its own.
    """

    days: str
    times: str


@frozen
class Hours:
    """
    The hours, read: C{rows} to show; C{opening_hours} (schema.org syntax,
    as written) and C{specification} to mark up.
    """

    rows: tuple[HoursRow, ...] = ()
    opening_hours: tuple[str, ...] = ()
    specification: tuple[Opening, ...] = ()

    def json_ld(self) -> dict[str, Any]:
        """The schema.org properties of a LocalBusiness these hours give."""
        thing: dict[str, Any] = {}
        if self.opening_hours:
            thing["openingHours"] = list(self.opening_hours)
        if self.specification:
            thing["openingHoursSpecification"] = [
                opening.json_ld() for opening in self.specification
            ]
        return thing


# --- reading ------------------------------------------------------------------


class _Builder:
    """Rows and openings as they are read, then one L{Hours}."""

    def __init__(self) -> None:
        self.rows: list[HoursRow] = []
        self.opening_hours: list[str] = []
        self.specification: list[Opening] = []

    def add_row(self, days: str, times: str) -> None:
        """A row; the same days again in a row extend it (two shifts a day)."""
        last = self.rows[-1] if self.rows else None
        if days and last is not None and last.days == days:
            self.rows[-1] = HoursRow(days, f"{last.times}, {times}")
        else:
            self.rows.append(HoursRow(days, times))

    def build(self) -> Hours:
        return Hours(
            tuple(self.rows), tuple(self.opening_hours), tuple(self.specification)
        )


def read_hours(value: object, problems: list[InvalidField]) -> Hours:
    """
    Check C{business.json}'s C{hours} (not null), adding each problem to
    C{problems} with its field (C{hours[2].opens}), and read what is sound.
    """
    built = _Builder()
    if isinstance(value, str):
        _text_form(attempt(problems, string, value, "hours") or "", built)
    elif isinstance(value, Mapping):
        if any(key in value for key in ("dayOfWeek", "days", "opens", "closes")):
            attempt(problems, _specification, value, "hours", built)
        else:
            for key, text in value.items():
                attempt(problems, _day_entry, str(key), text, built)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            attempt(problems, _item, item, f"hours[{i}]", built)
    else:
        problems.append(
            InvalidField(
                "hours",
                "must be an object (day to hours), a string, or an array of "
                "openingHours strings or opening-hours specifications, got "
                + describe(value),
            )
        )
    return built.build()


def hours_from_json(value: object) -> Hours:
    """L{read_hours}, raising the first problem."""
    problems: list[InvalidField] = []
    hours = read_hours(value, problems)
    if problems:
        raise problems[0]
    return hours


def _text_form(text: str, built: _Builder) -> None:
    """A string: entries parted by C{;} or lines, or a sentence shown whole."""
    entries = [e.strip() for e in re.split(r"[;\n]", text) if e.strip()]
    if entries and all(_entry(e) is not None for e in entries):
        for entry in entries:
            _string_entry(entry, built)
    elif text.strip():
        built.add_row("", text.strip())


def _item(item: object, field: str, built: _Builder) -> None:
    if isinstance(item, str):
        _string_entry(string(item, field, empty_ok=False).strip(), built)
    elif isinstance(item, Mapping):
        _specification(item, field, built)
    else:
        raise InvalidField(
            field,
            "must be an openingHours string (like 'Mo-Fr 07:00-18:00') or an "
            "opening-hours specification object, got " + describe(item),
        )


def _string_entry(entry: str, built: _Builder) -> None:
    """One line: schema.org syntax, days and times in other words, or text."""
    parsed = _entry(entry)
    if parsed is None:
        built.add_row("", entry)
        return
    days, spans, times = parsed
    built.add_row(day_words(days), times or _times_words(spans))
    if _OPENING_HOURS.fullmatch(entry):
        built.opening_hours.append(entry)
    else:
        built.specification += (Opening(days, *span) for span in spans)


def _day_entry(key: str, value: object, built: _Builder) -> None:
    """One key of the object form: a day (or days) and its hours as text."""
    field = f"hours.{key}"
    if value is None:
        text = "Closed"
    elif isinstance(value, list):
        text = ", ".join(
            string(v, f"{field}[{i}]").strip() for i, v in enumerate(value)
        )
    elif isinstance(value, str):
        text = string(value, field)
    else:
        raise InvalidField(
            field,
            "must be the hours as a string (or an array of strings, or null), "
            "got " + describe(value),
        )
    days = _days(key)
    spans = _times(text) if days else None
    built.add_row(day_words(days) if days else key.capitalize(), text)
    if days and spans:
        built.specification += (Opening(days, *span) for span in spans)


def _specification(item: Mapping[str, Any], field: str, built: _Builder) -> None:
    key = "dayOfWeek" if "dayOfWeek" in item else "days"
    if key not in item:
        raise InvalidField(f"{field}.dayOfWeek", "is required (or days)")
    days = _spec_days(item[key], f"{field}.{key}")
    opens = _spec_time(item.get("opens"), f"{field}.opens")
    closes = _spec_time(item.get("closes"), f"{field}.closes")
    valid = [
        _spec_date(item.get(name), f"{field}.{name}")
        for name in ("validFrom", "validThrough")
    ]
    opening = Opening(days, opens, closes, *valid)
    label = day_words(days)
    dates = sorted({d for d in valid if d})
    if dates:
        label += " (" + " to ".join(dates) + ")"
    built.add_row(label, _times_words([(opens, closes)]))
    built.specification.append(opening)


def _spec_days(value: object, field: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    days: list[str] = []
    for i, item in enumerate(items):
        where = f"{field}[{i}]" if isinstance(value, list) else field
        url = _SCHEMA_URL.match(item) if isinstance(item, str) else None
        found = _days(url.group(1) if url else item) if isinstance(item, str) else None
        if not found:
            raise InvalidField(
                where,
                "must be a day of the week (Monday, Mo or "
                f"https://schema.org/Monday) or an array of them, got {describe(item)}",
            )
        days += (day for day in found if day not in days)
    if not days:
        raise InvalidField(field, "must name at least one day")
    return tuple(days)


def _spec_time(value: object, field: str) -> str:
    if value is None:
        raise InvalidField(field, "is required")
    match = _SPEC_TIME.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) > 24:
        raise InvalidField(
            field, f"must be a time written HH:MM (or HH:MM:SS), got {describe(value)}"
        )
    hour, minute, second = match.groups()
    return f"{int(hour):02d}:{minute}" + ("" if second is None else f":{second}")


def _spec_date(value: object, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _DATE.match(value):
        raise InvalidField(
            field, f"must be a date written YYYY-MM-DD, got {describe(value)}"
        )
    return value


# --- days and times in words --------------------------------------------------


def _entry(
    text: str,
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], str] | None:
    """
    Days and times from one line (C{Mo-Fr 07:00-18:00}, C{Monday: Closed},
    C{Mo-Su} for every day around the clock): the days, the spans and the
    times as written; C{None} when it is not that.
    """
    match = _DAYS_AND_TIMES.fullmatch(text)
    if match is None:
        return None
    days = _days(match["days"])
    written = (match["times"] or "").strip()
    spans = _times(written) if written else (ALL_DAY,)
    if not days or spans is None:
        return None
    return days, spans, written


def _days(text: str) -> tuple[str, ...] | None:
    """The days a phrase names, in its order: C{Mo-Fr}, C{Mon, Wed}, C{Sunday}."""
    days: list[str] = []
    for part in re.split(r"\s*(?:,|&|\band\b)\s*", text.strip(), flags=re.I):
        named = _NAMES.get(part.lower().rstrip("."))
        if named is not None:
            found = [named]
        else:
            match = _RANGE.fullmatch(part)
            first = _NAMES.get(match.group(1).lower()) if match else None
            last = _NAMES.get(match.group(2).lower()) if match else None
            if first not in DAYS or last not in DAYS:
                return None
            start, end = DAYS.index(first), DAYS.index(last)
            found = [DAYS[(start + n) % 7] for n in range((end - start) % 7 + 1)]
        days += (day for day in found if day not in days)
    return tuple(days) or None


def _times(text: str) -> tuple[tuple[str, str], ...] | None:
    """
    The spans a phrase gives (C{08:00-12:00, 13:00-17:00}, C{9 AM - 5 PM}),
    none for C{closed}; C{None} when it gives no clear times.
    """
    words = " ".join(text.lower().split())
    if words in _CLOSED:
        return ()
    if words in _AROUND_THE_CLOCK:
        return (ALL_DAY,)
    spans = []
    for part in re.split(r"\s*(?:,|;|\band\b)\s*", words):
        match = _SPAN.fullmatch(part)
        span = None if match is None else _span(*match.groups())
        if span is None:
            return None
        spans.append(span)
    return tuple(spans)


def _span(
    h1: str,
    m1: str | None,
    half1: str | None,
    h2: str,
    m2: str | None,
    half2: str | None,
) -> tuple[str, str] | None:
    """
    Opening and closing as C{HH:MM}; a first time without AM or PM takes
    the second's (C{1:00 - 5:00 PM}), or the other half where that would
    open after closing (C{11:00 - 2:00 PM}).
    """
    if half1 is None and half2 is not None and m1 is not None:
        opens = _clock(h1, m1, half2)
        if opens is not None and opens > (_clock(h2, m2, half2) or opens):
            opens = _clock(h1, m1, "a" if half2 == "p" else "p")
    else:
        opens = _clock(h1, m1, half1)
    closes = _clock(h2, m2, half2)
    return None if opens is None or closes is None else (opens, closes)


def _clock(hours: str, minutes: str | None, half: str | None) -> str | None:
    """C{HH:MM} from a time as written; C{None} when it is not a time of day."""
    if minutes is None and half is None:
        return None  # "8-5" could mean anything
    hour, minute = int(hours), int(minutes or 0)
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.lower() == "p" else 0)
    if hour > 24 or minute > 59 or (hour == 24 and minute):
        return None
    return f"{hour:02d}:{minute:02d}"


def day_words(days: Iterable[str]) -> str:
    """
    Days in words, in the order given, runs of three or more days that
    follow each other as a range: C{Monday to Friday}, C{Friday to Monday}.
    """
    days = list(days)
    week = [day for day in days if day in DAYS]
    if len(week) == 7:
        words = ["Every day"]
    else:
        words = []
        run: list[str] = []
        for day in [*week, None]:
            if (
                run
                and day is not None
                and DAYS.index(day) == (DAYS.index(run[-1]) + 1) % 7
            ):
                run.append(day)
                continue
            words += [f"{run[0]} to {run[-1]}"] if len(run) >= 3 else run
            run = [] if day is None else [day]
    if PUBLIC_HOLIDAYS in days:
        words.append("Public holidays")
    return ", ".join(words)


def _times_words(spans: Iterable[tuple[str, str]]) -> str:
    spans = list(spans)
    if not spans or all(opens == closes for opens, closes in spans):
        return "Closed"
    if spans == [ALL_DAY]:
        return "Open 24 hours"
    return ", ".join(
        f"{_short(opens)}\u2013{_short(closes)}" for opens, closes in spans
    )


def _short(time: str) -> str:
    return time[:5] if len(time) == 8 and time.endswith(":00") else time
