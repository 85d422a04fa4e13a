"""
Validators for the feeds that reviewsd serves, for use by the test suite.

Both functions return a list of human-readable problems (empty when the
document is valid) rather than raising, so that a failing test shows every
violation at once.  Neither imports anything from reviewsd: they judge the
output against the published specifications, not against the daemon's own
idea of them.

- JSON Feed 1.1 (https://jsonfeed.org/version/1.1): the vendored
  jsonfeed-schema draft-07 schema plus explicit checks for rules that the
  schema is too lax about.
- Atom, RFC 4287: the RELAX NG grammar of RFC 4287 Appendix B plus XPath
  checks for the rules that RELAX NG cannot express (the grammar's
  Schematron annotations and other "MUST"s of the RFC's prose).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import rnc2rng
from jsonschema import Draft7Validator, FormatChecker
from lxml import etree

__all__ = ["atom_problems", "json_feed_problems", "rfc3339_problem"]

SCHEMAS = Path(__file__).parent / "schemas"
JSON_FEED_SCHEMA_PATH = SCHEMAS / "jsonfeed-schema-v1.1.json"
ATOM_RNC_PATH = SCHEMAS / "atom.rnc"

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
ATOM_NS = "http://www.w3.org/2005/Atom"
NS = {"atom": ATOM_NS}

# RFC 3339 section 5.6 "date-time".  Spelled with [0-9] because \d would
# also accept non-ASCII digits.
_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"(?P<t>[Tt])"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.[0-9]+)?"
    r"(?P<offset>[Zz]|(?P<sign>[+-])(?P<oh>[0-9]{2}):(?P<om>[0-9]{2}))"
)

# RFC 3986 section 3.1: an absolute URI/IRI starts with a scheme and a colon.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

_ALTERNATE_RELS = frozenset(
    {"alternate", "http://www.iana.org/assignments/relation/alternate"}
)


def _is_absolute_iri(value: str) -> bool:
    """An absolute IRI has a scheme, something after it and no whitespace."""
    match = _SCHEME.match(value)
    return (
        match is not None
        and len(value) > match.end()
        and not any(c.isspace() for c in value)
    )


def rfc3339_problem(value: object, *, atom: bool = False) -> str | None:
    """
    Say why C{value} is not an RFC 3339 date-time, or return None.

    A strict parse rather than jsonschema's "date-time" format, which only
    checks anything when an optional package happens to be installed.
    RFC 4287 section 3.3 additionally demands an uppercase "T" and "Z";
    pass C{atom=True} for that.
    """
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    match = _RFC3339.fullmatch(value)
    if match is None:
        return f"{value!r} is not an RFC 3339 date-time"
    if atom and (match["t"] != "T" or match["offset"] == "z"):
        return f"{value!r} must use an uppercase 'T' and 'Z' (RFC 4287 section 3.3)"
    second = int(match["second"])
    if second > 60:
        return f"{value!r} has a second out of range"
    try:
        local = datetime.datetime(
            int(match["year"]),
            int(match["month"]),
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            min(second, 59),
        )
    except ValueError as e:
        return f"{value!r} is not a real date and time ({e})"
    offset = datetime.timedelta()
    if match["sign"] is not None:
        hours, minutes = int(match["oh"]), int(match["om"])
        if hours > 23 or minutes > 59:
            return f"{value!r} has a time zone offset out of range"
        offset = datetime.timedelta(hours=hours, minutes=minutes)
        if match["sign"] == "-":
            offset = -offset
    if second == 60:
        # RFC 3339 section 5.7: a leap second can only be the last second
        # of a UTC day.
        utc = local - offset
        if (utc.hour, utc.minute) != (23, 59):
            return f"{value!r} has a leap second that is not at 23:59:60 UTC"
    return None


# JSON Feed


def _load_json_feed_validator() -> Draft7Validator:
    """Load the schema once; a broken vendored schema should fail loudly."""
    schema = json.loads(JSON_FEED_SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    checker = FormatChecker()

    # The schema marks every URL "format": "uri", which jsonschema only
    # checks when rfc3987 is installed; check the part that matters here
    # (absolute, no whitespace) without that optional dependency.
    @checker.checks("uri")
    def _uri(instance: object) -> bool:
        return not isinstance(instance, str) or _is_absolute_iri(instance)

    return Draft7Validator(schema, format_checker=checker)


_JSON_FEED_VALIDATOR = _load_json_feed_validator()


def _where(path: Iterable[str | int]) -> str:
    """Render a location in the document as a JSONPath-like string."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _shorten(message: str, limit: int = 240) -> str:
    """jsonschema messages embed the whole instance; keep them readable."""
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _authors_problems(value: object, where: str) -> list[str]:
    """JSON Feed 1.1: authors is an array of objects, each naming someone."""
    if not isinstance(value, list):
        return [f"{where}: authors must be an array"]
    problems = []
    for i, author in enumerate(value):
        here = f"{where}[{i}]"
        if not isinstance(author, Mapping):
            problems.append(f"{here}: an author must be an object")
        elif not any(key in author for key in ("name", "url", "avatar")):
            problems.append(
                f"{here}: an author must have at least one of name, url, avatar"
            )
    return problems


