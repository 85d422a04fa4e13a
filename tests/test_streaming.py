"""
Large bodies written a chunk at a time (reviewsd.web.streaming): whole and
exact, bounded per connection whatever the reader's pace, released when
the reader leaves; and the memory of a burst of them given back once it is
over (reviewsd.memory.Trimmer).
"""

from __future__ import annotations

import base64
import random
import socket
import ssl
from pathlib import Path
from typing import Any

import attrs
from twisted.internet import defer, reactor, task
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SynchronousTestCase, TestCase

from reviewsd import memory
from reviewsd.data.links import REVIEWS_PATH
from reviewsd.data.snapshot import JSON, Document
from reviewsd.memory import Trimmer
from reviewsd.web import streaming
from reviewsd.web.site import make_site
from tests.support import Holder
from tests.support.site import DEMO, Answer, LaggingReader, SiteTestCase
from tests.support.tls import TLSFiles

CHUNK = streaming.CHUNK
LARGE = Document.build(
    base64.b64encode(random.Random(7).randbytes(3 * 1024 * 1024)),
    JSON,
    1_700_000_000,
)
"""A 4 MiB document whose gzip bytes are over the threshold too."""
assert LARGE.gzipped is not None and len(LARGE.gzipped.body) >= streaming.LARGE_BODY

GET = b"GET /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n"


