"""
The OpenAPI description: a valid 3.1 document, whose schemas the real answers
satisfy, and which a fuzzer can drive against the live daemon.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from treq import content
from treq.testing import RequestTraversalAgent
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.utils import getProcessOutputAndValue
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.links import HUB_PATH, MCP_PATH
from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.openapi import (
    CALLBACK_MAX_LENGTH,
    CALLBACK_PATTERN,
    LEASE_MAX,
    MCP_PROTOCOL_VERSIONS,
    SECRET_MAX_BYTES,
)
from reviewsd.mcp.tools import ToolCallError, Tools
from reviewsd.mcp.transport import SUPPORTED, MCPResource, Sessions
from reviewsd.web.site import ReviewsChannel, make_site
from reviewsd.websub.requests import (
    MAX_SECRET,
    MAX_URL,
    BadHubRequest,
    check_callback,
    parse_hub_request,
)
from tests.support import BASE, Holder, snapshot_of
from tests.support.daemon import DaemonTestCase, environment, free_port

SNAPSHOT = snapshot_of(DEMO_DATA)
DOCUMENT = json.loads(SNAPSHOT.documents["/.well-known/openapi.json"].identity.body)
HOOKS = Path(__file__).parent / "schemathesis_hooks.py"


def validator(schema_name: str) -> Draft202012Validator:
    """A validator for one component schema, resolving $refs in the document."""
    return validator_at(f"/components/schemas/{schema_name}")


def validator_at(pointer: str) -> Draft202012Validator:
    """A validator for the schema at C{pointer} in the document."""
    registry = Registry().with_resource(
        "urn:openapi", Resource(contents=DOCUMENT, specification=DRAFT202012)
    )
    return Draft202012Validator({"$ref": f"urn:openapi#{pointer}"}, registry=registry)


def errors(validator: Draft202012Validator, value: Any) -> list[str]:
    return [e.message for e in validator.iter_errors(value)]


class OpenAPIDocumentTests(SynchronousTestCase):
    def test_valid_openapi_31(self) -> None:
        validate(DOCUMENT)
        self.assertEqual(DOCUMENT["openapi"], "3.1.0")
        self.assertEqual(DOCUMENT["info"]["version"], "1.0.0")
        self.assertEqual(DOCUMENT["servers"], [{"url": BASE}])

    def test_every_endpoint_described(self) -> None:
        operations = {
            (path, method)
            for path, item in DOCUMENT["paths"].items()
            for method in item
        }
        for expected in [
            ("/reviews.json", "get"),
            ("/insights.json", "get"),
            ("/llms.txt", "get"),
            ("/api/feed.json", "get"),
            ("/feed.xml", "get"),
            ("/api/reviews/search", "get"),
            ("/api/reviews/since/{date}", "get"),
            ("/mcp", "post"),
            ("/mcp", "delete"),
            ("/api/websub/hub", "post"),
            ("/api/reviews/{id}", "get"),
            ("/reviews/{id}", "get"),
            ("/robots.txt", "get"),
            ("/sitemap.xml", "get"),
        ]:
            self.assertIn(expected, operations)
        search = DOCUMENT["paths"]["/api/reviews/search"]["get"]
        self.assertEqual(
            {p["name"] for p in search["parameters"] if p["in"] == "query"},
            {
                "rating",
                "min_rating",
                "since",
                "until",
                "query",
                "mentions_technician",
                "mentions_service",
                "limit",
            },
        )
        self.assertEqual(
            {p["name"] for p in search["parameters"] if p["in"] == "header"},
            {"If-None-Match", "If-Modified-Since"},
        )

    def test_limits_described(self) -> None:
        """The request limits the description states are the server's."""
        self.assertEqual(
            (
                ReviewsChannel.MAX_LENGTH,
                ReviewsChannel.totalHeadersSize,
                ReviewsChannel.maxHeaders,
            ),
            (16 * 1024, 16 * 1024, 500),
        )
        description = DOCUMENT["info"]["description"]
        self.assertIn("request line over 16 KiB is a 414", description)
        self.assertIn("more than 500 headers a 431", description)

    def get(self, path: str) -> tuple[int, Any]:
        agent = RequestTraversalAgent(make_site(Holder(SNAPSHOT)).resource)
        response = self.successResultOf(agent.request(b"GET", (BASE + path).encode()))
        return response.code, json.loads(self.successResultOf(content(response)))

    def test_answers_match_their_schemas(self) -> None:
        for path, schema in [
            ("/reviews.json", "ReviewsDocument"),
            ("/api/feed.json", "JsonFeed"),
            ("/insights.json", "Insights"),
            ("/api/reviews/search?limit=100&min_rating=2", "SearchResult"),
            ("/api/reviews/since/2025-01-01", "SinceResult"),
            ("/api/reviews/search?rating=0&since=x", "ValidationError"),
            ("/api/reviews/since/2025-13-01", "ValidationError"),
            ("/nowhere", "Error"),
            (f"/api/reviews/{SNAPSHOT.dataset.reviews[0].id}", "Review"),
            ("/api/reviews/no-such-review", "Error"),
        ]:
            _, body = self.get(path)
            errors = [e.message for e in validator(schema).iter_errors(body)]
            self.assertEqual(errors, [], path)

    def test_schemas_can_fail(self) -> None:
        """The schemas are tight: a wrong field is caught."""
        _, body = self.get("/api/reviews/search?limit=1")
        body["reviews"][0]["rating"] = 6
        body["reviews"][0]["extra"] = True
        self.assertEqual(len(list(validator("SearchResult").iter_errors(body))), 2)


