"""
C{completion/complete}: what a prompt's argument or the review template's
C{id} may be, matching what the user has typed so far. Values that start
with it come first, then values that contain it, in the data's order
(technicians as listed, reviews newest first), at most 100.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reviewsd.data.mentions import fold
from reviewsd.data.search import NAME_MAX_LENGTH
from reviewsd.data.snapshot import SnapshotSource
from reviewsd.mcp.prompts import Prompts
from reviewsd.mcp.protocol import invalid_params
from reviewsd.mcp.resources import Catalogue

MAX_VALUES = 100
"""The protocol's limit on the values of one answer."""


def ranked(candidates: Iterable[str], typed: str) -> tuple[list[str], int]:
    """The candidates matching C{typed}, best first, and how many match."""
    wanted = fold(typed)
    starting: list[str] = []
    containing: list[str] = []
    seen: set[str] = set()
    for value in candidates:
        if value in seen:
            continue
        seen.add(value)
        folded = fold(value)
        if folded.startswith(wanted):
            starting.append(value)
        elif wanted in folded:
            containing.append(value)
    matches = starting + containing
    return matches[:MAX_VALUES], len(matches)


class Completion:
    def __init__(
        self, source: SnapshotSource, prompts: Prompts, catalogue: Catalogue
    ) -> None:
        self._source = source
        self._prompts = prompts
        self._catalogue = catalogue

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        """The C{CompleteResult} for C{params}, or -32602 saying what is wrong."""
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(argument, dict):
            raise invalid_params("completion/complete needs params.argument.")
        name, typed = argument.get("name"), argument.get("value")
        if not isinstance(name, str) or not isinstance(typed, str):
            raise invalid_params("argument.name and argument.value must be strings.")
        if len(typed) > NAME_MAX_LENGTH:
            typed = typed[:NAME_MAX_LENGTH]
        if not isinstance(ref, dict):
            raise invalid_params("completion/complete needs params.ref.")
        if ref.get("type") == "ref/prompt":
            candidates = self._prompts.values(ref.get("name"), name)
        elif ref.get("type") == "ref/resource":
            candidates = self._template_values(ref.get("uri"), name)
        else:
            raise invalid_params('ref.type must be "ref/prompt" or "ref/resource".')
        values, total = ranked(candidates, typed)
        return {
            "completion": {
                "values": values,
                "total": total,
                "hasMore": total > len(values),
            }
        }

    def _template_values(self, uri: Any, name: str) -> Iterable[str]:
        template = self._catalogue.template
        if uri != template:
            raise invalid_params(
                f"The one resource template is {template}.",
                {"uriTemplates": [template]},
            )
        if name != "id":
            raise invalid_params("The review template's one variable is id.")
        return (r.id for r in self._source.snapshot.dataset.reviews)