def _explicit_json_feed_problems(feed: Mapping[str, Any]) -> list[str]:
    """The JSON Feed rules that the jsonschema schema does not pin down."""
    problems: list[str] = []

    if "version" not in feed:
        problems.append(f"$: version is missing; it must be {JSON_FEED_VERSION!r}")
    elif feed["version"] != JSON_FEED_VERSION:
        problems.append(f"$.version: {feed['version']!r} is not {JSON_FEED_VERSION!r}")

    for key in ("home_page_url", "feed_url"):
        if key not in feed:
            problems.append(f"$: {key} is missing (required for a public feed)")

    if "author" in feed:
        problems.append(
            "$.author: 'author' is deprecated since JSON Feed 1.1; use 'authors'"
        )
    if "authors" in feed:
        problems.extend(_authors_problems(feed["authors"], "$.authors"))

    hubs = feed.get("hubs")
    if hubs is not None:
        if not isinstance(hubs, list):
            problems.append("$.hubs: hubs must be an array")
        else:
            for i, hub in enumerate(hubs):
                here = f"$.hubs[{i}]"
                if not isinstance(hub, Mapping):
                    problems.append(f"{here}: a hub must be an object")
                    continue
                for key in ("type", "url"):
                    if not isinstance(hub.get(key), str) or not hub[key]:
                        problems.append(f"{here}: a hub must have a {key} string")

    items = feed.get("items")
    if not isinstance(items, list):
        problems.append("$.items: items must be an array")
        return problems

    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        here = f"$.items[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{here}: an item must be an object")
            continue
        if "id" not in item:
            problems.append(f"{here}: id is missing")
        elif not isinstance(item["id"], str):
            problems.append(f"{here}.id: {item['id']!r} is not a string")
        elif not item["id"].strip():
            problems.append(f"{here}.id: id is empty")
        elif item["id"] in seen:
            problems.append(
                f"{here}.id: {item['id']!r} duplicates $.items[{seen[item['id']]}].id"
            )
        else:
            seen[item["id"]] = i
        if "content_html" not in item and "content_text" not in item:
            problems.append(f"{here}: has neither content_html nor content_text")
        for key in ("date_published", "date_modified"):
            if key in item:
                problem = rfc3339_problem(item[key])
                if problem is not None:
                    problems.append(f"{here}.{key}: {problem}")
        if "author" in item:
            problems.append(
                f"{here}.author: 'author' is deprecated since JSON Feed 1.1; "
                "use 'authors'"
            )
        if "authors" in item:
            problems.extend(_authors_problems(item["authors"], f"{here}.authors"))
    return problems


def json_feed_problems(document: object) -> list[str]:
    """
    Every JSON Feed 1.1 violation found in an already-parsed JSON document.

    Returns an empty list for a valid feed.
    """
    problems = [
        f"{_where(error.absolute_path)}: {_shorten(error.message)}"
        for error in sorted(
            _JSON_FEED_VALIDATOR.iter_errors(document),
            key=lambda error: (_where(error.absolute_path), error.message),
        )
    ]
    if isinstance(document, Mapping):
        problems.extend(_explicit_json_feed_problems(document))
    else:
        problems.append("$: a JSON Feed must be a JSON object")
    return list(dict.fromkeys(problems))


# Atom


def _load_atom_relaxng() -> etree.RelaxNG:
    """
    Compile RFC 4287's RNC once.

    rnc2rng keeps the RNC's C{namespace local = ""} as C{xmlns:local=""},
    which is not allowed in XML 1.0 and makes lxml refuse the grammar; the
    converted grammar never uses the prefix, so it is dropped.
    """
    rng = rnc2rng.dumps(rnc2rng.load(str(ATOM_RNC_PATH)))
    rng = re.sub(r'\s+xmlns:local=""', "", rng)
    return etree.RelaxNG(etree.fromstring(rng.encode("utf-8")))


_ATOM_RELAXNG = _load_atom_relaxng()


def _describe(element: etree._Element) -> str:
    """Name an element so that a problem can be found in the document."""
    if element.tag == f"{{{ATOM_NS}}}feed":
        return "atom:feed"
    label = f"atom:entry at line {element.sourceline}"
    ids = element.xpath("atom:id/text()", namespaces=NS)
    if ids:
        label += f" (id {ids[0].strip()!r})"
    return label


def _count_problems(element: etree._Element, names: Iterable[str]) -> list[str]:
    """RFC 4287 4.1.1/4.1.2: a feed or entry has exactly one of each."""
    problems = []
    for name in names:
        count = int(element.xpath(f"count(atom:{name})", namespaces=NS))
        if count != 1:
            problems.append(
                f"{_describe(element)}: must contain exactly one atom:{name}, "
                f"found {count}"
            )
    return problems


