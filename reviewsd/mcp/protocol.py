"""
What both eras of the Model Context Protocol share here: the revisions
spoken, the JSON-RPC error codes, the reserved C{_meta} keys, and the
envelopes of answers as bytes.

The modern revision (C{2026-07-28}) is stateless: every request names its
revision and the client's capabilities in C{params._meta}. The legacy
revisions open a session with C{initialize}.
"""

from __future__ import annotations

from typing import Any

from reviewsd import __version__
from reviewsd.data.documents import to_json

MODERN = ("2026-07-28",)
"""The stateless revisions, newest first."""
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The revisions opened by C{initialize}, newest first."""
SUPPORTED = MODERN + LEGACY
"""Every revision C{/mcp} speaks, newest first."""
LATEST_LEGACY = LEGACY[0]
"""What C{initialize} answers a client asking for a revision not spoken."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND_LEGACY = -32002
"""The legacy revisions' code for an unknown resource (now C{-32602})."""
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

SERVER_NAME = "reviewsd"


class RPCError(Exception):
    """
    A JSON-RPC error answer: C{status} is its HTTP status, 200 for the
    errors of a method (its client asked for something that is not there).
    """

    def __init__(
        self, code: int, message: str, data: Any = None, status: int = 200
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


def invalid_params(message: str, data: Any = None) -> RPCError:
    return RPCError(INVALID_PARAMS, message, data)


def error_body(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return to_json({"jsonrpc": "2.0", "id": request_id, "error": error})


def result_body(request_id: Any, result: bytes) -> bytes:
    """The answer carrying C{result}, a JSON object's bytes."""
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (to_json(request_id), result)


def server_info(title: str) -> dict[str, str]:
    return {"name": SERVER_NAME, "title": title, "version": __version__.public()}


def with_fields(result: bytes, fields: bytes) -> bytes:
    """
    C{result} (a JSON object's bytes) with C{fields} (members, comma
    separated, without braces) first: results made once, such as a tool's,
    are not parsed again to gain a member.
    """
    if result == b"{}":
        return b"{" + fields + b"}"
    return b"{" + fields + b"," + result[1:]
