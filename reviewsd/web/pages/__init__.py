"""
The human-facing pages: the landing page at C{/}, the developer guide at
C{/developers}, each review's page at C{/reviews/{id}} and their stylesheet.

Each page is a pure function of a L{reviewsd.data.snapshot.Snapshot}: rendered
once per data change (off the reactor thread) and served from memory like
the other documents, with L{CONTENT_SECURITY_POLICY} as its
C{Content-Security-Policy} header. A review's page is the exception: one per
review would cost memory in proportion to the reviews, so it is rendered
when asked (L{reviewsd.web.pages.review}).
"""

from __future__ import annotations

from importlib.resources import files

from reviewsd.data.links import DEVELOPERS_PATH, HOME_PATH, STYLESHEET_PATH
from reviewsd.web.negotiation import prefers_json
from reviewsd.web.pages.developers import render_developers
from reviewsd.web.pages.home import render_home

STYLESHEET: bytes = files(__name__).joinpath("style.css").read_bytes()
"""The one stylesheet, served at L{STYLESHEET_PATH} as C{text/css}."""

STYLESHEET_TYPE = b"text/css; charset=utf-8"
HTML_TYPE = b"text/html; charset=utf-8"

CONTENT_SECURITY_POLICY: bytes = (
    b"default-src 'none'; style-src 'self'; img-src 'self' data:; "
    b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""
The pages' C{Content-Security-Policy}: nothing runs (no script source at all;
the JSON-LD block is data, which CSP does not govern), styles come only from
the stylesheet, images only from this origin or C{data:} (the inline icon),
and no page may frame them.
"""

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "DEVELOPERS_PATH",
    "HOME_PATH",
    "HTML_TYPE",
    "STYLESHEET",
    "STYLESHEET_PATH",
    "STYLESHEET_TYPE",
    "prefers_json",
    "render_developers",
    "render_home",
]
