"""
Schemathesis hooks for the OpenAPI fuzzing test: what the description says
in words but cannot state as a schema, and keeping the fuzzer's WebSub
subscriptions off the network.

  - OpenAPI cannot state that C{since} must not be later than C{until}; the
    description says so and the service answers 400, which a fuzzer
    generating "schema-valid" pairs would report. Those pairs are left out
    here and tested in C{tests.test_search}.
  - WebSub counts C{hub.secret} in bytes (less than 200), JSON Schema's
    C{maxLength} in characters: a subscribe form whose secret fits in 199
    characters but not in 199 bytes is left out (its 400 is tested in
    C{tests.test_openapi}).
  - Every callback the description's pattern admits gets C{localhost} as
    its host, so that the hub never looks up or calls a generated name or
    address: it accepts the request, and refuses loopback when it verifies,
    without connecting. Which address literals the hub refuses at once
    depends on C{--allow-private-callbacks}; the description says so in
    words, and C{tests.test_openapi} checks the pattern against the hub.
  - Every C{/mcp} message but C{initialize} needs an C{Mcp-Session-Id}; a
    message sent without one is given a real session, opened once, so that
    the fuzzer reaches the methods (a generated id gets 404, as described),
    and C{DELETE} gets a real session to end.
  - A C{/mcp} message of revision 2026-07-28 (its C{MCP-Protocol-Version}
    says so) needs no session, but headers that say what its body says and
    C{params._meta}: the description says so in words, and the hook makes
    the message so (their absence is tested in C{tests.test_mcp_features}).
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import schemathesis

from reviewsd.data.openapi import (
    CALLBACK_MAX_LENGTH,
    CALLBACK_PATTERN,
    SECRET_MAX_BYTES,
)

_CALLBACK = re.compile(CALLBACK_PATTERN.removesuffix("$") + r"\Z")
_SESSIONS: dict[str, str] = {}


def _form(case: Any) -> Any:
    """The hub form of C{case}, or C{None} for another operation."""
    if case.operation.path != "/api/websub/hub" or not isinstance(case.body, dict):
        return None
    return case.body


def _secret_over_bytes(case: Any) -> bool:
    form = _form(case)
    if form is None or form.get("hub.mode") != "subscribe":
        return False
    secret = form.get("hub.secret")
    return (
        isinstance(secret, str)
        and len(secret) <= SECRET_MAX_BYTES
        and len(secret.encode("utf-8", "surrogatepass")) > SECRET_MAX_BYTES
    )


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    query = case.query or {}
    since, until = query.get("since"), query.get("until")
    if isinstance(since, str) and isinstance(until, str) and since > until:
        return False
    return not _secret_over_bytes(case)


def _on_localhost(callback: str) -> str:
    """C{callback} with C{localhost} as its host, and no longer than allowed."""
    parts = urlsplit(callback)
    port = f":{parts.port}" if parts.port is not None else ""
    moved = urlunsplit(parts._replace(netloc="localhost" + port))
    moved = moved[:CALLBACK_MAX_LENGTH]
    return moved if _CALLBACK.match(moved) else callback


_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "schemathesis", "version": "1"},
        },
    }
).encode()


def _open_session(base_url: str) -> str:
    """A new MCP session on the daemon under test."""
    request = urllib.request.Request(
        base_url.rstrip("/") + "/mcp",
        data=_INITIALIZE,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.headers["Mcp-Session-Id"])


def _session(base_url: str) -> str:
    """A live MCP session on the daemon under test, opened once."""
    if base_url not in _SESSIONS:
        _SESSIONS[base_url] = _open_session(base_url)
    return _SESSIONS[base_url]


_MODERN = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": _MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _stateless(case: Any, headers: dict[str, Any], named: dict[str, str]) -> bool:
    """A 2026-07-28 message made whole: its headers and C{_meta} as described."""
    version = named.get("mcp-protocol-version")
    if (
        version is None
        or headers[version] != _MODERN
        or not isinstance(case.body, dict)
    ):
        return False
    params = case.body.get("params")
    params = (
        {**params, "_meta": _META} if isinstance(params, dict) else {"_meta": _META}
    )
    body = {**case.body, "params": params}
    case.body = body
    method = body.get("method")
    for name in ("mcp-method", "mcp-name"):
        if name in named:
            del headers[named[name]]
    if isinstance(method, str) and method.isascii() and method.isprintable():
        headers["Mcp-Method"] = method
        value = params.get(_NAMED.get(method, ""))
        if isinstance(value, str) and value.isascii() and value.isprintable():
            headers["Mcp-Name"] = value
    return True


def _with_session(case: Any) -> None:
    """
    A message without a session gets the shared one; C{DELETE}, which
    needs one, gets a session of its own to end, in place of a generated
    id (which gets 404, as the POSTs with one show).
    """
    body = case.body if isinstance(case.body, dict) else {}
    headers = dict(case.headers or {})
    named = {name.lower(): name for name in headers}
    base_url = case.operation.base_url or case.operation.schema.get_base_url()
    method = case.method.upper()
    if method == "POST" and _stateless(case, headers, named):
        case.headers = headers
        return
    if method == "DELETE" and "mcp-session-id" in named:
        headers[named["mcp-session-id"]] = _open_session(base_url)
    elif (
        method == "POST"
        and body.get("method") != "initialize"
        and "mcp-session-id" not in named
    ):
        headers["Mcp-Session-Id"] = _session(base_url)
    else:
        return
    case.headers = headers


@schemathesis.hook
def before_add_examples(context: Any, examples: list[Any]) -> None:
    """The description's examples get what generated cases get."""
    examples[:] = [map_case(context, c) for c in examples if filter_case(context, c)]


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    form = _form(case)
    callback = form.get("hub.callback") if form is not None else None
    if form is not None and isinstance(callback, str) and _CALLBACK.match(callback):
        form["hub.callback"] = _on_localhost(callback)
    if case.operation.path == "/mcp":
        _with_session(case)
    return case
