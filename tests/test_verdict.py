"""
The review verdict: the label /insights.json gives each review, decided
from its text and its stars by the trained model of
L{reviewsd.insights.verdict}, behaves as the labelling guide says a reader
reads: the stars settle what the text leaves open, never what it says.
"""

from __future__ import annotations

import json
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.documents import to_json
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import (
    Dataset,
    business_from_json,
    newest_first,
    review_from_json,
)
from reviewsd.insights import ReviewCache, derive_insights
from reviewsd.insights.analysis import analyse
from reviewsd.insights.sentiment import label
from reviewsd.insights.verdict import (
    CLASSES,
    TEXT_FEATURES,
    Model,
    decided_by_text,
    feature_values,
    load,
    model,
    parse_feature,
)

BUSINESS: dict[str, Any] = {
    "name": "Verdict Test Co",
    "service_areas": ["Tigard"],
    "services": [{"id": "roofing", "name": "Roofing", "keywords": ["roof"]}],
    "technicians": [{"name": "Dev Patel", "aliases": ["Dev"]}],
}


def verdict(text: str, stars: int) -> dict[str, Any] | None:
    """The C{sentiment} of one review's C{per_review} entry."""
    review = review_from_json(
        {
            "id": "v1",
            "author": "A customer",
            "rating": stars,
            "date": "2025-03-01",
            "text": text,
            "source": "google",
            "verified": True,
        }
    )
    data = Dataset(
        business=business_from_json(BUSINESS),
        reviews=newest_first([review]),
        unpublished=0,
    )
    document = derive_insights(
        data, Matcher(data.business), ReviewCache(), "2025-03-02T00:00:00Z"
    )
    sentiment: dict[str, Any] | None = json.loads(to_json(document))["per_review"][
        "v1"
    ]["sentiment"]
    return sentiment


def read(text: str, stars: int) -> str | None:
    found = verdict(text, stars)
    return None if found is None else found["label"]


class BehaviourTests(SynchronousTestCase):
    """What a reader of the published labels notices."""

    def test_sarcasm_under_one_star(self) -> None:
        """Praise words over a complaint, under one star, are sarcasm."""
        for text in [
            "Fantastic, three no-shows in a row. Really impressive scheduling.",
            "Just great, now the sink leaks too. Thanks guys.",
        ]:
            self.assertEqual(read(text, 1), "negative", text)

    def test_faint_words_take_the_stars_side(self) -> None:
        """
        "fine" and "ok" commit to little: under two stars they are a
        complaint, under five (with a will to come back) praise.
        """
        self.assertEqual(read("The repair was fine, I suppose.", 2), "negative")
        self.assertEqual(read("It's ok I guess.", 2), "negative")
        self.assertEqual(read("Fine job, would call again.", 5), "positive")

    def test_facts_only_are_neutral(self) -> None:
        """A text without any opinion is neutral, even under five stars."""
        for text in [
            "They swapped our water heater on a Tuesday in May.",
            "Crew replaced two windows in the upstairs bedroom.",
        ]:
            for stars in (1, 5):
                self.assertEqual(read(text, stars), "neutral", text)

    def test_clear_praise_under_three_stars(self) -> None:
        """Three stars do not pull a clearly happy text down."""
        for text in [
            "The new deck is gorgeous and the crew was wonderful.",
            "Beautiful tile work and a very tidy crew.",
        ]:
            self.assertEqual(read(text, 3), "positive", text)

    def test_mismatch_is_labelled_by_the_text(self) -> None:
        """A clear complaint under five stars (a misclick) is a complaint."""
        for text in [
            "Worst contractor ever, the new roof leaks in three places.",
            "Awful experience. The new faucet leaks and the crew was rude.",
        ]:
            self.assertEqual(read(text, 5), "negative", text)

    def test_score_agrees_with_label(self) -> None:
        """
        The published score carries the label's side: the text's own when
        they agree, its magnitude on the verdict's side when they do not.
        """
        agreeing = verdict("Beautiful tile work and a very tidy crew.", 3)
        self.assertEqual(agreeing, {"score": 0.5, "label": "positive"})
        turned = verdict("It's ok I guess.", 2)
        self.assertEqual(turned, {"score": -0.128, "label": "negative"})

    def test_no_sentence(self) -> None:
        """A text of white space has no verdict."""
        self.assertIsNone(verdict("   ", 4))


class ModelTests(SynchronousTestCase):
    """The shipped weights and how they are read."""

    def test_shipped_model(self) -> None:
        """
        verdict.json names its features, its version and what it was
        trained on, with one weight per feature and class.
        """
        document = model().document
        self.assertEqual(document["classes"], list(CLASSES))
        self.assertIsInstance(document["version"], int)
        self.assertEqual(document["trained_on"]["parts"], ["calibrate", "train"])
        self.assertGreater(document["trained_on"]["reviews"], 0)
        for name in document["features"]:
            text, stars = parse_feature(name)
            self.assertIn(text, TEXT_FEATURES)
            self.assertTrue(stars)
        for name in CLASSES:
            self.assertEqual(len(document["weights"][name]), len(document["features"]))

    def test_stars_are_evidence(self) -> None:
        """
        The stars change the label of an open text only: a faint word
        reads as the stars say, a clear one-sided text as itself.
        """
        faint = analyse("It was alright.")
        self.assertFalse(decided_by_text(faint))
        self.assertEqual(model().label(faint, 1), "negative")
        self.assertEqual(model().label(faint, 5), "positive")
        clear = analyse("Great work, very professional.")
        self.assertTrue(decided_by_text(clear))
        for stars in range(1, 6):
            self.assertEqual(model().label(clear, stars), "positive")

    def test_folded_tables_agree_with_features(self) -> None:
        """
        The per-rating tables the model folds its weights into score as the
        features and weights of the file do.
        """
        document = model().document
        analysis = analyse("Friendly crew, but the gutters overflow again.")
        for stars in range(1, 6):
            values = feature_values(document["features"], analysis, stars)
            expected = [
                sum(w * v for w, v in zip(document["weights"][c], values, strict=True))
                for c in CLASSES
            ]
            for got, want in zip(
                model().scores(analysis, stars), expected, strict=True
            ):
                self.assertAlmostEqual(got, want, places=9)

    def test_label_is_the_most_likely_class(self) -> None:
        """Where the model decides, its label is the class of highest score."""
        analysis = analyse("Nice people, but the job dragged on for months.")
        self.assertFalse(decided_by_text(analysis))
        for stars in range(1, 6):
            scores = model().scores(analysis, stars)
            self.assertEqual(
                model().label(analysis, stars),
                CLASSES[scores.index(max(scores))],
            )
            self.assertEqual(
                label(model().score(analysis, stars)), model().label(analysis, stars)
            )

    def test_refuses_what_it_cannot_read(self) -> None:
        """A file of another shape, or naming unknown features, is refused."""
        good = dict(model().document)
        for change in [
            {"format": 99},
            {"classes": ["negative", "neutral", "positive"]},
            {"features": ["loudness"], "weights": {c: [1.0] for c in CLASSES}},
            {"features": ["positive*stars0-9"], "weights": {c: [1.0] for c in CLASSES}},
            {"weights": {c: [] for c in CLASSES}},
        ]:
            self.assertRaises(ValueError, Model, {**good, **change})

    def test_load(self) -> None:
        """The file beside the module reads as the process's model."""
        self.assertEqual(load().document, model().document)
