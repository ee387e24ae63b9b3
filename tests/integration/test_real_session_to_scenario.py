"""End to end across the features: a real recorded LLM session (HTTP cassette, recorded by
another project against the OpenAI and Anthropic APIs) replays through the real SDK provider and
the full loop, is recorded at the inference boundary, saved in a session store, converted into
a scenario file, and that scenario passes under ``agentrig run`` with every invariant on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig import (
    AgentBuilder,
    AgentState,
    ExecutionStatus,
    InferenceProvider,
    UseContextConfig,
    UseLlmConfig,
    runtime_context,
    tool,
)
from agentrig.fakes import FakeClock, SeededIds
from agentrig.harness.cassettes import cassette_provider, cassette_to_scenario, load_cassette
from agentrig.harness.cli import app
from agentrig.harness.scenarios.writer import write_scenario
from agentrig.sessions import SqliteSessionStore

pytest.importorskip("vcr")
pytest.importorskip("openai")
pytest.importorskip("anthropic")

from agentrig.drivers import AnthropicProvider, OpenAIProvider
from agentrig.harness.cassettes import http as http_cassettes

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""


@tool
def lookup_population(country: str) -> int:
    """Returns the current population of the specified fictional country"""
    return {"Crumpet": 123124}[country]


@tool
def can_have_dragons(population: int) -> bool:
    """Returns True if the specified population can have dragons, False otherwise"""
    return population > 10_000


@tool
def country_source() -> str:
    """Return the country name."""
    return "Japan"


@tool
def capital_lookup(country: str) -> str:
    """Look up the capital of a country."""
    return {"Japan": "Tokyo"}[country]


def run(provider: InferenceProvider, case: Case) -> AgentState:
    clock, ids = FakeClock(), SeededIds(0)
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(provider))
        .with_capability(UseContextConfig(system_prompt=case.system))
        .with_tools(case.tools)
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        state = AgentState().with_user_message(case.user)
    return agent.execute(state)


@dataclass(frozen=True)
class Case:
    http_cassette: str
    provider: Callable[[], InferenceProvider]
    user: str
    tools: list[Any]
    answer: str
    system: str = ""


CASES = {
    "openai-chain": Case(
        "llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
        lambda: OpenAIProvider(api_key="sk-replay", model="gpt-4o-mini", max_retries=0),
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
        [lookup_population, can_have_dragons],
        "YES",
    ),
    "anthropic-chain": Case(
        "pydantic-ai/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml",
        lambda: AnthropicProvider(api_key="sk-replay", model="claude-sonnet-4-5", max_retries=0),
        "Use the registered tools and respond exactly as `Capital: <city>`.",
        [country_source, capital_lookup],
        "Capital: Tokyo",
        system="Always call `country_source` first, then call `capital_lookup` with that result "
        "before replying.",
    ),
}


@pytest.mark.filterwarnings("ignore:The model 'claude-sonnet-4-5' is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_session_becomes_a_passing_scenario(
    name: str, tmp_path: Path, real_cassette: Callable[[str], Path]
) -> None:
    case = CASES[name]
    recorded = tmp_path / "recorded.cassette.yaml"
    with http_cassettes.use_http_cassette(real_cassette(case.http_cassette), ignore=FOREIGN):
        provider = cassette_provider(recorded, case.provider(), mode="once")
        final = run(provider, case)
    provider.assert_complete()
    assert final.status() is ExecutionStatus.COMPLETED
    assert final.final_response().to_text() == case.answer

    # The recorded session replays without the HTTP layer, strictly, and gives the same run.
    replay = cassette_provider(recorded, mode="none")
    again = run(replay, case)
    replay.assert_complete()
    assert again.to_json() == final.to_json()

    # The state survives a session store.
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        store.create(final)
        assert store.load(final.agent_id).state == final

    # The recording converts into an editable scenario that passes with every invariant on.
    scenario = cassette_to_scenario(load_cassette(recorded), name=f"real-{name}")
    path = write_scenario(scenario, path=tmp_path / "scenarios" / f"{name}.scenario.yaml")
    result = CliRunner().invoke(
        app, ["run", str(path.parent), "--report-dir", str(tmp_path / "reports")]
    )
    assert result.exit_code == 0, result.output
    text = path.read_text(encoding="utf-8")
    assert all(t.name in text for t in case.tools)
    assert case.answer in text
