"""
C{twistd reviewsd}'s options: the command line, merged with a TOML
configuration file, checked so that a bad value stops start-up with one
line naming the option, and completed with the defaults.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.endpoints import serverFromString
from twisted.python import usage

from reviewsd import __version__
from reviewsd.data.loading import DEMO_DATA
from reviewsd.web.budget import COMPUTED_BURST, COMPUTED_RATE, CONNECTIONS_PER_ADDRESS
from reviewsd.web.site import IDLE_TIMEOUT, RECEIVE_TIMEOUT
from reviewsd.websub.outbound import load_certificates

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_LISTEN = "tcp:8080:interface=127.0.0.1"

_PATH_OPTIONS = ("data", "state-dir", "callback-ca", "mcp-session-key")

#: The most analysis processes started by default: each holds about 96 MiB
#: while it lives.
MOST_ANALYSIS_PROCESSES = 4


def _cpus() -> int:
    """The CPUs this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux
    return len(affinity(0)) if affinity else os.cpu_count() or 1


_NUMBERS: dict[str, tuple[type, int | float]] = {
    "lease-default": (int, 864000),
    "lease-min": (int, 300),
    "lease-max": (int, 2592000),
    "retry-base": (float, 30.0),
    "max-subscriptions-per-host": (int, 100),
    "max-subscriptions": (int, 10000),
    "computed-rate": (float, COMPUTED_RATE),
    "computed-burst": (int, COMPUTED_BURST),
    "max-connections-per-address": (int, CONNECTIONS_PER_ADDRESS),
    "idle-timeout": (float, IDLE_TIMEOUT),
    "receive-timeout": (float, RECEIVE_TIMEOUT),
    "shutdown-timeout": (float, 10.0),
    "analysis-processes": (int, min(_cpus(), MOST_ANALYSIS_PROCESSES)),
}

_SWITCHES = {"access-log": True}
"""Options that are on or off: C{on}/C{off} on the command line, booleans in TOML."""

_ON = ("on", "true", "yes", "1")
_OFF = ("off", "false", "no", "0")


def _number(name: str, value: object) -> int | float:
    """A positive number option, from the command line or TOML."""
    kind, _ = _NUMBERS[name]
    what = "a whole number" if kind is int else "a number"
    given = value
    if isinstance(value, str):
        try:
            value = kind(value)
        except ValueError:
            raise usage.UsageError(f"--{name} {value!r}: must be {what}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise usage.UsageError(f"--{name}: must be {what}, got {value!r}")
    if kind is int and not float(value).is_integer() or not 0 < value < 1e12:
        raise usage.UsageError(f"--{name} {given!r}: must be {what} above 0")
    return kind(value)


_PARSING_ONLY = object()
"""
The reactor an endpoint string is checked with. Parsing only keeps the
reactor for a later C{listen}; the real one is not imported here, because
importing it while options are parsed would install the default reactor
before twistd honours C{--reactor}.
"""


def _check_endpoint(name: str, description: str) -> None:
    """An endpoint string Twisted can listen on, or a usage error saying why."""
    try:
        serverFromString(_PARSING_ONLY, description)
    except KeyError as e:
        if _endpoint_parts(description)[0] != "systemd":
            raise usage.UsageError(f"--{name} {description!r}: {e}") from None
        passed = os.environ.get("LISTEN_FDNAMES")
        raise usage.UsageError(
            f"--{name} {description!r}: systemd passed no socket named {e}"
            + (f" (it passed {passed!r})" if passed else " (it passed none)")
            + "; start reviewsd.socket first, or listen on tcp: outside systemd"
        ) from None
    except Exception as e:
        raise usage.UsageError(f"--{name} {description!r}: {e}") from None


def _switch(name: str, value: object, default: bool) -> bool:
    """An on/off option, from the command line (a word) or TOML (a boolean)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise usage.UsageError(f"--{name} {value!r}: must be on or off")


def _default_state_dir() -> Path:
    """systemd's C{StateDirectory=}, else the XDG per-user state directory."""
    systemd = os.environ.get("STATE_DIRECTORY")
    if systemd:
        return Path(systemd.split(":")[0])
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(xdg) / "reviewsd"


def _endpoint_parts(description: str) -> tuple[str, list[str], dict[str, str]]:
    """Split an endpoint string as Twisted does: C{:} separates, C{\\:} escapes."""
    fields = [
        f.replace("\\:", ":").replace("\\\\", "\\")
        for f in re.split(r"(?<!\\):", description)
    ]
    args: list[str] = []
    kwargs: dict[str, str] = {}
    for field in fields[1:]:
        name, sep, value = field.partition("=")
        if sep:
            kwargs[name] = value
        else:
            args.append(field)
    return fields[0].lower(), args, kwargs


def base_url_for(listen: str) -> str:
    """
    The URL a local client reaches a C{--listen} endpoint at.

    @raise usage.UsageError: the endpoint does not say (UNIX sockets, systemd
        sockets, port 0), so C{--base-url} must.
    """
    kind, args, kwargs = _endpoint_parts(listen)
    schemes = {"tcp": "http", "tcp6": "http", "ssl": "https"}
    port = kwargs.get("port") or (args[0] if args else "")
    if kind not in schemes or not port.isdigit() or int(port) == 0:
        raise usage.UsageError(
            f"--base-url is needed: the public URL of --listen {listen!r} "
            "cannot be derived"
        )
    scheme = schemes[kind]
    host = kwargs.get("interface", "")
    if host in ("", "0.0.0.0", "::"):
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    default_port = {"http": 80, "https": 443}[scheme]
    suffix = "" if int(port) == default_port else f":{int(port)}"
    return f"{scheme}://{host}{suffix}"


def _check_base_url(value: str) -> str:
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
        or any(c.isspace() for c in value)
    ):
        raise usage.UsageError(
            f"--base-url {value!r}: give an absolute http(s) URL without "
            "query, fragment or user name, such as https://reviews.example.com"
        )
    return value.rstrip("/")


