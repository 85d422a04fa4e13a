"""
Search and incremental sync: results checked against a brute-force filter
written independently of the index, every kind of bad parameter, and the
conditional behaviour of /api/reviews/since/{date}.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
import zlib
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from treq import content
from treq.testing import RequestTraversalAgent
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.links import Links
from reviewsd.data.loading import DEMO_DATA, Reader
from reviewsd.data.mentions import Found, Matcher
from reviewsd.data.model import Business, Review
from reviewsd.data.search import SearchQuery
from reviewsd.data.snapshot import GZIP_MIN_SIZE, SINCE_SEGMENT, SinceCache, Snapshot
from reviewsd.data.synthetic import write as write_synthetic
from reviewsd.insights import MEMO_VERSION, ReviewCache, derive
from reviewsd.insights.tally import Members
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.conditional import CACHE_CONTROL
from reviewsd.web.site import make_site
from tests.support import BASE, FakeReactor, Holder, snapshot_of
from tests.support.search import DEMO, search
from tests.support.site import Connection

_MATCHERS: dict[int, tuple[Business, Matcher]] = {}


def _mentioned(business: Business, text: str) -> Found:
    """
    What a text mentions, asked of the matcher text by text, apart from the
    index and the insights cache (the matcher's reading is tested in
    tests.test_mentions).
    """
    kept = _MATCHERS.get(id(business))
    if kept is None or kept[0] is not business:
        kept = _MATCHERS[id(business)] = (business, Matcher(business))
    return kept[1].find(text)


def brute_force(
    business: Business, reviews: tuple[Review, ...], q: SearchQuery
) -> list[str]:
    """Every filter applied to every review, the slow and obvious way."""
    technicians = {
        t.name
        for t in business.technicians
        if q.mentions_technician is not None
        and q.mentions_technician.casefold()
        in [n.casefold() for n in (t.name, *t.aliases)]
    }
    services = {
        s.id
        for s in business.services
        if q.mentions_service is not None
        and q.mentions_service.casefold() in (s.id.casefold(), s.name.casefold())
    }
    matched = []
    for review in reviews:
        text = review.text or ""
        if q.rating is not None and review.rating != q.rating:
            continue
        if q.min_rating is not None and review.rating < q.min_rating:
            continue
        if q.since is not None and review.date < q.since:
            continue
        if q.until is not None and review.date > q.until:
            continue
        if q.query is not None and (
            review.text is None or q.query.casefold() not in text.casefold()
        ):
            continue
        if q.mentions_technician is not None and not (
            technicians & _mentioned(business, text).technicians
        ):
            continue
        if q.mentions_service is not None and not (
            services & _mentioned(business, text).services
        ):
            continue
        matched.append(review.id)
    return matched


PARAMETER_VALUES: dict[str, list[Any]] = {
    "rating": [None, None, 1, 3, 5],
    "min_rating": [None, None, 1, 2.5, 4, 5],
    "since": [None, date(2024, 1, 1), date(2025, 6, 15), date(2026, 11, 1)],
    "until": [None, date(2023, 12, 31), date(2025, 6, 15), date(2030, 1, 1)],
    "query": [
        None,
        None,
        "leak",
        "LEAK",
        "on time",
        "été",
        "ÉTÉ",
        "the",
        "a",
        "zzz",
        "!",
    ],
    "mentions_technician": [
        None,
        None,
        "Dev",
        "dev patel",
        "MIKE",
        "Mike R.",
        "Tom",
        "Nobody",
    ],
    "mentions_service": [
        None,
        None,
        "plumbing",
        "Roofing",
        "heating & air conditioning",
        "nope",
    ],
    "limit": [1, 5, 20, 100],
}


class SearchResultTests(SynchronousTestCase):
    def check(self, snapshot: Snapshot, combinations: int, seed: int) -> None:
        dataset = snapshot.dataset
        rng = random.Random(seed)
        for _ in range(combinations):
            parameters = {k: rng.choice(v) for k, v in PARAMETER_VALUES.items()}
            if (
                parameters["since"]
                and parameters["until"]
                and parameters["since"] > parameters["until"]
            ):
                parameters["until"] = None
            q = SearchQuery(**parameters)
            expected = brute_force(dataset.business, dataset.reviews, q)
            answer = json.loads(snapshot.search(q))
            self.assertEqual(answer["matched"], len(expected), parameters)
            self.assertEqual(
                [r["id"] for r in answer["reviews"]], expected[: q.limit], parameters
            )
            self.assertEqual(answer["returned"], len(answer["reviews"]))

    def test_demo_against_brute_force(self) -> None:
        """Before the word index is built (texts tested one by one), and after."""
        snapshot = snapshot_of(DEMO_DATA)
        self.assertFalse(snapshot.index.has_words)
        self.check(snapshot, 700, seed=1)
        snapshot.index.index_words()
        self.check(snapshot, 1500, seed=6)

    def test_synthetic_against_brute_force(self) -> None:
        """3,000 reviews: broad queries take the one-by-one path too."""
        snapshot = snapshot_of(write_synthetic(Path(self.mktemp()), 3000, seed=3))
        self.check(snapshot, 150, seed=7)
        snapshot.index.index_words()
        self.check(snapshot, 400, seed=2)

    def test_reloaded_snapshot_equals_a_fresh_one(self) -> None:
        """
        A reload reuses what it can of the snapshot before (records, texts,
        word postings, analyses); its documents and answers are those of a
        snapshot built from nothing, whatever changed.
        """
        # derivations start from a checkpoint 200 reviews from the newest
        self.patch(derive, "CHECKPOINT_DISTANCE", 200)
        directory = write_synthetic(Path(self.mktemp()), 1500, seed=4)
        path = directory / "reviews.jsonl"
        links, reader, cache = Links(BASE), Reader(), ReviewCache()
        snapshot = load_snapshot(directory, links, cache=cache, reader=reader)
        records = [json.loads(line) for line in path.read_text().splitlines()]

        def newer(number: int, text: str | None) -> dict[str, Any]:
            return dict(records[0], id=f"new-{number}", date="2031-01-01", text=text)

        changes = [
            # newer reviews only: the older ones keep their word postings
            lambda: records.extend(
                [newer(1, "Fixed the leak, spotless."), newer(2, None)]
            ),
            # edits anywhere: a text, a reply, a rating; one removed
            lambda: (
                records[100].update(text="Completely different words here."),
                records[700].update(
                    owner_reply={"text": "Thank you!", "date": "2031-02-01"}
                ),
                records[1200].update(rating=1),
                records.pop(5),
            ),
            lambda: records.append(newer(3, "the leak the leak")),
        ]
        for change in changes:
            change()
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
            snapshot = load_snapshot(directory, links, snapshot, cache, reader)
            self.assertEqual(
                len(cache.checkpoint.reviews), len(snapshot.dataset.reviews) - 200
            )
            fresh = load_snapshot(directory, links)
            self.assertSameDocuments(snapshot, fresh)
            self.check(snapshot, 300, seed=5)
            for query in ("leak", "the leak", "spotless", "different words"):
                self.assertEqual(
                    search(snapshot, query=query, limit=100),
                    search(fresh, query=query, limit=100),
                )

    def test_start_from_a_saved_cache(self) -> None:
        """
        A start over a saved insights cache adds up only the reviews after
        its checkpoint, and publishes the documents of a snapshot built from
        nothing; so do the reloads after it, newer reviews or older edits.
        """
        self.patch(derive, "CHECKPOINT_DISTANCE", 200)
        directory = write_synthetic(Path(self.mktemp()), 1500, seed=6)
        path = directory / "reviews.jsonl"
        links, saved = Links(BASE), Path(self.mktemp())
        first = ReviewCache(saved, memo_version=MEMO_VERSION)
        load_snapshot(directory, links, cache=first)
        first.save()

        reader = Reader()
        cache = ReviewCache(saved, memo_version=MEMO_VERSION)
        stored = cache.stored_checkpoint
        snapshot = load_snapshot(directory, links, cache=cache, reader=reader)
        self.assertIsNotNone(stored)
        # the older reviews' members, read back as one: none was added up
        self.assertIsInstance(cache.checkpoint.tally.per_review[0], Members)
        self.assertEqual(cache.analysed, 0)
        self.assertSameDocuments(snapshot, load_snapshot(directory, links))
        cache.save()
        records = [json.loads(line) for line in path.read_text().splitlines()]
        changes = [
            lambda: records.append(dict(records[0], id="new-1", date="2031-01-01")),
            lambda: records[900].update(rating=1),
        ]
        for change in changes:
            change()
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
            snapshot = load_snapshot(directory, links, snapshot, cache, reader)
            cache.save()
            self.assertSameDocuments(snapshot, load_snapshot(directory, links))

    def assertSameDocuments(self, snapshot: Snapshot, fresh: Snapshot) -> None:
        for name, document in fresh.documents.items():
            if name == "/developers":
                continue  # shows a Last-Modified, kept while bodies are
            self.assertEqual(
                snapshot.documents[name].identity.body, document.identity.body, name
            )

    def test_every_filter_alone(self) -> None:
        dataset = DEMO.dataset
        for name, values in PARAMETER_VALUES.items():
            for value in values:
                if value is None:
                    continue
                q = SearchQuery(**{name: value, "limit": 100})
                expected = brute_force(dataset.business, dataset.reviews, q)
                self.assertEqual(
                    search(DEMO, **{name: value, "limit": 100})["matched"],
                    len(expected),
                )

    def test_envelope_and_order(self) -> None:
        answer = search(DEMO)
        self.assertEqual(answer["matched"], len(DEMO.dataset.reviews))
        self.assertEqual(answer["returned"], 20)
        self.assertEqual(answer["reviews"][0], DEMO.dataset.reviews[0].as_record())
        keys = [(r["date"], r["id"]) for r in search(DEMO, limit=100)["reviews"]]
        self.assertEqual(keys, sorted(keys, reverse=True))

    def test_unicode_case_folding(self) -> None:
        """ÉTÉ finds été; a review's casefolded ß matches SS."""
        accented = search(DEMO, query="ÉTÉ")
        self.assertGreater(accented["matched"], 0)
        self.assertEqual(accented, search(DEMO, query="été"))
        for review in accented["reviews"]:
            self.assertIn("été", review["text"].casefold())

    def test_whole_words(self) -> None:
        """'Dev' is a technician; 'Devastated' does not mention him."""
        devastated = [
            r for r in DEMO.dataset.reviews if r.text and "devastated" in r.text.lower()
        ]
        self.assertTrue(devastated)
        found = {
            r["id"]
            for r in search(DEMO, mentions_technician="Dev", limit=100)["reviews"]
        }
        self.assertTrue(found)
        for review in devastated:
            if not re.search(r"\bDev\b", review.text or ""):
                self.assertNotIn(review.id, found)

    def test_rating_only_reviews_never_match_a_query(self) -> None:
        ids = {r.id for r in DEMO.dataset.reviews if r.text is None}
        self.assertTrue(ids)
        for needle in ("a", "e", ", "):
            found = {r["id"] for r in search(DEMO, query=needle, limit=100)["reviews"]}
            self.assertFalse(ids & found)

    def test_contradictions_find_nothing(self) -> None:
        self.assertEqual(search(DEMO, rating=2, min_rating=3)["matched"], 0)
        self.assertEqual(search(DEMO, since="2040-01-01")["matched"], 0)
        self.assertEqual(search(DEMO, query="a\u0000b")["matched"], 0)


