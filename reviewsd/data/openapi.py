"""
The OpenAPI 3.1 description of the service, served at
C{/.well-known/openapi.json}.

It is the contract clients and fuzzers test the live service against, so
every schema here is as tight as the answers really are.
"""

from __future__ import annotations

from typing import Any

from reviewsd import __version__
from reviewsd.data.documents import FEED_ITEMS, JSON_FEED_VERSION
from reviewsd.data.links import Links
from reviewsd.data.search import (
    LIMIT_DEFAULT,
    LIMIT_MAX,
    NAME_MAX_LENGTH,
    QUERY_MAX_LENGTH,
)

API_VERSION = "1.0.0"

JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


_URL = {"type": "string", "format": "uri"}
_PCT = {"type": ["number", "null"], "minimum": 0, "maximum": 100}
_SCORE = {"type": ["number", "null"], "minimum": -1, "maximum": 1}
_RATING = {"type": ["number", "null"], "minimum": 1, "maximum": 5}
_COUNT = {"type": "integer", "minimum": 0}
_IDS = {"type": "array", "items": {"type": "string"}, "maxItems": 5}
_STRINGS = {"type": "array", "items": {"type": "string"}}


def _figures(**extra: Any) -> dict[str, Any]:
    """The statistics insights give for a technician, service, place or topic."""
    properties = {
        "mention_count": _COUNT,
        "average_rating": _RATING,
        "sentiment_score": _SCORE,
        "positive_pct": _PCT,
        "example_review_ids": _IDS,
        **extra,
    }
    return {"type": "object", "required": list(properties), "properties": properties}


_LABEL = {"enum": ["positive", "neutral", "negative"]}


def _aspect_schema() -> dict[str, Any]:
    """One aspect of the taxonomy, with how the reviews judge it."""
    return {
        "type": "object",
        "required": [
            "id",
            "label",
            "mention_count",
            "positive_count",
            "neutral_count",
            "negative_count",
            "positive_pct",
            "score",
            "top_phrases",
            "example_review_ids",
        ],
        "properties": {
            "id": {"type": "string"},
            "label": {"type": "string"},
            "mention_count": _COUNT,
            "positive_count": _COUNT,
            "neutral_count": _COUNT,
            "negative_count": _COUNT,
            "positive_pct": _PCT,
            "score": _SCORE,
            "top_phrases": _STRINGS,
            "example_review_ids": _IDS,
        },
    }


def _per_review_schema() -> dict[str, Any]:
    """What insights say about one review."""
    return {
        "type": "object",
        "required": ["sentiment", "aspects", "mentions"],
        "properties": {
            "sentiment": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["score", "label"],
                        "properties": {"score": _SCORE, "label": _LABEL},
                    },
                    {"type": "null"},
                ]
            },
            "sentence_scores": {"type": "array", "items": _SCORE},
            "aspects": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "score", "label"],
                    "properties": {
                        "id": {"type": "string"},
                        "score": _SCORE,
                        "label": _LABEL,
                    },
                },
            },
            "topics": _STRINGS,
            "problems": _STRINGS,
            "mentions": {
                "type": "object",
                "required": ["technicians", "services", "areas"],
                "properties": {
                    "technicians": _STRINGS,
                    "services": _STRINGS,
                    "areas": _STRINGS,
                },
            },
        },
    }


def _entities_schema() -> dict[str, Any]:
    """The technicians, services, places and problems the reviews mention."""
    return {
        "type": "object",
        "required": ["technicians", "services", "problems", "service_areas"],
        "properties": {
            "technicians": {
                "type": "array",
                "items": _figures(name={"type": "string"}),
            },
            "services": {
                "type": "array",
                "items": _figures(
                    id={
                        "type": "string",
                        "description": "What mentions_service takes.",
                    },
                    name={"type": "string"},
                ),
            },
            "service_areas": {
                "type": "array",
                "items": _figures(name={"type": "string"}),
            },
            "problems": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "label", "mention_count", "top_phrases"],
                    "properties": {
                        "id": {"type": "string"},
                        "label": {"type": "string"},
                        "mention_count": _COUNT,
                        "top_phrases": _STRINGS,
                        "example_review_ids": _IDS,
                    },
                },
            },
        },
    }


