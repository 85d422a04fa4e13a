"""
The detector (reviewsd.insights.detector): what the words of a text say
that the lexicon does not read, from trained weights.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.insights.analysis import LEXICON_VERSION, Analyser, analyser
from reviewsd.insights.data import ASPECTS
from reviewsd.insights.detector import (
    FORMAT,
    TONE_SCORE,
    TONES,
    Detector,
    lexicon_feature,
    load,
    sentence_features,
)

IDS = [a.id for a in ASPECTS]
PUNCTUALITY, PRICING = IDS.index("punctuality"), IDS.index("pricing")


def document(**changes: Any) -> dict[str, Any]:
    """A detector that adds nothing and reads every tone as neutral."""
    return {
        "format": FORMAT,
        "aspects": IDS,
        "bias": [-5.0] * len(IDS),
        "threshold": 0.5,
        "weights": {},
        "polarity": {"numbers": [0.0, 0.0, 0.0], "weights": {}},
        "tone": {
            "classes": list(TONES),
            "threshold": 0.6,
            "bias": [0.0, 1.0, 0.0],
            "weights": {},
        },
        **changes,
    }


class FeatureTests(SynchronousTestCase):
    def test_sentence_features(self) -> None:
        """Words, neighbouring pairs with the sentence's edges, and cues."""
        self.assertEqual(
            sentence_features(["two", "hours", "late"], ["punctuality"]),
            [
                "w two",
                "w hours",
                "w late",
                "p <s> two",
                "p two hours",
                "p hours late",
                "p late </s>",
                "c punctuality",
            ],
        )

    def test_evidence_is_the_lexicon_reading(self) -> None:
        """
        What the detector reads of a text: each sentence's features, the
        lexicon's scores and the aspects the lexicon found.
        """
        evidence = analyser().evidence("Showed up two hours late. Great price though!")
        self.assertEqual(len(evidence.sentences), 2)
        self.assertIn("c punctuality", evidence.sentences[0])
        self.assertIn("w price", evidence.sentences[1])
        self.assertEqual({a for a, _, _ in evidence.found}, {"pricing", "punctuality"})
        self.assertGreater(evidence.sentence_scores[1], 0)


class DecideTests(SynchronousTestCase):
    def test_adds_from_words(self) -> None:
        """
        Words the lexicon does not know can carry an aspect; its side comes
        from the sentence that is the strongest evidence for it.
        """
        detector = Detector(
            document(
                weights={"w 8:40": [[PUNCTUALITY, 9.0]]},
                polarity={"numbers": [0.0, 0.0, 0.0], "weights": {"w 8:40": -2.0}},
            ),
            IDS,
        )
        sentences = [["w nice", "w crew"], ["w rolled", "w in", "w 8:40"]]
        decided = detector.decide(sentences, [0.4, 0.0], 0.4, ())
        self.assertEqual([a for a, _, _ in decided], ["punctuality"])
        aspect, value, phrases = decided[0]
        self.assertLess(value, 0)  # the side model's, not the review's
        self.assertEqual(phrases, ())

    def test_keeps_and_drops_the_lexicons(self) -> None:
        """
        An aspect the lexicon found keeps its score and phrases when the
        model agrees, and is dropped when it does not; the result is sorted.
        """
        detector = Detector(
            document(
                weights={
                    lexicon_feature("pricing"): [[PRICING, 10.0]],
                    lexicon_feature("punctuality"): [[PUNCTUALITY, 1.0]],
                }
            ),
            IDS,
        )
        found = (("punctuality", 0.3, ("on time",)), ("pricing", 0.5, ("fair price",)))
        self.assertEqual(
            detector.decide([["w fair"]], [0.5], 0.5, found),
            (("pricing", 0.5, ("fair price",)),),
        )

    def test_no_opinion_no_aspect(self) -> None:
        """A text with no opinion at all gives no aspect, whatever its words."""
        detector = Detector(document(bias=[5.0] * len(IDS)), IDS)
        self.assertEqual(detector.decide([["w gutters"]], [0.0], 0.0, ()), ())


class ToneTests(SynchronousTestCase):
    def test_sure_side_or_none(self) -> None:
        """
        The tone gives the least score of a side only where the model is
        sure enough of it; otherwise the text stays without an opinion.
        """
        detector = Detector(
            document(
                tone={
                    "classes": list(TONES),
                    "threshold": 0.6,
                    "bias": [0.0, 1.0, 0.0],
                    "weights": {"w still": [[2, 4.0]], "w back": [[0, 4.0]]},
                }
            ),
            IDS,
        )
        self.assertEqual(detector.tone([["w toilet", "w still"]]), -TONE_SCORE)
        self.assertEqual(detector.tone([["w heat", "w back"]]), TONE_SCORE)
        self.assertEqual(detector.tone([["w gutters"]]), 0.0)
        # both sides at once: neither is sure
        self.assertEqual(detector.tone([["w still", "w back"]]), 0.0)

    def test_facts_stay_neutral(self) -> None:
        """With the shipped weights, facts alone read as no opinion."""
        for text in [
            "They replaced the gutters in March.",
            "Dev swapped the kitchen faucet on Tuesday.",
        ]:
            analysis = analyser().analyse(text)
            self.assertEqual((analysis.score, analysis.aspects), (0.0, ()), text)

    def test_words_without_a_sentiment_word(self) -> None:
        """
        With the shipped weights, a text of no sentiment word still reads
        as the praise or complaint it is.
        """
        for text, side in [
            ("Heat back on before the kids woke up.", 1),
            ("Third visit and the toilet still runs all night.", -1),
        ]:
            score = analyser().analyse(text).score
            self.assertIsNotNone(score, text)
            assert score is not None
            self.assertEqual((score > 0) - (score < 0), side, text)


class ShippedModelTests(SynchronousTestCase):
    def test_fitted_on_this_lexicon(self) -> None:
        """
        detector.json was fitted on the reading of this lexicon: a change to
        the lexicon, its data or VADER needs benchmarks/train_detector.py.
        """
        shipped = load(IDS).document
        self.assertEqual(shipped["lexicon"], LEXICON_VERSION)
        self.assertIn("train", shipped["trained_on"]["parts"])
        figures = shipped["cross_validation"]
        self.assertGreater(figures["aspects"]["f1"], figures["lexicon_alone"]["f1"])

    def test_malformed(self) -> None:
        """A document of another shape is refused, saying what is wrong."""
        for bad, message in [
            (document(format=2), "format"),
            (document(aspects=list(reversed(IDS))), "aspects"),
            (document(bias=[0.0]), "bias"),
            (document(threshold=0), "threshold"),
            (document(weights={"w late": [[99, 1.0]]}), "weights"),
            # one column weighed twice: which weight would count?
            (document(weights={"w late": [[0, 1.0], [0, 2.0]]}), "weights"),
            (document(polarity={"numbers": [0.0], "weights": {}}), "polarity"),
            (document(tone={"classes": ["good", "bad"]}), "tone"),
        ]:
            with self.assertRaises(ValueError) as raised:
                Detector(bad, IDS)
            self.assertIn(message, str(raised.exception))

    def test_injected_detector(self) -> None:
        """An analyser takes its detector as an argument."""
        quiet = Analyser(Detector(document(), IDS))
        self.assertEqual(quiet.analyse("Showed up two hours late.").aspects, ())
