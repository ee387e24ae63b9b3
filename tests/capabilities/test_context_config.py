"""``UseContextConfig``: the system prompt and response format set before every step."""

from __future__ import annotations

import math

import pytest

from agentrig import InvalidInputError, UseContextConfig
from agentrig.fakes import ScriptedLLM


@pytest.mark.parametrize(
    ("response_format", "where"),
    [({"type": object()}, "object at ['type']"), ({"minimum": math.nan}, "nan at ['minimum']")],
)
def test_a_response_format_that_is_not_json_is_refused_when_given(
    response_format: dict[str, object], where: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        UseContextConfig("Be brief.", response_format)  # type: ignore[arg-type]
    assert raised.value.field == "response_format"
    assert where in str(raised.value)


def test_prompt_and_format_reach_the_request(make_agent, start) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    llm = ScriptedLLM(["{}"])
    final = make_agent(llm, (), UseContextConfig("Réponds en JSON 🎉", schema)).execute(start())
    assert final.system_prompt() == "Réponds en JSON 🎉"
    assert llm.requests[0].response_format == schema