def _temporal_schema() -> dict[str, Any]:
    """Month by month figures and the trend they make."""
    month = {
        "type": "object",
        "required": ["month", "review_count", "average_rating", "sentiment_score"],
        "properties": {
            "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
            "review_count": _COUNT,
            "average_rating": _RATING,
            "sentiment_score": _SCORE,
        },
    }
    return {
        "type": "object",
        "required": ["monthly", "trend"],
        "properties": {
            "monthly": {"type": "array", "items": month},
            "trend": {"enum": ["improving", "stable", "declining"]},
            "trend_rule": {"type": "string"},
            "trend_basis": {"type": ["object", "null"]},
        },
    }


def _overall_schemas() -> dict[str, Any]:
    """The insights' first groups: what was derived, from what, and overall."""
    nullable_date = {"type": ["string", "null"], "format": "date"}
    return {
        "version": {"type": "integer"},
        "generated_at": {"type": "string", "format": "date-time"},
        "model": {"type": "string"},
        "method": {"type": "object"},
        "review_count": _COUNT,
        "date_range": {
            "type": "object",
            "required": ["earliest", "latest"],
            "properties": {"earliest": nullable_date, "latest": nullable_date},
        },
        "overall_sentiment": {
            "type": "object",
            "required": ["score", "positive_pct", "neutral_pct", "negative_pct"],
            "properties": {
                "score": _SCORE,
                "positive_pct": _PCT,
                "neutral_pct": _PCT,
                "negative_pct": _PCT,
                "scored_review_count": _COUNT,
            },
        },
    }


def _insights_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": (
            "What the reviews say, derived by reviewsd itself (lexicon "
            "sentiment, an aspect taxonomy, entity matching); groups the "
            "operator supplied in the data directory replace derived ones."
        ),
        "required": [
            "version",
            "generated_at",
            "model",
            "review_count",
            "date_range",
            "overall_sentiment",
            "aspects",
            "entities",
            "topics",
            "temporal",
            "per_review",
            "faq",
            "summary",
            "pull_quote",
        ],
        "properties": {
            **_overall_schemas(),
            "aspects": {"type": "array", "items": _aspect_schema()},
            "entities": _entities_schema(),
            "topics": {
                "type": "array",
                "items": _figures(id={"type": "string"}, label={"type": "string"}),
            },
            "temporal": _temporal_schema(),
            "per_review": {
                "type": "object",
                "description": "For every published review id.",
                "additionalProperties": _per_review_schema(),
            },
            "faq": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["question", "answer"],
                    "properties": {
                        "question": {"type": "string"},
                        "answer": {"type": "string"},
                    },
                },
            },
            "summary": {"type": ["string", "null"]},
            "pull_quote": {"type": ["string", "null"]},
            "pull_quote_review_id": {"type": ["string", "null"]},
        },
    }


def _rpc_request_schema() -> dict[str, Any]:
    """
    What C{/mcp} takes: a JSON-RPC 2.0 request or notification, or a
    response to the server. Only the envelope is checked at the HTTP level;
    a method's params are checked by the method, and its complaints come back
    as JSON-RPC errors in a 200 answer.
    """
    rpc_id = {"type": ["integer", "string"]}
    return {
        "oneOf": [
            {
                "type": "object",
                "description": (
                    "A request (with id) or a notification (without): at "
                    "2026-07-28 with params._meta and no session; in a legacy "
                    "session, initialize is the one request needing none."
                ),
                "required": ["jsonrpc", "method"],
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "id": rpc_id,
                    "method": {"type": "string", "examples": ["tools/list"]},
                    "params": {"description": "Checked by the method."},
                },
            },
            {
                "type": "object",
                "description": "A response to the server: accepted and ignored.",
                "required": ["jsonrpc", "id"],
                "anyOf": [{"required": ["result"]}, {"required": ["error"]}],
                "not": {"required": ["method"]},
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "id": rpc_id,
                    "result": {},
                    "error": {},
                },
            },
        ]
    }


def _rpc_response_schema() -> dict[str, Any]:
    """What C{/mcp} answers: a result, or an error."""
    return {
        "type": "object",
        "required": ["jsonrpc", "id"],
        "additionalProperties": False,
        "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {
                "type": ["integer", "string", "null"],
                "description": (
                    "The request's id; null when the request could not be read "
                    "far enough to know it (JSON-RPC 2.0, section 5)."
                ),
            },
            "result": {"type": "object"},
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "additionalProperties": False,
                "properties": {
                    "code": {"type": "integer"},
                    "message": {"type": "string"},
                    "data": {},
                },
            },
        },
    }


_NULLABLE_URL = {"type": ["string", "null"], "format": "uri"}
_DATE = {"type": "string", "format": "date"}
_NON_BLANK = "\\S"

