"""
The real daemon under systemd's protocols: READY once it answers,
SIGTERM with a request in flight, JSON log lines without secrets, and
socket activation.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import time
from typing import Any

from twisted.internet import defer, reactor, task
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest, TestCase

from tests.support.daemon import TWISTD, _Daemon, environment, free_port
from tests.support.site import ACCEPT, INITIALIZE
from tests.support.systemd import NotifySocket, short_temp_dir


class DaemonOperationsTests(TestCase):
    """
    twistd with the journal logger and a notify socket: READY once it
    answers, SIGTERM with a request in flight, STOPPING, JSON lines, and no
    secret in the log.
    """

    timeout = 60

    @defer.inlineCallbacks
    def test_sigterm_with_a_request_in_flight(self) -> Any:
        directory = short_temp_dir(self)
        notifications = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(notifications.close)
        port = free_port()
        workdir = os.path.abspath(self.mktemp())
        os.makedirs(workdir)
        env = environment()
        env["NOTIFY_SOCKET"] = notifications.path
        env.pop("JOURNAL_STREAM", None)
        daemon = _Daemon()
        process = reactor.spawnProcess(
            daemon,
            sys.executable,
            [
                *TWISTD,
                "--nodaemon",
                "--pidfile=",
                "--logger=reviewsd.logs.journal_observer",
                "reviewsd",
                "--listen",
                f"tcp:{port}:interface=127.0.0.1",
                "--state-dir",
                os.path.join(workdir, "state"),
                "--allow-private-callbacks",
            ],
            env=env,
            path=workdir,
        )

        def kill() -> Deferred[None]:
            if not daemon.ended.called:
                process.signalProcess(signal.SIGKILL)
            return daemon.ended

        self.addCleanup(kill)
        ready = yield notifications.wait()
        self.assertEqual(len(ready), 1, daemon.output.decode())
        self.assertTrue(ready[0].startswith(b"READY=1\nSTATUS=Serving 224 reviews"))
        self.assertIn(b"MAINPID=%d" % process.pid, ready[0])

        # answering at once: READY came after the port was listening
        health = yield deferToThread(
            raw_exchange,
            port,
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        self.assertIn(b'"status":"ok"', health)
        secret = b"Sekr1t-" + os.urandom(6).hex().encode()
        form = (
            b"hub.mode=subscribe&hub.topic="
            + f"http://127.0.0.1:{port}/feed.xml".encode()
            + b"&hub.callback=https%3A%2F%2F127.0.0.1%3A9%2Fcb&hub.secret="
            + secret
        )
        answer = yield deferToThread(
            raw_exchange,
            port,
            b"POST /api/websub/hub?hub.secret=" + secret + b" HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n" % len(form) + form,
        )
        self.assertTrue(answer.startswith(b"HTTP/1.1 202"), answer)

        # a request in flight: half its body sent
        client = socket.create_connection(("127.0.0.1", port))
        self.addCleanup(client.close)
        client.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Accept: {ACCEPT}\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n".encode()
            + INITIALIZE[:20]
        )
        yield task.deferLater(reactor, 0.3, lambda: None)
        process.signalProcess(signal.SIGTERM)
        stopping = yield notifications.wait()
        self.assertEqual(stopping, [b"STOPPING=1"])
        # STOPPING=1 is sent first thing at shutdown; the listeners close a
        # moment later, as the services stop
        refused = yield deferToThread(refused_soon, port)
        self.assertTrue(refused, "still accepting connections while stopping")
        self.assertFalse(daemon.ended.called)
        client.sendall(INITIALIZE[20:])
        reply = yield deferToThread(read_to_close, client)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK"), reply)
        self.assertIn(b"Connection: close", reply)
        self.assertIn(b'"serverInfo"', reply)
        yield daemon.ended

        lines = daemon.output.decode().splitlines()
        records = [json.loads(line) for line in lines]  # every line is JSON
        texts = [r["text"] for r in records]
        self.assertTrue(
            any(t.startswith("reviewsd ") and "starting: " in t for t in texts)
        )
        [config] = [r for r in records if "configuration" in r]
        self.assertEqual(
            config["configuration"]["listen"], f"tcp:{port}:interface=127.0.0.1"
        )
        access = [r for r in records if r["namespace"] == "reviewsd.access"]
        self.assertEqual(
            [(r["method"], r["uri"].split("?")[0], r["status"]) for r in access],
            [
                ("GET", "/healthz", 200),
                ("POST", "/api/websub/hub", 202),
                ("POST", "/mcp", 200),
            ],
        )
        self.assertIn("hub.secret=REDACTED", access[1]["uri"])
        self.assertTrue(
            any("waiting up to 10.0 s for 1 requests" in t for t in texts), texts
        )
        self.assertNotIn(secret.decode(), daemon.output.decode())


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        return read_to_close(s)


def read_to_close(s: socket.socket) -> bytes:
    s.settimeout(10)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def refused_soon(port: int, within: float = 5.0) -> bool:
    """Whether connecting to C{port} is refused within C{within} seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


class SocketActivationTests(TestCase):
    """
    C{--listen systemd:...} on a socket passed as systemd passes it, by
    systemd-socket-activate (Debian: systemd) where it is installed.
    """

    timeout = 60

    @defer.inlineCallbacks
    def test_named_socket(self) -> Any:
        activate = shutil.which("systemd-socket-activate")
        if activate is None:
            raise SkipTest("systemd-socket-activate is not installed (Debian: systemd)")
        directory = short_temp_dir(self)
        notifications = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(notifications.close)
        port = free_port()
        workdir = os.path.abspath(self.mktemp())
        os.makedirs(workdir)
        env = environment()
        daemon = _Daemon()
        process = reactor.spawnProcess(
            daemon,
            activate,
            [
                activate,
                "--listen",
                f"127.0.0.1:{port}",
                "--fdname",
                "reviewsd-http",
                "-E",
                f"PYTHONPATH={env['PYTHONPATH']}",
                "-E",
                f"NOTIFY_SOCKET={notifications.path}",
                sys.executable,
                *TWISTD[1:],
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--listen",
                "systemd:domain=INET:name=reviewsd-http",
                "--base-url",
                f"http://127.0.0.1:{port}",
                "--state-dir",
                os.path.join(workdir, "state"),
            ],
            env=env,
            path=workdir,
        )

        def stop() -> Deferred[None]:
            if not daemon.ended.called:
                process.signalProcess(signal.SIGTERM)
            return daemon.ended

        self.addCleanup(stop)
        # the first connection starts the daemon, which answers it
        answer = b""
        for _ in range(100):
            try:
                answer = yield deferToThread(
                    raw_exchange,
                    port,
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                )
                break
            except OSError:
                yield task.deferLater(reactor, 0.1, lambda: None)
        self.assertTrue(answer.startswith(b"HTTP/1.1 200 OK"), daemon.output.decode())
        [ready] = yield notifications.wait()
        self.assertIn(b"systemd:domain=INET:name=reviewsd-http", ready)
        yield stop()
        self.assertEqual(notifications.received(), [b"STOPPING=1"])
