"""
Inline SVG charts: the rating distribution, aspect sentiment, the monthly
trend and star rows.

Each chart is an image to assistive technology (C{role="img"}, a label, a
C{<title>} and a C{<desc>} with every figure), sized by its C{viewBox} so it
scales to the column it sits in, and coloured by classes the stylesheet
defines, with presentation attributes as the fallback (no inline style, so
the Content-Security-Policy needs no C{'unsafe-inline'}).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen
from twisted.web.template import Tag

from reviewsd.web.pages.markup import h, number

POSITIVE = "#1a7f37"
NEUTRAL = "#6e7781"
NEGATIVE = "#cf222e"
STAR = "#9a6700"
TRACK = "#e4e7eb"
INK = "#1f2328"
GRID = "#d0d7de"

_STAR_POINTS = "10,1 12.9,7 19.5,7.6 14.5,12 16,18.5 10,15 4,18.5 5.5,12 0.5,7.6 7.1,7"
_LABEL_MAX = 22


def _svg(ident: str, view: tuple[int, int], label: str, details: str, css: str) -> Tag:
    width, height = view
    return h(
        "svg",
        class_=f"chart {css}",
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label=label,
        aria_describedby=f"{ident}-desc" if details else None,
    )(
        h("title", id=f"{ident}-title")(label),
        h("desc", id=f"{ident}-desc")(details) if details else "",
    )


def _text(x: float, y: float, content: str, **attributes: object) -> Tag:
    return h("text", x=_n(x), y=_n(y), **attributes)(content)


def _n(value: float) -> str:
    """Coordinates with at most two decimals, so the bytes are stable."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _short(label: str) -> str:
    return label if len(label) <= _LABEL_MAX else label[: _LABEL_MAX - 1] + "\u2026"


def _star_path(first: int, last: int) -> str:
    """One path holding stars C{first} to C{last - 1}: a row costs two paths."""
    points = [tuple(map(float, p.split(","))) for p in _STAR_POINTS.split()]
    return "".join(
        "M" + " ".join(f"{_n(x + 20 * i)},{_n(y)}" for x, y in points) + "Z"
        for i in range(first, last)
    )


_STAR_PATHS = {(a, b): _star_path(a, b) for a in range(6) for b in range(a, 6)}


def stars(value: float, ident: str, label: str | None = None) -> Tag:
    """
    Five stars filled to C{value}: whole stars for a review's rating, a clip
    path for the fraction of an average.
    """
    label = label or f"{number(value, 1)} out of 5 stars"
    svg = _svg(ident, (100, 20), label, "", "stars")
    value = max(0.0, min(5.0, value))
    whole = int(value)
    if value == whole:
        if whole < 5:
            svg(h("path", class_="star-off", fill=TRACK, d=_STAR_PATHS[whole, 5]))
        if whole:
            svg(h("path", class_="star-on", fill=STAR, d=_STAR_PATHS[0, whole]))
        return svg
    return svg(
        h("clipPath", id=f"{ident}-clip")(
            h("rect", x="0", y="0", width=_n(value * 20), height="20")
        ),
        h("path", class_="star-off", fill=TRACK, d=_STAR_PATHS[0, 5]),
        h(
            "path",
            class_="star-on",
            fill=STAR,
            d=_STAR_PATHS[0, 5],
            clip_path=f"url(#{ident}-clip)",
        ),
    )


