"""Fixtures for the wire-format tests: an in-process server that plays one answer in a format to
the official SDKs, and the real recorded sessions to hold the formats against."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.wire.base import WireAnswer, WireFormat, WireRequest

from ..sdk_agents import genai_ssl_options

httpx2 = pytest.importorskip("httpx2")

MODEL = "model-test"
RESPONSE_ID = "resp-test-1"


@dataclass
class Played:
    """An ``httpx2.MockTransport`` handler: every request is read with ``format`` and answered
    with ``answer`` in that format (streamed when the request asks for it)."""

    format: WireFormat
    answer: WireAnswer
    requests: list[WireRequest] = field(default_factory=list)

    def __call__(self, request: Any) -> Any:
        parsed = self.format.read(request.url.raw_path.decode(), request.content)
        self.requests.append(parsed)
        if parsed.stream:
            chunks = self.format.stream_chunks(
                self.answer,
                model=MODEL,
                response_id=RESPONSE_ID,
                include_usage=parsed.include_usage,
            )
            return event_stream(b"".join(chunks))
        return httpx2.Response(
            200, json=self.format.response_body(self.answer, model=MODEL, response_id=RESPONSE_ID)
        )


def event_stream(content: bytes) -> Any:
    """A 200 answer carrying server-sent events."""
    return httpx2.Response(200, content=content, headers={"content-type": "text/event-stream"})


def json_answer(body: object, status: int = 200) -> Any:
    """An answer carrying ``body`` as JSON."""
    return httpx2.Response(status, json=body)


def openai_client(handler: Callable[[Any], Any]) -> Any:
    """An ``openai.OpenAI`` client whose requests ``handler`` answers in process."""
    openai = pytest.importorskip("openai")
    return openai.OpenAI(
        api_key="k",
        base_url="http://test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def anthropic_client(handler: Callable[[Any], Any]) -> Any:
    """An ``anthropic.Anthropic`` client whose requests ``handler`` answers in process."""
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(
        api_key="k",
        base_url="http://test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


@dataclass(frozen=True)
class Recorded:
    """One real request and its answer, bodies decoded (gzip undone)."""

    request_body: bytes
    status: int
    response_body: bytes
    streamed: bool

    def replay(self, request: Any) -> Any:
        """An ``httpx2`` handler answering with the recorded answer."""
        if self.streamed:
            return event_stream(self.response_body)
        return httpx2.Response(
            self.status,
            content=self.response_body,
            headers={"content-type": "application/json"},
        )

    def request_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.request_body)
        return data


def _decoded(body: object) -> bytes:
    raw = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else b""
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@pytest.fixture
def recorded(real_cassette: Callable[[str], Path]) -> Callable[[str], list[Recorded]]:
    """The interactions of a shared real cassette (the test is skipped when it is absent)."""
    from agentrig.harness.cassettes.http import deserialize

    def load(relative: str) -> list[Recorded]:
        data = deserialize(real_cassette(relative).read_text())
        found: list[Recorded] = []
        for interaction in data["interactions"]:
            response = interaction["response"]
            headers = {key.lower(): value for key, value in (response["headers"] or {}).items()}
            kind = " ".join(headers.get("content-type") or [])
            found.append(
                Recorded(
                    request_body=_decoded(interaction["request"]["body"]),
                    status=response["status"]["code"],
                    response_body=_decoded(response["body"]["string"]),
                    streamed="text/event-stream" in kind,
                )
            )
        return found

    return load


def async_openai_client(handler: Callable[[Any], Any]) -> Any:
    """An ``openai.AsyncOpenAI`` client whose requests ``handler`` answers in process."""
    openai = pytest.importorskip("openai")
    return openai.AsyncOpenAI(
        api_key="k",
        base_url="http://test/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )


def async_anthropic_client(handler: Callable[[Any], Any]) -> Any:
    """An ``anthropic.AsyncAnthropic`` client whose requests ``handler`` answers in process."""
    anthropic = pytest.importorskip("anthropic")
    return anthropic.AsyncAnthropic(
        api_key="k",
        base_url="http://test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )


def gemini_client(handler: Callable[[Any], Any], *, asynchronous: bool = False) -> Any:
    """A ``google.genai.Client`` whose requests ``handler`` answers in process (it never
    retries: ``HttpOptions`` without ``retry_options``)."""
    genai = pytest.importorskip("google.genai")
    transport = httpx2.MockTransport(handler)
    client = {"httpx_async_client": httpx2.AsyncClient(transport=transport)} if asynchronous else {}
    options = genai.types.HttpOptions(
        base_url="http://test",
        httpx_client=httpx2.Client(transport=transport),
        **client,
        **genai_ssl_options(),
    )
    return genai.Client(api_key="k", http_options=options)


class Wire:
    """The helpers above, handed to tests by the ``wire`` fixture."""

    model = MODEL
    response_id = RESPONSE_ID
    Played = Played
    openai = staticmethod(openai_client)
    anthropic = staticmethod(anthropic_client)
    event_stream = staticmethod(event_stream)
    json_answer = staticmethod(json_answer)
    async_openai = staticmethod(async_openai_client)
    async_anthropic = staticmethod(async_anthropic_client)
    gemini = staticmethod(gemini_client)


@pytest.fixture
def wire() -> Wire:
    """Clients of the official SDKs answered in process, and the ``Played`` handler."""
    return Wire()