SCHEMAS: dict[str, Any] = {
    "OwnerReply": {
        "type": "object",
        "required": ["text", "date"],
        "additionalProperties": False,
        "properties": {"text": {"type": "string"}, "date": _DATE},
    },
    "Review": {
        "type": "object",
        "description": "A verified customer review; every field is always present.",
        "required": [
            "id",
            "author",
            "author_avatar_url",
            "rating",
            "date",
            "text",
            "source",
            "source_url",
            "owner_reply",
            "verified",
        ],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "Stable id."},
            "author": {"type": "string"},
            "author_avatar_url": _NULLABLE_URL,
            "rating": {"type": "integer", "minimum": 1, "maximum": 5},
            "date": _DATE,
            "text": {
                "type": ["string", "null"],
                "description": "Null for rating-only reviews.",
            },
            "source": {"type": "string", "examples": ["google"]},
            "source_url": _NULLABLE_URL,
            "owner_reply": {"oneOf": [_ref("OwnerReply"), {"type": "null"}]},
            "verified": {"const": True},
        },
    },
    "Service": {
        "type": "object",
        "required": ["id", "name", "keywords"],
        "properties": {
            "id": {
                "type": "string",
                "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$",
                "description": "What mentions_service takes.",
            },
            "name": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Technician": {
        "type": "object",
        "required": ["name", "aliases"],
        "properties": {
            "name": {"type": "string"},
            "aliases": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Business": {
        "type": "object",
        "description": (
            "The business's public metadata as the operator published it; "
            "keys beyond these may appear."
        ),
        "required": ["name", "categories", "service_areas", "services", "technicians"],
        "additionalProperties": True,
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "description": {"type": ["string", "null"]},
            "url": _NULLABLE_URL,
            "telephone": {"type": ["string", "null"]},
            "email": {"type": ["string", "null"]},
            "address": {"type": ["object", "string", "null"]},
            "geo": {
                "type": ["object", "null"],
                "properties": {
                    "latitude": {"type": "number", "minimum": -90, "maximum": 90},
                    "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                },
            },
            "hours": {"type": ["object", "string", "array", "null"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "service_areas": {"type": "array", "items": {"type": "string"}},
            "services": {"type": "array", "items": _ref("Service")},
            "technicians": {"type": "array", "items": _ref("Technician")},
        },
    },
    "AggregateRating": {
        "type": "object",
        "required": [
            "rating_value",
            "review_count",
            "best_rating",
            "worst_rating",
            "distribution",
        ],
        "additionalProperties": False,
        "properties": {
            "rating_value": {
                "type": ["number", "null"],
                "minimum": 1,
                "maximum": 5,
                "description": "Mean rating, 2 decimals; null with no reviews.",
            },
            "review_count": {"type": "integer", "minimum": 0},
            "best_rating": {"const": 5},
            "worst_rating": {"const": 1},
            "distribution": {
                "type": "object",
                "required": ["1", "2", "3", "4", "5"],
                "additionalProperties": False,
                "properties": {
                    str(n): {"type": "integer", "minimum": 0} for n in range(1, 6)
                },
            },
        },
    },
    "ReviewsDocument": {
        "type": "object",
        "required": ["business", "aggregate_rating", "reviews"],
        "additionalProperties": False,
        "properties": {
            "business": _ref("Business"),
            "aggregate_rating": _ref("AggregateRating"),
            "reviews": {
                "type": "array",
                "items": _ref("Review"),
                "description": "Newest first: date descending, then id descending.",
            },
        },
    },
    "SearchResult": {
        "type": "object",
        "required": ["matched", "returned", "reviews"],
        "additionalProperties": False,
        "properties": {
            "matched": {
                "type": "integer",
                "minimum": 0,
                "description": "All matches, before limit.",
            },
            "returned": {"type": "integer", "minimum": 0, "maximum": LIMIT_MAX},
            "reviews": {
                "type": "array",
                "items": _ref("Review"),
                "maxItems": LIMIT_MAX,
            },
        },
    },
    "SinceResult": {
        "type": "object",
        "required": ["since", "count", "reviews"],
        "additionalProperties": False,
        "properties": {
            "since": _DATE,
            "count": {"type": "integer", "minimum": 0},
            "reviews": {"type": "array", "items": _ref("Review")},
        },
    },
    "JsonFeedAuthor": {
        "type": "object",
        "minProperties": 1,
        "properties": {"name": {"type": "string"}, "url": _URL, "avatar": _URL},
    },
    "JsonFeedItem": {
        "type": "object",
        "required": [
            "id",
            "url",
            "content_text",
            "date_published",
            "authors",
            "_review",
        ],
        "properties": {
            "id": {"type": "string", "description": "The review id."},
            "url": {**_URL, "description": "The review's page: its permalink."},
            "external_url": {
                **_URL,
                "description": "The original review on its platform, when known.",
            },
            "title": {"type": "string"},
            "content_text": {"type": "string"},
            "date_published": {"type": "string", "format": "date-time"},
            "date_modified": {"type": "string", "format": "date-time"},
            "authors": {"type": "array", "items": _ref("JsonFeedAuthor")},
            "_review": _ref("Review"),
        },
    },
    "JsonFeed": {
        "type": "object",
        "description": f"JSON Feed 1.1 of the {FEED_ITEMS} newest reviews.",
        "required": ["version", "title", "home_page_url", "feed_url", "hubs", "items"],
        "properties": {
            "version": {"const": JSON_FEED_VERSION},
            "title": {"type": "string"},
            "home_page_url": _URL,
            "feed_url": _URL,
            "description": {"type": "string"},
            "authors": {"type": "array", "items": _ref("JsonFeedAuthor")},
            "hubs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["type", "url"],
                    "properties": {"type": {"const": "WebSub"}, "url": _URL},
                },
            },
            "items": {
                "type": "array",
                "maxItems": FEED_ITEMS,
                "items": _ref("JsonFeedItem"),
            },
        },
    },
    "Error": {
        "type": "object",
        "required": ["error", "message"],
        "properties": {
            "error": {
                "type": "string",
                "description": "Machine-readable code, e.g. not_found.",
            },
            "message": {"type": "string", "description": "What is wrong, for people."},
        },
    },
    "Issue": {
        "type": "object",
        "required": ["path", "code", "message"],
        "properties": {
            "path": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "The parameter at fault.",
            },
            "code": {
                "type": "string",
                "enum": [
                    "invalid_type",
                    "too_small",
                    "too_big",
                    "too_long",
                    "invalid_date",
                    "invalid_range",
                    "empty",
                    "repeated",
                    "invalid_encoding",
                ],
            },
            "message": {"type": "string"},
            "expected": {"type": "string"},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
        },
    },
    "ValidationError": {
        "allOf": [
            _ref("Error"),
            {
                "type": "object",
                "required": ["issues"],
                "properties": {
                    "error": {"const": "invalid_parameters"},
                    "issues": {"type": "array", "items": _ref("Issue"), "minItems": 1},
                },
            },
        ]
    },
    "Insights": _insights_schema(),
    "JsonRpcRequest": _rpc_request_schema(),
    "JsonRpcResponse": _rpc_response_schema(),
}

