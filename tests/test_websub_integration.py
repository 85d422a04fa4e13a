"""
The WebSub hub over real sockets: a real HTTPS subscriber on loopback
(certificates from trustme, trusted through C{--callback-ca}), the hub in
the real daemon, and the hub assembled in this process.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from treq.client import HTTPClient
from twisted.internet import defer, reactor, task
from twisted.trial.unittest import TestCase
from twisted.web.client import Agent

from reviewsd.data.links import (
    ATOM_FEED_PATH,
    HUB_PATH,
    JSON_FEED_PATH,
    REVIEWS_PATH,
    Links,
)
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.site import make_site
from reviewsd.websub import Hub, HubConfig, HubResource
from reviewsd.websub.hub import signature
from reviewsd.websub.outbound import GuardedClient, OutboundPolicy
from reviewsd.websub.topics import SnapshotTopics
from tests.support import Holder, review, write_data
from tests.support.daemon import TWISTD, DaemonTestCase, _Daemon, environment, free_port
from tests.support.systemd import NotifySocket, short_temp_dir
from tests.support.tls import TLSFiles, listen_https
from tests.support.websub import Subscriber

FORM = {b"Content-Type": [b"application/x-www-form-urlencoded"]}


def wait(d: defer.Deferred[Any], seconds: float = 20.0) -> defer.Deferred[Any]:
    return d.addTimeout(seconds, reactor)


def settle(seconds: float = 1.0) -> defer.Deferred[None]:
    """
    Give the daemon time to read the subscriber's answer and commit what it
    decided: the subscriber has answered, but cannot see the hub's side.
    """
    return task.deferLater(reactor, seconds, lambda: None)


def copy_demo_data(destination: Path) -> Path:
    reviews = [review(n) for n in range(5)]
    return write_data(destination, reviews)


def change_data(directory: Path, count: int) -> None:
    write_data(directory, [review(n) for n in range(count)])


# --- the hub in the real daemon ---------------------------------------------


class StatefulDaemonTestCase(DaemonTestCase):
    """
    L{DaemonTestCase} with a state directory of the test's choosing (so a
    second daemon can find the first one's state) and a kill -9.
    """

    @defer.inlineCallbacks
    def start_with_state(
        self, base: str, state: Path, *argv: str, env: dict[str, str] | None = None
    ) -> Any:
        self.base = base
        self.client = HTTPClient(Agent(reactor))
        workdir = Path(self.mktemp()).resolve()
        workdir.mkdir(parents=True)
        daemon = _Daemon()
        process = reactor.spawnProcess(
            daemon,
            sys.executable,
            [
                *TWISTD,
                "--nodaemon",
                "--pidfile=",
                "reviewsd",
                "--state-dir",
                str(state),
                *argv,
            ],
            env=environment() if env is None else env,
            path=str(workdir),
        )
        self.daemon, self.process = daemon, process

        def stop() -> defer.Deferred[None]:
            if not daemon.ended.called:
                process.signalProcess(signal.SIGTERM)
            return daemon.ended

        self.addCleanup(stop)
        for _ in range(300):
            if daemon.ended.called:
                self.fail(f"twistd exited:\n{daemon.output.decode()}")
            try:
                yield self.client.get(base + "/reviews.json")
            except Exception:
                yield task.deferLater(reactor, 0.1, lambda: None)
            else:
                return
        self.fail(f"twistd never answered:\n{daemon.output.decode()}")

    @defer.inlineCallbacks
    def stop_daemon(self, sig: int = signal.SIGTERM) -> Any:
        if not self.daemon.ended.called:
            self.process.signalProcess(sig)
        yield self.daemon.ended


class HubDaemonTestCase(StatefulDaemonTestCase):
    """
    The real C{twistd -n reviewsd}: C{--callback-ca} and
    C{--allow-private-callbacks} let it call back a loopback subscriber.
    """

    timeout = 120

    def setUp(self) -> None:
        root = Path(self.mktemp()).resolve()
        self.data = copy_demo_data(root / "data")
        self.state = root / "state"
        self.tls = TLSFiles(root / "tls")
        self.subscriber = Subscriber()
        self.listening = listen_https(self.subscriber, self.tls)
        self.addCleanup(self.listening.stopListening)
        self.callback_base = f"https://127.0.0.1:{self.listening.getHost().port}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start_daemon(
        self, *argv: str, env: dict[str, str] | None = None
    ) -> defer.Deferred[Any]:
        return self.start_with_state(
            self.base,
            self.state,
            "--listen",
            f"tcp:{self.port}:interface=127.0.0.1",
            "--data",
            str(self.data),
            "--callback-ca",
            str(self.tls.ca_path),
            "--allow-private-callbacks",
            *argv,
            env=env,
        )

    @defer.inlineCallbacks
    def hub_request(self, mode: str, topic: str, callback: str, **extra: str) -> Any:
        form = {"hub.mode": mode, "hub.topic": topic, "hub.callback": callback}
        form.update(extra)
        response = yield self.client.post(self.base + HUB_PATH, data=form)
        body = yield response.content()
        return response.code, body


class DaemonHubTests(HubDaemonTestCase):
    """
    New content reaches subscribers by live reload, and by the catch-up
    after a restart with changed data.
    """

    @defer.inlineCallbacks
    def test_subscribe_deliver_unsubscribe_across_restarts(self) -> Any:
        """
        Subscribe (verified with a lease), survive a restart, receive the
        changed topic byte for byte with its signature and links, then
        unsubscribe and receive nothing more.
        """
        yield self.start_daemon()
        topic = self.base + ATOM_FEED_PATH
        callback = self.callback_base + "/feed?subscriber=1"
        code, body = yield self.hub_request(
            "subscribe",
            topic,
            callback,
            **{"hub.secret": "s3cret", "hub.lease_seconds": "3600"},
        )
        self.assertEqual(code, 202, body)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 1))
        check = self.subscriber.requests(b"GET", "/feed")[0]
        self.assertEqual(check.param("hub.mode"), "subscribe")
        self.assertEqual(check.param("hub.topic"), topic)
        self.assertEqual(check.param("hub.lease_seconds"), "3600")
        self.assertEqual(check.param("subscriber"), "1")

        yield settle()
        yield self.stop_daemon()
        change_data(self.data, 7)
        yield self.start_daemon()
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.deliveries >= 1))
        delivery = self.subscriber.requests(b"POST", "/feed")[0]
        fresh = yield self.client.get(topic)
        fresh_body = yield fresh.content()
        self.assertEqual(delivery.body, fresh_body)
        self.assertEqual(
            delivery.headers[b"content-type"],
            fresh.headers.getRawHeaders(b"content-type"),
        )
        self.assertEqual(
            delivery.headers[b"link"],
            [f'<{self.base}{HUB_PATH}>; rel="hub", <{topic}>; rel="self"'.encode()],
        )
        self.assertEqual(
            delivery.headers[b"x-hub-signature"],
            [signature(b"s3cret", fresh_body)],
        )

        code, _ = yield self.hub_request("unsubscribe", topic, callback)
        self.assertEqual(code, 202)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 2))
        self.assertEqual(
            self.subscriber.requests(b"GET", "/feed")[1].param("hub.mode"),
            "unsubscribe",
        )
        yield settle()
        yield self.stop_daemon()
        change_data(self.data, 9)
        yield self.start_daemon()
        yield task.deferLater(reactor, 1.5, lambda: None)
        self.assertEqual(self.subscriber.deliveries, 1)

    @defer.inlineCallbacks
    def test_live_reload_pushes_each_changed_topic_once(self) -> Any:
        """
        Change the data directory under the running daemon: within 5 s the
        new review is served, and each of the three topics reaches its
        subscriber once, byte for byte what a fresh GET returns. A touch that
        changes nothing sends nothing.
        """
        yield self.start_daemon()
        topics = {
            "/atom": self.base + ATOM_FEED_PATH,
            "/json": self.base + JSON_FEED_PATH,
            "/all": self.base + REVIEWS_PATH,
        }
        for path, topic in topics.items():
            code, body = yield self.hub_request(
                "subscribe", topic, self.callback_base + path
            )
            self.assertEqual(code, 202, body)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 3))
        yield settle()

        change_data(self.data, 6)
        started = reactor.seconds()
        while True:
            document = yield (yield self.client.get(self.base + REVIEWS_PATH)).json()
            if len(document["reviews"]) == 6:
                break
            self.assertLess(reactor.seconds() - started, 5, "not reloaded in 5 s")
            yield task.deferLater(reactor, 0.05, lambda: None)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.deliveries >= 3), 5)
        yield settle(0.5)
        for path, topic in topics.items():
            [delivery] = self.subscriber.requests(b"POST", path)
            fresh = yield (yield self.client.get(topic)).content()
            self.assertEqual(delivery.body, fresh, path)

        (self.data / "reviews.json").touch()
        yield settle(1.5)
        self.assertEqual(self.subscriber.deliveries, 3, "a touch is no change")

    @defer.inlineCallbacks
    def test_subscription_survives_kill_9(self) -> Any:
        """
        A verified subscription is on disk: after C{kill -9} and a restart
        on changed data, the subscriber gets the new content.
        """
        yield self.start_daemon()
        topic = self.base + JSON_FEED_PATH
        code, _ = yield self.hub_request(
            "subscribe", topic, self.callback_base + "/json"
        )
        self.assertEqual(code, 202)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 1))
        yield settle()
        yield self.stop_daemon(signal.SIGKILL)
        change_data(self.data, 8)
        yield self.start_daemon()
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.deliveries >= 1))
        delivery = self.subscriber.requests(b"POST", "/json")[0]
        fresh = yield (yield self.client.get(topic)).content()
        self.assertEqual(delivery.body, fresh)
        self.assertNotIn(b"x-hub-signature", delivery.headers)

    @defer.inlineCallbacks
    def test_bad_requests(self) -> Any:
        """The daemon's hub answers malformed requests 400/415, others 405."""
        yield self.start_daemon()
        code, body = yield self.hub_request(
            "subscribe", self.base + "/nope", self.callback_base + "/x"
        )
        self.assertEqual(code, 400)
        self.assertIn(b"hub.topic", body)
        code, body = yield self.hub_request(
            "subscribe",
            self.base + ATOM_FEED_PATH,
            "https://169.254.169.254/latest/meta-data/",
        )
        self.assertEqual(code, 400)
        self.assertIn(b"(cloud metadata)", body)
        response = yield self.client.post(self.base + HUB_PATH, data=b"{}")
        self.assertEqual(response.code, 415)
        response = yield self.client.get(self.base + HUB_PATH)
        self.assertEqual(response.code, 405)
        self.assertEqual((yield response.json())["error"], "method_not_allowed")
        self.assertEqual(self.subscriber.seen, [])

    @defer.inlineCallbacks
    def test_one_server_under_several_names(self) -> Any:
        """
        The loopback subscriber under 127.0.0.1, 127.0.0.2 and localhost
        is one server: with one subscription per server, the second
        address is refused at once (403) and the name, which the hub must
        look up, is denied once its verification reaches the same server.
        """
        yield self.start_daemon("--max-subscriptions-per-host", "1")
        topic = self.base + ATOM_FEED_PATH
        port = self.listening.getHost().port
        code, _ = yield self.hub_request("subscribe", topic, self.callback_base + "/a")
        self.assertEqual(code, 202)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 1))
        yield settle()
        code, body = yield self.hub_request(
            "subscribe", topic, f"https://127.0.0.2:{port}/b"
        )
        self.assertEqual(code, 403)
        self.assertIn(b"loopback addresses", body)
        code, _ = yield self.hub_request(
            "subscribe", topic, f"https://localhost:{port}/c"
        )
        self.assertEqual(code, 202)
        yield wait(
            self.subscriber.wait_for(
                lambda: any(
                    s.param("hub.mode") == "denied"
                    for s in self.subscriber.requests(b"GET", "/c")
                )
            )
        )
        metrics = yield (yield self.client.get(self.base + "/metrics")).text()
        self.assertIn('\nreviewsd_websub_subscriptions{state="active"} 1.0\n', metrics)


