"""
The MCP server, over in-memory HTTP: every transport and session rule, the
lifecycle, and each tool's answers against its own schemas.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from treq import content
from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.links import INSIGHTS_PATH
from reviewsd.mcp.tools import Tools
from reviewsd.mcp.transport import MCPResource, Sessions
from reviewsd.web.site import make_site
from tests.support import BASE, Holder
from tests.support.search import DEMO, search

ACCEPT = "application/json, text/event-stream"


class Reply:
    def __init__(self, response: Any, body: bytes) -> None:
        self.code, self.headers, self.body = response.code, response.headers, body

    def header(self, name: str) -> str | None:
        values = self.headers.getRawHeaders(name.encode("ascii"))
        return None if values is None else values[-1].decode("latin-1")

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class MCPTestCase(SynchronousTestCase):
    limit = 50
    origins: tuple[str, ...] = ("https://app.example",)

    def setUp(self) -> None:
        self.clock = Clock()
        self.sessions = Sessions(self.clock, idle=600, limit=self.limit)
        self.resource = MCPResource(
            Tools(Holder(DEMO)), self.sessions, BASE, self.origins
        )
        self.client = StubTreq(
            make_site(Holder(DEMO), None, {"/mcp": self.resource}).resource
        )
        self.ids = 0

    def http(self, method: str, body: Any = None, **headers: str) -> Reply:
        raw = (
            body
            if isinstance(body, bytes) or body is None
            else json.dumps(body).encode()
        )
        defaults = {"Accept": ACCEPT, "Content-Type": "application/json"}
        defaults.update({k.replace("_", "-"): v for k, v in headers.items()})
        response = self.successResultOf(
            self.client.request(
                method,
                "http://reviews.example.com/mcp",
                headers=Headers({k: [v] for k, v in defaults.items() if v is not None}),
                data=raw,
            )
        )
        return Reply(response, self.successResultOf(content(response)))

    def initialize(self, version: str = "2025-06-18") -> str:
        reply = self.http(
            "POST",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
        )
        self.assertEqual(reply.code, 200, reply.body)
        session = reply.header("Mcp-Session-Id")
        assert session is not None
        return session

    def rpc(
        self, session: str, method: str, params: Any = None, **headers: str
    ) -> Reply:
        self.ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            message["params"] = params
        return self.http("POST", message, Mcp_Session_Id=session, **headers)

    def call(self, session: str, name: str, arguments: Any) -> dict[str, Any]:
        reply = self.rpc(session, "tools/call", {"name": name, "arguments": arguments})
        self.assertEqual(reply.code, 200)
        return reply.json


class LifecycleTests(MCPTestCase):
    def test_initialize(self) -> None:
        reply = self.http(
            "POST",
            {
                "jsonrpc": "2.0",
                "id": "a",
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
            },
        )
        self.assertEqual(reply.header("Content-Type"), "application/json")
        session = reply.header("Mcp-Session-Id") or ""
        self.assertGreaterEqual(len(session), 40)
        self.assertTrue(all(0x21 <= ord(c) <= 0x7E for c in session))
        result = reply.json["result"]
        self.assertEqual(reply.json["id"], "a")
        self.assertEqual(result["protocolVersion"], "2025-06-18")
        self.assertEqual(result["capabilities"], {"tools": {"listChanged": False}})
        self.assertEqual(result["serverInfo"]["name"], "reviewsd")
        self.assertEqual(
            result["serverInfo"]["title"], "Thimbleberry Home Services reviews"
        )
        self.assertIn("Thimbleberry", result["instructions"])

    def test_version_negotiation(self) -> None:
        for asked, answered in [
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", "2024-11-05"),
            ("2025-11-25", "2025-06-18"),
            ("1999-01-01", "2025-06-18"),
        ]:
            reply = self.http(
                "POST",
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": asked, "capabilities": {}},
                },
            )
            self.assertEqual(reply.json["result"]["protocolVersion"], answered)

    def test_initialize_without_version(self) -> None:
        reply = self.http(
            "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        )
        self.assertEqual(reply.json["error"]["code"], -32602)

    def test_sessions_are_distinct(self) -> None:
        self.assertNotEqual(self.initialize(), self.initialize())

    def test_initialized_ping_and_unknown_methods(self) -> None:
        session = self.initialize()
        notified = self.http(
            "POST",
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            Mcp_Session_Id=session,
        )
        self.assertEqual((notified.code, notified.body), (202, b""))
        ping = self.rpc(session, "ping")
        self.assertEqual(ping.json, {"jsonrpc": "2.0", "id": self.ids, "result": {}})
        for method in ("resources/list", "prompts/list", "nonsense"):
            self.assertEqual(self.rpc(session, method).json["error"]["code"], -32601)

    def test_client_responses_are_accepted(self) -> None:
        session = self.initialize()
        reply = self.http(
            "POST", {"jsonrpc": "2.0", "id": 9, "result": {}}, Mcp_Session_Id=session
        )
        self.assertEqual((reply.code, reply.body), (202, b""))


class TransportTests(MCPTestCase):
    def test_accept_must_allow_json_and_event_stream(self) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        for accept in (
            "application/json",
            "text/event-stream",
            "text/html",
            None,
            "application/json, text/event-stream;q=0",
            "application/json;q=0, */*",
        ):
            reply = self.http("POST", message, Accept=accept)  # type: ignore[arg-type]
            self.assertEqual(reply.code, 406, accept)
            self.assertEqual(reply.json["error"]["code"], -32600)
        for accept in ("*/*", "application/*, text/*", ACCEPT):
            self.assertEqual(
                self.http("POST", message, Accept=accept).code, 200, accept
            )

    def test_content_type(self) -> None:
        reply = self.http("POST", b"{}", Content_Type="text/plain")
        self.assertEqual(reply.code, 415)

    def test_malformed_json(self) -> None:
        for body in (b"{", b"\xff\xfe", b"", b"[1,"):
            reply = self.http("POST", body)
            self.assertEqual(reply.code, 400, body)
            self.assertEqual(reply.json["error"]["code"], -32700)
            self.assertIsNone(reply.json["id"])

    def test_batch_refused(self) -> None:
        session = self.initialize()
        reply = self.http(
            "POST",
            [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
            Mcp_Session_Id=session,
        )
        self.assertEqual(reply.code, 400)
        self.assertEqual(reply.json["error"]["code"], -32600)

    def test_wrong_shapes(self) -> None:
        session = self.initialize()
        for message in (
            {"id": 1, "method": "ping"},
            {"jsonrpc": "1.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
            {"jsonrpc": "2.0", "id": True, "method": "ping"},
            {"jsonrpc": "2.0", "id": None, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1, "method": 7},
            {"jsonrpc": "2.0", "id": 1},
            "ping",
            17,
        ):
            reply = self.http("POST", message, Mcp_Session_Id=session)
            self.assertEqual(reply.code, 400, message)
            self.assertEqual(reply.json["error"]["code"], -32600, message)
        reply = self.rpc(session, "ping", [1, 2])
        self.assertEqual(reply.json["error"]["code"], -32602)

    def test_get_is_405(self) -> None:
        for method in ("GET", "HEAD"):
            reply = self.http(method)
            self.assertEqual(reply.code, 405)
            self.assertEqual(reply.header("Allow"), "POST, DELETE, OPTIONS")

    def test_protocol_version_header(self) -> None:
        session = self.initialize()
        self.assertEqual(
            self.rpc(session, "ping", MCP_Protocol_Version="2025-06-18").code, 200
        )
        self.assertEqual(
            self.rpc(session, "ping", MCP_Protocol_Version="2025-03-26").code, 200
        )
        reply = self.rpc(session, "ping", MCP_Protocol_Version="2099-01-01")
        self.assertEqual(reply.code, 400)
        self.assertIn("2025-06-18", reply.json["error"]["message"])

    def test_origin(self) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        for origin in (
            BASE,
            "http://localhost:6274",
            "http://127.0.0.1",
            "http://[::1]:3000",
            "https://app.example",
        ):
            reply = self.http("POST", message, Origin=origin)
            self.assertEqual(reply.code, 200, origin)
            self.assertEqual(reply.header("Access-Control-Allow-Origin"), origin)
        for origin in (
            "http://evil.example.com",
            "https://reviews.example.com.evil",
            "null",
        ):
            reply = self.http("POST", message, Origin=origin)
            self.assertEqual(reply.code, 403, origin)
            self.assertEqual(reply.json["error"]["code"], -32600)
        preflight = self.http("OPTIONS", Origin="https://app.example")
        self.assertEqual(preflight.code, 204)
        self.assertIn(
            "Mcp-Session-Id", preflight.header("Access-Control-Allow-Headers") or ""
        )
        self.assertEqual(
            self.http("OPTIONS", Origin="http://evil.example.com").code, 403
        )


class AnyOriginTests(MCPTestCase):
    origins = ("*",)

    def test_star_allows_every_origin(self) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        self.assertEqual(
            self.http("POST", message, Origin="http://evil.example.com").code, 200
        )


class SessionTests(MCPTestCase):
    limit = 3

    def test_missing_and_unknown_session(self) -> None:
        reply = self.http("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"})
        self.assertEqual(reply.code, 400)
        self.assertEqual(reply.json["id"], 4)
        self.assertIn("Mcp-Session-Id", reply.json["error"]["message"])
        reply = self.rpc("not-a-session", "ping")
        self.assertEqual(reply.code, 404)
        reply = self.http(
            "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        self.assertEqual(reply.code, 400)

    def test_delete_ends_the_session(self) -> None:
        session = self.initialize()
        self.assertEqual(self.http("DELETE", Mcp_Session_Id=session).code, 204)
        self.assertEqual(self.rpc(session, "ping").code, 404)
        self.assertEqual(self.http("DELETE", Mcp_Session_Id=session).code, 404)
        self.assertEqual(self.http("DELETE").code, 400)

    def test_idle_sessions_expire(self) -> None:
        session = self.initialize()
        self.clock.advance(500)
        self.assertEqual(self.rpc(session, "ping").code, 200)
        self.clock.advance(500)
        self.assertEqual(self.rpc(session, "ping").code, 200, "use keeps it alive")
        self.clock.advance(601)
        self.assertEqual(self.rpc(session, "ping").code, 404)

    def test_periodic_expiry_frees_memory(self) -> None:
        self.initialize()
        self.initialize()
        self.clock.advance(601)
        self.assertEqual(self.sessions.expire(), 2)
        self.assertEqual(len(self.sessions), 0)

    def test_number_of_sessions_is_capped(self) -> None:
        sessions = [self.initialize() for _ in range(4)]
        self.assertEqual(len(self.sessions), 3)
        self.assertEqual(self.rpc(sessions[0], "ping").code, 404, "the oldest goes")
        for session in sessions[1:]:
            self.assertEqual(self.rpc(session, "ping").code, 200)


class ToolTests(MCPTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.session = self.initialize()
        self.tools = {
            t["name"]: t
            for t in self.rpc(self.session, "tools/list").json["result"]["tools"]
        }

    def test_listing(self) -> None:
        self.assertLessEqual(
            {"get_business", "search_reviews", "get_reviews_since", "get_review"},
            set(self.tools),
        )
        for tool in self.tools.values():
            for key in ("title", "description", "inputSchema", "outputSchema"):
                self.assertTrue(tool[key], (tool["name"], key))
            self.assertEqual(tool["inputSchema"]["type"], "object")
            self.assertEqual(tool["outputSchema"]["type"], "object")
            self.assertIs(tool["annotations"]["readOnlyHint"], True)
            self.assertIs(tool["annotations"]["openWorldHint"], False)
            Draft202012Validator.check_schema(tool["outputSchema"])
        self.assertEqual(
            self.rpc(self.session, "tools/list", {"cursor": "x"}).json["error"]["code"],
            -32602,
        )

    def assert_conforms(self, name: str, answer: dict[str, Any]) -> dict[str, Any]:
        result = answer["result"]
        self.assertIs(result["isError"], False)
        structured = result["structuredContent"]
        self.assertEqual(json.loads(result["content"][0]["text"]), structured)
        self.assertEqual(result["content"][0]["type"], "text")
        errors = list(
            Draft202012Validator(self.tools[name]["outputSchema"]).iter_errors(
                structured
            )
        )
        self.assertEqual([e.message for e in errors], [])
        return structured

    def test_search_reviews_is_the_http_search(self) -> None:
        for arguments in (
            {},
            {"rating": 5, "limit": 3},
            {"min_rating": 2.5, "query": "late", "limit": 100},
            {"mentions_technician": "dev", "since": "2024-01-01"},
            {"mentions_service": "roofing", "until": "2025-01-01"},
        ):
            structured = self.assert_conforms(
                "search_reviews", self.call(self.session, "search_reviews", arguments)
            )
            self.assertEqual(structured, search(DEMO, **arguments))

    def test_other_tools(self) -> None:
        business = self.assert_conforms(
            "get_business", self.call(self.session, "get_business", {})
        )
        self.assertEqual(business["business"]["name"], "Thimbleberry Home Services")
        self.assertEqual(
            business["aggregate_rating"]["review_count"], len(DEMO.dataset.reviews)
        )
        since = self.assert_conforms(
            "get_reviews_since",
            self.call(
                self.session, "get_reviews_since", {"date": "2025-01-01", "limit": 5}
            ),
        )
        self.assertEqual(since["returned"], 5)
        self.assertEqual(
            since["count"], DEMO.since_count(__import__("datetime").date(2025, 1, 1))
        )
        newest = DEMO.dataset.reviews[0]
        review = self.assert_conforms(
            "get_review", self.call(self.session, "get_review", {"id": newest.id})
        )
        self.assertEqual(review, newest.as_record())

    def test_argument_errors_name_the_argument(self) -> None:
        for name, arguments, argument in (
            ("search_reviews", {"rating": 4.5}, "rating"),
            ("search_reviews", {"limit": 0}, "limit"),
            ("search_reviews", {"since": "2025-02-30"}, "since"),
            ("search_reviews", {"query": ""}, "query"),
            ("search_reviews", {"since": "2025-02-02", "until": "2025-01-01"}, "since"),
            ("get_reviews_since", {}, "date"),
            ("get_reviews_since", {"date": "yesterday"}, "date"),
            ("get_review", {}, "id"),
            ("get_review", {"id": 5}, "id"),
        ):
            error = self.call(self.session, name, arguments)["error"]
            self.assertEqual(error["code"], -32602, (name, arguments))
            self.assertIn(argument, error["message"])
        error = self.call(self.session, "search_reviews", [1])["error"]
        self.assertEqual(error["code"], -32602)
        error = self.call(self.session, "no_such_tool", {})["error"]
        self.assertEqual(error["code"], -32602)
        self.assertIn("search_reviews", error["message"])

    def test_nothing_found_is_an_error_result(self) -> None:
        result = self.call(self.session, "get_review", {"id": "nope"})["result"]
        self.assertIs(result["isError"], True)
        self.assertIn("search_reviews", result["content"][0]["text"])
        self.assertNotIn("structuredContent", result)


class InsightToolTests(ToolTests):
    def test_listing_has_every_tool(self) -> None:
        self.assertEqual(
            set(self.tools),
            {
                "get_business",
                "search_reviews",
                "get_reviews_since",
                "get_review",
                "get_insights",
                "get_aspect_sentiment",
                "get_technician",
                "get_service",
                "get_service_area",
                "get_faq",
            },
        )

    def test_insights(self) -> None:
        whole = self.assert_conforms(
            "get_insights", self.call(self.session, "get_insights", {})
        )
        published = json.loads(DEMO.documents[INSIGHTS_PATH].identity.body)
        self.assertEqual(whole, published)
        per_review = self.assert_conforms(
            "get_insights",
            self.call(self.session, "get_insights", {"group": "per_review"}),
        )
        self.assertEqual(per_review, {"per_review": published["per_review"]})
        aspects = self.assert_conforms(
            "get_insights",
            self.call(self.session, "get_insights", {"group": "aspects"}),
        )
        self.assertEqual(aspects, {"aspects": DEMO.insights["aspects"]})
        error = self.call(self.session, "get_insights", {"group": "nonsense"})["error"]
        self.assertEqual(error["code"], -32602)
        self.assertIn("group", error["message"])
        faq = self.assert_conforms("get_faq", self.call(self.session, "get_faq", {}))
        self.assertEqual(faq["faq"], DEMO.insights["faq"])

    def test_aspect_by_id_or_label(self) -> None:
        by_id = self.assert_conforms(
            "get_aspect_sentiment",
            self.call(self.session, "get_aspect_sentiment", {"aspect": "pricing"}),
        )
        self.assertEqual(by_id["id"], "pricing")
        label = by_id["label"]
        by_label = self.call(
            self.session, "get_aspect_sentiment", {"aspect": label.upper()}
        )
        self.assertEqual(by_label["result"]["structuredContent"], by_id)
        missing = self.call(self.session, "get_aspect_sentiment", {"aspect": "vibes"})[
            "result"
        ]
        self.assertIs(missing["isError"], True)
        self.assertIn("punctuality", missing["content"][0]["text"])

    def test_technician_by_alias(self) -> None:
        mike = self.assert_conforms(
            "get_technician",
            self.call(self.session, "get_technician", {"name": "mike"}),
        )
        self.assertEqual(mike["name"], "Michael Reyes")
        self.assertIn("Mike", mike["aliases"])
        self.assertEqual(
            mike["mention_count"],
            search(DEMO, mentions_technician="Michael Reyes")["matched"],
        )
        missing = self.call(self.session, "get_technician", {"name": "Devastated"})[
            "result"
        ]
        self.assertIs(missing["isError"], True)
        self.assertIn("Dev Patel", missing["content"][0]["text"])

    def test_service_by_id_or_name(self) -> None:
        for key in ("ac-repair", "heating & air conditioning"):
            service = self.assert_conforms(
                "get_service", self.call(self.session, "get_service", {"id": key})
            )
            self.assertEqual(service["id"], "ac-repair")
            self.assertIn("furnace", service["keywords"])
        self.assertEqual(
            service["mention_count"],
            search(DEMO, mentions_service="ac-repair")["matched"],
        )
        missing = self.call(self.session, "get_service", {"id": "pool-cleaning"})[
            "result"
        ]
        self.assertIs(missing["isError"], True)
        self.assertIn("roofing", missing["content"][0]["text"])

    def test_service_area(self) -> None:
        area = self.assert_conforms(
            "get_service_area",
            self.call(self.session, "get_service_area", {"name": "tigard"}),
        )
        self.assertEqual(area["name"], "Tigard")
        missing = self.call(self.session, "get_service_area", {"name": "Seattle"})[
            "result"
        ]
        self.assertIs(missing["isError"], True)
        self.assertIn("Beaverton", missing["content"][0]["text"])

    def test_required_arguments(self) -> None:
        for name, argument in (
            ("get_aspect_sentiment", "aspect"),
            ("get_technician", "name"),
            ("get_service", "id"),
            ("get_service_area", "name"),
        ):
            error = self.call(self.session, name, {})["error"]
            self.assertEqual(error["code"], -32602)
            self.assertIn(argument, error["message"])