def answers(raw: bytes) -> list[Answer]:
    """The answers in a stream of them, each with its Content-Length."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        answer = Answer(head + b"\r\n\r\n")
        length = int(answer.headers.get("content-length", "0"))
        answer.body, raw = rest[:length], rest[length:]
        found.append(answer)
    return found


def complete(raw: bytes, count: int) -> bool:
    """Whether C{raw} holds C{count} whole answers."""
    if raw.count(b"\r\n\r\n") < count:
        return False
    found = answers(raw)
    last = found[-1]
    return len(found) == count and len(last.body) == int(last.headers["content-length"])


class StreamingTests(SiteTestCase):
    """A large document through the site, in memory."""

    def setUp(self) -> None:
        super().setUp()
        self.holder.snapshot = attrs.evolve(
            DEMO, documents={**DEMO.documents, REVIEWS_PATH: LARGE}
        )
        self.trims: list[None] = []
        self.patch(memory, "trim_heap", lambda: self.trims.append(None))
        self.trimmer = streaming.trimmer_for(self.clock)

    def connect(self) -> tuple[LaggingReader, Any]:
        transport = LaggingReader(64 * 1024)
        channel = self.site.buildProtocol(None)
        transport.protocol = channel
        channel.makeConnection(transport)
        return transport, channel

    def test_whole_in_bounded_chunks(self) -> None:
        """
        The body arrives whole and exact, with its headers, written a chunk
        at a time; the request ends with the last chunk.
        """
        for headers, representation in (
            (b"", LARGE.identity),
            (b"Accept-Encoding: gzip\r\n", LARGE.gzipped),
        ):
            assert representation is not None
            transport, channel = self.connect()
            channel.dataReceived(GET[:-2] + headers + b"\r\n")
            [answer] = answers(transport.read_all())
            self.assertEqual(answer.code, 200)
            self.assertEqual(answer.body, representation.body)
            self.assertEqual(
                answer.headers["content-length"], str(len(representation.body))
            )
            self.assertEqual(
                answer.headers.get("content-encoding"), "gzip" if headers else None
            )
            self.assertNotIn("transfer-encoding", answer.headers)
            self.assertEqual(answer.headers["etag"], representation.etag.decode())
            body_writes = transport.writes[1:]  # after the headers
            self.assertLessEqual(max(body_writes), CHUNK)
            self.assertEqual(sum(body_writes), len(representation.body))
            self.assertEqual(len(self.site.in_flight), 0)
            self.assertIsNone(channel._requestProducer)

    def test_a_slow_reader_holds_a_chunk(self) -> None:
        """
        A reader that takes nothing has a chunk written to its connection,
        not the document; each read lets one more chunk through.
        """
        transport, channel = self.connect()
        channel.dataReceived(GET)
        self.clock.advance(1)
        self.assertLess(len(transport.value()), CHUNK + 1024)
        received = b""
        for _ in range(3):
            data = transport.read()
            self.assertLessEqual(len(data), CHUNK + 1024)
            received += data
        self.assertLess(transport.most_unsent, CHUNK + 1024)
        self.assertEqual(len(self.site.in_flight), 1)
        received += transport.read_all()
        [answer] = answers(received)
        self.assertEqual(answer.body, LARGE.identity.body)

    def test_a_reader_that_leaves_frees_everything(self) -> None:
        """
        A reader that closes mid-body: the producer lets go of the body, the
        request is no longer in flight, and the connection is forgotten.
        """
        transport, channel = self.connect()
        channel.dataReceived(GET)
        transport.read()
        producer = channel._requestProducer
        self.assertIsNotNone(producer)
        transport.loseConnection()
        self.assertIsNone(producer._body)
        self.assertEqual(len(self.site.in_flight), 0)
        self.assertEqual(len(self.site.connections), 0)
        # (a real transport also stops its producer: harmless twice)
        producer.stopProducing()
        self.clock.advance(self.trimmer.delay)
        self.assertEqual(len(self.trims), 1)

    def test_head_and_not_modified_are_unaffected(self) -> None:
        """HEAD and 304 send headers only, at once, as for any document."""
        transport, channel = self.connect()
        channel.dataReceived(b"HEAD /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = Answer(transport.read())
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.body, b"")
        self.assertEqual(
            answer.headers["content-length"], str(len(LARGE.identity.body))
        )
        etag = LARGE.identity.etag
        channel.dataReceived(GET[:-2] + b"If-None-Match: %s\r\n\r\n" % etag)
        answer = Answer(transport.read())
        self.assertEqual(answer.code, 304)
        self.assertEqual(answer.body, b"")
        self.assertNotIn("content-length", answer.headers)
        self.assertEqual(len(self.site.in_flight), 0)
        self.assertEqual(self.trimmer._under_way, 0)

    def test_keep_alive_and_pipelining(self) -> None:
        """
        Pipelined requests behind a streamed answer wait until the client
        has read it, then are answered in order on the same connection: the
        unsent bytes never exceed a chunk and an answer's headers.
        """
        transport, channel = self.connect()
        options = b"OPTIONS /reviews.json HTTP/1.1\r\nHost: x\r\n\r\n"
        channel.dataReceived(GET + GET + options + GET)
        self.clock.advance(0)
        received = b""
        while data := transport.read():
            received += data
            self.clock.advance(0)
        first, second, third, fourth = answers(received)
        self.assertEqual(first.body, LARGE.identity.body)
        self.assertEqual(second.body, LARGE.identity.body)
        self.assertEqual(third.code, 204)
        self.assertEqual(fourth.body, LARGE.identity.body)
        self.assertLess(transport.most_unsent, CHUNK + 1024)
        self.assertTrue(transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)

    def test_a_reader_that_takes_nothing_is_cut_off(self) -> None:
        """
        The idle timeout does not run while an answer is written: a reader
        that takes nothing for as long is disconnected, and reading in time
        keeps the connection.
        """
        transport, channel = self.connect()
        channel.dataReceived(GET)
        timeout = self.site.timeOut
        self.clock.advance(timeout - 1)
        transport.read()
        self.clock.advance(timeout - 1)
        self.assertTrue(transport.connected)
        self.clock.advance(2)
        self.assertFalse(transport.connected)
        self.assertEqual(len(self.site.in_flight), 0)
        [event] = [e for e in self.events if "took nothing" in e.get("log_format", "")]
        self.assertEqual(event["path"], REVIEWS_PATH)

    def test_trimmed_after_the_last_transfer(self) -> None:
        """
        The heap is trimmed once, a while after the last of several
        overlapping transfers has ended.
        """
        first, one = self.connect()
        second, other = self.connect()
        one.dataReceived(GET)
        other.dataReceived(GET)
        first.read_all()
        self.clock.advance(self.trimmer.delay)
        self.assertEqual(self.trims, [])
        second.read_all()
        self.clock.advance(self.trimmer.delay - 0.1)
        self.assertEqual(self.trims, [])
        self.clock.advance(0.1)
        self.assertEqual(len(self.trims), 1)
        self.clock.advance(60)
        self.assertEqual(len(self.trims), 1)


class TrimmerTests(SynchronousTestCase):
    def test_debounced(self) -> None:
        """
        A trim comes C{delay} seconds after the last transfer under way ends,
        and only if none began meanwhile.
        """
        clock = task.Clock()
        trims: list[None] = []
        trimmer = Trimmer(clock, delay=2.0, trim=lambda: trims.append(None))
        trimmer.began()
        trimmer.began()
        trimmer.ended()
        clock.advance(5)
        self.assertEqual(trims, [])
        trimmer.ended()
        clock.advance(1)
        trimmer.began()  # a new burst: not now
        clock.advance(5)
        self.assertEqual(trims, [])
        trimmer.ended()
        clock.advance(1.9)
        self.assertEqual(trims, [])
        clock.advance(0.1)
        self.assertEqual(len(trims), 1)
        self.assertEqual(clock.getDelayedCalls(), [])


class SocketTests(TestCase):
    """The real transport, over a real socket."""

    def setUp(self) -> None:
        self.holder = Holder(
            attrs.evolve(DEMO, documents={**DEMO.documents, REVIEWS_PATH: LARGE})
        )
        self.site = make_site(self.holder, reactor)
        self.port = reactor.listenTCP(0, self.site, interface="127.0.0.1")
        self.addCleanup(self.port.stopListening)
        # trimmed at once, so that no call is left when a test ends
        self.patch(streaming.trimmer_for(reactor), "delay", 0)
        self.patch(memory, "trim_heap", lambda: None)

    def buffered(self) -> int:
        """The most bytes any of the site's connections holds unsent."""
        return max(
            len(channel.transport.dataBuffer) + channel.transport._tempDataLen
            for channel in self.site.connections
        )

    @defer.inlineCallbacks
    def test_a_reader_that_does_not_read(self) -> Any:
        """
        Over a socket that is never read, the connection holds at most a
        chunk besides what the kernel took; closed, it lets go of it all.
        """
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        client.connect(("127.0.0.1", self.port.getHost().port))
        client.sendall(GET)
        for _ in range(20):
            yield task.deferLater(reactor, 0.02, lambda: None)
        self.assertEqual(len(self.site.in_flight), 1)
        self.assertLessEqual(self.buffered(), CHUNK + 1024)
        [channel] = self.site.connections
        producer = channel._requestProducer
        client.close()
        for _ in range(50):
            if not self.site.connections:
                break
            yield task.deferLater(reactor, 0.02, lambda: None)
        self.assertEqual(len(self.site.connections), 0)
        self.assertEqual(len(self.site.in_flight), 0)
        self.assertIsNone(producer._body)

    @defer.inlineCallbacks
    def test_a_reader_that_reads(self) -> Any:
        """A reader that reads gets every byte, then the next answer."""
        client = socket.socket()
        client.connect(("127.0.0.1", self.port.getHost().port))
        self.addCleanup(client.close)
        client.setblocking(False)
        client.sendall(GET + GET)
        received = bytearray()
        least = 2 * len(LARGE.identity.body)
        for _ in range(2000):
            try:
                while data := client.recv(1 << 20):
                    received += data
            except BlockingIOError:
                pass
            if len(received) >= least and complete(bytes(received), 2):
                break
            yield task.deferLater(reactor, 0.005, lambda: None)
        yield task.deferLater(reactor, 0.01, lambda: None)  # the trim
        first, second = answers(bytes(received))
        self.assertEqual(first.body, LARGE.identity.body)
        self.assertEqual(second.body, LARGE.identity.body)

    @defer.inlineCallbacks
    def test_over_tls(self) -> Any:
        """Through the TLS layer too, each answer arrives whole, in order."""
        tls = TLSFiles(Path(self.mktemp()))
        port = reactor.listenSSL(
            0, self.site, tls.server_options(), interface="127.0.0.1"
        )
        self.addCleanup(port.stopListening)
        context = ssl.create_default_context(cadata=tls.ca_pem.decode("ascii"))

        def fetch() -> bytes:
            address = ("127.0.0.1", port.getHost().port)
            with socket.create_connection(address, timeout=30) as raw:
                with context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    s.sendall(GET + GET)
                    received = bytearray()
                    least = 2 * len(LARGE.identity.body)
                    while len(received) < least or not complete(bytes(received), 2):
                        data = s.recv(1 << 20)
                        if not data:
                            break
                        received += data
            return bytes(received)

        received = yield deferToThread(fetch)
        yield task.deferLater(reactor, 0.01, lambda: None)  # the trim
        first, second = answers(received)
        self.assertEqual(first.body, LARGE.identity.body)
        self.assertEqual(second.body, LARGE.identity.body)
