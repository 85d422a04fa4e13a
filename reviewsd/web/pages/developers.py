"""
The developer guide at C{/developers}: every interface, with examples built
from this deployment's base URL and data.

The endpoint list, parameters, responses and curl examples are read from the
OpenAPI document the snapshot serves, so the guide cannot describe an
endpoint or parameter the service does not have; search examples and their
error are run through the real parameter checks and index, so the counts
shown are what the examples answer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from attrs import frozen
from twisted.web.template import Flattenable, Tag

from reviewsd.data.documents import (
    FEED_ITEMS,
    SITEMAP_URLS,
    review_tag,
    tag_authority,
)
from reviewsd.data.links import (
    ATOM_FEED_PATH,
    DEVELOPERS_PATH,
    HUB_PATH,
    JSON_FEED_PATH,
    LLMS_PATH,
    MCP_PATH,
    OPENAPI_PATH,
    REVIEW_PAGE_PREFIX,
    REVIEW_RECORD_PREFIX,
    REVIEWS_PATH,
    ROBOTS_PATH,
    SEARCH_PATH,
    SINCE_PATH,
    SITEMAP_PATH,
    Links,
)
from reviewsd.data.search import InvalidParameters, SearchQuery
from reviewsd.data.snapshot import Document, Snapshot
from reviewsd.memory import paused
from reviewsd.web.pages.home import latest_month_start
from reviewsd.web.pages.markup import h, http_instant, page, plural, possessive

CALLBACK = "https://subscriber.example/callback"
"""The subscriber every WebSub example uses."""

SECRET = "s3cret"
"""The WebSub secret of the examples, so the signature shown can be checked."""

LEASE = "86400"

FORM_TYPE = "application/x-www-form-urlencoded"

_METHODS = ("get", "post", "put", "patch", "delete")
_LINE = 78

_ISSUE_CODES = {
    "invalid_type": "not a number, whole number or string as the parameter needs",
    "too_small": "below the minimum",
    "too_big": "above the maximum",
    "too_long": "longer than allowed",
    "invalid_date": "not a YYYY-MM-DD calendar date",
    "invalid_range": "since is later than until",
    "empty": "given with no value",
    "repeated": "given more than once",
    "invalid_encoding": "not UTF-8",
}


class ToolLike(Protocol):
    """What the guide reads of an MCP tool (L{reviewsd.mcp.tools.Tool})."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...


@frozen
class Curl:
    """
    One curl command, held as its parts so that it is quoted for the shell
    in one place and tests can run what the page shows.
    """

    url: str
    method: str = "GET"
    flags: tuple[str, ...] = ("-s",)
    headers: tuple[tuple[str, str], ...] = ()
    form: tuple[tuple[str, str], ...] = ()
    body: str | None = None

    def words(self) -> list[str]:
        words = ["curl", *self.flags]
        if self.method not in ("GET", "POST") or (
            self.method == "POST" and not self.form and self.body is None
        ):
            words += ["-X", self.method]
        words.append(self.url)
        for name, value in self.headers:
            words += ["-H", f"{name}: {value}"]
        for name, value in self.form:
            words += ["--data-urlencode", f"{name}={value}"]
        if self.body is not None:
            words += ["-d", self.body]
        return words

    def command(self) -> str:
        """The command, one option per line when it would not fit in one."""
        words = self.words()
        one = shlex.join(words)
        if len(one) <= _LINE:
            return one
        start = words.index(self.url) + 1
        lines = [shlex.join(words[:start])]
        for i in range(start, len(words), 2):
            lines.append("  " + shlex.join(words[i : i + 2]))
        return " \\\n".join(lines)


@frozen
class Operation:
    method: str
    path: str
    spec: Mapping[str, Any]

    @property
    def ident(self) -> str:
        return "op-" + str(self.spec.get("operationId") or self.path.strip("/"))

    def parameters(self, where: str | None = None) -> list[Mapping[str, Any]]:
        return [
            p
            for p in self.spec.get("parameters") or []
            if where is None or p.get("in") == where
        ]

    def form_schema(self) -> Mapping[str, Any] | None:
        """
        The form body's fields, one table's worth: when the form is one of
        several shapes (C{oneOf}), the first shape's fields, a field that is
        a constant in each shape listed with all of them, and required only
        what every shape requires.
        """
        content = (self.spec.get("requestBody") or {}).get("content") or {}
        form = (content.get(FORM_TYPE) or {}).get("schema")
        if form is None or "oneOf" not in form:
            return form
        shapes = form["oneOf"]
        properties = dict(shapes[0].get("properties") or {})
        for name, prop in properties.items():
            consts = [(s.get("properties") or {}).get(name, {}) for s in shapes]
            if all("const" in c for c in consts):
                properties[name] = {**prop, "enum": [c["const"] for c in consts]}
                del properties[name]["const"]
        required = set.intersection(*(set(s.get("required") or []) for s in shapes))
        return {
            "properties": properties,
            "required": [n for n in properties if n in required],
        }


def operations(openapi: Mapping[str, Any]) -> list[Operation]:
    """Every operation of the description, in its order."""
    return [
        Operation(method.upper(), path, item[method])
        for path, item in (openapi.get("paths") or {}).items()
        for method in _METHODS
        if method in item
    ]


def _range(low: object, high: object, unit: str = "") -> str:
    unit = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low} to {high}{unit}"
    if low is not None:
        return f"at least {low}{unit}"
    return f"at most {high}{unit}"


def schema_words(schema: Mapping[str, Any]) -> tuple[str, str]:
    """A parameter's type and bounds in a few words."""
    kind = schema.get("type", "")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    values = schema.get("enum")
    if values and not kind:
        kind = "string" if all(isinstance(v, str) for v in values) else "value"
    if schema.get("format"):
        kind = f"{kind} ({schema['format']})" if kind else schema["format"]
    bounds = []
    if "minimum" in schema or "maximum" in schema:
        bounds.append(_range(schema.get("minimum"), schema.get("maximum")))
    if "minLength" in schema or "maxLength" in schema:
        bounds.append(
            _range(schema.get("minLength"), schema.get("maxLength"), "characters")
        )
    if values:
        bounds.append("one of " + ", ".join(map(str, values)))
    if "const" in schema:
        bounds.append(f"always {schema['const']}")
    if "default" in schema:
        bounds.append(f"default {schema['default']}")
    return str(kind), "; ".join(bounds)


