"""
The referrals model: which services a text refers to, from what the
mention rules read of each keyword (reviewsd.data.referrals).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.loading import DEMO_DATA
from reviewsd.data.mentions import Matcher
from reviewsd.data.model import business_from_json
from reviewsd.data.referrals import FORMAT, RULES, Referrals, load

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
