"""Secret scrubbing: remove credentials from what a cassette stores.

A :class:`Scrubber` replaces every text matching one of its ``patterns`` with its placeholder,
and the whole value of every mapping entry whose key matches one of its ``keys`` (a search,
case-insensitive); a request's JSON Schemas (tool parameters, response format) get the patterns
only, since their keys are parameter names. Recording scrubs before writing; replay scrubs the live request the same way
before matching, so a scrubbed cassette still matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from agentrig.errors import InvalidInputError
from agentrig.harness.cassettes.model import RecordedRequest, to_data

__all__ = ["DEFAULT_KEYS", "DEFAULT_PATTERNS", "PLACEHOLDER", "Scrubber"]

PLACEHOLDER = "<scrubbed>"

DEFAULT_PATTERNS: tuple[str, ...] = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic keys
    r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{16,}",  # OpenAI keys
    r"(?i)bearer\s+[A-Za-z0-9._~+/\-]+=*",  # bearer tokens
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
)
"""Texts that look like credentials: OpenAI and Anthropic keys, bearer tokens, AWS key ids."""

DEFAULT_KEYS: tuple[str, ...] = (
    r"(?i)(?:^|[_\-.])(?:api[_\-]?key|apikey|authorization|password|passwd|secret|token)$",
)
"""Mapping keys whose values are secrets: ``api_key``, ``authorization``, ``password``,
``client_secret``, ``access_token``... (``max_tokens`` and ``input_tokens`` are not)."""

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Scrubber:
    """Replaces secrets in recorded data with ``placeholder``."""

    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    keys: tuple[str, ...] = DEFAULT_KEYS
    placeholder: str = PLACEHOLDER
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _keys: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple(self.patterns))
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "_compiled", _compile("patterns", self.patterns))
        object.__setattr__(self, "_keys", _compile("keys", self.keys))

    @classmethod
    def extended(
        cls,
        *,
        patterns: Iterable[str] = (),
        keys: Iterable[str] = (),
        placeholder: str = PLACEHOLDER,
    ) -> Scrubber:
        """The default scrubber plus ``patterns`` and ``keys``."""
        return cls(
            patterns=(*DEFAULT_PATTERNS, *patterns),
            keys=(*DEFAULT_KEYS, *keys),
            placeholder=placeholder,
        )

    @classmethod
    def disabled(cls) -> Scrubber:
        """A scrubber that changes nothing."""
        return cls(patterns=(), keys=())

    def scrub(self, value: Any) -> Any:
        """``value`` (JSON-like data) with secrets replaced."""
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            return {
                key: self.placeholder if self._secret_key(key) else self.scrub(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.scrub(item) for item in value]
        return value

    def scrub_model(self, model: M) -> M:
        """A copy of a cassette model with secrets replaced (itself when it holds none).

        In a request, the JSON Schemas (tool parameters, the response format) get the text
        patterns only: their keys are parameter names (``password``, ``api_key``), not secrets,
        and replacing them would lose the schema.
        """
        if not self._compiled and not self._keys:
            return model
        data = to_data(model)
        cleaned = self._request(data) if isinstance(model, RecordedRequest) else self.scrub(data)
        return model if cleaned == data else type(model).model_validate(cleaned)

    def _request(self, data: dict[str, Any]) -> dict[str, Any]:
        cleaned: dict[str, Any] = {}
        for key, item in data.items():
            if key == "tools":
                cleaned[key] = [self._tool(tool) for tool in item]
            elif key == "response_format":
                cleaned[key] = self._texts(item)
            else:
                cleaned[key] = self.scrub(item)
        return cleaned

    def _tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {
            key: self._texts(item) if key == "parameters" else self.scrub(item)
            for key, item in tool.items()
        }

    def _texts(self, value: Any) -> Any:
        """``value`` with the text patterns applied, keys left alone."""
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            return {key: self._texts(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._texts(item) for item in value]
        return value

    def _text(self, text: str) -> str:
        for pattern in self._compiled:
            text = pattern.sub(self.placeholder, text)
        return text

    def _secret_key(self, key: str) -> bool:
        return any(pattern.search(key) for pattern in self._keys)


def _compile(name: str, patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError) as error:
            raise InvalidInputError(
                f"scrubber {name}", [("", f"{pattern!r} is not a regular expression: {error}")]
            ) from None
    return tuple(compiled)
