"""
Sparse binary features and L2-regularised logistic regression, for the
scripts that fit the analysis's shipped weights (train_detector.py,
train_referrals.py).  Needs scikit-learn: pip install '.[train]'.

A row is the set of feature names one example holds; a feature enters the
vocabulary when at least C{min_count} rows hold it, so that a word seen
once cannot carry a weight.  Folds depend on an example's id alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression

FOLDS = 5
MIN_COUNT = 3


def fold(example_id: str, folds: int = FOLDS) -> int:
    """The cross-validation fold of an example, from its id alone."""
    return hashlib.sha256(example_id.encode()).digest()[0] % folds


def after(example_id: str, last: str) -> bool:
    """Whether C{example_id} comes after C{last} in the same part."""
    part, _, number = example_id.rpartition("-")
    last_part, _, last_number = last.rpartition("-")
    return part == last_part and int(number) > int(last_number)


def vocabulary(
    rows: Iterable[Iterable[str]], min_count: int = MIN_COUNT
) -> dict[str, int]:
    """The features at least C{min_count} rows hold, numbered in sorted order."""
    counts: dict[str, int] = {}
    for row in rows:
        for feature in set(row):
            counts[feature] = counts.get(feature, 0) + 1
    kept = sorted(f for f, n in counts.items() if n >= min_count)
    return {feature: i for i, feature in enumerate(kept)}


def matrix(rows: Sequence[Iterable[str]], columns: dict[str, int]) -> csr_matrix:
    """The 0/1 matrix of C{rows} over the vocabulary C{columns}."""
    r, c = [], []
    for i, row in enumerate(rows):
        for feature in set(row):
            j = columns.get(feature)
            if j is not None:
                r.append(i)
                c.append(j)
    return csr_matrix(
        (np.ones(len(r)), (r, c)), shape=(len(rows), len(columns)), dtype=float
    )


def fit(
    features: csr_matrix, targets: Sequence[bool], weights: Sequence[float], c: float
) -> tuple[np.ndarray, float]:
    """
    The coefficients and intercept of a logistic regression with inverse
    penalty C{c}, fitted to C{targets} at C{weights}; deterministic (L-BFGS
    from zero).
    """
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-8)
    model.fit(features, np.asarray(targets), sample_weight=np.asarray(weights))
    return model.coef_[0], float(model.intercept_[0])


def fit_classes(
    features: csr_matrix, targets: Sequence[int], weights: Sequence[float], c: float
) -> tuple[np.ndarray, np.ndarray]:
    """
    The coefficients (one row per class, in the order of the class
    numbers) and intercepts of a multinomial logistic regression.
    """
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-8)
    model.fit(features, np.asarray(targets), sample_weight=np.asarray(weights))
    return model.coef_, model.intercept_


def table(
    columns: dict[str, int], coefficients: np.ndarray, smallest: float
) -> dict[str, list[list[float]]]:
    """
    C{{feature: [[row, weight], ...]}} of a matrix of coefficients (one row
    per class or aspect), the weights at least C{smallest} from 0, rounded.
    """
    rows: dict[str, list[list[float]]] = {}
    for feature, j in columns.items():
        pairs = [
            [k, round(float(coefficients[k, j]), 4)]
            for k in range(coefficients.shape[0])
            if abs(coefficients[k, j]) >= smallest
        ]
        if pairs:
            rows[feature] = pairs
    return rows


def pruned(
    columns: dict[str, int], coefficients: np.ndarray, smallest: float
) -> dict[str, float]:
    """The weights of C{columns} at least C{smallest} from 0, rounded."""
    return {
        feature: round(float(coefficients[j]), 4)
        for feature, j in columns.items()
        if abs(coefficients[j]) >= smallest
    }


def figures(tp: int, found: int, labelled: int) -> dict[str, float]:
    """Precision, recall and F1 of C{tp} hits among C{found} and C{labelled}."""
    precision = tp / found if found else 0.0
    recall = tp / labelled if labelled else 0.0
    f1 = 2 * tp / (found + labelled) if found + labelled else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
    }


def command(
    argv: Sequence[str] | None,
    doc: str,
    output: Path,
    parts: Iterable[Path],
    train: Callable[[], dict[str, Any]],
) -> int:
    """
    The command line of a script that fits shipped weights: C{--output FILE}
    (C{output} by default) and C{--dry-run}; exit status 2 when a labelled
    part is missing.
    """
    name = Path(sys.argv[0]).stem
    parser = argparse.ArgumentParser(prog=name, description=doc.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=output, metavar="FILE")
    parser.add_argument("--dry-run", action="store_true", help="write nothing")
    args = parser.parse_args(argv)
    missing = [str(p) for p in parts if not p.exists()]
    if missing:
        print(f"{name}: missing labelled parts {missing}", file=sys.stderr)
        return 2
    document = train()
    if not args.dry_run:
        args.output.write_text(
            json.dumps(document, separators=(",", ":")) + "\n", "utf-8"
        )
        print(f"wrote {args.output}")
    return 0
