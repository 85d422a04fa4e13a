"""
The MCP tools: what an assistant can ask this server, with the schemas of
what it sends and gets back.

Every tool reads the current snapshot and nothing else. Arguments that break
a tool's input schema (checked as JSON Schema reads it, L{reviewsd.mcp.schema})
raise L{ToolCallError} (JSON-RPC -32602, naming the argument); valid
arguments that find nothing give a result with C{isError} and a text that
lists what exists, so that the assistant can try again.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from attrs import field, frozen

from reviewsd.data.documents import to_json
from reviewsd.data.links import INSIGHTS_PATH
from reviewsd.data.mentions import fold
from reviewsd.data.openapi import SCHEMAS
from reviewsd.data.search import (
    LIMIT_DEFAULT,
    LIMIT_MAX,
    NAME_MAX_LENGTH,
    QUERY_MAX_LENGTH,
    InvalidParameters,
    SearchQuery,
    date_parameter,
)
from reviewsd.data.snapshot import Snapshot, SnapshotSource
from reviewsd.mcp.schema import NOT_BLANK, check_arguments, check_schema


class ToolCallError(Exception):
    """A call the protocol refuses: unknown tool or arguments off the schema."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message, self.data = message, data


class NotFound(Exception):
    """Valid arguments that match nothing: an C{isError} result, not a fault."""


def _invalid(error: InvalidParameters) -> ToolCallError:
    """Bad arguments, each named, in the shape of the HTTP search's issues."""
    return ToolCallError(
        "Invalid arguments: " + "; ".join(i.message for i in error.issues),
        {"issues": [i.as_json() for i in error.issues]},
    )


def _self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI component schema with its references carried in C{$defs}."""
    needed: dict[str, Any] = {}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in needed:
                    needed[name] = None
                    needed[name] = rewrite(copy.deepcopy(SCHEMAS[name]))
                return {"$ref": f"#/$defs/{name}"}
            return {k: rewrite(v) for k, v in node.items()}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    result = rewrite(copy.deepcopy(schema))
    if needed:
        result["$defs"] = needed
    portable: dict[str, Any] = _portable(result)
    return portable


_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})


def _portable(node: Any) -> Any:
    """
    C{node} with each list of types (C{["string", "null"]}) said with
    C{anyOf}, one branch per type: a type list is valid JSON Schema, but
    validators and the models that read tool schemas do not all take it.
    A type's branch holds the node's other assertions; C{null}'s holds none.
    """
    if isinstance(node, list):
        return [_portable(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _portable(v) for k, v in node.items()}
    kinds = node.get("type")
    if not isinstance(kinds, list):
        return node
    notes = {k: v for k, v in node.items() if k in _ANNOTATIONS}
    rest = {k: v for k, v in node.items() if k not in _ANNOTATIONS and k != "type"}
    branches = [{"type": "null"} if k == "null" else {"type": k, **rest} for k in kinds]
    if len(branches) == 1:
        return {**notes, **branches[0]}
    return {**notes, "anyOf": branches}


def _object(
    properties: dict[str, Any], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


_STRINGS = {"type": "array", "items": {"type": "string"}}


def _with(schema: dict[str, Any], **properties: Any) -> dict[str, Any]:
    """C{schema}, with more required properties."""
    return {
        **schema,
        "required": [*schema.get("required", []), *properties],
        "properties": {**schema["properties"], **properties},
    }


def _text(description: str, maximum: int = NAME_MAX_LENGTH) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": maximum,
        "pattern": NOT_BLANK,
        "description": description,
    }


def _string(arguments: Mapping[str, Any], name: str) -> str:
    """A required string argument."""
    value = _optional_string(arguments, name)
    if value is None:
        raise ToolCallError(f"Invalid arguments: {name} is required.")
    return value


def _optional_string(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolCallError(f"Invalid arguments: {name} must be a non-empty string.")
    if len(value) > NAME_MAX_LENGTH:
        raise ToolCallError(
            f"Invalid arguments: {name} must be at most {NAME_MAX_LENGTH} characters."
        )
    return value


@frozen
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any] = field(
        validator=lambda _tool, _attribute, schema: check_schema(schema)
    )
    output_schema: dict[str, Any]
    run: Callable[[Snapshot, Mapping[str, Any]], bytes]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }


def _business(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    return snapshot.records.head


def _search(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    try:
        query = SearchQuery.from_arguments(arguments)
    except InvalidParameters as e:
        raise _invalid(e) from None
    return snapshot.search(query)


def _since(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    try:
        day = date_parameter("date", arguments.get("date"))
        limit = SearchQuery.from_arguments({"limit": arguments.get("limit")}).limit
    except InvalidParameters as e:
        raise _invalid(e) from None
    count = snapshot.since_count(day)
    returned = min(count, limit)
    return b'{"since":"%s","count":%d,"returned":%d,"reviews":[%s]}' % (
        day.isoformat().encode("ascii"),
        count,
        returned,
        snapshot.records.run(0, returned),
    )


def _review(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    """The review's record, and its C{permalink}: the URL of its page."""
    review_id = _string(arguments, "id")
    position = snapshot.positions.get(review_id)
    if position is None:
        raise NotFound(
            f"No published review has the id {review_id!r}. Find ids with "
            "search_reviews or get_reviews_since."
        )
    record = snapshot.records.record(position)
    permalink = to_json(snapshot.links.review_page(review_id))
    return b'%s,"permalink":%s}' % (record[:-1], permalink)


