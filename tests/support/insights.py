"""
Small review sets for the insights tests: a business, records, and the
document derived from them as published.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest import TestCase

from reviewsd.data.documents import to_json
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import (
    Dataset,
    business_from_json,
    newest_first,
    review_from_json,
)
from reviewsd.insights import MEMO_VERSION, ReviewCache, derive_insights
from reviewsd.insights.analysis import Analysis, analyse

STAMP = "2026-11-21T06:00:00Z"

BUSINESS: dict[str, Any] = {
    "name": "Test Builders",
    "service_areas": ["Tigard", "Lake Oswego"],
    "services": [
        {"id": "roofing", "name": "Roofing", "keywords": ["roof", "gutters"]},
        {
            "id": "ac-repair",
            "name": "Heating & Air Conditioning",
            "keywords": ["AC", "A/C", "furnace"],
        },
    ],
    "technicians": [
        {"name": "Dev Patel", "aliases": ["Dev"]},
        {"name": "Michael Reyes", "aliases": ["Mike", "Mike R."]},
    ],
}


def record(
    number: int, text: str | None, rating: int = 5, date: str = "2025-01-15"
) -> dict[str, Any]:
    return {
        "id": f"r{number:03d}",
        "author": f"Customer {number}",
        "rating": rating,
        "date": date,
        "text": text,
        "source": "google",
        "verified": True,
    }


def dataset(
    records: list[dict[str, Any]], business: dict[str, Any] | None = None
) -> Dataset:
    return Dataset(
        business=business_from_json(BUSINESS if business is None else business),
        reviews=newest_first([review_from_json(r) for r in records]),
        unpublished=0,
    )


def derive(data: Dataset, cache: ReviewCache | None = None) -> dict[str, Any]:
    """The document as published (C{per_review} comes as JSON already)."""
    document = derive_insights(
        data, Matcher(data.business), ReviewCache() if cache is None else cache, STAMP
    )
    return json.loads(to_json(document))


class Counting:
    """An analyser that counts the texts it analyses."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> Analysis:
        self.texts.append(text)
        return analyse(text)


def reread(
    test: TestCase,
    path: Path,
    data: Dataset,
    expected: dict[str, Any] | None = None,
) -> ReviewCache:
    """
    A new cache on the file at C{path}, with this release's memos, once
    C{test} has asserted that it derives from C{data} the document
    C{expected} (by default the one derived from nothing) without analysing
    a single text.
    """
    counting = Counting()
    again = ReviewCache(path, analyser=counting, memo_version=MEMO_VERSION)
    test.assertEqual(
        derive(data, again), derive(data) if expected is None else expected
    )
    test.assertEqual(counting.texts, [])
    return again
