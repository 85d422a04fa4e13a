"""
The Model Context Protocol over streamable HTTP at C{/mcp}, in both eras,
as one twisted.web resource.

A request whose C{params._meta} names a revision, or whose
C{MCP-Protocol-Version} header names a modern one, is served statelessly
(C{2026-07-28}): its C{Mcp-Method} and C{Mcp-Name} headers must say what
its body says (C{-32020}, 400), its revision must be spoken (C{-32022},
400), its C{_meta} must be whole (C{-32602}, 400), and an unknown method
is a 404. Anything else is legacy: C{initialize} opens a session
(L{reviewsd.mcp.sessions}), and every later message names it.

Answers are JSON, but for the event streams of change notifications:
C{subscriptions/listen}, and a legacy session's C{GET}. Requests from web
pages are held to the allowed origins in both eras.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request

from reviewsd.data.snapshot import SnapshotSource
from reviewsd.logs import loggable_text
from reviewsd.mcp.methods import Methods
from reviewsd.mcp.protocol import (
    CLIENT_CAPABILITIES,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_LEGACY,
    LEGACY,
    MODERN,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    SERVER_INFO,
    SUPPORTED,
    UNSUPPORTED_PROTOCOL_VERSION,
    RPCError,
    error_body,
    result_body,
    server_info,
)
from reviewsd.mcp.sessions import Session, Sessions
from reviewsd.mcp.subscriptions import Notifications, StreamRefused
from reviewsd.mcp.tools import ToolRegistry
from reviewsd.web.errors import method_not_allowed
from reviewsd.web.negotiation import accepts_all

__all__ = ["LATEST", "SUPPORTED", "MCPResource", "Sessions"]

log = Logger()

LATEST = LATEST_LEGACY
"""The revision C{initialize} answers when the client's is not spoken."""

_ALLOW = b"GET, POST, DELETE, OPTIONS"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose C{Mcp-Name} header mirrors a parameter, and which."""
_BASE64_OPEN, _BASE64_CLOSE = "=?base64?", "?="
_HEADER_TEXT = re.compile(r"[\t\x20-\x7e]*\Z")
"""What a header value may hold (RFC 9110 5.5): visible ASCII, space, tab."""


class _Refusal(Exception):
    """An answer that ends the exchange: HTTP status plus a JSON-RPC error."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        request_id: Any = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.request_id, self.data = request_id, data


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _header(request: Request, name: bytes) -> str | None:
    """A header's value without the white space around it (RFC 9110 5.5)."""
    raw = request.getHeader(name)
    return None if raw is None else raw.decode("latin-1").strip(" \t")


def _shown(text: str) -> str:
    return repr(text[:100])


