"""The mock tools on PyPI that bench/endpoint.py measures beside the scenario endpoint, each on
the same agent turn. Imported only by endpoint.py.

A peer that is not installed raises ``ImportError`` from its ``load_*`` function; one that
cannot serve the workload raises ``CannotServe`` (from its probe call) with the reason.

- llm-mock replays recorded interactions with respx: every request to ``api.openai.com`` or
  ``api.anthropic.com`` is hashed (model, messages, temperature) and answered from a fixture file
  it reads on each request. Its respx router mocks httpx's ``httpcore`` by default; the SDKs send
  through httpx2, which respx reaches through pytest-httpx2's ``httpcore2`` mocker, so respx's
  default mocker is switched to that one while llm-mock's own context manager is in use.
- mockllm is a FastAPI server answering text looked up by the last user message (a YAML file).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from _endpoint_workload import USER, Captured, LoopbackServer, Sdk


class CannotServe(Exception):
    """The peer runs, but cannot answer the workload (the message says why)."""


Peer = tuple[Any, Callable[[], contextlib.AbstractContextManager[None]], Callable[[], None]]
"""A peer ready to measure: (SDK client, context each sample runs in, cleanup)."""


# --- llm-mock: respx replay of a fixture ----------------------------------------------------


def load_llm_mock(sdk: Sdk, captured: Captured, folder: Path) -> Peer:
    """llm-mock in ``replay`` mode, its fixture holding the endpoint's own answers."""
    import pytest_httpx2._plugin  # noqa: F401  (registers respx's httpcore2 mocker)
    import respx.mocks
    from llm_mock import llm_mock
    from llm_mock.fixture_store import Fixture, Interaction
    from llm_mock.matcher import DEFAULT_MATCH_ON, make_hash

    recorded = datetime.datetime.now(datetime.UTC).isoformat()
    interactions = [
        Interaction(
            hash=make_hash(request, DEFAULT_MATCH_ON),
            request=request,
            response=json.loads(body),
            recorded_at=recorded,
        )
        for request, body in zip(captured.requests, captured.bodies, strict=True)
    ]
    fixture = folder / f"llm-mock-{sdk.name}.json"
    fixture.write_text(
        json.dumps(Fixture(provider=sdk.name, interactions=interactions).model_dump()),
        encoding="utf-8",
    )

    @contextlib.contextmanager
    def replaying() -> Iterator[None]:
        with (
            mock.patch.object(respx.mocks, "DEFAULT_MOCKER", "httpcore2"),
            llm_mock(mode="replay", fixture=str(fixture), provider=sdk.name),  # type: ignore[arg-type]
        ):
            yield

    client = sdk.client(None, None)  # the provider's own host, which llm-mock captures
    with replaying():
        probe(sdk, client, "llm-mock")
    return client, replaying, lambda: None


# --- mockllm: a FastAPI server ----------------------------------------------------------------


def load_mockllm(sdk: Sdk, final_text: str, folder: Path) -> Peer:
    """mockllm's FastAPI app on loopback (uvicorn, as its ``mockllm start`` runs it), answering
    the workload's user message with the final text."""
    responses = folder / "mockllm-responses.yml"
    responses.write_text(json.dumps({"responses": {USER: final_text}}), encoding="utf-8")
    os.environ["MOCKLLM_RESPONSES_FILE"] = str(responses)
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        from mockllm.server import app
    finally:  # importing it sets up INFO logging of every request for the whole process
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
    server = LoopbackServer(app, lifespan="on").start()
    client = sdk.client(server.base_url + sdk.url_suffix, None)
    try:
        probe(sdk, client, "mockllm")
    except BaseException:
        server.stop()
        raise
    return client, contextlib.nullcontext, server.stop


def probe(sdk: Sdk, client: Any, name: str) -> None:
    """Run the turn once; ``CannotServe`` with the reason if the peer cannot answer it."""
    try:
        sdk.check(sdk.turn(client, "probe"))
    except Exception as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CannotServe(f"{name} cannot serve the workload: {reason}") from error
