"""Tools: typed functions, derived schemas, validated arguments, error paths (DESIGN D7)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import AsyncIterator, Iterator
from types import MappingProxyType
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentrig import (
    AgentBuilder,
    AgentState,
    AgentStepType,
    AgentStop,
    ConfigurationError,
    ExecutionStatus,
    FunctionTool,
    InvalidInputError,
    InvalidToolArgumentsError,
    StopReason,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolOutput,
    Tools,
    Usage,
    tool,
)
from agentrig._tool_arguments import plain_arguments, plain_plan
from agentrig.fakes import ScriptedLLM, ScriptedTool, ToolReply, call, reply
from agentrig.tools import format_tool_value


class Point(BaseModel):
    x: int
    y: int


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@tool(name="search_docs", description="Search the docs.")
def search(
    query: Annotated[str, Field(description="What to look for")],
    limit: int = 5,
    context: ToolContext | None = None,
) -> dict[str, Any]:
    return {"query": query, "limit": limit}


def whoami(context: ToolContext, greeting: str = "hi") -> str:
    """Say who is calling."""
    return f"{greeting} {context.state.agent_id} via {context.tool_call.id}"


def explode() -> str:
    raise ValueError("it exploded")


def stop_now() -> str:
    raise AgentStop("tool wants out", source="tool:stop_now")


def execute(tools: list[Any], name: str, **arguments: Any) -> Any:
    executions, _ = ToolExecutor(Tools(tools)).execute(
        [ToolCall(name=name, arguments=arguments)], AgentState(agent_id="agent-1"), 1
    )
    return executions[0]


class TestSchema:
    def test_schema_from_signature(self) -> None:
        assert add.name == "add"
        assert add.description == "Add two numbers."
        assert add.parameters() == {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "integer", "default": 2},
            },
            "required": ["a"],
            "additionalProperties": False,
        }

    def test_annotated_descriptions_and_overrides(self) -> None:
        schema = search.schema()
        assert (schema.name, schema.description) == ("search_docs", "Search the docs.")
        assert schema.parameters["properties"] == {
            "query": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "default": 5},
        }
        assert schema.parameters["required"] == ["query"]

    def test_an_explicit_schema_and_description_are_sent_exactly(self) -> None:
        recorded = {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for"}},
            "required": ["query"],
        }

        def look(query: str, limit: int = 5) -> str:
            """A docstring the model never sees."""
            return f"{query}:{limit}"

        made = tool(description="", parameters=recorded)(look)
        schema = made.schema()
        assert (schema.description, schema.parameters) == ("", recorded)
        assert "additionalProperties" not in schema.parameters
        recorded["required"].append("changed later")  # a copy was taken
        assert made.schema().parameters["required"] == ["query"]
        assert execute([made], "look", query="x").value == "x:5"  # still validated by the type
        assert execute([made], "look", query=3).error

    def test_an_empty_description_is_kept(self) -> None:
        def documented() -> None:
            """Docstring."""

        assert FunctionTool(documented, description="").schema().description == ""
        assert FunctionTool(documented).schema().description == "Docstring."

    def test_a_renamed_tool_keeps_its_explicit_schema(self) -> None:
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}

        def plus(a: int) -> int:
            return a + 1

        renamed = Tools({"other": FunctionTool(plus, parameters=schema)}).schemas()[0]
        assert (renamed.name, renamed.parameters) == ("other", schema)

    @pytest.mark.parametrize(
        ("parameters", "words"),
        [
            ([], "a JSON Schema object (a dict)"),
            ({"type": "array"}, "must describe an object"),
            ({"type": "object", "properties": {"b": {}}}, "'b', which look(query) does not take"),
            ({"type": "object", "properties": []}, "properties must be a mapping"),
            ({"type": "object", "properties": {}}, "'query', which look(query) needs"),
            ({"type": "object", "x": float("nan")}, "JSON data"),
        ],
    )
    def test_an_explicit_schema_that_cannot_describe_the_function_is_refused(
        self, parameters: Any, words: str
    ) -> None:
        def look(query: str) -> str:
            return query

        with pytest.raises(ConfigurationError, match=re.escape(words)) as raised:
            FunctionTool(look, parameters=parameters)
        assert "tool 'look'" in str(raised.value)

    def test_tool_context_is_excluded_from_the_schema(self) -> None:
        made = FunctionTool(whoami)
        assert set(made.parameters()["properties"]) == {"greeting"}
        assert made.parameters().get("required", []) == []

    def test_pydantic_model_parameters(self) -> None:
        def place(point: Point) -> int:
            return point.x

        made = FunctionTool(place)
        assert "$defs" in made.parameters()
        assert execute([made], "place", point={"x": 3, "y": 4}).value == 3

    def test_decorated_functions_stay_callable(self) -> None:
        assert add(1, 2) == 3

    def test_the_schema_is_built_once_and_follows_a_renamed_tool(self) -> None:
        made = FunctionTool(whoami)
        assert made.schema() is made.schema()
        made.name, made.description = "who", "Says who."
        renamed = made.schema()
        assert (renamed.name, renamed.description) == ("who", "Says who.")
        assert renamed.parameters == made.parameters()


class TestArguments:
    def test_tool_context_is_injected(self) -> None:
        execution = execute([whoami], "whoami", greeting="hello")
        assert execution.value.startswith("hello agent-1 via ")
        assert execution.value.endswith(execution.tool_call.id)

    def test_optional_tool_context_is_injected_too(self) -> None:
        def agent_of(context: ToolContext | None = None) -> str | None:
            return context.state.agent_id if context else None

        made = FunctionTool(agent_of)
        assert made.parameters()["properties"] == {}
        assert execute([made], "agent_of").value == "agent-1"

    def test_defaults_are_applied(self) -> None:
        assert execute([add], "add", a=1).value == 3

    def test_invalid_type_names_the_field(self) -> None:
        with pytest.raises(InvalidToolArgumentsError) as raised:
            add.invoke({"a": "many"}, ToolContext(AgentState(), ToolCall(name="add")))
        error = raised.value
        assert isinstance(error, InvalidInputError)
        assert (error.tool, error.field) == ("add", "a")
        assert "integer" in str(error)

    def test_missing_argument_names_the_field(self) -> None:
        with pytest.raises(InvalidToolArgumentsError) as raised:
            add.invoke({"b": 1}, ToolContext(AgentState(), ToolCall(name="add")))
        assert raised.value.field == "a"
        assert "Field required" in str(raised.value)

    def test_unexpected_argument_is_rejected(self) -> None:
        with pytest.raises(InvalidToolArgumentsError) as raised:
            add.invoke({"a": 1, "c": 3}, ToolContext(AgentState(), ToolCall(name="add")))
        assert raised.value.field == "c"


class TestToolExecutor:
    def test_success_records_value_and_text(self) -> None:
        execution = execute([search], "search_docs", query="q")
        assert execution.value == {"query": "q", "limit": 5}
        assert execution.content == '{"query": "q", "limit": 5}'
        assert not execution.has_error()
        assert execution.error_message() == ""

    def test_raising_tool_becomes_a_failed_execution(self) -> None:
        execution = execute([explode], "explode")
        assert execution.has_error()
        assert execution.error == "it exploded"
        assert execution.error_type == "ValueError"
        assert execution.content == "Error in tool call: it exploded"
        assert execution.value is None

    def test_unknown_tool_lists_the_available_ones(self) -> None:
        execution = execute([add, explode], "nope")
        assert execution.error_type == "ToolNotFoundError"
        assert execution.content == (
            "Error in tool call: Tool 'nope' not found. Available tools: add, explode"
        )

    def test_invalid_arguments_become_a_failed_execution(self) -> None:
        execution = execute([add], "add", a="many")
        assert execution.error_type == "InvalidToolArgumentsError"
        assert "a:" in execution.content

    def test_agent_stop_propagates(self) -> None:
        with pytest.raises(AgentStop):
            execute([stop_now], "stop_now")

    def test_agent_stop_carries_every_call_outcome(self) -> None:
        calls = [
            ToolCall(name="add", arguments={"a": 1}),
            ToolCall(name="stop_now", arguments={}),
            ToolCall(name="add", arguments={"a": 2}),
        ]
        with pytest.raises(AgentStop) as raised:
            ToolExecutor(Tools([add, stop_now])).execute(calls, AgentState(), 1)
        executions = raised.value.tool_executions
        assert executions is not None
        assert [(e.tool_call, e.value, e.was_stopped()) for e in executions] == [
            (calls[0], 3, False),
            (calls[1], None, True),
            (calls[2], None, True),
        ]
        assert not executions.has_errors()
        assert executions[1].content == "Execution stopped: tool wants out"

    def test_calls_run_in_order(self) -> None:
        order: list[int] = []

        def note(n: int) -> int:
            order.append(n)
            return n

        calls = [ToolCall(name="note", arguments={"n": n}) for n in (3, 1, 2)]
        executions, _ = ToolExecutor(Tools([note])).execute(calls, AgentState(), 1)
        assert order == [3, 1, 2]
        assert [e.value for e in executions] == [3, 1, 2]

    def test_tool_output_sets_text_and_usage(self) -> None:
        def priced() -> ToolOutput:
            return ToolOutput(value={"n": 1}, content="one", usage=Usage(input_tokens=4))

        execution = execute([priced], "priced")
        assert (execution.value, execution.content) == ({"n": 1}, "one")
        assert execution.usage == Usage(input_tokens=4)

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ("plain", "plain"),
            (None, "null"),
            (True, "true"),
            (False, "false"),
            (3, "3"),
            (0.5, "0.5"),
            ([1, "a"], '[1, "a"]'),
            ({"k": "é"}, '{"k": "é"}'),
            (Point(x=1, y=2), '{"x":1,"y":2}'),
            (float("nan"), "nan"),
            ([float("inf")], "[Infinity]"),
            ({"reading": float("nan")}, '{"reading": NaN}'),
            (b"\xff", "b'\\xff'"),
            ({"k": b"\xfe"}, "{'k': b'\\xfe'}"),
        ],
    )
    def test_value_formatting(self, value: Any, text: str) -> None:
        def give() -> Any:
            return value

        execution = execute([give], "give")
        assert execution.content == text
        assert format_tool_value(value) == text
        if isinstance(execution.value, str):
            assert execution.value == text  # what JSON cannot hold is kept as what the model saw


class TestTools:
    def test_later_tool_with_the_same_name_wins(self) -> None:
        def negate(a: int) -> int:
            return -a

        replacement = FunctionTool(negate, name="add")
        tools = Tools([add]).with_tools(replacement)
        assert tools.names() == ("add",)
        assert tools.get("add") is replacement

    def test_only_without_and_names(self) -> None:
        tools = Tools([add, explode, stop_now])
        assert tools.names() == ("add", "explode", "stop_now")
        assert tools.only(["add", "ghost"]).names() == ("add",)
        assert tools.without("add").names() == ("explode", "stop_now")
        assert "add" in tools
        assert "ghost" not in tools
        assert [s.name for s in tools.schemas()] == ["add", "explode", "stop_now"]

    def test_tools_are_immutable(self) -> None:
        tools = Tools([add])
        tools.with_tools(explode)
        assert tools.names() == ("add",)


class TestToolsInTheLoop:
    def test_a_raising_tool_is_seen_by_the_model_and_the_loop_goes_on(
        self, make_agent, start
    ) -> None:
        llm = ScriptedLLM([call("explode"), reply("Sorry, it failed.")])
        final = make_agent(llm, [explode]).execute(start())
        assert llm.requests[1].messages[-1].content == "Error in tool call: it exploded"
        assert final.steps()[0].step_type() is AgentStepType.ERROR
        assert final.final_response().to_text() == "Sorry, it failed."
        assert final.status() is ExecutionStatus.FAILED

    @pytest.mark.parametrize(
        ("turn", "expected"),
        [
            (call("ghost"), "Tool 'ghost' not found"),
            (call("add", a="many"), "a: Input should be a valid integer"),
            (call("add", b=1), "a: Field required"),
        ],
    )
    def test_bad_calls_are_tool_errors(self, make_agent, start, turn: Any, expected: str) -> None:
        llm = ScriptedLLM([turn, reply("ok")])
        final = make_agent(llm, [add]).execute(start())
        content = llm.requests[1].messages[-1].content
        assert content.startswith("Error in tool call: ")
        assert expected in content
        assert final.step_count() == 2
        assert expected in final.errors()[0].message

    def test_agent_stop_from_a_tool_stops_the_execution(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("stop_now"), reply("never")])
        final = make_agent(llm, [stop_now]).execute(start())
        assert final.status() is ExecutionStatus.STOPPED
        signal = final.stop_signal()
        assert signal is not None
        assert (signal.reason, signal.message, signal.source) == (
            StopReason.STOP_REQUESTED,
            "tool wants out",
            "tool:stop_now",
        )
        assert llm.remaining == 1
        assert not final.store().messages_of("execution_buffer")

    def test_scripted_tool_stop_reply(self, make_agent, start) -> None:
        halt = ScriptedTool("halt", [ToolReply(stop="enough")])
        final = make_agent(ScriptedLLM([call("halt")]), [halt]).execute(start())
        assert final.last_stop_reason() is StopReason.STOP_REQUESTED
        assert final.status() is ExecutionStatus.STOPPED


class TestUnrecordableValues:
    def test_bytes_that_are_not_utf8_keep_the_step(self, make_agent, start) -> None:
        def raw() -> bytes:
            return b"\xff"

        llm = ScriptedLLM([call("raw"), reply("got it")])
        final = make_agent(llm, [raw]).execute(start())
        assert final.step_count() == 2
        assert final.status() is ExecutionStatus.COMPLETED
        execution = final.steps()[0].tool_executions[0]
        assert execution.value == execution.content == "b'\\xff'"
        assert llm.requests[1].messages[-1].content == "b'\\xff'"
        assert AgentState.from_json(final.to_json()) == final

    def test_an_iterator_is_read_once_for_both_the_value_and_the_text(
        self, make_agent, start
    ) -> None:
        def evens(n: int) -> object:
            """Even numbers below n, lazily."""
            return (i for i in range(n) if i % 2 == 0)

        llm = ScriptedLLM([call("evens", n=7), reply("ok")])
        final = make_agent(llm, [evens]).execute(start())
        execution = final.steps()[0].tool_executions[0]
        assert execution.value == [0, 2, 4, 6]
        assert execution.content == "[0, 2, 4, 6]"
        assert llm.requests[1].messages[-1].content == "[0, 2, 4, 6]"

    def test_a_value_that_cannot_be_recorded_fails_the_call_not_the_step(
        self, make_agent, start
    ) -> None:
        class Unprintable:
            def __str__(self) -> str:
                raise RuntimeError("no text for this value")

        def opaque() -> Unprintable:
            return Unprintable()

        llm = ScriptedLLM([call("opaque"), reply("sorry")])
        final = make_agent(llm, [opaque]).execute(start())
        assert final.step_count() == 2
        assert llm.requests[1].messages[-1].content == "Error in tool call: no text for this value"
        assert final.status() is ExecutionStatus.FAILED

    @pytest.mark.parametrize("path", ["execute", "aexecute"])
    def test_a_plain_tool_returning_an_unawaited_coroutine_fails_the_call_saying_so(
        self, make_agent, start, path: str
    ) -> None:
        async def lookup(city: str) -> str:
            return f"sunny in {city}"

        def forgot_await(city: str) -> Any:
            """Calls an async function without awaiting it."""
            return lookup(city)

        llm = ScriptedLLM([call("forgot_await", city="Oslo"), reply("sorry")])
        agent = make_agent(llm, [forgot_await])
        if path == "execute":
            final = agent.execute(start())
        else:
            final = asyncio.run(agent.aexecute(start()))
        execution = final.steps()[0].tool_executions[0]
        assert execution.error_type == "ToolError"
        message = execution.error_message()
        assert "tool 'forgot_await' returned a coroutine" in message
        assert "async def" in message
        assert "<coroutine object" not in llm.requests[1].messages[-1].content
        assert final.status() is ExecutionStatus.FAILED

    def test_a_self_containing_list_is_kept_as_text(self) -> None:
        looped: list[Any] = [1]
        looped.append(looped)

        def loop() -> list[Any]:
            return looped

        execution = execute([loop], "loop")
        assert execution.value == execution.content == "[1, [...]]"


class Opaque:
    """A class pydantic has no schema for."""


async def fetch(city: str) -> AsyncIterator[str]:
    yield city


def stream(count: int) -> Iterator[int]:
    yield count


def spread(*cities: str) -> str:
    return ",".join(cities)


def options(**flags: bool) -> str:
    return str(flags)


def positional(city: str, /) -> str:
    return city


def private(city: str, _secret: str = "") -> str:
    return city


def configured(model_config: str) -> str:
    return model_config


def dumped(model_dump: bool) -> str:
    return str(model_dump)


def opaque_param(thing: Opaque) -> str:
    return str(thing)


def unresolved(city: str, where: Nowhere) -> str:  # type: ignore[name-defined]  # noqa: F821
    return city


class AsyncCallable:
    async def __call__(self, city: str) -> str:
        return city


def base(a: int, b: int) -> int:
    """Add b to a."""
    return a + b


class TestToolDefinitionErrors:
    @pytest.mark.parametrize(
        ("function", "fragments"),
        [
            (fetch, ["tool 'fetch'", "async generator", "returns a list"]),
            (stream, ["tool 'stream'", "generator", "return a list"]),
            (spread, ["tool 'spread'", "'*cities'", "named, typed parameter"]),
            (options, ["tool 'options'", "'**flags'", "named, typed parameter"]),
            (positional, ["tool 'positional'", "'city'", "positional-only", "remove the '/'"]),
            (private, ["tool 'private'", "'_secret'", "rename it"]),
            (configured, ["tool 'configured'", "'model_config'", "rename it"]),
            (dumped, ["tool 'dumped'", "'model_dump'", "rename it"]),
            (opaque_param, ["tool 'opaque_param'", "'thing'", "Opaque", "pydantic model"]),
            (unresolved, ["tool 'unresolved'", "'where'", "Nowhere", "module level"]),
        ],
        ids=lambda value: getattr(value, "__name__", None),
    )
    def test_a_bad_signature_is_refused_when_the_tool_is_made(
        self, function: Any, fragments: list[str]
    ) -> None:
        for make in (tool, FunctionTool, lambda f: AgentBuilder.base().with_tools([f])):
            with pytest.raises(ConfigurationError) as raised:
                make(function)
            for fragment in fragments:
                assert fragment in str(raised.value)

    def test_an_explicit_name_is_named_with_the_function(self) -> None:
        with pytest.raises(ConfigurationError, match=r"tool 'lookup' \(spread\): parameter"):
            tool(name="lookup")(spread)

    def test_an_async_callable_object_is_an_async_tool(self) -> None:
        made = FunctionTool(AsyncCallable(), name="get")
        assert made.is_async
        assert made.invoke({"city": "Oslo"}, None) == "Oslo"  # type: ignore[arg-type]

    @pytest.mark.parametrize("function", [functools.partial(base, b=1), lambda a: a])
    def test_a_callable_without_a_name_needs_one(self, function: Any) -> None:
        with pytest.raises(ConfigurationError, match=r"pass one: FunctionTool\(function, name="):
            tool(function)

    @pytest.mark.parametrize("thing", [3, "add", None])
    def test_a_non_callable_is_refused(self, thing: Any) -> None:
        with pytest.raises(ConfigurationError, match="it is not callable"):
            FunctionTool(thing, name="thing")


class TestSupportedSignatures:
    def test_a_named_partial_is_a_tool(self) -> None:
        made = tool(name="increment")(functools.partial(base, b=1))
        assert made.description == "Add b to a."
        assert made.parameters()["required"] == ["a"]
        assert execute([made], "increment", a=4).value == 5

    def test_methods_and_keyword_only_parameters(self) -> None:
        class Counter:
            def __init__(self) -> None:
                self.total = 0

            def bump(self, *, by: int = 1) -> int:
                self.total += by
                return self.total

            @staticmethod
            def double(n: int) -> int:
                return 2 * n

        counter = Counter()
        assert execute([counter.bump], "bump", by=3).value == 3
        assert execute([Counter.double], "double", n=4).value == 8

    def test_names_of_legacy_pydantic_methods_are_plain_parameters(self) -> None:
        def convert(
            json: str, copy: bool = False, schema: str = "v1", model_name: str = "m"
        ) -> str:
            return f"{json} {copy} {schema} {model_name}"

        made = FunctionTool(convert)  # no pydantic "shadows an attribute" warning (an error here)
        assert list(made.parameters()["properties"]) == ["json", "copy", "schema", "model_name"]
        assert execute([made], "convert", json="{}", copy=True).value == "{} True v1 m"

    def test_an_underscore_tool_context_parameter_is_fine(self) -> None:
        def who(_context: ToolContext, greeting: str = "hi") -> str:
            return f"{greeting} {_context.state.agent_id}"

        assert execute([who], "who").value == "hi agent-1"


# --- the plain-argument shortcut: same result as pydantic, or it stands aside ------------------


@functools.cache
def _reference_model(function: Any) -> type[BaseModel]:
    fields = {
        name: (
            Any if param.annotation is inspect.Parameter.empty else param.annotation,
            ... if param.default is inspect.Parameter.empty else param.default,
        )
        for name, param in inspect.signature(function, eval_str=True).parameters.items()
        if name != "context"
    }
    return create_model("reference", __config__=ConfigDict(extra="forbid"), **fields)


def _reference(function: Any, arguments: dict[str, Any]) -> dict[str, Any] | str:
    """What pydantic makes of ``arguments`` for ``function``'s parameters, or "invalid"."""
    try:
        return dict(_reference_model(function).model_validate(arguments).__dict__)
    except ValidationError:
        return "invalid"


