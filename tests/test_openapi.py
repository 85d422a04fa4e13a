"""
The OpenAPI description: a valid 3.1 document, whose schemas the real answers
satisfy, and which a fuzzer can drive against the live daemon.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from treq import content
from treq.testing import RequestTraversalAgent
from twisted.internet import defer
from twisted.internet.utils import getProcessOutputAndValue
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.loading import DEMO_DATA
from reviewsd.web.site import make_site
from tests.support import BASE, Holder, snapshot_of
from tests.support.daemon import DaemonTestCase, environment, free_port

SNAPSHOT = snapshot_of(DEMO_DATA)
DOCUMENT = json.loads(SNAPSHOT.documents["/.well-known/openapi.json"].identity.body)
HOOKS = Path(__file__).parent / "schemathesis_hooks.py"


def validator(schema_name: str) -> Draft202012Validator:
    """A validator for one component schema, resolving $refs in the document."""
    registry = Registry().with_resource(
        "urn:openapi", Resource(contents=DOCUMENT, specification=DRAFT202012)
    )
    return Draft202012Validator(
        {"$ref": f"urn:openapi#/components/schemas/{schema_name}"}, registry=registry
    )


class OpenAPIDocumentTests(SynchronousTestCase):
    def test_valid_openapi_31(self) -> None:
        validate(DOCUMENT)
        self.assertEqual(DOCUMENT["openapi"], "3.1.0")
        self.assertEqual(DOCUMENT["info"]["version"], "1.0.0")
        self.assertEqual(DOCUMENT["servers"], [{"url": BASE}])

    def test_every_endpoint_described(self) -> None:
        operations = {
            (path, method)
            for path, item in DOCUMENT["paths"].items()
            for method in item
        }
        for expected in [
            ("/reviews.json", "get"),
            ("/insights.json", "get"),
            ("/llms.txt", "get"),
            ("/api/feed.json", "get"),
            ("/feed.xml", "get"),
            ("/api/reviews/search", "get"),
            ("/api/reviews/since/{date}", "get"),
            ("/mcp", "post"),
            ("/api/websub/hub", "post"),
        ]:
            self.assertIn(expected, operations)
        search = DOCUMENT["paths"]["/api/reviews/search"]["get"]
        self.assertEqual(
            {p["name"] for p in search["parameters"]},
            {
                "rating",
                "min_rating",
                "since",
                "until",
                "query",
                "mentions_technician",
                "mentions_service",
                "limit",
            },
        )

    def get(self, path: str) -> tuple[int, Any]:
        agent = RequestTraversalAgent(make_site(Holder(SNAPSHOT)).resource)
        response = self.successResultOf(agent.request(b"GET", (BASE + path).encode()))
        return response.code, json.loads(self.successResultOf(content(response)))

    def test_answers_match_their_schemas(self) -> None:
        for path, schema in [
            ("/reviews.json", "ReviewsDocument"),
            ("/api/feed.json", "JsonFeed"),
            ("/insights.json", "Insights"),
            ("/api/reviews/search?limit=100&min_rating=2", "SearchResult"),
            ("/api/reviews/since/2025-01-01", "SinceResult"),
            ("/api/reviews/search?rating=0&since=x", "ValidationError"),
            ("/api/reviews/since/2025-13-01", "ValidationError"),
            ("/nowhere", "Error"),
        ]:
            _, body = self.get(path)
            errors = [e.message for e in validator(schema).iter_errors(body)]
            self.assertEqual(errors, [], path)

    def test_schemas_can_fail(self) -> None:
        """The schemas are tight: a wrong field is caught."""
        _, body = self.get("/api/reviews/search?limit=1")
        body["reviews"][0]["rating"] = 6
        body["reviews"][0]["extra"] = True
        self.assertEqual(len(list(validator("SearchResult").iter_errors(body))), 2)


class FuzzTests(DaemonTestCase):
    timeout = 240

    @defer.inlineCallbacks
    def test_schemathesis(self) -> Any:
        """
        Schemathesis generates requests from the description for every GET
        operation and checks every answer: status codes, content types,
        headers, bodies, rejection of invalid and acceptance of valid input.
        """
        port = free_port()
        yield self.start(
            f"http://127.0.0.1:{port}", "--listen", f"tcp:{port}:interface=127.0.0.1"
        )
        env = environment()
        env["SCHEMATHESIS_HOOKS"] = str(HOOKS)
        report = Path(self.mktemp()).resolve()
        out, err, code = yield getProcessOutputAndValue(
            sys.executable,
            [
                "-c",
                "from schemathesis.cli import schemathesis; schemathesis()",
                "run",
                f"http://127.0.0.1:{port}/.well-known/openapi.json",
                "--checks",
                "all",
                "--include-method",
                "GET",
                "--max-examples",
                "40",
                "--seed",
                "20261121",
                "--workers",
                "1",
                "--no-color",
                "--report-dir",
                str(report),
            ],
            env=env,
            path=os.path.dirname(report),
        )
        output = (out + err).decode("utf-8", "replace")
        self.assertEqual(code, 0, output)
        self.assertIn("No issues found", output)
        gets = sum("get" in item for item in DOCUMENT["paths"].values())
        self.assertIn(f"Tested: {gets}", output)