class Answer:
    def __init__(self, response: Any, body: bytes) -> None:
        self.code, self.headers, self.body = response.code, response.headers, body
        self.length = response.length

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        values = self.headers.getRawHeaders(name.encode("ascii"))
        return None if values is None else values[-1].decode("latin-1")


class SearchHTTPTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.agent = RequestTraversalAgent(
            make_site(Holder(DEMO), FakeReactor()).resource
        )

    def get(self, path: str, **headers: str) -> Answer:
        response = self.successResultOf(
            self.agent.request(
                b"GET",
                b"http://reviews.example.com" + path.encode("ascii"),
                Headers({k.replace("_", "-"): [v] for k, v in headers.items()}),
            )
        )
        return Answer(response, self.successResultOf(content(response)))

    def issues(self, path: str) -> list[dict[str, Any]]:
        answer = self.get(path)
        self.assertEqual(answer.code, 400, path)
        self.assertEqual(answer.header("Content-Type"), "application/json")
        error = answer.json()
        self.assertEqual(error["error"], "invalid_parameters")
        self.assertIsInstance(error["message"], str)
        return error["issues"]

    def test_search_answers(self) -> None:
        answer = self.get("/api/reviews/search?rating=5&limit=3&unknown=1")
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.header("Access-Control-Allow-Origin"), "*")
        body = answer.json()
        self.assertEqual(body["returned"], 3)
        self.assertTrue(all(r["rating"] == 5 for r in body["reviews"]))
        self.assertEqual(body, search(DEMO, rating=5, limit=3))

    def test_each_bad_parameter(self) -> None:
        cases = [
            ("rating=4.5", "rating", "invalid_type"),
            ("rating=five", "rating", "invalid_type"),
            ("rating=0", "rating", "too_small"),
            ("rating=6", "rating", "too_big"),
            ("rating=%EF%BC%95", "rating", "invalid_type"),
            ("min_rating=0.99", "min_rating", "too_small"),
            ("min_rating=5.01", "min_rating", "too_big"),
            ("min_rating=nan", "min_rating", "invalid_type"),
            ("min_rating=inf", "min_rating", "invalid_type"),
            ("limit=0", "limit", "too_small"),
            ("limit=101", "limit", "too_big"),
            ("limit=1e1", "limit", "invalid_type"),
            ("since=2024-02-30", "since", "invalid_date"),
            ("since=2024-2-3", "since", "invalid_date"),
            ("until=yesterday", "until", "invalid_date"),
            ("since=2025-01-02&until=2025-01-01", "since", "invalid_range"),
            ("query=", "query", "empty"),
            ("query=%20%20", "query", "empty"),
            ("query=" + "x" * 201, "query", "too_long"),
            ("mentions_technician=", "mentions_technician", "empty"),
            ("mentions_service=a&mentions_service=b", "mentions_service", "repeated"),
            ("rating=5&rating=5", "rating", "repeated"),
            ("query=%FF", "query", "invalid_encoding"),
        ]
        for query, name, code in cases:
            [issue] = self.issues(f"/api/reviews/search?{query}")
            self.assertEqual((issue["path"], issue["code"]), ([name], code), query)
            self.assertIn(name, issue["message"])

    def test_one_issue_per_bad_parameter(self) -> None:
        issues = self.issues(
            "/api/reviews/search?rating=9&min_rating=x&since=2024-13-01&limit=-1&query=ok"
        )
        self.assertEqual(
            sorted(i["path"][0] for i in issues),
            ["limit", "min_rating", "rating", "since"],
        )

    def test_no_input_gives_a_server_error(self) -> None:
        rng = random.Random(5)
        alphabet = "%&=+;09azAZ.-_/\\'\"<>\u00e9 \t"
        for _ in range(300):
            name = rng.choice([*PARAMETER_VALUES, "x", ""])
            value = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
            for path in (
                f"/api/reviews/search?{name}={value}",
                f"/api/reviews/since/{value.replace('/', '')}",
            ):
                path = "".join(
                    c if c.isascii() and c.isprintable() and c not in " \t" else "%20"
                    for c in path
                )
                self.assertIn(self.get(path).code, (200, 400, 404), path)

    def test_since(self) -> None:
        answer = self.get("/api/reviews/since/2026-01-01")
        self.assertEqual(answer.code, 200)
        body = answer.json()
        expected = [
            r.as_record() for r in DEMO.dataset.reviews if r.date >= date(2026, 1, 1)
        ]
        self.assertEqual(
            body, {"since": "2026-01-01", "count": len(expected), "reviews": expected}
        )
        self.assertEqual(self.get("/api/reviews/since/2099-01-01").json()["count"], 0)
        everything = self.get("/api/reviews/since/1900-01-01").json()
        self.assertEqual(everything["count"], len(DEMO.dataset.reviews))

    def test_since_conditional(self) -> None:
        first = self.get("/api/reviews/since/2025-01-01")
        etag, modified = first.header("ETag"), first.header("Last-Modified")
        assert etag and modified
        self.assertEqual(modified, self.get("/reviews.json").header("Last-Modified"))
        self.assertEqual(
            self.get("/api/reviews/since/2025-01-01", If_None_Match=etag).code, 304
        )
        self.assertEqual(
            self.get("/api/reviews/since/2025-01-01", If_None_Match=f"W/{etag}").code,
            304,
        )
        self.assertEqual(
            self.get("/api/reviews/since/2025-01-01", If_Modified_Since=modified).code,
            304,
        )
        self.assertEqual(
            self.get("/api/reviews/since/2025-01-02", If_None_Match=etag).code, 200
        )

    def test_since_bad_dates(self) -> None:
        for bad in (
            "2025-02-29",
            "2025-1-01",
            "20250101",
            "latest",
            "2025-01-01T00:00",
        ):
            [issue] = self.issues(f"/api/reviews/since/{bad}")
            self.assertEqual((issue["path"], issue["code"]), (["date"], "invalid_date"))

    def test_since_cached_per_date(self) -> None:
        """A repeated poll is answered from the cache: the same bytes."""
        snapshot = snapshot_of(DEMO_DATA)
        agent = RequestTraversalAgent(
            make_site(Holder(snapshot), FakeReactor()).resource
        )
        for _ in range(2):
            self.successResultOf(
                agent.request(b"GET", b"http://x/api/reviews/since/2024-06-01")
            )
        cached = snapshot.since.bodies.get((date(2024, 6, 1), False))
        self.assertIsNotNone(cached)
        self.assertIs(snapshot.since.bodies.get((date(2024, 6, 1), False)), cached)

    def test_large_since_is_rendered_in_a_thread(self) -> None:
        snapshot = snapshot_of(write_synthetic(Path(self.mktemp()), 2500, seed=4))
        agent = RequestTraversalAgent(
            make_site(Holder(snapshot), FakeReactor()).resource
        )
        response = self.successResultOf(
            agent.request(b"GET", b"http://x/api/reviews/since/1990-01-01")
        )
        body = json.loads(self.successResultOf(content(response)))
        self.assertEqual(body["count"], len(snapshot.dataset.reviews))
        self.assertGreater(body["count"], 2000)


