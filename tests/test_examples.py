"""Every example in examples/ runs and does what its docstring says."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import agentrig as ar

EXAMPLES = Path(__file__).parents[1] / "examples"


def test_weather_agent_example(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = runpy.run_path(str(EXAMPLES / "weather_agent.py"))
    final = namespace["main"]()
    assert isinstance(final, ar.AgentState)
    assert final.status() is ar.ExecutionStatus.COMPLETED
    assert [m.role.value for m in final.messages()] == ["user", "assistant", "user", "assistant"]
    assert final.store().messages_of("execution_buffer").to_tuple() == ()
    output = capsys.readouterr().out
    assert "turn 1: failed after 3 steps (completed)" in output
    assert "tool get_weather: ok=False" in output
