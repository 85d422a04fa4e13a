"""
The MCP server, over in-memory HTTP: every transport and session rule, the
lifecycle, and each tool's answers against its own schemas.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from treq import content
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.logger import formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.links import HUB_PATH, INSIGHTS_PATH
from reviewsd.logs import CLIENT_TEXT_MAX, event_as_json, text_observer
from reviewsd.mcp.sessions import LIFETIME, SessionKeyError, load_key
from reviewsd.mcp.tools import ToolCallError, Tools
from reviewsd.mcp.transport import LATEST, SUPPORTED, Sessions
from tests.support import BASE, Holder
from tests.support.daemon import DaemonTestCase, free_port
from tests.support.mcp_http import ACCEPT, MCPTestCase
from tests.support.search import DEMO, search
from tests.support.site import INITIALIZE, Answer, Connection, SiteTestCase


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
        self.assertEqual(
            result["capabilities"],
            {
                "tools": {"listChanged": False},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": False},
                "completions": {},
            },
        )
        self.assertNotIn("resultType", result)
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
            ("2025-11-25", "2025-11-25"),
            ("2026-07-28", "2025-11-25"),
            ("1999-01-01", "2025-11-25"),
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
        for method in ("nonsense", "logging/setLevel", "server/discover"):
            reply = self.rpc(session, method)
            self.assertEqual((reply.code, reply.json["error"]["code"]), (200, -32601))
            self.assertEqual(reply.json["id"], self.ids)

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

    def test_get_needs_a_session(self) -> None:
        """GET opens a legacy session's stream: 400 without; HEAD never does."""
        reply = self.http("GET")
        self.assertEqual((reply.code, reply.json["error"]["code"]), (400, -32600))
        self.assertIn("Mcp-Session-Id", reply.json["error"]["message"])
        self.assertEqual(self.http("GET", Mcp_Session_Id="s1.forged.x").code, 404)
        session = self.initialize()
        reply = self.http("GET", Mcp_Session_Id=session, Accept="application/json")
        self.assertEqual(reply.code, 406)
        reply = self.http("HEAD")
        self.assertEqual(reply.code, 405)
        self.assertEqual(reply.header("Allow"), "GET, POST, DELETE, OPTIONS")

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
        self.assertEqual(reply.json["id"], self.ids)
        self.assertEqual(reply.json["error"]["code"], -32022)
        self.assertEqual(
            reply.json["error"]["data"],
            {"supported": list(SUPPORTED), "requested": "2099-01-01"},
        )

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

    def test_sessions_live_in_their_ids(self) -> None:
        """
        Any instance with the key verifies a session: a restarted daemon, or
        another behind the same load balancer. Another key, a changed byte
        or an expired id is a 404.
        """
        session = self.initialize("2025-03-26")
        elsewhere = Sessions(Clock(), key=self.key)
        found = elsewhere.get(session)
        assert found is not None
        self.assertEqual((found.protocol_version, found.client), ("2025-03-26", "test"))
        self.assertIsNone(
            Sessions(Clock(), key=b"another key, not shared").get(session)
        )
        tampered = session[:-3] + ("AAA" if session[-3:] != "AAA" else "BBB")
        self.assertEqual(self.rpc(tampered, "ping").code, 404)
        self.assertEqual(self.rpc("s1." + session[3:].upper(), "ping").code, 404)
        self.clock.advance(LIFETIME - 1)
        self.assertEqual(self.rpc(session, "ping").code, 200)
        self.clock.advance(2)
        self.assertEqual(self.rpc(session, "ping").code, 404, "expired")

    def test_periodic_expiry_frees_memory(self) -> None:
        """Idle sessions stop counting as open; their ids stay valid."""
        first, _ = self.initialize(), self.initialize()
        self.assertEqual(len(self.sessions), 2)
        self.clock.advance(601)
        self.assertEqual(self.sessions.expire(), 2)
        self.assertEqual(len(self.sessions), 0)
        self.assertEqual(self.rpc(first, "ping").code, 200)
        self.assertEqual(len(self.sessions), 1)

    def test_memory_is_capped(self) -> None:
        """Past the limit the oldest session leaves memory, not validity."""
        sessions = [self.initialize() for _ in range(4)]
        self.assertEqual(len(self.sessions), 3)
        for session in sessions:
            self.assertEqual(self.rpc(session, "ping").code, 200)
        for session in sessions:
            self.assertEqual(self.http("DELETE", Mcp_Session_Id=session).code, 204)
            self.assertEqual(self.rpc(session, "ping").code, 404)