class BrokenStoreDaemonTests(HubDaemonTestCase):
    """
    The real daemon on a state directory whose hub store is not a usable
    store: the data is served, systemd gets READY=1 with a STATUS= line
    saying the hub is unavailable, /healthz says degraded and why, the
    metrics say the hub is down, the log has one error line naming the
    file, and the file is left as it was.
    """

    @defer.inlineCallbacks
    def broken_start(self, content: bytes) -> Any:
        self.state.mkdir(parents=True)
        self.store = self.state / "websub.sqlite3"
        self.store.write_bytes(content)
        directory = short_temp_dir(self)
        notifications = NotifySocket(os.path.join(directory, "notify"))
        self.addCleanup(notifications.close)
        env = environment()
        env["NOTIFY_SOCKET"] = notifications.path
        yield self.start_daemon(env=env)
        self.notified = yield notifications.wait()
        response = yield self.client.get(self.base + "/healthz")
        self.health = yield response.json()
        self.assertEqual(response.code, 200, self.health)
        code, self.hub_answer = yield self.hub_request(
            "subscribe", self.base + ATOM_FEED_PATH, self.callback_base + "/x"
        )
        self.assertEqual(code, 503, self.hub_answer)
        self.assertEqual(self.store.read_bytes(), content)

    @defer.inlineCallbacks
    def test_garbage(self) -> Any:
        yield self.broken_start(b"this is not a database\n" * 100)
        self.assertEqual(self.health["status"], "degraded")
        self.assertEqual(self.health["hub"], "unavailable")
        self.assertIn(str(self.store), self.health["hub_problem"])
        self.assertIn("not a database", self.health["hub_problem"])
        self.assertIs(self.health["data_loaded"], True)

        metrics = yield (yield self.client.get(self.base + "/metrics")).text()
        self.assertIn("\nreviewsd_websub_hub_up 0.0\n", metrics)
        self.assertNotIn("\nreviewsd_websub_subscriptions{", metrics)
        self.assertIn("\nreviewsd_data_loaded 1.0\n", metrics)

        [ready] = self.notified
        self.assertTrue(ready.startswith(b"READY=1\nSTATUS=Serving 5 reviews on "))
        status = ready.split(b"\n")[1].decode()
        self.assertIn("; the WebSub hub is unavailable: its store ", status)
        self.assertIn(str(self.store), status)
        output = self.daemon.output.decode()
        self.assertIn(
            f"The WebSub hub is unavailable: its store {self.store} cannot be read",
            output,
        )
        self.assertNotIn("Traceback", output)

    @defer.inlineCallbacks
    def test_empty_file(self) -> Any:
        """A zero-length store is refused, not taken for an empty hub."""
        yield self.broken_start(b"")
        self.assertEqual(self.health["status"], "degraded")
        self.assertIn("is empty (0 bytes)", self.health["hub_problem"])


