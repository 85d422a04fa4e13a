"""
The MCP server's 2026-07-28 revision over in-memory HTTP: its headers and
metadata, its errors' statuses, caching hints; and, in both eras, the
resources, prompts, completion and change notifications.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.links import INSIGHTS_PATH, REVIEWS_PATH
from reviewsd.mcp.methods import DATA_TTL_MAX_MS, DATA_TTL_MIN_MS, STATIC_TTL_MS
from reviewsd.mcp.resources import BUSINESS_URI, FAQ_URI, PAGE_SIZE
from reviewsd.mcp.subscriptions import Notifications
from reviewsd.mcp.tools import TOOLS, Tools
from reviewsd.mcp.transport import SUPPORTED, MCPResource, Sessions
from reviewsd.web.site import make_site
from tests.support import BASE, Holder, review, snapshot_of, write_data
from tests.support.mcp_http import MCPTestCase, Reply
from tests.support.search import DEMO
from tests.support.site import ACCEPT, Connection, SiteTestCase

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class ModernTestCase(MCPTestCase):
    def modern(
        self, method: str, params: dict[str, Any] | None = None, **headers: Any
    ) -> Reply:
        """A conformant 2026-07-28 request; C{headers} change or drop (None) some."""
        self.ids += 1
        params = {"_meta": META, **(params or {})}
        sent: dict[str, Any] = {"MCP_Protocol_Version": MODERN, "Mcp_Method": method}
        if method in NAMED:
            sent["Mcp_Name"] = params.get(NAMED[method])
        sent.update(headers)
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        return self.http("POST", message, **sent)

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = self.modern(method, params)
        self.assertEqual(reply.code, 200, reply.body)
        self.assertNotIn("error", reply.json, reply.body)
        result = reply.json["result"]
        self.assertEqual(result["resultType"], "complete")
        info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
        self.assertEqual(info["name"], "reviewsd")
        return result


class ModernTransportTests(ModernTestCase):
    def assert_error(self, reply: Reply, status: int, code: int) -> dict[str, Any]:
        self.assertEqual((reply.code, reply.json["error"]["code"]), (status, code))
        self.assertEqual(reply.json["id"], self.ids, "errors carry the request id")
        self.assertEqual(reply.header("Content-Type"), "application/json")
        error: dict[str, Any] = reply.json["error"]
        return error

    def test_discover(self) -> None:
        result = self.result("server/discover")
        self.assertEqual(result["supportedVersions"], list(SUPPORTED))
        self.assertEqual(result["supportedVersions"][0], MODERN)
        self.assertEqual(
            set(result["capabilities"]),
            {"tools", "resources", "prompts", "completions"},
        )
        self.assertIs(result["capabilities"]["resources"]["subscribe"], True)
        self.assertEqual(
            (result["ttlMs"], result["cacheScope"]), (STATIC_TTL_MS, "public")
        )
        self.assertIn("Thimbleberry", result["instructions"])
        self.assertIsNone(self.modern("server/discover").header("Mcp-Session-Id"))

    def test_client_info_is_optional(self) -> None:
        meta = {k: v for k, v in META.items() if not k.endswith("clientInfo")}
        reply = self.modern("server/discover", {"_meta": meta})
        self.assertEqual(reply.code, 200)

    def test_metadata_is_required(self) -> None:
        for meta in (
            None,
            {k: v for k, v in META.items() if not k.endswith("protocolVersion")},
            {k: v for k, v in META.items() if not k.endswith("clientCapabilities")},
            {**META, "io.modelcontextprotocol/clientCapabilities": []},
        ):
            params = {} if meta is None else {"_meta": meta}
            self.ids += 1
            reply = self.http(
                "POST",
                {
                    "jsonrpc": "2.0",
                    "id": self.ids,
                    "method": "tools/list",
                    "params": params,
                },
                MCP_Protocol_Version=MODERN,
                Mcp_Method="tools/list",
            )
            self.assert_error(reply, 400, -32602)

    def test_versions(self) -> None:
        """Header and body must agree; a revision not spoken lists those that are."""
        unknown = {**META, "io.modelcontextprotocol/protocolVersion": "v999"}
        reply = self.modern("server/discover", {"_meta": unknown})
        self.assert_error(reply, 400, -32020)
        reply = self.modern(
            "server/discover", {"_meta": unknown}, MCP_Protocol_Version="v999"
        )
        error = self.assert_error(reply, 400, -32022)
        self.assertEqual(
            error["data"], {"supported": list(SUPPORTED), "requested": "v999"}
        )
        reply = self.modern("tools/list", MCP_Protocol_Version=None)
        self.assert_error(reply, 400, -32020)
        reply = self.modern("tools/list", MCP_Protocol_Version="2025-06-18")
        self.assert_error(reply, 400, -32020)

    def test_header_validation(self) -> None:
        for headers in (
            {"Mcp_Method": None},
            {"Mcp_Method": "prompts/list"},
            {"Mcp_Method": "TOOLS/LIST"},
            {"Mcp_Method": "=?base64?dG9vbHMvbGlzdA?="},  # no padding
            {"Mcp_Method": "=?base64?dG9v!!bHMvbGlzdA==?="},
        ):
            self.assert_error(self.modern("tools/list", **headers), 400, -32020)
        self.assertEqual(
            self.modern("tools/list", Mcp_Method="  tools/list\t").code, 200
        )
        call = {"name": "get_business", "arguments": {}}
        for name in (None, "get_faq", "=?base64?Z2V0X2ZhcQ==?="):
            self.assert_error(
                self.modern("tools/call", call, Mcp_Name=name), 400, -32020
            )
        for name in ("  get_business ", "=?base64?Z2V0X2J1c2luZXNz?="):
            reply = self.modern("tools/call", call, Mcp_Name=name)
            self.assertEqual(reply.code, 200)
            self.assertIs(reply.json["result"]["isError"], False)
        uri = "https://reviews.example.com/api/reviews/\u00e9t\u00e9"
        encoded = (
            "=?base64?aHR0cHM6Ly9yZXZpZXdzLmV4YW1wbGUuY29tL2FwaS9yZXZpZXdzL8OpdMOp?="
        )
        reply = self.modern("resources/read", {"uri": uri}, Mcp_Name=encoded)
        self.assert_error(reply, 200, -32602)  # read, and not found

    def test_methods_not_served_are_404(self) -> None:
        for method in (
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "unknown/method",
        ):
            self.assert_error(self.modern(method), 404, -32601)

    def test_method_errors_are_200(self) -> None:
        call = {"name": "get_review", "arguments": {}}
        self.assert_error(self.modern("tools/call", call), 200, -32602)
        self.assert_error(self.modern("tools/list", {"cursor": "x"}), 200, -32602)

    def test_notifications_and_sessions(self) -> None:
        reply = self.http(
            "POST",
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"_meta": META},
            },
            MCP_Protocol_Version=MODERN,
        )
        self.assertEqual((reply.code, reply.body), (202, b""))
        reply = self.modern("tools/list", Mcp_Session_Id="ignored")
        self.assertEqual(reply.code, 200)
        reply = self.http(
            "POST",
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            MCP_Protocol_Version=MODERN,
        )
        self.assertEqual((reply.code, reply.body), (202, b""))

    def test_origin_holds(self) -> None:
        reply = self.modern("server/discover", Origin="http://evil.example.com")
        self.assertEqual(reply.code, 403)
        reply = self.modern("server/discover", Origin="http://localhost:6274")
        self.assertEqual(reply.code, 200)

    def test_tools(self) -> None:
        """The registry's order, every time; results as in a session."""
        result = self.result("tools/list")
        self.assertEqual([t["name"] for t in result["tools"]], [t.name for t in TOOLS])
        self.assertEqual(self.result("tools/list"), result)
        self.assertEqual(
            (result["ttlMs"], result["cacheScope"]), (STATIC_TTL_MS, "public")
        )
        called = self.result("tools/call", {"name": "get_faq", "arguments": {}})
        session = self.initialize()
        legacy = self.call(session, "get_faq", {})["result"]
        self.assertEqual(
            {k: v for k, v in called.items() if k not in ("resultType", "_meta")},
            legacy,
        )

    def test_output_schemas_are_portable(self) -> None:
        """No list of types (["string", "null"]) anywhere: anyOf says it."""
        found: list[str] = []

        def walk(node: Any, where: str) -> None:
            if isinstance(node, dict):
                if isinstance(node.get("type"), list):
                    found.append(where)
                for key, value in node.items():
                    walk(value, f"{where}/{key}")
            elif isinstance(node, list):
                for i, value in enumerate(node):
                    walk(value, f"{where}/{i}")

        for tool in self.result("tools/list")["tools"]:
            walk(tool, tool["name"])
        self.assertEqual(found, [])
        self.assertIn('"anyOf"', json.dumps(self.result("tools/list")))


