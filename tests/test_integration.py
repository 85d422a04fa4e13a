"""
The real daemon: C{twistd -n reviewsd} in its own process, spoken to over
real sockets, plain and TLS.
"""

from __future__ import annotations

import gzip
import json
import socket
import sqlite3
import sys
from pathlib import Path
from typing import Any

import trustme
from treq.client import HTTPClient
from twisted.internet import defer, reactor
from twisted.internet.ssl import Certificate
from twisted.internet.threads import deferToThread
from twisted.internet.utils import getProcessOutputAndValue
from twisted.trial.unittest import TestCase
from twisted.web.client import Agent, BrowserLikePolicyForHTTPS

import reviewsd
from reviewsd.data.synthetic import write as write_synthetic
from tests.support import review, write_data
from tests.support.daemon import TWISTD, DaemonTestCase, environment, free_port
from tests.support.feedvalidation import atom_problems, json_feed_problems


class PlainHTTPTests(DaemonTestCase):
    def setUp(self) -> None:
        self.port = free_port()
        self.listen = f"tcp:{self.port}:interface=127.0.0.1"

    @defer.inlineCallbacks
    def test_serves_demo_data(self) -> Any:
        """With no --data it serves the bundled demo business."""
        yield self.start(f"http://127.0.0.1:{self.port}", "--listen", self.listen)
        response = yield self.client.get(self.base + "/reviews.json")
        self.assertEqual(response.code, 200)
        document = yield response.json()
        self.assertEqual(document["business"]["name"], "Thimbleberry Home Services")
        self.assertGreaterEqual(document["aggregate_rating"]["review_count"], 200)

        etag = response.headers.getRawHeaders("etag")[0]
        again = yield self.client.get(
            self.base + "/reviews.json", headers={"If-None-Match": etag}
        )
        self.assertEqual(again.code, 304)
        self.assertEqual((yield again.content()), b"")

        feed = yield (yield self.client.get(self.base + "/api/feed.json")).json()
        self.assertEqual(json_feed_problems(feed), [])
        self.assertEqual(
            feed["feed_url"], f"http://127.0.0.1:{self.port}/api/feed.json"
        )
        atom = yield self.client.get(self.base + "/feed.xml")
        self.assertEqual(
            atom.headers.getRawHeaders("content-type"), ["application/atom+xml"]
        )
        self.assertEqual(atom_problems((yield atom.content())), [])

        missing = yield self.client.get(self.base + "/nothing-here")
        self.assertEqual(missing.code, 404)
        self.assertEqual((yield missing.json())["error"], "not_found")

    @defer.inlineCallbacks
    def test_wire_format(self) -> Any:
        """
        The bytes on the wire: a 304 carries no Content-Length (RFC 9110
        8.6), a gzip answer is gzip, and HEAD sends the GET's length.
        """
        yield self.start(f"http://127.0.0.1:{self.port}", "--listen", self.listen)
        head = yield deferToThread(raw_request, self.port, "HEAD", "/feed.xml")
        get = yield deferToThread(raw_request, self.port, "GET", "/feed.xml")
        self.assertEqual(head.headers["content-length"], str(len(get.body)))
        self.assertEqual(head.body, b"")
        not_modified = yield deferToThread(
            raw_request,
            self.port,
            "GET",
            "/feed.xml",
            f"If-None-Match: {get.headers['etag']}",
        )
        self.assertEqual(not_modified.status, 304)
        self.assertNotIn("content-length", not_modified.headers)
        self.assertEqual(not_modified.body, b"")
        packed = yield deferToThread(
            raw_request, self.port, "GET", "/feed.xml", "Accept-Encoding: gzip"
        )
        self.assertEqual(packed.headers["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(packed.body), get.body)


class Raw:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def raw_request(
    port: int, method: str, path: str, *extra: str, body: bytes = b""
) -> Raw:
    """One HTTP/1.1 exchange over a plain socket, read to the close."""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Connection: close",
        *extra,
    ]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Raw(int(status_line.split()[1]), headers, body)


class TLSTests(DaemonTestCase):
    @defer.inlineCallbacks
    def test_https(self) -> Any:
        """An ssl: endpoint with a throwaway CA; links use the https base URL."""
        ca = trustme.CA()
        cert = ca.issue_cert("localhost", "127.0.0.1")
        directory = Path(self.mktemp()).resolve()
        directory.mkdir()
        key_path, cert_path = directory / "key.pem", directory / "cert.pem"
        cert.private_key_pem.write_to_path(str(key_path))
        cert.cert_chain_pems[0].write_to_path(str(cert_path))
        trust = Certificate.loadPEM(ca.cert_pem.bytes())
        client = HTTPClient(
            Agent(reactor, contextFactory=BrowserLikePolicyForHTTPS(trustRoot=trust))
        )
        port = free_port()
        yield self.start(
            f"https://localhost:{port}",
            "--listen",
            f"ssl:{port}:interface=127.0.0.1:privateKey={key_path}:certKey={cert_path}",
            "--base-url",
            f"https://localhost:{port}",
            client=client,
        )
        response = yield client.get(f"https://localhost:{port}/api/feed.json")
        self.assertEqual(response.code, 200)
        feed = yield response.json()
        self.assertEqual(feed["feed_url"], f"https://localhost:{port}/api/feed.json")
        self.assertEqual(
            feed["hubs"][0]["url"], f"https://localhost:{port}/api/websub/hub"
        )

        untrusting = HTTPClient(Agent(reactor))
        yield self.assertFailure(
            untrusting.get(f"https://localhost:{port}/reviews.json"), Exception
        )


class RestartTests(DaemonTestCase):
    timeout = 120

    @defer.inlineCallbacks
    def test_restart_publishes_the_same_insights(self) -> Any:
        """
        A daemon stopped once it served and saved its insights cache, then
        started again on the same state directory, adds up the insights from
        the checkpoint the cache kept and publishes the same document, with
        the same validator.
        """
        data = write_synthetic(Path(self.mktemp()).resolve(), 2300, seed=3)
        state = Path(self.mktemp()).resolve()
        cache = state / "insights-cache.sqlite3"
        port = free_port()
        argv = [
            "--listen",
            f"tcp:{port}:interface=127.0.0.1",
            "--data",
            str(data),
            "--state-dir",
            str(state),
        ]
        answers = []
        for start in ("cold", "warm"):
            yield self.start(f"http://127.0.0.1:{port}", *argv)
            response = yield self.client.get(self.base + "/insights.json")
            answers.append(
                (response.headers.getRawHeaders("etag"), (yield response.content()))
            )
            # the cache is saved once the daemon serves; stopping waits for it
            self.process.signalProcess("TERM")
            yield self.daemon.ended
            connection = sqlite3.connect(cache)
            try:
                [(covered,)] = connection.execute(
                    "SELECT json_extract(value, '$.count') FROM checkpoint"
                )
            finally:
                connection.close()
            reviews = json.loads(answers[-1][1])["review_count"]
            self.assertEqual(covered, reviews - 2000, start)
        self.assertEqual(answers[0], answers[1])


class StartUpErrorTests(TestCase):
    timeout = 60

    @defer.inlineCallbacks
    def test_bad_data_exits_with_one_line(self) -> Any:
        data = write_data(Path(self.mktemp()), [review(1), review(2, rating=7)])
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [
                *TWISTD[1:],
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--data",
                str(data),
                "--state-dir",
                self.mktemp(),
                "--listen",
                f"tcp:{free_port()}:interface=127.0.0.1",
            ],
            env=environment(),
        )
        self.assertNotEqual(code, 0)
        message = (
            f"reviewsd: cannot publish the data: {data / 'reviews.json'}: record [1] "
            "(id 'r0002'): field 'rating': must be a whole number from 1 to 5, got 7"
        )
        self.assertEqual(err.decode().strip().splitlines(), [message])
        self.assertNotIn(b"Traceback", out + err)

    @defer.inlineCallbacks
    def test_bad_option_exits_non_zero(self) -> Any:
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [*TWISTD[1:], "--nodaemon", "reviewsd", "--base-url", "ftp://x"],
            env=environment(),
        )
        self.assertEqual(code, 1)
        self.assertIn(b"--base-url 'ftp://x': give an absolute http(s) URL", out + err)
        self.assertLessEqual(len((out + err).splitlines()), 3)

    @defer.inlineCallbacks
    def test_plugin_listed(self) -> Any:
        """twistd finds the dropin, and the version is incremental's, not 0.0.0."""
        out, err, code = yield getProcessOutputAndValue(
            sys.executable, [*TWISTD[1:], "--help"], env=environment()
        )
        self.assertEqual(code, 0, err)
        self.assertIn(b"reviewsd", out)
        version = reviewsd.__version__.public()
        self.assertNotEqual(version, "0.0.0")
        out, err, code = yield getProcessOutputAndValue(
            sys.executable, [*TWISTD[1:], "reviewsd", "--version"], env=environment()
        )
        self.assertEqual(out.decode().strip(), f"reviewsd {version}")