def _mcp_site() -> Any:
    holder = Holder(SNAPSHOT)
    mcp = MCPResource(Tools(holder), Sessions(Clock()), BASE)
    return make_site(holder, resources={MCP_PATH: mcp})


class MCPContractTests(SynchronousTestCase):
    """What C{/mcp} answers is what the description says it answers."""

    def setUp(self) -> None:
        self.agent = RequestTraversalAgent(_mcp_site().resource)

    def post(self, body: bytes, **headers: str) -> tuple[int, dict[str, str], Any]:
        sent = Headers(
            {
                "Content-Type": ["application/json"],
                "Accept": ["application/json, text/event-stream"],
            }
        )
        for name, value in headers.items():
            sent.setRawHeaders(name.replace("_", "-"), [value])
        response = self.successResultOf(
            self.agent.request(b"POST", (BASE + MCP_PATH).encode(), sent, _Body(body))
        )
        answer = self.successResultOf(content(response))
        session = response.headers.getRawHeaders("Mcp-Session-Id", [""])[0]
        return response.code, {"session": session}, json.loads(answer or b"null")

    def assert_described(self, code: int, body: Any) -> None:
        pointer = f"/paths/~1mcp/post/responses/{code}/content/application~1json/schema"
        self.assertEqual(errors(validator_at(pointer), body), [], (code, body))

    def test_answers_match_their_schemas(self) -> None:
        """Errors with a null id (no request read) included."""
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
        }
        code, headers, body = self.post(json.dumps(initialize).encode())
        self.assert_described(code, body)
        session = headers["session"]
        answers = [
            self.post(b"{not json"),
            self.post(b"[]"),
            self.post(b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}'),
            self.post(b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}'),
            self.post(
                b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}',
                Mcp_Session_Id="no-such-session",
            ),
            self.post(
                b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}',
                MCP_Protocol_Version="1999-01-01",
            ),
            self.post(
                b'{"jsonrpc": "2.0", "id": 5, "method": "nothing"}',
                Mcp_Session_Id=session,
            ),
            self.post(
                b'{"jsonrpc": "2.0", "id": 6, "method": "tools/list"}',
                Mcp_Session_Id=session,
            ),
        ]
        codes = [code for code, _, _ in answers]
        self.assertEqual(codes, [400, 400, 400, 400, 404, 400, 200, 200])
        self.assertIsNone(answers[0][2]["id"])
        for code, _, body in answers:
            self.assert_described(code, body)

    def test_protocol_versions(self) -> None:
        """The versions the description names are the ones the server speaks."""
        self.assertEqual(MCP_PROTOCOL_VERSIONS, SUPPORTED)