def _mirrored(value: str, header: str, request_id: Any) -> str:
    """
    A mirrored header's value as its sender meant it: visible ASCII, or
    the Base64 of UTF-8 between C{=?base64?} and C{?=}.
    """
    if not (value.isascii() and value.isprintable()) and not _HEADER_TEXT.match(value):
        raise _Refusal(
            400,
            HEADER_MISMATCH,
            f"Header mismatch: {header} holds characters a header may not.",
            request_id,
        )
    if not (
        value.startswith(_BASE64_OPEN)
        and value.endswith(_BASE64_CLOSE)
        and len(value) >= len(_BASE64_OPEN) + len(_BASE64_CLOSE)
    ):
        return value
    encoded = value[len(_BASE64_OPEN) : -len(_BASE64_CLOSE)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise _Refusal(
            400,
            HEADER_MISMATCH,
            f"Header mismatch: {header} is not valid Base64 of UTF-8.",
            request_id,
        ) from None


class MCPResource(Resource):
    """
    C{/mcp}: one JSON-RPC message per C{POST}; a legacy session's event
    stream on C{GET}; the end of a legacy session on C{DELETE}.

    @param source: what the resources and prompts read; that of C{tools}
        unless given.
    @param notifications: the event streams; a registry of this resource's
        own unless given (its keep-alives need it started).
    """

    isLeaf = True

    def __init__(
        self,
        tools: ToolRegistry,
        sessions: Sessions,
        base_url: str,
        allowed_origins: tuple[str, ...] = (),
        instructions: str = "",
        *,
        source: SnapshotSource | None = None,
        notifications: Notifications | None = None,
        clock: IReactorTime | None = None,
    ) -> None:
        super().__init__()
        source = tools.source if source is None else source
        clock = sessions.clock if clock is None else clock
        if notifications is None:
            from reviewsd.mcp.resources import Catalogue

            notifications = Notifications(clock, Catalogue(source))
        self._sessions = sessions
        self.methods = Methods(
            tools, source, notifications, clock, instructions, notifications.catalogue
        )
        self.notifications = notifications
        notifications.identity = lambda: {
            SERVER_INFO: server_info(self.methods.title())
        }
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
        return error_body(
            refusal.request_id, refusal.code, refusal.message, refusal.data
        )

    def _check_origin(self, request: Request) -> None:
        if not self._origin_allowed(request):
            raise _Refusal(
                403,
                INVALID_REQUEST,
                "Origin not allowed: requests from web pages must come from an "
                "allowed origin.",
            )

    @staticmethod
    def _client(request: Request) -> str:
        return str(getattr(request.getClientAddress(), "host", "-"))

    def render_GET(self, request: Request) -> bytes | int:
        """A legacy session's stream of notifications (400 without a session)."""
        try:
            self._check_origin(request)
            if request.getHeader(b"mcp-session-id") is None:
                raise _Refusal(
                    400,
                    INVALID_REQUEST,
                    "Missing Mcp-Session-Id header: GET opens the event stream of "
                    "a legacy session; otherwise POST JSON-RPC messages to /mcp.",
                )
            session = self._session(request, None)
            if not accepts_all(request.getHeader(b"accept"), "text/event-stream"):
                raise _Refusal(
                    406, INVALID_REQUEST, "Accept must allow text/event-stream."
                )
            self._cors(request)
            self.notifications.open_session_stream(
                request, self._client(request), session.id
            )
        except _Refusal as refusal:
            return self._refuse(request, refusal)
        except StreamRefused as refused:
            return self._busy(request, refused, None)
        return NOT_DONE_YET

    def render_HEAD(self, request: Request) -> bytes:
        request.setHeader(b"Allow", _ALLOW)
        self._refuse(
            request,
            _Refusal(405, INVALID_REQUEST, "HEAD has no answer here: POST to /mcp."),
        )
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
            b"Mcp-Method, Mcp-Name, Last-Event-ID",
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
        self.notifications.end_session(session_id)
        self._cors(request)
        request.setResponseCode(204)
        return b""

    def _session_header(self, request: Request, request_id: Any) -> str:
        raw = request.getHeader(b"mcp-session-id")
        if raw is None:
            raise _Refusal(
                400,
                INVALID_REQUEST,
                "Missing Mcp-Session-Id header: send initialize first, then the id "
                "it returns with every request (or speak revision 2026-07-28, "
                "which needs no session).",
                request_id,
            )
        return raw.decode("latin-1")

    def _session(self, request: Request, request_id: Any) -> Session:
        session = self._sessions.get(self._session_header(request, request_id))
        if session is None:
            raise _Refusal(
                404,
                INVALID_REQUEST,
                "Unknown or expired session: initialize again, without a session id.",
                request_id,
            )
        return session

    def _busy(self, request: Request, refused: StreamRefused, request_id: Any) -> bytes:
        request.setHeader(b"Retry-After", b"%d" % refused.retry_after)
        return self._refuse(
            request, _Refusal(503, INTERNAL_ERROR, refused.message, request_id)
        )

    def render_POST(self, request: Request) -> bytes | int:
        try:
            body = self._post(request)
        except _Refusal as refusal:
            return self._refuse(request, refusal)
        if body is NOT_DONE_YET:
            return NOT_DONE_YET
        assert not isinstance(body, int)
        if body is None:
            request.setResponseCode(202)
            return b""
        request.setHeader(b"Content-Type", b"application/json")
        return body

    def _post(self, request: Request) -> bytes | int | None:
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
        body = request.content.read() if request.content is not None else b""
        message = self._parse(body)
        self._cors(request)
        version = self._modern_version(request, message)
        if version is not None:
            return self._modern(request, message)
        return self._legacy(request, message)

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

    # --- which era ------------------------------------------------------------

    @staticmethod
    def _unsupported(requested: str, request_id: Any) -> _Refusal:
        return _Refusal(
            400,
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {_shown(requested)}; supported: "
            f"{', '.join(SUPPORTED)}.",
            request_id,
            {"supported": list(SUPPORTED), "requested": requested[:100]},
        )

    def _modern_version(self, request: Request, message: dict[str, Any]) -> str | None:
        """
        The modern revision a message is in, or C{None} for a legacy one.
        The header and the body must agree on it, and it must be spoken.
        """
        request_id = message.get("id")
        header = _header(request, b"mcp-protocol-version")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if (
            isinstance(meta, dict)
            and PROTOCOL_VERSION in meta
            and meta[PROTOCOL_VERSION] not in LEGACY
        ):
            declared = meta[PROTOCOL_VERSION]
            if not isinstance(declared, str):
                raise _Refusal(
                    400,
                    INVALID_PARAMS,
                    f"_meta[{PROTOCOL_VERSION!r}] must be a string.",
                    request_id,
                )
            if header != declared:
                raise _Refusal(
                    400,
                    HEADER_MISMATCH,
                    "Header mismatch: MCP-Protocol-Version "
                    f"{_shown(header) if header is not None else '(missing)'} does "
                    f"not match _meta {_shown(declared)}.",
                    request_id,
                )
            if declared not in MODERN:
                raise self._unsupported(declared, request_id)
            return declared
        if header in MODERN:
            return header
        if header is not None and header not in SUPPORTED:
            raise self._unsupported(header, request_id)
        return None

    # --- modern ---------------------------------------------------------------

    def _check_headers(
        self, request: Request, method: str, params: Any, request_id: Any
    ) -> None:
        """C{Mcp-Method} and C{Mcp-Name} say what the body says, or -32020."""
        sent = _header(request, b"mcp-method")
        if sent is None:
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                "Header mismatch: the Mcp-Method header is missing.",
                request_id,
            )
        if _mirrored(sent, "Mcp-Method", request_id) != method:
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Method {_shown(sent)} does not match the "
                f"body's method {_shown(method)}.",
                request_id,
            )
        field = _NAMED.get(method)
        if field is None:
            return
        named = params.get(field) if isinstance(params, dict) else None
        name = _header(request, b"mcp-name")
        if name is None:
            if named is None:
                return  # the params are wrong: the method says so
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                f"Header mismatch: the Mcp-Name header is missing ({method} "
                f"names params.{field}).",
                request_id,
            )
        if _mirrored(name, "Mcp-Name", request_id) != named:
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Name {_shown(name)} does not match "
                f"params.{field}.",
                request_id,
            )

    @staticmethod
    def _check_meta(params: Any, request_id: Any) -> dict[str, Any]:
        """The params of a modern request, with their C{_meta} whole, or 400."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise _Refusal(400, INVALID_PARAMS, "params must be an object.", request_id)
        meta = params.get("_meta")
        missing = [
            key
            for key in (PROTOCOL_VERSION, CLIENT_CAPABILITIES)
            if not isinstance(meta, dict) or key not in meta
        ]
        if missing:
            raise _Refusal(
                400,
                INVALID_PARAMS,
                "Invalid params: every request of revision 2026-07-28 carries "
                f"params._meta with {' and '.join(missing)}.",
                request_id,
            )
        assert isinstance(meta, dict)
        if not isinstance(meta[CLIENT_CAPABILITIES], dict):
            raise _Refusal(
                400,
                INVALID_PARAMS,
                f"Invalid params: _meta[{CLIENT_CAPABILITIES!r}] must be an object.",
                request_id,
            )
        return params

    def _modern(self, request: Request, message: dict[str, Any]) -> bytes | int | None:
        request_id, method = message.get("id"), message.get("method")
        if "id" not in message or method is None:
            # no notification asks anything of this server, and it sends no
            # request a response could answer: accepted, as in a session
            return None
        self._check_headers(request, method, message.get("params"), request_id)
        params = self._check_meta(message.get("params"), request_id)
        try:
            if method == "subscriptions/listen":
                self.notifications.listen(
                    request,
                    self._client(request),
                    request_id,
                    params.get("notifications"),
                )
                return NOT_DONE_YET
            return result_body(request_id, self.methods.modern(method, params))
        except RPCError as e:
            request.setResponseCode(e.status)
            return error_body(request_id, e.code, e.message, e.data)
        except StreamRefused as refused:
            request.setResponseCode(503)
            request.setHeader(b"Retry-After", b"%d" % refused.retry_after)
            return error_body(request_id, INTERNAL_ERROR, refused.message)

    # --- legacy ---------------------------------------------------------------

    def _legacy(self, request: Request, message: dict[str, Any]) -> bytes | None:
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize" and "id" in message:
            return self._initialize(request, request_id, message.get("params"))
        session = self._session(request, request_id)
        if "id" not in message or method is None:
            # a notification (notifications/initialized among them), or a
            # response to a request this server never sends: nothing to do
            return None
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return error_body(request_id, INVALID_PARAMS, "params must be an object.")
        try:
            result = self.methods.legacy(method, params or {}, session.id)
        except RPCError as e:
            return error_body(request_id, e.code, e.message, e.data)
        return result_body(request_id, result)

    def _initialize(self, request: Request, request_id: Any, params: Any) -> bytes:
        if not isinstance(params, dict) or not isinstance(
            params.get("protocolVersion"), str
        ):
            return error_body(
                request_id,
                INVALID_PARAMS,
                "initialize needs params.protocolVersion (a string).",
            )
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY else LATEST_LEGACY
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
        return result_body(request_id, self.methods.initialize(version))
