"""
Errors as JSON, in one shape, whoever answers them: the documents, the
Klein routes, and the resources mounted beside them.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http import RESPONSES
from twisted.web.iweb import IRequest

from reviewsd.data.documents import to_json

log = Logger()


def json_error(
    request: IRequest, code: int, error: str, message: str, **extra: Any
) -> bytes:
    """The one shape of every error: C{{"error", "message"}} and any extras."""
    request.setResponseCode(code)
    request.setHeader(b"Content-Type", b"application/json")
    request.setHeader(b"Cache-Control", b"no-store")
    return to_json({"error": error, "message": message, **extra})


_REASONS = {414: b"URI Too Long", 431: b"Request Header Fields Too Large"}


def closing_error(code: int, error: str, message: str) -> bytes:
    """
    A whole answer in the shape of L{json_error}, closing the connection:
    for a request too malformed to become a request object (its line or
    headers could not be read), answered by the connection itself.
    """
    body = to_json({"error": error, "message": message})
    reason = _REASONS.get(code) or RESPONSES.get(code, b"Error")
    return (
        b"HTTP/1.1 %d %s\r\n"
        b"Content-Type: application/json\r\n"
        b"Cache-Control: no-store\r\n"
        b"Content-Length: %d\r\n"
        b"Connection: close\r\n\r\n%s" % (code, reason, len(body), body)
    )


def request_path(request: IRequest) -> str:
    """The path, for a message: whatever bytes the client sent, readable."""
    return request.path.decode("utf-8", "replace")


def not_found(request: IRequest) -> bytes:
    return json_error(
        request, 404, "not_found", f"There is nothing at {request_path(request)}."
    )


def method_not_allowed(request: IRequest, allowed: bytes) -> bytes:
    """A 405 naming the methods C{allowed} (comma-separated), in C{Allow} too."""
    request.setHeader(b"Allow", allowed)
    return json_error(
        request,
        405,
        "method_not_allowed",
        f"{request.method.decode('latin-1')} is not allowed on "
        f"{request_path(request)}; use {allowed.decode('ascii')}.",
    )


def internal_error(request: IRequest, failure: Failure) -> bytes:
    """A fault of ours: logged, and answered as JSON without a traceback."""
    log.failure(
        "Unhandled error answering {method} {path}",
        failure,
        method=request.method.decode("latin-1"),
        path=request_path(request),
    )
    return json_error(
        request,
        500,
        "internal_error",
        "The server failed to answer this request; it has been logged.",
    )
