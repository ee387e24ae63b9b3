"""``UseSubagents``: isolated children, depth limits, failures, usage and events (DESIGN D8)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentrig import (
    AgentBuilder,
    AgentEvent,
    AgentIdentity,
    AgentState,
    CancellationToken,
    ConfigurationError,
    EventBus,
    ExecutionBudget,
    ExecutionStatus,
    InferenceRequest,
    InvalidToolArgumentsError,
    Role,
    StepRuntime,
    StopReason,
    SubagentCompleted,
    SubagentDefinition,
    SubagentNotFoundError,
    SubagentPolicy,
    Subagents,
    SubagentSpawning,
    ToolCallingDriver,
    ToolExecution,
    Usage,
    UseCooperativeCancellation,
    UseLlmConfig,
    UseSubagents,
    current_agent,
)
from agentrig.fakes import (
    FakeClock,
    FunctionLLM,
    InvalidScriptError,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
    UnusedTurnsError,
    calls,
    reply,
)

CHILD_PROMPT = "You are the researcher. CHILD-SECRET."


def spawn(subagent: str = "researcher", prompt: str = "find it", **options: Any) -> Turn:
    return calls(("spawn_subagent", {"subagent": subagent, "prompt": prompt}), **options)


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def researcher(child: ScriptedLLM, **fields: Any) -> SubagentDefinition:
    return SubagentDefinition(
        name="researcher",
        description="Finds things.",
        system_prompt=CHILD_PROMPT,
        provider=child,
        **fields,
    )


def parent_run(
    make_agent, start, parent_script: list, *definitions: SubagentDefinition, **options: Any
) -> AgentState:
    policy = options.pop("policy", None)
    agent = make_agent(
        ScriptedLLM(parent_script), [lookup, delete], UseSubagents(definitions, policy), **options
    )
    return agent.execute(start("parent question"))


def spawn_execution(final: AgentState) -> ToolExecution:
    return final.steps()[0].tool_executions[0]


class TestSuccess:
    def test_parent_sees_only_the_child_final_text(self, make_agent, start) -> None:
        child = ScriptedLLM([calls(("lookup", {"q": "x"})), reply("child found x")])
        final = parent_run(make_agent, start, [spawn(), reply("parent done")], researcher(child))
        assert final.status() is ExecutionStatus.COMPLETED
        execution = spawn_execution(final)
        assert execution.content == "child found x"
        assert execution.value["response"] == "child found x"  # type: ignore[index]
        assert execution.value["status"] == "completed"  # type: ignore[index]
        assert [m.role for m in final.messages()] == [Role.USER, Role.ASSISTANT]
        assert final.messages()[-1].content == "parent done"

    def test_the_child_gets_its_own_prompt_and_never_leaks_into_the_parent(
        self, make_agent, start
    ) -> None:
        child = ScriptedLLM(["child answer"])
        final = parent_run(make_agent, start, [spawn(prompt="dig"), reply("ok")], researcher(child))
        child_request = child.requests[0]
        assert [(m.role, m.content) for m in child_request.messages] == [
            (Role.SYSTEM, CHILD_PROMPT),
            (Role.USER, "dig"),
        ]
        assert "CHILD-SECRET" not in final.to_json()
        assert "parent question" not in child_request.messages.to_text()

    def test_child_usage_counts_in_the_parent(self, make_agent, start) -> None:
        child = ScriptedLLM([reply("child", usage=Usage(input_tokens=7, cost=0.5))])
        parent_script = [
            spawn(usage=Usage(input_tokens=3)),
            reply("ok", usage=Usage(output_tokens=2)),
        ]
        final = parent_run(make_agent, start, parent_script, researcher(child))
        assert final.usage() == Usage(input_tokens=10, output_tokens=2, cost=0.5)
        assert spawn_execution(final).usage == Usage(input_tokens=7, cost=0.5)

    def test_child_events_carry_the_parent_agent_id(self, make_agent, start) -> None:
        events = EventBus()
        seen: list[AgentEvent] = []
        events.wiretap(seen.append)
        child = ScriptedLLM(["child answer"])
        final = parent_run(
            make_agent, start, [spawn(), reply("ok")], researcher(child), events=events
        )
        child_events = [e for e in seen if e.agent_id != final.agent_id]
        assert child_events
        assert {e.parent_agent_id for e in child_events} == {final.agent_id}
        assert {e.parent_agent_id for e in seen if e.agent_id == final.agent_id} == {None}
        spawning = next(e for e in seen if isinstance(e, SubagentSpawning))
        assert (spawning.subagent_name, spawning.depth, spawning.max_depth) == ("researcher", 1, 3)
        completed = next(e for e in seen if isinstance(e, SubagentCompleted))
        assert completed.status == ExecutionStatus.COMPLETED
        assert completed.subagent_id in {e.agent_id for e in child_events}

    def test_the_child_shares_the_parent_provider_by_default(self, make_agent, start) -> None:
        shared = [spawn(), reply("child via shared provider"), reply("parent done")]
        plain = SubagentDefinition(name="researcher")
        final = parent_run(make_agent, start, shared, plain)
        assert spawn_execution(final).content == "child via shared provider"
        assert final.final_response().to_text() == "parent done"


class TestTools:
    def child_tool_names(self, make_agent, start, **fields: Any) -> list[str]:
        child = ScriptedLLM(["done"])
        parent_run(make_agent, start, [spawn(), reply("ok")], researcher(child, **fields))
        return [schema.name for schema in child.requests[0].tools]

    def test_all_parent_tools_by_default(self, make_agent, start) -> None:
        names = self.child_tool_names(make_agent, start)
        assert names == ["lookup", "delete", "spawn_subagent"]

    def test_allow_list(self, make_agent, start) -> None:
        assert self.child_tool_names(make_agent, start, tools=("lookup",)) == ["lookup"]

    def test_deny_list(self, make_agent, start) -> None:
        names = self.child_tool_names(make_agent, start, deny=("delete", "spawn_subagent"))
        assert names == ["lookup"]

    def test_tool_schema_lists_the_subagents(self, make_agent) -> None:
        agent = make_agent(ScriptedLLM([]), (), UseSubagents([researcher(ScriptedLLM([]))]))
        tool = agent.tools.get("spawn_subagent")
        assert tool is not None
        assert tool.parameters()["properties"]["subagent"]["enum"] == ["researcher"]
        assert "- researcher: Finds things. (tools: all parent tools)" in tool.description


class TestDepth:
    def test_nesting_works_up_to_the_limit(self, make_agent, start) -> None:
        nested = ScriptedLLM(
            [spawn(prompt="deeper"), reply("grandchild answer"), reply("child: ok")]
        )
        final = parent_run(
            make_agent,
            start,
            [spawn(), reply("parent done")],
            researcher(nested),
            policy=SubagentPolicy(max_depth=2),
        )
        assert final.status() is ExecutionStatus.COMPLETED
        assert spawn_execution(final).content == "child: ok"
        nested.assert_complete()

    def test_spawning_past_the_limit_is_a_clean_tool_error(self, make_agent, start) -> None:
        nested = ScriptedLLM([spawn(prompt="deeper"), reply("child gave up")])
        final = parent_run(
            make_agent,
            start,
            [spawn(), reply("parent done")],
            researcher(nested),
            policy=SubagentPolicy(max_depth=1),
        )
        execution = spawn_execution(final)
        assert execution.error_type == "SubagentFailedError"
        assert "Maximum nesting depth (1) reached for subagent 'researcher'" in execution.content
        assert final.final_response().to_text() == "parent done"
        assert final.status() is ExecutionStatus.FAILED

    def test_max_depth_zero_forbids_spawning(self, make_agent, start) -> None:
        child = ScriptedLLM([])
        final = parent_run(
            make_agent,
            start,
            [spawn(), reply("ok")],
            researcher(child),
            policy=SubagentPolicy(max_depth=0),
        )
        assert spawn_execution(final).error_type == "SubagentDepthExceededError"
        assert child.calls == ()

    def test_negative_depth_is_a_configuration_error(self) -> None:
        with pytest.raises(ConfigurationError, match="max_depth"):
            SubagentPolicy(max_depth=-1)


class TestFailures:
    def test_unknown_subagent_lists_the_available_ones(self, make_agent, start) -> None:
        final = parent_run(
            make_agent, start, [spawn("ghost"), reply("ok")], researcher(ScriptedLLM([]))
        )
        execution = spawn_execution(final)
        assert execution.error_type == "SubagentNotFoundError"
        assert execution.content == (
            "Error in tool call: Subagent 'ghost' not found. Available subagents: researcher"
        )

    def test_child_failure_is_a_tool_error(self, make_agent, start) -> None:
        child = ScriptedLLM([])
        final = parent_run(make_agent, start, [spawn(), reply("ok")], researcher(child))
        execution = spawn_execution(final)
        assert execution.error_type == "SubagentFailedError"
        assert "Subagent 'researcher' failed:" in execution.content
        assert "call 1 was not scripted" in execution.content
        assert final.status() is ExecutionStatus.FAILED
        assert final.final_response().to_text() == "ok"

    def test_child_budget_stop_reports_no_final_response(self, make_agent, start) -> None:
        child = ScriptedLLM([calls(("lookup", {"q": "1"})), calls(("lookup", {"q": "2"}))])
        definition = researcher(child, budget=ExecutionBudget(max_steps=1))
        final = parent_run(make_agent, start, [spawn(), reply("ok")], definition)
        execution = spawn_execution(final)
        assert not execution.has_error
        assert execution.content.startswith(
            "[subagent 'researcher' stopped without a final response: steps_limit"
        )
        assert execution.value["stop_reason"] == StopReason.STEPS_LIMIT  # type: ignore[index]
        assert child.remaining == 1
        assert final.status() is ExecutionStatus.COMPLETED

    def test_a_child_that_cannot_be_built_is_not_announced_as_spawning(
        self, clock, ids, start
    ) -> None:
        class PlainDriver:
            """A driver of one's own: it cannot take another provider."""

            def __init__(self, inner: ToolCallingDriver) -> None:
                self.inner = inner

            def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
                return self.inner.use_tools(state, runtime)

        events = EventBus()
        seen: list[AgentEvent] = []
        events.wiretap(seen.append)
        parent = ToolCallingDriver(ScriptedLLM([spawn(), reply("ok")]))
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_driver(PlainDriver(parent))
            .with_events(events)
            .with_capability(UseSubagents([researcher(ScriptedLLM([]))]))
            .build()
        )
        execution = spawn_execution(agent.execute(start()))
        assert execution.error_type == "ConfigurationError"
        assert "cannot take one" in execution.content
        assert not [e for e in seen if isinstance(e, SubagentSpawning | SubagentCompleted)]

    def test_bad_spawn_arguments(self, make_agent, start) -> None:
        bad = calls(("spawn_subagent", {"subagent": "researcher", "prompt": 3, "x": 1}))
        final = parent_run(make_agent, start, [bad, reply("ok")], researcher(ScriptedLLM([])))
        execution = spawn_execution(final)
        assert execution.error_type == InvalidToolArgumentsError.__name__
        assert "prompt: required string" in execution.content
        assert "x: unexpected argument" in execution.content


