"""
The MCP methods, answered for either era: a modern request's result
carries C{resultType}, the server's identity in C{_meta} and, for lists and
reads, caching hints; a legacy session's result is the same without them,
and a legacy unknown resource is the older C{-32002}.

Caching hints say what the daemon knows: the tools, prompts and templates
change only with its code, so they stay fresh for an hour; the resources
change when the data does, so they stay fresh for a tenth of the time the
data has been unchanged (as HTTP caches guess from C{Last-Modified}), at
least 5 seconds (what the documents' C{max-age} says) and at most an hour.
Subscribers hear of a change at once either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from reviewsd.data.documents import to_json
from reviewsd.data.links import REVIEWS_PATH
from reviewsd.data.snapshot import SnapshotSource
from reviewsd.mcp.completion import Completion
from reviewsd.mcp.prompts import Prompts
from reviewsd.mcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND_LEGACY,
    SERVER_INFO,
    SUPPORTED,
    RPCError,
    invalid_params,
    server_info,
    with_fields,
)
from reviewsd.mcp.resources import Catalogue, InvalidCursor, ResourceNotFound
from reviewsd.mcp.subscriptions import Notifications
from reviewsd.mcp.tools import ToolCallError, ToolRegistry

log = Logger()

STATIC_TTL_MS = 3_600_000
"""Freshness of what changes only with the code: an hour."""
DATA_TTL_MIN_MS = 5_000
DATA_TTL_MAX_MS = 3_600_000

CAPABILITIES = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": False},
    "completions": {},
}

_STATIC = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/templates/list"}
)
_DATA = frozenset({"resources/list", "resources/read"})


def _no_cursor(params: dict[str, Any]) -> None:
    if params.get("cursor") is not None:
        raise invalid_params("Unknown cursor: the list has one page.")


class Methods:
    """
    What each method answers.

    @param notifications: the streams, for C{subscriptions/listen} and the
        legacy C{resources/subscribe}.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        source: SnapshotSource,
        notifications: Notifications,
        clock: IReactorTime,
        instructions: str = "",
        catalogue: Catalogue | None = None,
    ) -> None:
        self.tools = tools
        self.source = source
        self.catalogue = Catalogue(source) if catalogue is None else catalogue
        self.prompts = Prompts(source, self.catalogue)
        self.completion = Completion(source, self.prompts, self.catalogue)
        self.notifications = notifications
        self._clock = clock
        self._instructions = instructions
        self._identity: tuple[str, bytes] = ("", b"")
        self._common: dict[str, Callable[[dict[str, Any]], bytes]] = {
            "tools/list": self._tools,
            "tools/call": self._call,
            "resources/templates/list": self._templates,
            "prompts/list": self._prompts,
            "prompts/get": lambda p: to_json(
                self.prompts.get(p.get("name"), p.get("arguments"))
            ),
            "completion/complete": lambda p: to_json(self.completion.complete(p)),
            "resources/list": self._list_resources,
        }

    # --- who this server is -----------------------------------------------------

    def title(self) -> str:
        return self.tools.title()

    def instructions(self) -> str:
        return self._instructions or (
            self.tools.instructions()
            + " Resources: the business profile, the insights, the FAQ and each "
            "review (its URL); prompts: digests, reports and answers to "
            "customers' questions built from the reviews."
        )

    def identity(self) -> bytes:
        """The result C{_meta} naming this server, as bytes."""
        title = self.title()
        if self._identity[0] != title:
            meta = to_json({SERVER_INFO: server_info(title)})
            self._identity = (title, b'"_meta":%s' % meta)
        return self._identity[1]

    def initialize(self, version: str) -> bytes:
        return to_json(
            {
                "protocolVersion": version,
                "capabilities": CAPABILITIES,
                "serverInfo": server_info(self.title()),
                "instructions": self.instructions(),
            }
        )

    def _discover(self, params: dict[str, Any]) -> bytes:
        return to_json(
            {
                "supportedVersions": list(SUPPORTED),
                "capabilities": CAPABILITIES,
                "instructions": self.instructions(),
            }
        )

    # --- methods --------------------------------------------------------------

    def _tools(self, params: dict[str, Any]) -> bytes:
        _no_cursor(params)
        return b'{"tools":%s}' % self.tools.listing

    def _templates(self, params: dict[str, Any]) -> bytes:
        _no_cursor(params)
        return to_json({"resourceTemplates": self.catalogue.templates()})

    def _prompts(self, params: dict[str, Any]) -> bytes:
        _no_cursor(params)
        return to_json({"prompts": self.prompts.listing})

    def _call(self, params: dict[str, Any]) -> bytes:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            raise invalid_params("tools/call needs params.name (a string).")
        try:
            return self.tools.call(name, {} if arguments is None else arguments)
        except ToolCallError as e:
            raise RPCError(INVALID_PARAMS, e.message, e.data) from None
        except Exception:
            log.failure("MCP tool {name} failed", name=name)
            raise RPCError(
                INTERNAL_ERROR, f"The tool {name} failed; it has been logged."
            ) from None

    def _list_resources(self, params: dict[str, Any]) -> bytes:
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise invalid_params("cursor must be a string.")
        try:
            resources, following = self.catalogue.page(cursor)
        except InvalidCursor:
            raise invalid_params(
                "Invalid cursor: the reviews changed since it was made, or it is "
                "not this server's; list again from the start."
            ) from None
        result: dict[str, Any] = {"resources": resources}
        if following is not None:
            result["nextCursor"] = following
        return to_json(result)

    def _read(self, params: dict[str, Any], not_found: int) -> bytes:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("resources/read needs params.uri (a string).")
        try:
            return b'{"contents":%s}' % self.catalogue.read(uri)
        except ResourceNotFound:
            raise RPCError(
                not_found, f"Resource not found: {uri[:2048]}", {"uri": uri}
            ) from None

    def data_ttl_ms(self) -> int:
        changed = self.source.snapshot.documents[REVIEWS_PATH].last_modified
        age = self._clock.seconds() - changed
        return int(min(max(age * 100, DATA_TTL_MIN_MS), DATA_TTL_MAX_MS))

    def modern(self, method: str, params: dict[str, Any]) -> bytes:
        """
        The result of a modern request (C{subscriptions/listen} excepted).

        @raise RPCError: its error; an unknown method is 404.
        """
        if method == "server/discover":
            result = self._discover(params)
        elif method == "resources/read":
            result = self._read(params, INVALID_PARAMS)
        else:
            answer = self._common.get(method)
            if answer is None:
                raise RPCError(
                    METHOD_NOT_FOUND,
                    f"Method not found: {method[:100]}",
                    status=404,
                )
            result = answer(params)
        fields = b'"resultType":"complete",' + self.identity()
        if method in _STATIC:
            fields += b',"ttlMs":%d,"cacheScope":"public"' % STATIC_TTL_MS
        elif method in _DATA:
            fields += b',"ttlMs":%d,"cacheScope":"public"' % self.data_ttl_ms()
        return with_fields(result, fields)

    def legacy(self, method: str, params: dict[str, Any], session: str) -> bytes:
        """The result of a request in a legacy session, or L{RPCError}."""
        if method == "ping":
            return b"{}"
        if method == "resources/read":
            return self._read(params, RESOURCE_NOT_FOUND_LEGACY)
        if method == "resources/subscribe":
            self.notifications.subscribe(session, params.get("uri"))
            return b"{}"
        if method == "resources/unsubscribe":
            self.notifications.unsubscribe(session, params.get("uri"))
            return b"{}"
        answer = self._common.get(method)
        if answer is None:
            raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
        return answer(params)
