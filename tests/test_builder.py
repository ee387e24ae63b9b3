"""``AgentBuilder``: capabilities, tools, hooks, compiler and driver composed into a loop."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentBuilder,
    AgentCapability,
    AgentState,
    BuildContext,
    CancellationToken,
    ConfigurationError,
    FunctionTool,
    HookContext,
    Messages,
    SelectedSections,
    ToolCallingDriver,
    TraceMode,
    UseContextConfig,
    UseCooperativeCancellation,
    UseGuards,
    UseLlmConfig,
)
from agentrig.fakes import ScriptedLLM, call, reply


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def builder() -> AgentBuilder:
    return AgentBuilder.base().with_capability(UseLlmConfig(ScriptedLLM([])))


def test_build_without_a_driver_says_what_to_do() -> None:
    with pytest.raises(ConfigurationError, match="with_driver"):
        AgentBuilder.base().build()


def test_capability_hook_priorities() -> None:
    built = (
        builder()
        .with_capability(UseContextConfig(system_prompt="p"))
        .with_capability(UseGuards(max_steps=3, finish_reasons=["length"]))
        .with_capability(UseCooperativeCancellation(CancellationToken()))
        .add_hook(lambda ctx: None, "before_step", name="custom")
    )
    assert [(h.name, h.priority) for h in built.hook_stack().hooks] == [
        ("guard:cooperative_cancellation", 250),
        ("guard:budget", 200),
        ("context:config", 100),
        ("custom", 0),
        ("guard:finish_reason", -200),
    ]


def test_capabilities_install_in_order_and_are_remembered() -> None:
    installed: list[str] = []

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def install(self, builder: AgentBuilder) -> None:
            installed.append(self.name)

    first, second = Named("first"), Named("second")
    built = builder().with_capability(first).with_capability(second)
    assert installed == ["first", "second"]
    assert built.capabilities()[-2:] == (first, second)
    assert isinstance(first, AgentCapability)


def test_a_capability_can_install_tools_and_hooks(make_agent, start) -> None:
    class Lookup:
        def install(self, builder: AgentBuilder) -> None:
            builder.with_tools([lookup])
            builder.add_hook(self.tag, "after_execution", name="tagger")

        def tag(self, ctx: HookContext) -> HookContext:
            return ctx.with_state(ctx.state.with_metadata("tagged", True))

    llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
    final = make_agent(llm, (), Lookup()).execute(start())
    assert final.metadata() == {"tagged": True}
    assert final.steps()[0].tool_executions[0].value == "found x"


def test_tool_factories_see_the_tools_collected_so_far() -> None:
    seen: list[tuple[str, ...]] = []

    def factory(context: BuildContext) -> FunctionTool:
        seen.append(context.tools.names())
        assert isinstance(context.driver, ToolCallingDriver)
        return FunctionTool(lambda: "made", name="made")

    loop = builder().with_tools([lookup]).add_tool_factory(factory).build()
    assert seen == [("lookup",)]
    assert loop.tools.names() == ("lookup", "made")


def test_build_snapshots_the_builder() -> None:
    agent_builder = builder().with_tools([lookup])
    loop = agent_builder.build()
    agent_builder.with_tools([FunctionTool(lambda: 1, name="later")])
    assert loop.tools.names() == ("lookup",)


def test_a_copy_changes_without_changing_the_original() -> None:
    original = builder().with_tools([lookup])
    twin = original.copy()
    twin.with_tools([FunctionTool(lambda: 1, name="later")])
    twin.add_hook(lambda ctx: None, "before_step", name="twin-only")
    twin.add_tool_factory(lambda context: FunctionTool(lambda: 2, name="made"))
    twin.with_capability(UseContextConfig("twin prompt")).with_separated_tool_trace(False)
    loop = original.build()
    assert loop.tools.names() == ("lookup",)
    assert "twin-only" not in [hook.name for hook in loop.hooks.hooks]
    assert loop.trace_mode is TraceMode.SEPARATED
    assert len(original.capabilities()) == 1
    assert twin.build().tools.names() == ("lookup", "later", "made")
    assert len(twin.capabilities()) == 2
    assert twin.event_bus() is original.event_bus()  # listeners reach agents built from both


def test_trace_mode() -> None:
    assert builder().build().trace_mode is TraceMode.SEPARATED
    assert builder().with_separated_tool_trace(False).build().trace_mode is TraceMode.INLINE


def test_the_builder_compiler_reaches_the_driver(make_agent, start) -> None:
    compiled: list[int] = []

    class CountingCompiler:
        def compile(self, state: AgentState) -> Messages:
            compiled.append(state.step_count())
            return SelectedSections().compile(state)

    llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
    loop = (
        AgentBuilder.base()
        .with_capability(UseLlmConfig(llm))
        .with_tools([lookup])
        .with_context_compiler(CountingCompiler())
        .build()
    )
    loop.execute(start())
    assert compiled == [0, 1]
    assert [m.role.value for m in llm.requests[1].messages] == ["user"]


def test_capabilities_can_wrap_the_compiler() -> None:
    inner = SelectedSections()
    agent_builder = builder().with_context_compiler(inner)
    assert agent_builder.context_compiler() is inner


def test_empty_context_config_installs_nothing() -> None:
    assert len(builder().with_capability(UseContextConfig()).hook_stack()) == 0


class TestMisuse:
    def test_a_non_capability_names_what_is_expected(self) -> None:
        with pytest.raises(ConfigurationError, match=r"install\(builder\)"):
            AgentBuilder.base().with_capability(object())  # type: ignore[arg-type]

    def test_a_single_tool_instead_of_a_list_says_how_to_pass_it(self) -> None:
        with pytest.raises(ConfigurationError, match=r"with_tools\(\[lookup\]\)"):
            AgentBuilder.base().with_tools(lookup)  # type: ignore[arg-type]

    def test_a_tool_that_is_not_callable_is_named(self) -> None:
        with pytest.raises(ConfigurationError, match=r"'lookup'.*tools\[0\]"):
            AgentBuilder.base().with_tools(["lookup"])  # type: ignore[list-item]

    def test_a_driver_that_is_not_one_is_refused_when_given(self) -> None:
        with pytest.raises(ConfigurationError, match=r"use_tools\(state, runtime\)"):
            AgentBuilder.base().with_driver("gpt-4o")  # type: ignore[arg-type]


def test_a_capability_class_instead_of_an_instance_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"is not a capability.*UseGuards\(max_steps"):
        AgentBuilder.base().with_capability(UseGuards)  # type: ignore[arg-type]


class TestToolsByName:
    def test_a_mapping_names_lambdas_and_the_model_calls_them_by_those_names(self) -> None:
        llm = ScriptedLLM([call("add", a=2, b=3), call("shout", text="hi"), reply("done")])
        agent = (
            AgentBuilder.base()
            .with_tools({"add": lambda a, b: a + b, "shout": lambda text: text.upper()})
            .with_capability(UseLlmConfig(llm))
            .build()
        )
        final = agent.execute(AgentState().with_user_message("go"))
        assert [schema.name for schema in llm.requests[0].tools] == ["add", "shout"]
        results = [e.content for step in final.steps() for e in step.tool_executions]
        assert results == ["5", "HI"]

    def test_a_mapping_renames_a_function_or_a_tool(self) -> None:
        named = FunctionTool(lookup, name="find", description="Find it.")
        built = builder().with_tools({"search": lookup, "seek": named}).build()
        assert built.tools.names() == ("search", "seek")
        seek = built.tools.get("seek")
        assert seek is not None
        assert seek.description == "Find it."
        assert named.name == "find"  # the given tool is not changed

    def test_a_key_that_is_not_a_name_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match="non-empty strings, got ''"):
            builder().with_tools({"": lookup})

    def test_a_value_that_is_not_a_tool_is_named_by_its_key(self) -> None:
        with pytest.raises(ConfigurationError, match="tool 'find': 'lookup' is not a tool"):
            builder().with_tools({"find": "lookup"})