def distribution(counts: Mapping[str, int], ident: str = "distribution") -> Tag:
    """Horizontal bars, 5 stars to 1, each labelled with its count and share."""
    total = sum(counts.values())
    widest = max(counts.values(), default=0) or 1
    rows = [(stars_, counts.get(str(stars_), 0)) for stars_ in range(5, 0, -1)]
    words = "; ".join(
        f"{s} star{'s' if s > 1 else ''}: {c}"
        + (f" ({_pct(c, total)})" if total else "")
        for s, c in rows
    )
    row_height, top, bar_x, bar_w = 24, 4, 54, 170
    svg = _svg(
        ident,
        (320, top + row_height * 5),
        f"How {total:,} reviews rate: {words}",
        "",
        "distribution",
    )
    for i, (stars_, count) in enumerate(rows):
        y = top + i * row_height
        svg(
            _text(
                0, y + 14, f"{stars_} star{'s' if stars_ > 1 else ' '}", class_="ink"
            ),
            h(
                "rect",
                class_="track",
                x=_n(bar_x),
                y=_n(y + 3),
                width=_n(bar_w),
                height="14",
                rx="3",
                fill=TRACK,
            ),
        )
        if count:
            svg(
                h(
                    "rect",
                    class_="bar-star",
                    x=_n(bar_x),
                    y=_n(y + 3),
                    width=_n(max(2.0, bar_w * count / widest)),
                    height="14",
                    rx="3",
                    fill=STAR,
                )
            )
        svg(
            _text(
                bar_x + bar_w + 8,
                y + 14,
                f"{count:,}" + (f" \u00b7 {_pct(count, total)}" if total else ""),
                class_="ink",
            )
        )
    return svg


def _pct(part: int, total: int) -> str:
    return f"{round(100 * part / total)}%"


def aspects(entries: Sequence[Mapping[str, Any]], ident: str = "aspects") -> Tag:
    """
    One stacked bar per aspect: its length is how many reviews mention the
    aspect, its parts how many of those read positive, neutral, negative.
    """
    rows = [
        (
            str(a["label"]),
            int(a.get("positive_count", 0)),
            int(a.get("neutral_count", 0)),
            int(a.get("negative_count", 0)),
            int(a.get("mention_count", 0)),
        )
        for a in entries
    ]
    widest = max((p + u + n for _, p, u, n, _ in rows), default=0) or 1
    row_height, top, label_w, bar_w = 26, 26, 146, 190
    details = "; ".join(
        f"{label}: {m} {'review' if m == 1 else 'reviews'}, {p} positive, "
        f"{u} neutral, {n} negative"
        for label, p, u, n, m in rows
    )
    svg = _svg(
        ident,
        (372, top + row_height * len(rows)),
        "How often customers mention each aspect, and in what tone",
        details,
        "aspects",
    )
    legend_x = 0.0
    for css, colour, word in (
        ("pos", POSITIVE, "positive"),
        ("neu", NEUTRAL, "neutral"),
        ("neg", NEGATIVE, "negative"),
    ):
        svg(
            h(
                "rect",
                class_=f"bar-{css}",
                x=_n(legend_x),
                y="4",
                width="10",
                height="10",
                rx="2",
                fill=colour,
            ),
            _text(legend_x + 14, 13, word, class_="ink small"),
        )
        legend_x += 14 + 8 * len(word) + 14
    for i, (label, positive, neutral, negative, mentions) in enumerate(rows):
        y = top + i * row_height
        svg(_text(0, y + 14, _short(label), class_="ink"))
        x = float(label_w)
        for css, colour, count in (
            ("pos", POSITIVE, positive),
            ("neu", NEUTRAL, neutral),
            ("neg", NEGATIVE, negative),
        ):
            if not count:
                continue
            width = bar_w * count / widest
            svg(
                h(
                    "rect",
                    class_=f"bar-{css}",
                    x=_n(x),
                    y=_n(y + 3),
                    width=_n(width),
                    height="14",
                    fill=colour,
                )(h("title")(f"{label}: {count} {css_word(css)}"))
            )
            x += width
        svg(_text(x + 6, y + 14, f"{mentions:,}", class_="ink small"))
    return svg


def css_word(css: str) -> str:
    return {"pos": "positive", "neu": "neutral", "neg": "negative"}[css]


def _month_words(month: str) -> str:
    year, number_ = month.split("-")
    names = (
        "January February March April May June July August September October "
        "November December"
    ).split()
    return f"{names[int(number_) - 1]} {year}"


@frozen
class _TrendFrame:
    """Where the trend chart puts a month and a rating, for C{count} months."""

    count: int
    left = 34
    right = 8
    top = 8
    bottom = 24
    width = 360
    height = 150

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height - self.top - self.bottom

    def x_of(self, i: int) -> float:
        return self.left + (self.plot_w * (i + 0.5) / self.count if self.count else 0)

    def y_of(self, rating: float) -> float:
        return self.top + self.plot_h * (5 - rating) / 4


