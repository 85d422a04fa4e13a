"""
The MCP server over in-memory HTTP, as its tests drive it: a resource on
the demo data behind the site, and requests made in a legacy session.
"""

from __future__ import annotations

import json
from typing import Any

from treq import content
from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.mcp.tools import Tools
from reviewsd.mcp.transport import MCPResource, Sessions
from reviewsd.web.site import make_site
from tests.support import BASE, Holder
from tests.support.search import DEMO

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

    key = b"a key shared by every instance"

    def setUp(self) -> None:
        self.clock = Clock()
        self.sessions = Sessions(self.clock, idle=600, limit=self.limit, key=self.key)
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