class SinceCacheTests(SynchronousTestCase):
    def test_bounded_by_entries_and_size(self) -> None:
        days = [date(2020, 1, d) for d in range(1, 6)]
        bodies = [DEMO.since_body(DEMO.since_answer(day)) for day in days]
        cache = SinceCache(entries=3, size=10**9).bodies
        for day, body in zip(days, bodies, strict=True):
            cache.put((day, False), body)
        self.assertIsNone(cache.get((date(2020, 1, 1), False)))
        self.assertIsNotNone(cache.get((date(2020, 1, 5), False)))
        small = SinceCache(entries=100, size=len(bodies[0]) + 1).bodies
        small.put((date(2020, 1, 1), False), bodies[0])
        small.put((date(2020, 1, 2), False), bodies[1])
        self.assertIsNone(small.get((date(2020, 1, 1), False)))
        self.assertIsNotNone(small.get((date(2020, 1, 2), False)))


def _same_count_dates(snapshot: Snapshot) -> tuple[date, date]:
    """Two dates between the same two review dates: the same large count."""
    days = sorted({r.date for r in snapshot.dataset.reviews})
    for older, newer in itertools.pairwise(days):
        if (newer - older).days >= 2:
            return newer, newer - timedelta(days=1)
    raise AssertionError("no two review dates two days apart")


