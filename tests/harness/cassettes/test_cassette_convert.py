"""A recorded session becomes an editable scenario that passes under ``agentrig run``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentrig as ar
from agentrig.fakes import CallSpec, FunctionLLM, ScriptedLLM, Turn, call, calls, fail, reply
from agentrig.harness.cassettes import (
    CassetteConversionError,
    RecordingProvider,
    cassette_to_scenario,
    save_cassette,
    scenario_name,
)
from agentrig.harness.cassettes.convert import UNRECORDED_RESULT
from agentrig.harness.cli import app
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.writer import write_scenario

from .conftest import get_weather

FOREIGN = ("tools", "strict")
"""What the real cassettes, recorded by other frameworks, send differently from agentrig: tool
schemas (descriptions, ``additionalProperties``, ``strict``); the replays do not compare them."""


Build = Callable[..., ar.AgentLoop]
TwoTurns = Callable[[ar.AgentLoop], ar.AgentState]
cli = CliRunner()
HTTP_CASSETTE = """\
interactions:
- request:
    body: '{"model": "gpt-4.1-mini", "messages": []}'
    headers: {}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body: {string: '{}'}
    status: {code: 200, message: OK}
version: 1
"""


def record(
    build: Build, script: list[Turn | str], *users: str, max_retries: int = 1
) -> RecordingProvider:
    recorder = RecordingProvider(ScriptedLLM(script))
    loop = build(recorder, max_retries=max_retries)
    state = ar.AgentState()
    for user in users:
        state = loop.execute(state.with_user_message(user))
    return recorder


def assert_passes(recorder: RecordingProvider, tmp_path: Path) -> None:
    scenario = cassette_to_scenario(recorder.cassette, name="recorded")
    path = write_scenario(scenario, path=tmp_path / "recorded.scenario.yaml")
    result = run_scenario(load_scenario(path))
    assert result.passed, [failure.message for failure in result.failures]


class TestEndToEnd:
    def test_a_two_turn_session_with_a_raising_tool_converts_and_passes_under_the_cli(
        self, tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        cassette_path = tmp_path / "weather.yaml"
        two_turns(build(RecordingProvider(brain, path=cassette_path)))
        scenario_path = tmp_path / "out" / "weather.scenario.yaml"
        converted = cli.invoke(app, ["convert", str(cassette_path), "-o", str(scenario_path)])
        assert converted.exit_code == 0, converted.output
        assert f"wrote {scenario_path}" in converted.output
        ran = cli.invoke(app, ["run", str(scenario_path), "--report-dir", str(tmp_path / "r")])
        assert ran.exit_code == 0, ran.output
        assert "1 passed, 0 failed" in ran.output

    def test_the_scenario_reads_like_the_session(
        self, tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        recorder = RecordingProvider(brain)
        two_turns(build(recorder))
        scenario = cassette_to_scenario(recorder.cassette, name="weather")
        agent = scenario.agent
        assert agent.system_prompt == "You answer weather questions.\nBe brief."
        weather = agent.tools["get_weather"]
        assert (weather.description, dict(weather.params), weather.mode) == (
            "Current weather for a city.",
            {"city": "string"},
            "sequence",
        )
        assert [r.outcome for r in weather.replies] == ["return", "raise"]
        assert (weather.replies[0].return_, weather.replies[1].raise_) == (
            "sunny in Paris",
            "service unavailable",
        )
        assert dict(agent.tools["convert_units"].params) == {
            "celsius": "integer",
            "unit": "string?",
        }
        first, second = scenario.turns
        assert (first.user, second.user) == ("Weather in Paris and Oslo?", "Thanks!")
        assert [r.tool_calls[0].shorthand() for r in first.model[:2]] == [
            "get_weather(city=Paris)",
            "get_weather(city=Oslo)",
        ]
        final = first.model[2]
        assert (final.say, final.usage and final.usage.input, final.cost) == (
            "Paris is sunny.\nOslo's service is down.",
            40,
            0.002,
        )
        assert first.expect.errors == ("service unavailable",)
        assert first.expect.status is None  # a tool failed: the recorded run's status is failed
        assert first.expect.tool_calls is not None
        assert len(first.expect.tool_calls.calls) == 2
        assert second.expect.status == "completed"
        assert second.expect.final_response is not None
        assert second.expect.final_response.equals == "You're welcome!"
        assert_passes(recorder, tmp_path)

    def test_several_calls_in_one_reply_and_a_retried_error(
        self, tmp_path: Path, build: Build
    ) -> None:
        script = [
            fail("overloaded", retryable=True),
            calls(("get_weather", {"city": "Rome"}), ("convert_units", {"celsius": 20})),
            reply("Rome: 68F.", finish_reason=ar.FinishReason.LENGTH),
        ]
        recorder = record(build, script, "Rome in F?", max_retries=3)
        scenario = cassette_to_scenario(recorder.cassette, name="rome")
        assert scenario.agent.max_retries == 2
        replies = scenario.turns[0].model
        assert (replies[0].error, replies[0].retryable) == ("overloaded", True)
        assert len(replies[1].tool_calls) == 2
        assert replies[2].finish_reason == "length"
        assert scenario.turns[0].expect.errors is None
        assert_passes(recorder, tmp_path)

    def test_a_provider_error_that_ends_the_turn_is_expected(
        self, tmp_path: Path, build: Build
    ) -> None:
        recorder = record(build, [fail("bad request"), reply("Hi again.")], "hi", "hello?")
        scenario = cassette_to_scenario(recorder.cassette, name="errors")
        assert scenario.turns[0].expect.errors == ("bad request",)
        assert scenario.turns[1].expect.final_response is not None
        assert_passes(recorder, tmp_path)

    def test_a_call_whose_result_was_never_recorded_stops_the_agent(
        self, tmp_path: Path, build: Build
    ) -> None:
        recorder = record(build, [call("get_weather", city="Paris")], "Paris?")
        scenario = cassette_to_scenario(recorder.cassette, name="cut")
        assert scenario.agent.tools["get_weather"].replies[0].stop == UNRECORDED_RESULT
        assert_passes(recorder, tmp_path)

    def test_an_unknown_tool_call_is_an_expected_error(self, tmp_path: Path, build: Build) -> None:
        recorder = record(build, [call("teleport", to="Mars"), reply("Cannot.")], "Go")
        scenario = cassette_to_scenario(recorder.cassette, name="unknown")
        assert "teleport" not in scenario.agent.tools
        assert scenario.turns[0].expect.errors == (
            "Tool 'teleport' not found. Available tools: convert_units, get_weather",
        )
        assert_passes(recorder, tmp_path)

    def test_a_run_stopped_after_parallel_calls_converts_to_a_passing_scenario(
        self, tmp_path: Path, build: Build
    ) -> None:
        both = calls(("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Paris"}))
        recorder = RecordingProvider(ScriptedLLM([both]))
        loop = (
            ar.AgentBuilder.base()
            .with_tools([get_weather])
            .with_capability(ar.UseLlmConfig(recorder))
            .with_capability(ar.UseGuards(budget=ar.ExecutionBudget(max_steps=1)))
            .build()
        )
        loop.execute(ar.AgentState().with_user_message("Rome and Paris?"))
        assert_passes(recorder, tmp_path)

    def test_a_turn_run_again_after_a_non_retryable_error_converts_faithfully(
        self, tmp_path: Path, build: Build
    ) -> None:
        recorder = RecordingProvider(ScriptedLLM([fail("bad request"), reply("Hi.")]))
        loop = build(recorder)
        failed = loop.execute(ar.AgentState().with_user_message("hi"))
        assert failed.status() is ar.ExecutionStatus.FAILED
        loop.execute(failed.for_next_execution())
        with pytest.raises(CassetteConversionError) as caught:
            cassette_to_scenario(recorder.cassette, name="again")
        assert caught.value.interaction == 2
        assert "runs the turn again" in str(caught.value)

    def test_a_provider_that_reuses_call_ids_gets_each_calls_own_result(
        self, tmp_path: Path, build: Build
    ) -> None:
        def model(request: ar.InferenceRequest) -> Turn | str:
            users = [m.content for m in request.messages if m.role is ar.Role.USER]
            if request.messages[-1].role is ar.Role.USER:  # some providers number ids per reply
                return Turn(calls=(CallSpec("get_weather", {"city": users[-1]}, id="call_0"),))
            return f"answered {users[-1]}"

        recorder = RecordingProvider(FunctionLLM(model))
        loop = build(recorder)
        state = loop.execute(ar.AgentState().with_user_message("Paris"))
        loop.execute(state.with_user_message("Rome"))
        scenario = cassette_to_scenario(recorder.cassette, name="reused-ids")
        replies = scenario.agent.tools["get_weather"].replies
        assert [reply.return_ for reply in replies] == ["sunny in Paris", "sunny in Rome"]
        assert_passes(recorder, tmp_path)


@ar.tool
def lookup_population(country: str) -> int:
    """Returns the current population of the specified fictional country"""
    return {"Crumpet": 123124}[country]


@ar.tool
def can_have_dragons(population: int) -> bool:
    """Returns True if the specified population can have dragons, False otherwise"""
    return population > 10_000


REAL_SESSIONS = {
    "chain": (
        "llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
        {"model": "gpt-4o-mini"},
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
    ),
    "rate-limited": (
        "pydantic-ai/test_openrouter/test_openrouter_errors_raised.yaml",
        {"model": "google/gemini-2.0-flash-exp:free", "base_url": "https://openrouter.ai/api/v1"},
        "Tell me a joke.",
    ),
}


@pytest.mark.parametrize("session", sorted(REAL_SESSIONS))
def test_a_real_recorded_session_converts_to_a_scenario_that_passes(
    session: str,
    tmp_path: Path,
    real_cassette: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An HTTP cassette another project recorded, replayed through the real SDK driver while
    recording an agentrig cassette (what convert's error for HTTP cassettes advises)."""
    from agentrig.drivers import OpenAIProvider
    from agentrig.harness.cassettes.http import use_http_cassette

    monkeypatch.setattr("time.sleep", lambda seconds: None)  # the SDK's retry back-off
    relative, options, user = REAL_SESSIONS[session]
    recorder = RecordingProvider(OpenAIProvider(api_key="sk-replay", max_retries=0, **options))
    loop = (
        ar.AgentBuilder.base()
        .with_tools([lookup_population, can_have_dragons] if session == "chain" else [])
        .with_capability(ar.UseLlmConfig(recorder, max_retries=3))
        .with_capability(ar.UseContextConfig("" if session == "chain" else "Be helpful."))
        .build()
    )
    with use_http_cassette(real_cassette(relative), ignore=FOREIGN):
        loop.execute(ar.AgentState().with_user_message(user))
    recorded = save_cassette(recorder.cassette, tmp_path / f"{session}.yaml")
    scenario = tmp_path / f"{session}.scenario.yaml"
    converted = cli.invoke(app, ["convert", str(recorded), "-o", str(scenario)])
    assert converted.exit_code == 0, converted.output
    ran = cli.invoke(app, ["run", str(scenario), "-q", "--report-dir", str(tmp_path / "r")])
    assert ran.exit_code == 0, ran.output
    assert "1 passed, 0 failed" in ran.output


