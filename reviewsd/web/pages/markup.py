"""
The building blocks of the HTML pages: element construction, flattening to
bytes, JSON-LD, the shared page frame.

Pages are trees of L{twisted.web.template.Tag}, so every string the data
supplies is escaped by the flattener, never by hand; the one exception is
JSON-LD, which L{json_ld} makes free of C{<}, C{>} and C{&} so that the
flattener's escaping leaves it as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from attrs import frozen
from twisted.web.template import Flattenable, Tag, flatten

from reviewsd import __version__
from reviewsd.data.links import (
    ATOM_FEED_PATH,
    DEVELOPERS_PATH,
    HOME_PATH,
    HUB_PATH,
    INSIGHTS_PATH,
    JSON_FEED_PATH,
    LLMS_PATH,
    MCP_PATH,
    OPENAPI_PATH,
    REVIEWS_PATH,
    SEARCH_PATH,
    SINCE_PATH,
    STYLESHEET_PATH,
    Links,
)

OPENAPI_TYPE = "application/vnd.oai.openapi+json"
"""The OpenAPI media type registered at IANA, for the discovery link."""

# Characters HTML calls parse errors in the input stream (controls other than
# white space, and noncharacters): data may hold them, a page may not.
_NONCHARACTERS = "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}-{chr(plane * 0x10000 + 0xFFFF)}"
    for plane in range(1, 17)
)
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff" + _NONCHARACTERS + "]"
)

_FAVICON = (
    "data:image/svg+xml,"
    "%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 20 20'%3E"
    "%3Cpolygon fill='%239a6700' points='10,1 12.9,7 19.5,7.6 14.5,12 16,18.5 "
    "10,15 4,18.5 5.5,12 0.5,7.6 7.1,7'/%3E%3C/svg%3E"
)


_BIDI_CONTROLS = dict.fromkeys(
    map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)
"""
The bidirectional formatting characters: marks, embeddings, overrides and
isolates (Unicode's UAX 9, table 4).
"""


def without_bidi_controls(text: str) -> str:
    """
    C{text} without bidirectional formatting characters, for the places
    where data cannot be isolated by markup (a title, an attribute): there a
    right-to-left override in a review would reverse the rest of the line.
    """
    return text.translate(_BIDI_CONTROLS)


def _plain_text(child: Flattenable) -> Flattenable:
    if isinstance(child, str):
        return without_bidi_controls(child)
    if isinstance(child, (list, tuple)):
        return [_plain_text(c) for c in child]
    return child


class _TextOnly(Tag):
    """
    An element whose content is text for the browser's own display (a
    C{<title>}, as a tab or tooltip shows it), without bidirectional
    formatting characters.
    """

    def __call__(self, *children: Flattenable, **kw: Flattenable) -> Tag:
        return super().__call__(*(_plain_text(c) for c in children), **kw)


def h(tag: str, /, **attributes: object) -> Tag:
    """
    An element: C{class_} is C{class}, other underscores are hyphens
    (C{aria_label}, C{text_anchor}; no HTML or SVG attribute has an
    underscore), and C{None} or C{False} leave the attribute out, so that
    optional data never renders as the string C{"None"}. Attribute values,
    and the text of a C{title}, lose bidirectional formatting characters
    (L{without_bidi_controls}).
    """
    attrs: dict[bytes | str, Flattenable] = {}
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        attrs[key.rstrip("_").replace("_", "-")] = (
            "" if value is True else without_bidi_controls(str(value))
        )
    if tag == "title":
        return _TextOnly(tag, attributes=attrs)
    return Tag(tag, attributes=attrs)


def render(root: Flattenable) -> bytes:
    """
    Flatten a tree at once: pages hold no L{Deferred}, so the flattener
    finishes synchronously, and the output is cleaned of characters HTML
    forbids in its input stream.
    """
    chunks: list[bytes] = []
    failures: list[Any] = []
    done = flatten(None, root, chunks.append)
    done.addErrback(failures.append)
    if failures:
        failures[0].raiseException()
    if not done.called:  # pragma: no cover - would mean a Deferred in the tree
        raise RuntimeError("a page tree must render synchronously")
    text = b"".join(chunks).decode("utf-8")
    return ("<!DOCTYPE html>\n" + _FORBIDDEN.sub("", text) + "\n").encode("utf-8")


def json_ld(value: Any) -> str:
    """
    JSON for a C{<script type="application/ld+json">} block: ASCII, with
    C{<}, C{>} and C{&} as C{\\u} escapes, so that neither C{</script>} nor
    C{<!--} in a review can end or change the block, and the flattener's
    entity escaping has nothing to change.
    """
    text = json.dumps(value, ensure_ascii=True, sort_keys=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def prefix(links: Links) -> str:
    """
    The base URL's path, for links between the pages and to the stylesheet:
    same-origin whatever host name the browser used, and right behind a
    proxy that mounts the service under a path.
    """
    return urlsplit(links.base).path.rstrip("/")


def plain(value: object) -> str:
    """Free-form metadata (hours, address parts) as one line of text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(p for p in map(plain, value) if p)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain(v)}" for k, v in value.items())
    return str(value)


def number(value: float, places: int = 1) -> str:
    """A figure with a fixed number of decimals, as the page shows it."""
    return f"{value:.{places}f}"


def plural(count: int, singular: str, many: str | None = None) -> str:
    word = singular if count == 1 else (many or singular + "s")
    return f"{count:,} {word}"