class _Counting:
    """A compressor that counts the bytes it is given."""

    def __init__(self, inner: Any, sizes: list[int]) -> None:
        self._inner, self._sizes = inner, sizes
        sizes.append(0)

    def compress(self, data: bytes) -> bytes:
        self._sizes[-1] += len(data)
        return self._inner.compress(data)

    def flush(self, *mode: int) -> bytes:
        return self._inner.flush(*mode)


class SinceRenderingTests(SynchronousTestCase):
    """
    A client asking for a new date each time must not make the reactor
    thread compress its answers: the records are compressed once per
    snapshot, in a worker thread, and the gzip bytes of a date are a copy
    of them but for a few kB; a conditional request is decided without
    any bytes.
    """

    def setUp(self) -> None:
        self.data = write_synthetic(Path(self.mktemp()), 400, seed=4)
        self.snapshot = snapshot_of(self.data)
        self.reactor = FakeReactor(immediate=False)
        self.agent = RequestTraversalAgent(
            make_site(Holder(self.snapshot), self.reactor).resource
        )
        self.compressed: list[int] = []  # the bytes given, per compression
        compressobj, compress = zlib.compressobj, gzip.compress

        def compressing(data: bytes, *args: Any, **kwargs: Any) -> bytes:
            self.compressed.append(len(data))
            return compress(data, *args, **kwargs)

        self.patch(gzip, "compress", compressing)
        self.patch(
            zlib,
            "compressobj",
            lambda *a, **k: _Counting(compressobj(*a, **k), self.compressed),
        )

    def work(self) -> int:
        """Run the work queued in the thread pool, and send what it made."""
        ran = self.reactor.run()
        self.agent.flush()
        return ran

    def get(self, day: date, method: bytes = b"GET", **headers: str) -> Any:
        """The Deferred answer to a request for C{day}'s answer."""
        path = f"http://x/api/reviews/since/{day.isoformat()}".encode("ascii")
        return self.agent.request(
            method,
            path,
            Headers({k.replace("_", "-"): [v] for k, v in headers.items()}),
        ).addCallback(
            lambda response: content(response).addCallback(
                lambda body: Answer(response, body)
            )
        )

    def test_records_compressed_in_a_worker(self) -> None:
        oldest = min(r.date for r in self.snapshot.dataset.reviews)
        pending = self.get(oldest, Accept_Encoding="gzip")
        self.assertNoResult(pending)
        self.assertEqual(self.compressed, [])  # not on the reactor thread
        self.assertEqual(self.work(), 1)
        answer = self.successResultOf(pending)
        self.assertEqual(answer.code, 200)
        self.assertEqual(answer.header("Content-Encoding"), "gzip")
        plain = self.successResultOf(self.get(oldest))  # nothing to compress
        self.assertEqual(gzip.decompress(answer.body), plain.body)
        self.assertEqual(plain.json()["count"], len(self.snapshot.dataset.reviews))

    def test_a_new_date_compresses_a_few_kilobytes(self) -> None:
        """
        Once the records are compressed, a date never asked before is
        answered at once, compressing at most L{SINCE_SEGMENT} bytes.
        """
        days = sorted({r.date for r in self.snapshot.dataset.reviews})
        self.get(days[0], Accept_Encoding="gzip")
        self.work()
        for day in days[::7]:
            del self.compressed[:]
            answer = self.successResultOf(self.get(day, Accept_Encoding="gzip"))
            self.assertEqual(self.reactor.queued, [])
            self.assertLessEqual(max(self.compressed, default=0), SINCE_SEGMENT + 2)
            body = json.loads(gzip.decompress(answer.body))
            self.assertEqual(
                (body["since"], body["count"]),
                (day.isoformat(), self.snapshot.since_count(day)),
            )

    def test_dates_with_one_count_share_the_run(self) -> None:
        """The second date is a copy of the first's bytes: nothing compressed."""
        first, second = _same_count_dates(self.snapshot)
        pending = self.get(first, Accept_Encoding="gzip")
        self.work()
        one = self.successResultOf(pending)
        compressed = list(self.compressed)
        two = self.successResultOf(self.get(second, Accept_Encoding="gzip"))
        self.assertEqual((self.compressed, self.reactor.queued), (compressed, []))
        self.assertNotEqual(one.header("ETag"), two.header("ETag"))
        unpacked = [json.loads(gzip.decompress(a.body)) for a in (one, two)]
        self.assertEqual(
            [u["since"] for u in unpacked], [first.isoformat(), second.isoformat()]
        )
        self.assertEqual(unpacked[0]["reviews"], unpacked[1]["reviews"])
        self.assertEqual(unpacked[0]["count"], unpacked[1]["count"])

    def test_not_modified_without_making_bytes(self) -> None:
        """
        The validators come from the data and the date: a daemon that has
        never made a date's bytes (restarted, or its cache emptied) answers
        304 to the ETag it gave before.
        """
        oldest = min(r.date for r in self.snapshot.dataset.reviews)
        pending = self.get(oldest, Accept_Encoding="gzip")
        self.work()
        etag = self.successResultOf(pending).header("ETag")
        assert etag is not None
        again = RequestTraversalAgent(
            make_site(Holder(snapshot_of(self.data)), self.reactor).resource
        )
        self.agent = again
        compressed = list(self.compressed)
        for method in (b"GET", b"HEAD"):
            answer = self.successResultOf(
                self.get(oldest, method, Accept_Encoding="gzip", If_None_Match=etag)
            )
            self.assertEqual((answer.code, answer.body), (304, b""))
            self.assertEqual(answer.header("ETag"), etag)
        self.assertEqual((self.compressed, self.reactor.queued), (compressed, []))

    def test_one_compression_per_snapshot(self) -> None:
        """
        Dates asked for at once, before the records are compressed, wait
        for one compression in the thread pool.
        """
        days = sorted({r.date for r in self.snapshot.dataset.reviews})
        first, second = _same_count_dates(self.snapshot)
        asked = [days[0], days[40], first, second, days[80]]
        pending = [self.get(day, Accept_Encoding="gzip") for day in asked]
        self.assertEqual(len(self.reactor.queued), 1)
        self.assertEqual(self.work(), 1)
        self.assertEqual(self.reactor.queued, [])
        for day, answer in zip(asked, pending, strict=True):
            body = json.loads(gzip.decompress(self.successResultOf(answer).body))
            self.assertEqual(body["since"], day.isoformat())
            self.assertEqual(body["count"], self.snapshot.since_count(day))