class TestReasoningWithoutText:
    """An answer that reasoned but showed no text converts to ``think: {redacted: true}``; the
    ``provider_data`` shapes are those agentrig's providers keep from the real APIs."""

    @pytest.mark.parametrize(
        "kept",
        [
            {"anthropic_thinking": [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}]},
            {"anthropic_thinking": [{"type": "thinking", "thinking": "", "signature": "EqQB"}]},
            {
                "openai_reasoning": [
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
                ]
            },
            {"openai_reasoning": [{"type": "reasoning", "id": "rs_1", "summary": []}]},
            {"reasoning_seal": "YWdlbnRyaWc="},
        ],
        ids=[
            "anthropic-redacted",
            "anthropic-thinking-without-text",
            "responses-encrypted",
            "responses-stored",
            "scripted",
        ],
    )
    def test_it_converts_to_think_redacted_and_plays(
        self, tmp_path: Path, build: Build, kept: dict[str, Any]
    ) -> None:
        answers = iter(
            [
                ar.InferenceResponse(
                    tool_calls=(
                        ar.ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
                    ),
                    finish_reason=ar.FinishReason.TOOL_CALLS,
                    provider_data={"stop_reason": "tool_use", **kept},
                ),
                ar.InferenceResponse(content="done", finish_reason=ar.FinishReason.STOP),
            ]
        )
        recorder = RecordingProvider(FunctionLLM(lambda request: next(answers)))
        build(recorder).execute(ar.AgentState().with_user_message("hi"))
        scenario = cassette_to_scenario(recorder.cassette, name="recorded")
        first, last = scenario.turns[0].model
        assert first.model_dump(exclude_unset=True)["think"] == {"redacted": True}
        assert last.think is None
        assert_passes(recorder, tmp_path)

    def test_reasoning_text_stays_text(self, build: Build) -> None:
        kept = {"anthropic_thinking": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
        answer = ar.InferenceResponse(content="ok", reasoning_content="hm", provider_data=kept)
        recorder = RecordingProvider(FunctionLLM(lambda request: answer))
        build(recorder).execute(ar.AgentState().with_user_message("hi"))
        [reply_] = cassette_to_scenario(recorder.cassette, name="recorded").turns[0].model
        assert reply_.think == "hm"

    def test_a_scripted_redacted_reasoning_round_trips(self, tmp_path: Path, build: Build) -> None:
        recorder = record(
            build,
            [
                Turn(calls=(CallSpec("get_weather", {"city": "Paris"}),), redacted_reasoning=True),
                "ok",
            ],
            "hi",
        )
        [first, _] = cassette_to_scenario(recorder.cassette, name="recorded").turns[0].model
        assert first.think_redacted
        assert_passes(recorder, tmp_path)


class TestProblems:
    def test_an_empty_cassette_cannot_convert(self) -> None:
        empty = RecordingProvider(ScriptedLLM([])).cassette
        with pytest.raises(CassetteConversionError, match="no interactions"):
            cassette_to_scenario(empty, name="x")

    def test_a_bad_name_is_refused(self, build: Build) -> None:
        recorder = record(build, ["hi"], "hello")
        with pytest.raises(CassetteConversionError, match="is not a scenario name"):
            cassette_to_scenario(recorder.cassette, name="Bad Name")

    def test_an_empty_response_is_named_by_interaction(self, build: Build) -> None:
        recorder = RecordingProvider(FunctionLLM(lambda request: ar.InferenceResponse()))
        build(recorder).execute(ar.AgentState().with_user_message("hi"))
        with pytest.raises(CassetteConversionError, match="interaction 1: the response is empty"):
            cassette_to_scenario(recorder.cassette, name="x", path="c.yaml")

    def test_two_conversations_in_one_cassette_are_refused_at_the_second(
        self, build: Build, tmp_path: Path
    ) -> None:
        """Sessions recorded together (``agentrig serve --record`` relays every API key into one
        cassette) converted into one turn whose script the run could not use up."""
        recorder = RecordingProvider(
            ScriptedLLM(
                [
                    call("get_weather", city="Paris"),
                    reply("A"),
                    call("get_weather", city="Oslo"),
                    reply("B"),
                ]
            )
        )
        loop = build(recorder)
        for user in ("Say a", "Say b"):  # two sessions, each from a fresh state
            loop.execute(ar.AgentState().with_user_message(user))
        with pytest.raises(CassetteConversionError) as caught:
            cassette_to_scenario(recorder.cassette, name="two")
        assert caught.value.interaction == 3
        assert "the cassette holds more than one conversation" in str(caught.value)
        path = save_cassette(recorder.cassette, tmp_path / "two.yaml")
        converted = cli.invoke(app, ["convert", str(path)])
        assert converted.exit_code == 2
        assert f"cannot convert cassette {path} interaction 3" in converted.output

    def test_a_second_turn_of_one_conversation_still_converts(
        self, build: Build, tmp_path: Path
    ) -> None:
        recorder = record(
            build, [call("get_weather", city="Paris"), reply("A"), reply("B")], "a", "b"
        )
        assert_passes(recorder, tmp_path)

    @pytest.mark.parametrize(
        "schema",
        [
            {"properties": {"q": {"type": ["string", "null"]}}},
            {"properties": {"q": {"type": "string"}}, "required": [["q"], {"a": 1}, "q"]},
            {"properties": {"q": {"type": {"const": 1}}}},
        ],
    )
    def test_a_tool_schema_of_any_shape_converts(
        self, build: Build, schema: dict[str, object]
    ) -> None:
        recorder = record(build, [call("t", q="x"), reply("done")], "hi")
        tool = recorder.cassette.interactions[0].request.tools[0]
        odd = tool.model_copy(update={"parameters": schema})
        request = recorder.cassette.interactions[0].request.model_copy(update={"tools": (odd,)})
        first = recorder.cassette.interactions[0].model_copy(update={"request": request})
        cassette = recorder.cassette.model_copy(
            update={"interactions": (first, *recorder.cassette.interactions[1:])}
        )
        scenario = cassette_to_scenario(cassette, name="odd")
        assert scenario.name == "odd"

    def test_a_tool_name_that_is_not_an_identifier_is_a_conversion_error(
        self, build: Build, tmp_path: Path
    ) -> None:
        recorder = record(build, [call("a.b", q="x"), reply("done")], "hi")
        with pytest.raises(CassetteConversionError, match=r"'a\.b'"):
            cassette_to_scenario(recorder.cassette, name="dotted")
        path = save_cassette(recorder.cassette, tmp_path / "dotted.yaml")
        converted = cli.invoke(app, ["convert", str(path)])
        assert converted.exit_code == 2, converted.output
        assert "'a.b'" in converted.output

    def test_an_error_without_a_message_is_a_conversion_error(self, build: Build) -> None:
        recorder = record(build, [fail("x"), reply("done")], "hi", "again")
        first = recorder.cassette.interactions[0]
        assert first.error is not None
        blank = first.model_copy(update={"error": first.error.model_copy(update={"message": ""})})
        cassette = recorder.cassette.model_copy(
            update={"interactions": (blank, *recorder.cassette.interactions[1:])}
        )
        with pytest.raises(CassetteConversionError, match="interaction 1: the recorded error"):
            cassette_to_scenario(cassette, name="blank")

    def test_names_come_from_file_names(self) -> None:
        assert scenario_name("Weather Two_Cities") == "weather-two_cities"
        assert scenario_name("***") == "recorded-session"


class TestCli:
    @pytest.fixture
    def cassette(self, tmp_path: Path, build: Build) -> Path:
        recorder = record(build, [reply("Hello!")], "hi")
        return save_cassette(recorder.cassette, tmp_path / "Greeting.yaml")

    def test_without_output_the_scenario_goes_to_stdout(self, cassette: Path) -> None:
        result = cli.invoke(app, ["convert", str(cassette)])
        assert result.exit_code == 0
        assert result.output.startswith(f"# Converted from {cassette} by agentrig convert")
        assert "name: greeting\n" in result.output
        assert "final_response:" in result.output

    def test_a_name_can_be_given(self, cassette: Path) -> None:
        result = cli.invoke(app, ["convert", str(cassette), "--name", "hello-world"])
        assert "name: hello-world\n" in result.output

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (["missing.yaml"], "cannot read the file"),
            (["{cassette}", "-o", "out.yaml"], "must end in .scenario.yaml"),
            (["{cassette}", "--name", "Bad Name"], "is not a scenario name"),
        ],
    )
    def test_bad_input_exits_2_with_a_message(
        self, cassette: Path, arguments: list[str], message: str
    ) -> None:
        given = [argument.format(cassette=cassette) for argument in arguments]
        result = cli.invoke(app, ["convert", *given])
        assert result.exit_code == 2
        assert message in result.output

    def test_an_output_of_another_suffix_names_the_option(self, cassette: Path) -> None:
        result = cli.invoke(app, ["convert", str(cassette), "-o", "out.yaml"])
        assert result.exit_code == 2
        assert result.output.startswith(
            "error: --output out.yaml must end in .scenario.yaml so that agentrig run finds it"
        )
        assert "<root>" not in result.output

    def test_an_existing_file_is_not_replaced_without_force(
        self, cassette: Path, tmp_path: Path
    ) -> None:
        target = tmp_path / "greeting.scenario.yaml"
        target.write_text("# my edits\n", encoding="utf-8")
        refused = cli.invoke(app, ["convert", str(cassette), "-o", str(target)])
        assert refused.exit_code == 2
        assert f"{target} already exists" in refused.output
        assert "--force" in refused.output
        assert target.read_text(encoding="utf-8") == "# my edits\n"
        forced = cli.invoke(app, ["convert", str(cassette), "-o", str(target), "--force"])
        assert forced.exit_code == 0, forced.output
        assert "name: greeting" in target.read_text(encoding="utf-8")

    def test_the_same_cassette_converts_to_the_same_bytes(self, cassette: Path) -> None:
        first = cli.invoke(app, ["convert", str(cassette)]).output
        assert first == cli.invoke(app, ["convert", str(cassette)]).output

    def test_an_http_cassette_says_what_convert_reads(self, tmp_path: Path) -> None:
        path = tmp_path / "vcr.yaml"
        path.write_text(HTTP_CASSETTE, encoding="utf-8")
        result = cli.invoke(app, ["convert", str(path)])
        assert result.exit_code == 2
        assert f"{path}:2:3: " in result.output
        assert "an HTTP cassette (vcrpy)" in result.output
        assert "unknown key" not in result.output
        assert "docs/record-replay.md" in result.output

    def test_a_bad_cassette_names_its_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.yaml"
        path.write_text("version: 3\n", encoding="utf-8")
        result = cli.invoke(app, ["convert", str(path)])
        assert result.exit_code == 2
        assert f"{path}:1:10: version: cassette version 3 is not supported" in result.output


