"""
Fit the review verdict model (reviewsd/insights/verdict.py) and write its
weights, reviewsd/insights/verdict.json: the one source of those weights.

    python benchmarks/train_verdict.py [--output FILE] [--dry-run]

The model is a multinomial logistic regression over positive, neutral and
negative on the features of FEATURES: star ratings, and features of the
text analysis crossed with sets of star ratings.  It decides the reviews
whose text does not decide alone (verdict.decided_by_text: a text without
any opinion is neutral, a clear one-sided text keeps its own label, by the
labelling guide's first rule); those are left out of the fitting, and
counted with the text's label in every figure.

It is fitted on the calibration and training parts (benchmarks/
insights_eval/calibrate.jsonl and train.jsonl: reviews the lexicon was
never written against), with the development part (dev.jsonl) added at a
weight.  The lexicon is tuned on dev, so its text reads right there more
often than on fresh text, and a model fitted on dev alone may learn to
trust the text too much; how much dev weighs (0 to leave it out) and the
L2 penalty are chosen by repeated stratified cross-validation on the
fitted parts (dev always on the training side), by the mean log loss of
the reviews the model decides (a proper score, steadier than accuracy on
few reviews); accuracies and log losses are printed.

Where the lexicon reads no opinion, the analysis takes the tone of the
words (reviewsd/insights/detector.py); the tone the shipped model reads in
the reviews it was fitted on is far surer than on new text, so each review
here gets the tone of a model fitted on the other folds instead
(train_detector.out_of_fold_tones, which needs scikit-learn: pip install
'.[train]').

Newton's method on 60 weights in plain Python, deterministic: the same
labels, analysis and code always write the same file.  Run it again
whenever the lexicon, the patterns or the analysis change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate_insights import EVAL_DIR, Item, load_items  # noqa: E402
from train_detector import out_of_fold_tones  # noqa: E402

from reviewsd.insights.analysis import LEXICON_VERSION, Analysis, analyse  # noqa: E402
from reviewsd.insights.cache import from_stored, to_stored  # noqa: E402
from reviewsd.insights.sentiment import label, with_stars  # noqa: E402
from reviewsd.insights.verdict import (  # noqa: E402
    CLASSES,
    FORMAT,
    decided_by_text,
    feature_values,
)

#: Bumped when FEATURES or the way the model is fitted change.
VERSION = 1

#: What the model reads of the text (verdict.TEXT_FEATURES), each crossed
#: with the three groups of stars: how far to trust the text depends on them.
TEXT = ("positive", "negative", "mixed", "unread", "problems")
GROUPS = ("stars1-2", "stars3", "stars4-5")
FEATURES = [
    *(f"stars{r}" for r in range(1, 6)),
    *(f"{t}*{g}" for t in TEXT for g in GROUPS),
]

#: The parts the weights are fitted on, and the part added to them at a weight.
FITTED = ("calibrate", "train")
DEVELOPMENT = "dev"
#: What cross-validation chooses from: the L2 penalty and dev's weight.
PENALTIES = (0.01, 0.03, 0.1, 0.3)
DEV_WEIGHTS = (0.0, 0.5, 1.0)
FOLDS = 5
REPEATS = 2

Row = list[tuple[int, float]]


# --- the model ------------------------------------------------------------------


def _probabilities(weights: list[list[float]], row: Row) -> list[float]:
    z = [sum(w[j] * v for j, v in row) for w in weights]
    top = max(z)
    e = [math.exp(v - top) for v in z]
    total = sum(e)
    return [v / total for v in e]


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """C{matrix}^-1 C{vector} for a symmetric positive definite C{matrix}."""
    n = len(vector)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = matrix[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            if i == j:
                low[i][i] = math.sqrt(max(s, 1e-12))
            else:
                low[i][j] = s / low[j][j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (vector[i] - sum(low[i][k] * y[k] for k in range(i))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return x


def fit(
    rows: Sequence[Row],
    classes: Sequence[int],
    counts: Sequence[float],
    size: int,
    penalty: float,
) -> list[list[float]]:
    """
    The weights (one list per class) minimising the weighted log loss plus
    C{penalty}/2 times their sum of squares, by Newton's method.
    """
    k_count = len(CLASSES)
    n = k_count * size

    def objective(weights: list[list[float]]) -> float:
        loss = 0.0
        for row, y, c in zip(rows, classes, counts, strict=True):
            loss -= c * math.log(max(_probabilities(weights, row)[y], 1e-300))
        return loss + 0.5 * penalty * sum(v * v for w in weights for v in w)

    weights = [[0.0] * size for _ in range(k_count)]
    current = objective(weights)
    for _ in range(100):
        gradient = [penalty * v for w in weights for v in w]
        hessian = [[penalty * (i == j) for j in range(n)] for i in range(n)]
        for row, y, c in zip(rows, classes, counts, strict=True):
            p = _probabilities(weights, row)
            for k in range(k_count):
                r = c * (p[k] - (k == y))
                for j, v in row:
                    gradient[k * size + j] += r * v
                for m in range(k_count):
                    coefficient = c * p[k] * ((k == m) - p[m])
                    for j1, v1 in row:
                        line = hessian[k * size + j1]
                        for j2, v2 in row:
                            line[m * size + j2] += coefficient * v1 * v2
        step = _solve(hessian, gradient)
        scale = 1.0
        while True:
            trial = [
                [w[j] - scale * step[k * size + j] for j in range(size)]
                for k, w in enumerate(weights)
            ]
            value = objective(trial)
            if value <= current or scale < 1e-6:
                break
            scale /= 2
        weights, previous, current = trial, current, value
        if previous - current < 1e-10 * max(1.0, current):
            break
    return weights


def predict(weights: list[list[float]], row: Row) -> int:
    z = [sum(w[j] * v for j, v in row) for w in weights]
    return max(range(len(z)), key=z.__getitem__)


# --- the data -------------------------------------------------------------------


class Example:
    """One labelled review, analysed as the daemon's cache gives it back."""

    def __init__(
        self, item: Item, features: Sequence[str], tones: dict[str, float]
    ) -> None:
        self.id = item.id
        self.rating = item.rating
        self.target = CLASSES.index(item.sentiment)
        analysis = from_stored(to_stored(analyse(item.text)))
        if item.id in tones:
            analysis = analysis._replace(score=tones[item.id])
        self.analysis: Analysis = analysis
        #: Whether the model decides it (the text does not, alone).
        self.modelled = not decided_by_text(self.analysis)
        self.text_label = CLASSES.index(label(self.analysis.score) or "neutral")
        values = feature_values(features, self.analysis, self.rating)
        self.row: Row = [(j, v) for j, v in enumerate(values) if v]


