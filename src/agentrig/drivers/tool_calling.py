"""``ToolCallingDriver``: one inference request, then the requested tool calls, as one step."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Self

from pydantic import JsonValue

from agentrig import clock
from agentrig._effects import (
    DeltaEvents,
    Effect,
    Infer,
    RunTools,
    infer_now,
    run_async,
    run_sync,
    runs_step,
)
from agentrig.compilers import (
    ContextCompiler,
    ConversationWithCurrentToolTrace,
    checked_messages,
)
from agentrig.continuation import StopSignal
from agentrig.drivers.base import StepRuntime
from agentrig.drivers.provider import AsyncInferenceProvider, InferenceProvider
from agentrig.errors import (
    AgentStop,
    ConfigurationError,
    EventListenerError,
    ProviderError,
    RetryLimitExceededError,
    StepInterrupted,
)
from agentrig.events import InferenceRequestStarted, InferenceResponseReceived
from agentrig.hooks import HookContext, HookTrigger
from agentrig.messages import NO_TRACES as _NO_TRACES
from agentrig.messages import Message, Messages, Role, ToolResult
from agentrig.state import (
    AgentState,
    AgentStep,
    InferenceRequest,
    InferenceResponse,
    LlmConfig,
    ToolExecutions,
    message_tags,
)
from agentrig.tools import NOT_RUN_HOOK_FAILED, NOT_RUN_STOPPED, Tools, not_run

# Hot-path enum constants: see "Enum members on the hot path" in docs/architecture.md.
_BEFORE_INFERENCE_REQUEST = HookTrigger.BEFORE_INFERENCE_REQUEST
_AFTER_INFERENCE_RESPONSE = HookTrigger.AFTER_INFERENCE_RESPONSE
_ASSISTANT = Role.ASSISTANT
_TOOL = Role.TOOL


class ToolCallingDriver:
    """Compiles the context, asks the provider, runs the tool calls, and records the step.

    ``max_attempts`` retries retryable ``ProviderError``s; when every attempt fails the step
    fails with ``RetryLimitExceededError`` (stop reason ``retry_limit``). Before each retry the
    runtime's retry checks are asked (``UseGuards``' time limits): a signal from one means no
    further attempt, and the step fails the same way, the error naming the signal.
    """

    def __init__(
        self,
        provider: InferenceProvider | AsyncInferenceProvider,
        *,
        compiler: ContextCompiler | None = None,
        llm_config: LlmConfig | None = None,
        max_attempts: int = 1,
    ) -> None:
        if max_attempts < 1:
            raise ConfigurationError(f"max_attempts must be >= 1, got {max_attempts}")
        self.provider = provider
        self.compiler: ContextCompiler = compiler or ConversationWithCurrentToolTrace()
        self.llm_config = llm_config
        self.max_attempts = max_attempts

    def _copy(self, **changes: object) -> Self:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def with_message_compiler(self, compiler: ContextCompiler) -> Self:
        """A driver using ``compiler``."""
        return self._copy(compiler=compiler)

    def with_provider(self, provider: InferenceProvider | AsyncInferenceProvider) -> Self:
        """A driver asking ``provider``."""
        return self._copy(provider=provider)

    def with_llm_config(self, config: LlmConfig | None) -> Self:
        """A driver whose default LLM config is ``config``."""
        return self._copy(llm_config=config)

    def with_max_attempts(self, attempts: int) -> Self:
        """A driver making up to ``attempts`` inference attempts per step."""
        if attempts < 1:
            raise ConfigurationError(f"max_attempts must be >= 1, got {attempts}")
        return self._copy(max_attempts=attempts)

    @runs_step
    def use_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        """Perform one step."""
        return run_sync(self.step(state, runtime))

    async def ause_tools(self, state: AgentState, runtime: StepRuntime) -> AgentState:
        """Perform one step on the running event loop (its tool calls run concurrently)."""
        return await run_async(self.step(state, runtime))

    def step(self, state: AgentState, runtime: StepRuntime) -> Generator[Effect, Any, AgentState]:
        """One step as effects (ask the provider, run the tools), for either path to perform;
        with ``runtime.direct`` the step performs them itself, with the same calls."""
        if state.llm_config is None and self.llm_config is not None:
            state = state.with_llm_config(self.llm_config)
        request = self.next_request(state, runtime.tools)
        if runtime.hooks.by_trigger[_BEFORE_INFERENCE_REQUEST]:
            context = runtime.hooks.intercept(
                HookContext(_BEFORE_INFERENCE_REQUEST, state, inference_request=request)
            )
            state, request = context.state, context.inference_request or request
        _request_started(state, request, runtime)
        for attempt in range(1, self.max_attempts + 1):
            try:
                response: InferenceResponse = (
                    infer_now(self.provider, request)
                    if runtime.direct
                    else (yield _infer_effect(self.provider, state, request, runtime))
                )
                break
            except ProviderError as error:
                # A tool call the API refused as malformed is the model's mistake: the retried
                # request shows it what it wrote and why (and the step records that request).
                models_fault = error.failed_generation is not None
                if not (error.retryable or models_fault) or self.max_attempts == 1:
                    raise
                if attempt == self.max_attempts:
                    raise RetryLimitExceededError(attempt, error) from error
                stop = _retry_stopped(state, runtime)
                if stop is not None:
                    raise RetryLimitExceededError(
                        attempt, error, stopped_by=stop.message or str(stop)
                    ) from error
                if models_fault:
                    request = _with_correction(request, error)
                    _request_started(state, request, runtime)
        if runtime.hooks.by_trigger[_AFTER_INFERENCE_RESPONSE]:
            try:
                context = runtime.hooks.intercept(
                    HookContext(_AFTER_INFERENCE_RESPONSE, state, inference_response=response)
                )
            except AgentStop as stop:
                # The model answered and was paid for: the loop records the step, with every
                # call it asked for marked as not run.
                if stop.step is None:
                    stop.step = _step(
                        state, request, response, not_run(response.tool_calls, NOT_RUN_STOPPED)
                    )
                raise
            except EventListenerError:
                raise
            except Exception as error:  # as for a stop: the answer and its usage are kept
                skipped = not_run(response.tool_calls, NOT_RUN_HOOK_FAILED)
                raise StepInterrupted(
                    error, step=_step(state, request, response, skipped)
                ) from error
            state, response = context.state, context.inference_response or response
        if runtime.events.listened and runtime.events.wants(InferenceResponseReceived):
            runtime.events.dispatch(
                InferenceResponseReceived.of(
                    state,
                    step_number=runtime.step_number,
                    usage=response.usage,
                    finish_reason=response.finish_reason,
                )
            )
        calls, step_number = response.tool_calls, runtime.step_number
        try:
            executions, state = (
                runtime.executor.execute(calls, state, step_number)
                if runtime.direct
                else (yield RunTools(runtime.executor, calls, state, step_number))
            )
        except AgentStop as stop:
            # The loop records the step the stop cut short: the model's answer and its usage
            # are not lost.
            if stop.step is None:
                stop.step = _step(
                    state, request, response, stop.tool_executions or ToolExecutions()
                )
            raise
        except StepInterrupted as interrupted:  # a tool hook failed: the same, with the error
            if interrupted.step is None:
                executions = interrupted.tool_executions or ToolExecutions()
                interrupted.step = _step(state, request, response, executions)
            raise
        step = _step(state, request, response, executions)
        # ``_output_messages`` tagged the messages for this execution: the state need not check.
        return state.with_tagged_step(
            step, is_trace=bool(response.tool_calls), trace_mode=runtime.trace_mode
        )

    def next_request(self, state: AgentState, tools: Tools) -> InferenceRequest:
        """The request a step from ``state`` sends the provider, before the
        ``before_inference_request`` hooks: the system prompt first, then the compiler's
        messages (by default without other executions' traces), ``tools``, the response format
        and the LLM config. The step builds its request with this very method."""
        messages = self.compiler.compile(state)
        if type(messages) is not Messages:
            messages = checked_messages(self.compiler, messages)
        prompt = state.context.system_prompt
        if prompt:
            messages = Messages.concat(
                Messages.of(Message(role=Role.SYSTEM, content=prompt)), messages
            )
        llm_config = state.llm_config or self.llm_config
        # A custom compiler returning a plain sequence still goes through validation.
        checked = type(messages) is Messages and (
            llm_config is None or type(llm_config) is LlmConfig
        )
        request: InferenceRequest = InferenceRequest._builders[checked](
            messages=messages,
            tools=tools.schemas(),
            tool_choice=llm_config.tool_choice if llm_config is not None else "auto",
            response_format=state.context.response_format,
            llm_config=llm_config,
        )
        return request

    def __repr__(self) -> str:
        return f"ToolCallingDriver(provider={self.provider!r}, compiler={self.compiler!r})"


def _infer_effect(
    provider: InferenceProvider | AsyncInferenceProvider,
    state: AgentState,
    request: InferenceRequest,
    runtime: StepRuntime,
) -> Infer:
    """The effect asking ``provider`` for ``request`` (the async and streaming paths yield it;
    the direct path calls ``infer_now`` instead)."""
    deltas = DeltaEvents(runtime.events, state, runtime.step_number) if runtime.streaming else None
    return Infer(provider, request, deltas)


def _request_started(state: AgentState, request: InferenceRequest, runtime: StepRuntime) -> None:
    if runtime.events.listened and runtime.events.wants(InferenceRequestStarted):
        model = request.llm_config.model if request.llm_config else ""
        runtime.events.dispatch(
            InferenceRequestStarted.of(
                state,
                step_number=runtime.step_number,
                message_count=len(request.messages),
                model=model,
            )
        )


CORRECTION_KEY = "agentrig_correction"
"""Metadata key of the messages a retry adds after a tool call the API refused (value
``tool_use_failed``), so a step's ``input_messages`` show which messages were the retry's."""


def _with_correction(request: InferenceRequest, error: ProviderError) -> InferenceRequest:
    """``request`` followed by what the model generated (when the API sent it back) and a user
    message saying the call was refused and why, for the model to try again."""
    tag = {CORRECTION_KEY: "tool_use_failed"}
    added = []
    if error.failed_generation:
        added.append(Message(role=Role.ASSISTANT, content=error.failed_generation, metadata=tag))
    added.append(
        Message(
            role=Role.USER,
            content=(
                "Your last answer tried to call a tool, but the call was malformed and was "
                f"refused: {error}\nCall the tool again, with arguments that are one valid "
                "JSON object following the tool's parameter schema, or answer without a tool."
            ),
            metadata=tag,
        )
    )
    return request.evolve(messages=Messages.concat(request.messages, Messages.of(*added)))


def _retry_stopped(state: AgentState, runtime: StepRuntime) -> StopSignal | None:
    """The first signal of the runtime's retry checks (the time budget), or None."""
    for check in runtime.retry_checks:
        signal = check(state)
        if signal is not None:
            return signal
    return None


def _step(
    state: AgentState,
    request: InferenceRequest,
    response: InferenceResponse,
    executions: ToolExecutions,
) -> AgentStep:
    step_id = clock.new_id("step")
    step: AgentStep = AgentStep._builders[type(response) is InferenceResponse](
        id=step_id,
        input_messages=request.messages,
        output_messages=_output_messages(state, step_id, response, executions),
        inference_response=response,
        tool_executions=executions,
    )
    return step


def _output_messages(
    state: AgentState, step_id: str, response: InferenceResponse, executions: ToolExecutions
) -> Messages:
    """The assistant message (text and calls, as the model sent them), then one tool message per call.

    Every part comes from validated objects (the response, the executions), so the messages are
    built without validating them again. They carry the step's tags from the start (a step with
    tool calls is a trace), so ``AgentState.with_current_step`` need not copy them to tag them.
    """
    execution_id = state.execution.execution_id if state.execution is not None else None
    is_trace = bool(response.tool_calls)
    if execution_id is None:  # the state will create the execution: it tags the messages
        tags: dict[str, JsonValue] = {}
        traces = _NO_TRACES
    else:
        tags = message_tags(step_id, execution_id, state.agent_id, is_trace)
        traces = frozenset((execution_id,)) if is_trace else _NO_TRACES
    if not is_trace:
        if not response.content:
            return Messages()
        return Messages._tagged(
            (
                Message._trusted(
                    role=_ASSISTANT,
                    content=response.content,
                    metadata=tags,
                    provider_data=response.provider_data,
                ),
            ),
            traces,
        )
    created_at = clock.now()  # one reading: the step's messages are made together
    messages = [
        Message._trusted(
            role=_ASSISTANT,
            content=response.content,
            tool_calls=response.tool_calls,
            metadata=tags,
            provider_data=response.provider_data,
            created_at=created_at,
        )
    ]
    for execution in executions:
        result = ToolResult._trusted(
            content=execution.content,
            call_id=execution.tool_call.id,
            tool_name=execution.tool_call.name,
            is_error=execution.error is not None,
        )
        messages.append(
            Message._trusted(
                role=_TOOL,
                content=result.content,
                tool_result=result,
                metadata={"tool_execution_id": execution.id, **tags},
                created_at=created_at,
            )
        )
    return Messages._tagged(tuple(messages), traces)
