"""``agentrig serve``: a real process on loopback, reached by the SDK, stopped with Ctrl-C (or
``kill``)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.endpoint.server import listening_socket

from .conftest import WEATHER
from .sdk_agents import SYSTEM, chat_agent

openai = pytest.importorskip("openai")


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(
    folder: Path, *paths: Path, sigint_ignored: bool = False
) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        "-c",
        "from agentrig.harness.cli import main; main()",
        "serve",
        *map(str, paths),
    ]
    process = subprocess.Popen(
        command,
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        # as a script's `agentrig serve &` starts it: with Ctrl-C ignored
        preexec_fn=_ignoring_sigint if sigint_ignored else None,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        lines.append(line)
        found = re.search(r"OpenAI .* base URL: (\S+)", line)
        if found:
            return process, found.group(1)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("agentrig serve printed no base URL:\n" + "".join(lines))


def _stop(
    process: subprocess.Popen[str], stop_signal: signal.Signals = signal.SIGINT
) -> tuple[int, str]:
    process.send_signal(stop_signal)
    output, _ = process.communicate(timeout=60)
    return process.returncode, output


@pytest.mark.parametrize(
    ("stop_signal", "sigint_ignored"),
    [
        (signal.SIGINT, False),
        (signal.SIGTERM, False),
        (signal.SIGHUP, False),
        (signal.SIGINT, True),
    ],
    ids=["ctrl-c", "kill", "hangup", "ctrl-c-in-a-background-job"],
)
def test_serve_answers_the_sdk_and_reports_when_stopped(
    tmp_path: Path,
    write_scenario: Callable[[str], Path],
    stop_signal: signal.Signals,
    sigint_ignored: bool,
) -> None:
    path = write_scenario(WEATHER.replace("content: sunny", "contains: sunny"))
    process, base_url = _serve(tmp_path, path, sigint_ignored=sigint_ignored)
    try:
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        with openai.OpenAI(api_key="any", base_url=base_url, max_retries=0) as client:
            assert "sunny" in chat_agent(client, messages)
    finally:
        code, output = _stop(process, stop_signal)
    assert code == 0, output
    assert "1 passed, 0 failed" in output
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    [scenario] = report["scenarios"]
    assert scenario["name"] == "weather"
    assert scenario["passed"] is True
    assert [entry["kind"] for entry in scenario["transcript"]] == [
        "user",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert (tmp_path / "reports" / "junit.xml").exists()


def test_serve_exits_1_when_a_session_failed(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    process, base_url = _serve(tmp_path, write_scenario(WEATHER))
    try:
        with openai.OpenAI(api_key="any", base_url=base_url, max_retries=0) as client:
            client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "Weather in Paris?"}]
            )
    finally:
        code, output = _stop(process)
    assert code == 1
    assert "system_prompt_sent" in output
    assert "0 passed, 1 failed" in output


def test_serve_with_no_request_exits_4(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    process, _ = _serve(tmp_path, write_scenario(WEATHER))
    code, output = _stop(process)
    assert code == 4
    assert "no agent sent a request" in output


def test_serve_refuses_a_scenario_it_cannot_honour(
    tmp_path: Path, write_scenario: Callable[[str], Path]
) -> None:
    path = write_scenario(
        WEATHER.replace("final_response:", "status: completed\n      final_response:")
    )
    completed = _serve_once(tmp_path, str(path))
    assert completed.returncode == 2
    assert f"{path}:11:15: turns[0].expect.status: expect.status needs agentrig's own state" in (
        completed.stderr + completed.stdout
    ).replace("\n", " ").replace("  ", " ")


def _serve_once(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``agentrig serve ARGUMENTS`` in ``folder``, run in this process: one that stops before
    serving needs no process of its own (each took 0.5 CPU s importing agentrig again)."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["serve", *arguments], env={"COLUMNS": "200"})
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(
        ["agentrig", "serve", *arguments], result.exit_code, result.stdout, result.stderr
    )


def test_a_port_in_use_exits_2_saying_so(tmp_path: Path) -> None:
    import socket

    (tmp_path / "weather.scenario.yaml").write_text(WEATHER, encoding="utf-8")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        ran = _serve_once(tmp_path, "weather.scenario.yaml", "--port", str(port))
    assert ran.returncode == 2, ran.stdout + ran.stderr
    said = ran.stdout + ran.stderr
    assert (
        f"error: the endpoint could not start on 127.0.0.1:{port}: Address already in use" in said
    )
    assert "ERROR:" not in said  # uvicorn's own log line no longer doubles the message


def test_a_host_that_does_not_resolve_is_named_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "weather.scenario.yaml").write_text(WEATHER, encoding="utf-8")
    ran = _serve_once(tmp_path, "weather.scenario.yaml", "--host", "no-such-host.invalid")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    said = " ".join((ran.stdout + ran.stderr).split())
    assert "error: the endpoint could not start on no-such-host.invalid:0: " in said
    assert "is the port free" not in said


def test_the_banner_words_the_session_keys_as_the_refusal_of_a_bad_key_does(
    tmp_path: Path,
) -> None:
    import threading

    from agentrig.harness.endpoint.command import serve_until_interrupted
    from agentrig.harness.endpoint.service import ScenarioEndpoint
    from agentrig.harness.scenarios.loader import load_scenario

    for name in ("first", "second"):
        (tmp_path / f"{name}.scenario.yaml").write_text(
            WEATHER.replace("name: weather", f"name: {name}"), encoding="utf-8"
        )
    scenarios = [load_scenario(tmp_path / f"{name}.scenario.yaml") for name in ("first", "second")]
    stop = threading.Event()
    stop.set()  # print the banner, then stop at once
    said: list[str] = []
    serve_until_interrupted(scenarios, host="127.0.0.1", port=0, say=said.append, stop=stop)
    refusal = ScenarioEndpoint(scenarios).handle(
        "POST", "/v1/chat/completions", {"authorization": "Bearer nobody"}, b"{}"
    )
    assert b"NAME/ANYTHING" in refusal.body
    assert any("NAME/ANYTHING for several sessions" in line for line in said), said


def test_the_server_listens_on_a_tcp_socket_so_answers_are_not_held_back() -> None:
    """asyncio turns Nagle's algorithm off only on connections of a socket whose protocol says
    TCP; on a socket made with protocol 0 each answer waited for the client's delayed
    acknowledgement (tens of milliseconds a model call over loopback)."""
    listening = listening_socket("127.0.0.1", 0)
    try:
        assert listening.proto == socket.IPPROTO_TCP
        client = socket.create_connection(listening.getsockname()[:2])
        accepted, _ = listening.accept()
        with client, accepted:
            assert accepted.proto == socket.IPPROTO_TCP  # what asyncio checks before TCP_NODELAY
    finally:
        listening.close()


def test_a_client_that_hangs_up_mid_request_leaves_no_traceback(
    write_scenario: Callable[[str], Path],
) -> None:
    # A live trial cancelled after its scenario's verdict drops its request half sent.
    import logging

    from agentrig.harness.endpoint.server import EndpointServer
    from agentrig.harness.endpoint.service import ScenarioEndpoint
    from agentrig.harness.scenarios.loader import load_scenario

    logged: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append  # type: ignore[method-assign]
    endpoint = ScenarioEndpoint([load_scenario(write_scenario(WEATHER))])
    with EndpointServer(endpoint) as server:
        logger = logging.getLogger("uvicorn.error")
        logger.addHandler(handler)
        try:
            with socket.create_connection((server.host, server.port)) as connection:
                connection.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    b"Authorization: Bearer k\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 500\r\n\r\n{"model": '
                )
            time.sleep(0.5)
        finally:
            logger.removeHandler(handler)
    assert [record.getMessage() for record in logged] == []


def _logged_by_uvicorn(error: BaseException) -> list[str]:
    """What reaches a handler of uvicorn's error log when it logs ``error`` with its traceback
    (as it does for an exception out of a response), the endpoint's filter installed."""
    from agentrig.harness.endpoint import asgi  # noqa: F401  (installs the filter)

    logged: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = logged.append  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        logger.error("Exception in ASGI application", exc_info=error)
    finally:
        logger.removeHandler(handler)
    return [record.getMessage() for record in logged]


def test_a_cut_connection_is_kept_out_of_the_log_however_deep_or_looped_its_chain() -> None:
    from agentrig.harness.endpoint.asgi import ConnectionCut

    cut = ConnectionCut()
    inner = RuntimeError("in the stream")
    inner.__context__ = cut
    group = BaseExceptionGroup("task group", [ValueError("other"), inner])
    looped = RuntimeError("raised from its own context, as starlette does")
    looped.__context__ = group
    group.__context__ = looped  # a chain that loops back
    assert _logged_by_uvicorn(looped) == []


def test_an_error_whose_chain_loops_is_logged_not_looped_over() -> None:
    # A filter that followed the chain for ever raised RecursionError out of uvicorn's logging
    # call: the connection was dropped unanswered, and the agent saw a timeout.
    first, second = RuntimeError("first"), RuntimeError("second")
    first.__context__, second.__context__ = second, first
    group = BaseExceptionGroup("task group", [first])
    first.__cause__ = group
    assert _logged_by_uvicorn(group) == ["Exception in ASGI application"]
