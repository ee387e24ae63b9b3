"""The live endpoint's uvicorn server: it serves as uvicorn does, and a stop ends it, whatever
its connections are doing (an idle keep-alive one is closed, a reply still running is cancelled
after the grace period)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

uvicorn = pytest.importorskip("uvicorn")

from agentrig.harness.endpoint.prompt_server import PromptServer  # noqa: E402
from agentrig.harness.endpoint.server import listening_socket  # noqa: E402

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


@contextmanager
def _serving(app: App, grace: float = 1.0) -> Iterator[tuple[PromptServer, str, threading.Thread]]:
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=grace
    )
    server = PromptServer(config)
    listening = listening_socket("127.0.0.1", 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        assert server.ready.wait(30)
        assert server.started, "the server did not start"
        yield server, f"http://127.0.0.1:{listening.getsockname()[1]}", thread
    finally:
        server.stop()
        thread.join(30)


def test_it_answers_with_uvicorns_date_header() -> None:
    with _serving(_hello) as (_, url, _), httpx.Client() as client:
        answer = client.get(f"{url}/")
    assert answer.text == "hello"
    assert answer.headers["server"] == "uvicorn"
    assert answer.headers["date"].endswith(" GMT")


def test_a_stop_ends_the_server_and_closes_an_idle_keep_alive_connection() -> None:
    with httpx.Client() as client:
        with _serving(_hello) as (server, url, thread):
            assert client.get(f"{url}/").text == "hello"  # the connection stays open, idle
            server.stop()
            thread.join(30)
            assert not thread.is_alive()
        with pytest.raises(httpx.TransportError):
            client.get(f"{url}/")


def test_a_reply_still_running_at_the_stop_is_cancelled_after_the_grace_period() -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def never_answers(scope: dict[str, Any], receive: Any, send: Any) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with (
        _serving(never_answers, grace=0.05) as (server, url, thread),
        socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as raw,
    ):
        raw.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert started.wait(30)
        server.stop()
        thread.join(30)
        assert not thread.is_alive()
    assert cancelled.is_set()


def test_a_stop_before_the_server_runs_ends_it_as_soon_as_it_starts() -> None:
    server = PromptServer(uvicorn.Config(_hello, log_level="warning", lifespan="off"))
    server.stop()
    listening = listening_socket("127.0.0.1", 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()


def test_ready_is_set_when_the_server_ends_without_starting() -> None:
    """``EndpointServer.start`` waits on ``ready``: a server that cannot start wakes it too."""
    server = PromptServer(uvicorn.Config("no_such_module:app", log_level="critical"))

    def run() -> None:
        with contextlib.suppress(SystemExit):  # uvicorn's exit, the app not found
            server.run()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert server.ready.wait(30)
    thread.join(30)
    assert not server.started