def _alternate_link_problems(element: etree._Element) -> list[str]:
    """RFC 4287 4.1.1/4.1.2: one alternate link per type and hreflang."""
    problems = []
    seen: set[tuple[str | None, str | None]] = set()
    for link in element.xpath("atom:link", namespaces=NS):
        # RFC 4287 4.2.7.2: a link without rel is an alternate link.
        if link.get("rel", "alternate").strip() not in _ALTERNATE_RELS:
            continue
        type_ = link.get("type")
        hreflang = link.get("hreflang")
        key = (
            type_.strip().lower() if type_ is not None else None,
            hreflang.strip().lower() if hreflang is not None else None,
        )
        if key in seen:
            problems.append(
                f"{_describe(element)}: more than one atom:link rel='alternate' "
                f"with type={type_!r} and hreflang={hreflang!r} "
                f"(line {link.sourceline})"
            )
        seen.add(key)
    return problems


def _needs_summary(entry: etree._Element) -> bool:
    """
    RFC 4287 4.1.1.1: out-of-line or Base64 content needs an atom:summary.

    Base64 content is content whose type is a media type that is neither
    text/* nor an XML media type.
    """
    content = entry.find("atom:content", NS)
    if content is None:
        return False
    if content.get("src") is not None:
        return True
    type_ = (content.get("type") or "text").strip().lower()
    if type_ in ("text", "html", "xhtml") or "/" not in type_:
        return False
    return not (
        type_.startswith("text/") or type_.endswith("/xml") or type_.endswith("+xml")
    )


def _entry_problems(
    entry: etree._Element, *, in_feed: bool, feed_has_author: bool
) -> list[str]:
    """The rules of RFC 4287 for one atom:entry that RELAX NG leaves out."""
    where = _describe(entry)
    problems = _count_problems(entry, ("id", "title", "updated"))
    if in_feed:
        # RFC 4287 4.1.1: a feed without atom:author needs one directly in
        # every entry; atom:source/atom:author does not count there.
        if not feed_has_author and not entry.xpath("atom:author", namespaces=NS):
            problems.append(
                f"{where}: has no atom:author and neither has its feed (RFC 4287 4.1.1)"
            )
    elif not entry.xpath("atom:author or atom:source/atom:author", namespaces=NS):
        problems.append(
            f"{where}: an entry document needs an atom:author, directly or in "
            "its atom:source (RFC 4287 4.1.2)"
        )
    if not entry.xpath(
        "atom:content or atom:link[not(@rel)] or atom:link[@rel='alternate']"
        " or atom:link[@rel='http://www.iana.org/assignments/relation/alternate']",
        namespaces=NS,
    ):
        problems.append(
            f"{where}: has neither atom:content nor an atom:link "
            "with rel='alternate' (RFC 4287 4.1.1.1)"
        )
    if _needs_summary(entry) and entry.find("atom:summary", NS) is None:
        problems.append(
            f"{where}: its atom:content has a src or Base64 content, so it "
            "must have an atom:summary (RFC 4287 4.1.1.1)"
        )
    problems.extend(_alternate_link_problems(entry))
    return problems


def atom_problems(xml: bytes) -> list[str]:
    """
    Every RFC 4287 violation found in an Atom document.

    Returns an empty list for a valid feed or entry document.
    """
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError as e:
        return [f"not well-formed XML: {e}"]

    problems: list[str] = []
    if root.tag not in (f"{{{ATOM_NS}}}feed", f"{{{ATOM_NS}}}entry"):
        problems.append(
            f"root element is {root.tag!r}, not atom:feed or atom:entry "
            f"in the namespace {ATOM_NS!r}"
        )

    if not _ATOM_RELAXNG.validate(root):
        # libxml2 gives some interleave errors no line (0); leave it out.
        problems.extend(
            "RELAX NG (RFC 4287 appendix B): "
            + (f"line {error.line}: " if error.line > 0 else "")
            + error.message
            for error in _ATOM_RELAXNG.error_log
        )
    if root.tag == f"{{{ATOM_NS}}}feed":
        problems.extend(_count_problems(root, ("id", "title", "updated")))
        problems.extend(_alternate_link_problems(root))
        has_author = bool(root.xpath("atom:author", namespaces=NS))
        for entry in root.xpath("atom:entry", namespaces=NS):
            problems.extend(
                _entry_problems(entry, in_feed=True, feed_has_author=has_author)
            )
    elif root.tag == f"{{{ATOM_NS}}}entry":
        problems.extend(_entry_problems(root, in_feed=False, feed_has_author=False))
    else:
        return problems

    for date in root.xpath("//atom:updated | //atom:published", namespaces=NS):
        problem = rfc3339_problem(date.text or "", atom=True)
        if problem is not None:
            problems.append(
                f"atom:{etree.QName(date).localname} at line {date.sourceline}: "
                f"{problem}"
            )
    for id_ in root.xpath("//atom:id", namespaces=NS):
        if not _is_absolute_iri(id_.text or ""):
            problems.append(
                f"atom:id at line {id_.sourceline}: {id_.text!r} is not an "
                "absolute IRI (RFC 4287 4.2.6)"
            )
    return list(dict.fromkeys(problems))
