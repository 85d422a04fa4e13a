"""
Tool arguments checked against the tool's published C{inputSchema}, as JSON
Schema (2020-12, C{format} asserted) reads it, so that what a client's
validator accepts is what the server accepts: C{"3"} is not an integer,
C{5.0} is.

Only the part of the vocabulary the tools' schemas use is implemented;
L{check_schema} holds every input schema to that part, so a schema cannot
say more than is checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reviewsd.data.model import describe
from reviewsd.data.search import InvalidParameters, Issue, date_parameter

#: The keywords a property's schema may use: assertions checked here, and
#: annotations (C{default}, C{description}) that check nothing.
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "format",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "default",
        "description",
    }
)
FORMATS = frozenset({"date"})
_TOP = frozenset({"type", "properties", "required"})

#: A string with something in it besides white space.
NOT_BLANK = r"\S"
_PATTERN_ISSUES = {NOT_BLANK: ("empty", "must not be empty")}

_TYPE_WORDS = {
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}

_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def check_schema(schema: Mapping[str, Any]) -> None:
    """
    Refuse (C{ValueError}) an input schema that uses anything L{check_arguments}
    does not check: an object of flat properties, each with L{KEYWORDS} only.
    """
    if set(schema) - _TOP or schema.get("type") != "object":
        raise ValueError(f"an input schema is a flat object schema: {schema!r}")
    properties = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in properties:
            raise ValueError(f"required {name!r} is not a property")
    for name, prop in properties.items():
        unknown = set(prop) - KEYWORDS
        if unknown:
            raise ValueError(f"{name}: unchecked keywords {sorted(unknown)}")
        if "type" in prop and prop["type"] not in _TYPE_WORDS:
            raise ValueError(f"{name}: unknown type {prop['type']!r}")
        if "format" in prop and prop["format"] not in FORMATS:
            raise ValueError(f"{name}: unchecked format {prop['format']!r}")
        if "pattern" in prop:
            re.compile(prop["pattern"])


def _is(value: Any, kind: str) -> bool:
    """JSON Schema's types: a boolean is no number, 5.0 is an integer."""
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, (int, float))
    return isinstance(value, _PYTHON_TYPES[kind])


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _bad(name: str, code: str, message: str, **details: Any) -> InvalidParameters:
    return InvalidParameters(
        [Issue((name,), code, f"{name} {message}", tuple(details.items()))]
    )


def _check(name: str, schema: Mapping[str, Any], value: Any) -> Any:
    """One argument: the value (an integral float as an int), or the issue."""
    kind = schema.get("type")
    if kind is not None and not _is(value, kind):
        raise _bad(
            name,
            "invalid_type",
            f"must be {_TYPE_WORDS[kind]}, got {describe(value)}",
            expected=kind,
        )
    if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
        choices = ", ".join(map(str, schema["enum"]))
        raise _bad(name, "invalid_value", f"must be one of {choices}")
    if kind == "integer" and isinstance(value, float):
        value = int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(name, schema, value)
    if isinstance(value, str):
        _check_string(name, schema, value)
    return value


def _check_number(name: str, schema: Mapping[str, Any], value: float) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and value < low:
        raise _bad(
            name, "too_small", f"must be at least {low}, got {value}", minimum=low
        )
    if high is not None and value > high:
        raise _bad(
            name, "too_big", f"must be at most {high}, got {value}", maximum=high
        )


def _check_string(name: str, schema: Mapping[str, Any], value: str) -> None:
    if schema.get("format") == "date":
        date_parameter(name, value)  # its issue is the search's own
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if shortest is not None and len(value) < shortest:
        if not value:
            raise _bad(name, "empty", "must not be empty")
        raise _bad(
            name,
            "too_short",
            f"must be at least {shortest} characters",
            minimum=shortest,
        )
    if longest is not None and len(value) > longest:
        raise _bad(
            name, "too_long", f"must be at most {longest} characters", maximum=longest
        )
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        code, message = _PATTERN_ISSUES.get(
            pattern, ("invalid_format", f"must match {pattern}")
        )
        raise _bad(name, code, message)


def check_arguments(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """
    The arguments of a call, checked against the tool's input schema (from
    L{check_schema}); names it does not declare pass as they are. Integral
    numbers written C{5.0} come back as C{5}.

    @raise InvalidParameters: one issue per bad or missing argument.
    """
    checked = dict(arguments)
    issues: list[Issue] = []
    required = schema.get("required", ())
    for name, prop in schema.get("properties", {}).items():
        if name not in arguments:
            if name in required:
                issues.append(Issue((name,), "required", f"{name} is required"))
            continue
        try:
            checked[name] = _check(name, prop, arguments[name])
        except InvalidParameters as e:
            issues += e.issues
    if issues:
        raise InvalidParameters(issues)
    return checked
