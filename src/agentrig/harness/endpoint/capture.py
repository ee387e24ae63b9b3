"""The requests an agent sent, kept as they came, for a test's own assertions on what the
endpoint does not check (``temperature``, ``tool_choice``, ``max_tokens``, a header...)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast


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


FIELDS = 5
"""What ``keep`` adds to a session's record of its requests, per request."""


def keep(
    record: list[object],
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
    status: int,
) -> None:
    """Add a request to ``record``, a session's flat list of what its requests were made of
    (``FIELDS`` items each: method, path, headers, body, status). Its headers go as one text
    (the HTTP library's raw bytes when it has them: they need no decoding); nothing is kept as
    an object of its own, so a session's record is one list the garbage collector visits, not
    one object per request."""
    raw = getattr(headers, "raw", None)
    if isinstance(raw, list):  # httpx's, httpx2's and starlette's headers
        kept: bytes | str = b"\r\n".join([name + b": " + value for name, value in raw])
    else:
        kept = "\r\n".join(f"{name}: {value}" for name, value in headers.items())
    record.extend((method, path, kept, body, status))


def captured(record: list[object]) -> list[CapturedRequest]:
    """The requests of ``record`` (see ``keep``) in order, their headers' names in lower
    case."""
    found = []
    for start in range(0, len(record), FIELDS):
        method, path, headers, body, status = record[start : start + FIELDS]
        text = _text(headers) if isinstance(headers, bytes) else str(headers)
        lines = (line.partition(": ") for line in text.split("\r\n") if line)
        copied = {name.lower(): value for name, _, value in lines}
        number = start // FIELDS + 1
        found.append(
            CapturedRequest(
                number,
                cast(str, method),
                cast(str, path),
                copied,
                cast(bytes, body),
                cast(int, status),
            )
        )
    return found


def _text(raw: bytes) -> str:
    """Header bytes as text: UTF-8, else Latin-1 (as HTTP libraries decode them)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")