@frozen
class Examples:
    """The live values the guide's examples use."""

    since_day: str
    review_id: str
    """The newest review's, for the examples of one review."""
    searches: tuple[tuple[tuple[str, str], ...], ...]
    bad_search: tuple[tuple[str, str], ...]
    tool_call: tuple[str, dict[str, Any]]
    mcp_protocols: tuple[str, ...]
    """The MCP protocol versions the server speaks, newest first."""


def _first_alias(entry: Mapping[str, Any], snapshot: Snapshot) -> str:
    """A technician as customers name them: the first alias, else the name."""
    for technician in snapshot.dataset.business.technicians:
        if technician.name == entry["name"] and technician.aliases:
            return technician.aliases[0]
    return str(entry["name"])


def examples(snapshot: Snapshot, mcp_protocols: Sequence[str]) -> Examples:
    """
    Search parameters that find something in this data (each candidate is
    run, and one that matches nothing is dropped), and one set that fails.
    """
    insights = snapshot.insights
    entities = insights.get("entities") or {}
    technicians = [t for t in entities.get("technicians") or [] if t["mention_count"]]
    services = [s for s in entities.get("services") or [] if s["mention_count"]]
    phrases = [
        p for a in insights.get("aspects") or [] for p in a.get("top_phrases") or []
    ]
    reviews = snapshot.dataset.reviews
    year = reviews[0].date.year if reviews else 2024
    technician = _first_alias(technicians[0], snapshot) if technicians else None
    candidates: list[tuple[tuple[str, str], ...]] = []
    if technician:
        candidates.append(
            (("mentions_technician", technician), ("min_rating", "4"), ("limit", "3"))
        )
    candidates += [
        (("query", phrase), ("since", f"{year - 1}-01-01")) for phrase in phrases[:5]
    ][:5]
    if services:
        candidates.append((("mentions_service", services[0]["id"]), ("limit", "5")))
    candidates.append((("rating", "1"), ("limit", "2")))
    searches: list[tuple[tuple[str, str], ...]] = []
    queried = False
    for candidate in candidates:
        is_query = candidate[0][0] == "query"
        if is_query and queried:
            continue
        if search_answer(snapshot, candidate).get("matched"):
            searches.append(candidate)
            queried = queried or is_query
    if not searches:
        searches.append((("min_rating", "1"), ("limit", "5")))
    arguments: dict[str, Any] = {"limit": 2}
    if technician:
        arguments = {"mentions_technician": technician, "limit": 2}
    return Examples(
        since_day=latest_month_start(reviews),
        review_id=reviews[0].id if reviews else "none",
        searches=tuple(searches),
        bad_search=(("rating", "4.5"), ("since", f"{year}-02-30"), ("limit", "0")),
        tool_call=("search_reviews", arguments),
        mcp_protocols=tuple(mcp_protocols),
    )


def compact_json(value: Any) -> str:
    """An error answer as people read it: one line per issue."""
    if not isinstance(value, dict) or not isinstance(value.get("issues"), list):
        return json.dumps(value, indent=2, ensure_ascii=False)
    head = {k: v for k, v in value.items() if k != "issues"}
    lines = [
        "{" + json.dumps(head, ensure_ascii=False)[1:-1] + ',"issues":[',
        ",\n".join(
            "  " + json.dumps(issue, ensure_ascii=False) for issue in value["issues"]
        ),
        "]}",
    ]
    return "\n".join(lines)


def search_answer(snapshot: Snapshot, parameters: Sequence[tuple[str, str]]) -> Any:
    """What the search endpoint answers for C{parameters}: a result or an error."""
    try:
        query = SearchQuery.from_query(
            {k.encode(): [v.encode()] for k, v in parameters}
        )
    except InvalidParameters as invalid:
        return invalid.as_json()
    matched, positions = snapshot.index.search(query)
    return {"matched": matched, "returned": len(positions)}


