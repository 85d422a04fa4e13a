"""
WebSub fan-out: the time from one publish until N HTTPS subscribers on
loopback have all acknowledged, with the outbound concurrency bound in
force, and the hub process's resident memory meanwhile.

    python benchmarks/websub.py [--subscribers 1000] [--ports 4]
        [--concurrency 64] [--topic /api/feed.json] [--rounds 3]

The hub runs in its own process, assembled as the daemon assembles it
(the demo data's snapshot, C{Front} with the hub mounted, the L{Hub} with
its SQLite store, the guarded client with its TLS checks and address
policy, C{--allow-private-callbacks} and the throwaway CA as
C{--callback-ca}); it is driven over stdin, so that C{publish} can be timed
without waiting for live data reload. This process is the subscribers: one
twisted.web HTTPS site (trustme certificate) on a few loopback ports,
answering challenges and acknowledging deliveries with 202 on N callback
paths. Only loopback is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reviewsd.data.links import (
    ATOM_FEED_PATH,
    HUB_PATH,
    JSON_FEED_PATH,
    REVIEWS_PATH,
    Links,
)

TOPIC_PATHS = (ATOM_FEED_PATH, JSON_FEED_PATH, REVIEWS_PATH)


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --- the hub process ----------------------------------------------------------


def serve_hub(arguments: argparse.Namespace) -> None:
    """The hub side: the daemon's service tree, controlled on stdin."""
    from twisted.internet import reactor, stdio, task
    from twisted.logger import globalLogBeginner, textFileLogObserver
    from twisted.protocols.basic import LineReceiver

    from reviewsd.data.loading import DEMO_DATA
    from reviewsd.publishing.build import load_snapshot
    from reviewsd.publishing.service import CurrentSnapshot, ReviewsData
    from reviewsd.web.site import make_site
    from reviewsd.websub import Hub, HubConfig, HubResource
    from reviewsd.websub.outbound import GuardedClient, OutboundPolicy
    from reviewsd.websub.topics import SnapshotTopics

    state = Path(arguments.state)
    log_file = (state / "hub.log").open("a")
    globalLogBeginner.beginLoggingTo(
        [textFileLogObserver(log_file)], redirectStandardIO=False
    )
    links = Links(f"http://127.0.0.1:{arguments.port}")
    data = ReviewsData(DEMO_DATA, CurrentSnapshot(load_snapshot(DEMO_DATA, links)))

    client = GuardedClient(
        reactor,
        OutboundPolicy(
            allow_private=True,
            extra_ca_pem=Path(arguments.ca).read_bytes(),
            concurrency=arguments.concurrency,
        ),
    )
    hub = Hub(
        HubConfig(
            hub_url=links.hub,
            topics=tuple(links.url(p) for p in TOPIC_PATHS),
            max_per_host=arguments.max_per_host,
        ),
        client,
        store_path=state / "websub.sqlite3",
        topics=SnapshotTopics(data),
        clock=reactor,
    )
    hub.startService()
    site = make_site(data, reactor, {HUB_PATH: HubResource(hub)})
    site.noisy = False
    reactor.listenTCP(arguments.port, site, interface="127.0.0.1")

    class Control(LineReceiver):
        delimiter = b"\n"

        def connectionMade(self) -> None:
            hub.ready().addCallback(lambda _: self.send({"ready": True}))

        def send(self, message: dict[str, Any]) -> None:
            self.sendLine(json.dumps(message).encode())

        def lineReceived(self, line: bytes) -> None:
            command, _, argument = line.decode().partition(" ")
            if command == "count":
                self.send({"subscriptions": len(hub.subscriptions())})
            elif command == "publish":
                started = time.perf_counter()
                most = {"in_flight": 0, "queued": 0}

                def sample() -> None:
                    most["in_flight"] = max(most["in_flight"], client.in_flight)
                    most["queued"] = max(most["queued"], client.queued)

                sampler = task.LoopingCall(sample)
                sampler.start(0.005)

                def published(_: object) -> None:
                    sampler.stop()
                    elapsed = time.perf_counter() - started
                    self.send({"published": {"seconds": elapsed, **most}})

                hub.publish(links.url(argument)).addCallback(published)
            elif command == "stop":
                hub.stopService().addBoth(lambda _: reactor.stop())

    stdio.StandardIO(Control())
    reactor.run()


# --- the subscribers ----------------------------------------------------------