class SessionKeyTests(SynchronousTestCase):
    def test_made_once_then_kept(self) -> None:
        path = Path(self.mktemp())
        path.parent.mkdir(parents=True, exist_ok=True)
        key = load_key(path, create=True)
        self.assertEqual(len(key), 64)
        self.assertEqual(path.stat().st_mode & 0o777, 0o600)
        self.assertEqual(load_key(path, create=True), key)
        self.assertEqual(load_key(path), key)
        self.assertEqual(list(path.parent.iterdir()), [path])

    def test_short_or_missing_keys_are_refused(self) -> None:
        path = Path(self.mktemp())
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.assertRaises(SessionKeyError) as missing:
            load_key(path)
        self.assertIn(str(path), str(missing.exception))
        path.write_text("  short  \n")
        with self.assertRaises(SessionKeyError) as short:
            load_key(path)
        self.assertIn("at least 16", str(short.exception))
        path.write_text("x" * 16)
        self.assertEqual(load_key(path), b"x" * 16)


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
        self.assertEqual(
            review,
            {**newest.as_record(), "permalink": DEMO.links.review_page(newest.id)},
        )

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


class ArgumentTypeTests(MCPTestCase):
    """Arguments are held to each tool's published input schema, exactly."""

    def setUp(self) -> None:
        super().setUp()
        self.session = self.initialize()

    def test_numbers_as_json_schema_reads_them(self) -> None:
        """C{"3"} is no integer; C{5.0} is one, and answers as C{5} does."""
        for name, arguments, argument in (
            ("search_reviews", {"rating": "3"}, "rating"),
            ("search_reviews", {"limit": "3"}, "limit"),
            ("search_reviews", {"min_rating": "2.5"}, "min_rating"),
            ("search_reviews", {"rating": True}, "rating"),
            ("search_reviews", {"rating": None}, "rating"),
            ("get_reviews_since", {"date": "2025-01-01", "limit": "3"}, "limit"),
            ("get_reviews_since", {"date": "2025-01-01", "limit": 2.5}, "limit"),
        ):
            error = self.call(self.session, name, arguments)["error"]
            self.assertEqual(error["code"], -32602, arguments)
            self.assertIn(argument, error["message"])
            [issue] = error["data"]["issues"]
            self.assertEqual(
                (issue["path"], issue["code"]), ([argument], "invalid_type")
            )
        for whole, same in (
            ({"rating": 5.0, "limit": 3.0}, {"rating": 5, "limit": 3}),
            ({"min_rating": 4, "limit": 1e1}, {"min_rating": 4.0, "limit": 10}),
        ):
            first = self.call(self.session, "search_reviews", whole)
            second = self.call(self.session, "search_reviews", same)
            self.assertEqual(first["result"], second["result"])
        since = self.call(
            self.session, "get_reviews_since", {"date": "2025-01-01", "limit": 2.0}
        )
        self.assertEqual(since["result"]["structuredContent"]["returned"], 2)

    def test_blank_strings_are_refused(self) -> None:
        for name, argument in (
            ("search_reviews", "query"),
            ("search_reviews", "mentions_technician"),
            ("get_review", "id"),
            ("get_technician", "name"),
        ):
            error = self.call(self.session, name, {argument: " \t"})["error"]
            self.assertEqual(error["code"], -32602)
            self.assertIn(f"{argument} must not be empty", error["message"])