def possessive(name: str) -> str:
    """C{name}'s, or C{name}' for a name ending in s (Services', not Services's)."""
    return name + ("'" if name.endswith(("s", "S")) else "'s")


@frozen
class DataLink:
    """
    A machine-readable document or endpoint that every page links.

    @ivar target: where the link goes, when that is not the endpoint itself
        (the POST-only endpoints link to their documentation).
    """

    path: str
    label: str
    kind: str
    target: str | None = None


def data_links(links: Links, since_day: str) -> tuple[DataLink, ...]:
    """Every JSON document and endpoint, in the order the README gives them."""
    docs = prefix(links) + DEVELOPERS_PATH
    return (
        DataLink(REVIEWS_PATH, "all reviews and the aggregate rating", "JSON"),
        DataLink(INSIGHTS_PATH, "sentiment, aspects, entities, trend, FAQ", "JSON"),
        DataLink(JSON_FEED_PATH, "the newest reviews", "JSON Feed"),
        DataLink(ATOM_FEED_PATH, "the newest reviews", "Atom"),
        DataLink(SEARCH_PATH, "search by rating, date, text, name", "JSON"),
        DataLink(f"{SINCE_PATH}/{since_day}", "reviews since a date", "JSON"),
        DataLink(OPENAPI_PATH, "the OpenAPI 3.1 description", "JSON"),
        DataLink(LLMS_PATH, "an overview for AI agents", "text"),
        DataLink(MCP_PATH, "the MCP server (POST)", "MCP", docs + "#mcp"),
        DataLink(HUB_PATH, "change notifications (POST)", "WebSub", docs + "#websub"),
    )


def _head(links: Links, title: str, description: str, extra: Sequence[Tag]) -> Tag:
    return h("head")(
        h("meta", charset="utf-8"),
        h("meta", name="viewport", content="width=device-width, initial-scale=1"),
        h("title")(title),
        h("meta", name="description", content=description),
        h("meta", name="generator", content=f"reviewsd {__version__.public()}"),
        h("link", rel="stylesheet", href=prefix(links) + STYLESHEET_PATH),
        h("link", rel="icon", href=_FAVICON),
        h(
            "link",
            rel="alternate",
            type="application/json",
            title="All reviews (JSON)",
            href=links.reviews,
        ),
        h(
            "link",
            rel="alternate",
            type="application/atom+xml",
            title="Newest reviews (Atom)",
            href=links.atom_feed,
        ),
        h(
            "link",
            rel="alternate",
            type="application/feed+json",
            title="Newest reviews (JSON Feed)",
            href=links.json_feed,
        ),
        h("link", rel="hub", href=links.hub),
        h(
            "link",
            rel="service-desc",
            type=OPENAPI_TYPE,
            href=links.url(OPENAPI_PATH),
        ),
        h("link", rel="service-doc", type="text/html", href=links.url(DEVELOPERS_PATH)),
        *extra,
    )


def _site_header(links: Links, name: str, current: str) -> Tag:
    base = prefix(links)
    entries = (
        (HOME_PATH, "Reviews"),
        (DEVELOPERS_PATH, "Developers"),
    )
    items = [
        h("li")(
            h(
                "a",
                href=base + path,
                aria_current="page" if path == current else None,
            )(label)
        )
        for path, label in entries
    ]
    items.append(h("li")(h("a", href=links.reviews, type="application/json")("JSON")))
    return h("header", class_="site")(
        h("div", class_="wrap bar")(
            h("a", class_="brand", href=base + HOME_PATH)(name),
            h("nav", aria_label="Site")(h("ul")(items)),
        )
    )


def http_instant(seconds: int) -> tuple[str, str]:
    """An instant as a C{datetime} attribute and as words, both in UTC."""
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    return (
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        f"{moment.day} {moment:%B %Y, %H:%M} UTC",
    )


def _site_footer(
    links: Links, last_modified: int, since_day: str, note: Iterable[Flattenable]
) -> Tag:
    stamp, words = http_instant(last_modified)
    return h("footer", class_="site")(
        h("div", class_="wrap")(
            h("nav", aria_label="Data")(
                h("p", class_="label")("The data behind this page"),
                h("ul", class_="data-links")(
                    [
                        h("li")(
                            h("a", href=d.target or links.url(d.path))(d.path),
                            " ",
                            h("span", class_="muted")(f"{d.kind}: {d.label}"),
                        )
                        for d in data_links(links, since_day)
                    ]
                ),
            ),
            h("p", class_="muted")(
                "Data last changed ",
                h("time", datetime=stamp)(words),
                ". Served by reviewsd ",
                __version__.public(),
                ". ",
                *note,
            ),
        )
    )


def page(
    *,
    links: Links,
    business_name: str,
    title: str,
    description: str,
    current: str,
    last_modified: int,
    since_day: str,
    body: Sequence[Flattenable],
    head_extra: Sequence[Tag] = (),
    footer_note: Sequence[Flattenable] = (),
) -> bytes:
    """The frame both pages share: head, discovery links, header, footer."""
    return render(
        h("html", lang="en")(
            _head(links, title, description, head_extra),
            h("body")(
                h("a", class_="skip", href="#main")("Skip to the content"),
                _site_header(links, business_name, current),
                h("main", id="main", class_="wrap")(*body),
                _site_footer(links, last_modified, since_day, footer_note),
            ),
        )
    )
