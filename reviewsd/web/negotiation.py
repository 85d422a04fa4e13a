"""
Reading C{Accept} (RFC 9110 12.5.1): how much a client wants a media type.

For C{/}, only a client that ranks C{application/json} above C{text/html}
gets the JSON: a browser (C{text/html,...,*/*;q=0.8}) and curl (C{*/*}) get
the page, and ties go to the page, which links every JSON document. For
C{/mcp}, a client must accept both JSON and an event stream.
"""

from __future__ import annotations

_HTML = ("text", "html")
_JSON = ("application", "json")


def _ranges(accept: str) -> list[tuple[str, str, float]]:
    ranges = []
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        kind, _, sub = parts[0].lower().partition("/")
        if not kind or not sub:
            continue
        quality = 1.0
        for parameter in parts[1:]:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = min(1.0, max(0.0, float(value)))
                except ValueError:
                    quality = 0.0
        ranges.append((kind, sub, quality))
    return ranges


def _quality(ranges: list[tuple[str, str, float]], wanted: tuple[str, str]) -> float:
    """RFC 9110 12.5.1: the most specific range that matches decides."""
    best, specificity = 0.0, -1
    for kind, sub, quality in ranges:
        if (kind, sub) == wanted:
            rank = 2
        elif kind == wanted[0] and sub == "*":
            rank = 1
        elif (kind, sub) == ("*", "*"):
            rank = 0
        else:
            continue
        if rank > specificity:
            best, specificity = quality, rank
    return best


def prefers_json(accept: bytes | None) -> bool:
    """True when C{Accept} ranks C{application/json} strictly above HTML."""
    if not accept:
        return False
    ranges = _ranges(accept.decode("latin-1"))
    return _quality(ranges, _JSON) > _quality(ranges, _HTML)


def accepts_all(accept: bytes | None, *media_types: str) -> bool:
    """True when C{Accept} gives every one of C{media_types} a quality above 0."""
    if not accept:
        return False
    ranges = _ranges(accept.decode("latin-1"))
    return all(
        _quality(ranges, (kind, sub)) > 0
        for kind, _, sub in (media.partition("/") for media in media_types)
    )
