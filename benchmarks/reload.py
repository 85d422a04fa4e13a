"""
From a file write to the new data served, and to a WebSub subscriber's
receipt of the changed topic, against the real daemon.

    python benchmarks/reload.py [--reviews 0] [--rounds 3]

--reviews 0 uses the bundled demo data; N generates N synthetic reviews.
The subscriber is an HTTPS server on loopback (a throwaway trustme CA,
passed with --callback-ca and --allow-private-callbacks).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import treq
import trustme
from twisted.internet import defer, reactor, ssl, task
from twisted.web.resource import Resource
from twisted.web.server import Site

from benchmarks.documents import free_port, start_daemon
from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.synthetic import write


class Subscriber(Resource):
    isLeaf = True

    def __init__(self) -> None:
        super().__init__()
        self.verified = defer.Deferred()
        self.received: list[float] = []

    def render_GET(self, request: Any) -> bytes:
        challenge = request.args[b"hub.challenge"][0]
        if not self.verified.called:
            self.verified.callback(None)
        return challenge

    def render_POST(self, request: Any) -> bytes:
        self.received.append(time.monotonic())
        return b""


@defer.inlineCallbacks
def measure(args: argparse.Namespace) -> Any:
    work = Path(tempfile.mkdtemp(prefix="reviewsd-reload-"))
    data = work / "data"
    if args.reviews:
        write(data, args.reviews)
        reviews = data / "reviews.jsonl"
    else:
        shutil.copytree(DEMO_DATA, data)
        reviews = data / "reviews.json"
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    subscriber = Subscriber()
    options = ssl.PrivateCertificate.loadPEM(
        cert.private_key_and_cert_chain_pem.bytes()
    ).options()
    listening = reactor.listenSSL(0, Site(subscriber), options, interface="127.0.0.1")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daemon = start_daemon(
        port,
        work,
        "--data",
        str(data),
        "--callback-ca",
        str(work / "ca.pem"),
        "--allow-private-callbacks",
        "--access-log",
        "off",
    )
    try:
        started = time.monotonic()
        while True:
            try:
                yield treq.get(base + "/healthz")
                break
            except Exception:
                if time.monotonic() - started > 600:
                    raise
                yield task.deferLater(reactor, 0.1, lambda: None)
        print(
            f"{args.reviews or 'demo'} reviews: up in "
            f"{time.monotonic() - started:.1f} s"
        )
        callback = f"https://127.0.0.1:{listening.getHost().port}/cb"
        yield treq.post(
            base + "/api/websub/hub",
            data={
                "hub.mode": "subscribe",
                "hub.topic": base + "/reviews.json",
                "hub.callback": callback,
            },
        )
        yield subscriber.verified
        yield task.deferLater(reactor, 1, lambda: None)
        for round_ in range(args.rounds):
            before = len(subscriber.received)
            record = {
                "id": f"reload-{round_}-{time.time_ns()}",
                "author": "Bench",
                "rating": 5,
                "date": "2026-11-21",
                "text": "On time.",
                "source": "google",
                "verified": True,
            }
            written = time.monotonic()
            if reviews.suffix == ".jsonl":
                with reviews.open("a") as f:
                    f.write(json.dumps(record) + "\n")
            else:
                records = json.loads(reviews.read_text())
                records.append(record)
                temporary = reviews.with_suffix(".tmp")
                temporary.write_text(json.dumps(records))
                temporary.replace(reviews)
            while True:
                response = yield treq.get(base + "/api/reviews/since/2026-11-21")
                body = yield response.json()
                if any(r["id"] == record["id"] for r in body["reviews"]):
                    served = time.monotonic() - written
                    break
                yield task.deferLater(reactor, 0.02, lambda: None)
            while len(subscriber.received) == before:
                yield task.deferLater(reactor, 0.02, lambda: None)
            received = subscriber.received[-1] - written
            print(
                f"  round {round_ + 1}: served after {served:.2f} s, "
                f"subscriber received after {received:.2f} s"
            )
    finally:
        daemon.terminate()
        daemon.wait(60)
        yield listening.stopListening()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    task.react(lambda _: measure(args))


if __name__ == "__main__":
    main()