_VALIDATORS = {
    "ETag": {
        "description": "Strong validator: a hash of the exact bytes sent.",
        "schema": {"type": "string", "pattern": '^"[A-Za-z0-9_-]+"$'},
        "required": True,
    },
    "Last-Modified": {
        "description": "When this content last changed (an HTTP date).",
        "schema": {"type": "string"},
        "required": True,
    },
}

_NOT_MODIFIED = {
    "description": "Not modified: the validator matched.",
    "headers": _VALIDATORS,
}

_CONDITIONAL = [
    {
        "name": "If-None-Match",
        "in": "header",
        "required": False,
        "description": (
            "Entity tags the client holds (a list, `*`, weak comparison); "
            "a match answers 304."
        ),
        "schema": {"type": "string"},
    },
    {
        "name": "If-Modified-Since",
        "in": "header",
        "required": False,
        "description": "An HTTP date; ignored when If-None-Match is sent.",
        "schema": {"type": "string"},
    },
]


def _document_get(
    operation_id: str, summary: str, content: dict[str, Any]
) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "parameters": _CONDITIONAL,
            "responses": {
                "200": {
                    "description": summary,
                    "headers": _VALIDATORS,
                    "content": content,
                },
                "304": _NOT_MODIFIED,
            },
        }
    }


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


_INVALID = _json(
    _ref("ValidationError"), "Invalid parameters: one issue per bad parameter."
)

_RATE_LIMITED = {
    **_json(
        _ref("Error"),
        "rate_limited: this client asked for more search and since answers "
        "than its budget (a rate a second, and a burst); the body's "
        "retry_after repeats Retry-After.",
    ),
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before asking again.",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}


def _text_query(maximum: int) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": maximum,
        "pattern": _NON_BLANK,
    }


