"""
The insights evaluation command, benchmarks/evaluate_insights.py: it runs,
its figures are the ones a hand count gives, and the labelled set it reads
keeps its format.  The command is run as a program, as people run it (test
modules do not import the benchmarks).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ROOT / "benchmarks" / "evaluate_insights.py"

#: Three labelled reviews of the demo business.
LABELS = [
    {
        "id": "t1",
        "rating": 5,
        "text": "Dev fixed the faucet in no time. Great price.",
        "sentiment": "positive",
        "mixed": False,
        "aspects": {"workmanship": "positive", "pricing": "positive"},
        "technicians": ["Dev Patel"],
        "services": ["plumbing"],
        "areas": [],
        "kinds": ["plain"],
    },
    {
        "id": "t2",
        "rating": 1,
        "text": "The roofer never showed.",
        "sentiment": "negative",
        "mixed": False,
        "aspects": {"punctuality": "negative"},
        "technicians": [],
        "services": ["roofing"],
        "areas": [],
        "kinds": ["short"],
    },
    {
        "id": "t3",
        "rating": 3,
        "text": "Rosa came by on Tuesday.",
        "sentiment": "neutral",
        "mixed": False,
        "aspects": {},
        "technicians": ["Rosa Delgado"],
        "services": [],
        "areas": [],
        "kinds": ["neutral"],
    },
]


def _entry(
    label: str, aspects: dict[str, str], technicians: list[str], services: list[str]
) -> dict[str, Any]:
    return {
        "sentiment": {"score": 0.5, "label": label},
        "sentence_scores": [0.5],
        "aspects": [
            {"id": a, "score": 0.5, "label": value} for a, value in aspects.items()
        ],
        "topics": [],
        "problems": [],
        "mentions": {"technicians": technicians, "services": services, "areas": []},
    }


#: What an analysis might have said of them; nothing at all of t3.
PREDICTIONS = {
    "t1": _entry(
        "positive",
        {"workmanship": "positive", "pricing": "negative", "cleanliness": "neutral"},
        ["Dev Patel"],
        ["kitchen-remodeling", "plumbing"],
    ),
    "t2": _entry(
        "neutral", {"punctuality": "negative"}, ["Sam Whitfield"], ["roofing"]
    ),
}


class EvaluationCommandTests(SynchronousTestCase):
    def run_command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(COMMAND), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def write(self, name: str, lines: list[Any]) -> str:
        directory = Path(self.mktemp()).resolve()
        directory.mkdir(parents=True)
        path = directory / name
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return str(path)

    def figures(self, *args: str) -> dict[str, Any]:
        done = self.run_command(*args, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def test_figures_are_counted_as_by_hand(self) -> None:
        """
        Against a saved per_review: 3 labelled aspects, 4 found, 3 of them
        right (precision 3/4, recall 1), polarity agreeing on 2 of 3; the
        review without an entry counts as finding nothing.
        """
        predictions = self.write("per_review.json", [])
        Path(predictions).write_text(json.dumps({"per_review": PREDICTIONS}))
        figures = self.figures(
            "--labels", self.write("labels.jsonl", LABELS), "--predictions", predictions
        )["labels"]

        self.assertEqual((figures["reviews"], figures["unanalysed"]), (3, 1))
        sentiment = figures["sentiment"]
        self.assertEqual((sentiment["agree"], sentiment["total"]), (1, 3))
        self.assertAlmostEqual(sentiment["accuracy"], 1 / 3)
        self.assertEqual(
            sentiment["confusion"],
            {
                "positive": {"positive": 1},
                "neutral": {"None": 1},
                "negative": {"neutral": 1},
            },
        )
        self.assertEqual(sentiment["mixed"], {"rate": None, "agree": 0, "total": 0})
        self.assertEqual(sentiment["by_kind"]["plain"]["agree"], 1)

        aspects = figures["aspects"]
        self.assertEqual(
            (aspects["tp"], aspects["found"], aspects["labelled"]), (3, 4, 3)
        )
        self.assertAlmostEqual(aspects["precision"], 0.75)
        self.assertAlmostEqual(aspects["recall"], 1.0)
        self.assertAlmostEqual(aspects["f1"], 2 * 0.75 / 1.75)
        self.assertEqual(aspects["polarity"], {"rate": 2 / 3, "agree": 2, "total": 3})
        per_aspect = aspects["per_aspect"]
        self.assertEqual(
            per_aspect["cleanliness"],
            {
                "precision": 0.0,
                "recall": None,
                "f1": None,
                "tp": 0,
                "found": 1,
                "labelled": 0,
                "polarity": {"rate": None, "agree": 0, "total": 0},
            },
        )
        self.assertEqual(per_aspect["pricing"]["polarity"]["agree"], 0)
        self.assertEqual(per_aspect["punctuality"]["f1"], 1.0)
        self.assertEqual(per_aspect["honesty"]["found"], 0)

        opinionated = figures["opinionated_aspects"]
        self.assertEqual((opinionated["tp"], opinionated["found"]), (3, 3))

        technicians = figures["mentions"]["technicians"]
        self.assertEqual((technicians["precision"], technicians["recall"]), (0.5, 0.5))
        services = figures["mentions"]["services"]
        self.assertEqual((services["tp"], services["found"]), (2, 3))
        self.assertAlmostEqual(services["precision"], 2 / 3)
        self.assertEqual(services["recall"], 1.0)

    def test_runs_the_analysis(self) -> None:
        """
        Without saved predictions the daemon's own derivation analyses the
        labelled texts: every review gets an entry, and plain mentions of a
        technician, a service and a place are found.
        """
        labels = [
            {
                **LABELS[0],
                "text": "Dev Patel replaced our water heater.",
                "aspects": {},
            },
            {
                **LABELS[2],
                "id": "t4",
                "text": "Rosa rewired the panel at our house in Tigard.",
                "services": ["electrical"],
                "areas": ["Tigard"],
            },
        ]
        figures = self.figures("--labels", self.write("labels.jsonl", labels))["labels"]
        self.assertEqual((figures["reviews"], figures["unanalysed"]), (2, 0))
        self.assertIn("reviewsd-lexicon", figures["model"])
        self.assertEqual(figures["sentiment"]["total"], 2)
        for kind in ("technicians", "services", "areas"):
            mentions = figures["mentions"][kind]
            self.assertEqual(
                (mentions["precision"], mentions["recall"]), (1.0, 1.0), kind
            )
        aspects = figures["aspects"]
        self.assertEqual(aspects["labelled"], 0)
        self.assertLessEqual(aspects["tp"], aspects["found"])

    def test_text_report(self) -> None:
        """The report names each figure; --show-errors describes disagreements."""
        predictions = self.write("per_review.json", [])
        Path(predictions).write_text(json.dumps(PREDICTIONS))
        done = self.run_command(
            "--labels",
            self.write("labels.jsonl", LABELS),
            "--predictions",
            predictions,
            "--show-errors",
            "5",
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        for words in (
            "review sentiment accuracy   0.333 (1/3)",
            "P 0.750  R 1.000  F1 0.857",
            "aspect polarity agreement   0.667 (2/3)",
            "technicians",
            "1 reviews had no per_review entry",
            "3 disagreements shown",
            "sentiment: human negative, analysis neutral",
            "aspect polarity: pricing human positive, analysis negative",
            "technicians: human ['Rosa Delgado'], analysis []",
        ):
            self.assertIn(words, done.stdout)

    def test_held_out_disagreements_refused(self) -> None:
        """The held-out part's disagreements are never printed."""
        done = self.run_command("--part", "heldout", "--show-errors", "3")
        self.assertEqual(done.returncode, 2)
        self.assertIn("held-out", done.stderr)
        self.assertEqual(done.stdout, "")

    def test_bad_labels_refused(self) -> None:
        """
        A label outside the guide's vocabulary, or an id used twice, is
        reported with its line.
        """
        bad = [LABELS[0], {**LABELS[1], "aspects": {"friendliness": "positive"}}]
        path = self.write("labels.jsonl", bad)
        done = self.run_command("--labels", path)
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"{path}:2: t2: aspects", done.stderr)
        good = self.write("labels.jsonl", LABELS)
        again = self.run_command("--labels", good, good, "--check")
        self.assertEqual(again.returncode, 2)
        self.assertIn(f"{good}:1: duplicate id t1", again.stderr)

    def test_shipped_set(self) -> None:
        """
        The labelled set in benchmarks/insights_eval keeps its format: both
        parts check, with unique ids and texts, and keep their sizes.
        """
        done = self.run_command("--check")
        self.assertEqual(done.returncode, 0, done.stderr)
        counts = {
            line.split(":")[0]: int(line.split()[1])
            for line in done.stdout.splitlines()
        }
        self.assertGreaterEqual(counts["dev"], 200)
        self.assertGreaterEqual(counts["heldout"], 120)
