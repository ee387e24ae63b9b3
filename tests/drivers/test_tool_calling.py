"""``ToolCallingDriver``: request building, output messages, retries, inference hooks (D9)."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentBuilder,
    AgentEvent,
    AgentStop,
    ConfigurationError,
    EventBus,
    ExecutionStatus,
    HookContext,
    InferenceProvider,
    InferenceRequest,
    InferenceResponse,
    LlmConfig,
    Message,
    Messages,
    Role,
    StopReason,
    ToolCallingDriver,
    Usage,
    UseContextConfig,
    UseLlmConfig,
)
from agentrig.fakes import FunctionLLM, ScriptedLLM, call, calls, fail, reply


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


class TestRequest:
    def test_system_prompt_first_then_the_conversation_and_tool_schemas(
        self, make_agent, start
    ) -> None:
        llm = ScriptedLLM(["hi"])
        agent = make_agent(llm, [lookup], UseContextConfig(system_prompt="Be brief."))
        agent.execute(start("question"))
        (request,) = llm.requests
        assert [(m.role, m.content) for m in request.messages] == [
            (Role.SYSTEM, "Be brief."),
            (Role.USER, "question"),
        ]
        (schema,) = request.tools
        assert schema.name == "lookup"
        assert schema.description == "Look something up."
        assert schema.parameters["required"] == ["q"]

    def test_no_tools_no_schemas(self, make_agent, start) -> None:
        llm = ScriptedLLM(["hi"])
        make_agent(llm).execute(start())
        assert llm.requests[0].tools == ()
        assert llm.requests[0].messages.roles() == (Role.USER,)

    def test_system_prompt_never_enters_the_store(self, make_agent, start) -> None:
        agent = make_agent(ScriptedLLM(["hi"]), (), UseContextConfig(system_prompt="Secret."))
        final = agent.execute(start())
        assert final.system_prompt() == "Secret."
        assert "Secret." not in final.messages().to_text()

    def test_response_format(self, make_agent, start) -> None:
        llm = ScriptedLLM(["{}"])
        fmt = {"type": "json_object"}
        make_agent(llm, (), UseContextConfig(response_format=fmt)).execute(start())
        assert llm.requests[0].response_format == fmt

    def test_driver_llm_config_fills_an_empty_state(self, make_agent, start) -> None:
        llm = ScriptedLLM(["hi"])
        config = LlmConfig(model="m-default")
        agent = make_agent(llm, (), UseLlmConfig(llm_config=config))
        final = agent.execute(start())
        assert llm.requests[0].llm_config == config
        assert final.llm_config == config

    def test_state_llm_config_wins(self, make_agent, start) -> None:
        llm = ScriptedLLM(["hi"])
        agent = make_agent(llm, (), UseLlmConfig(llm_config=LlmConfig(model="m-default")))
        agent.execute(start(llm_config=LlmConfig(model="m-state")))
        assert llm.requests[0].llm_config == LlmConfig(model="m-state")


class TestOutputMessages:
    def test_tool_step_outputs_the_call_then_one_result_per_call(self, make_agent, start) -> None:
        llm = ScriptedLLM([call("lookup", q="x"), reply("ok")])
        final = make_agent(llm, [lookup]).execute(start())
        step = final.steps()[0]
        assistant, result = step.output_messages
        assert assistant.role is Role.ASSISTANT
        assert assistant.tool_calls == step.requested_tool_calls()
        assert result.tool_result is not None
        assert result.tool_result.call_id == assistant.tool_calls[0].id
        assert result.tool_result.content == "found x"
        assert result.metadata["tool_execution_id"] == step.tool_executions[0].id
        assert step.input_messages == llm.requests[0].messages

    def test_final_step_outputs_one_assistant_message(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM(["the answer"])).execute(start())
        assert [(m.role, m.content) for m in final.steps()[0].output_messages] == [
            (Role.ASSISTANT, "the answer")
        ]

    def test_empty_answer_outputs_nothing(self, make_agent, start) -> None:
        final = make_agent(FunctionLLM(lambda request: InferenceResponse())).execute(start())
        assert final.steps()[0].output_messages == Messages()
        assert not final.has_final_response()
        assert final.status() is ExecutionStatus.COMPLETED


class TestRetries:
    def test_retryable_errors_are_retried(self, make_agent, start) -> None:
        llm = ScriptedLLM([fail("busy", retryable=True), fail("busy", retryable=True), "ok"])
        final = make_agent(llm, max_retries=3).execute(start())
        assert final.status() is ExecutionStatus.COMPLETED
        assert final.final_response().to_text() == "ok"
        assert [c.error for c in llm.calls] == ["busy", "busy", None]
        llm.assert_complete()

    def test_exhausted_retries_fail_with_retry_limit(self, make_agent, start) -> None:
        llm = ScriptedLLM([fail("busy", retryable=True)] * 3)
        final = make_agent(llm, max_retries=3).execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert final.last_stop_reason() is StopReason.RETRY_LIMIT
        assert "3 attempt(s)" in final.errors()[0].message
        assert final.errors()[0].type == "RetryLimitExceededError"
        llm.assert_complete()

    def test_non_retryable_errors_fail_at_once(self, make_agent, start) -> None:
        llm = ScriptedLLM([fail("bad key"), "never"])
        final = make_agent(llm, max_retries=3).execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert final.last_stop_reason() is StopReason.ERROR
        assert final.errors()[0].message == "bad key"
        assert llm.remaining == 1

    def test_without_retries_a_retryable_error_is_a_plain_error(self, make_agent, start) -> None:
        final = make_agent(ScriptedLLM([fail("busy", retryable=True)])).execute(start())
        assert final.last_stop_reason() is StopReason.ERROR

    @pytest.mark.parametrize("attempts", [0, -1])
    def test_attempts_below_one_are_rejected(self, attempts: int) -> None:
        with pytest.raises(ConfigurationError, match="max_attempts"):
            ToolCallingDriver(ScriptedLLM([]), max_attempts=attempts)
        with pytest.raises(ConfigurationError, match="max_retries"):
            UseLlmConfig(ScriptedLLM([]), max_retries=attempts)


class TestInferenceHooks:
    def test_before_inference_request_can_replace_the_request(self, make_agent, start) -> None:
        def add_note(ctx: HookContext) -> HookContext:
            assert ctx.inference_request is not None
            request = ctx.inference_request
            messages = request.messages.appended(Message.user("(be polite)"))
            return ctx.with_inference_request(request.evolve(messages=messages))

        llm = ScriptedLLM(["hi"])
        final = make_agent(llm, hooks=[(add_note, "before_inference_request", 0)]).execute(
            start("q")
        )
        assert llm.requests[0].messages.to_text() == "q\n(be polite)"
        assert final.steps()[0].input_messages == llm.requests[0].messages

    def test_after_inference_response_can_replace_the_response(self, make_agent, start) -> None:
        def patch(ctx: HookContext) -> HookContext:
            return ctx.with_inference_response(InferenceResponse(content="patched"))

        agent = make_agent(ScriptedLLM(["raw"]), hooks=[(patch, "after_inference_response", 0)])
        final = agent.execute(start())
        assert final.final_response().to_text() == "patched"
        assert final.steps()[0].inference_response.content == "patched"

    def test_a_stop_after_the_response_keeps_the_answer_and_its_usage(
        self, make_agent, start
    ) -> None:
        def stop(ctx: HookContext) -> HookContext:
            raise AgentStop("seen enough")

        llm = ScriptedLLM([reply("hi", usage=Usage(input_tokens=100, output_tokens=50))])
        final = make_agent(llm, hooks=[(stop, "after_inference_response", 0)]).execute(start())
        assert final.status() is ExecutionStatus.STOPPED
        assert final.last_stop_reason() is StopReason.STOP_REQUESTED
        assert final.step_count() == 1
        assert final.usage().total() == 150
        assert final.final_response().to_text() == "hi"

    def test_a_stop_after_the_response_gives_each_requested_call_a_result(
        self, make_agent, start
    ) -> None:
        def stop(ctx: HookContext) -> HookContext:
            raise AgentStop("not now")

        llm = ScriptedLLM([calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"}))])
        final = make_agent(
            llm, tools=[lookup], hooks=[(stop, "after_inference_response", 0)]
        ).execute(start())
        (step,) = final.steps()
        assert [e.tool_call.arguments for e in step.tool_executions] == [{"q": "a"}, {"q": "b"}]
        assert all(e.stopped and e.error is None for e in step.tool_executions)
        assert all("Not executed" in e.content for e in step.tool_executions)
        assert final.messages().roles() == (Role.USER,)  # the trace was cleared with the buffer

    @pytest.mark.parametrize("trigger", ["after_inference_response", "before_tool_use"])
    def test_a_hook_failing_after_the_answer_keeps_the_step_and_its_usage(
        self, make_agent, start, trigger: str
    ) -> None:
        def boom(ctx: HookContext) -> HookContext:
            raise ValueError("hook broke")

        usage = Usage(input_tokens=100, output_tokens=50, cost=1.0)
        llm = ScriptedLLM([calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"}), usage=usage)])
        final = make_agent(llm, tools=[lookup], hooks=[(boom, trigger, 0)]).execute(start())
        assert final.status() is ExecutionStatus.FAILED
        assert final.last_stop_reason() is StopReason.ERROR
        (step,) = final.steps()
        assert [(e.type, e.message) for e in step.all_errors()] == [("ValueError", "hook broke")]
        assert final.usage() == usage  # budgets count what was paid for
        assert [e.tool_call.arguments for e in step.tool_executions] == [{"q": "a"}, {"q": "b"}]
        assert all(e.stopped and e.error is None for e in step.tool_executions)
        assert all("a hook failed" in e.content for e in step.tool_executions)

    def test_an_after_tool_use_hook_failing_keeps_the_result_of_the_call_that_ran(
        self, make_agent, start
    ) -> None:
        def boom(ctx: HookContext) -> HookContext:
            raise ValueError("hook broke")

        llm = ScriptedLLM([calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"}))])
        final = make_agent(llm, tools=[lookup], hooks=[(boom, "after_tool_use", 0)]).execute(
            start()
        )
        (step,) = final.steps()
        ran, skipped = step.tool_executions
        assert (ran.tool_call.arguments, ran.stopped, ran.error) == ({"q": "a"}, False, None)
        assert ran.content == lookup("a")
        assert skipped.stopped
        assert "a hook failed" in skipped.content
        assert final.status() is ExecutionStatus.FAILED

    def test_hook_and_event_order(self, make_agent, start) -> None:
        log: list[str] = []
        events = EventBus()

        def on_event(event: AgentEvent) -> None:
            if event.name.startswith("Inference"):
                log.append(event.name)

        events.wiretap(on_event)
        hooks = [
            (lambda ctx: log.append("before_hook"), "before_inference_request", 0),
            (lambda ctx: log.append("after_hook"), "after_inference_response", 0),
        ]
        make_agent(ScriptedLLM(["hi"]), hooks=hooks, events=events).execute(start())
        assert log == [
            "before_hook",
            "InferenceRequestStarted",
            "after_hook",
            "InferenceResponseReceived",
        ]


class TestDriverValue:
    def test_with_methods_return_copies(self) -> None:
        first, second = ScriptedLLM([]), ScriptedLLM([])
        driver = ToolCallingDriver(first)
        changed = driver.with_provider(second).with_max_attempts(2)
        assert (driver.provider, driver.max_attempts) == (first, 1)
        assert (changed.provider, changed.max_attempts) == (second, 2)

    def test_fakes_satisfy_the_provider_protocol(self) -> None:
        assert isinstance(ScriptedLLM([]), InferenceProvider)
        assert isinstance(FunctionLLM(lambda r: "x"), InferenceProvider)

    def test_use_llm_config_needs_a_provider_or_driver(self) -> None:
        with pytest.raises(ConfigurationError, match="needs a provider"):
            AgentBuilder.base().with_capability(UseLlmConfig())

    def test_use_llm_config_reconfigures_an_existing_driver(self) -> None:
        llm = ScriptedLLM([])
        builder = AgentBuilder.base().with_driver(ToolCallingDriver(llm))
        builder.with_capability(UseLlmConfig(llm_config=LlmConfig(model="x"), max_retries=2))
        driver = builder.driver()
        assert isinstance(driver, ToolCallingDriver)
        assert (driver.provider, driver.max_attempts) == (llm, 2)
        assert driver.llm_config == LlmConfig(model="x")


def test_function_llm_sees_each_request(make_agent, start) -> None:
    def answer(request: InferenceRequest) -> str:
        return f"you said {request.messages.last().content}"  # type: ignore[union-attr]

    final = make_agent(FunctionLLM(answer)).execute(start("ping"))
    assert final.final_response().to_text() == "you said ping"
