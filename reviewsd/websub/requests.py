"""
Subscription requests (WebSub 5.1): from the form a subscriber posts to a
checked L{HubRequest}, or the reason it is refused.

Parsing knows nothing of subscriptions or the network: a request that
passes here is well formed, which is all the 202 answer may depend on.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from attrs import field, frozen

FORM = b"application/x-www-form-urlencoded"
MAX_SECRET = 200
"""C{hub.secret} must be shorter than this, in bytes (WebSub 5.1)."""
MAX_URL = 2048
MAX_FIELDS = 64
_MAX_LEASE_DIGITS = 18

Mode = Literal["subscribe", "unsubscribe"]
_KNOWN = ("hub.callback", "hub.mode", "hub.topic", "hub.lease_seconds", "hub.secret")
_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class BadHubRequest(Exception):
    """
    A request the hub refuses as sent.

    @ivar status: 400, or 415 for a body that is not a form.
    @ivar reason: the plain-text explanation sent back.
    """

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@frozen
class HubRequest:
    """
    A well-formed subscribe or unsubscribe request.

    @ivar topic: one of the hub's topics, exactly as the hub spells it.
    @ivar callback: the callback URL, normalized (see L{normalize_url}).
    @ivar lease_seconds: the lease asked for, if any (subscribe only).
    @ivar secret: the HMAC key asked for, if any (subscribe only); kept out
        of C{repr}, so that it never reaches a log.
    """

    mode: Mode
    topic: str
    callback: str
    lease_seconds: int | None = None
    secret: bytes | None = field(default=None, repr=False)


def _shown(value: str) -> str:
    """A value quoted back in an error, cut short: it came from the client."""
    return repr(value if len(value) <= 100 else value[:100] + "...")


def _unescape_unreserved(match: re.Match[str]) -> str:
    character = chr(int(match.group(1), 16))
    return character if character in _UNRESERVED else "%" + match.group(1).upper()


def normalize_url(url: str) -> str:
    """
    The form of C{url} used to compare and store it (RFC 3986 6.2.2):
    percent-escapes of unreserved characters decoded and the others in
    upper case, scheme and host in lower case, the scheme's default port
    and an empty path spelled the short way.
    """
    url = _ESCAPE.sub(_unescape_unreserved, url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    if parts.hostname is not None and "@" not in netloc:
        host = parts.hostname
        if ":" in host:
            host = f"[{host}]"
        netloc = host
        if port is not None and port != _DEFAULT_PORTS.get(scheme):
            netloc = f"{host}:{port}"
    path = parts.path or ("/" if netloc else "")
    return urlunsplit((scheme, netloc, path, parts.query, parts.fragment))


def _valid_host(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    if len(host) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in host.rstrip(".").split("."))


def check_callback(value: str) -> str:
    """
    The normalized callback, or L{BadHubRequest}: this hub calls back only
    absolute C{https} URLs, without user information or fragment.
    """
    if len(value) > MAX_URL:
        raise BadHubRequest(f"hub.callback is longer than {MAX_URL} characters.")
    if not value.isascii() or any(c <= " " or c in "\x7f\\" for c in value):
        raise BadHubRequest(
            "hub.callback must be an absolute https URL in ASCII, without spaces "
            "(percent-encode anything else)."
        )
    if "#" in value:
        raise BadHubRequest("hub.callback must not have a fragment (#...).")
    if not _bracketed_host_valid(value):
        raise BadHubRequest("hub.callback does not name a valid host.")
    url = normalize_url(value)
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise BadHubRequest(
            "hub.callback must be an absolute https URL, such as "
            "https://subscriber.example/websub; this hub calls back only over https."
        )
    if "@" in parts.netloc:
        raise BadHubRequest("hub.callback must not carry user information (user@).")
    try:
        port = parts.port
    except ValueError:
        raise BadHubRequest("hub.callback has an invalid port.") from None
    host = parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc
    if not parts.hostname or not _valid_host(host) or port == 0:
        raise BadHubRequest("hub.callback does not name a valid host.")
    return url


def _bracketed_host_valid(url: str) -> bool:
    """
    Whether C{url} parses, with any host in brackets an IPv6 address: a
    bracketed name such as C{[v1.x]} would lose its brackets, and its
    meaning, once normalized.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if "[" not in parts.netloc:
        return True
    try:
        ipaddress.IPv6Address(host or "")
    except ValueError:
        return False
    return True