def run(arguments: argparse.Namespace) -> None:
    from treq.client import HTTPClient
    from twisted.internet import defer, protocol, reactor, task
    from twisted.web.client import Agent, HTTPConnectionPool

    from benchmarks.documents import free_port
    from tests.support.tls import TLSFiles, listen_https
    from tests.support.websub import Subscriber

    work = Path(tempfile.mkdtemp(prefix="websub-bench-"))
    tls = TLSFiles(work / "tls", "127.0.0.1")
    subscriber = Subscriber(record=False)
    ports = [listen_https(subscriber, tls) for _ in range(arguments.ports)]
    hub_port = free_port()
    base = f"http://127.0.0.1:{hub_port}"
    state = work / "state"
    state.mkdir()

    class HubProcess(protocol.ProcessProtocol):
        def __init__(self) -> None:
            self.buffer = b""
            self.waiting: list[tuple[str, defer.Deferred[Any]]] = []
            self.ended: defer.Deferred[None] = defer.Deferred()

        def outReceived(self, data: bytes) -> None:
            self.buffer += data
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                for index, (key, d) in enumerate(self.waiting):
                    if key in message:
                        del self.waiting[index]
                        d.callback(message[key])
                        break

        def errReceived(self, data: bytes) -> None:
            sys.stderr.write(data.decode(errors="replace"))

        def processEnded(self, reason: Any) -> None:
            self.ended.callback(None)

        def ask(self, line: str, key: str) -> defer.Deferred[Any]:
            d: defer.Deferred[Any] = defer.Deferred()
            self.waiting.append((key, d))
            if line:
                self.transport.write(line.encode() + b"\n")
            return d

    hub = HubProcess()
    ready = hub.ask("", "ready")
    process = reactor.spawnProcess(
        hub,
        sys.executable,
        [
            sys.executable,
            __file__,
            "--serve-hub",
            "--port",
            str(hub_port),
            "--state",
            str(state),
            "--ca",
            str(tls.ca_path),
            "--concurrency",
            str(arguments.concurrency),
            "--max-per-host",
            str(arguments.subscribers + 10),
        ],
        env=dict(os.environ),
    )

    def rss() -> int:
        with open(f"/proc/{process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    async def one_round(number: int, count: int) -> None:
        baseline = rss()
        peak = [baseline]
        sampler = task.LoopingCall(lambda: peak.append(rss()))
        sampler.start(0.02)
        target = subscriber.deliveries + count
        done_at: list[float] = []
        all_received = subscriber.wait_for(
            lambda: subscriber.deliveries >= target
        ).addCallback(lambda _: done_at.append(time.perf_counter()))
        t0 = time.perf_counter()
        hub_side = await hub.ask(f"publish {arguments.topic}", "published")
        seconds = hub_side["seconds"]
        await all_received
        sampler.stop()
        elapsed = done_at[0] - t0
        _write(
            f"round {number}: {count} acknowledged in {elapsed:.2f} s (subscriber "
            f"side; the hub's publish() fired after {seconds:.2f} s), "
            f"{count / elapsed:.0f} deliveries/s; at most {hub_side['in_flight']} "
            f"requests in flight, {hub_side['queued']} queued; hub RSS "
            f"{baseline / 2**20:.1f} MiB before, {max(peak) / 2**20:.1f} MiB peak"
        )

    async def main() -> None:
        await ready
        http = HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor)))
        topic = base + arguments.topic
        callbacks = [
            f"https://127.0.0.1:{ports[n % len(ports)].getHost().port}/cb/{n}?s={n}"
            for n in range(arguments.subscribers)
        ]
        started = time.perf_counter()
        semaphore = defer.DeferredSemaphore(32)

        async def subscribe(callback: str) -> None:
            response = await http.post(
                base + HUB_PATH,
                data={
                    "hub.mode": "subscribe",
                    "hub.topic": topic,
                    "hub.callback": callback,
                    "hub.secret": "benchmark-secret",
                },
            )
            await response.content()
            assert response.code == 202, response.code

        await defer.gatherResults(
            [
                semaphore.run(lambda c=c: defer.Deferred.fromCoroutine(subscribe(c)))
                for c in callbacks
            ]
        )
        while (await hub.ask("count", "subscriptions")) < len(callbacks):
            await task.deferLater(reactor, 0.05, lambda: None)
        subscribed = time.perf_counter() - started
        size = len(await (await http.get(topic)).content())
        _write(
            f"{len(callbacks)} subscriptions verified over HTTPS in "
            f"{subscribed:.2f} s ({len(ports)} loopback ports); topic "
            f"{arguments.topic}, {size} bytes, signed"
        )
        _write(f"outbound concurrency bound: {arguments.concurrency}")
        for round_ in range(1, arguments.rounds + 1):
            await one_round(round_, len(callbacks))
        hub.transport.write(b"stop\n")
        await hub.ended

    def failed(failure: Any) -> None:
        sys.stderr.write(failure.getTraceback())
        if not hub.ended.called:
            process.signalProcess("KILL")

    d = defer.Deferred.fromCoroutine(main())
    d.addErrback(failed)
    d.addBoth(lambda _: reactor.stop())
    reactor.run()
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--ports", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--topic", default=JSON_FEED_PATH, choices=TOPIC_PATHS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-hub", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--state", help=argparse.SUPPRESS)
    parser.add_argument("--ca", help=argparse.SUPPRESS)
    parser.add_argument("--max-per-host", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve_hub:
        serve_hub(arguments)
    else:
        run(arguments)


if __name__ == "__main__":
    main()
