"""The requests an agent sent, kept as they came, for a test's own assertions on what the
endpoint does not check (``temperature``, ``tool_choice``, ``max_tokens``, a header...)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CapturedRequest:
    """One request of a session, as it crossed the wire, and the status it was answered with."""

    number: int
    """Its place among the session's requests (1-based), as failures number them."""
    method: str
    path: str
    headers: Mapping[str, str]
    """Every header, names in lower case."""
    content: bytes
    """The body's bytes."""
    status: int
    """The HTTP status of the endpoint's reply (200, a scripted error, 400 for a bad request)."""

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` if it is not JSON)."""
        return json.loads(self.content)

    @property
    def body(self) -> dict[str, Any]:
        """The body as a JSON object (empty when it is not one): ``body["temperature"]``."""
        try:
            parsed = self.json()
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}


@dataclass(frozen=True, slots=True)
class Kept:
    """A request as the endpoint keeps it while it answers: what a ``CapturedRequest`` is made
    of, its headers as they came (the HTTP library's own mapping, or the endpoint's dict). The
    copy a test reads is made by ``captured`` when it asks (``requests()``), not on every call."""

    method: str
    path: str
    headers: Mapping[str, str]
    content: bytes
    status: int


def captured(number: int, kept: Kept) -> CapturedRequest:
    """The ``CapturedRequest`` of ``kept``, request ``number`` of its session, its headers
    copied with names in lower case."""
    copied = {name.lower(): value for name, value in kept.headers.items()}
    return CapturedRequest(number, kept.method, kept.path, copied, kept.content, kept.status)
