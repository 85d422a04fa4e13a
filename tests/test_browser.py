"""
The pages in a real browser: headless Chromium, driven over the DevTools
protocol on a pipe (C{--remote-debugging-pipe}: no WebSocket client and no
package needed), with every console message, failed or blocked request,
DevTools issue (CSP violations, low contrast) and dialog collected.

Skipped when no Chromium is installed; C{.ci/run} installs Debian's.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.html
from attrs import define, field
from twisted.internet import defer, error, protocol, reactor, task
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure
from twisted.trial.unittest import TestCase
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from reviewsd.data.links import STYLESHEET_PATH, Links
from reviewsd.data.loading import DEMO_DATA
from reviewsd.mcp.tools import TOOLS
from reviewsd.mcp.transport import SUPPORTED
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.pages import (
    CONTENT_SECURITY_POLICY,
    STYLESHEET,
    render_developers,
    render_home,
)
from tests.support import review, snapshot_of, write_data
from tests.support.daemon import DaemonTestCase, free_port

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """C{$CHROMIUM}, else the first browser on C{PATH}."""
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named)
    return next(filter(None, map(shutil.which, CANDIDATES)), None)


CHROMIUM = find_chromium()
SKIP = None if CHROMIUM else "no Chromium binary (apt-get install chromium)"

DESKTOP = (1280, 900)
PHONE = (390, 844)

FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)

HOSTILE_TEXT = (
    "<script>alert(1)</script> Great work. </script><!-- "
    '<img src=x onerror="alert(2)"> & "quotes" \u2028 done'
)


class DevToolsError(Exception):
    """The browser refused a command."""


@define
class PageReport:
    """What one page load did, as the browser saw it."""

    url: str
    problems: list[str] = field(factory=list)
    checks: dict[str, Any] = field(factory=dict)
    screenshot: Path | None = None


class _DevTools(protocol.ProcessProtocol):
    """
    The DevTools protocol over Chromium's pipe: JSON messages ended by NUL,
    written to its fd 3 and read from its fd 4.
    """

    def __init__(self) -> None:
        self.buffer = b""
        self.stderr = b""
        self.counter = 0
        self.pending: dict[int, defer.Deferred[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.watchers: list[
            tuple[Callable[[dict[str, Any]], bool], defer.Deferred[dict[str, Any]]]
        ] = []
        self.ended: defer.Deferred[None] = defer.Deferred()

    def childDataReceived(self, fd: int, data: bytes) -> None:
        if fd == 4:
            self.buffer += data
            *messages, self.buffer = self.buffer.split(b"\0")
            for message in messages:
                self._received(json.loads(message))
        elif len(self.stderr) < 65536:
            self.stderr += data

    def _received(self, message: dict[str, Any]) -> None:
        if "id" in message:
            waiting = self.pending.pop(message["id"], None)
            if waiting is None:
                return
            if "error" in message:
                waiting.errback(DevToolsError(json.dumps(message["error"])))
            else:
                waiting.callback(message.get("result", {}))
            return
        self.events.append(message)
        for watcher in list(self.watchers):
            matches, waiting = watcher
            if matches(message):
                self.watchers.remove(watcher)
                waiting.callback(message)

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str = ""
    ) -> defer.Deferred[dict[str, Any]]:
        self.counter += 1
        message: dict[str, Any] = {
            "id": self.counter,
            "method": method,
            "params": params or {},
        }
        if session:
            message["sessionId"] = session
        waiting: defer.Deferred[dict[str, Any]] = defer.Deferred()
        self.pending[self.counter] = waiting
        self.transport.writeToChild(3, json.dumps(message).encode() + b"\0")
        return waiting

    def watch(
        self, matches: Callable[[dict[str, Any]], bool]
    ) -> defer.Deferred[dict[str, Any]]:
        waiting: defer.Deferred[dict[str, Any]] = defer.Deferred()
        self.watchers.append((matches, waiting))
        return waiting

    def processEnded(self, reason: Failure) -> None:
        for waiting in self.pending.values():
            waiting.errback(DevToolsError("Chromium ended"))
        self.pending.clear()
        self.ended.callback(None)


def _problems(events: list[dict[str, Any]]) -> list[str]:
    """Everything a clean page load must not produce."""
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in (
            "error",
            "warning",
            "assert",
        ):
            texts = [a.get("value", a.get("description")) for a in params["args"]]
            found.append(f"console {params['type']}: {texts}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in (
            "error",
            "warning",
        ):
            entry = params["entry"]
            found.append(
                f"log {entry['level']} ({entry.get('source')}): {entry['text']}"
            )
        elif method == "Network.loadingFailed":
            found.append(
                "request failed: "
                f"{params.get('errorText')} blocked={params.get('blockedReason')} "
                f"cors={params.get('corsErrorStatus')}"
            )
        elif method == "Network.responseReceived":
            response = params["response"]
            if response["status"] >= 400:
                found.append(f"HTTP {response['status']} for {response['url']}")
        elif method == "Audits.issueAdded":
            issue = params["issue"]
            found.append(
                f"issue {issue['code']}: {json.dumps(issue.get('details'))[:600]}"
            )
        elif method == "Page.javascriptDialogOpening":
            found.append(f"dialog opened: {params.get('message')}")
    return found


_CHECKS = """(() => {
  const ld = [...document.querySelectorAll('script[type="application/ld+json"]')];
  // WCAG 2 contrast of every piece of visible text against the first opaque
  // background behind it (white at the root): 4.5:1, or 3:1 for large text.
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const backdrop = el => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement, style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (style.visibility !== "visible" || box.width < 2 || box.height < 2) continue;
    const inSvg = el instanceof SVGElement;
    const ink = rgb(inSvg ? style.fill : style.color).slice(0, 3);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    const got = ratio(ink, backdrop(el));
    const what = n.textContent.trim().slice(0, 40);
    if (got < need) low.push(`${got.toFixed(2)} < ${need}: ${what}`);
  }
  return {
    lowContrast: low,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    title: document.title,
    scripts: document.scripts.length,
    jsonLd: ld.map(s => JSON.parse(s.textContent)),
    styled: getComputedStyle(document.body).marginTop === "0px",
    h1: [...document.querySelectorAll("h1")].map(e => e.textContent),
    text: document.body.innerText,
  };
})()"""


class Browser:
    """One headless Chromium for a test, ended with it."""

    def __init__(self, case: TestCase, binary: str) -> None:
        self.case = case
        self.binary = binary
        self.tools = _DevTools()

    def start(self) -> None:
        profile = Path(self.case.mktemp())
        profile.mkdir(parents=True)
        argv = [self.binary, *FLAGS, f"--user-data-dir={profile}"]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")
        self.process = reactor.spawnProcess(
            self.tools,
            self.binary,
            argv,
            env=dict(os.environ),
            childFDs={0: "w", 1: "r", 2: "r", 3: "w", 4: "r"},
        )
        self.case.addCleanup(self.stop)

    @defer.inlineCallbacks
    def stop(self) -> Any:
        if self.tools.ended.called:
            return
        try:
            self.tools.send("Browser.close").addErrback(lambda _: None)
        except Exception:  # the pipe may already be gone
            pass
        timeout = reactor.callLater(10, self._kill)
        yield self.tools.ended
        if timeout.active():
            timeout.cancel()

    def _kill(self) -> None:
        try:
            self.process.signalProcess(signal.SIGKILL)
        except error.ProcessExitedAlready:
            pass

    @defer.inlineCallbacks
    def load(
        self, url: str, size: tuple[int, int], screenshot: Path | None = None
    ) -> Any:
        """Load C{url} at C{size}; report what went wrong, and what it shows."""
        tools = self.tools
        target = yield tools.send("Target.createTarget", {"url": "about:blank"})
        attached = yield tools.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        session = attached["sessionId"]
        first_event = len(tools.events)
        for domain in ("Page", "Runtime", "Log", "Network", "Audits"):
            yield tools.send(f"{domain}.enable", session=session)
        width, height = size
        yield tools.send(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": width,
                "height": height,
                "deviceScaleFactor": 1,
                "mobile": width < 600,
            },
            session=session,
        )
        loaded = tools.watch(
            lambda e: (
                e.get("sessionId") == session and e["method"] == "Page.loadEventFired"
            )
        )
        navigated = yield tools.send("Page.navigate", {"url": url}, session=session)
        report = PageReport(url)
        if navigated.get("errorText"):
            report.problems.append(f"navigation: {navigated['errorText']}")
            return report
        loaded.addTimeout(30, reactor)
        yield loaded
        yield task.deferLater(reactor, 0.5, lambda: None)
        evaluated = yield tools.send(
            "Runtime.evaluate",
            {"expression": _CHECKS, "returnByValue": True},
            session=session,
        )
        report.checks = evaluated["result"].get("value") or {}
        if screenshot is not None:
            metrics = yield tools.send("Page.getLayoutMetrics", session=session)
            content = metrics["cssContentSize"]
            shot = yield tools.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {
                        "x": 0,
                        "y": 0,
                        "width": width,
                        "height": max(height, content["height"]),
                        "scale": 1,
                    },
                },
                session=session,
            )
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            report.screenshot = screenshot
        yield task.deferLater(reactor, 0.1, lambda: None)
        events = [
            e for e in tools.events[first_event:] if e.get("sessionId") == session
        ]
        report.problems.extend(_problems(events))
        yield tools.send("Target.closeTarget", {"targetId": target["targetId"]})
        return report


class _Pages(Resource):
    """The pages, served as the daemon will: the CSP header on each."""

    isLeaf = True

    def __init__(self, routes: dict[str, tuple[bytes, bytes]]) -> None:
        super().__init__()
        self.routes = routes

    def render_GET(self, request: Request) -> bytes:
        path = request.path.decode()
        if path not in self.routes:
            request.setResponseCode(404)
            request.setHeader(b"content-type", b"application/json")
            return b'{"error":"not_found","message":"Not found."}'
        content_type, body = self.routes[path]
        request.setHeader(b"content-type", content_type)
        if content_type.startswith(b"text/html"):
            request.setHeader(b"content-security-policy", CONTENT_SECURITY_POLICY)
        return body


class BrowserTestCase(TestCase):
    timeout = 120
    skip = SKIP

    def browser(self) -> Browser:
        assert CHROMIUM is not None
        browser = Browser(self, CHROMIUM)
        browser.start()
        return browser

    def screenshots(self) -> Path:
        directory = Path(self.mktemp())
        directory.mkdir(parents=True)
        return directory

    def assertClean(self, report: PageReport) -> None:
        """No problem, no overflow, styled, and nothing but JSON-LD as script."""
        self.assertEqual(report.problems, [], report.url)
        checks = report.checks
        self.assertLessEqual(checks["scrollWidth"], checks["innerWidth"], report.url)
        self.assertTrue(checks["styled"], f"{report.url}: the stylesheet did not apply")
        self.assertLessEqual(checks["scripts"], 1)
        self.assertEqual(checks["lowContrast"], [], report.url)


class StaticPagesTests(BrowserTestCase):
    """
    The rendered pages behind a minimal server that adds the CSP header, as
    the daemon does: the pages themselves, whatever the wiring.
    """

    def serve(
        self, data: Path = DEMO_DATA, extra: dict[str, bytes] | None = None
    ) -> str:
        """Serve the pages of C{data} on a free port; return the base URL."""
        routes: dict[str, tuple[bytes, bytes]] = {}
        port = reactor.listenTCP(0, Site(_Pages(routes)), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        base = f"http://127.0.0.1:{port.getHost().port}"
        snapshot = snapshot_of(data, base)
        html = b"text/html; charset=utf-8"
        routes.update(
            {
                "/": (html, render_home(snapshot)),
                "/developers": (html, render_developers(snapshot, TOOLS, SUPPORTED)),
                STYLESHEET_PATH: (b"text/css; charset=utf-8", STYLESHEET),
            }
        )
        for path, body in (extra or {}).items():
            routes[path] = (html, body)
        return base

    @defer.inlineCallbacks
    def test_pages_clean_at_both_widths(self) -> Any:
        """
        Both pages load with no console message, failed or blocked request,
        CSP violation, contrast issue or horizontal scrolling, at desktop and
        phone widths; the screenshots are kept.
        """
        base = self.serve()
        browser = self.browser()
        shots = self.screenshots()
        for name, path in (("home", "/"), ("developers", "/developers")):
            for width, height in (DESKTOP, PHONE):
                report = yield browser.load(
                    base + path, (width, height), shots / f"{name}-{width}.png"
                )
                self.assertClean(report)
                self.assertTrue(report.screenshot and report.screenshot.stat().st_size)
        home = yield browser.load(base + "/", DESKTOP)
        (business,) = home.checks["jsonLd"]
        self.assertEqual(business["@type"], "LocalBusiness")
        self.assertEqual(business["aggregateRating"]["reviewCount"], 224)
        self.assertEqual(home.checks["h1"], ["Thimbleberry Home Services"])

    @defer.inlineCallbacks
    def test_hostile_review_stays_text(self) -> Any:
        """
        A review holding markup shows as text: no dialog, no second script,
        and the JSON-LD the browser parses holds the text exactly.
        """
        data = write_data(
            Path(self.mktemp()),
            [review(1, text=HOSTILE_TEXT, date="2024-05-01"), review(2)],
        )
        base = self.serve(data)
        report = yield self.browser().load(
            base + "/", PHONE, self.screenshots() / "hostile-390.png"
        )
        self.assertClean(report)
        self.assertIn("<script>alert(1)</script>", report.checks["text"])
        (business,) = report.checks["jsonLd"]
        bodies = [r.get("reviewBody") for r in business["review"]]
        self.assertIn(HOSTILE_TEXT, bodies)

    @defer.inlineCallbacks
    def test_harness_sees_violations(self) -> Any:
        """
        The checks can fail: an inline script, an inline style and a missing
        image under the same policy are all reported.
        """
        bad = (
            b"<!DOCTYPE html><html lang=en><head><title>bad</title></head><body>"
            b"<p style='color:red'>x</p><script>console.log(1)</script>"
            b"<img src='/missing.png' alt=''></body></html>"
        )
        base = self.serve(extra={"/bad": bad})
        report = yield self.browser().load(base + "/bad", DESKTOP)
        joined = "\n".join(report.problems)
        self.assertIn("script-src", joined)
        self.assertIn("style-src", joined)
        self.assertIn("404", joined)


class DaemonPagesTests(BrowserTestCase, DaemonTestCase):
    """The real daemon's C{/} and C{/developers}, as a browser gets them."""

    @defer.inlineCallbacks
    def test_daemon_pages(self) -> Any:
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}", "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        for path in ("/", "/developers"):
            response = yield self.client.get(self.base + path)
            yield response.content()
            self.assertEqual(
                response.headers.getRawHeaders("content-type"),
                ["text/html; charset=utf-8"],
                f"GET {path} is not the HTML page (answered {response.code})",
            )
            self.assertEqual(
                response.headers.getRawHeaders("content-security-policy"),
                [CONTENT_SECURITY_POLICY.decode()],
            )
        browser = self.browser()
        shots = self.screenshots()
        for name, path in (("home", "/"), ("developers", "/developers")):
            for width, height in (DESKTOP, PHONE):
                report = yield browser.load(
                    self.base + path, (width, height), shots / f"{name}-{width}.png"
                )
                self.assertClean(report)


