"""Lossless, versioned serialization of every state the loop produces (DESIGN D5)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agentrig import (
    AgentState,
    AgentStep,
    ExecutionBudget,
    ExecutionContinuation,
    ExecutionState,
    ExecutionStatus,
    FinishReason,
    FunctionTool,
    InferenceRequest,
    InferenceResponse,
    InvalidInputError,
    LlmConfig,
    Message,
    MessageStore,
    Role,
    StepError,
    StepExecution,
    StopReason,
    StopSignal,
    SubagentDefinition,
    ToolCall,
    ToolExecution,
    ToolResult,
    ToolSchema,
    Usage,
    UseGuards,
    UseSubagents,
)
from agentrig.fakes import ScriptedLLM, ScriptedTool, ToolReply, call, calls, reply
from agentrig.store import Section


class Point(BaseModel):
    x: float
    y: float


def as_dict() -> dict[str, Any]:
    return {"name": "Ada", "tags": ["a", "b"], "nested": {"n": 1}}


def as_list() -> list[int]:
    return [1, 2, 3]


def nothing() -> None:
    return None


def flag() -> bool:
    return True


def ratio() -> float:
    return 0.125


def point() -> Point:
    return Point(x=1.5, y=-2.0)


def broken() -> str:
    raise RuntimeError("the tool broke")


SCRIPT = [
    # execution 1: every kind of tool value, a tool error, a subagent, then an answer
    calls(("as_dict", {}), ("as_list", {}), ("nothing", {})),
    calls(("flag", {}), ("ratio", {}), ("point", {})),
    call("broken"),
    call("spawn_subagent", subagent="researcher", prompt="look it up"),
    reply("Done."),
    # execution 2: a tool stops the agent
    call("halt"),
    # execution 3: a finish-reason stop signal
    reply("cut short", finish_reason=FinishReason.LENGTH),
    # execution 4: the script runs out: a failed execution
]


@pytest.fixture
def run_states(make_agent, start) -> list[AgentState]:
    """Every state ``iterate()`` yielded over four executions, in order."""
    halt = ScriptedTool("halt", [ToolReply(stop="halted by the tool")])
    child = ScriptedLLM(["child answer"])
    researcher = SubagentDefinition(
        name="researcher", system_prompt="You research.", provider=child
    )
    agent = make_agent(
        ScriptedLLM(SCRIPT),
        [as_dict, as_list, nothing, flag, ratio, point, broken, halt],
        UseSubagents([researcher]),
        UseGuards(finish_reasons=[FinishReason.LENGTH]),
    )
    states: list[AgentState] = []
    state = start("first question")
    for text in ("second", "third", "fourth"):
        states.extend(agent.iterate(state))
        state = states[-1].with_user_message(text)
    states.extend(agent.iterate(state))
    return states


def test_the_run_covers_what_it_claims(run_states: list[AgentState]) -> None:
    finals = [s for s in run_states if s.status() is not ExecutionStatus.IN_PROGRESS]
    assert [s.status() for s in finals] == [
        ExecutionStatus.FAILED,
        ExecutionStatus.STOPPED,
        ExecutionStatus.COMPLETED,
        ExecutionStatus.FAILED,
    ]
    assert [s.last_stop_reason() for s in finals] == [
        StopReason.COMPLETED,
        StopReason.STOP_REQUESTED,
        StopReason.FINISH_REASON,
        StopReason.ERROR,
    ]
    executions = [e for s in finals[0].steps() for e in s.tool_executions]
    values = [e.value for e in executions]
    assert values[:6] == [as_dict(), [1, 2, 3], None, True, 0.125, {"x": 1.5, "y": -2.0}]
    assert executions[6].error == "the tool broke"
    assert executions[7].content == "child answer"


def test_every_yielded_state_round_trips_through_dict_and_json(
    run_states: list[AgentState],
) -> None:
    assert len(run_states) >= 8
    for state in run_states:
        assert AgentState.from_dict(state.to_dict()) == state
        assert AgentState.from_json(state.to_json()) == state


def test_to_dict_is_plain_json(run_states: list[AgentState]) -> None:
    for state in run_states:
        data = state.to_dict()
        assert json.loads(json.dumps(data)) == data


def test_nested_objects_round_trip(run_states: list[AgentState]) -> None:
    for state in run_states:
        assert MessageStore.from_json(state.store().to_json()) == state.store()
        continuation = state.continuation()
        assert ExecutionContinuation.from_dict(continuation.to_dict()) == continuation
        if state.execution is None:
            continue
        assert_round_trips(state.execution)
        for record in state.step_executions():
            assert_round_trips(record)
            assert_round_trips(record.step)
            for execution in record.step.tool_executions:
                assert_round_trips(execution)


def test_the_parts_of_a_state_round_trip_alone(run_states: list[AgentState]) -> None:
    """Messages, calls, results, signals, usage, errors, requests, responses and sections have
    their own to_dict/from_dict too (D5: every state object)."""
    parts: list[Any] = []
    for state in run_states:
        parts += [*state.messages(), *state.store().sections, *state.continuation().stop_signals]
        for step in state.steps():
            response = step.inference_response
            parts += [response, response.usage, *response.tool_calls, *step.errors]
            parts += [m.tool_result for m in step.output_messages if m.tool_result is not None]
    parts += [
        InferenceRequest(
            messages=run_states[-1].messages(),
            tools=(ToolSchema(name="f", parameters={"type": "object"}),),
            llm_config=LlmConfig(model="m", temperature=0.5),
        ),
        StepError(message="boom", type="RuntimeError"),
    ]
    kinds = {type(part) for part in parts}
    assert kinds >= {
        Message,
        ToolCall,
        ToolResult,
        StopSignal,
        Usage,
        StepError,
        InferenceResponse,
        InferenceRequest,
        Section,
    }, kinds
    for part in parts:
        assert_round_trips(part)


def assert_round_trips(value: Any) -> None:
    kind = type(value)
    assert kind.from_dict(value.to_dict()) == value
    assert kind.from_json(value.to_json()) == value


def test_budget_round_trips() -> None:
    budget = ExecutionBudget(max_steps=2, max_cost=0.5)
    assert ExecutionBudget.from_json(budget.to_json()) == budget


def test_restored_state_keeps_behaviour(run_states: list[AgentState]) -> None:
    original = run_states[-1]
    restored = AgentState.from_json(original.to_json())
    assert restored.status() == original.status()
    assert restored.usage() == original.usage()
    assert restored.messages().trace_executions == original.messages().trace_executions
    assert restored.stop_signal() == original.stop_signal()


class TestInvalidData:
    @pytest.fixture
    def data(self, run_states: list[AgentState]) -> dict[str, Any]:
        finished = next(s for s in run_states if s.step_count() >= 2)
        return copy.deepcopy(finished.to_dict())

    def test_missing_schema_version(self, data: dict[str, Any]) -> None:
        del data["schema_version"]
        self.assert_invalid(data, "schema_version")

    def test_wrong_schema_version(self, data: dict[str, Any]) -> None:
        data["schema_version"] = 99
        error = self.assert_invalid(data, "schema_version")
        assert "99" in str(error)

    @pytest.mark.parametrize(
        ("version", "shown"),
        [
            (10**4300, "an integer of more than 4300 digits"),
            ([10**4300], "a list holding an integer of more than 4300 digits"),
            ("v" * 500, "'" + "v" * 76 + "..."),
        ],
        ids=["huge-int", "huge-int-in-a-list", "long-text"],
    )
    def test_a_schema_version_too_long_to_print(
        self, data: dict[str, Any], version: Any, shown: str
    ) -> None:
        # Found by the deep fuzz run: repr() of an integer of 4300+ digits raises ValueError.
        data["schema_version"] = version
        with pytest.raises(InvalidInputError) as raised:  # (json cannot write it: from_dict only)
            AgentState.from_dict(data)
        assert raised.value.field == "schema_version"
        assert f"unsupported version {shown};" in str(raised.value)

    def test_unknown_top_level_field(self, data: dict[str, Any]) -> None:
        data["colour"] = "red"
        self.assert_invalid(data, "colour")

    def test_unknown_nested_field(self, data: dict[str, Any]) -> None:
        data["execution"]["step_executions"][0]["step"]["surprise"] = 1
        self.assert_invalid(data, "execution.step_executions[0].step.surprise")

    def test_wrong_type_names_the_path(self, data: dict[str, Any]) -> None:
        data["execution"]["step_executions"][1]["id"] = 5
        self.assert_invalid(data, "execution.step_executions[1].id")

    def test_wrong_enum_value(self, data: dict[str, Any]) -> None:
        data["execution"]["status"] = "sleeping"
        self.assert_invalid(data, "execution.status")

    def test_bad_message_role_in_the_store(self, data: dict[str, Any]) -> None:
        data["context"]["store"]["sections"][0]["messages"][0]["role"] = "robot"
        self.assert_invalid(data, "context.store.sections[0].messages[0].role")

    @pytest.mark.parametrize(
        "field",
        [
            ("context", "store", "sections", 0, "messages", 0, "role"),
            ("execution", "status"),
            ("execution", "step_executions", 0, "step", "inference_response", "finish_reason"),
        ],
        ids=["role", "status", "finish_reason"],
    )
    def test_an_enum_field_holding_deeply_nested_lists(
        self, data: dict[str, Any], field: tuple[str | int, ...]
    ) -> None:
        # Found by the fuzz run: the enum's own error message is the repr of the value.
        deep: list[Any] = []
        for _ in range(1000):
            deep = [deep]
        holder: Any = data
        for part in field[:-1]:
            holder = holder[part]
        assert field[-1] in holder
        holder[field[-1]] = deep
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in field)
        with pytest.raises(InvalidInputError) as raised:  # (json cannot write it: from_dict only)
            AgentState.from_dict(data)
        assert raised.value.field == where.removeprefix(".")
        assert "nested more than 100 levels deep" in str(raised.value)

    def test_negative_counter(self, data: dict[str, Any]) -> None:
        data["execution_count"] = -1
        self.assert_invalid(data, "execution_count")

    def test_a_part_names_its_bad_field(self) -> None:
        data = Message.user("hi").to_dict()
        data["role"] = "robot"
        with pytest.raises(InvalidInputError) as raised:
            Message.from_dict(data)
        assert raised.value.field == "role"

    def test_not_a_dict(self) -> None:
        with pytest.raises(InvalidInputError) as raised:
            AgentState.from_dict(["not", "a", "dict"])
        assert raised.value.field == ""

    def test_not_json(self) -> None:
        with pytest.raises(InvalidInputError, match="not valid JSON"):
            AgentState.from_json("{nope")

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            (b'{"schema_version": 1, "\xff": 1}', "not valid JSON"),
            ('{"schema_version": 1, "x": 1' + "0" * 4400 + "}", "not valid JSON"),
            ("[" * 5000 + "]" * 5000, "not valid JSON"),
            ('{"schema_version": 1, "schema_version": 1}', "duplicate key"),
            ('{"schema_version": 1, "context": {"metadata": {"a": 1, "a": 2}}}', "duplicate key"),
            ("\ud800", "lone surrogate"),
            (b'{"schema_version": 1, "x": "\xed\xa0\x80"}', r"not UTF-8 text \(byte 28\)"),
        ],
        ids=[
            "not-utf8",
            "too-many-digits",
            "too-deep",
            "duplicate-key",
            "nested-duplicate",
            "surrogate",
            "encoded-surrogate",
        ],
    )
    def test_json_text_that_is_not_a_state_is_invalid_input(
        self, text: str | bytes, words: str
    ) -> None:
        with pytest.raises(InvalidInputError, match=words) as raised:
            AgentState.from_json(text)
        assert raised.value.field == ""

    def test_a_key_holding_a_lone_surrogate_is_refused(self) -> None:
        # A value holding one round-trips; pydantic would write such a key as replacement
        # characters, so the state could not be read back as it was (found by the fuzz run).
        text = '{"schema_version": 1, "context": {"metadata": {"\\ud800": 1}}}'
        with pytest.raises(InvalidInputError, match="lone surrogate") as raised:
            AgentState.from_json(text)
        assert raised.value.field == "context.metadata"

    @pytest.mark.parametrize("depth", [100, 101, 260])
    def test_metadata_is_accepted_only_if_the_state_can_be_saved_and_read_back(
        self, depth: int
    ) -> None:
        nested: Any = 1
        for _ in range(depth):
            nested = {"a": nested}
        data = AgentState().to_dict()
        data["context"]["metadata"] = nested  # ``depth`` levels of objects
        text = json.dumps(data)
        if depth <= 100:
            state = AgentState.from_dict(data)
            assert AgentState.from_json(state.to_json()) == state
            assert AgentState.from_json(text) == state
            return
        for load, given in ((AgentState.from_dict, data), (AgentState.from_json, text)):
            with pytest.raises(InvalidInputError, match="nested") as raised:
                load(given)
            assert raised.value.field == "context.metadata"

    def test_an_integer_too_long_to_read_back_is_invalid(self) -> None:
        data = AgentState().to_dict()
        data["context"]["metadata"] = {"n": 10**4300}
        with pytest.raises(InvalidInputError, match="more than 4300 digits") as raised:
            AgentState.from_dict(data)
        assert raised.value.field == "context.metadata"
        data["context"]["metadata"] = {"n": 10**4300 - 1}
        assert AgentState.from_json(AgentState.from_dict(data).to_json()).metadata()["n"] > 0

    @staticmethod
    def assert_invalid(data: dict[str, Any], field: str) -> InvalidInputError:
        with pytest.raises(InvalidInputError) as raised:
            AgentState.from_dict(data)
        assert raised.value.field == field
        with pytest.raises(InvalidInputError) as from_json:
            AgentState.from_json(json.dumps(data))
        assert from_json.value.field == field
        return raised.value


@pytest.mark.parametrize(
    "kind",
    [
        ExecutionState,
        AgentStep,
        StepExecution,
        ToolExecution,
        ExecutionContinuation,
        Message,
        ToolCall,
        StopSignal,
        Usage,
        InferenceRequest,
    ],
)
def test_every_kind_rejects_a_missing_version(kind: type[Any]) -> None:
    with pytest.raises(InvalidInputError) as raised:
        kind.from_dict({})
    assert raised.value.field == "schema_version"


def test_immutability_states_captured_mid_run_do_not_change(make_agent, start) -> None:
    agent = make_agent(
        ScriptedLLM([call("as_list"), call("nothing"), reply("ok")]), [as_list, nothing]
    )
    snapshots: list[tuple[AgentState, dict[str, Any]]] = []
    for state in agent.iterate(start()):
        for earlier, dumped in snapshots:
            assert earlier.to_dict() == dumped
        snapshots.append((state, state.to_dict()))
    assert len(snapshots) == 3
    for earlier, dumped in snapshots:
        assert earlier.to_dict() == dumped


class Opaque:
    def __str__(self) -> str:
        return "opaque!"


AWKWARD_VALUES = {
    "a_set": {1, 2},
    "a_tuple": (1, "a"),
    "a_datetime": datetime(2026, 1, 1, tzinfo=UTC),
    "an_object": Opaque(),
    "infinity": float("inf"),
    "not_a_number": float("nan"),
    "big_int": 10**30,
    "some_bytes": b"ab",
    "int_keys": {1: "a"},
}


def returning(value: Any) -> Callable[[], Any]:
    return lambda: value


def test_awkward_tool_values_never_break_the_run_or_serialization(make_agent, start) -> None:
    tools = [FunctionTool(returning(v), name=name) for name, v in AWKWARD_VALUES.items()]
    llm = ScriptedLLM([calls(*((name, {}) for name in AWKWARD_VALUES)), reply("ok")])
    final = make_agent(llm, tools).execute(start())
    assert final.status() is ExecutionStatus.COMPLETED
    executions = {e.name: e for e in final.steps()[0].tool_executions}
    assert executions["an_object"].content == "opaque!"
    assert executions["a_set"].value == [1, 2]
    for execution in executions.values():
        assert json.loads(json.dumps(execution.value, allow_nan=False)) == execution.value
    assert AgentState.from_dict(final.to_dict()) == final
    assert AgentState.from_json(final.to_json()) == final


def test_a_state_written_by_an_earlier_release_reads_back_unchanged() -> None:
    """A saved state stays readable, and is written back identically, across releases.

    The file was written by commit 328192e, when state objects were pydantic ``BaseModel``s: a
    three-step run with a failing tool, a system prompt, metadata, and a stop signal added.
    """
    path = Path(__file__).parent / "data" / "agent_state_v1_328192e.json"
    text = path.read_text(encoding="utf-8")
    state = AgentState.from_json(text)
    assert json.loads(state.to_json()) == json.loads(text)
    assert state.status() is ExecutionStatus.FAILED
    assert state.step_count() == 3
    assert state.system_prompt() == "sys"
    assert state.metadata() == {"k": [1, {"x": None}]}
    assert [str(error) for error in state.errors()] == ["ValueError: nope q"]
    assert state.steps()[1].tool_executions[1].value == 5
    assert state.continuation().stop_signals[-1].context == {"a": 1.5}
    assert state.messages().roles() == (Role.USER, Role.ASSISTANT)


class TestStrictFormat:
    """Where the format is agentrig's own, a value that would come back different is refused."""

    @pytest.mark.parametrize(
        "value",
        [1767225600, "2026-01-01", "2026-01-01T00:00:00", "yesterday", True],
        ids=["epoch", "date-only", "naive", "words", "boolean"],
    )
    def test_a_timestamp_must_be_aware_iso_text(self, value: object) -> None:
        data = AgentState().to_dict()
        data["created_at"] = value
        with pytest.raises(InvalidInputError, match=r"ISO-8601|timezone") as raised:
            AgentState.from_dict(data)
        assert raised.value.field == "created_at"

    def test_a_naive_datetime_is_refused_before_a_resumed_run_trips_on_it(self) -> None:
        with pytest.raises(InvalidInputError, match="needs a timezone"):
            ExecutionState(started_at=datetime(2026, 1, 1))

    def test_aware_timestamps_round_trip_unchanged(self) -> None:
        state = AgentState(created_at=datetime(2026, 1, 1, 12, 30, 5, 123, tzinfo=UTC))
        assert AgentState.from_json(state.to_json()).created_at == state.created_at

    @pytest.mark.parametrize(
        ("field", "value"),
        [("execution_count", "1"), ("execution_count", 1.0), ("execution_count", True)],
    )
    def test_counts_are_integers(self, field: str, value: object) -> None:
        data = AgentState().to_dict()
        data[field] = value
        with pytest.raises(InvalidInputError) as raised:
            AgentState.from_dict(data)
        assert raised.value.field == field

    def test_flags_are_booleans(self) -> None:
        data = Message.user("hi").to_dict()
        data["is_error"] = "yes"
        with pytest.raises(InvalidInputError) as raised:
            Message.from_dict(data)
        assert raised.value.field == "is_error"
