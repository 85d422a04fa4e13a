"""
C{POST /api/websub/hub}: where subscribers send subscription requests.

A well-formed request is answered 202 as soon as it is stored, whatever
its verification will find (WebSub 5.1.2); a malformed one gets a 4xx with
a plain-text reason, and so does a callback on an address the hub's
outbound client would never contact (400: no need to wait for a
verification that cannot happen). Other methods get this service's JSON
405.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request

from reviewsd.web.errors import json_error
from reviewsd.websub.hub import Hub, HubUnavailable, TooManySubscriptions
from reviewsd.websub.requests import BadHubRequest, parse_hub_request

log = Logger()

_ALLOW = b"POST"
ACCEPTED = "Accepted: the hub will verify this request with the callback."


def _text(request: Request, code: int, message: str) -> bytes:
    request.setResponseCode(code)
    request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
    request.setHeader(b"Cache-Control", b"no-store")
    return message.encode("utf-8") + b"\n"


class HubResource(Resource):
    """The hub's one URL; everything it decides is the L{Hub}'s."""

    isLeaf = True

    def __init__(self, hub: Hub) -> None:
        super().__init__()
        self._hub = hub

    def render(self, request: Request) -> bytes | int:
        if request.method != b"POST":
            return self._method_not_allowed(request)
        if getattr(request, "too_large", False):
            return _text(request, 413, "The request body is too large.")
        body = request.content.read() if request.content is not None else b""
        try:
            hub_request = parse_hub_request(
                request.getHeader(b"content-type"),
                body,
                self._hub.config.topics,
            )
        except BadHubRequest as e:
            return _text(request, e.status, e.reason)
        refused = self._hub.callback_refusal(hub_request.callback)
        if refused is not None:
            host = urlsplit(hub_request.callback).hostname
            return _text(
                request,
                400,
                f"hub.callback is on {host}, an address this hub never calls "
                f"back ({refused}); give a callback on a public address.",
            )
        finished = [False]
        request.notifyFinish().addBoth(lambda _: finished.__setitem__(0, True))
        self._hub.accept(hub_request).addCallbacks(
            lambda _: self._finish(request, finished, 202, ACCEPTED),
            lambda f: self._failed(request, finished, f),
        )
        return NOT_DONE_YET

    def _finish(
        self, request: Request, finished: list[bool], code: int, message: str
    ) -> None:
        if finished[0]:
            return
        request.write(_text(request, code, message))
        request.finish()

    def _failed(self, request: Request, finished: list[bool], failure: Failure) -> None:
        if failure.check(TooManySubscriptions):
            self._finish(request, finished, 403, str(failure.value))
        elif failure.check(HubUnavailable):
            request.setHeader(b"Retry-After", b"30")
            self._finish(
                request,
                finished,
                503,
                "The hub is not accepting requests right now; try again later.",
            )
        else:
            log.failure("Could not accept a WebSub request", failure)
            self._finish(
                request,
                finished,
                500,
                "The hub failed to store this request; it has been logged.",
            )

    def _method_not_allowed(self, request: Request) -> bytes:
        request.setHeader(b"Allow", _ALLOW)
        body = json_error(
            request,
            405,
            "method_not_allowed",
            f"{request.method.decode('latin-1')} is not allowed on "
            f"{request.path.decode('latin-1')}; use POST.",
        )
        request.setHeader(b"Content-Length", b"%d" % len(body))
        return b"" if request.method == b"HEAD" else body