class Options(usage.Options):
    synopsis = "[options]"
    longdesc = (
        "Serve one business's verified customer reviews, their insights and "
        "feeds as a public, read-only data service. With no options it serves "
        "the bundled demo data on http://127.0.0.1:8080/."
    )

    optParameters = [
        [
            "listen",
            None,
            None,
            f"Twisted endpoint string to listen on [default: {DEFAULT_LISTEN}].",
        ],
        [
            "base-url",
            None,
            None,
            "Public URL prefix used in feeds, topics and links "
            "[default: derived from --listen].",
        ],
        [
            "data",
            None,
            None,
            "Data directory: business.json plus reviews.json or reviews.jsonl "
            "[default: the bundled demo data].",
        ],
        [
            "state-dir",
            None,
            None,
            "Where persistent state is kept [default: $STATE_DIRECTORY, else "
            "$XDG_STATE_HOME/reviewsd].",
        ],
        [
            "config",
            None,
            None,
            "TOML file holding any of these options as top-level keys named "
            "like the long options; the command line wins.",
        ],
        [
            "mcp-session-key",
            None,
            None,
            "File holding the key that signs MCP session ids; give instances "
            "behind one load balancer the same one [default: mcp-session.key in "
            "the state directory, made at the first start].",
        ],
        [
            "callback-ca",
            None,
            None,
            "PEM file of extra CAs trusted for HTTPS WebSub callbacks "
            "[default: system trust only].",
        ],
        [
            "lease-default",
            None,
            None,
            "WebSub lease, in seconds, when a subscriber asks for none "
            f"[default: {_NUMBERS['lease-default'][1]}].",
        ],
        [
            "lease-min",
            None,
            None,
            f"Shortest WebSub lease granted [default: {_NUMBERS['lease-min'][1]}].",
        ],
        [
            "lease-max",
            None,
            None,
            f"Longest WebSub lease granted [default: {_NUMBERS['lease-max'][1]}].",
        ],
        [
            "retry-base",
            None,
            None,
            "Seconds before the first retry of a failed delivery; doubles after "
            f"[default: {_NUMBERS['retry-base'][1]:g}].",
        ],
        [
            "max-subscriptions-per-host",
            None,
            None,
            "WebSub subscriptions one callback server may hold, counted per "
            "registrable domain and per address "
            f"[default: {_NUMBERS['max-subscriptions-per-host'][1]}].",
        ],
        [
            "max-subscriptions",
            None,
            None,
            "WebSub subscriptions the hub holds in all "
            f"[default: {_NUMBERS['max-subscriptions'][1]}].",
        ],
        [
            "access-log",
            None,
            None,
            "Log each request (client, method, path, status, bytes, duration): "
            "on or off [default: on].",
        ],
        [
            "metrics-listen",
            None,
            None,
            "Serve /metrics (and /healthz) on this endpoint instead of --listen, "
            "such as tcp:9464:interface=127.0.0.1 [default: /metrics on --listen].",
        ],
        [
            "computed-rate",
            None,
            None,
            "Search and since answers one client may ask for a second; past "
            "its budget it is answered 429 with Retry-After (a client is its "
            "address, or behind a proxy on this host the last X-Forwarded-For "
            f"one) [default: {_NUMBERS['computed-rate'][1]:g}].",
        ],
        [
            "computed-burst",
            None,
            None,
            "Of those, how many a client may ask for at once "
            f"[default: {_NUMBERS['computed-burst'][1]}].",
        ],
        [
            "max-connections-per-address",
            None,
            None,
            "Connections one client address may hold open; loopback peers (a "
            "proxy in front) are not counted "
            f"[default: {_NUMBERS['max-connections-per-address'][1]}].",
        ],
        [
            "idle-timeout",
            None,
            None,
            "Seconds a connection may stay silent before it is closed "
            f"[default: {_NUMBERS['idle-timeout'][1]:g}].",
        ],
        [
            "receive-timeout",
            None,
            None,
            "Seconds a client has to send a whole request, headers and body "
            f"[default: {_NUMBERS['receive-timeout'][1]:g}].",
        ],
        [
            "shutdown-timeout",
            None,
            None,
            "Seconds requests in flight get to finish when the service stops "
            f"[default: {_NUMBERS['shutdown-timeout'][1]:g}].",
        ],
        [
            "analysis-processes",
            None,
            None,
            "Processes that analyse review texts when thousands are new at once "
            "(the first start, another data set); 1 analyses them in the "
            "daemon's own thread [default: the CPUs it may use, at most "
            f"{MOST_ANALYSIS_PROCESSES}].",
        ],
    ]

    optFlags = [
        [
            "allow-private-callbacks",
            None,
            "Allow WebSub callbacks on loopback and private addresses (tests, "
            "labs) [default: refused].",
        ],
    ]

    _failed = False
    _repeatable = ("mcp-allowed-origin",)

    @classmethod
    def config_keys(cls) -> list[str]:
        """Every option a configuration file may set: all but C{config}."""
        params = [name for name, *_ in cls.optParameters if name != "config"]
        flags = [name for name, *_ in cls.optFlags]
        return [name for name in (*params, *cls._repeatable, *flags) if name]

    def __init__(self) -> None:
        super().__init__()
        self["mcp-allowed-origin"] = []
        # an opt_ method's docstring is its help: one line, without the
        # indentation of its continuation lines
        self.docs = {k: " ".join(v.split()) if v else v for k, v in self.docs.items()}

    def opt_mcp_allowed_origin(self, origin: str) -> None:
        """
        Also accept /mcp requests from web pages of this origin, such as
        https://app.example (repeatable; * accepts any) [default: the base
        URL's origin and localhost].
        """
        self["mcp-allowed-origin"].append(origin)

    def opt_version(self) -> None:
        """Print the version and exit."""
        print(f"reviewsd {__version__.public()}")
        sys.exit(0)

    def getUsage(self, width: int | None = None) -> str:
        # twistd prints the whole usage text before a usage error; after a
        # bad value one pointer to --help is what the operator needs.
        if self._failed:
            return "Run 'twistd reviewsd --help' for the list of options."
        return super().getUsage(width)

    def parseOptions(self, options: list[str] | None = None) -> None:
        try:
            super().parseOptions(options)
        except usage.UsageError as e:
            self._failed = True
            if self.parent is None:
                raise
            # under twistd, which would print its synopsis, the usage and
            # the error on stdout: the one line an operator needs, on stderr
            raise SystemExit(f"reviewsd: {e}") from None

    def _merge_config(self, path: Path) -> None:
        try:
            with path.open("rb") as f:
                config = tomllib.load(f)
        except OSError as e:
            raise usage.UsageError(f"--config {path}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise usage.UsageError(f"--config {path}: invalid TOML: {e}") from None
        known = self.config_keys()
        flags = [name for name, *_ in self.optFlags]
        for key, value in config.items():
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise usage.UsageError(
                    f"--config {path}: unknown key {key!r} (known keys: "
                    f"{', '.join(known)}){hint}"
                )
            if key in self._repeatable:
                values = [value] if isinstance(value, str) else value
                if not isinstance(values, list) or not all(
                    isinstance(v, str) for v in values
                ):
                    raise usage.UsageError(
                        f"--config {path}: key {key!r} must be a string or a list "
                        "of strings"
                    )
                if not self[key]:
                    self[key] = list(values)
                continue
            if key in flags:
                if not isinstance(value, bool):
                    raise usage.UsageError(
                        f"--config {path}: key {key!r} must be true or false"
                    )
                self[key] = self[key] or value
                continue
            if key in _NUMBERS and isinstance(value, (int, float)):
                if self[key] is None:
                    self[key] = value
                continue
            if key in _SWITCHES:
                if not isinstance(value, bool):
                    raise usage.UsageError(
                        f"--config {path}: key {key!r} must be true or false"
                    )
                if self[key] is None:
                    self[key] = value
                continue
            if not isinstance(value, str):
                raise usage.UsageError(
                    f"--config {path}: key {key!r} must be a string, "
                    f"got {type(value).__name__}"
                )
            if self[key] is None:
                if key in _PATH_OPTIONS:
                    value = str(path.parent / Path(value).expanduser())
                self[key] = value

    def postOptions(self) -> None:
        if self["config"] is not None:
            self._merge_config(Path(self["config"]).expanduser())
        if self["listen"] is None:
            self["listen"] = DEFAULT_LISTEN
        _check_endpoint("listen", self["listen"])
        if self["metrics-listen"] is not None:
            _check_endpoint("metrics-listen", self["metrics-listen"])
        for name, default in _SWITCHES.items():
            self[name] = _switch(name, self[name], default)
        if self["base-url"] is None:
            self["base-url"] = base_url_for(self["listen"])
        self["base-url"] = _check_base_url(self["base-url"])
        data = DEMO_DATA if self["data"] is None else Path(self["data"]).expanduser()
        if not data.is_dir():
            raise usage.UsageError(f"--data {str(data)!r}: no such directory")
        self["data"] = data
        state = (
            _default_state_dir()
            if self["state-dir"] is None
            else Path(self["state-dir"]).expanduser()
        )
        if state.exists() and not state.is_dir():
            raise usage.UsageError(f"--state-dir {str(state)!r}: not a directory")
        self["state-dir"] = state
        if self["mcp-session-key"] is not None:
            self["mcp-session-key"] = Path(self["mcp-session-key"]).expanduser()
        for name, (_, number) in _NUMBERS.items():
            self[name] = number if self[name] is None else _number(name, self[name])
        if not self["lease-min"] <= self["lease-default"] <= self["lease-max"]:
            raise usage.UsageError(
                f"leases: need --lease-min ({self['lease-min']}) <= --lease-default "
                f"({self['lease-default']}) <= --lease-max ({self['lease-max']})"
            )
        self["allow-private-callbacks"] = bool(self["allow-private-callbacks"])
        self.callback_ca_path: Path | None = None
        if self["callback-ca"] is not None:
            path = Path(self["callback-ca"]).expanduser()
            self.callback_ca_path = path
            try:
                pem = path.read_bytes()
                load_certificates(pem)
            except OSError as e:
                raise usage.UsageError(
                    f"--callback-ca {str(path)!r}: {e.strerror}"
                ) from None
            except ValueError as e:
                raise usage.UsageError(f"--callback-ca {str(path)!r}: {e}") from None
            self["callback-ca"] = pem
        for origin in self["mcp-allowed-origin"]:
            parts = urlsplit(origin)
            if origin != "*" and (
                parts.scheme not in ("http", "https")
                or not parts.hostname
                or parts.path not in ("", "/")
                or parts.query
                or parts.fragment
            ):
                raise usage.UsageError(
                    f"--mcp-allowed-origin {origin!r}: give an origin such as "
                    "https://app.example (scheme, host, optional port), or *"
                )


def effective_configuration(options: Options) -> dict[str, Any]:
    """
    Every option's value as the service will use it, for the start-up log:
    paths as text, the callback CA as its file name (never its content).
    Nothing here is secret: WebSub secrets belong to subscribers, and are
    never options.
    """
    shown: dict[str, Any] = {}
    for name in sorted(Options.config_keys()):
        value = options[name]
        if name == "callback-ca":
            path = getattr(options, "callback_ca_path", None)
            value = None if path is None else str(path)
        elif isinstance(value, Path):
            value = str(value)
        shown[name] = value
    shown["config"] = options["config"]
    return shown