class ResourceTests(ModernTestCase):
    def test_list_pages_newest_first(self) -> None:
        result = self.result("resources/list")
        listed = [r["uri"] for r in result["resources"]]
        self.assertEqual(listed[:3], [BUSINESS_URI, BASE + INSIGHTS_PATH, FAQ_URI])
        reviews = DEMO.dataset.reviews
        pages = [result]
        while "nextCursor" in pages[-1]:
            pages.append(
                self.result("resources/list", {"cursor": pages[-1]["nextCursor"]})
            )
            listed += [r["uri"] for r in pages[-1]["resources"]]
        self.assertEqual(len(pages), -(-len(reviews) // PAGE_SIZE))
        self.assertEqual(listed[3:], [DEMO.links.review_record(r.id) for r in reviews])
        first = result["resources"][3]
        self.assertEqual(first["name"], reviews[0].id)
        self.assertEqual(first["mimeType"], "application/json")
        for page in pages:
            self.assertEqual(page["cacheScope"], "public")
            self.assertTrue(DATA_TTL_MIN_MS <= page["ttlMs"] <= DATA_TTL_MAX_MS)
        reply = self.modern("resources/list", {"cursor": "bm90IGEgcmV2aWV3"})
        self.assertEqual(reply.json["error"]["code"], -32602)

    def test_ttl_follows_the_data(self) -> None:
        """A tenth of the time since the data changed, within bounds."""
        changed = DEMO.documents[REVIEWS_PATH].last_modified
        self.clock.advance(changed - self.clock.seconds() + 1)
        self.assertEqual(self.result("resources/list")["ttlMs"], DATA_TTL_MIN_MS)
        self.clock.advance(600)
        self.assertEqual(
            self.result("resources/read", {"uri": FAQ_URI})["ttlMs"], 60_100
        )
        self.clock.advance(86400)
        self.assertEqual(self.result("resources/list")["ttlMs"], DATA_TTL_MAX_MS)

    def test_read(self) -> None:
        newest = DEMO.dataset.reviews[0]
        for uri, expected in (
            (BUSINESS_URI, json.loads(DEMO.records.head)),
            (FAQ_URI, {"faq": DEMO.insights["faq"]}),
            (
                BASE + INSIGHTS_PATH,
                json.loads(DEMO.documents[INSIGHTS_PATH].identity.body),
            ),
            (DEMO.links.review_record(newest.id), json.loads(DEMO.records.record(0))),
        ):
            result = self.result("resources/read", {"uri": uri})
            [content] = result["contents"]
            self.assertEqual(
                (content["uri"], content["mimeType"]), (uri, "application/json")
            )
            self.assertEqual(json.loads(content["text"]), expected)
            self.assertEqual(result["cacheScope"], "public")

    def test_not_found(self) -> None:
        """-32602 with the URI at 2026-07-28; the older -32002 in a session."""
        session = self.initialize()
        for uri in (
            "test://nonexistent",
            DEMO.links.review_record("no-such-review"),
            BASE + "/api/reviews/",
        ):
            reply = self.modern("resources/read", {"uri": uri})
            self.assertEqual(reply.json["error"]["code"], -32602)
            self.assertEqual(reply.json["error"]["data"], {"uri": uri})
            legacy = self.rpc(session, "resources/read", {"uri": uri}).json["error"]
            self.assertEqual((legacy["code"], legacy["data"]), (-32002, {"uri": uri}))

    def test_templates(self) -> None:
        result = self.result("resources/templates/list")
        [template] = result["resourceTemplates"]
        self.assertEqual(template["uriTemplate"], BASE + "/api/reviews/{id}")
        self.assertEqual(
            (result["ttlMs"], result["cacheScope"]), (STATIC_TTL_MS, "public")
        )

    def test_legacy_session(self) -> None:
        session = self.initialize("2024-11-05")
        listed = self.rpc(session, "resources/list").json["result"]
        self.assertNotIn("ttlMs", listed)
        self.assertNotIn("resultType", listed)
        self.assertEqual(len(listed["resources"]), 3 + PAGE_SIZE)
        read = self.rpc(session, "resources/read", {"uri": FAQ_URI}).json["result"]
        self.assertEqual(
            json.loads(read["contents"][0]["text"])["faq"], DEMO.insights["faq"]
        )


class PromptTests(ModernTestCase):
    def test_list(self) -> None:
        result = self.result("prompts/list")
        names = [p["name"] for p in result["prompts"]]
        self.assertEqual(
            names,
            [
                "digest_since",
                "technician_report",
                "service_report",
                "service_area_report",
                "answer_question",
            ],
        )
        for prompt in result["prompts"]:
            self.assertTrue(prompt["title"] and prompt["description"])
            for argument in prompt["arguments"]:
                self.assertIsInstance(argument["required"], bool)
        self.assertEqual(
            (result["ttlMs"], result["cacheScope"]), (STATIC_TTL_MS, "public")
        )

    def get(self, name: str, **arguments: Any) -> Reply:
        return self.modern("prompts/get", {"name": name, "arguments": arguments})

    def test_digest_embeds_the_reviews(self) -> None:
        result = self.get("digest_since", since="2026-06-01").json["result"]
        count = sum(
            1 for r in DEMO.dataset.reviews if r.date.isoformat() >= "2026-06-01"
        )
        text, *embedded = result["messages"]
        self.assertIn(
            f"the {count} verified reviews dated 2026-06-01", text["content"]["text"]
        )
        self.assertEqual(len(embedded), count)
        first = embedded[0]["content"]
        self.assertEqual(first["type"], "resource")
        self.assertEqual(
            first["resource"]["uri"],
            DEMO.links.review_record(DEMO.dataset.reviews[0].id),
        )
        self.assertEqual(
            json.loads(first["resource"]["text"]), json.loads(DEMO.records.record(0))
        )

    def test_reports(self) -> None:
        mike = self.get("technician_report", technician="mike").json["result"]
        self.assertIn("Michael Reyes", mike["messages"][0]["content"]["text"])
        self.assertGreater(len(mike["messages"]), 1)
        roofing = self.get("service_report", service="Roofing").json["result"]
        self.assertIn("roofing", roofing["messages"][0]["content"]["text"])
        tigard = self.get("service_area_report", area="tigard").json["result"]
        self.assertIn("Tigard", tigard["messages"][0]["content"]["text"])

    def test_answer_is_grounded(self) -> None:
        result = self.get(
            "answer_question", question="Do they arrive on time?", aspect="punctuality"
        ).json["result"]
        text, faq, *reviews = result["messages"]
        self.assertIn("Do they arrive on time?", text["content"]["text"])
        self.assertEqual(faq["content"]["resource"]["uri"], FAQ_URI)
        self.assertTrue(reviews)
        self.assertLessEqual(len(reviews), 10)

    def test_arguments_are_checked(self) -> None:
        for name, arguments, words in (
            ("digest_since", {}, "since is required"),
            ("digest_since", {"since": "yesterday"}, "YYYY-MM-DD"),
            ("digest_since", {"since": 5}, "must be a string"),
            ("technician_report", {"technician": "Nobody"}, "Michael Reyes"),
            ("service_report", {"service": "pools"}, "roofing"),
            ("service_area_report", {"area": "Seattle"}, "Beaverton"),
            ("answer_question", {"question": "x" * 201}, "at most 200"),
            ("answer_question", {"question": "Why?", "aspect": "vibes"}, "punctuality"),
            ("answer_question", {"question": "Why?", "mood": "x"}, "'mood'"),
            ("no_such_prompt", {}, "digest_since"),
        ):
            error = self.get(name, **arguments).json["error"]
            self.assertEqual(error["code"], -32602, (name, arguments))
            self.assertIn(words, error["message"])
        reply = self.modern("prompts/get", {"name": "digest_since", "arguments": [1]})
        self.assertEqual(reply.json["error"]["code"], -32602)

    def test_legacy_session(self) -> None:
        session = self.initialize()
        result = self.rpc(
            session,
            "prompts/get",
            {"name": "technician_report", "arguments": {"technician": "Dev"}},
        ).json["result"]
        self.assertIn("Dev Patel", result["messages"][0]["content"]["text"])


class CompletionTests(ModernTestCase):
    def complete(self, ref: dict[str, Any], name: str, value: str) -> Any:
        params = {"ref": ref, "argument": {"name": name, "value": value}}
        return self.modern("completion/complete", params)

    def values(self, prompt: str, name: str, value: str) -> list[str]:
        reply = self.complete({"type": "ref/prompt", "name": prompt}, name, value)
        self.assertEqual(reply.json["result"]["resultType"], "complete")
        values: list[str] = reply.json["result"]["completion"]["values"]
        return values

    def test_prompt_arguments(self) -> None:
        self.assertEqual(
            self.values("technician_report", "technician", "mi")[:3],
            ["Michael Reyes", "Mike", "Mike R."],
        )
        self.assertIn(
            "Dev Patel", self.values("technician_report", "technician", "patel")
        )
        self.assertEqual(self.values("service_report", "service", "roof"), ["roofing"])
        self.assertEqual(
            self.values("service_area_report", "area", "ti"), ["Tigard", "Tualatin"]
        )
        self.assertEqual(
            self.values("answer_question", "aspect", "punc"), ["punctuality"]
        )
        self.assertEqual(self.values("answer_question", "question", "why"), [])
        dates = self.values("digest_since", "since", "2026-11")
        self.assertEqual(dates[0], DEMO.dataset.reviews[0].date.isoformat())

    def test_review_ids(self) -> None:
        template = {"type": "ref/resource", "uri": BASE + "/api/reviews/{id}"}
        reply = self.complete(template, "id", "")
        completion = reply.json["result"]["completion"]
        self.assertEqual(len(completion["values"]), 100)
        self.assertEqual(completion["total"], len(DEMO.dataset.reviews))
        self.assertIs(completion["hasMore"], True)
        self.assertEqual(completion["values"][0], DEMO.dataset.reviews[0].id)
        newest = DEMO.dataset.reviews[0].id
        one = self.complete(template, "id", newest)
        self.assertEqual(one.json["result"]["completion"]["values"], [newest])

    def test_wrong_references(self) -> None:
        for ref, name in (
            ({"type": "ref/prompt", "name": "nothing"}, "x"),
            ({"type": "ref/prompt", "name": "digest_since"}, "until"),
            ({"type": "ref/resource", "uri": "file:///{path}"}, "path"),
            ({"type": "ref/resource", "uri": BASE + "/api/reviews/{id}"}, "name"),
            ({"type": "ref/tool", "name": "x"}, "x"),
        ):
            reply = self.complete(ref, name, "")
            self.assertEqual(reply.json["error"]["code"], -32602, ref)


def _data(directory: Path, text: str) -> Path:
    reviews = [review(n) for n in range(3)]
    reviews[0]["text"] = text
    return write_data(directory, reviews)


class NotificationTests(SiteTestCase):
    """Streams over a connection, told of a reload by hand."""

    def setUp(self) -> None:
        super().setUp()
        self.old = snapshot_of(_data(Path(self.mktemp()), "The roof was fixed."))
        self.new = snapshot_of(_data(Path(self.mktemp()), "The roof leaks again."))
        self.holder.snapshot = self.old
        self.notifications = self.mcp.notifications
        self.uri = self.old.links.review_record("r0000")

    def listen(
        self, connection: Connection, request_id: Any = 7, **wanted: Any
    ) -> list[Any]:
        params = {"_meta": META, "notifications": wanted}
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "subscriptions/listen",
                "params": params,
            }
        ).encode()
        answer = connection.request(
            "POST",
            "/mcp",
            "Content-Type: application/json",
            f"Accept: {ACCEPT}",
            f"MCP-Protocol-Version: {MODERN}",
            "Mcp-Method: subscriptions/listen",
            body=body,
        )
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.headers["content-type"], "text/event-stream")
        self.assertEqual(answer.headers["x-accel-buffering"], "no")
        return self.sse(connection)

    @staticmethod
    def sse(connection: Connection) -> list[Any]:
        raw = connection.transport.value().decode()
        return [json.loads(m) for m in re.findall(r"^data: (.*)$", raw, re.MULTILINE)]

    def test_listen(self) -> None:
        connection = Connection(self.site)
        [ack] = self.listen(
            connection,
            resourcesListChanged=True,
            toolsListChanged=True,
            resourceSubscriptions=[self.uri, BUSINESS_URI, "test://elsewhere"],
        )
        self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
        self.assertEqual(
            ack["params"],
            {
                "_meta": {"io.modelcontextprotocol/subscriptionId": 7},
                "notifications": {
                    "resourcesListChanged": True,
                    "resourceSubscriptions": [self.uri, BUSINESS_URI],
                },
            },
        )
        self.assertEqual(self.notifications.changed(self.old, self.new), 2)
        _, listed, updated = self.sse(connection)
        self.assertEqual(listed["method"], "notifications/resources/list_changed")
        self.assertEqual(updated["method"], "notifications/resources/updated")
        self.assertEqual(
            updated["params"],
            {"uri": self.uri, "_meta": {"io.modelcontextprotocol/subscriptionId": 7}},
        )
        self.assertEqual(self.notifications.changed(self.new, self.new), 0)

    def test_filter_is_honoured(self) -> None:
        connection = Connection(self.site)
        [ack] = self.listen(connection, promptsListChanged=True)
        self.assertEqual(ack["params"]["notifications"], {})
        self.notifications.changed(self.old, self.new)
        self.assertEqual(len(self.sse(connection)), 1)

    def test_bad_filters(self) -> None:
        for wanted in (
            {"resourceSubscriptions": "x"},
            {"resourceSubscriptions": ["x"] * 101},
        ):
            connection = Connection(self.site)
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "subscriptions/listen",
                    "params": {"_meta": META, "notifications": wanted},
                }
            ).encode()
            answer = self.mcp_post(
                connection,
                body,
                f"MCP-Protocol-Version: {MODERN}",
                "Mcp-Method: subscriptions/listen",
            )
            self.assertEqual(answer.json["error"]["code"], -32602)

    def test_bounds_and_shutdown(self) -> None:
        """
        The oldest stream of a client gives way; past the total, 503; the
        keep-alive reaches every stream; stopping ends them all.
        """
        self.notifications._per_client = 2
        self.notifications._total = 3
        first, second, third = (Connection(self.site) for _ in range(3))
        self.listen(first, 1, resourcesListChanged=True)
        self.listen(second, 2, resourcesListChanged=True)
        self.listen(third, 3, resourcesListChanged=True)
        ended = self.sse(first)[-1]
        self.assertEqual(
            ended,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "resultType": "complete",
                    "_meta": {
                        "io.modelcontextprotocol/subscriptionId": 1,
                        "io.modelcontextprotocol/serverInfo": ended["result"]["_meta"][
                            "io.modelcontextprotocol/serverInfo"
                        ],
                    },
                },
            },
        )
        self.assertEqual(len(self.notifications), 2)
        elsewhere = Connection(self.site, peer="198.51.100.7")
        self.listen(elsewhere, 4)
        self.assertEqual(len(self.notifications), 3)
        refused = Connection(self.site, peer="198.51.100.8")
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "subscriptions/listen",
                "params": {"_meta": META, "notifications": {}},
            }
        ).encode()
        answer = self.mcp_post(
            refused,
            body,
            f"MCP-Protocol-Version: {MODERN}",
            "Mcp-Method: subscriptions/listen",
        )
        self.assertEqual((answer.code, answer.headers["retry-after"]), (503, "60"))
        self.assertEqual(answer.json["id"], 5)
        self.notifications.startService()
        self.clock.advance(20)
        self.assertTrue(third.transport.value().endswith(b":\n\n\r\n"))
        self.notifications.stopService()
        self.assertEqual(len(self.notifications), 0)
        for connection, request_id in ((second, 2), (third, 3), (elsewhere, 4)):
            last = self.sse(connection)[-1]
            self.assertEqual(last["id"], request_id)
            self.assertEqual(last["result"]["resultType"], "complete")
        self.listen_refused_while_stopping()

    def listen_refused_while_stopping(self) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "subscriptions/listen",
                "params": {"_meta": META, "notifications": {}},
            }
        ).encode()
        answer = self.mcp_post(
            Connection(self.site),
            body,
            f"MCP-Protocol-Version: {MODERN}",
            "Mcp-Method: subscriptions/listen",
        )
        self.assertEqual(answer.code, 503)

    def test_disconnects_are_forgotten(self) -> None:
        connection = Connection(self.site)
        self.listen(connection, resourcesListChanged=True)
        self.assertEqual(len(self.notifications), 1)
        connection.transport.loseConnection()
        self.assertEqual(len(self.notifications), 0)

    def test_legacy_session_stream(self) -> None:
        connection = Connection(self.site)
        session = self.mcp_post(connection, INITIALIZE_2025_11_25).headers[
            "mcp-session-id"
        ]

        def rpc(method: str, **params: Any) -> Any:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
            ).encode()
            return self.mcp_post(
                Connection(self.site), body, f"Mcp-Session-Id: {session}"
            ).json

        self.assertEqual(rpc("resources/subscribe", uri=self.uri)["result"], {})
        self.assertEqual(
            rpc("resources/subscribe", uri="test://x")["error"]["code"], -32602
        )
        stream = Connection(self.site)
        answer = stream.request(
            "GET", "/mcp", "Accept: text/event-stream", f"Mcp-Session-Id: {session}"
        )
        self.assertEqual(
            (answer.code, answer.headers["content-type"]), (200, "text/event-stream")
        )
        self.assertEqual(self.notifications.changed(self.old, self.new), 2)
        listed, updated = self.sse(stream)
        self.assertEqual(
            listed, {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
        )
        self.assertEqual(updated["params"], {"uri": self.uri})
        self.assertEqual(rpc("resources/unsubscribe", uri=self.uri)["result"], {})
        self.assertEqual(self.notifications.changed(self.old, self.new), 1)
        again = Connection(self.site)
        again.request(
            "GET", "/mcp", "Accept: text/event-stream", f"Mcp-Session-Id: {session}"
        )
        self.assertEqual(len(self.notifications), 1, "a session's newest stream")
        self.assertTrue(
            stream.transport.disconnecting or stream.protocol.requests == []
        )
        answer = Connection(self.site).request(
            "DELETE", "/mcp", f"Mcp-Session-Id: {session}"
        )
        self.assertEqual(answer.code, 204)
        self.assertEqual(len(self.notifications), 0)
        refused = Connection(self.site).request(
            "GET", "/mcp", "Accept: text/event-stream", "Mcp-Session-Id: forged"
        )
        self.assertEqual(refused.code, 404)


INITIALIZE_2025_11_25 = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
    }
).encode()


class ServiceWiringTests(SynchronousTestCase):
    def test_resource_builds_its_own_registry(self) -> None:
        """Given tools alone, /mcp reads their snapshot and keeps streams of its own."""
        holder = Holder(DEMO)
        sessions = Sessions(Clock())
        resource = MCPResource(Tools(holder), sessions, BASE)
        self.assertIsInstance(resource.notifications, Notifications)
        make_site(holder, None, {"/mcp": resource})
