"""Normalized requests (what the provider sees) and secret scrubbing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import agentrig as ar
from agentrig.errors import InvalidInputError
from agentrig.fakes import FunctionLLM, ScriptedLLM, SeededIds
from agentrig.harness.cassettes import (
    PLACEHOLDER,
    RecordingProvider,
    ReplayProvider,
    Scrubber,
    cassette_to_scenario,
    cassette_to_yaml,
    normalize_request,
    record_response,
    to_response,
)


def conversation(seed: int) -> ar.InferenceRequest:
    with ar.runtime_context(ids=SeededIds(seed)):
        call = ar.ToolCall(id="call_1", name="lookup", arguments={"q": "x"})
        result = ar.ToolResult(content="found", call_id="call_1", tool_name="lookup", is_error=True)
        messages = ar.Messages.of(
            ar.Message.system("Be brief."),
            ar.Message.user("find x").with_metadata(step_id=f"s{seed}", is_trace=True),
            ar.Message.assistant(tool_calls=[call]),
            ar.Message.tool(result).evolve(created_at=datetime(2000 + seed, 1, 1, tzinfo=UTC)),
        )
    return ar.InferenceRequest(
        messages=messages,
        tools=(
            ar.ToolSchema(name="lookup", description="Looks up.", parameters={"type": "object"}),
        ),
        response_format={"type": "json_object"},
        llm_config=ar.LlmConfig(model="m", temperature=0.3, max_output_tokens=50, options={"k": 1}),
    )


class TestNormalize:
    def test_ids_times_and_metadata_are_left_out(self) -> None:
        assert normalize_request(conversation(1)) == normalize_request(conversation(2))

    def test_what_the_provider_sees_is_kept(self) -> None:
        normalized = normalize_request(conversation(1))
        assistant, tool = normalized.messages[2], normalized.messages[3]
        assert assistant.tool_calls[0].model_dump() == {
            "id": "call_1",
            "name": "lookup",
            "arguments": {"q": "x"},
        }
        assert (tool.role, tool.content, tool.tool_call_id, tool.tool_name, tool.is_error) == (
            "tool",
            "found",
            "call_1",
            "lookup",
            True,
        )
        assert normalized.tools[0].name == "lookup"
        assert normalized.response_format == {"type": "json_object"}
        assert normalized.llm_config is not None
        assert (normalized.llm_config.temperature, normalized.llm_config.options) == (0.3, {"k": 1})

    def test_a_different_conversation_differs(self) -> None:
        changed = conversation(1).evolve(tool_choice="required")
        assert normalize_request(changed) != normalize_request(conversation(1))

    def test_a_response_survives_recording(self) -> None:
        response = ar.InferenceResponse(
            content="hi",
            tool_calls=(ar.ToolCall(id="c", name="f", arguments={"a": [1, 2.5, None]}),),
            usage=ar.Usage(input_tokens=3, output_tokens=4, reasoning_tokens=1, cost=0.25),
            finish_reason=ar.FinishReason.TOOL_CALLS,
            reasoning_content="thinking",
            model="m-1",
            response_id="r-1",
            provider_data={"system_fingerprint": "fp"},
        )
        assert to_response(record_response(response)) == response


def secret_request(user: str, **options: object) -> ar.InferenceRequest:
    return ar.InferenceRequest(
        messages=ar.Messages.of(ar.Message.user(user)),
        llm_config=ar.LlmConfig(model="m", options=dict(options)),
    )


class TestScrubbing:
    @pytest.mark.parametrize(
        "secret",
        [
            "sk-abcdefghijklmnopqrstuv1234",
            "sk-proj-abcdefghijklmnopqrstuv1234",
            "sk-ant-api03-abcdefghijkl",
            "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
            "AKIAIOSFODNN7EXAMPLE",
        ],
    )
    def test_credentials_in_text_are_replaced(self, secret: str) -> None:
        assert Scrubber().scrub(f"key={secret} ok") == f"key={PLACEHOLDER} ok"

    def test_secret_keys_are_replaced_but_token_counts_are_not(self) -> None:
        data = {
            "api_key": "k",
            "Authorization": "x",
            "client_secret": 1,
            "access_token": {"a": 1},
            "password": "p",
            "max_tokens": 5,
            "input_tokens": 7,
            "nested": [{"x-api-key": "k"}],
        }
        assert Scrubber().scrub(data) == {
            "api_key": PLACEHOLDER,
            "Authorization": PLACEHOLDER,
            "client_secret": PLACEHOLDER,
            "access_token": PLACEHOLDER,
            "password": PLACEHOLDER,
            "max_tokens": 5,
            "input_tokens": 7,
            "nested": [{"x-api-key": PLACEHOLDER}],
        }

    def test_secrets_never_reach_the_file_and_replay_still_matches(self) -> None:
        secret = "sk-abcdefghijklmnopqrstuv1234"
        recorder = RecordingProvider(ScriptedLLM([f"echo {secret}"]))
        recorder.infer(secret_request(f"my key is {secret}", api_key="hunter2"))
        text = cassette_to_yaml(recorder.cassette)
        assert secret not in text
        assert "hunter2" not in text
        assert text.count(PLACEHOLDER) == 3
        replay = ReplayProvider(recorder.cassette)
        answer = replay.infer(secret_request(f"my key is {secret}", api_key="hunter2"))
        assert answer.content == f"echo {PLACEHOLDER}"
        replay.assert_complete()

    def test_tool_schemas_keep_parameters_named_like_secrets(self) -> None:
        # A parameter called "password" is a name, not a secret: the schema must survive, or a
        # converted scenario loses the tool's params. What the model sends for it is scrubbed.
        schema = {
            "type": "object",
            "properties": {"user": {"type": "string"}, "password": {"type": "string"}},
            "required": ["user", "password"],
        }
        key = "sk-abcdefghijklmnopqrstuv1234"
        request = ar.InferenceRequest(
            messages=ar.Messages.of(ar.Message.user("log me in")),
            tools=(ar.ToolSchema(name="login", description=f"Uses {key}.", parameters=schema),),
            response_format={"type": "object", "properties": {"token": {"type": "string"}}},
        )
        answer = ar.InferenceResponse(
            tool_calls=(
                ar.ToolCall(id="c1", name="login", arguments={"user": "ann", "password": "pw1"}),
            )
        )
        recorder = RecordingProvider(FunctionLLM(lambda request: answer))
        recorder.infer(request)
        (interaction,) = recorder.cassette.interactions
        (tool,) = interaction.request.tools
        assert tool.parameters == schema
        assert tool.description == f"Uses {PLACEHOLDER}."  # text patterns still apply
        assert interaction.request.response_format == {
            "type": "object",
            "properties": {"token": {"type": "string"}},
        }
        assert interaction.response is not None
        assert interaction.response.tool_calls[0].arguments["password"] == PLACEHOLDER
        assert "pw1" not in cassette_to_yaml(recorder.cassette)
        scenario = cassette_to_scenario(recorder.cassette, name="login")
        assert set(scenario.agent.tools["login"].params) == {"user", "password"}
        replay = ReplayProvider(recorder.cassette)
        assert replay.infer(request).tool_calls[0].name == "login"

    def test_custom_patterns_keys_and_placeholder(self) -> None:
        scrubber = Scrubber.extended(patterns=[r"acct-\d+"], keys=["^session$"], placeholder="***")
        assert scrubber.scrub({"session": "s", "note": "acct-123 sk-ant-api03-abcdefghijkl"}) == {
            "session": "***",
            "note": "*** ***",
        }
        assert Scrubber(keys=()).scrub({"api_key": "v"}) == {"api_key": "v"}

    def test_scrubbing_can_be_turned_off(self) -> None:
        recorder = RecordingProvider(ScriptedLLM(["ok"]), scrubber=Scrubber.disabled())
        recorder.infer(secret_request("hi", api_key="hunter2"))
        assert "hunter2" in cassette_to_yaml(recorder.cassette)

    def test_a_bad_pattern_is_refused(self) -> None:
        with pytest.raises(InvalidInputError, match="not a regular expression"):
            Scrubber(patterns=("(",))