class SinceBytesTests(SynchronousTestCase):
    def setUp(self) -> None:
        site = make_site(Holder(snapshot_of(DEMO_DATA)), FakeReactor())
        self.agent = RequestTraversalAgent(site.resource)
        self.wire = Connection(site)

    def request(self, method: str, day: date, **headers: str) -> Answer:
        path = f"http://x/api/reviews/since/{day.isoformat()}".encode("ascii")
        response = self.successResultOf(
            self.agent.request(
                method.encode("ascii"),
                path,
                Headers({k.replace("_", "-"): [v] for k, v in headers.items()}),
            )
        )
        return Answer(response, self.successResultOf(content(response)))

    def test_every_count(self) -> None:
        """
        For a date of every count: the bytes as they always were, gzip bytes
        decoding to them, a tag per date and encoding, HEAD alike.
        """
        reviews = DEMO.dataset.reviews
        days = sorted({r.date for r in reviews}) + [date(1999, 1, 1), date(2099, 1, 1)]
        tags: set[str] = set()
        representations = 0
        for day in days:
            plain = self.request("GET", day)
            count = sum(r.date >= day for r in reviews)
            expected = b'{"since":"%s","count":%d,"reviews":[%s]}' % (
                day.isoformat().encode("ascii"),
                count,
                DEMO.records.run(0, count),
            )
            self.assertEqual(plain.body, expected)
            self.assertEqual(plain.length, len(expected))
            packed = self.request("GET", day, Accept_Encoding="gzip")
            head = self.wire.request(
                "HEAD", f"/api/reviews/since/{day.isoformat()}", "Accept-Encoding: gzip"
            )
            self.assertEqual((head.code, head.body), (200, b""))
            if len(expected) < GZIP_MIN_SIZE:
                self.assertIsNone(packed.header("Content-Encoding"))
                self.assertEqual(packed.body, expected)
            else:
                self.assertEqual(packed.header("Content-Encoding"), "gzip")
                self.assertEqual(gzip.decompress(packed.body), expected)
                self.assertEqual(packed.length, len(packed.body))
                self.assertNotEqual(packed.header("ETag"), plain.header("ETag"))
            for header in ("ETag", "Content-Encoding", "Last-Modified", "Vary"):
                self.assertEqual(
                    head.headers.get(header.lower()), packed.header(header)
                )
            self.assertEqual(head.headers["content-length"], str(len(packed.body)))
            tags.update(a.header("ETag") or "" for a in (plain, packed))
            representations += 1 if len(expected) < GZIP_MIN_SIZE else 2
        self.assertEqual(len(tags), representations)


