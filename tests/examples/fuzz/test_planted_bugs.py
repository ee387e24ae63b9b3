"""The default profile finds each bug planted in the example agents within 200 examples, and
the scenario file it writes replays the same failure; the correct agents of every framework
pass it (no property fails spuriously): in the first CORRECT_EXAMPLES examples by default, in the
full count (100 to 200) under ``pytest --agentrig-deep``."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import settings

from agentrig.harness.fuzz import (
    Behaviours,
    FuzzFailure,
    answers_every_tool_call,
    fuzz,
    replay,
)
from agentrig.harness.property.profiles import is_deep

pytestmark = pytest.mark.slow  # each fuzzes an agent for seconds

PROMPT = "What is the weather in Paris?"
SEEDED = settings(database=None, derandomize=True)
VALID_ARGUMENTS = Behaviours(arguments={"valid"})
"""LangChain fails on arguments that are JSON but no object (see docs/fuzz-any-agent.md)."""


def _agent(reference: str) -> object:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(
    ("reference", "behaviours", "found"),
    [
        ("raw_openai:crash_on_parallel_calls", None, "ValueError: too many values to unpack"),
        ("raw_openai:crash_on_not_json", None, "JSONDecodeError"),
        ("raw_openai:crash_on_rate_limit", None, "openai.RateLimitError"),
        ("raw_openai:crash_on_timeout", None, "TimeoutError: the model did not answer in time"),
        ("raw_openai:crash_on_refusal", None, "'NoneType' object has no attribute 'strip'"),
        ("raw_openai:crash_on_unknown_tool", None, "KeyError"),
        ("pydantic_ai_agent:crash_on_unknown_city", None, "KeyError"),
        ("openai_agents_agent:crash_on_blank_answer", None, "IndexError"),
        (
            "langgraph_agent:drops_parallel_calls",
            VALID_ARGUMENTS,
            "tool_results_answer_calls: tool call(s) not answered",
        ),
    ],
)
def test_each_planted_bug_is_found_within_200_examples_and_its_file_replays_it(
    reference, behaviours, found, tmp_path
):
    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            _agent(reference),
            PROMPT,
            behaviours=behaviours,
            max_examples=200,
            settings=SEEDED,
            folder=tmp_path,
        )
    failure = caught.value
    assert failure.found_at is not None
    assert failure.found_at <= 200
    assert any(found in problem for problem in failure.problems), failure.problems
    assert failure.path is not None
    assert failure.scenario.agent.adapter == reference
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path)
    assert replayed.value.problems == failure.problems


ANSWERS = (answers_every_tool_call(),)
CORRECT_EXAMPLES = 25
"""Examples a correct agent is fuzzed with outside the deep profile (each costs an agent run
through the framework, 30 to 150 ms here); the deep profile runs each agent's full count."""


@pytest.mark.parametrize(
    ("reference", "behaviours", "properties", "examples"),
    [
        ("raw_openai:agent", None, ANSWERS, 200),
        # Both catch the framework's error and apologise when a call fails twice: they return
        # without answering it, which answers_every_tool_call reports (by design).
        ("pydantic_ai_agent:agent", None, (), 200),
        ("openai_agents_agent:agent", None, (), 200),
        ("langgraph_agent:agent", VALID_ARGUMENTS, ANSWERS, 200),
    ],
)
def test_correct_agents_break_no_property(reference, behaviours, properties, examples, tmp_path):
    examples = examples if is_deep() else CORRECT_EXAMPLES
    report = fuzz(
        _agent(reference),
        PROMPT,
        behaviours=behaviours,
        properties=properties,
        max_examples=examples,
        settings=SEEDED,
        folder=tmp_path,
    )
    assert report.examples == examples
