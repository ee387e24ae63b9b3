"""``strict`` tools and ``LlmConfig.tool_choice``: set on the agent, sent by each real provider
in its API's spelling, and kept through a state's and a cassette's serialization."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    InferenceRequest,
    InvalidInputError,
    LlmConfig,
    ToolSchema,
    UseLlmConfig,
    tool,
)
from agentrig.fakes import ScriptedLLM, reply

pytest.importorskip("openai")
pytest.importorskip("anthropic")

from agentrig.drivers import (
    AnthropicProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
)


@tool(strict=True)
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return order_id


def agent_request(tool_choice: str | None = None) -> InferenceRequest:
    """The request the agent's first step sends, configured only through the builder."""
    config = {"model": "m"} if tool_choice is None else {"model": "m", "tool_choice": tool_choice}
    loop = (
        AgentBuilder.base()
        .with_capability(UseLlmConfig(ScriptedLLM([reply("ok")]), llm_config=config))
        .with_tools([refund, lookup])
        .build()
    )
    return loop.next_request(loop.new_state("refund A1"))


def test_a_tool_made_strict_says_so_in_its_schema() -> None:
    assert refund.schema().strict is True
    assert lookup.schema().strict is False
    assert tool(name="other", strict=True)(lambda order_id: order_id).schema().strict


def test_the_tool_choice_of_the_llm_config_reaches_the_request() -> None:
    assert agent_request().tool_choice == "auto"
    assert agent_request("required").tool_choice == "required"
    assert [schema.strict for schema in agent_request().tools] == [True, False]


def test_an_empty_tool_choice_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInputError, match="tool_choice"):
        LlmConfig(tool_choice="")


# --- each provider's spelling ------------------------------------------------------------------


def chat_body(request: InferenceRequest) -> dict[str, Any]:
    return OpenAIProvider(client=object(), model="m").request_body(request)


def responses_body(request: InferenceRequest) -> dict[str, Any]:
    return OpenAIResponsesProvider(client=object(), model="m").request_body(request)


def anthropic_body(request: InferenceRequest) -> dict[str, Any]:
    return AnthropicProvider(client=object(), model="m").request_body(request)


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (None, None),
        ("auto", None),
        ("none", "none"),
        ("required", "required"),
        ("refund", {"type": "function", "function": {"name": "refund"}}),
    ],
)
def test_openai_chat_sends_tool_choice_and_strict(choice: str | None, sent: Any) -> None:
    body = chat_body(agent_request(choice))
    assert body.get("tool_choice") == sent
    functions = {entry["function"]["name"]: entry["function"] for entry in body["tools"]}
    assert functions["refund"]["strict"] is True
    assert "strict" not in functions["lookup"]  # off is the API's default: not sent


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (None, None),
        ("none", "none"),
        ("required", "required"),
        ("refund", {"type": "function", "name": "refund"}),
    ],
)
def test_openai_responses_sends_tool_choice_and_strict(choice: str | None, sent: Any) -> None:
    body = responses_body(agent_request(choice))
    assert body.get("tool_choice") == sent
    assert {entry["name"]: entry["strict"] for entry in body["tools"]} == {
        "refund": True,
        "lookup": False,
    }


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (None, None),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("refund", {"type": "tool", "name": "refund"}),
    ],
)
def test_anthropic_sends_tool_choice_and_no_strict_flag(choice: str | None, sent: Any) -> None:
    body = anthropic_body(agent_request(choice))
    assert body.get("tool_choice") == sent
    assert all("strict" not in entry for entry in body["tools"])
    assert [entry["name"] for entry in body["tools"]] == ["refund", "lookup"]


def test_no_tools_no_tool_choice() -> None:
    request = InferenceRequest(llm_config=LlmConfig(tool_choice="required"), tool_choice="none")
    for body in (chat_body(request), responses_body(request), anthropic_body(request)):
        assert "tool_choice" not in body
        assert "tools" not in body


# --- serialization -------------------------------------------------------------------------------


def test_strict_and_tool_choice_round_trip_through_json() -> None:
    schema = ToolSchema(name="refund", parameters={"type": "object"}, strict=True)
    assert ToolSchema.from_json(schema.to_json()) == schema
    assert '"strict":true' in schema.to_json()
    request = InferenceRequest(tools=(schema,), tool_choice="refund")
    assert InferenceRequest.from_json(request.to_json()) == request
    state = AgentState(llm_config=LlmConfig(model="m", tool_choice="required"))
    restored = AgentState.from_json(state.to_json())
    assert restored.llm_config is not None
    assert restored.llm_config.tool_choice == "required"
    assert restored.to_json() == state.to_json()


def test_a_cassette_records_strict_only_when_set() -> None:
    from agentrig.harness.cassettes.model import to_data
    from agentrig.harness.cassettes.normalize import normalize_request

    recorded = normalize_request(agent_request("required"))
    tools = to_data(recorded)["tools"]
    assert [("strict" in entry, entry.get("strict")) for entry in tools] == [
        (True, True),
        (False, None),
    ]
    assert recorded.tool_choice == "required"
