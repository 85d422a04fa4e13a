"""
The referrals model: which services a text refers to, from what the
mention rules read of each keyword (reviewsd.data.referrals).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data import referrals
from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import business_from_json
from reviewsd.data.referrals import FORMAT, RULES, Keywords, Referrals, load

DEMO = business_from_json(json.loads((Path(DEMO_DATA) / "business.json").read_bytes()))
SHIPPED = Matcher(DEMO)
BY_RULES = Matcher(DEMO, RULES)


def services(matcher: Matcher, text: str) -> set[str]:
    return set(matcher.find(text).services)


def document(**changes: Any) -> dict[str, Any]:
    return {"format": FORMAT, "threshold": 0.5, "bias": -1.0, "weights": {}, **changes}


class ShippedModelTests(SynchronousTestCase):
    """The weights shipped, as the demo business's reviews meet them."""

    def test_passing_mentions_dropped(self) -> None:
        """
        A service the rules keep for a keyword named in passing is dropped:
        the shower in a plumbing repair, a clog that no longer happens.
        """
        for text, rules, read in [
            (
                "Our shower kept going lukewarm until Tom replaced the mixing valve.",
                {"bathroom-remodeling", "plumbing"},
                {"plumbing"},
            ),
            (
                "They put in a new water softener and now the shower glass has "
                "no spots.",
                {"bathroom-remodeling", "plumbing"},
                {"plumbing"},
            ),
            (
                "Gutter guards went in last fall and not one clog since.",
                {"plumbing", "roofing"},
                {"roofing"},
            ),
        ]:
            self.assertEqual(services(BY_RULES, text), rules, text)
            self.assertEqual(services(SHIPPED, text), read, text)

    def test_work_named_outright_kept(self) -> None:
        """Work a service did, named outright, is kept."""
        for text, expected in [
            (
                "Sam painted the whole living room and it looks great.",
                {"drywall-painting"},
            ),
            ("Marcus swapped the breaker panel in an afternoon.", {"electrical"}),
            ("They fixed the leak under the kitchen sink in an hour.", {"plumbing"}),
        ]:
            self.assertEqual(services(SHIPPED, text), expected, text)

    def test_keyword_in_another_trade_s_story(self) -> None:
        """
        A keyword in a story about another trade's work is dropped, though
        the words beside it say nothing: the roof a leak was blamed on, the
        new carpet an overflowing toilet spared.
        """
        for text, read in [
            (
                "The stain on our dining room ceiling was never the roof: Mike "
                "traced it to the AC condensate line sweating in the attic and "
                "rerouted it in an hour.",
                {"ac-repair"},
            ),
            (
                "The plumber came the same day the toilet overflowed, and the new "
                "carpet survived.",
                {"plumbing"},
            ),
        ]:
            self.assertEqual(services(SHIPPED, text), read, text)

    def test_pairs_read_as_fitted(self) -> None:
        """
        The matcher weighs a keyword's pairs with the text's words as the
        features the model was fitted on (L{Matcher.service_features}),
        though it looks them up by keyword: on every demo review, it keeps
        the services those features and the shipped weights decide.
        """
        document = json.loads(
            (Path(referrals.__file__).parent / "referrals.json").read_bytes()
        )
        weights, threshold = document["weights"], document["threshold"]
        cut = math.log(threshold / (1 - threshold))
        pairs = 0
        for review in json.loads((Path(DEMO_DATA) / "reviews.json").read_bytes()):
            text = review.get("text") or ""
            read = SHIPPED.service_features(text)
            pairs += sum(
                f.startswith("tw ") and f in weights for _, fs in read for f in fs
            )
            fitted = {
                service
                for service, features in read
                if document["bias"] + sum(weights.get(f, 0.0) for f in set(features))
                >= cut
            }
            self.assertEqual(services(SHIPPED, text), fitted, text)
        self.assertGreater(pairs, 100)

    def test_shipped_document(self) -> None:
        """referrals.json says what it was fitted on and how it did."""
        shipped = load().document
        self.assertEqual(shipped["format"], FORMAT)
        self.assertIn("train", shipped["trained_on"]["parts"])
        figures = shipped["cross_validation"]["services"]
        self.assertGreater(
            figures["f1"], shipped["cross_validation"]["rules_alone"]["f1"]
        )