def _topic(value: str, topics: Iterable[str]) -> str:
    known = {normalize_url(topic): topic for topic in topics}
    topic = known.get(normalize_url(value))
    if topic is None:
        raise BadHubRequest(
            f"hub.topic {_shown(value)} is not a topic of this hub; the topics are "
            + ", ".join(known.values())
            + "."
        )
    return topic


def _lease(value: str) -> int:
    if not re.fullmatch(r"[0-9]+", value):
        raise BadHubRequest(
            f"hub.lease_seconds must be a whole number of seconds, got {_shown(value)}."
        )
    if len(value.lstrip("0")) > _MAX_LEASE_DIGITS:
        raise BadHubRequest("hub.lease_seconds is too large to be a lease.")
    lease = int(value)
    if lease <= 0:
        raise BadHubRequest("hub.lease_seconds must be at least 1.")
    return lease


def _check_content_type(content_type: bytes | None) -> None:
    if content_type is None:
        raise BadHubRequest(
            "Send the request as application/x-www-form-urlencoded.", 415
        )
    media, _, params = content_type.partition(b";")
    if media.strip().lower() != FORM:
        raise BadHubRequest(
            "Send the request as application/x-www-form-urlencoded, not "
            f"{media.strip().decode('latin-1')}.",
            415,
        )
    for param in params.split(b";"):
        name, _, value = param.partition(b"=")
        if name.strip().lower() == b"charset":
            charset = value.strip().strip(b'"').lower()
            if charset not in (b"utf-8", b"utf8", b"us-ascii"):
                raise BadHubRequest("The form must be encoded in UTF-8.", 415)


def parse_hub_request(
    content_type: bytes | None, body: bytes, topics: Iterable[str]
) -> HubRequest:
    """
    Check a request posted to the hub.

    @param topics: the hub's topic URLs; any other topic is refused.
    @raise BadHubRequest: the request is not well formed; C{reason} says
        what to change. Parameters the hub does not know are ignored.
    """
    _check_content_type(content_type)
    try:
        fields = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except UnicodeError:
        raise BadHubRequest("The form must be encoded in UTF-8.") from None
    except ValueError:
        raise BadHubRequest(f"The form has more than {MAX_FIELDS} fields.") from None
    values: dict[str, str] = {}
    for name, value in fields:
        if name not in _KNOWN:
            continue
        if name in values:
            raise BadHubRequest(f"{name} is given more than once.")
        values[name] = value

    mode = values.get("hub.mode")
    if not mode:
        raise BadHubRequest("hub.mode is missing: subscribe or unsubscribe.")
    if mode == "publish":
        raise BadHubRequest(
            "hub.mode=publish is not accepted: this hub publishes its topics "
            "itself whenever their content changes."
        )
    if mode not in ("subscribe", "unsubscribe"):
        raise BadHubRequest(
            f"hub.mode {_shown(mode)} is not known: use subscribe or unsubscribe."
        )
    if "hub.topic" not in values:
        raise BadHubRequest("hub.topic is missing.")
    topic = _topic(values["hub.topic"], topics)
    if "hub.callback" not in values:
        raise BadHubRequest("hub.callback is missing.")
    callback = check_callback(values["hub.callback"])
    if mode == "unsubscribe":
        # lease and secret mean nothing here, and WebSub says to ignore them
        return HubRequest(mode="unsubscribe", topic=topic, callback=callback)

    lease = None
    if "hub.lease_seconds" in values:
        lease = _lease(values["hub.lease_seconds"])
    secret = None
    if values.get("hub.secret"):
        secret = values["hub.secret"].encode("utf-8")
        if len(secret) >= MAX_SECRET:
            raise BadHubRequest(
                f"hub.secret must be shorter than {MAX_SECRET} bytes, got "
                f"{len(secret)}."
            )
    return HubRequest(
        mode="subscribe",
        topic=topic,
        callback=callback,
        lease_seconds=lease,
        secret=secret,
    )
