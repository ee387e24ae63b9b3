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


def captured(
    number: int, method: str, path: str, headers: Mapping[str, str], content: bytes, status: int
) -> CapturedRequest:
    """A ``CapturedRequest`` whose headers are copied, names in lower case (``headers`` may be
    an HTTP library's own mapping, which lives no longer than the request)."""
    copied = {name.lower(): value for name, value in headers.items()}
    return CapturedRequest(number, method, path, copied, content, status)