def test_a_session_recorded_through_the_endpoint_converts_to_what_the_endpoint_serves(
    build: Build,
) -> None:
    from agentrig.harness.cassettes.convert import RECORDED_THROUGH
    from agentrig.harness.endpoint.compatibility import check_endpoint_scenario

    script = [fail("overloaded", retryable=True), reply("Hi."), fail("bad request"), reply("Bye.")]
    recorder = record(build, script, "hi", "again?", "bye", max_retries=2)
    on_the_wire = recorder.cassette.model_copy(
        update={
            "metadata": recorder.cassette.metadata.model_copy(
                update={"recorded_with": RECORDED_THROUGH}
            )
        }
    )
    # Recorded at agentrig's provider seam, the scenario holds agentrig's own state...
    inside = cassette_to_scenario(recorder.cassette, name="inside")
    assert inside.agent.max_retries == 2
    assert [t.expect.status for t in inside.turns] == [None, None, "completed"]
    assert inside.turns[1].expect.errors == ("bad request",)
    # ...recorded from another agent through the endpoint, only what crosses the wire.
    scenario = cassette_to_scenario(on_the_wire, name="wire")
    check_endpoint_scenario(scenario)  # raises for what the endpoint cannot check
    assert "max_retries" not in scenario.agent.model_fields_set
    assert [(t.expect.status, t.expect.errors) for t in scenario.turns] == [(None, None)] * 3
    assert [r.error or r.say for t in scenario.turns for r in t.model] == [
        "overloaded",
        "Hi.",
        "bad request",
        "Bye.",
    ]