def _search_parameters() -> list[dict[str, Any]]:
    return [
        _query(
            "rating",
            {"type": "integer", "minimum": 1, "maximum": 5},
            "Exact star rating.",
        ),
        _query(
            "min_rating",
            {"type": "number", "minimum": 1, "maximum": 5},
            "Minimum star rating, inclusive.",
        ),
        _query("since", _DATE, "Only reviews on or after this date."),
        _query(
            "until",
            _DATE,
            "Only reviews on or before this date; since later than until is a 400.",
        ),
        _query(
            "query",
            _text_query(QUERY_MAX_LENGTH),
            "Case-insensitive substring of the review text (Unicode case "
            "folding); rating-only reviews never match.",
        ),
        _query(
            "mentions_technician",
            _text_query(NAME_MAX_LENGTH),
            "A technician's name or alias, any case: reviews that mention "
            "that technician by any of their names, as whole words.",
        ),
        _query(
            "mentions_service",
            _text_query(NAME_MAX_LENGTH),
            "A service id or name: reviews that mention the service's name or "
            "one of its keywords, as whole words.",
        ),
        _query(
            "limit",
            {
                "type": "integer",
                "minimum": 1,
                "maximum": LIMIT_MAX,
                "default": LIMIT_DEFAULT,
            },
            "How many reviews to return at most.",
        ),
    ]


def _search_path() -> dict[str, Any]:
    return {
        "get": {
            "operationId": "searchReviews",
            "summary": "Reviews matching every given filter, newest first.",
            "description": (
                "Filters combine with AND. Unknown parameters are ignored; "
                "a repeated or empty parameter is a 400."
            ),
            "parameters": [*_search_parameters(), *_CONDITIONAL],
            "responses": {
                "200": {
                    **_json(_ref("SearchResult"), "The matching reviews."),
                    "headers": _VALIDATORS,
                },
                "304": _NOT_MODIFIED,
                "400": _INVALID,
                "429": _RATE_LIMITED,
            },
        }
    }


def _since_path() -> dict[str, Any]:
    return {
        "get": {
            "operationId": "getReviewsSince",
            "summary": "Reviews dated on or after a date, newest first.",
            "parameters": [
                {
                    "name": "date",
                    "in": "path",
                    "required": True,
                    "schema": _DATE,
                    "description": "YYYY-MM-DD.",
                },
                *_CONDITIONAL,
            ],
            "responses": {
                "200": {
                    **_json(_ref("SinceResult"), "The reviews since the date."),
                    "headers": _VALIDATORS,
                },
                "304": _NOT_MODIFIED,
                "400": _INVALID,
                "429": _RATE_LIMITED,
            },
        }
    }


_REVIEW_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1},
    "description": (
        "A review id, percent-encoded (`/` as `%2F`). On `/api/reviews/`, the "
        "id `search` and ids beginning `since/` are those routes."
    ),
}
_HTML = "text/html; charset=utf-8"


def _review_path() -> dict[str, Any]:
    return {
        "get": {
            "operationId": "getReview",
            "summary": "One review's record, as every document has it.",
            "description": (
                "Its ETag is a hash of the record's bytes, so it changes only "
                "when the review does. The review's page is `/reviews/{id}`."
            ),
            "parameters": [_REVIEW_ID, *_CONDITIONAL],
            "responses": {
                "200": {
                    **_json(_ref("Review"), "The review."),
                    "headers": _VALIDATORS,
                },
                "304": _NOT_MODIFIED,
                "404": _json(_ref("Error"), "No published review has this id."),
            },
        }
    }


def _review_page_path() -> dict[str, Any]:
    return {
        "get": {
            "operationId": "getReviewPage",
            "summary": "One review's page: its permalink, for people.",
            "description": (
                "The rating, date, text, owner reply and source of the review, "
                "the business and its rating, and schema.org `Review` JSON-LD; "
                "the URL the feeds link each review to."
            ),
            "parameters": [_REVIEW_ID, *_CONDITIONAL],
            "responses": {
                "200": {
                    "description": "The review's page.",
                    "headers": _VALIDATORS,
                    "content": {_HTML: {"schema": {"type": "string"}}},
                },
                "304": _NOT_MODIFIED,
                "404": {
                    "description": "No published review has this id: a small page.",
                    "content": {_HTML: {"schema": {"type": "string"}}},
                },
            },
        }
    }