def examples(parts: Sequence[str], features: Sequence[str]) -> list[Example]:
    """
    The labelled reviews of C{parts}, each with its analysis; where the
    lexicon reads no opinion, with the tone an out-of-fold model reads
    (train_detector.out_of_fold_tones), as on new text.
    """
    items = load_items([EVAL_DIR / f"{part}.jsonl" for part in parts])
    tones = out_of_fold_tones(items)
    return [Example(item, features, tones) for item in items]


def folds(items: Sequence[Example], count: int, repeat: int) -> list[int]:
    """
    The fold of each item, stratified by label, in an order that depends on
    the item's id and C{repeat} only.
    """
    fold = [0] * len(items)
    at = 0
    for target in range(len(CLASSES)):
        members = [i for i, item in enumerate(items) if item.target == target]
        members.sort(
            key=lambda i: hashlib.sha256(f"{repeat}:{items[i].id}".encode()).digest()
        )
        for i in members:
            fold[i] = at % count
            at += 1
    return fold


def decide(weights: list[list[float]], item: Example) -> int:
    return predict(weights, item.row) if item.modelled else item.text_label


def fit_on(
    parts: Sequence[tuple[Sequence[Example], float]], size: int, penalty: float
) -> list[list[float]]:
    """The weights fitted on the reviews of C{parts}, each at its weight."""
    rows, targets, counts = [], [], []
    for items, weight in parts:
        if weight:
            for item in items:
                if item.modelled:
                    rows.append(item.row)
                    targets.append(item.target)
                    counts.append(weight)
    return fit(rows, targets, counts, size, penalty)


class Figures:
    """How a way of fitting does on reviews it was not fitted on."""

    def __init__(self) -> None:
        self.hits: dict[int, int] = dict.fromkeys(range(1, 6), 0)
        self.total: dict[int, int] = dict.fromkeys(range(1, 6), 0)
        self.loss = 0.0
        self.decided = 0

    def add(self, weights: list[list[float]], item: Example) -> None:
        self.hits[item.rating] += decide(weights, item) == item.target
        self.total[item.rating] += 1
        if item.modelled:
            p = _probabilities(weights, item.row)[item.target]
            self.loss -= math.log(max(p, 1e-12))
            self.decided += 1

    @property
    def accuracy(self) -> float:
        return sum(self.hits.values()) / max(1, sum(self.total.values()))

    @property
    def log_loss(self) -> float:
        return self.loss / max(1, self.decided)

    def by_stars(self) -> dict[str, float]:
        return {
            str(r): round(self.hits[r] / self.total[r], 4)
            for r in self.total
            if self.total[r]
        }


def cross_validate(
    items: Sequence[Example],
    extra: Sequence[Example],
    extra_weight: float,
    size: int,
    penalty: float,
) -> Figures:
    """
    How models fitted on the other folds of C{items} and on C{extra} at
    C{extra_weight} do on each fold, over every repeat.
    """
    figures = Figures()
    for repeat in range(REPEATS):
        fold = folds(items, FOLDS, repeat)
        for f in range(FOLDS):
            train = [item for item, g in zip(items, fold, strict=True) if g != f]
            weights = fit_on([(train, 1.0), (extra, extra_weight)], size, penalty)
            for item, g in zip(items, fold, strict=True):
                if g == f:
                    figures.add(weights, item)
    return figures


def accuracy(weights: list[list[float]], items: Sequence[Example]) -> float:
    return sum(decide(weights, item) == item.target for item in items) / len(items)