MCP_ARGUMENTS = {
    "get_reviews_since": {"date": "2025-01-01", "limit": 3},
    "get_aspect_sentiment": {"aspect": "punctuality"},
    "get_technician": {"name": "Dev"},
    "get_service": {"id": "roofing"},
    "get_service_area": {"name": "Tigard"},
    "get_insights": {"group": "overall_sentiment"},
}


class MCPClientTests(DaemonTestCase):
    """The official MCP Python SDK, as an assistant uses it, over a socket."""

    timeout = 120

    @defer.inlineCallbacks
    def test_official_client(self) -> Any:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        yield self.start(base, "--listen", f"tcp:{port}:interface=127.0.0.1")
        reviews = yield (yield self.client.get(base + "/reviews.json")).json()
        arguments = dict(MCP_ARGUMENTS, get_review={"id": reviews["reviews"][0]["id"]})
        for mode in ("legacy", "auto"):
            out, err, code = yield getProcessOutputAndValue(
                sys.executable,
                [
                    str(Path(__file__).parent / "support" / "mcp_client.py"),
                    base,
                    mode,
                    json.dumps(arguments),
                ],
                env=environment(),
            )
            self.assertEqual(code, 0, err.decode())
            report = json.loads(out)
            expected = {"legacy": "2025-11-25", "auto": "2026-07-28"}[mode]
            self.assertEqual(report["protocol_version"], expected, mode)
            self.assertEqual(report["server"]["name"], "reviewsd")
            self.assertEqual(report["server"]["version"], reviewsd.__version__.public())
            self.assertIn("Thimbleberry", report["instructions"])
            self.assertEqual(len(report["tools"]), 10)
            for name, tool in report["tools"].items():
                self.assertIs(tool["read_only"], True, name)
                self.assertIs(tool["open_world"], False, name)
                call = report["calls"][name]
                self.assertIs(call["is_error"], False, (mode, name, call["text"]))
                self.assertEqual(json.loads(call["text"]), call["structured"], name)
            self.assertEqual(
                report["calls"]["get_technician"]["structured"]["name"], "Dev Patel"
            )
            newest = reviews["reviews"][0]
            self.assertEqual(
                report["calls"]["get_review"]["structured"],
                {**newest, "permalink": self.base + "/reviews/" + newest["id"]},
            )
            for search in report["searches"]:
                self.assertEqual(search["mcp"], search["http"])
            self.assertIs(report["unknown_technician"]["is_error"], True)
            self.assertIn("Michael Reyes", report["unknown_technician"]["text"])

    @defer.inlineCallbacks
    def test_bodies_are_capped(self) -> Any:
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}", "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        huge = b"[" + b"1," * (1024 * 1024) + b"1]"
        for path, headers in (
            (
                "/mcp",
                (
                    "Content-Type: application/json",
                    "Accept: application/json, text/event-stream",
                ),
            ),
            ("/api/websub/hub", ("Content-Type: application/x-www-form-urlencoded",)),
        ):
            answer = yield deferToThread(
                raw_request, port, "POST", path, *headers, body=huge
            )
            self.assertEqual(answer.status, 413, path)
        # and the daemon is still there
        answer = yield deferToThread(raw_request, port, "GET", "/reviews.json")
        self.assertEqual(answer.status, 200)