class ModelTests(SynchronousTestCase):
    """How a document of weights is read and applied."""

    def test_rules(self) -> None:
        """RULES keeps exactly what the rules keep."""
        self.assertTrue(RULES.refers(["rule", "plain 2", "t roof"]))
        self.assertFalse(RULES.refers(["not rule", "plain 0", "t roof"]))

    def test_weights_of_the_context(self) -> None:
        """
        A weight on a word beside the keyword moves the decision; a feature
        the model never saw weighs nothing, and a repeated one counts once.
        """
        model = Referrals(document(weights={"rule": 2.0, "r1 ceiling": -3.0}))
        self.assertTrue(model.refers(["rule", "t kitchen", "r1 sink"]))
        self.assertFalse(model.refers(["rule", "t kitchen", "r1 ceiling"]))
        self.assertEqual(model.log_odds(["rule", "rule", "unseen"]), 1.0)

    def test_keywords_with_the_text_s_words(self) -> None:
        """
        A weight on a keyword with a word anywhere in its text moves the
        decision, however far apart they are; the same word with another
        keyword weighs nothing.
        """
        model = Referrals(document(weights={"rule": 2.0, "tw roof condensate": -3.0}))
        story = Keywords(frozenset({"roof"}), frozenset({"the", "condensate"}))
        self.assertEqual(model.log_odds(["rule"], story), -2.0)
        self.assertFalse(model.refers(["rule"], story))
        other = Keywords(frozenset({"gutter"}), frozenset({"condensate"}))
        self.assertTrue(model.refers(["rule"], other))
        self.assertEqual(story.features(), ["tw roof condensate", "tw roof the"])
        matcher = Matcher(DEMO, model)
        self.assertEqual(services(matcher, "They redid the roof."), {"roofing"})
        self.assertNotIn(
            "roofing",
            services(
                matcher,
                "They redid the roof, and a week later the furnace's condensate "
                "line was fixed too.",
            ),
        )

    def test_threshold(self) -> None:
        """A service counts at the threshold's odds or above."""
        model = Referrals(document(threshold=0.75, weights={"rule": 2.0}))
        self.assertFalse(model.refers(["rule"]))  # odds e^1, below 3
        self.assertTrue(
            Referrals(document(threshold=0.7, weights={"rule": 2.0})).refers(["rule"])
        )

    def test_malformed(self) -> None:
        """A document of another shape is refused, saying what is wrong."""
        for bad, message in [
            (document(format=2), "format"),
            (document(threshold=1.5), "threshold"),
            (document(bias="high"), "bias"),
            (document(weights={"rule": "2"}), "weights"),
            (document(weights={"tw roof": 1.0}), "pairs no keyword"),
        ]:
            with self.assertRaises(ValueError) as raised:
                Referrals(bad)
            self.assertIn(message, str(raised.exception))

    def test_how_often_named(self) -> None:
        """
        The model reads how often, and by how many different keywords, a
        text names a service: one the story keeps coming back to is its
        subject, one named once may be in passing.
        """
        often = Matcher(DEMO, Referrals(document(weights={"names 2": 2.0})))
        self.assertEqual(services(often, "They redid the roof."), set())
        self.assertEqual(
            services(often, "They redid the roof. The roof is tight now."),
            {"roofing"},
        )
        varied = Matcher(DEMO, Referrals(document(weights={"terms 2": 2.0})))
        self.assertEqual(
            services(varied, "They redid the roof. The roof is tight now."), set()
        )
        self.assertEqual(
            services(varied, "They redid the roof and the gutters."), {"roofing"}
        )

    def test_matcher_applies_the_model(self) -> None:
        """The matcher keeps a service only where its model says so."""
        never = Matcher(DEMO, Referrals(document(bias=-10.0)))
        self.assertEqual(services(never, "They redid the roof."), set())
        always = Matcher(DEMO, Referrals(document(bias=10.0)))
        self.assertEqual(
            services(
                always,
                "Our shower kept going lukewarm until Tom replaced the mixing valve.",
            ),
            {"bathroom-remodeling", "plumbing"},
        )