class InputSchemaTests(SynchronousTestCase):
    """
    Every tool's C{inputSchema}, walked: each argument given valid and
    invalid values is accepted or refused exactly as jsonschema (formats
    asserted) says.
    """

    CANDIDATES: tuple[Any, ...] = (
        0,
        1,
        2,
        5,
        6,
        100,
        101,
        -1,
        5.0,
        4.5,
        2.5,
        1e1,
        1e400,
        -1e400,
        "3",
        "5.0",
        "",
        " ",
        "\u00a0",
        "x",
        "pricing",
        "aspects",
        "a" * 100,
        "a" * 101,
        "a" * 200,
        "a" * 201,
        "2025-01-01",
        "2025-02-30",
        "0000-01-01",
        "2025-1-1",
        "2025-01-01\n",
        "yesterday",
        True,
        False,
        None,
        [],
        ["x"],
        {},
        {"x": 1},
    )

    def test_every_argument_agrees_with_jsonschema(self) -> None:
        tools = Tools(Holder(DEMO))
        listing = json.loads(tools.listing)
        self.assertGreaterEqual(len(listing), 10)
        checked = 0
        for tool in listing:
            schema = tool["inputSchema"]
            Draft202012Validator.check_schema(schema)
            validator = Draft202012Validator(
                schema, format_checker=Draft202012Validator.FORMAT_CHECKER
            )
            base = {
                name: "2025-01-01" if name == "date" else "pricing"
                for name in schema.get("required", [])
            }
            self.assertTrue(validator.is_valid(base))
            self.assertIs(self.accepted(tools, tool["name"], base), True)
            if base:
                self.assertIs(self.accepted(tools, tool["name"], {}), False)
            for name in schema["properties"]:
                for value in self.CANDIDATES + tuple(
                    schema["properties"][name].get("enum", ())
                ):
                    arguments = {**base, name: value}
                    self.assertEqual(
                        self.accepted(tools, tool["name"], arguments),
                        validator.is_valid(arguments),
                        (tool["name"], arguments),
                    )
                    checked += 1
        self.assertGreater(checked, 500)

    def accepted(self, tools: Tools, name: str, arguments: dict[str, Any]) -> bool:
        try:
            tools.call(name, arguments)
        except ToolCallError:
            return False
        return True