def _typed(values: dict[str, Any] | str) -> Any:
    """Values with their exact types (NaN made comparable), for an exact comparison."""
    if isinstance(values, str):
        return values
    return {
        name: (type(value), "nan" if value != value else value) for name, value in values.items()
    }


def echo_ints(a: int, b: int) -> dict[str, Any]:
    return {"a": a, "b": b}


def echo_mixed(
    count: int,
    ratio: float,
    flag: bool,
    label: str,
    maybe: int | None,
    level: float = 0.5,
    tag: str | None = None,
    limit: int = 3,
    anything=None,  # type: ignore[no-untyped-def]
    context: ToolContext | None = None,
) -> dict[str, Any]:
    return {
        "count": count,
        "ratio": ratio,
        "flag": flag,
        "label": label,
        "maybe": maybe,
        "level": level,
        "tag": tag,
        "limit": limit,
        "anything": anything,
    }


def echo_optional(x: bool | None = None, y: float | None = 2.0) -> dict[str, Any]:
    return {"x": x, "y": y}


_VALUES = st.one_of(
    st.integers(),
    st.integers(min_value=2**63, max_value=2**70),
    st.floats(),
    st.booleans(),
    st.text(max_size=5),
    st.sampled_from(["1", "2.5", "true", " 7 ", "\ud800"]),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


def _argument_dicts(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from([*names, "extra"]), _VALUES, max_size=len(names) + 1)


_EXACT: dict[Any, st.SearchStrategy[Any]] = {
    int: st.integers(),
    float: st.floats(),
    bool: st.booleans(),
    str: st.text(max_size=5),
    int | None: st.one_of(st.integers(), st.none()),
    str | None: st.one_of(st.text(max_size=5), st.none()),
    bool | None: st.one_of(st.booleans(), st.none()),
    float | None: st.one_of(st.floats(), st.none()),
    inspect.Parameter.empty: _VALUES,
}


def _well_typed(function: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Argument dicts with every value of exactly its parameter's type; defaults may be left out."""
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, param in inspect.signature(function, eval_str=True).parameters.items():
        if name == "context":
            continue
        target = required if param.default is inspect.Parameter.empty else optional
        target[name] = _EXACT[param.annotation]
    return st.fixed_dictionaries(required, optional=optional)


SIGNATURES = [echo_ints, echo_mixed, echo_optional]
_POSITIVE = Field(default=1, gt=0)
_made = functools.cache(FunctionTool)


class TestPlainArguments:
    @pytest.mark.parametrize("function", SIGNATURES, ids=lambda f: f.__name__)
    @settings(max_examples=100, deadline=None)
    @given(data=st.data())
    def test_shortcut_answers_like_pydantic(self, function: Any, data: st.DataObject) -> None:
        made = _made(function)
        names = list(made.parameters()["properties"])
        arguments = data.draw(_argument_dicts(names))
        plan = plain_plan(made._model)
        assert plan is not None  # these signatures are all plain
        shortcut = plain_arguments(plan, arguments)
        expected = _reference(function, arguments)
        if shortcut is not None:
            assert _typed(shortcut) == _typed(expected)
            assert list(shortcut) == list(expected)
        try:
            result: dict[str, Any] | str = made.invoke(
                arguments, ToolContext(AgentState(), ToolCall(name=made.name))
            )
        except InvalidToolArgumentsError:
            result = "invalid"
        assert _typed(result) == _typed(expected)

    @pytest.mark.parametrize("function", SIGNATURES, ids=lambda f: f.__name__)
    @settings(max_examples=100, deadline=None)
    @given(data=st.data())
    def test_exactly_typed_arguments_take_the_shortcut(
        self, function: Any, data: st.DataObject
    ) -> None:
        arguments = data.draw(_well_typed(function))
        plan = plain_plan(_made(function)._model)
        assert plan is not None
        shortcut = plain_arguments(plan, arguments)
        assert shortcut is not None
        assert _typed(shortcut) == _typed(_reference(function, arguments))

    @pytest.mark.parametrize(
        "arguments",
        [{"a": 1}, {"a": 1, "b": 2, "c": 3}, {"a": True, "b": 2}, {"a": "1", "b": 2}, {}],
    )
    def test_anything_else_goes_to_pydantic(self, arguments: dict[str, Any]) -> None:
        plan = plain_plan(FunctionTool(echo_ints)._model)
        assert plan is not None
        assert plain_arguments(plan, arguments) is None

    def test_a_mapping_that_is_not_a_dict_goes_to_pydantic(self) -> None:
        plan = plain_plan(FunctionTool(echo_ints)._model)
        assert plan is not None
        assert plain_arguments(plan, MappingProxyType({"a": 1, "b": 2})) is None
        assert (
            add.invoke(MappingProxyType({"a": 1}), ToolContext(AgentState(), ToolCall(name="add")))
            == 3
        )

    def test_the_default_is_handed_over_as_is(self) -> None:
        plan = plain_plan(FunctionTool(echo_optional)._model)
        assert plan is not None
        assert plain_arguments(plan, {}) == {"x": None, "y": 2.0}

    @pytest.mark.parametrize(
        "function",
        [
            lambda a=_POSITIVE: a,
            lambda a=[1]: a,  # a mutable default: pydantic copies it
        ],
    )
    def test_special_defaults_are_not_plain(self, function: Any) -> None:
        assert plain_plan(FunctionTool(function, name="f")._model) is None

    def test_constrained_or_special_parameters_are_not_plain(self) -> None:
        def positive(a: Annotated[int, Field(gt=0)]) -> int:
            return a

        def strict(a: Annotated[int, Field(strict=True)]) -> int:
            return a

        def aliased(a: Annotated[int, Field(alias="A")]) -> int:
            return a

        def made_fresh(a: Annotated[list[int], Field(default_factory=list)]) -> int:
            return len(a)

        def nested(point: Point) -> int:
            return point.x

        def choice(mode: Literal["a", "b"]) -> str:
            return mode

        for function in (positive, strict, aliased, made_fresh, nested, choice):
            assert plain_plan(FunctionTool(function)._model) is None, function.__name__

    def test_errors_are_worded_by_pydantic_still(self) -> None:
        made = FunctionTool(echo_ints)
        with pytest.raises(InvalidToolArgumentsError) as raised:
            made.invoke({"a": 1.5, "b": 2}, ToolContext(AgentState(), ToolCall(name="echo_ints")))
        assert raised.value.field == "a"
        assert "integer" in str(raised.value)


def test_tools_from_a_mapping_name_functions_and_rename_other_tools() -> None:
    scripted = ScriptedTool("w", [ToolReply(returns="sunny")])
    tools = Tools({"weather": scripted, "double": lambda x: 2 * x})
    assert tools.names() == ("weather", "double")
    renamed = tools.get("weather")
    assert isinstance(renamed, ScriptedTool)
    assert renamed is not scripted
    assert scripted.name == "w"
    assert [schema.name for schema in tools.schemas()] == ["weather", "double"]