def _trend_grid(frame: _TrendFrame) -> list[Tag]:
    """A line and a label for each grade, 1 to 5 stars."""
    tags = []
    for grade in range(1, 6):
        y = frame.y_of(grade)
        tags += [
            h(
                "line",
                class_="grid",
                x1=_n(frame.left),
                x2=_n(frame.width - frame.right),
                y1=_n(y),
                y2=_n(y),
                stroke=GRID,
            ),
            _text(
                frame.left - 6, y + 4, str(grade), class_="ink small", text_anchor="end"
            ),
        ]
    return tags


def _trend_years(frame: _TrendFrame, months: Sequence[Mapping[str, Any]]) -> list[Tag]:
    """
    Every year is marked while labels fit (about 36 units each), else every
    second or third; the first month is marked when no January crowds it.
    """
    count, plot_w = frame.count, frame.plot_w
    januaries = [i for i, m in enumerate(months) if str(m["month"]).endswith("-01")]
    step = 1 + int(36 * count / (12 * plot_w)) if count else 1
    marked = set(januaries[::step])
    if count and not (januaries and januaries[0] * plot_w / count < 36):
        marked.add(0)
    tags = []
    for i, month in enumerate(months):
        if i not in marked:
            continue
        x = frame.x_of(i)
        tags += [
            h(
                "line",
                class_="tick",
                x1=_n(x),
                x2=_n(x),
                y1=_n(frame.top + frame.plot_h),
                y2=_n(frame.top + frame.plot_h + 4),
                stroke=INK,
            ),
            _text(
                x,
                frame.height - 6,
                str(month["month"])[:4],
                class_="ink small",
                text_anchor=(
                    "start" if i == 0 else "end" if x + 16 > frame.width else "middle"
                ),
            ),
        ]
    return tags


def _trend_line(frame: _TrendFrame, months: Sequence[Mapping[str, Any]]) -> list[Tag]:
    """The ratings joined month to month, broken where a month has none."""
    runs: list[list[str]] = [[]]
    for i, month in enumerate(months):
        rating = month.get("average_rating")
        if rating is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{_n(frame.x_of(i))},{_n(frame.y_of(float(rating)))}")
    return [
        h("polyline", class_="line", points=" ".join(run), fill="none", stroke=STAR)
        for run in runs
        if len(run) > 1
    ]


def _trend_dots(frame: _TrendFrame, months: Sequence[Mapping[str, Any]]) -> list[Tag]:
    """A dot for each rated month, titled with its figures."""
    return [
        h(
            "circle",
            class_="dot",
            cx=_n(frame.x_of(i)),
            cy=_n(frame.y_of(float(month["average_rating"]))),
            r="2.5",
            fill=STAR,
        )(
            h("title")(
                f"{_month_words(str(month['month']))}: {month['average_rating']} "
                f"stars from {month['review_count']} "
                f"{'review' if month['review_count'] == 1 else 'reviews'}"
            )
        )
        for i, month in enumerate(months)
        if month.get("average_rating") is not None
    ]


def trend(
    months: Sequence[Mapping[str, Any]], verdict: str, ident: str = "trend"
) -> Tag:
    """
    The average star rating month by month, as a line broken where a month
    has no review, on a 1 to 5 scale with the years marked.
    """
    frame = _TrendFrame(len(months))
    first = _month_words(str(months[0]["month"])) if months else ""
    last = _month_words(str(months[-1]["month"])) if months else ""
    label = f"Average star rating by month, {first} to {last}: {verdict}"
    rated = [m for m in months if m.get("average_rating") is not None]
    details = "; ".join(
        f"{m['month']}: {m['average_rating']} stars from {m['review_count']}"
        for m in rated
    )
    return _svg(ident, (frame.width, frame.height), label, details, "trend")(
        *_trend_grid(frame),
        *_trend_years(frame, months),
        *_trend_line(frame, months),
        *_trend_dots(frame, months),
    )