class HostileClientTests(SiteTestCase):
    """What one client sends cannot cost the daemon or its log much."""

    def test_deep_nesting_is_a_parse_error(self) -> None:
        """Nesting past the parser's depth is -32700, not a 500 and a traceback."""
        connection = Connection(self.site)
        session = self.mcp_post(connection, INITIALIZE).headers["mcp-session-id"]
        ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": %s}}'
        for body in (
            b"[" * 1000,
            b"[" * 1000 + b"]" * 1000,
            b"[" * 100_000,
            b'{"a":' * 5000,
            ping % (b"[" * 1000 + b"]" * 1000),
        ):
            answer = self.mcp_post(connection, body, f"Mcp-Session-Id: {session}")
            self.assertEqual(answer.code, 400, answer.body[:200])
            self.assertEqual(answer.headers["content-type"], "application/json")
            self.assertEqual(answer.json["error"]["code"], -32700)
            self.assertIsNone(answer.json["id"])
            self.assertIn("nested too deeply", answer.json["error"]["message"])
        self.assertEqual([e for e in self.events if e.get("log_failure")], [])

    def test_not_json_constants(self) -> None:
        answer = self.mcp_post(
            Connection(self.site),
            b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "x": NaN}',
        )
        self.assertEqual((answer.code, answer.json["error"]["code"]), (400, -32700))

    def test_other_methods_are_json_405(self) -> None:
        connection = Connection(self.site)
        for method in ("PUT", "PATCH", "TRACE", "PROPFIND", "CONNECT"):
            answer = connection.request(method, "/mcp", body=b"{}")
            self.assertEqual(answer.code, 405, method)
            self.assertEqual(answer.headers["allow"], "GET, POST, DELETE, OPTIONS")
            self.assertEqual(answer.headers["content-type"], "application/json")
            self.assertEqual(answer.json["error"], "method_not_allowed")
            self.assertIn(method, answer.json["message"])

    def initialize(self, client_info: dict[str, Any], request_id: Any = 1) -> Answer:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "clientInfo": client_info},
            }
        ).encode()
        return self.mcp_post(Connection(self.site), body)

    def test_huge_client_name_is_kept_and_logged_bounded(self) -> None:
        text = io.StringIO()
        observer = text_observer(text)
        globalLogPublisher.addObserver(observer)
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        big = "n" * 1_000_000
        answer = self.initialize({"name": big, "version": "1"})
        self.assertEqual(answer.code, 200)
        session = self.sessions.get(answer.headers["mcp-session-id"])
        assert session is not None
        self.assertEqual(len(session.client), CLIENT_TEXT_MAX)
        self.assertEqual(session.client, "n" * (CLIENT_TEXT_MAX - 1) + "\u2026")
        [opened] = [e for e in self.events if "MCP session" in e.get("log_format", "")]
        self.assertLessEqual(len(formatEvent(opened)), CLIENT_TEXT_MAX + 100)
        self.assertLessEqual(len(event_as_json(opened)), 3 * CLIENT_TEXT_MAX)
        written = text.getvalue()
        self.assertLess(len(written), 2000)
        self.assertIn("n" * 200, written)

    def test_control_characters_are_escaped_in_the_log(self) -> None:
        text = io.StringIO()
        observer = text_observer(text)
        globalLogPublisher.addObserver(observer)
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        name = "evil\x1b[31m\r\n2025-01-01T00:00:00+0000 [fake#info] forged\u202e"
        self.assertEqual(self.initialize({"name": name}).code, 200)
        [line] = [x for x in text.getvalue().splitlines() if "MCP session" in x]
        self.assertEqual(text.getvalue().count("forged"), 1)
        self.assertNotIn("\x1b", text.getvalue())
        self.assertNotIn("\r", text.getvalue())
        self.assertIn("evil\\x1b[31m\\r\\n2025-01-01T00:00:00+0000 [fake", line)
        self.assertIn("forged\\u202e", line)

    def test_huge_ids_are_echoed_as_given(self) -> None:
        """JSON-RPC: the answer carries the id sent, whatever its size."""
        huge = "i" * 500_000
        answer = self.initialize({"name": "x"}, request_id=huge)
        self.assertEqual((answer.code, answer.json["id"]), (200, huge))
        self.assertLess(sum(len(event_as_json(e)) for e in self.events), 10_000)


class HostileClientDaemonTests(DaemonTestCase):
    """The same attacks on the real daemon, over a socket."""

    @defer.inlineCallbacks
    def post(self, path: str, body: bytes, method: str = "POST") -> Any:
        response = yield self.client.request(
            method,
            self.base + path,
            data=body,
            headers={"Content-Type": ["application/json"], "Accept": [ACCEPT]},
        )
        raw = yield content(response)
        return response, json.loads(raw)

    @defer.inlineCallbacks
    def test_attacks(self) -> Any:
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}", "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        for body in (b"[" * 1000, b"[" * 100_000):
            response, answer = yield self.post("/mcp", body)
            self.assertEqual((response.code, answer["error"]["code"]), (400, -32700))
        for path, allowed in (
            ("/mcp", "GET, POST, DELETE, OPTIONS"),
            (HUB_PATH, "POST"),
        ):
            for method in ("PUT", "PATCH", "TRACE"):
                response, answer = yield self.post(path, b"{}", method)
                self.assertEqual(response.code, 405, (path, method))
                self.assertEqual(
                    response.headers.getRawHeaders("allow"), [allowed], path
                )
                self.assertEqual(answer["error"], "method_not_allowed")
        name = "\x1b[31m\r\n2025-01-01 [forged#info] line" + "n" * 1_000_000
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": LATEST, "clientInfo": {"name": name}},
        }
        response, answer = yield self.post("/mcp", json.dumps(initialize).encode())
        self.assertEqual(response.code, 200)
        output = self.daemon.output.decode()
        self.assertLess(len(output), 20_000)
        [line] = [x for x in output.splitlines() if "MCP session opened" in x]
        self.assertIn("for \\x1b[31m\\r\\n2025-01-01 [forged#info] linennn", line)
        self.assertLess(len(line), 600)
        self.assertNotIn("\x1b", output)
        self.assertNotIn("Traceback", output)
