"""
The Model Context Protocol server: JSON-RPC 2.0 over streamable HTTP
(protocol 2025-06-18), as a twisted.web resource at C{/mcp}.

Every answer is one C{application/json} object; the server never streams,
so C{GET} is 405 as the transport allows. Sessions are only a protocol
courtesy here (every tool is public and read-only): they are random, capped
in number and expire when idle, so no client can make them exhaust memory.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from attrs import define
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.web.resource import Resource
from twisted.web.server import Request

from reviewsd import __version__
from reviewsd.data.documents import to_json
from reviewsd.logs import bounded, loggable_text
from reviewsd.mcp.tools import ToolCallError, ToolRegistry
from reviewsd.web.errors import method_not_allowed
from reviewsd.web.negotiation import accepts_all

log = Logger()

LATEST = "2025-06-18"
SUPPORTED = (LATEST, "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_ALLOW = b"POST, DELETE, OPTIONS"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


@define
class Session:
    """
    @ivar client: the client's C{clientInfo.name}, cut at
        L{reviewsd.logs.CLIENT_TEXT_MAX} characters.
    """

    id: str
    protocol_version: str
    client: str
    last_seen: float


class Sessions:
    """
    Live sessions, least recently used first: past C{limit} the oldest is
    dropped (its client gets 404 and initializes again), and a session idle
    for C{idle} seconds is expired.
    """

    def __init__(
        self, clock: IReactorTime, idle: float = 1800.0, limit: int = 1000
    ) -> None:
        self._clock = clock
        self._idle = idle
        self._limit = limit
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, protocol_version: str, client: str) -> Session:
        self.expire()
        while len(self._sessions) >= self._limit:
            self._sessions.popitem(last=False)
        session = Session(
            # 256 random bits, visible ASCII as the transport requires
            id=secrets.token_urlsafe(32),
            protocol_version=protocol_version,
            client=bounded(client),
            last_seen=self._clock.seconds(),
        )
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock.seconds()
        if now - session.last_seen > self._idle:
            del self._sessions[session_id]
            return None
        session.last_seen = now
        self._sessions.move_to_end(session_id)
        return session

    def close(self, session_id: str) -> bool:
        return self._sessions.pop(session_id, None) is not None

    def expire(self) -> int:
        """Drop every idle session; called periodically and before opening."""
        cutoff = self._clock.seconds() - self._idle
        stale = [k for k, s in self._sessions.items() if s.last_seen < cutoff]
        for key in stale:
            del self._sessions[key]
        return len(stale)


class _Refusal(Exception):
    """An answer that ends the exchange: HTTP status plus a JSON-RPC error."""

    def __init__(
        self, status: int, code: int, message: str, request_id: Any = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.request_id = (
            status,
            code,
            message,
            request_id,
        )


def _error(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return to_json({"jsonrpc": "2.0", "id": request_id, "error": error})


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class MCPResource(Resource):
    """
    C{POST /mcp}: one JSON-RPC message per request. Requests are answered in
    the body; notifications and client responses get 202 with no body.
    """

    isLeaf = True

    def __init__(
        self,
        tools: ToolRegistry,
        sessions: Sessions,
        base_url: str,
        allowed_origins: tuple[str, ...] = (),
        instructions: str = "",
    ) -> None:
        super().__init__()
        self._tools = tools
        self._sessions = sessions
        self._instructions = instructions
        self._any_origin = "*" in allowed_origins
        self._origins = {_origin(base_url)} | {
            _origin(o) for o in allowed_origins if o != "*"
        }

    # --- HTTP ---------------------------------------------------------------

    def render(self, request: Request) -> bytes | int:
        """
        Every method: those without a C{render_} method get this service's
        JSON 405 (twisted.web would answer an HTML 501 or 405).
        """
        if getattr(self, "render_" + request.method.decode("ascii"), None) is None:
            return method_not_allowed(request, _ALLOW)
        result: bytes | int = super().render(request)
        return result

    def _origin_allowed(self, request: Request) -> bool:
        origin = request.getHeader(b"origin")
        if origin is None or self._any_origin:
            return True
        text = origin.decode("latin-1").strip().lower()
        if text in self._origins:
            return True
        return urlsplit(text).hostname in _LOCAL_HOSTS and urlsplit(text).scheme in (
            "http",
            "https",
        )

    def _cors(self, request: Request) -> None:
        origin = request.getHeader(b"origin")
        request.setHeader(b"Vary", b"Origin")
        if origin is not None:
            request.setHeader(b"Access-Control-Allow-Origin", origin)
            request.setHeader(b"Access-Control-Expose-Headers", b"Mcp-Session-Id")

    def _refuse(self, request: Request, refusal: _Refusal) -> bytes:
        request.setResponseCode(refusal.status)
        request.setHeader(b"Content-Type", b"application/json")
        return _error(refusal.request_id, refusal.code, refusal.message)

    def render_GET(self, request: Request) -> bytes:
        request.setHeader(b"Allow", _ALLOW)
        return self._refuse(
            request,
            _Refusal(
                405,
                INVALID_REQUEST,
                "This server sends no event stream: POST JSON-RPC messages to /mcp.",
            ),
        )

    def render_HEAD(self, request: Request) -> bytes:
        self.render_GET(request)
        return b""

    def render_OPTIONS(self, request: Request) -> bytes:
        if not self._origin_allowed(request):
            return self._refuse(
                request, _Refusal(403, INVALID_REQUEST, "Origin not allowed.")
            )
        self._cors(request)
        request.setResponseCode(204)
        request.setHeader(b"Allow", _ALLOW)
        request.setHeader(b"Access-Control-Allow-Methods", _ALLOW)
        request.setHeader(
            b"Access-Control-Allow-Headers",
            b"Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, "
            b"Last-Event-ID",
        )
        request.setHeader(b"Access-Control-Max-Age", b"86400")
        return b""

    def render_DELETE(self, request: Request) -> bytes:
        try:
            self._check_origin(request)
            session_id = self._session_header(request, None)
            if not self._sessions.close(session_id):
                raise _Refusal(404, INVALID_REQUEST, "No such session.")
        except _Refusal as refusal:
            return self._refuse(request, refusal)
        self._cors(request)
        request.setResponseCode(204)
        return b""

    def _check_origin(self, request: Request) -> None:
        if not self._origin_allowed(request):
            raise _Refusal(
                403,
                INVALID_REQUEST,
                "Origin not allowed: requests from web pages must come from an "
                "allowed origin.",
            )

    def _session_header(self, request: Request, request_id: Any) -> str:
        raw = request.getHeader(b"mcp-session-id")
        if raw is None:
            raise _Refusal(
                400,
                INVALID_REQUEST,
                "Missing Mcp-Session-Id header: send initialize first, then the id "
                "it returns with every request.",
                request_id,
            )
        return raw.decode("latin-1")

    def render_POST(self, request: Request) -> bytes:
        try:
            body = self._post(request)
        except _Refusal as refusal:
            return self._refuse(request, refusal)
        self._cors(request)
        if body is None:
            request.setResponseCode(202)
            return b""
        request.setHeader(b"Content-Type", b"application/json")
        return body

    def _post(self, request: Request) -> bytes | None:
        self._check_origin(request)
        if getattr(request, "too_large", False):
            raise _Refusal(413, INVALID_REQUEST, "The request body is too large.")
        if not accepts_all(
            request.getHeader(b"accept"), "application/json", "text/event-stream"
        ):
            raise _Refusal(
                406,
                INVALID_REQUEST,
                "Accept must allow both application/json and text/event-stream.",
            )
        content_type = (request.getHeader(b"content-type") or b"").split(b";")[0]
        if content_type.strip().lower() != b"application/json":
            raise _Refusal(
                415, INVALID_REQUEST, "Content-Type must be application/json."
            )
        version = request.getHeader(b"mcp-protocol-version")
        if version is not None and version.decode("latin-1") not in SUPPORTED:
            raise _Refusal(
                400,
                INVALID_REQUEST,
                f"Unsupported MCP-Protocol-Version; supported: {', '.join(SUPPORTED)}.",
            )
        body = request.content.read() if request.content is not None else b""
        message = self._parse(body)
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize" and "id" in message:
            return self._initialize(request, request_id, message.get("params"))
        session_id = self._session_header(request, request_id)
        session = self._sessions.get(session_id)
        if session is None:
            raise _Refusal(
                404,
                INVALID_REQUEST,
                "Unknown or expired session: initialize again, without a session id.",
                request_id,
            )
        if "id" not in message or method is None:
            # a notification (notifications/initialized among them), or a
            # response to a request this server never sends: nothing to do
            return None
        return self._dispatch(request_id, method, message.get("params"))

    def _parse(self, raw: bytes) -> dict[str, Any]:
        try:
            message = json.loads(raw, parse_constant=_reject_constant)
        except ValueError as e:  # UnicodeDecodeError and JSONDecodeError among them
            raise _Refusal(400, PARSE_ERROR, f"Parse error: {e}") from None
        except RecursionError:
            raise _Refusal(
                400, PARSE_ERROR, "Parse error: the JSON is nested too deeply."
            ) from None
        if isinstance(message, list):
            raise _Refusal(
                400,
                INVALID_REQUEST,
                "Batches are not supported: send one message per request.",
            )
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise _Refusal(
                400,
                INVALID_REQUEST,
                'Invalid request: expected {"jsonrpc": "2.0", ...}.',
            )
        request_id = message.get("id")
        if "id" in message and (
            isinstance(request_id, bool) or not isinstance(request_id, (int, str))
        ):
            raise _Refusal(
                400,
                INVALID_REQUEST,
                "Invalid request: id must be a string or an integer.",
            )
        method = message.get("method")
        if "method" in message and not isinstance(method, str):
            raise _Refusal(
                400,
                INVALID_REQUEST,
                "Invalid request: method must be a string.",
                request_id,
            )
        if method is None and not (
            "id" in message and ("result" in message or "error" in message)
        ):
            raise _Refusal(
                400, INVALID_REQUEST, "Invalid request: no method.", request_id
            )
        return message

    # --- JSON-RPC -----------------------------------------------------------

    def _initialize(self, request: Request, request_id: Any, params: Any) -> bytes:
        if not isinstance(params, dict) or not isinstance(
            params.get("protocolVersion"), str
        ):
            return _error(
                request_id,
                INVALID_PARAMS,
                "initialize needs params.protocolVersion (a string).",
            )
        requested = params["protocolVersion"]
        version = requested if requested in SUPPORTED else LATEST
        info = params.get("clientInfo")
        client = info.get("name") if isinstance(info, dict) else None
        session = self._sessions.open(
            version, client if isinstance(client, str) else ""
        )
        request.setHeader(b"Mcp-Session-Id", session.id.encode("ascii"))
        log.info(
            "MCP session opened for {client} (protocol {version})",
            client=loggable_text(session.client) or "an unnamed client",
            version=version,
        )
        return to_json(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {
                        "name": "reviewsd",
                        "title": self._tools.title(),
                        "version": __version__.public(),
                    },
                    "instructions": self._instructions or self._tools.instructions(),
                },
            }
        )

    def _dispatch(self, request_id: Any, method: str, params: Any) -> bytes:
        if params is not None and not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, "params must be an object.")
        params = params or {}
        if method == "ping":
            return b'{"jsonrpc":"2.0","id":%s,"result":{}}' % to_json(request_id)
        if method == "tools/list":
            if params.get("cursor") is not None:
                return _error(
                    request_id, INVALID_PARAMS, "Unknown cursor: the list has one page."
                )
            return b'{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}' % (
                to_json(request_id),
                self._tools.listing,
            )
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments", {})
            if not isinstance(name, str):
                return _error(
                    request_id,
                    INVALID_PARAMS,
                    "tools/call needs params.name (a string).",
                )
            if arguments is None:
                arguments = {}
            try:
                result = self._tools.call(name, arguments)
            except ToolCallError as e:
                return _error(request_id, INVALID_PARAMS, e.message, e.data)
            except Exception:
                log.failure("MCP tool {name} failed", name=name)
                return _error(
                    request_id,
                    INTERNAL_ERROR,
                    f"The tool {name} failed; it has been logged.",
                )
            return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (
                to_json(request_id),
                result,
            )
        return _error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
