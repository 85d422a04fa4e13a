"""
A validator for the sitemaps reviewsd serves, for use by the test suite.

Like L{tests.support.feedvalidation}, it returns a list of problems (empty
when the document is valid) and imports nothing from reviewsd: it judges
the output against the sitemaps.org XML Schemas (C{schemas/sitemap.xsd} and
C{schemas/siteindex.xsd}, see their NOTICE) and the limits the protocol
states in words, which the schemas cannot (at most 50,000 URLs and 50 MiB
a file).
"""

from __future__ import annotations

from pathlib import Path

from lxml import etree

__all__ = ["SITEMAP_NS", "locations", "sitemap_problems"]

SCHEMAS = Path(__file__).parent / "schemas"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
_NS = {"s": SITEMAP_NS}
MAX_ENTRIES = 50_000
MAX_BYTES = 50 * 1024 * 1024

_SCHEMAS = {
    f"{{{SITEMAP_NS}}}urlset": etree.XMLSchema(etree.parse(SCHEMAS / "sitemap.xsd")),
    f"{{{SITEMAP_NS}}}sitemapindex": etree.XMLSchema(
        etree.parse(SCHEMAS / "siteindex.xsd")
    ),
}


def sitemap_problems(xml: bytes) -> list[str]:
    """
    Why C{xml} is not a valid sitemap or sitemap index, one line each;
    nothing when it is.
    """
    if len(xml) > MAX_BYTES:
        return [f"{len(xml)} bytes: a sitemap file holds at most {MAX_BYTES}"]
    try:
        root = etree.fromstring(xml)
    except etree.XMLSyntaxError as e:
        return [f"not well-formed XML: {e}"]
    schema = _SCHEMAS.get(root.tag)
    if schema is None:
        return [f"the root element is {root.tag}, not a sitemap's urlset or index"]
    problems = [
        f"line {error.line}: {error.message}"
        for error in (() if schema.validate(root) else schema.error_log)
    ]
    entries = len(root)
    if entries > MAX_ENTRIES:
        problems.append(f"{entries} entries: a file holds at most {MAX_ENTRIES}")
    found = locations(xml)
    if len(set(found)) != len(found):
        problems.append("a location is listed more than once")
    return problems


def locations(xml: bytes) -> list[str]:
    """The C{loc} of every entry of a sitemap or an index, in order."""
    root = etree.fromstring(xml)
    return [str(loc) for loc in root.xpath("s:*/s:loc/text()", namespaces=_NS)]


def lastmods(xml: bytes) -> dict[str, str]:
    """The C{lastmod} of every entry that has one, by C{loc}."""
    root = etree.fromstring(xml)
    return {
        entry.findtext("s:loc", namespaces=_NS): entry.findtext(
            "s:lastmod", namespaces=_NS
        )
        for entry in root
        if entry.find("s:lastmod", namespaces=_NS) is not None
    }
