"""The call shorthand of scenario files: ``get_weather(city=Paris, units=metric)``.

:func:`read_call` reads a call written this way into the tool's name and arguments (each value
read as YAML in flow context), :func:`write_call` writes one back. The scenario model accepts the
shorthand wherever a tool call is expected (``ToolCallSpec``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentrig.errors import InvalidInputError
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.yaml_source import (
    load_yaml_text,
    not_json_data,
    plain_scalar_value,
)

__all__ = ["CALL_SHORTHAND_PATTERN", "read_call", "write_call"]

CALL_SHORTHAND_PATTERN = r"^\s*[A-Za-z_][A-Za-z0-9_-]{0,63}\s*\(.*\)\s*$"
"""A JSON Schema pattern for a call written in the shorthand."""

_CALL = re.compile(r"\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]{0,63})\s*\((?P<args>.*)\)\s*", re.DOTALL)
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(
    r"""(?<![^\s=,\[{:(])(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')"""  # a quoted scalar
    r"""|[()\[\]{},]|[^()\[\]{},"']+|["']""",
    re.DOTALL,
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\- ]*[A-Za-z0-9_]|[A-Za-z_]")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,63}")
"""A value that YAML reads as one plain scalar, the same in flow context as alone."""


def read_call(text: str) -> tuple[str, dict[str, Any]]:
    """Read ``name(arg=value, ...)`` or ``name()`` as the tool's name and its arguments; each
    value is read as a YAML flow value.

    ``city=Paris`` gives ``"Paris"``, ``n=3`` gives ``3``, ``tags=[a, b]`` a list; quote a
    string that holds commas or brackets: ``q="a, b"``. Raises
    :class:`~agentrig.errors.InvalidInputError` naming what is wrong.
    """
    known = _READ.get(text)
    if known is not None:  # a call a file repeats (a model's call, then its expectation)
        return known[0], dict(known[1])
    name, args = _read_call(text)
    if len(_READ) < _READ_MAX and all(type(value) in _ATOMS for value in args.values()):
        _READ[text] = (name, tuple(args.items()))  # only immutable values: copies stay apart
    return name, args


_READ: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {}
"""Calls already read whose values are all text, numbers, booleans or null."""
_READ_MAX = 20_000
_ATOMS = frozenset({str, int, float, bool, type(None)})


def _read_call(text: str) -> tuple[str, dict[str, Any]]:
    match = _CALL.fullmatch(text)
    if match is None:
        raise _shorthand_error(text, _shape_problem(text))
    args: dict[str, Any] = {}
    for part in _split_args(match["args"], text):
        name, value = _parse_arg(part, text)
        if name in args:
            raise _shorthand_error(text, f"argument {name!r} is given twice")
        problem = not_json_data(value)
        if problem is not None:
            raise _shorthand_error(text, f"argument {name!r}: {problem}")
        args[name] = value
    return match["name"], args


def write_call(name: str, args: Mapping[str, Any]) -> str:
    """``name(arg=value, ...)``: a call in the shorthand that :func:`read_call` reads back."""
    return f"{name}({', '.join(f'{key}={_render(value)}' for key, value in args.items())})"


def _shape_problem(text: str) -> str:
    if "(" in text and not text.rstrip().endswith(")"):
        return "it must end with ')'"
    return "write name(arg=value, ...) or name()"


def _split_args(body: str, text: str) -> list[str]:
    """Split at top-level commas, keeping quoted strings and brackets whole."""
    if not body.strip():
        return []
    parts, current, depth = [], "", 0
    for token in (match.group() for match in _TOKEN.finditer(body)):
        depth += (token in _OPEN) - (token in _CLOSE)
        if depth < 0:
            raise _shorthand_error(text, f"unbalanced {token!r}")
        if token == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += token
    if depth:
        raise _shorthand_error(text, "a bracket is not closed")
    return [*parts, current]


def _parse_arg(part: str, text: str) -> tuple[str, Any]:
    name, equals, value = (piece.strip() for piece in part.partition("="))
    if not name and not equals:
        raise _shorthand_error(text, "empty argument (a stray comma?)")
    if not equals:
        raise _shorthand_error(text, f"argument {name!r} has no name: write name=value")
    if not _ARG_NAME.fullmatch(name):
        raise _shorthand_error(text, f"{name!r} is not a valid argument name")
    if not value:
        raise _shorthand_error(
            text, f"argument {name!r} has no value: write {name}=null or {name}=''"
        )
    return name, _parse_value(value, text)


def _parse_value(value: str, text: str) -> Any:
    """Read a value as YAML in flow context; a plain scalar with colons (a URL) also works."""
    if _WORD.fullmatch(value):  # most values (k12, 3, true): no parser needed
        simple = plain_scalar_value(value)
        if simple is not None:
            return simple[0]
    try:
        items = load_yaml_text(f"[{value}]").data
    except ScenarioFileError as exc:
        scalar = _plain_scalar(value)
        if scalar is not None:
            return scalar
        raise _shorthand_error(text, f"cannot read the value {value!r}: {exc.reason}") from None
    if len(items) != 1:
        raise _shorthand_error(text, f"{value!r} is more than one value: quote it")
    return items[0]


def _plain_scalar(value: str) -> str | int | float | None:
    """The value read as one block-context scalar, or None when it is not one."""
    if "#" in value:
        return None
    try:
        parsed = load_yaml_text(value).data
    except ScenarioFileError:
        return None
    return parsed if isinstance(parsed, str | int | float) else None


def _shorthand_error(text: str, reason: str) -> InvalidInputError:
    return InvalidInputError("call shorthand", [("", f"malformed call {text!r}: {reason}")])


def _render(value: Any) -> str:
    """A YAML flow rendering of a value that the shorthand parser reads back."""
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and _parse_value(value, value) == value
        return value if plain else json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_render(str(k))}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_render(item) for item in value) + "]"
    if isinstance(value, float) and not isinstance(value, bool):
        return _render_float(value)
    return json.dumps(value, default=str)


def _render_float(value: float) -> str:
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