def _declared(
    op: Operation, parameters: Sequence[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """Only the parameters the description declares, so examples cannot drift."""
    names = {p["name"] for p in op.parameters("query")}
    return tuple((k, v) for k, v in parameters if k in names)


def _query_url(
    links: Links, op: Operation, parameters: Sequence[tuple[str, str]]
) -> str:
    declared = _declared(op, parameters)
    url = links.url(op.path)
    return url + ("?" + urlencode(declared, quote_via=quote) if declared else "")


def _form_example(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A form for a form-bodied operation: enum firsts, and our sample values."""
    samples = {
        "hub.callback": CALLBACK,
        "hub.secret": SECRET,
        "hub.lease_seconds": LEASE,
    }
    fields = []
    for name, prop in (schema.get("properties") or {}).items():
        if "enum" in prop and prop["enum"]:
            fields.append((name, str(prop["enum"][0])))
        elif name in samples:
            fields.append((name, samples[name]))
    order = {"hub.mode": 0, "hub.topic": 1, "hub.callback": 2}
    return tuple(sorted(fields, key=lambda f: order.get(f[0], 9)))


def _mcp_headers(
    protocol: str | None = None,
    session: str | None = None,
    method: str | None = None,
    name: str | None = None,
) -> tuple[tuple[str, str], ...]:
    headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ]
    if session:
        headers.append(("Mcp-Session-Id", session))
    if protocol:
        headers.append(("MCP-Protocol-Version", protocol))
    if method:
        headers.append(("Mcp-Method", method))
    if name:
        headers.append(("Mcp-Name", name))
    return tuple(headers)


MODERN_MCP = "2026-07-28"
"""The stateless MCP revision, whose requests need no session."""
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _modern(
    links: Links, request_id: int, method: str, params: Mapping[str, Any] | None = None
) -> Curl:
    """A 2026-07-28 request: its revision in C{_meta} and the headers."""
    params = dict(params or {})
    named = params.get(_NAMED.get(method, ""))
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN_MCP,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return Curl(
        url=links.url(MCP_PATH),
        headers=_mcp_headers(MODERN_MCP, method=method, name=named),
        body=_rpc(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        ),
    )


def _rpc(message: Mapping[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def _initialize(links: Links, protocol: str) -> Curl:
    return Curl(
        url=links.url(MCP_PATH),
        flags=("-si",),
        headers=_mcp_headers(),
        body=_rpc(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": protocol,
                    "capabilities": {},
                    "clientInfo": {"name": "curl", "version": "1"},
                },
            }
        ),
    )


def operation_example(
    snapshot: Snapshot, op: Operation, chosen: Examples
) -> Curl | None:
    """The curl command for an operation, from its description."""
    links = snapshot.links
    body = op.spec.get("requestBody") or {}
    content = body.get("content") or {}
    if op.method == "GET" and op.path == MCP_PATH:
        return None  # a legacy session's endless stream: the MCP section says
    if op.method == "GET":
        path = op.path
        for p in op.parameters("path"):
            value = chosen.since_day if "date" in str(p["schema"]) else "x"
            if p["name"] == "id":
                value = quote(chosen.review_id, safe="")
            path = path.replace("{" + p["name"] + "}", value)
        if op.parameters("query"):
            return Curl(url=_query_url(links, op, chosen.searches[0]))
        return Curl(url=links.url(path), flags=("-s", "--compressed"))
    form = op.form_schema()
    if form is not None:
        return Curl(url=links.url(op.path), flags=("-si",), form=_form_example(form))
    if op.path == MCP_PATH and "application/json" in content:
        return _modern(links, 1, "server/discover")
    return None


# --- page sections -----------------------------------------------------------


def _pre(text: str, css: str = "shell") -> Tag:
    return h("pre", class_=css)(h("code")(text))


def _commands(*commands: Curl | str) -> Tag:
    """Shell lines in one block: commands, and comments between them."""
    return _pre("\n".join(c if isinstance(c, str) else c.command() for c in commands))


def _section(ident: str, title: str, *content: Flattenable) -> Tag:
    return h("section", id=ident, aria_labelledby=f"{ident}-h")(
        h("h2", id=f"{ident}-h")(title), *content
    )


def prose(text: str) -> list[Flattenable]:
    """Description text, with the OpenAPI document's C{`code`} spans as code."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: leave the text alone
        return [text]
    return [h("code")(part) if i % 2 else part for i, part in enumerate(parts) if part]


def _parameter_table(parameters: Sequence[Mapping[str, Any]], caption: str) -> Tag:
    """Name, place, type, bounds and meaning; columns with nothing are left out."""
    rows = []
    for p in parameters:
        kind, bounds = schema_words(p.get("schema") or {})
        rows.append(
            (p["name"], p.get("in", ""), kind, bounds, p.get("description", ""))
        )
    columns = [
        (i, title)
        for i, title in enumerate(("Name", "In", "Type", "Bounds", "Meaning"))
        if i == 0 or any(row[i] for row in rows)
    ]
    return h("div", class_="table-scroll")(
        h("table", class_="params stack")(
            h("caption")(caption),
            h("thead")(h("tr")([h("th", scope="col")(t) for _, t in columns])),
            h("tbody")(
                [
                    h("tr")(
                        h("th", scope="row")(h("code")(row[0])),
                        [
                            h("td", data_label=title)(prose(str(row[i])))
                            for i, title in columns[1:]
                        ],
                    )
                    for row in rows
                ]
            ),
        )
    )


def _body_fields(op: Operation) -> list[Mapping[str, Any]]:
    """A form body's fields, shaped like parameters for the same table."""
    schema = op.form_schema()
    if not schema:
        return []
    required = set(schema.get("required") or [])
    return [
        {
            "name": name,
            "in": "form, required" if name in required else "form",
            "schema": prop,
            "description": prop.get("description", ""),
        }
        for name, prop in (schema.get("properties") or {}).items()
    ]


_CONDITIONAL = ("If-None-Match", "If-Modified-Since")

_GUIDES = {
    SEARCH_PATH: ("#search", "Search"),
    f"{SINCE_PATH}/{{date}}": ("#sync", "Incremental sync"),
    f"{REVIEW_RECORD_PREFIX}{{id}}": ("#permalinks", "Each review's address"),
    f"{REVIEW_PAGE_PREFIX}{{id}}": ("#permalinks", "Each review's address"),
    SITEMAP_PATH: ("#permalinks", "Each review's address"),
    MCP_PATH: ("#mcp", "MCP server"),
    HUB_PATH: ("#websub", "WebSub"),
}


def _responses(op: Operation) -> Tag:
    items = []
    summary = op.spec.get("summary")
    for code, response in (op.spec.get("responses") or {}).items():
        kinds = ", ".join(response.get("content") or {})
        description = response.get("description", "")
        if description == summary:
            description = ""
        items.append(
            h("li")(
                h("code")(code),
                " ",
                prose(description),
                f" ({kinds})" if kinds and description else kinds,
            )
        )
    return h("ul", class_="responses", aria_label="Responses")(items)


def _operation(snapshot: Snapshot, op: Operation, chosen: Examples) -> Tag:
    example = operation_example(snapshot, op, chosen)
    document = snapshot.documents.get(op.path)
    parameters = [
        p
        for p in op.parameters()
        if not (p.get("in") == "header" and p["name"] in _CONDITIONAL)
    ] + _body_fields(op)
    conditional = [
        p["name"] for p in op.parameters("header") if p["name"] in _CONDITIONAL
    ]
    notes: list[Flattenable] = []
    if conditional:
        notes += [
            "Conditional: ",
            [[h("code")(name), " "] for name in conditional],
            "(",
            h("a", href="#caching")("caching"),
            "). ",
        ]
    guide = _GUIDES.get(op.path)
    if guide:
        notes += ["More in ", h("a", href=guide[0])(guide[1]), "."]
    facts: Flattenable = ""
    if document is not None:
        facts = h("p", class_="muted small")(
            f"Now: {document.content_type.decode()}, "
            f"{len(document.identity.body):,} bytes",
            (
                f" ({len(document.gzipped.body):,} gzipped)"
                if document.gzipped is not None
                else ""
            ),
            ", ETag ",
            h("code")(document.identity.etag.decode()),
            ".",
        )
    show_table = parameters and op.path != SEARCH_PATH
    return h(
        "section", class_="endpoint", id=op.ident, aria_labelledby=f"{op.ident}-h"
    )(
        h("h3", id=f"{op.ident}-h")(
            h("span", class_=f"method {op.method.lower()}")(op.method),
            " ",
            h("code")(op.path),
        ),
        h("p")(
            prose(op.spec.get("summary", "")),
            [" ", prose(op.spec["description"])] if op.spec.get("description") else "",
        ),
        _parameter_table(parameters, "Parameters") if show_table else "",
        _responses(op),
        h("p", class_="small")(notes) if notes else "",
        _commands(example) if example else "",
        facts,
    )


def _endpoints(snapshot: Snapshot, ops: Sequence[Operation], chosen: Examples) -> Tag:
    links = snapshot.links
    summary = h("table", class_="endpoints")(
        h("caption")("Every endpoint, from the OpenAPI description"),
        h("thead")(
            h("tr")(
                h("th", scope="col")("Endpoint"),
                h("th", scope="col")("What it answers"),
            )
        ),
        h("tbody")(
            [
                h("tr")(
                    h("th", scope="row")(
                        h("a", href=f"#{op.ident}")(h("code")(f"{op.method} {op.path}"))
                    ),
                    h("td")(op.spec.get("summary", "")),
                )
                for op in ops
            ]
        ),
    )
    details = [_operation(snapshot, op, chosen) for op in ops]
    return _section(
        "endpoints",
        "Endpoints",
        h("p")(
            "Read from the ",
            h("a", href=links.url(OPENAPI_PATH))("OpenAPI 3.1 description"),
            " this service publishes; the examples run against ",
            h("code")(links.base),
            " as they are.",
        ),
        h("div", class_="table-scroll")(summary),
        details,
    )


def _caching(snapshot: Snapshot) -> Tag:
    links = snapshot.links
    reviews = snapshot.documents[REVIEWS_PATH]
    atom = snapshot.documents[ATOM_FEED_PATH]
    etag = reviews.identity.etag.decode()
    rows = []
    for path, document in data_documents(snapshot).items():
        rows.append(
            h("tr")(
                h("th", scope="row")(h("a", href=links.url(path))(h("code")(path))),
                h("td", data_label="Type")(document.content_type.decode()),
                h("td", class_="num", data_label="Bytes")(
                    f"{len(document.identity.body):,}"
                ),
                h("td", class_="num", data_label="gzip")(
                    f"{len(document.gzipped.body):,}" if document.gzipped else "\u2013"
                ),
                h("td", data_label="ETag")(h("code")(document.identity.etag.decode())),
                h("td", data_label="Last-Modified")(document.http_date.decode()),
            )
        )
    return _section(
        "caching",
        "Conditional requests and caching",
        h("p")(
            "Every document carries a strong ",
            h("code")("ETag"),
            " (a hash of the exact bytes sent; the gzip form has its own) and ",
            h("code")("Last-Modified"),
            ". Send them back as ",
            h("code")("If-None-Match"),
            " or ",
            h("code")("If-Modified-Since"),
            " and an unchanged document costs a ",
            h("code")("304 Not Modified"),
            " with an empty body. ",
            h("code")("Cache-Control: public, max-age=5, must-revalidate"),
            " lets a cache in front keep an answer 5 seconds, then revalidate it "
            "with its ETag (a 304). HEAD answers wherever GET does; "
            "gzip is sent when Accept-Encoding allows it; CORS allows any origin.",
        ),
        _commands(
            "# the validators of the dataset, as they are now",
            Curl(url=links.reviews, flags=("-sI",)),
            "# 304 while the dataset is unchanged",
            Curl(url=links.reviews, flags=("-si",), headers=(("If-None-Match", etag),)),
            Curl(
                url=links.atom_feed,
                flags=("-si",),
                headers=(("If-Modified-Since", atom.http_date.decode()),),
            ),
        ),
        h("div", class_="table-scroll")(
            h("table", class_="documents stack")(
                h("caption")("The documents now"),
                h("thead")(
                    h("tr")(
                        [
                            h("th", scope="col", class_=css)(c)
                            for c, css in (
                                ("Path", None),
                                ("Type", None),
                                ("Bytes", "num"),
                                ("gzip", "num"),
                                ("ETag", None),
                                ("Last-Modified", None),
                            )
                        ]
                    )
                ),
                h("tbody")(rows),
            )
        ),
    )


def data_documents(snapshot: Snapshot) -> dict[str, Any]:
    """
    The snapshot's data documents: not these pages, their stylesheet, or
    what is there for crawlers (robots.txt and the sitemaps).
    """
    return {
        path: document
        for path, document in snapshot.documents.items()
        if not document.content_type.startswith((b"text/html", b"text/css"))
        and path != ROBOTS_PATH
        and not document.content_type.startswith(b"application/xml")
    }


def _changes(snapshot: Snapshot, chosen: Examples) -> Tag:
    links = snapshot.links
    insights = snapshot.insights
    reviews = snapshot.documents[REVIEWS_PATH]
    stamp, words = http_instant(reviews.last_modified)
    months = (insights.get("temporal") or {}).get("monthly") or []
    recent = months[-12:]
    added = sum(int(m.get("review_count") or 0) for m in recent)
    latest = (insights.get("date_range") or {}).get("latest")
    facts: list[Flattenable] = [
        "The data last changed on ",
        h("time", datetime=stamp)(words),
        " (",
        h("code")(f"Last-Modified: {reviews.http_date.decode()}"),
        " on ",
        h("code")(REVIEWS_PATH),
        ")",
    ]
    if latest:
        facts += ["; the newest review is dated ", h("time", datetime=latest)(latest)]
    facts.append(".")
    pace: Flattenable = ""
    if recent:
        pace = h("p")(
            f"From {recent[0]['month']} to {recent[-1]['month']} "
            f"{plural(added, 'review')} arrived, about "
            f"{added / len(recent):.1f} a month. "
            "A rebuild that yields the same bytes keeps the ETag and the date, "
            "so Last-Modified moves only when content does."
        )
    return _section(
        "changes",
        "Rate of change",
        h("p")(facts),
        pace,
        h("p")(
            "So: poll a document with ",
            h("code")("If-None-Match"),
            " at most every few minutes (a 304 is cheap), fetch only what is new with ",
            h("a", href=links.url(f"{SINCE_PATH}/{chosen.since_day}"))(
                h("code")(f"{SINCE_PATH}/{{date}}")
            ),
            ", or have changes pushed to you by ",
            h("a", href="#websub")("WebSub"),
            " and not poll at all.",
        ),
    )


def _search(snapshot: Snapshot, ops: Sequence[Operation], chosen: Examples) -> Tag:
    links = snapshot.links
    op = next((o for o in ops if o.path == SEARCH_PATH), None)
    if op is None:
        return _section("search", "Search", h("p")("Search is not described."))
    lines: list[Curl | str] = []
    for parameters in chosen.searches:
        answer = search_answer(snapshot, _declared(op, parameters))
        lines.append(
            f"# now: matched {answer['matched']}, returned {answer['returned']}"
            if "matched" in answer
            else "# now: an error"
        )
        lines.append(Curl(url=_query_url(links, op, parameters)))
    error = search_answer(snapshot, chosen.bad_search)
    codes = snapshot_issue_codes(snapshot) or list(_ISSUE_CODES)
    return _section(
        "search",
        "Search",
        h("p")(
            h("code")(f"GET {SEARCH_PATH}"),
            " answers the reviews that match every parameter given (AND), newest "
            "first, as ",
            h("code")('{"matched": N, "returned": n, "reviews": [...]}'),
            "; ",
            h("code")("matched"),
            " counts every match before ",
            h("code")("limit"),
            ". Unknown parameters are ignored.",
        ),
        _parameter_table(op.parameters("query"), "Search parameters"),
        h("h3")("Examples"),
        _commands(*lines),
        h("h3")("Errors"),
        h("p")(
            "A bad parameter is a ",
            h("code")("400"),
            " with one issue per bad parameter, so a client can show every "
            "problem at once:",
        ),
        _commands(Curl(url=_query_url(links, op, chosen.bad_search))),
        _pre(compact_json(error), css="json"),
        h("table", class_="codes")(
            h("caption")("Issue codes"),
            h("tbody")(
                [
                    h("tr")(
                        h("th", scope="row")(h("code")(code)),
                        h("td")(_ISSUE_CODES.get(code, "")),
                    )
                    for code in codes
                ]
            ),
        ),
        h("p")(
            "The MCP tool ",
            h("code")("search_reviews"),
            " takes the same parameters as JSON and answers the same way.",
        ),
    )


def snapshot_issue_codes(snapshot: Snapshot) -> list[str]:
    """The issue codes the OpenAPI description lists."""
    openapi = _openapi(snapshot)
    issue = ((openapi.get("components") or {}).get("schemas") or {}).get("Issue") or {}
    code = (issue.get("properties") or {}).get("code") or {}
    return [str(c) for c in code.get("enum") or []]


def _sync(snapshot: Snapshot, chosen: Examples) -> Tag:
    links = snapshot.links
    count = snapshot.since_count(date.fromisoformat(chosen.since_day))
    return _section(
        "sync",
        "Incremental sync",
        h("p")(
            h("code")(f"GET {SINCE_PATH}/{{date}}"),
            " answers ",
            h("code")('{"since": DATE, "count": n, "reviews": [...]}'),
            ": every review dated on or after the date, newest first, with the "
            "validators of ",
            h("code")(REVIEWS_PATH),
            ". Keep the date of the newest review you hold and ask from it; "
            "review ids are stable, so merge by id.",
        ),
        _commands(
            f"# now: {plural(count, 'review')} since {chosen.since_day}",
            Curl(url=links.url(f"{SINCE_PATH}/{chosen.since_day}")),
            "# a malformed or impossible date is a 400 with issues at path date",
            Curl(url=links.url(f"{SINCE_PATH}/2024-02-30")),
        ),
    )


def _argument_words(schema: Mapping[str, Any]) -> list[Flattenable]:
    required = set(schema.get("required") or [])
    words: list[Flattenable] = []
    for name, prop in (schema.get("properties") or {}).items():
        kind, bounds = schema_words(prop)
        if words:
            words.append(", ")
        words += [
            h("code")(name),
            " (",
            "; ".join(
                w for w in (kind, bounds, "required" if name in required else "") if w
            ),
            ")",
        ]
    return words or ["none"]


def _mcp_python(address: str, tool: str, arguments: dict[str, Any]) -> str:
    """The example with the official Python SDK, calling the example tool."""
    return "\n".join(
        [
            "# pip install mcp   (the official Python SDK)",
            "import asyncio",
            "from mcp import Client",
            "",
            "",
            "async def main():",
            f"    async with Client({address!r}) as client:",
            "        print([t.name for t in (await client.list_tools()).tools])",
            f"        result = await client.call_tool({tool!r}, {arguments!r})",
            '        print(result.structured_content["matched"])',
            "",
            "",
            "asyncio.run(main())",
        ]
    )


def _mcp_clients(
    address: str, tool: str, arguments: dict[str, Any]
) -> list[Flattenable]:
    """How the common MCP clients, and Python, are told of the server."""
    return [
        h("h3")("Connecting a client"),
        h("p")(
            "Clients that speak streamable HTTP take the address (Cursor, ",
            h("code")("~/.cursor/mcp.json"),
            "):",
        ),
        _pre(
            json.dumps({"mcpServers": {"reviews": {"url": address}}}, indent=2),
            css="json",
        ),
        h("p")("VS Code (", h("code")(".vscode/mcp.json"), "):"),
        _pre(
            json.dumps(
                {"servers": {"reviews": {"type": "http", "url": address}}}, indent=2
            ),
            css="json",
        ),
        h("p")(
            "Clients that only start local processes (Claude Desktop's ",
            h("code")("claude_desktop_config.json"),
            ") go through the ",
            h("code")("mcp-remote"),
            " bridge:",
        ),
        _pre(
            json.dumps(
                {
                    "mcpServers": {
                        "reviews": {"command": "npx", "args": ["mcp-remote", address]}
                    }
                },
                indent=2,
            ),
            css="json",
        ),
        h("p")("From Python:"),
        _pre(_mcp_python(address, tool, arguments), css="python"),
    ]


def _mcp_tools(tools: Sequence[ToolLike]) -> list[Flattenable]:
    """The tool registry as a table, and what bad arguments answer."""
    table = h("table", class_="tools stack")(
        h("caption")(f"The {len(tools)} tools, from the server's registry"),
        h("thead")(
            h("tr")(
                h("th", scope="col")("Tool"),
                h("th", scope="col")("Arguments"),
                h("th", scope="col")("What it does"),
            )
        ),
        h("tbody")(
            [
                h("tr")(
                    h("th", scope="row")(h("code")(t.name), h("br"), t.title),
                    h("td", data_label="Arguments")(_argument_words(t.input_schema)),
                    h("td", data_label="What it does")(prose(t.description)),
                )
                for t in tools
            ]
        ),
    )
    return [
        h("h3")("Tools"),
        h("div", class_="table-scroll")(table),
        h("p")(
            "Arguments that break a tool's schema are a JSON-RPC ",
            h("code")("-32602"),
            " error naming the argument; valid arguments that find nothing give a "
            "result with ",
            h("code")("isError: true"),
            " and a text listing what exists.",
        ),
    ]


def _mcp_by_hand(
    links: Links, chosen: Examples, tool: str, arguments: dict[str, Any]
) -> list[Flattenable]:
    """Requests with curl in both eras, start to end, and the transport's rules."""
    address = links.url(MCP_PATH)
    session = "SESSION_ID"
    legacy = [p for p in chosen.mcp_protocols if p != MODERN_MCP][0]
    headers = _mcp_headers(legacy, session)
    review = links.review_record(chosen.review_id)
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_MCP,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "subscriptions/listen",
        "params": {
            "_meta": meta,
            "notifications": {
                "resourcesListChanged": True,
                "resourceSubscriptions": [review],
            },
        },
    }
    return [
        h("h3")("The protocol by hand"),
        h("p")(
            f"Revision {MODERN_MCP} needs no session: each request names its "
            "revision in ",
            h("code")("params._meta"),
            " and in ",
            h("code")("MCP-Protocol-Version"),
            ", its method in ",
            h("code")("Mcp-Method"),
            ", and what it calls or reads in ",
            h("code")("Mcp-Name"),
            ".",
        ),
        _commands(
            "# what the server speaks and offers, a tool, a review, a prompt",
            _modern(links, 1, "server/discover"),
            _modern(links, 2, "tools/call", {"name": tool, "arguments": arguments}),
            _modern(links, 3, "resources/read", {"uri": review}),
            _modern(
                links,
                4,
                "prompts/get",
                {"name": "digest_since", "arguments": {"since": chosen.since_day}},
            ),
        ),
        h("p")(
            "Change notifications come on the event stream that answers ",
            h("code")("subscriptions/listen"),
            " (POST it as above, with ",
            h("code")("curl -N"),
            "): first the acknowledgement, then ",
            h("code")("notifications/resources/updated"),
            " for each watched resource a data change touches, and ",
            h("code")("notifications/resources/list_changed"),
            ":",
        ),
        _pre(json.dumps(listen, indent=2), css="json"),
        h("p")(f"Older clients ({legacy} and before) open a session:"),
        _commands(
            "# 1. initialize: the answer's Mcp-Session-Id header names the session",
            _initialize(links, legacy),
            "# 2. every later request carries it",
            Curl(
                url=address,
                headers=headers,
                body=_rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ),
            Curl(
                url=address,
                headers=headers,
                body=_rpc(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": tool, "arguments": arguments},
                    }
                ),
            ),
            "# 3. end the session",
            Curl(url=address, method="DELETE", headers=(("Mcp-Session-Id", session),)),
        ),
        _mcp_rules(),
    ]


def _mcp_rules() -> Tag:
    return h("ul")(
        h("li")(
            f"At {MODERN_MCP}: headers that differ from the body are 400 (",
            h("code")("-32020"),
            "), a revision not spoken 400 (",
            h("code")("-32022"),
            ", listing those that are), a request without its ",
            h("code")("_meta"),
            " 400 (",
            h("code")("-32602"),
            "), a method not served 404. Lists and reads carry ",
            h("code")("ttlMs"),
            " and ",
            h("code")("cacheScope"),
            ".",
        ),
        h("li")(
            "In a session: without its id, 400; a forged, ended or week-old one, "
            "404. Session ids are signed, so a restart, or another instance with "
            "the same key, keeps them; ",
            h("code")("GET"),
            " with one opens the session's notifications (after ",
            h("code")("resources/subscribe"),
            ").",
        ),
        h("li")(
            h("code")("Accept"),
            " must allow both ",
            h("code")("application/json"),
            " and ",
            h("code")("text/event-stream"),
            " (406), the body must be JSON (415) of at most 1 MiB (413); a batch "
            "is -32600, malformed JSON -32700; errors carry the request's id.",
        ),
        h("li")(
            "Requests from web pages must come from this service's origin, "
            "localhost or an origin the operator allowed (403 otherwise)."
        ),
    )


def _mcp_resources(links: Links) -> list[Flattenable]:
    """The resources and prompts, as a client's menus show them."""
    return [
        h("h3")("Resources and prompts"),
        h("p")(
            "Resources: ",
            h("code")("reviewsd://business"),
            " (the profile and rating), ",
            h("code")(links.insights),
            " (the insights), ",
            h("code")("reviewsd://faq"),
            ", and each review at its own URL, the template ",
            h("code")(links.url(REVIEW_RECORD_PREFIX) + "{id}"),
            ", listed newest first. Prompts, with the reviews they rest on embedded: ",
            h("code")("digest_since"),
            " (since a date), ",
            h("code")("technician_report"),
            ", ",
            h("code")("service_report"),
            ", ",
            h("code")("service_area_report"),
            " and ",
            h("code")("answer_question"),
            " (a customer's question, answered from the FAQ and the matching "
            "reviews). ",
            h("code")("completion/complete"),
            " offers their arguments' values (technicians and aliases, service "
            "ids, areas, aspects, dates) and review ids.",
        ),
    ]


def _mcp(snapshot: Snapshot, tools: Sequence[ToolLike], chosen: Examples) -> Tag:
    links = snapshot.links
    address = links.url(MCP_PATH)
    protocols = chosen.mcp_protocols
    tool, arguments = chosen.tool_call
    return _section(
        "mcp",
        "MCP server for AI assistants",
        h("p")(
            "A ",
            h("a", href="https://modelcontextprotocol.io")("Model Context Protocol"),
            " server at ",
            h("code")(address),
            ": streamable HTTP, no authentication, protocol ",
            protocols[0],
            " (stateless) and, for older clients, sessions at ",
            ", ".join(protocols[1:]),
            ". Tools, resources, prompts, completion and change notifications "
            "in both. Every tool is read-only and answers with ",
            h("code")("structuredContent"),
            " plus the same JSON as text.",
        ),
        *_mcp_clients(address, tool, arguments),
        *_mcp_tools(tools),
        *_mcp_resources(links),
        *_mcp_by_hand(links, chosen, tool, arguments),
    )


_VERIFY = """\
import hashlib
import hmac


def authentic(body: bytes, header: str, secret: bytes = SECRET) -> bool:
    \"\"\"Check X-Hub-Signature before trusting a delivery.\"\"\"
    method, _, signature = header.partition("=")
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return method == "sha256" and hmac.compare_digest(signature, expected)
"""


def _signature(body: bytes) -> str:
    return hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def _hub_request(
    links: Links, ops: Sequence[Operation]
) -> tuple[list[str], Curl | None]:
    """The topics the hub takes, and a subscription request, from the OpenAPI."""
    hub_op = next((o for o in ops if o.path == HUB_PATH), None)
    if hub_op is None:
        return [], None
    schema = hub_op.form_schema() or {}
    properties = schema.get("properties") or {}
    topics = [str(t) for t in properties.get("hub.topic", {}).get("enum", [])]
    return topics, Curl(url=links.hub, flags=("-si",), form=_form_example(schema))


def _verification(topic: str) -> str:
    """The hub's GET to the callback, and the answer that confirms."""
    challenge = hashlib.sha256(topic.encode()).hexdigest()[:32]
    return "\n".join(
        [
            "GET /callback?"
            + urlencode(
                [
                    ("hub.mode", "subscribe"),
                    ("hub.topic", topic),
                    ("hub.challenge", challenge),
                    ("hub.lease_seconds", LEASE),
                ]
            )
            + " HTTP/1.1",
            "Host: subscriber.example",
            "",
            "HTTP/1.1 200 OK",
            "Content-Type: text/plain",
            "",
            challenge,
        ]
    )


def _delivery(document: Document) -> str:
    """The hub's POST of a topic's current content, signed with L{SECRET}."""
    body = document.identity.body
    first = body.split(b"\n", 1)[0].decode("utf-8", "replace")[:60]
    return "\n".join(
        [
            "POST /callback HTTP/1.1",
            "Host: subscriber.example",
            f"Content-Type: {document.content_type.decode()}",
            f"Link: {(document.links or b'').decode()}",
            f"X-Hub-Signature: sha256={_signature(body)}",
            f"Content-Length: {len(body)}",
            "",
            f"{first}\u2026 (the whole new document)",
            "",
            "HTTP/1.1 204 No Content",
        ]
    )


def _websub_subscribing(subscribe: Curl | None, topic: str) -> list[Flattenable]:
    """The subscription request, and the hub's check of the callback's intent."""
    return [
        h("h3")("Subscribing"),
        _commands(subscribe) if subscribe else "",
        h("p")(
            "A well-formed request is answered ",
            h("code")("202 Accepted"),
            " at once. The callback must be an absolute ",
            h("code")("https"),
            " URL on a public address; the secret is under 200 bytes; a lease is "
            "clamped to the hub's bounds (by default 300 seconds to 30 days, 10 days "
            "when none is asked for). Unsubscribing is the same request with ",
            h("code")("hub.mode=unsubscribe"),
            ". A bad request is a 400 in plain text saying why; more than the hub's "
            "limit of subscriptions per callback host is a 403.",
        ),
        h("h3")("Verification of intent"),
        h("p")(
            "The hub then calls the callback with a GET (its own query string kept) "
            "and a fresh random challenge; only a 2xx whose body is exactly the "
            "challenge confirms. Redirects are not followed.",
        ),
        _pre(_verification(topic), css="http"),
    ]


def _websub_deliveries(document: Document | None, topic: str) -> list[Flattenable]:
    """What a delivery looks like, how to check it, and when the hub gives up."""
    check = _VERIFY.replace("SECRET", repr(SECRET.encode()))
    return [
        h("h3")("Deliveries and signatures"),
        h("p")(
            "When a topic's content changes, each subscriber gets a POST of the full "
            "new body with the topic's content type and ",
            h("code")("Link"),
            " header and, when it gave a secret, ",
            h("code")("X-Hub-Signature: sha256=…"),
            ", the hex HMAC-SHA256 of the body under the secret. Any 2xx "
            "acknowledges. This is the delivery of the current ",
            h("code")(topic),
            f" with the secret {SECRET!r}:",
        ),
        _pre(_delivery(document), css="http") if document is not None else "",
        _pre(check, css="python"),
        h("h3")("Failures"),
        h("p")(
            "A failed delivery is retried after the hub's retry base (30 seconds "
            "by default), then after twice that; the third failure in a row removes "
            "the subscription and sends the callback a ",
            h("code")("hub.mode=denied"),
            " GET with ",
            h("code")("hub.reason"),
            ". A ",
            h("code")("410 Gone"),
            " removes it at once. Leases expire unless renewed; a renewal replaces "
            "the lease and the secret once verified. Subscriptions survive restarts, "
            "and a subscriber that missed a change gets the current content.",
        ),
    ]


def _websub(snapshot: Snapshot, ops: Sequence[Operation]) -> Tag:
    links = snapshot.links
    topics, subscribe = _hub_request(links, ops)
    by_url = {links.url(path): path for path in snapshot.documents}
    topic = topics[0] if topics else links.atom_feed
    document = snapshot.documents.get(by_url.get(topic, ATOM_FEED_PATH))
    return _section(
        "websub",
        "WebSub: changes pushed to you",
        h("p")(
            "The hub at ",
            h("code")(links.hub),
            " pushes each new version of a topic to its subscribers (",
            h("a", href="https://www.w3.org/TR/websub/")("W3C WebSub"),
            "). Each topic advertises the hub in a ",
            h("code")("Link"),
            " header, and the feeds in the document too.",
        ),
        h("h3")("Topics"),
        h("ul")(
            [
                h("li")(
                    h("code")(t),
                    (
                        f" ({snapshot.documents[by_url[t]].content_type.decode()})"
                        if t in by_url
                        else ""
                    ),
                )
                for t in topics
            ]
        ),
        *_websub_subscribing(subscribe, topic),
        *_websub_deliveries(document, topic),
    )


def _permalinks(snapshot: Snapshot, chosen: Examples) -> Tag:
    """Each review's page and record, the feeds' ties to them, the sitemap."""
    links = snapshot.links
    tag = review_tag(tag_authority(snapshot.dataset.business, links), chosen.review_id)
    code = h("code")
    return _section(
        "permalinks",
        "Each review's address",
        h("p")(
            "Every published review has a page, ",
            code(f"{REVIEW_PAGE_PREFIX}{{id}}"),
            " (its permalink), and a record, ",
            code(f"{REVIEW_RECORD_PREFIX}{{id}}"),
            ", the id percent-encoded (",
            code("/"),
            " as ",
            code("%2F"),
            "). The record is the review as every document has it, and its ETag "
            "moves only when the review does. An id that is unknown or not "
            "published is a 404: JSON for the record, a small page for the page.",
        ),
        _commands(
            Curl(url=links.review_record(chosen.review_id)),
            Curl(url=links.review_page(chosen.review_id), flags=("-sI",)),
        ),
        h("p")(
            "The feeds tie each entry to its review. A JSON Feed item's ",
            code("id"),
            " is the review id, its ",
            code("url"),
            " the review's page and its ",
            code("external_url"),
            " the original on its platform. An Atom entry's ",
            code("id"),
            " is a ",
            code("tag:"),
            " URI (RFC 4151) named by the domain of the business, so that it "
            "stays when the service moves, ending in the review id percent-encoded "
            "after ",
            code(":review/"),
            " (here ",
            code(tag),
            "), and its ",
            code('rel="alternate"'),
            " links are the page and the record.",
        ),
        h("p")(
            h("a", href=links.url(ROBOTS_PATH))(code(ROBOTS_PATH)),
            " keeps crawlers out of search and incremental sync, and names ",
            h("a", href=links.url(SITEMAP_PATH))(code(SITEMAP_PATH)),
            ": the pages and every review's page, each with its ",
            code("lastmod"),
            f". Beyond {SITEMAP_URLS:,} URLs, the protocol's limit for one file, "
            "it is an index of ",
            code("/sitemap-1.xml"),
            ", ",
            code("/sitemap-2.xml"),
            "...",
        ),
    )


def _errors(snapshot: Snapshot) -> Tag:
    links = snapshot.links
    return _section(
        "errors",
        "Errors",
        h("p")(
            "Errors are JSON: ",
            h("code")('{"error": CODE, "message": TEXT}'),
            ", plus ",
            h("code")("issues"),
            " for bad parameters. ",
            h("code")("Authorization"),
            " headers are ignored: everything here is public.",
        ),
        h("table", class_="codes")(
            h("caption")("Status codes"),
            h("tbody")(
                [
                    h("tr")(h("th", scope="row")(h("code")(c)), h("td")(w))
                    for c, w in (
                        ("400 invalid_parameters", "a bad search or date parameter"),
                        (
                            "400 bad_request",
                            "a path that is not UTF-8, an HTTP/1.1 request "
                            "without Host, a request that cannot be read",
                        ),
                        ("404 not_found", "no such document"),
                        ("405 method_not_allowed", "with an Allow header"),
                        ("413 too_large", "a request body over its limit"),
                        ("414 uri_too_long", "a request line over 16 KiB"),
                        (
                            "431 headers_too_large",
                            "a header line or all headers over 16 KiB, or more "
                            "than 500 headers",
                        ),
                        ("500 internal_error", "logged on the server; no details sent"),
                    )
                ]
            ),
        ),
        _commands(
            Curl(url=links.url("/no-such-thing"), flags=("-si",)),
            Curl(url=links.reviews, method="POST", flags=("-si",)),
        ),
    )


def _other(snapshot: Snapshot) -> Tag:
    links = snapshot.links
    return _section(
        "documents",
        "Feeds and overviews",
        h("ul")(
            h("li")(
                h("a", href=links.json_feed)(h("code")(JSON_FEED_PATH)),
                f": JSON Feed 1.1 of the {FEED_ITEMS} newest reviews, each with the "
                "full review record under ",
                h("code")("_review"),
                ".",
            ),
            h("li")(
                h("a", href=links.atom_feed)(h("code")(ATOM_FEED_PATH)),
                f": the same {FEED_ITEMS} reviews as Atom (RFC 4287).",
            ),
            h("li")(
                h("a", href=links.url(LLMS_PATH))(h("code")(LLMS_PATH)),
                ": a plain-text overview for AI agents (llmstxt.org).",
            ),
            h("li")(
                h("a", href=links.url(OPENAPI_PATH))(h("code")(OPENAPI_PATH)),
                ": the OpenAPI 3.1 description, linked from every page as ",
                h("code")('rel="service-desc"'),
                ".",
            ),
        ),
    )


def _openapi(snapshot: Snapshot) -> dict[str, Any]:
    return json.loads(snapshot.documents[OPENAPI_PATH].identity.body)


def render_developers(
    snapshot: Snapshot, tools: Iterable[ToolLike], mcp_protocols: Sequence[str]
) -> bytes:
    """
    The whole HTML page for C{GET /developers} (with the cyclic collector
    paused, as L{reviewsd.web.pages.home.render_home}): the guide to this
    snapshot's data, the MCP C{tools} and the C{mcp_protocols} spoken,
    newest first.
    """
    with paused():
        return _developers(snapshot, list(tools), examples(snapshot, mcp_protocols))


def _developers(
    snapshot: Snapshot, tools: Sequence[ToolLike], chosen: Examples
) -> bytes:
    links = snapshot.links
    business = snapshot.dataset.business
    ops = operations(_openapi(snapshot))
    contents = (
        ("endpoints", "Endpoints"),
        ("caching", "Conditional requests and caching"),
        ("changes", "Rate of change"),
        ("search", "Search"),
        ("sync", "Incremental sync"),
        ("permalinks", "Each review's address"),
        ("mcp", "MCP server for AI assistants"),
        ("websub", "WebSub: changes pushed to you"),
        ("errors", "Errors"),
        ("documents", "Feeds and overviews"),
    )
    body = [
        h("div", class_="intro")(
            h("h1")("Developer guide"),
            h("p", class_="lead")(
                f"{possessive(business.name)} verified customer reviews as a public, "
                "read-only data service at ",
                h("code")(links.base),
                ": JSON in UTF-8, no key, no sign-up, CORS open to every origin, "
                "gzip and conditional requests on every document.",
            ),
            h("nav", class_="toc", aria_label="On this page")(
                h("ol")([h("li")(h("a", href=f"#{i}")(title)) for i, title in contents])
            ),
        ),
        _endpoints(snapshot, ops, chosen),
        _caching(snapshot),
        _changes(snapshot, chosen),
        _search(snapshot, ops, chosen),
        _sync(snapshot, chosen),
        _permalinks(snapshot, chosen),
        _mcp(snapshot, tools, chosen),
        _websub(snapshot, ops),
        _errors(snapshot),
        _other(snapshot),
    ]
    return page(
        links=links,
        business_name=business.name,
        title=f"Developer guide: {business.name} reviews data",
        description=(
            f"How to use the reviews data of {business.name}: JSON, feeds, search, "
            "incremental sync, MCP and WebSub, with examples."
        ),
        current=DEVELOPERS_PATH,
        last_modified=snapshot.documents[REVIEWS_PATH].last_modified,
        since_day=chosen.since_day,
        body=body,
    )