class SearchConditionalTests(SynchronousTestCase):
    """Search answers have validators, 304s, HEAD and gzip, as documents do."""

    QUERY = "/api/reviews/search?rating=5&limit=20"

    def setUp(self) -> None:
        self.agent = RequestTraversalAgent(
            make_site(Holder(DEMO), FakeReactor()).resource
        )

    def request(self, path: str, method: str = "GET", **headers: str) -> Answer:
        response = self.successResultOf(
            self.agent.request(
                method.encode("ascii"),
                b"http://x" + path.encode("ascii"),
                Headers({k.replace("_", "-"): [v] for k, v in headers.items()}),
            )
        )
        return Answer(response, self.successResultOf(content(response)))

    def test_validators(self) -> None:
        answer = self.request(self.QUERY)
        etag, modified = answer.header("ETag"), answer.header("Last-Modified")
        assert etag is not None and modified is not None
        self.assertRegex(etag, r'^"[A-Za-z0-9_-]{22}"$')
        self.assertEqual(
            modified, self.request("/reviews.json").header("Last-Modified")
        )
        self.assertEqual(answer.header("Cache-Control"), CACHE_CONTROL.decode())
        self.assertEqual(answer.header("Vary"), "Accept-Encoding")
        self.assertEqual(answer.header("Access-Control-Allow-Origin"), "*")
        for headers in (
            {"If_None_Match": etag},
            {"If_None_Match": f'"other", W/{etag}'},
            {"If_Modified_Since": modified},
        ):
            for method in ("GET", "HEAD"):
                unchanged = self.request(self.QUERY, method, **headers)
                self.assertEqual((unchanged.code, unchanged.body), (304, b""))
                self.assertEqual(unchanged.header("ETag"), etag)
        other = self.request(
            "/api/reviews/search?rating=4&limit=20", If_None_Match=etag
        )
        self.assertEqual(other.code, 200)
        self.assertNotEqual(other.header("ETag"), etag)

    def test_equal_queries_share_a_tag(self) -> None:
        """Answers are pure functions of the data and the checked query."""
        one = self.request(self.QUERY)
        self.assertIsNotNone(one.header("ETag"))
        two = self.request("/api/reviews/search?limit=20&rating=%2B5&x=1")
        self.assertEqual((one.body, one.header("ETag")), (two.body, two.header("ETag")))
        again = RequestTraversalAgent(
            make_site(Holder(snapshot_of(DEMO_DATA)), FakeReactor()).resource
        )
        self.agent = again
        self.assertEqual(self.request(self.QUERY).header("ETag"), one.header("ETag"))

    def test_gzip(self) -> None:
        plain = self.request(self.QUERY)
        self.assertGreaterEqual(len(plain.body), GZIP_MIN_SIZE)
        self.assertIsNone(plain.header("Content-Encoding"))
        packed = self.request(self.QUERY, Accept_Encoding="gzip, deflate")
        self.assertEqual(packed.code, 200)
        self.assertEqual(packed.header("Content-Encoding"), "gzip")
        self.assertEqual(packed.header("Vary"), "Accept-Encoding")
        self.assertEqual(gzip.decompress(packed.body), plain.body)
        self.assertEqual(packed.length, len(packed.body))
        etag = packed.header("ETag")
        assert etag is not None
        self.assertNotEqual(etag, plain.header("ETag"))
        unchanged = self.request(self.QUERY, Accept_Encoding="gzip", If_None_Match=etag)
        self.assertEqual(unchanged.code, 304)
        self.assertEqual(self.request(self.QUERY, If_None_Match=etag).code, 200)
        small = self.request(
            "/api/reviews/search?query=zzzz", Accept_Encoding="gzip"
        )  # matches nothing: a few bytes, sent as they are
        self.assertIsNone(small.header("Content-Encoding"))
        self.assertEqual(small.json()["matched"], 0)
        self.assertIsNotNone(small.header("ETag"))

    def test_head(self) -> None:
        """HEAD as it goes on the wire: the headers of GET, no body."""
        wire = Connection(make_site(Holder(DEMO), FakeReactor()))
        for encoding in ("identity", "gzip"):
            get = self.request(self.QUERY, Accept_Encoding=encoding)
            head = wire.request("HEAD", self.QUERY, f"Accept-Encoding: {encoding}")
            self.assertEqual((head.code, head.body), (200, b""))
            self.assertIsNotNone(get.header("ETag"))
            self.assertEqual(head.headers["content-length"], str(len(get.body)))
            for header in ("ETag", "Last-Modified", "Content-Type", "Content-Encoding"):
                self.assertEqual(head.headers.get(header.lower()), get.header(header))

    def test_not_modified_on_the_wire(self) -> None:
        """A 304 is sent as it is, without twisted.web's Content-Length: 0."""
        wire = Connection(make_site(Holder(DEMO), FakeReactor()))
        etag = wire.request("GET", self.QUERY).headers["etag"]
        for method in ("GET", "HEAD"):
            answer = wire.request(method, self.QUERY, f"If-None-Match: {etag}")
            self.assertEqual((answer.code, answer.body), (304, b""))
            self.assertNotIn("content-length", answer.headers)
            self.assertEqual(answer.headers["etag"], etag)
