"""
The lexical data the engine runs on, read once from the JSON files shipped
beside this module.

Every list of words lives in a data file, never in code:

  - C{aspects.json}: the aspect taxonomy (id, label, cues, patterns, exclusions);
  - C{topics.json}: recurring themes (id, label, cues);
  - C{problems.json}: kinds of complaint (id, label, cues, patterns);
  - C{sentiment_lexicon.json}: the domain extension of VADER's lexicon;
  - C{outcomes.json}: implicit outcomes ("still leaks", "found what two
    others missed"): patterns with a valence and the aspects they mention;
  - C{text.json}: abbreviations for the sentence splitter, the words that
    cut a sentence into clauses and weigh them, stop words for phrase
    extraction.

L{DATA_DIGEST} hashes the bytes of all of them, so editing any data file
changes L{reviewsd.insights.analysis.ENGINE_VERSION} and invalidates every
cached per-review analysis.  The files are package data, read at import;
L{shipped} also reads the trained weights for the modules that use them.
Apart from those, the only file access is L{reviewsd.insights.cache}'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import Any

from attrs import frozen

DATA_FILES = (
    "aspects.json",
    "outcomes.json",
    "topics.json",
    "problems.json",
    "sentiment_lexicon.json",
    "text.json",
)


@frozen
class Category:
    """
    One aspect, topic or kind of problem.

    @ivar cues: words or phrases matched as whole words, case-insensitively.
    @ivar patterns: regular expressions matched on the casefolded text.
    @ivar exclude: phrases inside which a cue or pattern match does not count
        (C{"gutters cleaned"} is a service, not a word about cleanliness).
    """

    id: str
    label: str
    cues: tuple[str, ...]
    patterns: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


def shipped(name: str) -> bytes:
    """The bytes of a file shipped beside these modules (data, weights)."""
    return resources.files(__package__).joinpath(name).read_bytes()


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, str) and v.strip() for v in value
    ):
        raise ValueError(f"{where}: must be a list of non-empty strings")
    return tuple(value)


def _categories(document: Any, key: str, name: str) -> tuple[Category, ...]:
    items = document.get(key)
    if not isinstance(items, list) or not items:
        raise ValueError(f"{name}: {key!r} must be a non-empty list")
    seen: set[str] = set()
    categories = []
    for i, item in enumerate(items):
        where = f"{name}: {key}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: must be an object")
        category_id = item.get("id")
        label = item.get("label")
        if not isinstance(category_id, str) or not re.fullmatch(
            r"[a-z][a-z0-9_]*", category_id
        ):
            raise ValueError(f"{where}.id: must be a snake_case identifier")
        if category_id in seen:
            raise ValueError(f"{where}.id: repeats {category_id!r}")
        seen.add(category_id)
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"{where}.label: must be a non-empty string")
        patterns = _strings(item.get("patterns", []), f"{where}.patterns")
        for pattern in patterns:
            re.compile(pattern)
        categories.append(
            Category(
                id=category_id,
                label=label,
                cues=_strings(item.get("cues"), f"{where}.cues"),
                patterns=patterns,
                exclude=_strings(item.get("exclude", []), f"{where}.exclude"),
            )
        )
    return tuple(categories)


def _valences(value: Any, where: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be an object")
    out = {}
    for word, valence in value.items():
        if (
            not isinstance(word, str)
            or not word.strip()
            or isinstance(valence, bool)
            or not isinstance(valence, (int, float))
            or not -4 <= valence <= 4
        ):
            raise ValueError(f"{where}[{word!r}]: must be a valence from -4 to 4")
        out[word] = float(valence)
    return out


_raw = {name: shipped(name) for name in DATA_FILES}

#: How the analysis compares with careful human readers (C{measured.json}),
#: for the document's C{method}: not part of L{DATA_DIGEST}, for it says
#: how good the analysis is, not what it does.
MEASURED: dict[str, Any] = json.loads(shipped("measured.json").decode("utf-8"))
_documents = {name: json.loads(raw.decode("utf-8")) for name, raw in _raw.items()}

DATA_DIGEST = hashlib.sha256(
    b"".join(name.encode() + b"\0" + raw + b"\0" for name, raw in _raw.items())
).hexdigest()


def _outcomes(document: Any) -> list[tuple[str, float, tuple[str, ...]]]:
    """C{(pattern, valence, aspect ids)} of C{outcomes.json}, expanded."""
    vocabulary = document.get("vocabulary", {})
    if not isinstance(vocabulary, dict) or not all(
        isinstance(v, str) for v in vocabulary.values()
    ):
        raise ValueError("outcomes.json: vocabulary must map names to patterns")

    def expand(pattern: str) -> str:
        # "won't" also matches "wont", as reviewers often type it
        expanded = re.sub(r"\{([A-Z_]+)\}", lambda m: vocabulary[m.group(1)], pattern)
        return expanded.replace("n't", "n'?t")

    found = []
    for i, group in enumerate(document.get("outcomes", [])):
        where = f"outcomes.json: outcomes[{i}]"
        valence = _valences({"valence": group.get("valence")}, where)["valence"]
        aspects = tuple(group.get("aspects", []))
        # compiled, and refused if not a pattern, when first used
        # (reviewsd.insights.patterns.PatternSet): a start with every text
        # analysed already needs none of them
        for pattern in _strings(group.get("patterns"), f"{where}.patterns"):
            found.append((expand(pattern), valence, aspects))
    return found


ASPECTS = _categories(_documents["aspects.json"], "aspects", "aspects.json")

#: The implicit outcomes of C{outcomes.json}: C{(pattern, valence, aspect
#: ids)}, the patterns expanded, in the file's order (earlier ones win).
OUTCOMES = _outcomes(_documents["outcomes.json"])
for _pattern, _, _ids in OUTCOMES:
    for _id in _ids:
        if _id not in {a.id for a in ASPECTS}:
            raise ValueError(f"outcomes.json: {_pattern!r}: no aspect {_id!r}")
TOPICS = _categories(_documents["topics.json"], "topics", "topics.json")
PROBLEMS = _categories(_documents["problems.json"], "problems", "problems.json")

#: Data versions as the files state them, for the document's C{model}.
VERSIONS = {name: _documents[name].get("version") for name in DATA_FILES}

WORD_VALENCES: dict[str, float] = {}
PHRASE_VALENCES: dict[str, float] = {}
#: Emoji (single characters) and their valences, added after VADER's reading.
EMOJI_VALENCES: dict[str, float] = {}
for _i, _group in enumerate(_documents["sentiment_lexicon.json"]["groups"]):
    _where = f"sentiment_lexicon.json: groups[{_i}]"
    WORD_VALENCES.update(_valences(_group.get("words", {}), f"{_where}.words"))
    PHRASE_VALENCES.update(_valences(_group.get("phrases", {}), f"{_where}.phrases"))
    _emoji = _valences(_group.get("emoji", {}), f"{_where}.emoji")
    if any(len(e) != 1 for e in _emoji):
        raise ValueError(f"{_where}.emoji: one character each")
    EMOJI_VALENCES.update(_emoji)

ABBREVIATIONS = frozenset(
    a.casefold() for a in _strings(_documents["text.json"]["abbreviations"], "text")
)
STOPWORDS = frozenset(
    w.casefold() for w in _strings(_documents["text.json"]["stopwords"], "text")
)


def _spellings(document: Any) -> dict[str, str]:
    if not isinstance(document, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip()
        for k, v in document.items()
    ):
        raise ValueError("text.json: spellings must map words to words")
    return {k.casefold(): v.casefold() for k, v in document.items() if k != "about"}


#: Misspellings common in reviews, and the word meant.
SPELLINGS = _spellings(_documents["text.json"].get("spellings", {}))


def _word_lists(document: Any, name: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(document, dict):
        raise ValueError(f"{name}: must be an object")
    return {
        key: tuple(w.casefold() for w in _strings(value, f"{name}.{key}"))
        for key, value in document.items()
        if key != "about"
    }


_edges = _word_lists(_documents["text.json"]["phrase_edges"], "text.json: phrase_edges")
#: Words a phrase may not begin with, or end with: it would be unfinished.
NOT_FIRST = frozenset(_edges["not_first"])
NOT_LAST = frozenset(_edges["not_last"])
#: Words that open a noun phrase, words that qualify its noun, and words
#: that open a verb's object: a phrase that ends on a qualifying word right
#: after the first stops short of its noun ("diagnosed a failing" of
#: "diagnosed a failing bearing"), and one that ends on a verb right before
#: the last, of its object ("mike diagnosed" of "Mike diagnosed a bearing").
OPENS_NOUN = frozenset(_edges["opens_noun"])
MODIFIERS = frozenset(_edges["modifiers"])
OPENS_OBJECT = frozenset(_edges["opens_object"])
#: Words a phrase may not begin right after, in its clause: cut from a
#: negation it says the opposite ("on time" of "not on time"), cut from
#: "per" it loses what it measures ("sheet price" of "a per sheet price").
NOT_AFTER = frozenset(_edges["not_after"])
#: Spans of time, and the words that finish one: a phrase that ends on the
#: first right before the second stops short ("estimate 3 weeks" of "3
#: weeks out").
DURATIONS = frozenset(_edges["durations"])
AFTER_DURATIONS = frozenset(_edges["after_durations"])

#: The words that cut a sentence into clauses, by role (text.json's
#: C{contrast}: turns, weak_turns, concessions, verdicts, exceptions, joins,
#: subjects, breaks).
CONTRAST = _word_lists(_documents["text.json"]["contrast"], "text.json: contrast")
