"""Scenarios with ``agent.stream``: each turn runs through ``AgentLoop.stream`` and must end in
the states of the plain run."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from agentrig import InferenceRequest, InferenceResponse
from agentrig.drivers.provider import Delta
from agentrig.fakes import ScriptedLLM
from agentrig.harness.runner import final_states, run_scenario
from agentrig.harness.scenarios.loader import load_scenarios

SCENARIOS = Path(__file__).parents[2] / "scenarios"
STREAMING = list(load_scenarios(SCENARIOS / "streaming"))


@pytest.mark.parametrize("scenario", STREAMING, ids=lambda s: s.name)
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_streaming_scenario_passes_and_ends_as_the_plain_run(
    scenario: object, use_async: bool
) -> None:
    result = run_scenario(scenario, use_async=use_async)  # type: ignore[arg-type]
    assert result.passed, result.failures
    streamed = final_states(scenario, use_async=use_async)  # type: ignore[arg-type]
    plain = final_states(scenario, use_async=use_async, streaming=False)  # type: ignore[arg-type]
    assert [s.to_json() for s in streamed] == [s.to_json() for s in plain]


def test_a_stream_that_does_not_rebuild_the_answer_fails_the_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = ScriptedLLM.infer_stream

    def lossy(
        self: ScriptedLLM, request: InferenceRequest
    ) -> Generator[Delta, None, InferenceResponse]:
        response = yield from original(self, request)
        return response.evolve(content=response.content[:-1])  # the last piece went missing

    monkeypatch.setattr(ScriptedLLM, "infer_stream", lossy)
    result = run_scenario(STREAMING[0])
    stream_failures = [f for f in result.failures if "streamed run" in f.message]
    assert stream_failures, result.failures
    assert stream_failures[0].location is not None
    assert "interleaved-parallel-calls.scenario.yaml" in stream_failures[0].location