def test_subagents_lookup() -> None:
    provider = Subagents([SubagentDefinition(name="a"), SubagentDefinition(name="b")])
    assert provider.names() == ("a", "b")
    with pytest.raises(SubagentNotFoundError) as raised:
        provider.get("c")
    assert raised.value.available == ["a", "b"]


class TestConfigurationErrors:
    def test_duplicate_names_are_refused(self) -> None:
        with pytest.raises(ConfigurationError, match="'a' is defined twice"):
            Subagents([SubagentDefinition(name="a"), SubagentDefinition(name="a")])

    def test_installing_twice_would_lose_the_first_set(self, make_agent) -> None:
        first = UseSubagents([SubagentDefinition(name="a")])
        second = UseSubagents([SubagentDefinition(name="b")])
        with pytest.raises(ConfigurationError, match=r"one UseSubagents\(\[\.\.\.\]\)"):
            make_agent(ScriptedLLM([]), (), first, second)

    @pytest.mark.parametrize("field", ["tools", "deny"])
    def test_an_unknown_tool_name_is_refused_at_build(self, make_agent, field: str) -> None:
        definition = SubagentDefinition(name="a", **{field: ("lookup", "delte")})
        with pytest.raises(ConfigurationError, match=rf"'a'.*{field}.*'delte'.*delete, lookup"):
            make_agent(ScriptedLLM([]), [lookup, delete], UseSubagents([definition]))

    def test_spawn_subagent_may_be_named_in_tools_and_deny(self, make_agent) -> None:
        definitions = [
            SubagentDefinition(name="a", tools=("spawn_subagent",)),
            SubagentDefinition(name="b", deny=("spawn_subagent",)),
        ]
        agent = make_agent(ScriptedLLM([]), [lookup], UseSubagents(definitions))
        assert agent.tools.names() == ("lookup", "spawn_subagent")