def rule_accuracy(items: Sequence[Example]) -> float:
    """The accuracy of the text's score with the stars settling open scores."""
    return sum(
        label(with_stars(item.analysis.score, item.rating)) == CLASSES[item.target]
        for item in items
    ) / len(items)


# --- the command -----------------------------------------------------------------


def train(verbose: bool = True) -> dict[str, Any]:
    """Choose, fit and describe the model; the document of verdict.json."""
    size = len(FEATURES)
    fitted = examples(FITTED, FEATURES)
    dev = examples([DEVELOPMENT], FEATURES)

    def say(line: str) -> None:
        if verbose:
            print(line, flush=True)

    say(
        f"{' and '.join(FITTED)}: {len(fitted)} reviews "
        f"({sum(i.modelled for i in fitted)} left to the model), dev {len(dev)} "
        f"({sum(i.modelled for i in dev)}); {size} features"
    )
    say(
        f"before: the text's score, open scores settled by the stars: "
        f"fitted {rule_accuracy(fitted):.3f}, dev {rule_accuracy(dev):.3f}"
    )
    say(
        f"cross-validation on them ({REPEATS} x {FOLDS}-fold): accuracy / "
        "log loss, by dev weight (rows) and penalty (columns)"
    )
    say("  " + " " * 6 + "".join(f"{p:>14}" for p in PENALTIES))
    results: dict[tuple[float, float], Figures] = {}
    for dev_weight in DEV_WEIGHTS:
        for penalty in PENALTIES:
            results[dev_weight, penalty] = cross_validate(
                fitted, dev, dev_weight, size, penalty
            )
        say(
            f"  {dev_weight:>6}"
            + "".join(
                f"   {figures.accuracy:.3f}/{figures.log_loss:.3f}"
                for p in PENALTIES
                for figures in [results[dev_weight, p]]
            )
        )
    # the lowest log loss; on a tie, the stronger penalty, the lighter dev
    dev_weight, penalty = min(
        results, key=lambda key: (round(results[key].log_loss, 6), -key[1], key[0])
    )
    chosen = results[dev_weight, penalty]
    alone = min(
        (results[0.0, p] for p in PENALTIES), key=lambda figures: figures.log_loss
    )
    dev_alone = cross_validate(dev, [], 0.0, size, penalty)
    from_dev = fit_on([(dev, 1.0)], size, penalty)
    say(
        f"chosen: dev weight {dev_weight}, penalty {penalty}: fitted accuracy "
        f"{chosen.accuracy:.3f} (by stars {chosen.by_stars()}), log loss "
        f"{chosen.log_loss:.3f}; fitted alone at best {alone.accuracy:.3f} / "
        f"{alone.log_loss:.3f}"
    )
    say(
        f"fitted on dev alone: dev {dev_alone.accuracy:.3f} cross-validated, the "
        f"fitted parts {accuracy(from_dev, fitted):.3f}"
    )
    weights = fit_on([(fitted, 1.0), (dev, dev_weight)], size, penalty)
    say(
        f"the model written, on the reviews it was fitted on: the fitted parts "
        f"{accuracy(weights, fitted):.3f}, dev {accuracy(weights, dev):.3f}"
    )
    return {
        "about": (
            "Weights of the review verdict model (reviewsd/insights/verdict.py): "
            "a multinomial logistic regression over star ratings and features "
            "of the text analysis crossed with star ratings, for the reviews "
            "whose text does not decide alone. Written by "
            "benchmarks/train_verdict.py; do not edit by hand."
        ),
        "format": FORMAT,
        "version": VERSION,
        "analysis": LEXICON_VERSION,
        "trained_on": {
            "parts": list(FITTED),
            "reviews": len(fitted),
            "added": {"part": DEVELOPMENT, "reviews": len(dev), "weight": dev_weight},
            "fitted": sum(i.modelled for i in fitted)
            + (sum(i.modelled for i in dev) if dev_weight else 0),
        },
        "penalty": penalty,
        "cross_validation": {
            "folds": FOLDS,
            "repeats": REPEATS,
            "accuracy": round(chosen.accuracy, 4),
            "accuracy_by_stars": chosen.by_stars(),
            "log_loss": round(chosen.log_loss, 4),
            "fitted_alone_accuracy": round(alone.accuracy, 4),
            "dev_alone_accuracy": round(dev_alone.accuracy, 4),
        },
        "classes": list(CLASSES),
        "features": FEATURES,
        "weights": {
            name: [round(v, 6) for v in w]
            for name, w in zip(CLASSES, weights, strict=True)
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "reviewsd" / "insights" / "verdict.json",
        metavar="FILE",
    )
    parser.add_argument("--dry-run", action="store_true", help="write nothing")
    args = parser.parse_args(argv)
    missing = [p for p in FITTED if not (EVAL_DIR / f"{p}.jsonl").exists()]
    if missing:
        print(f"train_verdict: missing parts {missing} in {EVAL_DIR}", file=sys.stderr)
        return 2
    document = train()
    if not args.dry_run:
        args.output.write_text(json.dumps(document, indent=1) + "\n", "utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
