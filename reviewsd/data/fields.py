"""
The error every check of a raw JSON value raises, and the words it uses.

Its own module so that the checks of the records (L{reviewsd.data.model})
and of the parts they hold (L{reviewsd.data.hours}) share them without
importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class InvalidField(ValueError):
    """
    A value that cannot be published.

    @ivar field: dotted path of the field (C{owner_reply.date},
        C{services[2].id}), or C{None} when the whole record is wrong.
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def within(self, parent: str) -> InvalidField:
        """The same problem, seen from the record that holds C{parent}."""
        field = parent if self.field is None else f"{parent}.{self.field}"
        return InvalidField(field, self.message)


def describe(value: object) -> str:
    """A JSON value in a few words, for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    return "a JSON array" if isinstance(value, list) else "a JSON object"


def string(value: object, field: str, *, empty_ok: bool = True) -> str:
    """C{value}, if it is a string that UTF-8 can carry."""
    if not isinstance(value, str):
        raise InvalidField(field, f"must be a string, got {describe(value)}")
    if not empty_ok and not value.strip():
        raise InvalidField(field, "must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidField(
            field, "holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)"
        ) from None
    return value


def attempt(problems: list[InvalidField], check: Callable[..., Any], *args: Any) -> Any:
    """
    C{check(*args)}, or C{None} with its problem added to C{problems}: how
    a check goes on past a problem, to name every one.
    """
    try:
        return check(*args)
    except InvalidField as e:
        problems.append(e)
        return None
