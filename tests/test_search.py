"""
Search and incremental sync: results checked against a brute-force filter
written independently of the index, every kind of bad parameter, and the
conditional behaviour of /api/reviews/since/{date}.
"""

from __future__ import annotations

import json
import random
import re
from datetime import date
from pathlib import Path
from typing import Any

from treq import content
from treq.testing import RequestTraversalAgent
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http_headers import Headers

from reviewsd.data.links import Links
from reviewsd.data.loading import DEMO_DATA, Reader
from reviewsd.data.model import Business, Review
from reviewsd.data.search import SearchQuery
from reviewsd.data.snapshot import SinceCache, Snapshot
from reviewsd.data.synthetic import write as write_synthetic
from reviewsd.insights import ReviewCache, derive
from reviewsd.publishing.build import load_snapshot
from reviewsd.web.site import make_site
from tests.support import BASE, FakeReactor, Holder, snapshot_of
from tests.support.search import DEMO, search


def _words(terms: list[str]) -> re.Pattern[str]:
    """An independent whole-word matcher: \\b fails on 'Mike R.', so lookarounds."""
    return re.compile(
        "|".join(rf"(?<!\w){re.escape(t)}(?!\w)" for t in terms), re.IGNORECASE
    )


def brute_force(
    business: Business, reviews: tuple[Review, ...], q: SearchQuery
) -> list[str]:
    """Every filter applied to every review, the slow and obvious way."""
    technicians = [
        [t.name, *t.aliases]
        for t in business.technicians
        if q.mentions_technician is not None
        and q.mentions_technician.casefold()
        in [n.casefold() for n in (t.name, *t.aliases)]
    ]
    services = [
        [s.name, *s.keywords]
        for s in business.services
        if q.mentions_service is not None
        and q.mentions_service.casefold() in (s.id.casefold(), s.name.casefold())
    ]
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
        if q.mentions_technician is not None and not any(
            _words(names).search(text) for names in technicians
        ):
            continue
        if q.mentions_service is not None and not any(
            _words(terms).search(text) for terms in services
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
            for name, document in fresh.documents.items():
                if name == "/developers":
                    continue  # shows a Last-Modified, kept while bodies are
                self.assertEqual(
                    snapshot.documents[name].identity.body,
                    document.identity.body,
                    name,
                )
            self.check(snapshot, 300, seed=5)
            for query in ("leak", "the leak", "spotless", "different words"):
                self.assertEqual(
                    search(snapshot, query=query, limit=100),
                    search(fresh, query=query, limit=100),
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
        """A repeated poll is answered from the cache: the same document."""
        snapshot = snapshot_of(DEMO_DATA)
        agent = RequestTraversalAgent(
            make_site(Holder(snapshot), FakeReactor()).resource
        )
        for _ in range(2):
            self.successResultOf(
                agent.request(b"GET", b"http://x/api/reviews/since/2024-06-01")
            )
        cached = snapshot.since.get(date(2024, 6, 1))
        self.assertIsNotNone(cached)
        self.assertIs(snapshot.since.get(date(2024, 6, 1)), cached)

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
        documents = [DEMO.since_document(day) for day in days]
        cache = SinceCache(entries=3, size=10**9)
        for day, document in zip(days, documents, strict=True):
            cache.put(day, document)
        self.assertIsNone(cache.get(date(2020, 1, 1)))
        self.assertIsNotNone(cache.get(date(2020, 1, 5)))
        small = SinceCache(entries=100, size=len(documents[0].identity.body) + 1)
        small.put(date(2020, 1, 1), documents[0])
        small.put(date(2020, 1, 2), documents[1])
        self.assertIsNone(small.get(date(2020, 1, 1)))
        self.assertIsNotNone(small.get(date(2020, 1, 2)))
