"""
The official MCP Python SDK against the real daemon, over a socket: its
modern client (2026-07-28, no fallback) and its legacy session, each
using every tool, the resources, the prompts and completion; change
notifications after a data file is edited; and a legacy session across a
restart of the daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from twisted.internet import defer, protocol, reactor
from twisted.internet.utils import getProcessOutputAndValue

import reviewsd
from reviewsd.data.loading import DEMO_DATA
from tests.support.daemon import DaemonTestCase, environment, free_port

CLIENT = str(Path(__file__).parent / "support" / "mcp_client.py")
VERSIONS = {"auto": "2026-07-28", "legacy": "2025-11-25"}


class _Client(protocol.ProcessProtocol):
    """The client script, fed a line on standard input when asked."""

    def __init__(self) -> None:
        self.output = b""
        self.errors = b""
        self.called: defer.Deferred[None] = defer.Deferred()
        self.ended: defer.Deferred[None] = defer.Deferred()

    def outReceived(self, data: bytes) -> None:
        self.output += data
        if b"CALLED\n" in self.output and not self.called.called:
            self.called.callback(None)

    def errReceived(self, data: bytes) -> None:
        self.errors += data

    def processEnded(self, reason: Any) -> None:
        self.ended.callback(None)


class SDKTests(DaemonTestCase):
    timeout = 180

    @defer.inlineCallbacks
    def serve(self, *argv: str) -> Any:
        self.port = free_port()
        base = f"http://127.0.0.1:{self.port}"
        yield self.start(
            base, "--listen", f"tcp:{self.port}:interface=127.0.0.1", *argv
        )
        return base

    @defer.inlineCallbacks
    def run_client(self, *argv: str) -> Any:
        out, err, code = yield getProcessOutputAndValue(
            sys.executable, [CLIENT, *argv], env=environment()
        )
        self.assertEqual(code, 0, err.decode())
        return json.loads(out)

    @defer.inlineCallbacks
    def test_modern_and_legacy_clients(self) -> Any:
        base = yield self.serve()
        for mode in ("auto", "legacy"):
            report = yield self.run_client(base, mode)
            self.assertEqual(report["protocol_version"], VERSIONS[mode], mode)
            self.assertEqual(report["server"]["version"], reviewsd.__version__.public())
            self.assertEqual(len(report["calls"]), 10)
            for name, call in report["calls"].items():
                self.assertIs(call["is_error"], False, (mode, name, call["text"]))
            resources = report["resources"]
            self.assertEqual(len(resources["uris"]), 3 + 224, mode)
            self.assertEqual(resources["pages"], 3)
            self.assertEqual(resources["templates"], [base + "/api/reviews/{id}"])
            business, insights, faq, newest = resources["reads"].values()
            self.assertEqual(
                business[0]["json"]["business"]["name"], "Thimbleberry Home Services"
            )
            self.assertIn("aspects", insights[0]["json"])
            self.assertTrue(faq[0]["json"]["faq"])
            self.assertEqual(newest[0]["uri"], resources["uris"][3])
            self.assertEqual(len(report["prompts"]), 5)
            for name, prompt in report["prompts"].items():
                self.assertTrue(prompt["embedded"], name)
                for uri in prompt["embedded"]:
                    self.assertTrue(
                        uri.startswith(base) or uri.startswith("reviewsd://")
                    )
            completions = report["completions"]
            self.assertEqual(
                completions["technician_report.technician"][0], "Michael Reyes"
            )
            self.assertEqual(completions["service_report.service"][0], "roofing")
            self.assertEqual(completions["answer_question.aspect"], ["punctuality"])
            self.assertEqual(completions["review.id"]["total"], 224)
        log = self.daemon.output.decode()
        self.assertNotIn('"POST /mcp" 400', log, "the modern client never fell back")
        self.assertNotIn("Traceback", log)

    @defer.inlineCallbacks
    def test_subscriptions_hear_a_data_edit(self) -> Any:
        """Each era's client hears of an edited review within a second."""
        data = Path(self.mktemp()).resolve()
        shutil.copytree(DEMO_DATA, data)
        base = yield self.serve("--data", str(data))
        for mode in ("auto", "legacy"):
            report = yield self.run_client(base, "listen", mode, str(data))
            self.assertEqual(report["protocol_version"], VERSIONS[mode])
            updated = [e for e in report["events"] if e["uri"] == report["uri"]]
            self.assertEqual(len(updated), 1, report["events"])
            self.assertLess(updated[0]["after"], 1.0)
            self.assertTrue(report["read_after"]["text"].endswith("Edited."))
            if mode == "auto":
                self.assertEqual(
                    report["honoured"],
                    {
                        "resourcesListChanged": True,
                        "resourceSubscriptions": [report["uri"]],
                    },
                )
                self.assertEqual(report["events"][0]["what"], "ResourcesListChanged")

    @defer.inlineCallbacks
    def test_legacy_session_survives_a_restart(self) -> Any:
        state = os.path.abspath(self.mktemp())
        base = yield self.serve("--state-dir", state)
        client = _Client()
        process = reactor.spawnProcess(
            client,
            sys.executable,
            [sys.executable, CLIENT, base, "restart"],
            env=environment(),
        )
        self.addCleanup(self.stop_client, process, client)
        yield client.called
        first = self.daemon
        self.process.signalProcess(signal.SIGTERM)
        yield first.ended
        yield self.start(
            base,
            "--listen",
            f"tcp:{self.port}:interface=127.0.0.1",
            "--state-dir",
            state,
        )
        process.writeToChild(0, b"go\n")
        yield client.ended
        report = json.loads(client.output.split(b"\n", 1)[1])
        self.assertEqual(
            report,
            {
                "protocol_version": "2025-11-25",
                "before": False,
                "after": False,
                "tools": 10,
            },
            client.errors.decode(),
        )

    def stop_client(self, process: Any, client: _Client) -> Any:
        if not client.ended.called:
            process.signalProcess("KILL")
        return client.ended