MCP_PROTOCOL_VERSIONS = (
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
)
"""
The MCP protocol versions C{/mcp} speaks, newest first: the stateless
2026-07-28, then those whose sessions C{initialize} opens.
"""


def _header(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _rpc(description: str) -> dict[str, Any]:
    return _json(_ref("JsonRpcResponse"), description)


def _mcp_parameters() -> list[dict[str, Any]]:
    return [
        _header(
            "Mcp-Session-Id",
            {"type": "string"},
            "Legacy revisions: the id `initialize` returned, which every later "
            "message carries (400 without, 404 for an unknown, ended or expired "
            "one). Ignored at 2026-07-28, which has no sessions.",
        ),
        _header(
            "MCP-Protocol-Version",
            {"enum": list(MCP_PROTOCOL_VERSIONS)},
            "At 2026-07-28, the revision `params._meta` names (400 and -32020 "
            "when they differ); in a legacy session, the revision `initialize` "
            "agreed. A revision not spoken is a 400 and -32022, listing those "
            "that are.",
        ),
        _header(
            "Mcp-Method",
            {"type": "string"},
            "At 2026-07-28, the request's method, exactly (400 and -32020 when "
            "missing or different).",
        ),
        _header(
            "Mcp-Name",
            {"type": "string"},
            "At 2026-07-28, the `params.name` of `tools/call` and `prompts/get`, "
            "the `params.uri` of `resources/read`; `=?base64?...?=` for a value "
            "that is not plain ASCII (400 and -32020 when missing or different).",
        ),
    ]


_EVENTS = {"text/event-stream": {"schema": {"type": "string"}}}
_SESSION_ID = {"type": "string", "pattern": "^[!-~]+$"}


def _mcp_post() -> dict[str, Any]:
    return {
        "operationId": "mcp",
        "summary": "Model Context Protocol server, streamable HTTP.",
        "description": (
            "JSON-RPC 2.0, one message per request, in either era. At 2026-07-28 "
            "every request is stateless: `params._meta` names the revision and "
            "the client's capabilities, the headers mirror the method and name, "
            "and `server/discover` tells what the server speaks. Legacy "
            "revisions open a session with `initialize`, whose answer's "
            "`Mcp-Session-Id` header every later message carries. Tools, "
            "resources (the business, the insights, the FAQ, each review), "
            "prompts and completion are served in both. `subscriptions/listen` "
            "answers with an event stream of change notifications. "
            "Notifications and responses are answered 202 with no body. A "
            "method's own errors (invalid params or tool arguments, an unknown "
            "resource, an unknown legacy method) are JSON-RPC errors in a 200 "
            "answer."
        ),
        "parameters": _mcp_parameters(),
        "requestBody": {
            "required": True,
            "content": {JSON: {"schema": _ref("JsonRpcRequest")}},
        },
        "responses": {
            "200": {
                "description": (
                    "The JSON-RPC response: a result or an error; for "
                    "`subscriptions/listen`, an event stream of notifications."
                ),
                "content": {
                    JSON: {"schema": _ref("JsonRpcResponse")},
                    **_EVENTS,
                },
                "headers": {
                    "Mcp-Session-Id": {
                        "description": "The new session, on the answer to "
                        "`initialize`.",
                        "schema": _SESSION_ID,
                    }
                },
            },
            "202": {"description": "A notification or response, accepted."},
            "400": _rpc(
                "Malformed JSON, not a JSON-RPC 2.0 message, a batch, a missing "
                "session id, an unsupported protocol version (-32022), headers "
                "that differ from the body (-32020), or a 2026-07-28 request "
                "without its `_meta` (-32602)."
            ),
            "403": _rpc("A foreign Origin."),
            "404": _rpc(
                "An unknown, ended or expired session; at 2026-07-28, a method "
                "that is not served (-32601)."
            ),
            "406": _rpc(
                "Accept does not allow both application/json and text/event-stream."
            ),
            "413": _rpc("The body is too large."),
            "415": _rpc("The body is not application/json."),
            "503": _rpc(
                "No event stream now: too many are open, or the server is "
                "stopping (Retry-After says when to try again)."
            ),
        },
    }


def _mcp_path() -> dict[str, Any]:
    session = {**_mcp_parameters()[0], "required": True}
    return {
        "post": _mcp_post(),
        "get": {
            "operationId": "mcpSessionStream",
            "summary": "A legacy MCP session's stream of notifications.",
            "description": (
                "Server-sent events: `notifications/resources/updated` for the "
                "resources the session subscribed to, and "
                "`notifications/resources/list_changed`, each at the reload that "
                "changes them. One stream per session (a new one replaces it); "
                "2026-07-28 has none: its clients use `subscriptions/listen`."
            ),
            "parameters": [{**session, "description": "The session."}],
            "responses": {
                "200": {"description": "The event stream.", "content": _EVENTS},
                "403": _rpc("A foreign Origin."),
                "404": _rpc("An unknown, ended or expired session."),
                "400": _rpc("No session id: there is no stream outside a session."),
                "406": _rpc("Accept does not allow text/event-stream."),
                "503": _rpc("Too many streams are open, or the server is stopping."),
            },
        },
        "delete": {
            "operationId": "mcpEndSession",
            "summary": "End a legacy MCP session.",
            "parameters": [{**session, "description": "The session to end."}],
            "responses": {
                "204": {"description": "The session is ended."},
                "400": _rpc("No Mcp-Session-Id header."),
                "403": _rpc("A foreign Origin."),
                "404": _rpc("An unknown, ended or expired session."),
            },
        },
    }


CALLBACK_MAX_LENGTH = 2048
SECRET_MAX_BYTES = 199
"""WebSub 5.1: C{hub.secret} MUST be less than 200 bytes."""
LEASE_MAX = 10**18 - 1

_DNS_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_H16 = "[0-9A-Fa-f]{1,4}"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_LS32 = rf"(?:{_H16}:{_H16}|{_OCTET}(?:\.{_OCTET}){{3}})"
_IPV6 = "|".join(
    # RFC 3986's IPv6address, one alternative per line of its grammar
    [
        rf"(?:{_H16}:){{6}}{_LS32}",
        rf"::(?:{_H16}:){{5}}{_LS32}",
        rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
        rf"(?:(?:{_H16}:)?{_H16})?::(?:{_H16}:){{3}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
        rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
        rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
        rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
    ]
)
_PORT = (
    "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}"
    "|655[0-2][0-9]|6553[0-5])"
)
CALLBACK_PATTERN = (
    "^https://"
    rf"(?:(?:{_DNS_LABEL}\.)*{_DNS_LABEL}\.?|\[(?:{_IPV6})\])"
    rf"(?::{_PORT})?"
    # then any visible ASCII but # and \
    r"""(?:[/?][!"$-\[\]-~]*)?$"""
)
"""
The callbacks the hub takes: absolute https URLs in visible ASCII, naming a
host (DNS labels, or an IPv6 literal) and a port other than 0, with no
user information or fragment. A name's limit of 253 characters is said in
words: a pattern counting it costs fuzzers minutes per example.
"""


def _hub_form(links: Links) -> dict[str, Any]:
    """
    A subscription request's form fields; the topics are this deployment's.
    An unsubscribe request's lease and secret are ignored (WebSub 5.1), so
    only a subscribe request constrains them.
    """
    common = {
        "hub.callback": {
            "type": "string",
            "maxLength": CALLBACK_MAX_LENGTH,
            "pattern": CALLBACK_PATTERN,
            "description": (
                "An absolute https URL, without user information or fragment, "
                "whose host name is at most 253 characters. On a daemon without "
                "--allow-private-callbacks, an IP literal in a refused class "
                "(loopback, private, link-local, ...) is a 400; a name is "
                "resolved and checked when the hub verifies."
            ),
        },
        "hub.topic": {"enum": [links.atom_feed, links.json_feed, links.reviews]},
    }
    required = ["hub.callback", "hub.mode", "hub.topic"]
    subscribe = {
        "type": "object",
        "required": required,
        "properties": {
            **common,
            "hub.mode": {"const": "subscribe"},
            "hub.lease_seconds": {
                "type": "integer",
                "minimum": 1,
                "maximum": LEASE_MAX,
                "description": "Asked for; the hub grants within its bounds.",
            },
            "hub.secret": {
                "type": "string",
                "maxLength": SECRET_MAX_BYTES,
                "description": (
                    f"At most {SECRET_MAX_BYTES} bytes in UTF-8 (WebSub 5.1: less "
                    "than 200 bytes), so fewer characters when some are not "
                    "ASCII: a longer secret is a 400. Empty means none."
                ),
            },
        },
    }
    unsubscribe = {
        "type": "object",
        "required": required,
        "properties": {
            **common,
            "hub.mode": {"const": "unsubscribe"},
            "hub.lease_seconds": {"type": "string", "description": "Ignored."},
            "hub.secret": {"type": "string", "description": "Ignored."},
        },
    }
    return {"oneOf": [subscribe, unsubscribe]}


def _plain(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }


def _hub_path(links: Links) -> dict[str, Any]:
    return {
        "post": {
            "operationId": "websubHub",
            "summary": "WebSub hub: subscribe or unsubscribe a callback.",
            "requestBody": {
                "required": True,
                "content": {
                    "application/x-www-form-urlencoded": {"schema": _hub_form(links)}
                },
            },
            "responses": {
                "202": {
                    "description": (
                        "Accepted; intent is verified afterwards by a GET to "
                        "the callback."
                    )
                },
                "400": _plain("Why the request was refused."),
                "403": _plain(
                    "The callback's server, or the hub in all, holds as many "
                    "subscriptions as it may."
                ),
                "413": _plain("The body is too large."),
                "415": _plain("Not application/x-www-form-urlencoded."),
                "503": _plain("The hub's store is unavailable; Retry-After says when."),
            },
        }
    }


def _paths(links: Links) -> dict[str, Any]:
    return {
        "/reviews.json": _document_get(
            "getReviews",
            "Business metadata, aggregate rating and every verified review.",
            {JSON: {"schema": _ref("ReviewsDocument")}},
        ),
        "/insights.json": _document_get(
            "getInsights",
            "Aspect sentiment, entities, topics, trend, FAQ and summary.",
            {JSON: {"schema": _ref("Insights")}},
        ),
        "/llms.txt": _document_get(
            "getLlmsTxt",
            "A plain-text overview for AI agents (llmstxt.org).",
            {"text/plain": {"schema": {"type": "string"}}},
        ),
        "/api/feed.json": _document_get(
            "getJsonFeed",
            f"JSON Feed 1.1 of the {FEED_ITEMS} newest reviews.",
            {JSON: {"schema": _ref("JsonFeed")}},
        ),
        "/feed.xml": _document_get(
            "getAtomFeed",
            f"Atom feed (RFC 4287) of the {FEED_ITEMS} newest reviews.",
            {"application/atom+xml": {"schema": {"type": "string"}}},
        ),
        "/api/reviews/search": _search_path(),
        "/api/reviews/since/{date}": _since_path(),
        "/api/reviews/{id}": _review_path(),
        "/reviews/{id}": _review_page_path(),
        "/mcp": _mcp_path(),
        "/api/websub/hub": _hub_path(links),
        "/.well-known/openapi.json": _document_get(
            "getOpenAPI",
            "This description.",
            {JSON: {"schema": {"type": "object"}}},
        ),
        "/robots.txt": _document_get(
            "getRobotsTxt",
            "Rules for crawlers, naming the sitemap.",
            {"text/plain": {"schema": {"type": "string"}}},
        ),
        "/sitemap.xml": _document_get(
            "getSitemap",
            "The sitemap (sitemaps.org 0.9) of the pages and every review's page, "
            "with lastmod; beyond 50,000 URLs, an index of /sitemap-1.xml, "
            "/sitemap-2.xml...",
            {"application/xml": {"schema": {"type": "string"}}},
        ),
    }


ANY_OPERATION = (
    "Answers any operation may give: a method a path does not take is a 405 "
    "with `Allow`, and `OPTIONS` on a GET path (a CORS preflight) a 204; a "
    "request line over 16 KiB is a 414 (`uri_too_long`), a header line over "
    "16 KiB, headers over 16 KiB in all or more than 500 headers a 431 "
    "(`headers_too_large`), and an HTTP/1.1 request without `Host` a 400 "
    "(`bad_request`). JSON and text answers of GET operations are gzipped "
    "for a client that accepts it, and carry `Vary: Accept-Encoding`."
)
"""What the HTTP layer answers for every path, said once for all of them."""


def openapi_document(links: Links) -> dict[str, Any]:
    """The description, with C{servers} naming this deployment's base URL."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Verified customer reviews",
            "version": API_VERSION,
            "summary": "One business's verified customer reviews as read-only data.",
            "description": (
                "A public, read-only service: the whole dataset, feeds, search, "
                "incremental sync, an MCP server and a WebSub hub. No "
                "authentication; an Authorization header is ignored. Errors are "
                "JSON objects with `error` and `message`.\n\n"
                f"{ANY_OPERATION} Served by reviewsd {__version__.public()}."
            ),
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": links.base}],
        "paths": _paths(links),
        "components": {"schemas": SCHEMAS},
    }
