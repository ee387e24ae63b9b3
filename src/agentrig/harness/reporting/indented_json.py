"""Indented JSON with sorted keys, the text ``json.dumps`` gives, written several times faster.

With ``indent`` the standard library encodes in Python through nested generators, every piece
passed up through each level it is nested in; the JSON report of a suite is mostly such
pieces. This writes the same text straight into one list (strings through the standard
library's own C escaper). Anything but plain JSON data (keys that are not text, other types, a
value that contains itself) goes to ``json.dumps``, which writes or refuses it as it always did.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C escaper where the interpreter has it

__all__ = ["dumps_indented"]

_INFINITY = float("inf")


class _NotPlain(Exception):
    """A value this writer leaves to ``json.dumps``."""


def dumps_indented(value: object, indent: int) -> str:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent)``."""
    parts: list[str] = []
    try:
        _write(value, parts, "\n", " " * indent)
    except (_NotPlain, RecursionError, TypeError):  # TypeError: keys sorted() cannot order
        return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent)
    return "".join(parts)


def _write(value: object, parts: list[str], newline: str, step: str) -> None:
    kind = type(value)
    if kind is str:
        parts.append(encode_basestring(value))  # type: ignore[arg-type]
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append(_float(value))  # type: ignore[arg-type]
    elif kind is dict:
        _write_dict(value, parts, newline, step)  # type: ignore[arg-type]
    elif kind is list or kind is tuple:
        _write_list(value, parts, newline, step)  # type: ignore[arg-type]
    else:
        raise _NotPlain


def _write_dict(value: dict[object, object], parts: list[str], newline: str, step: str) -> None:
    if not value:
        parts.append("{}")
        return
    inner = newline + step
    separator = "{" + inner
    for key in sorted(value):  # type: ignore[type-var]
        if type(key) is not str:
            raise _NotPlain
        parts.append(separator)
        parts.append(encode_basestring(key))
        parts.append(": ")
        _write(value[key], parts, inner, step)
        separator = "," + inner
    parts.append(newline + "}")


def _write_list(
    value: list[object] | tuple[object, ...], parts: list[str], newline: str, step: str
) -> None:
    if not value:
        parts.append("[]")
        return
    inner = newline + step
    separator = "[" + inner
    for item in value:
        parts.append(separator)
        _write(item, parts, inner, step)
        separator = "," + inner
    parts.append(newline + "]")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)
