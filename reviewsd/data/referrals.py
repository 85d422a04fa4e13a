"""
Whether a text refers to the work of a service whose keywords it holds,
decided by a small trained logistic regression over what the rules of
L{reviewsd.data.mentions} found.

The rules read each keyword in its place (named outright, as what failed,
as a place, in an everyday sense) and keep the services named most
plainly; readers also drop a keyword named in passing in ways no rule
spells out ("the kitchen ceiling was dripping", "grout dust on the
floors"), and keep some the rules leave out.  For each service whose
keywords the text holds, the model weighs: whether the rules kept it and
how plainly its keywords were named, the keywords themselves, the words
on either side of each, how many services the text names, and each of
its keywords with each word of the whole text (L{Keywords}: a roof in a
text of condensate lines and thermostats is not a roofing job).  The
features are made of the text and the rules' reading, never of a
business's service ids, so the weights carry over to any business whose
keywords read the same way; a keyword the model never saw weighs nothing,
and the rules' reading decides.

The weights are C{referrals.json}, fitted by
C{benchmarks/train_referrals.py} on labelled reviews; this module only
reads them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from itertools import repeat
from typing import Any

from attrs import frozen

#: The shape of C{referrals.json} this module reads.
FORMAT = 1

#: What starts the feature of a keyword and a word of its text.
_PAIR = "tw "


@frozen
class Keywords:
    """
    A service's keywords in a text, and the text's words: the model weighs
    each pair of one of each, the words of the story a keyword sits in.
    They are many (three keywords in a text of 80 distinct words make 240)
    and most weigh nothing, so the model looks up each keyword's weighed
    words rather than being handed every pair as a feature.
    """

    terms: frozenset[str]
    words: frozenset[str]

    def features(self) -> list[str]:
        """Every pair as a feature, sorted: what the model is fitted on."""
        return [
            f"{_PAIR}{term} {word}"
            for term in sorted(self.terms)
            for word in sorted(self.words)
        ]


NO_KEYWORDS = Keywords(frozenset(), frozenset())


class Referrals:
    """The weights of C{referrals.json}."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        if document.get("format") != FORMAT:
            raise ValueError(f"referrals model: format must be {FORMAT}")
        bias = document.get("bias")
        weights = document.get("weights")
        if not isinstance(bias, (int, float)):
            raise ValueError("referrals model: bias must be a number")
        if not isinstance(weights, dict) or not all(
            isinstance(w, (int, float)) for w in weights.values()
        ):
            raise ValueError("referrals model: weights must map features to numbers")
        threshold = document.get("threshold")
        if not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
            raise ValueError("referrals model: threshold must be between 0 and 1")
        #: The threshold as log-odds: a service counts at or above it.
        self._cut = math.log(threshold / (1 - threshold))
        self._bias = float(bias)
        self._weights: dict[str, float] = {}
        #: keyword: {word: weight}, of the features that pair them
        self._pairs: dict[str, dict[str, float]] = {}
        for feature, w in weights.items():
            if feature.startswith(_PAIR):
                # a word of the text never holds a space; a keyword may, and
                # a list of small fixes read as a visit has none ("")
                term, space, word = feature[len(_PAIR) :].rpartition(" ")
                if not (space and word):
                    raise ValueError(
                        f"referrals model: {feature!r} pairs no keyword with a word"
                    )
                self._pairs.setdefault(term, {})[word] = float(w)
            else:
                self._weights[feature] = float(w)
        #: what the document says of the model, all but its weights (which
        #: the model holds in its own form)
        self.document = {k: v for k, v in document.items() if k != "weights"}

    def log_odds(
        self, features: Iterable[str], keywords: Keywords = NO_KEYWORDS
    ) -> float:
        """
        The model's log-odds that the text refers to the service, from the
        features the rules read and its keywords among the text's words.
        """
        weights = self._weights
        total = self._bias + sum(weights.get(f, 0.0) for f in set(features))
        for term in keywords.terms:
            weighed = self._pairs.get(term)
            if weighed:
                total += sum(map(weighed.get, keywords.words, repeat(0.0)))
        return total

    def refers(self, features: Iterable[str], keywords: Keywords = NO_KEYWORDS) -> bool:
        """Whether the text refers to the service: at the threshold or above."""
        return self.log_odds(features, keywords) >= self._cut


#: The rules' own reading: a service counts exactly when the rules keep it.
RULES = Referrals(
    {"format": FORMAT, "threshold": 0.5, "bias": -1.0, "weights": {"rule": 2.0}}
)


def _raw(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


#: What found mentions depend on of the model: its weights' bytes.
REFERRALS_DIGEST = hashlib.sha256(_raw("referrals.json")).hexdigest()


def load(name: str = "referrals.json") -> Referrals:
    """The model shipped beside this module."""
    return Referrals(json.loads(_raw(name)))


_shipped: Referrals | None = None


def shipped() -> Referrals:
    """The process's shipped model, read on first use: one for every build."""
    global _shipped
    if _shipped is None:
        _shipped = load()
    return _shipped