# --- the hub assembled in this process --------------------------------------


class InProcessHubTests(TestCase):
    """
    The service tree the daemon builds (Front with the hub mounted, the
    hub, the guarded client) on real loopback sockets, with a real HTTPS
    subscriber: live publishing without the daemon.
    """

    timeout = 60

    @defer.inlineCallbacks
    def setUp(self) -> Any:
        root = Path(self.mktemp()).resolve()
        self.data = copy_demo_data(root / "data")
        self.tls = TLSFiles(root / "tls")
        self.subscriber = Subscriber()
        listening = listen_https(self.subscriber, self.tls)
        self.addCleanup(listening.stopListening)
        self.callback_base = f"https://127.0.0.1:{listening.getHost().port}"

        port = free_port()
        self.links = Links(f"http://127.0.0.1:{port}")
        self.holder = Holder(load_snapshot(self.data, self.links))
        client = GuardedClient(
            reactor,
            OutboundPolicy(allow_private=True, extra_ca_pem=self.tls.ca_pem),
        )
        config = HubConfig(
            hub_url=self.links.hub,
            topics=(self.links.atom_feed, self.links.json_feed, self.links.reviews),
            retry_base=0.2,
        )
        state = root / "state"
        state.mkdir()
        self.hub = Hub(
            config,
            client,
            store_path=state / "websub.sqlite3",
            topics=SnapshotTopics(self.holder),
            clock=reactor,
        )
        self.hub.startService()
        self.addCleanup(self.hub.stopService)
        site = make_site(self.holder, reactor, {HUB_PATH: HubResource(self.hub)})
        site.noisy = False
        http = reactor.listenTCP(port, site, interface="127.0.0.1")
        self.addCleanup(http.stopListening)
        self.http = HTTPClient(Agent(reactor))
        yield self.hub.ready()

    @defer.inlineCallbacks
    def subscribe(self, path: str, topic: str, **extra: str) -> Any:
        form = {
            "hub.mode": "subscribe",
            "hub.topic": topic,
            "hub.callback": self.callback_base + path,
            **extra,
        }
        response = yield self.http.post(self.links.hub, data=form)
        self.assertEqual(response.code, 202)
        self.assertEqual(
            response.headers.getRawHeaders(b"content-type"),
            [b"text/plain; charset=utf-8"],
        )
        yield response.content()

    @defer.inlineCallbacks
    def test_publish_reaches_subscribers(self) -> Any:
        topic = self.links.json_feed
        yield self.subscribe("/a", topic, **{"hub.secret": "k" * 20})
        yield self.subscribe("/b", topic)
        yield wait(self.subscriber.wait_for(lambda: self.subscriber.verifications >= 2))
        yield wait(self._verified(2))
        change_data(self.data, 11)
        self.holder.snapshot = load_snapshot(self.data, self.links)
        yield wait(self.hub.publish(topic))
        self.assertEqual(self.subscriber.deliveries, 2)
        fresh = yield (yield self.http.get(topic)).content()
        for path in ("/a", "/b"):
            (delivery,) = self.subscriber.requests(b"POST", path)
            self.assertEqual(delivery.body, fresh)
            self.assertEqual(delivery.headers[b"content-type"], [b"application/json"])
        (signed,) = self.subscriber.requests(b"POST", "/a")
        self.assertEqual(
            signed.headers[b"x-hub-signature"], [signature(b"k" * 20, fresh)]
        )
        self.assertNotIn(
            b"x-hub-signature", self.subscriber.requests(b"POST", "/b")[0].headers
        )

    @defer.inlineCallbacks
    def test_retry_then_denial(self) -> Any:
        """A callback failing 3 times is denied, over real sockets."""
        topic = self.links.atom_feed
        self.subscriber.delivery_status["/down"] = 503
        yield self.subscribe("/down", topic)
        yield wait(self._verified(1))
        yield wait(self.hub.publish(topic))
        yield wait(
            self.subscriber.wait_for(
                lambda: any(
                    s.param("hub.mode") == "denied"
                    for s in self.subscriber.requests(b"GET", "/down")
                )
            )
        )
        self.assertEqual(len(self.subscriber.requests(b"POST", "/down")), 3)
        self.assertEqual(self.hub.subscriptions(), [])

    def _verified(self, count: int) -> defer.Deferred[None]:
        def check() -> Any:
            if len(self.hub.subscriptions()) >= count:
                return None
            return task.deferLater(reactor, 0.02, check)

        return defer.maybeDeferred(check)