def test_cancelling_the_parent_stops_a_running_child(make_agent, start) -> None:
    token = CancellationToken()

    def press_stop(q: str) -> str:
        """Cancel the whole run, as a user pressing stop would."""
        token.cancel("user pressed stop")
        return "stopping"

    child = ScriptedLLM([calls(("press_stop", {"q": "x"})), calls(("lookup", {"q": "y"}))])
    definition = researcher(child, tools=("press_stop", "lookup"))
    parent = ScriptedLLM([spawn(), reply("never said")])
    final = make_agent(
        parent, [lookup, press_stop], UseSubagents([definition]), UseCooperativeCancellation(token)
    ).execute(start())
    assert final.last_stop_reason() is StopReason.USER_REQUESTED
    assert child.remaining == 1  # the child stopped at its next checkpoint
    assert parent.remaining == 1
    assert "stopped without a final response" in spawn_execution(final).content


class TestOneScriptedLLMForParentAndChildren:
    """``ScriptedLLM(..., subagents={name: script})``: each subagent plays its own script,
    and a script error names the agent that asked."""

    @staticmethod
    def agent(make_agent: Any, llm: ScriptedLLM) -> Any:
        definition = SubagentDefinition(name="researcher", description="Finds things.")
        return make_agent(llm, [lookup], UseSubagents([definition]))

    @pytest.mark.parametrize("run_async", [False, True])
    def test_each_agent_plays_its_own_script(self, make_agent, start, run_async: bool) -> None:
        llm = ScriptedLLM(
            [spawn(), reply("The researcher found it.")],
            subagents={"researcher": [calls(("lookup", {"q": "x"})), reply("found x")]},
        )
        agent = self.agent(make_agent, llm)
        state = start("parent question")
        final = asyncio.run(agent.aexecute(state)) if run_async else agent.execute(state)
        assert final.status() is ExecutionStatus.COMPLETED
        assert final.final_response().to_text() == "The researcher found it."
        assert final.steps()[0].tool_executions[0].content == "found x"
        assert len(llm.calls) == 2
        assert len(llm.subagents["researcher"].calls) == 2
        llm.assert_complete()

    def test_a_shared_script_that_runs_out_names_the_subagent(self, make_agent, start) -> None:
        llm = ScriptedLLM([spawn()])  # the child's first call takes the parent's next turn
        final = self.agent(make_agent, llm).execute(start("parent question"))
        error = final.steps()[0].tool_executions[0].error
        assert error is not None
        assert "asked by subagent 'researcher' (depth 1): call 2 was not scripted" in error
        messages = [recorded.message for recorded in final.errors()]
        assert any("asked by the top-level agent: call 3 was not scripted" in m for m in messages)

    def test_unused_turns_of_a_subagent_are_named(self, make_agent, start) -> None:
        llm = ScriptedLLM(["done"], subagents={"researcher": ["never asked"]})
        self.agent(make_agent, llm).execute(start())
        with pytest.raises(
            UnusedTurnsError, match=r"subagent 'researcher': scripted turn 1 was never used"
        ):
            llm.assert_complete()

    def test_unused_turns_of_the_main_script_name_the_parent_agent(self, make_agent, start) -> None:
        llm = ScriptedLLM(["done", "never asked"], subagents={"researcher": []})
        self.agent(make_agent, llm).execute(start())
        with pytest.raises(
            UnusedTurnsError,
            match=r"ScriptedLLM for the top-level agent: scripted turn 2 was never used",
        ):
            llm.assert_complete()

    @staticmethod
    def nested(make_agent: Any, llm: ScriptedLLM) -> Any:
        """An agent that may spawn ``planner`` (which may spawn again) and ``research``."""
        definitions = [
            SubagentDefinition(name="planner", description="Plans."),
            SubagentDefinition(name="research", description="Finds.", tools=("lookup",)),
        ]
        return make_agent(llm, [lookup], UseSubagents(definitions))

    @staticmethod
    def prompts(script: ScriptedLLM) -> list[str]:
        return [request.messages[-1].content for request in script.requests]

    @pytest.mark.parametrize("run_async", [False, True])
    def test_a_path_key_scripts_a_nested_subagent_apart_from_its_namesake(
        self, make_agent, start, run_async: bool
    ) -> None:
        llm = ScriptedLLM(
            [spawn("research", "top"), spawn("planner", "plan"), reply("all done")],
            subagents={
                "research": [reply("top research")],
                "planner": [spawn("research", "deep"), reply("planned")],
                "planner/research": [reply("deep research")],
            },
        )
        agent = self.nested(make_agent, llm)
        state = start("go")
        final = asyncio.run(agent.aexecute(state)) if run_async else agent.execute(state)
        assert final.final_response().to_text() == "all done"
        assert self.prompts(llm.subagents["research"]) == ["top"]
        assert self.prompts(llm.subagents["planner/research"]) == ["deep"]
        assert [s.tool_executions[0].content for s in final.steps()[:2]] == [
            "top research",
            "planned",
        ]
        llm.assert_complete()

    def test_children_spawned_together_run_on_the_event_loop_in_call_order(
        self, make_agent, start
    ) -> None:
        """In the async path a child runs its own async loop on the caller's event loop: no
        worker thread, so a shared scripted model plays its turns to the children in call order
        on every run (in threads, the two children raced for the script)."""
        threads: set[int] = set()

        def child_answer(request: InferenceRequest) -> str:
            threads.add(threading.get_ident())
            return "answer " + request.messages[-1].content

        two_spawns = calls(
            ("spawn_subagent", {"subagent": "research", "prompt": "A"}),
            ("spawn_subagent", {"subagent": "research", "prompt": "B"}),
        )
        definitions = [SubagentDefinition(name="research", provider=FunctionLLM(child_answer))]
        agent = make_agent(ScriptedLLM([two_spawns, reply("done")]), [], UseSubagents(definitions))
        final = asyncio.run(agent.aexecute(start("go")))
        assert [e.content for e in final.steps()[0].tool_executions] == ["answer A", "answer B"]
        assert threads == {threading.get_ident()}

        runs = set()
        for _ in range(5):
            llm = ScriptedLLM([two_spawns, reply("done")], subagents={"research": ["1st", "2nd"]})
            agent = (
                AgentBuilder.base()
                .with_clock(FakeClock())
                .with_ids(SeededIds(7))
                .with_capability(UseLlmConfig(llm))
                .with_capability(UseSubagents([SubagentDefinition(name="research")]))
                .build()
            )
            final = asyncio.run(agent.aexecute(agent.new_state("go")))
            assert [e.content for e in final.steps()[0].tool_executions] == ["1st", "2nd"]
            assert self.prompts(llm.subagents["research"]) == ["A", "B"]
            runs.add(final.to_json())
        assert len(runs) == 1  # the same ids on the same records every time

    def test_a_bare_name_scripts_that_subagent_at_any_depth(self, make_agent, start) -> None:
        llm = ScriptedLLM(
            [spawn("research", "top"), spawn("planner", "plan"), reply("all done")],
            subagents={
                "research": [reply("top research"), reply("deep research")],
                "planner": [spawn("research", "deep"), reply("planned")],
            },
        )
        self.nested(make_agent, llm).execute(start("go"))
        assert self.prompts(llm.subagents["research"]) == ["top", "deep"]
        llm.assert_complete()

    def test_errors_name_a_nested_subagent_by_its_path_and_depth(self, make_agent, start) -> None:
        seen: list[AgentIdentity] = []

        def probe(q: str) -> str:
            """Say who calls."""
            seen.append(current_agent())
            return q

        definitions = [
            SubagentDefinition(name="planner", description="Plans."),
            SubagentDefinition(name="research", description="Finds."),
        ]
        llm = ScriptedLLM(
            [spawn("planner", "plan"), reply("done")],
            subagents={
                "planner": [spawn("research", "deep"), reply("planned")],
                "planner/research": [calls(("probe", {"q": "x"}))],
            },
        )
        final = make_agent(llm, [probe], UseSubagents(definitions)).execute(start("go"))
        assert seen == [AgentIdentity(name="research", depth=2, parents=("planner",))]
        assert seen[0].path == "planner/research"
        planner_step = llm.subagents["planner"].requests[1].messages[-1].content
        assert (
            "ScriptedLLM for subagent 'planner/research', asked by subagent 'planner/research' "
            "(depth 2): call 2 was not scripted"
        ) in planner_step
        assert final.final_response().to_text() == "done"

    def test_a_function_llm_s_bad_answer_names_the_subagent(self, make_agent, start) -> None:
        def answers(request: InferenceRequest) -> Any:
            if current_agent().is_root():
                return spawn() if len(request.messages) == 1 else reply("done")
            return None  # not an answer

        final = self.agent(make_agent, FunctionLLM(answers)).execute(start("go"))
        error = spawn_execution(final).error
        assert error is not None
        assert "answers, call 2 (asked by subagent 'researcher' (depth 1)): " in error
        assert "must return an InferenceResponse, a Turn or a string, got NoneType" in error

    @pytest.mark.parametrize("key", ["planner//research", "/research", "research/"])
    def test_a_path_key_with_an_empty_name_is_refused(self, key: str) -> None:
        with pytest.raises(InvalidScriptError, match="path of names joined by '/'"):
            ScriptedLLM([], subagents={key: ["x"]})

    def test_an_identity_knows_its_path(self) -> None:
        planner = AgentIdentity().child("planner")
        research = planner.child("research")
        assert (planner.path, planner.depth) == ("planner", 1)
        assert (research.path, research.depth, research.parents) == (
            "planner/research",
            2,
            ("planner",),
        )
        assert str(research) == "subagent 'planner/research' (depth 2)"
        assert AgentIdentity().path == ""

    def test_a_bad_subagents_mapping_is_refused(self) -> None:
        with pytest.raises(InvalidScriptError, match="subagents must map subagent names"):
            ScriptedLLM([], subagents=["researcher"])  # type: ignore[arg-type]

    def test_outside_any_subagent_the_root_agent_runs(self) -> None:
        assert current_agent() == AgentIdentity()
        assert str(current_agent()) == "the top-level agent"
        assert current_agent().is_root()

    def test_a_scripted_tool_names_the_subagent_that_called_it(self, make_agent, start) -> None:
        probe = ScriptedTool(
            "probe", [ToolReply(returns="ok", when={"q": "a"})], params={"q": "string"}
        )
        definition = SubagentDefinition(name="researcher", description="Finds things.")
        llm = ScriptedLLM(
            [spawn(), reply("done")],
            subagents={"researcher": [calls(("probe", {"q": "b"})), reply("no luck")]},
        )
        make_agent(llm, [probe], UseSubagents([definition])).execute(start())
        seen = llm.subagents["researcher"].requests[1].messages[-1].content
        assert "scripted tool 'probe', asked by subagent 'researcher' (depth 1): call 1" in seen
