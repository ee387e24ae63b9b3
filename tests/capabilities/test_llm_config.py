"""``UseLlmConfig`` and ``UseContextConfig``: provider, model settings, retries, prompt."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentBuilder,
    ConfigurationError,
    ExecutionStatus,
    InvalidInputError,
    LlmConfig,
    StopReason,
    ToolCallingDriver,
    UseContextConfig,
    UseLlmConfig,
)
from agentrig.fakes import ScriptedLLM, fail


def test_installs_a_tool_calling_driver_on_the_provider() -> None:
    llm = ScriptedLLM([])
    driver = AgentBuilder.base().with_capability(UseLlmConfig(llm)).driver()
    assert isinstance(driver, ToolCallingDriver)
    assert driver.provider is llm
    assert driver.max_attempts == 1


def test_a_later_provider_replaces_the_earlier_one() -> None:
    first, second = ScriptedLLM([]), ScriptedLLM([])
    builder = (
        AgentBuilder.base()
        .with_capability(UseLlmConfig(first, max_retries=2))
        .with_capability(UseLlmConfig(second))
    )
    driver = builder.driver()
    assert isinstance(driver, ToolCallingDriver)
    assert driver.provider is second


def test_llm_config_reaches_the_request(make_agent, start) -> None:
    llm = ScriptedLLM(["hi"])
    config = LlmConfig(model="tiny", temperature=0.0, max_output_tokens=16, options={"seed": 1})
    make_agent(llm, (), UseLlmConfig(llm_config=config)).execute(start())
    assert llm.requests[0].llm_config == config


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"temperature": -1}, "temperature"), ({"max_output_tokens": 0}, "max_output_tokens")],
)
def test_invalid_llm_config(fields: dict[str, int], field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        LlmConfig(**fields)
    assert raised.value.field == field


def test_retries_then_retry_limit(make_agent, start) -> None:
    llm = ScriptedLLM([fail("overloaded", retryable=True)] * 3)
    final = make_agent(llm, max_retries=3).execute(start())
    assert (final.status(), final.last_stop_reason()) == (
        ExecutionStatus.FAILED,
        StopReason.RETRY_LIMIT,
    )
    assert len(llm.calls) == 3


def test_max_retries_below_one_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="max_retries must be a whole number >= 1, got 0"):
        UseLlmConfig(ScriptedLLM([]), max_retries=0)


def test_context_config_sets_the_prompt_before_each_step(make_agent, start) -> None:
    llm = ScriptedLLM(["hi"])
    final = make_agent(llm, (), UseContextConfig(system_prompt="Be kind.")).execute(start())
    assert final.system_prompt() == "Be kind."
    assert llm.requests[0].messages[0].content == "Be kind."


def test_something_that_is_not_a_provider_is_refused_when_given() -> None:
    with pytest.raises(ConfigurationError, match=r"InferenceProvider.*OpenAIProvider"):
        UseLlmConfig("gpt-4o")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"system_prompt": None}, "system_prompt"),
        ({"system_prompt": 3}, "system_prompt"),
        ({"response_format": "json"}, "response_format"),
    ],
)
def test_context_config_refuses_bad_values_when_given(
    arguments: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        UseContextConfig(**arguments)  # type: ignore[arg-type]
    assert raised.value.field == field


@pytest.mark.parametrize("max_retries", ["3", 1.5, True, None])
def test_max_retries_must_be_a_whole_number(max_retries: object) -> None:
    with pytest.raises(ConfigurationError, match=r"max_retries must be a whole number >= 1"):
        UseLlmConfig(ScriptedLLM([]), max_retries=max_retries)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ("gpt-4o", "llm_config"),
        (3, "llm_config"),
        ({"temperature": "hot"}, "llm_config.temperature"),
        ({"modle": "x"}, "llm_config.modle"),
    ],
)
def test_a_bad_llm_config_is_refused_when_given(config: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        UseLlmConfig(ScriptedLLM([]), llm_config=config)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert "UseLlmConfig" in str(raised.value)


def test_an_llm_config_may_be_given_as_a_dict() -> None:
    llm = ScriptedLLM(["hi"])
    capability = UseLlmConfig(llm, llm_config={"model": "small", "temperature": 0.5})
    assert capability.llm_config == LlmConfig(model="small", temperature=0.5)