CURL = shutil.which("curl")


def guide_commands(page: bytes) -> list[str]:
    """The curl commands of the developer guide, one line each."""
    tree = lxml.html.document_fromstring(page)
    commands = []
    for block in tree.xpath("//pre[contains(@class, 'shell')]/code"):
        for line in block.text_content().replace("\\\n", " ").splitlines():
            if line.startswith("curl "):
                commands.append(line)
    return commands


def expected_status(command: str) -> int:
    """What each example of the guide is documented to answer."""
    if "2024-02-30" in command or "rating=4.5" in command:
        return 400
    if "/no-such-thing" in command:
        return 404
    if "-X POST" in command:
        return 405
    if "-X DELETE" in command:
        return 204
    if "If-None-Match" in command or "If-Modified-Since" in command:
        return 304
    if "hub.mode=subscribe" in command or "notifications/" in command:
        return 202
    return 200


def run_guide(commands: list[str], workdir: Path) -> list[str]:
    """
    Run every command as the page shows it (the session id of the MCP
    walk-through filled in from the initialize answer); return mismatches.
    """
    problems, session = [], "none"
    headers, body = workdir / "headers", workdir / "body"
    for command in commands:
        words = [w.replace("SESSION_ID", session) for w in shlex.split(command)]
        done = subprocess.run(
            [*words, "-o", str(body), "-D", str(headers), "-w", "%{http_code}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        status = int(done.stdout or 0)
        if status != expected_status(command):
            problems.append(f"{status}: {command}")
        for line in headers.read_text().splitlines():
            if line.lower().startswith("mcp-session-id:"):
                session = line.split(":", 1)[1].strip()
        if '"tools/call"' in command and b'"result"' not in body.read_bytes():
            problems.append(f"no result: {command}")
    return problems


class GuideExamplesTests(DaemonTestCase):
    """Every curl command of the developer guide, run against the daemon."""

    skip = None if CURL else "no curl binary"

    @defer.inlineCallbacks
    def test_examples_work(self) -> Any:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        yield self.start(base, "--listen", f"tcp:{port}:interface=127.0.0.1")
        snapshot = yield deferToThread(load_snapshot, DEMO_DATA, Links(base))
        commands = guide_commands(render_developers(snapshot, TOOLS, SUPPORTED))
        self.assertGreater(len(commands), 20)
        workdir = Path(self.mktemp())
        workdir.mkdir(parents=True)
        problems = yield deferToThread(run_guide, commands, workdir)
        self.assertEqual(problems, [])