class _Body:
    """A request body for the in-memory agent."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = len(data)

    def startProducing(self, consumer: Any) -> Any:
        consumer.write(self.data)
        return defer.succeed(None)

    def stopProducing(self) -> None:
        pass

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass


_HUB_FORM = "/paths/~1api~1websub~1hub/post/requestBody/content/" + (
    "application~1x-www-form-urlencoded/schema"
)
TOPIC = SNAPSHOT.links.atom_feed


def hub_answer(form: dict[str, Any]) -> str | None:
    """Why the hub refuses C{form} as sent, or C{None} when it takes it."""
    body = urlencode({k: str(v) for k, v in form.items()}).encode()
    try:
        parse_hub_request(b"application/x-www-form-urlencoded", body, [TOPIC])
    except BadHubRequest as e:
        return e.reason
    return None


class HubContractTests(SynchronousTestCase):
    """The subscription form as described is the form the hub takes."""

    def setUp(self) -> None:
        self.form = validator_at(_HUB_FORM)

    def agree(self, form: dict[str, Any], valid: bool) -> None:
        self.assertEqual(errors(self.form, form) == [], valid, form)
        self.assertEqual(hub_answer(form) is None, valid, form)

    def test_lease_and_secret(self) -> None:
        """
        Bounds of the lease and the secret for a subscription; an
        unsubscription's lease and secret are ignored, so any will do.
        """
        subscribe = {
            "hub.mode": "subscribe",
            "hub.topic": TOPIC,
            "hub.callback": "https://subscriber.example/callback",
        }
        self.agree(subscribe, True)
        self.agree({**subscribe, "hub.lease_seconds": 1}, True)
        self.agree({**subscribe, "hub.lease_seconds": LEASE_MAX}, True)
        self.agree({**subscribe, "hub.lease_seconds": 0}, False)
        self.agree({**subscribe, "hub.lease_seconds": LEASE_MAX + 1}, False)
        self.agree({**subscribe, "hub.secret": "s" * SECRET_MAX_BYTES}, True)
        self.agree({**subscribe, "hub.secret": "s" * (SECRET_MAX_BYTES + 1)}, False)
        unsubscribe = {**subscribe, "hub.mode": "unsubscribe"}
        self.agree({**unsubscribe, "hub.lease_seconds": "-49851"}, True)
        self.agree({**unsubscribe, "hub.secret": "s" * 500}, True)
        self.assertEqual(SECRET_MAX_BYTES, MAX_SECRET - 1)
        self.assertEqual(CALLBACK_MAX_LENGTH, MAX_URL)

    def test_secret_counted_in_bytes(self) -> None:
        """
        WebSub says less than 200 bytes, and the hub counts bytes; JSON
        Schema counts characters, so the description says bytes in words.
        """
        secret = "\u00e9" * 100  # 100 characters, 200 bytes
        shapes = DOCUMENT["paths"][HUB_PATH]["post"]["requestBody"]["content"]
        (subscribe, _) = shapes["application/x-www-form-urlencoded"]["schema"]["oneOf"]
        described = subscribe["properties"]["hub.secret"]
        self.assertIn(
            f"At most {SECRET_MAX_BYTES} bytes in UTF-8", described["description"]
        )
        reason = hub_answer(
            {
                "hub.mode": "subscribe",
                "hub.topic": TOPIC,
                "hub.callback": "https://subscriber.example/",
                "hub.secret": secret,
            }
        )
        self.assertEqual(
            reason, f"hub.secret must be shorter than {MAX_SECRET} bytes, got 200."
        )

    def test_callbacks_the_pattern_admits(self) -> None:
        """Every callback the pattern admits, the hub takes (as a URL)."""
        pattern = re.compile(CALLBACK_PATTERN.removesuffix("$") + r"\Z")

        @settings(max_examples=300, derandomize=True, database=None, deadline=None)
        @given(st.from_regex(pattern, fullmatch=True))
        def taken(callback: str) -> None:
            if len(callback) <= CALLBACK_MAX_LENGTH:
                check_callback(callback)

        taken()
        for refused in [
            "https://",
            "https://-host/",
            "http://subscriber.example/",
            "https://subscriber.example:0/",
            "https://subscriber.example:65536/",
            "https://user@subscriber.example/",
            "https://subscriber.example/#part",
            "https://subscriber.example/a b",
            "https://subscriber.example/\\",
        ]:
            self.assertIsNone(pattern.match(refused), refused)
            self.assertRaises(BadHubRequest, check_callback, refused)


class WordingTests(SynchronousTestCase):
    def test_empty_query(self) -> None:
        """An empty query is worded alike over HTTP and over MCP."""
        agent = RequestTraversalAgent(make_site(Holder(SNAPSHOT)).resource)
        tools = Tools(Holder(SNAPSHOT))
        for value in ("", " "):
            url = f"{BASE}/api/reviews/search?{urlencode({'query': value})}"
            response = self.successResultOf(agent.request(b"GET", url.encode()))
            http = json.loads(self.successResultOf(content(response)))["issues"]
            error = self.assertRaises(
                ToolCallError, tools.call, "search_reviews", {"query": value}
            )
            self.assertEqual(error.data["issues"], http, repr(value))
            self.assertEqual(http[0]["message"], "query must not be empty")


class FuzzTests(DaemonTestCase):
    timeout = 240

    @defer.inlineCallbacks
    def test_schemathesis(self) -> Any:
        """
        Schemathesis generates requests from the description for every
        operation, POST and DELETE included, and checks every answer: status
        codes, content types, headers, bodies, rejection of invalid and
        acceptance of valid input. The hooks (L{tests.schemathesis_hooks})
        say what the description can only say in words, and keep the
        fuzzer's subscriptions off the network.
        """
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}", "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        env = environment()
        env["SCHEMATHESIS_HOOKS"] = str(HOOKS)
        report = Path(self.mktemp()).resolve()
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [
                "-c",
                "from schemathesis.cli import schemathesis; schemathesis()",
                "run",
                f"http://127.0.0.1:{port}/.well-known/openapi.json",
                "--checks",
                "all",
                "--max-examples",
                "10",
                "--seed",
                "20261121",
                "--workers",
                "1",
                # a legacy MCP session's event stream never ends; it is
                # tested in tests.test_mcp_features
                "--exclude-operation-id",
                "mcpSessionStream",
                "--no-color",
                "--report-dir",
                str(report),
            ],
            env=env,
            path=os.path.dirname(report),
        )
        output = (out + err).decode("utf-8", "replace")
        self.assertEqual(code, 0, output)
        self.assertIn("No issues found", output)
        # every operation but the one serving the description it loaded,
        # which schemathesis leaves out of a run from that URL, and a legacy
        # MCP session's endless event stream, left out above
        operations = sum(len(item) for item in DOCUMENT["paths"].values())
        self.assertIn(f"Tested: {operations - 2}", output)