_REVIEW_LIST = {"type": "array", "items": {"$ref": "#/components/schemas/Review"}}
_INSIGHTS = SCHEMAS["Insights"]


def _insight(*path: str) -> dict[str, Any]:
    """The schema of one part of the insights document."""
    node: dict[str, Any] = _INSIGHTS
    for key in path:
        node = node["properties"][key] if key != "items" else node["items"]
    return node


def _choose(entries: list[dict[str, Any]], wanted: str, *keys: str) -> dict[str, Any]:
    """The entry whose C{keys} equal C{wanted} in any case, or L{NotFound}."""
    key = fold(wanted)
    for entry in entries:
        if any(fold(str(entry.get(k, ""))) == key for k in keys):
            return entry
    raise KeyError(wanted)


def _listing(entries: list[dict[str, Any]], key: str) -> str:
    return ", ".join(str(e[key]) for e in entries) or "none"


def _insights(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    group = _optional_string(arguments, "group")
    if group is None:
        return snapshot.documents[INSIGHTS_PATH].identity.body
    answer = snapshot.insights_group(group)
    if group not in _INSIGHTS["properties"] or answer is None:
        raise ToolCallError(
            f"Invalid arguments: group must be one of {', '.join(_INSIGHT_GROUPS)}."
        )
    return answer


def _aspect(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    wanted = _string(arguments, "aspect")
    aspects = snapshot.insights["aspects"]
    try:
        return to_json(_choose(aspects, wanted, "id", "label"))
    except KeyError:
        raise NotFound(
            f"No aspect is called {wanted!r}. Aspects: {_listing(aspects, 'id')}."
        ) from None


def _technician(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    wanted = _string(arguments, "name")
    entities = snapshot.insights["entities"]["technicians"]
    names = snapshot.index.matcher.technicians_called(wanted)
    found = [e for e in entities if e["name"] in names]
    if not found:
        raise NotFound(
            f"No technician is called {wanted!r}. Technicians: "
            f"{_listing(entities, 'name')}."
        )
    aliases = {t.name: list(t.aliases) for t in snapshot.dataset.business.technicians}
    return to_json({**found[0], "aliases": aliases.get(found[0]["name"], [])})


def _service(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    wanted = _string(arguments, "id")
    entities = snapshot.insights["entities"]["services"]
    ids = snapshot.index.matcher.services_called(wanted)
    found = [e for e in entities if e["id"] in ids]
    if not found:
        listing = ", ".join(f"{e['id']} ({e['name']})" for e in entities) or "none"
        raise NotFound(
            f"No service has the id or name {wanted!r}. Services: {listing}."
        )
    keywords = {s.id: list(s.keywords) for s in snapshot.dataset.business.services}
    return to_json({**found[0], "keywords": keywords.get(found[0]["id"], [])})


def _service_area(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    wanted = _string(arguments, "name")
    areas = snapshot.insights["entities"]["service_areas"]
    try:
        return to_json(_choose(areas, wanted, "name"))
    except KeyError:
        raise NotFound(
            f"{wanted!r} is not one of the service areas: {_listing(areas, 'name')}."
        ) from None


def _faq(snapshot: Snapshot, arguments: Mapping[str, Any]) -> bytes:
    return to_json({"faq": snapshot.insights["faq"]})


_INSIGHT_GROUPS = tuple(_INSIGHTS["properties"])

CORE_TOOLS = (
    Tool(
        name="get_business",
        title="Business and rating",
        description=(
            "Identity, contact details, hours, service areas, services, technicians "
            "and the aggregate rating (mean, count, 1-5 distribution) of the business."
        ),
        input_schema=_object({}),
        output_schema=_self_contained(
            _object(
                {
                    "business": {"$ref": "#/components/schemas/Business"},
                    "aggregate_rating": {
                        "$ref": "#/components/schemas/AggregateRating"
                    },
                },
                ("business", "aggregate_rating"),
            )
        ),
        run=_business,
    ),
    Tool(
        name="search_reviews",
        title="Search reviews",
        description=(
            "Verified reviews matching every given filter, newest first, with "
            "`matched` counting all matches before `limit`. `query` is a "
            "case-insensitive substring of the text; `mentions_technician` takes a "
            "technician's name or alias; `mentions_service` a service id or name."
        ),
        input_schema=_object(
            {
                "rating": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 5,
                    "description": "Exact star rating.",
                },
                "min_rating": {
                    "type": "number",
                    "minimum": 1,
                    "maximum": 5,
                    "description": "Minimum star rating.",
                },
                "since": {
                    "type": "string",
                    "format": "date",
                    "description": "On or after, YYYY-MM-DD.",
                },
                "until": {
                    "type": "string",
                    "format": "date",
                    "description": "On or before, YYYY-MM-DD.",
                },
                "query": _text(
                    "Text to find in the review, any case.", QUERY_MAX_LENGTH
                ),
                "mentions_technician": _text("A technician's name or alias."),
                "mentions_service": _text("A service id or name."),
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIMIT_MAX,
                    "default": LIMIT_DEFAULT,
                    "description": "How many reviews to return.",
                },
            }
        ),
        output_schema=_self_contained(SCHEMAS["SearchResult"]),
        run=_search,
    ),
    Tool(
        name="get_reviews_since",
        title="Reviews since a date",
        description=(
            "Verified reviews dated on or after `date`, newest first: `count` is how "
            "many there are, `returned` how many are included (at most `limit`)."
        ),
        input_schema=_object(
            {
                "date": {
                    "type": "string",
                    "format": "date",
                    "description": "YYYY-MM-DD.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIMIT_MAX,
                    "default": LIMIT_DEFAULT,
                },
            },
            ("date",),
        ),
        output_schema=_self_contained(
            _object(
                {
                    "since": {"type": "string", "format": "date"},
                    "count": {"type": "integer", "minimum": 0},
                    "returned": {"type": "integer", "minimum": 0},
                    "reviews": _REVIEW_LIST,
                },
                ("since", "count", "returned", "reviews"),
            )
        ),
        run=_since,
    ),
    Tool(
        name="get_review",
        title="One review",
        description=(
            "One verified review by its id, with every field and its permalink "
            "(the URL of its page)."
        ),
        input_schema=_object({"id": _text("The review id.")}, ("id",)),
        output_schema=_self_contained(
            _with(
                SCHEMAS["Review"],
                permalink={
                    "type": "string",
                    "format": "uri",
                    "description": "The review's page.",
                },
            )
        ),
        run=_review,
    ),
)


INSIGHT_TOOLS = (
    Tool(
        name="get_insights",
        title="Insights",
        description=(
            "What the reviews say, derived from them: overall sentiment, sentiment "
            "per aspect (punctuality, pricing, workmanship...), technicians, "
            "services, places and problems mentioned, topics, the monthly trend, "
            "an FAQ and a summary. Give `group` to get one part only (the whole "
            "document includes an analysis of every review)."
        ),
        input_schema=_object(
            {
                "group": {
                    "enum": list(_INSIGHT_GROUPS),
                    "description": "One top-level group, e.g. aspects or entities.",
                }
            }
        ),
        output_schema=_self_contained(
            {k: v for k, v in _INSIGHTS.items() if k != "required"}
        ),
        run=_insights,
    ),
    Tool(
        name="get_aspect_sentiment",
        title="Sentiment about one aspect",
        description=(
            "How customers feel about one aspect of the work, by id or label "
            "(punctuality, pricing, communication, workmanship, cleanliness, "
            "professionalism, scheduling, technical_knowledge, ...): mentions, "
            "positive/neutral/negative counts, score, phrases and example reviews."
        ),
        input_schema=_object({"aspect": _text("An aspect id or label.")}, ("aspect",)),
        output_schema=_self_contained(_insight("aspects", "items")),
        run=_aspect,
    ),
    Tool(
        name="get_technician",
        title="One technician",
        description=(
            "What reviews say about one technician, by full name or alias (any "
            "case): mentions, average rating and sentiment of those reviews, "
            "examples."
        ),
        input_schema=_object({"name": _text("A name or alias.")}, ("name",)),
        output_schema=_self_contained(
            _with(_insight("entities", "technicians", "items"), aliases=_STRINGS)
        ),
        run=_technician,
    ),
    Tool(
        name="get_service",
        title="One service",
        description=(
            "What reviews say about one service, by id (as search's "
            "mentions_service takes) or name: mentions, average rating, "
            "sentiment, examples."
        ),
        input_schema=_object({"id": _text("A service id or name.")}, ("id",)),
        output_schema=_self_contained(
            _with(_insight("entities", "services", "items"), keywords=_STRINGS)
        ),
        run=_service,
    ),
    Tool(
        name="get_service_area",
        title="One service area",
        description=(
            "Whether the business serves a place, and what reviews from there say: "
            "mentions, average rating, sentiment, examples."
        ),
        input_schema=_object({"name": _text("A town or area name.")}, ("name",)),
        output_schema=_self_contained(_insight("entities", "service_areas", "items")),
        run=_service_area,
    ),
    Tool(
        name="get_faq",
        title="Frequently asked questions",
        description=(
            "Questions prospective customers ask, each answered from the reviews "
            "with figures."
        ),
        input_schema=_object({}),
        output_schema=_self_contained(_object({"faq": _insight("faq")}, ("faq",))),
        run=_faq,
    ),
)

TOOLS = CORE_TOOLS + INSIGHT_TOOLS


class ToolRegistry(Protocol):
    """What the C{/mcp} resource needs of the tools: L{Tools}, or a wrapper."""

    @property
    def listing(self) -> bytes: ...

    @property
    def source(self) -> SnapshotSource: ...

    def title(self) -> str: ...

    def instructions(self) -> str: ...

    def call(self, name: str, arguments: Any) -> bytes: ...


class Tools:
    """The registry: the listing, and calls answered from the current snapshot."""

    def __init__(self, source: SnapshotSource, tools: tuple[Tool, ...] = TOOLS) -> None:
        self.source = source
        self._source = source
        self._tools = {tool.name: tool for tool in tools}
        self.listing = to_json([tool.describe() for tool in tools])

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def title(self) -> str:
        return f"{self._source.snapshot.dataset.business.name} reviews"

    def instructions(self) -> str:
        dataset = self._source.snapshot.dataset
        names = ", ".join(self._tools)
        return (
            f"Read-only data about {dataset.business.name}: its business details and "
            f"{len(dataset.reviews)} verified customer reviews, searchable by rating, "
            "date, text, technician and service, and insights derived from them. "
            "Use get_business for who they are and their rating, search_reviews to "
            "find reviews (it returns the total `matched` and the newest matches), "
            "get_reviews_since for what is new, get_insights and get_aspect_sentiment "
            "for what customers think, get_technician, get_service and "
            "get_service_area for the people, work and places they mention. "
            f"Tools: {names}. Quote reviews faithfully; they are customers' words."
        )

    def call(self, name: str, arguments: Any) -> bytes:
        """The C{CallToolResult} as JSON bytes."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolCallError(
                f"Unknown tool: {name}. Tools: {', '.join(self._tools)}."
            )
        if not isinstance(arguments, dict):
            raise ToolCallError("Invalid arguments: arguments must be an object.")
        try:
            checked = check_arguments(tool.input_schema, arguments)
        except InvalidParameters as e:
            raise _invalid(e) from None
        try:
            payload = tool.run(self._source.snapshot, checked)
        except NotFound as e:
            return b'{"content":[{"type":"text","text":%s}],"isError":true}' % to_json(
                str(e)
            )
        # the same JSON twice: structured, and as text for clients without it
        return (
            b'{"content":[{"type":"text","text":%s}],"structuredContent":%s,"isError":false}'
            % (
                json.dumps(payload.decode("utf-8"), ensure_ascii=False).encode("utf-8"),
                payload,
            )
        )
