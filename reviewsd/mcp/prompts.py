"""
The MCP prompts: requests an assistant's user picks from a menu, each
made from the current data with the reviews it rests on embedded as
resources (their URIs are the reviews' public URLs).

Arguments are strings, as the protocol has them; each is checked against
the data (a technician who does not work there is refused, naming those
who do), and an argument's possible values are what completion offers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date
from typing import Any

from attrs import frozen

from reviewsd.data.documents import to_json
from reviewsd.data.mentions import fold
from reviewsd.data.search import (
    LIMIT_MAX,
    NAME_MAX_LENGTH,
    QUERY_MAX_LENGTH,
    InvalidParameters,
    SearchQuery,
    date_parameter,
)
from reviewsd.data.snapshot import Snapshot, SnapshotSource
from reviewsd.mcp.protocol import invalid_params
from reviewsd.mcp.resources import FAQ_URI, Catalogue

EMBEDDED_MAX = 50
"""The most reviews one prompt embeds (the newest of those that match)."""

Content = dict[str, Any]


@frozen
class Argument:
    """
    @ivar check: the value as the prompt uses it, or L{RPCError} saying why not.
    @ivar values: what completion offers, best first.
    """

    name: str
    title: str
    description: str
    required: bool
    check: Callable[[Snapshot, str], str]
    values: Callable[[Snapshot], Iterable[str]]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "required": self.required,
        }


@frozen
class Prompt:
    """
    @ivar build: the messages' instruction text and the embedded content,
        from the checked arguments.
    """

    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    build: Callable[[Snapshot, Catalogue, Mapping[str, str]], tuple[str, list[Content]]]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [a.describe() for a in self.arguments],
        }


# --- arguments ----------------------------------------------------------------


def _text(maximum: int) -> Callable[[Snapshot, str], str]:
    def check(snapshot: Snapshot, value: str) -> str:
        if len(value) > maximum:
            raise ValueError(f"must be at most {maximum} characters")
        return value.strip()

    return check


def _day(snapshot: Snapshot, value: str) -> str:
    try:
        return date_parameter("since", value.strip()).isoformat()
    except InvalidParameters:
        raise ValueError("must be a date, YYYY-MM-DD") from None


def _technician(snapshot: Snapshot, value: str) -> str:
    names = snapshot.index.matcher.technicians_called(value.strip())
    if not names:
        known = ", ".join(t.name for t in snapshot.dataset.business.technicians)
        raise ValueError(f"names no technician; technicians: {known or 'none'}")
    return sorted(names)[0]


def _service(snapshot: Snapshot, value: str) -> str:
    ids = snapshot.index.matcher.services_called(value.strip())
    if not ids:
        known = ", ".join(s.id for s in snapshot.dataset.business.services)
        raise ValueError(f"names no service; services: {known or 'none'}")
    return sorted(ids)[0]


def _area(snapshot: Snapshot, value: str) -> str:
    wanted = fold(value.strip())
    for area in snapshot.dataset.business.service_areas:
        if fold(area) == wanted:
            return area
    known = ", ".join(snapshot.dataset.business.service_areas)
    raise ValueError(f"is not a service area; areas: {known or 'none'}")


def _aspect(snapshot: Snapshot, value: str) -> str:
    wanted = fold(value.strip())
    for aspect in snapshot.insights["aspects"]:
        if wanted in (fold(aspect["id"]), fold(aspect["label"])):
            return str(aspect["id"])
    known = ", ".join(a["id"] for a in snapshot.insights["aspects"])
    raise ValueError(f"names no aspect; aspects: {known or 'none'}")


def _dates(snapshot: Snapshot) -> Iterator[str]:
    seen: set[date] = set()
    for review in snapshot.dataset.reviews:
        if review.date not in seen:
            seen.add(review.date)
            yield review.date.isoformat()


def _technician_names(snapshot: Snapshot) -> Iterator[str]:
    for technician in snapshot.dataset.business.technicians:
        yield technician.name
        yield from technician.aliases


def _nothing(snapshot: Snapshot) -> Iterable[str]:
    return ()


SINCE = Argument(
    "since",
    "Since",
    "The first day, YYYY-MM-DD.",
    True,
    _day,
    _dates,
)
TECHNICIAN = Argument(
    "technician",
    "Technician",
    "A technician's name or alias.",
    True,
    _technician,
    _technician_names,
)
SERVICE = Argument(
    "service",
    "Service",
    "A service id or name.",
    True,
    _service,
    lambda snapshot: (s.id for s in snapshot.dataset.business.services),
)
AREA = Argument(
    "area",
    "Service area",
    "A town or area the business serves.",
    True,
    _area,
    lambda snapshot: snapshot.dataset.business.service_areas,
)
QUESTION = Argument(
    "question",
    "Question",
    "The customer's question, in their words.",
    True,
    _text(QUERY_MAX_LENGTH),
    _nothing,
)
ASPECT = Argument(
    "aspect",
    "Aspect",
    "Optional: the aspect of the work it is about (punctuality, pricing, ...).",
    False,
    _aspect,
    lambda snapshot: (a["id"] for a in snapshot.insights["aspects"]),
)


# --- content --------------------------------------------------------------------


def _embedded(uri: str, body: bytes) -> Content:
    return {
        "type": "resource",
        "resource": {
            "uri": uri,
            "mimeType": "application/json",
            "text": body.decode("utf-8"),
        },
    }


def _reviews(
    snapshot: Snapshot, catalogue: Catalogue, positions: Iterable[int]
) -> list[Content]:
    reviews = snapshot.dataset.reviews
    return [
        _embedded(
            catalogue.review_uri(reviews[p].id, snapshot), snapshot.records.record(p)
        )
        for p in positions
    ]


def _found(snapshot: Snapshot, **query: Any) -> tuple[int, list[int]]:
    return snapshot.index.search(SearchQuery(limit=EMBEDDED_MAX, **query))


def _attached(count: int, shown: int) -> str:
    if count == 0:
        return "No review matches, so say so rather than guess."
    if shown < count:
        return f"The {shown} newest of the {count} reviews are attached."
    return f"The {count} review{'s are' if count != 1 else ' is'} attached."


_FAITHFUL = (
    "Quote sparingly and faithfully: reviews are customers' own words, and "
    "only what they say is evidence."
)


def _digest(
    snapshot: Snapshot, catalogue: Catalogue, arguments: Mapping[str, str]
) -> tuple[str, list[Content]]:
    since = arguments["since"]
    count = snapshot.since_count(date.fromisoformat(since))
    shown = min(count, EMBEDDED_MAX)
    business = snapshot.dataset.business.name
    text = (
        f"Write a digest of what customers said about {business} in the {count} "
        f"verified reviews dated {since} or later: the overall mood and rating, "
        "what they praised and what they complained about, the technicians and "
        "services they name, and anything the business should act on. "
        f"{_attached(count, shown)} {_FAITHFUL}"
    )
    return text, _reviews(snapshot, catalogue, range(shown))


def _entity(snapshot: Snapshot, group: str, key: str, value: str) -> dict[str, Any]:
    for entry in snapshot.insights["entities"][group]:
        if entry.get(key) == value:
            return dict(entry)
    return {key: value, "mention_count": 0}


def _report(
    snapshot: Snapshot,
    catalogue: Catalogue,
    what: str,
    figures: dict[str, Any],
    found: tuple[int, list[int]],
) -> tuple[str, list[Content]]:
    count, positions = found
    business = snapshot.dataset.business.name
    text = (
        f"Write a short report on {what} for {business}, from its customers' "
        "reviews: how often they come up, how satisfied customers are, what is "
        "praised and what goes wrong, with dates and examples. Figures derived "
        f"from all the reviews: {json.dumps(figures, ensure_ascii=False)}. "
        f"{_attached(count, len(positions))} {_FAITHFUL}"
    )
    return text, _reviews(snapshot, catalogue, positions)


def _technician_report(
    snapshot: Snapshot, catalogue: Catalogue, arguments: Mapping[str, str]
) -> tuple[str, list[Content]]:
    name = arguments["technician"]
    figures = _entity(snapshot, "technicians", "name", name)
    found = _found(snapshot, mentions_technician=name)
    return _report(snapshot, catalogue, f"the technician {name}", figures, found)


def _service_report(
    snapshot: Snapshot, catalogue: Catalogue, arguments: Mapping[str, str]
) -> tuple[str, list[Content]]:
    service = arguments["service"]
    figures = _entity(snapshot, "services", "id", service)
    found = _found(snapshot, mentions_service=service)
    return _report(snapshot, catalogue, f"the service {service}", figures, found)


def _area_report(
    snapshot: Snapshot, catalogue: Catalogue, arguments: Mapping[str, str]
) -> tuple[str, list[Content]]:
    area = arguments["area"]
    figures = _entity(snapshot, "service_areas", "name", area)
    found = _found(snapshot, query=area)
    return _report(snapshot, catalogue, f"the work in {area}", figures, found)


_STOP = frozenset(
    "about after again also been before being could does doing done from have "
    "into just like more much some than that their them then there these they "
    "this those very what when where which while will with would your yours".split()
)


def _matching(snapshot: Snapshot, question: str, extra: Sequence[str]) -> list[int]:
    """
    The reviews that best match a question: by how many of its words
    (four letters or more) they contain, then newest first; reviews named
    in C{extra} (an aspect's examples) count as a match more.
    """
    words = {
        w
        for w in (fold(w.strip(".,;:!?\"'()")) for w in question.split())
        if len(w) >= 4 and w not in _STOP
    }
    scores: dict[int, int] = {}
    for word in sorted(words)[:12]:
        _, positions = snapshot.index.search(SearchQuery(query=word, limit=LIMIT_MAX))
        for p in positions:
            scores[p] = scores.get(p, 0) + 1
    for review_id in extra:
        for p, review in enumerate(snapshot.dataset.reviews):
            if review.id == review_id:
                scores[p] = scores.get(p, 0) + 1
    ranked = sorted(scores, key=lambda p: (-scores[p], p))
    return ranked[:10]


def _answer(
    snapshot: Snapshot, catalogue: Catalogue, arguments: Mapping[str, str]
) -> tuple[str, list[Content]]:
    question = arguments["question"]
    aspect = arguments.get("aspect")
    figures = ""
    examples: list[str] = []
    if aspect:
        entry = next(a for a in snapshot.insights["aspects"] if a["id"] == aspect)
        examples = list(entry.get("example_review_ids", []))
        figures = (
            f" What reviews say about {aspect}, in figures: "
            f"{json.dumps(entry, ensure_ascii=False)}."
        )
    positions = _matching(snapshot, question, examples)
    business = snapshot.dataset.business.name
    text = (
        f"A prospective customer of {business} asks: {json.dumps(question)}. "
        "Answer in a few sentences from the attached FAQ and reviews only: give "
        "the figures, quote a review or two, and say plainly when the reviews do "
        f"not answer the question.{figures} {_FAITHFUL}"
    )
    faq = _embedded(FAQ_URI, to_json({"faq": snapshot.insights["faq"]}))
    return text, [faq, *_reviews(snapshot, catalogue, positions)]


PROMPTS = (
    Prompt(
        "digest_since",
        "Digest of reviews since a date",
        "What customers said since a given day: mood, praise, complaints, names.",
        (SINCE,),
        _digest,
    ),
    Prompt(
        "technician_report",
        "Report on a technician",
        "How customers rate one technician, with their reviews.",
        (TECHNICIAN,),
        _technician_report,
    ),
    Prompt(
        "service_report",
        "Report on a service",
        "How customers rate one service, with their reviews.",
        (SERVICE,),
        _service_report,
    ),
    Prompt(
        "service_area_report",
        "Report on a service area",
        "What customers in one town or area say, with their reviews.",
        (AREA,),
        _area_report,
    ),
    Prompt(
        "answer_question",
        "Answer a customer's question",
        "An answer to a prospective customer's question, grounded in the FAQ "
        "and the reviews that match it.",
        (QUESTION, ASPECT),
        _answer,
    ),
)


def _checked(prompt: Prompt, snapshot: Snapshot, arguments: Any) -> dict[str, str]:
    """The arguments as the prompt uses them, or -32602 naming each problem."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid_params("Invalid arguments: arguments must be an object.")
    problems: list[str] = []
    known = {a.name for a in prompt.arguments}
    for name in sorted(set(arguments) - known):
        problems.append(
            f"{name[:NAME_MAX_LENGTH]!r} is not an argument of {prompt.name}"
        )
    checked: dict[str, str] = {}
    for argument in prompt.arguments:
        value = arguments.get(argument.name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{argument.name} must be a string")
        elif value is None or not value.strip():
            if argument.required:
                problems.append(f"{argument.name} is required")
        else:
            try:
                checked[argument.name] = argument.check(snapshot, value)
            except ValueError as e:
                problems.append(f"{argument.name} {e}")
    if problems:
        raise invalid_params("Invalid arguments: " + "; ".join(problems) + ".")
    return checked


class Prompts:
    """The prompts, made from the snapshot C{source} holds now."""

    def __init__(
        self,
        source: SnapshotSource,
        catalogue: Catalogue,
        prompts: tuple[Prompt, ...] = PROMPTS,
    ) -> None:
        self._source = source
        self._catalogue = catalogue
        self._prompts = {p.name: p for p in prompts}
        self.listing = [p.describe() for p in prompts]

    def __iter__(self) -> Iterator[Prompt]:
        return iter(self._prompts.values())

    def find(self, name: Any) -> Prompt:
        prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise invalid_params(
                f"Unknown prompt. Prompts: {', '.join(self._prompts)}.",
                {"prompts": list(self._prompts)},
            )
        return prompt

    def get(self, name: Any, arguments: Any) -> dict[str, Any]:
        """The C{GetPromptResult} of a prompt."""
        prompt = self.find(name)
        snapshot = self._source.snapshot
        checked = _checked(prompt, snapshot, arguments)
        text, contents = prompt.build(snapshot, self._catalogue, checked)
        messages = [{"role": "user", "content": {"type": "text", "text": text}}]
        messages += [{"role": "user", "content": c} for c in contents]
        return {"description": prompt.description, "messages": messages}

    def values(self, name: Any, argument: str) -> Iterable[str]:
        """What an argument of a prompt may be, for completion."""
        prompt = self.find(name)
        for each in prompt.arguments:
            if each.name == argument:
                return each.values(self._source.snapshot)
        raise invalid_params(
            f"{prompt.name} has no argument {argument[:NAME_MAX_LENGTH]!r}; "
            f"arguments: {', '.join(a.name for a in prompt.arguments)}."
        )
