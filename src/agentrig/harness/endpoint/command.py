"""``agentrig serve``: a live endpoint in the foreground until Ctrl-C (or SIGTERM, SIGHUP), then
the sessions' results; or, given a command, until the command (the agent) has run against each
scenario."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from agentrig.harness.endpoint.recording import RecordThrough
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.interrupt import stopped_by_signals


def serve_until_interrupted(
    scenarios: Sequence[Scenario],
    *,
    host: str,
    port: int,
    say: Callable[[str], object],
    stop: threading.Event | None = None,
) -> SuiteResult:
    """Serve ``scenarios`` on ``host:port`` until Ctrl-C, SIGTERM or SIGHUP (or ``stop`` is set);
    the result of every session that sent a request."""
    endpoint = ScenarioEndpoint(scenarios)
    started = time.perf_counter()
    stop = stop or threading.Event()
    with EndpointServer(endpoint, host=host, port=port) as server, stopped_by_signals(stop):
        for line in _banner(server, scenarios):
            say(line)
        _wait(stop)
        say("stopping")
    return SuiteResult(
        scenarios=tuple(endpoint.results()), wall_time_s=time.perf_counter() - started
    )


def serve_and_run(
    scenarios: Sequence[Scenario],
    command: Sequence[str],
    *,
    host: str,
    port: int,
    say: Callable[[str], object],
) -> SuiteResult:
    """Serve ``scenarios`` and run ``command`` once for each, in turn, with the endpoint's base
    URLs and the scenario's API key in its environment (``command_environment``); then stop.
    Each scenario's result is that of its session, failed also when the command exited with
    another status than 0 (the agent crashed) or could not be started."""
    endpoint = ScenarioEndpoint(scenarios)
    started = time.perf_counter()
    results: list[ScenarioResult] = []
    with EndpointServer(endpoint, host=host, port=port) as server:
        for scenario in scenarios:
            key = scenario.name
            shown = shlex.join(command)
            say(f"agentrig endpoint on {server.base_url}: running `{shown}` for {scenario.name}")
            problem = _run(command, command_environment(server, key, scenario))
            result = endpoint.session(key).result()
            results.append(_with_command_problem(result, shown, problem))
    return SuiteResult(scenarios=tuple(results), wall_time_s=time.perf_counter() - started)


def command_environment(server: EndpointServer, key: str, scenario: Scenario) -> dict[str, str]:
    """The environment the agent command runs in: this process's, with the official SDKs'
    variables pointing at the endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
    ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``) and ``AGENTRIG_ENDPOINT`` (the base URL),
    ``AGENTRIG_SCENARIO`` (the scenario's name) and ``AGENTRIG_SCENARIO_FILE`` (its file)."""
    source = scenario.source
    return {
        **os.environ,
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": key,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "ANTHROPIC_API_KEY": key,
        "AGENTRIG_ENDPOINT": server.base_url,
        "AGENTRIG_SCENARIO": scenario.name,
        "AGENTRIG_SCENARIO_FILE": source.path if source is not None else "",
    }


def _run(command: Sequence[str], environment: dict[str, str]) -> str | None:
    """Run ``command`` to its end; what went wrong with it (None: it exited with 0)."""
    try:
        finished = subprocess.run(list(command), env=environment, check=False)
    except OSError as error:
        return f"could not be started: {error.strerror or error}"
    if finished.returncode != 0:
        return f"exited with status {finished.returncode}"
    return None


def _with_command_problem(
    result: ScenarioResult, shown: str, problem: str | None
) -> ScenarioResult:
    """``result``, failed also by the agent command's ``problem`` (first: it explains the rest)."""
    if problem is None:
        return result
    failure = Failure(kind="error", message=f"the agent command `{shown}` {problem}")
    failures = (failure, *result.failures)
    return result.model_copy(update={"failures": failures, "passed": False})


def record_until_interrupted(
    upstream: str,
    cassette: Path,
    *,
    host: str,
    port: int,
    say: Callable[[str], object],
    stop: threading.Event | None = None,
) -> tuple[int, list[Path]]:
    """Forward to ``upstream`` and record to ``cassette`` (one cassette per conversation, the
    next ones beside it) until Ctrl-C, SIGTERM or SIGHUP (or ``stop``); the number of model
    calls recorded, and the cassettes written."""
    stop = stop or threading.Event()
    with (
        RecordThrough(upstream, cassette) as recorder,
        EndpointServer(recorder, host=host, port=port) as server,
        stopped_by_signals(stop),
    ):
        say(f"agentrig endpoint recording {upstream} to {cassette} on {server.base_url}")
        say("  Each conversation is a cassette of its own: the next ones are written beside it.")
        say(f"  OpenAI (Chat Completions, Responses) base URL: {server.openai_base_url}")
        say(f"  Anthropic (Messages) base URL:                 {server.anthropic_base_url}")
        say(f"  Gemini (generateContent) base URL:             {server.gemini_base_url}")
        say("  API keys are passed on to the upstream; the cassette is scrubbed of them.")
        say("Press Ctrl-C to stop.")
        _wait(stop)
        say("stopping")
        return recorder.recorded, recorder.paths


def _banner(server: EndpointServer, scenarios: Sequence[Scenario]) -> list[str]:
    if len(scenarios) == 1:
        keys = f"any API key; each key is one session of {scenarios[0].name}"
    else:
        names = ", ".join(s.name for s in scenarios)
        keys = f"the scenario's name, or NAME/ANYTHING for several sessions; NAME one of: {names}"
    return [
        f"agentrig endpoint serving {len(scenarios)} scenario(s) on {server.base_url}",
        f"  OpenAI (Chat Completions, Responses) base URL: {server.openai_base_url}",
        f"  Anthropic (Messages) base URL:                 {server.anthropic_base_url}",
        f"  Gemini (generateContent) base URL:             {server.gemini_base_url}",
        f"  API key: {keys}",
        "Press Ctrl-C to stop and write the reports.",
    ]


def _wait(stop: threading.Event) -> None:
    # In short waits: a signal handler runs only between them on every platform.
    while not stop.wait(0.2):
        pass
