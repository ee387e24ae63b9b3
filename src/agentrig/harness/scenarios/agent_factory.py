"""Build a real agent (``AgentLoop``) from a scenario's ``agent:`` section, with fakes at the seams."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from agentrig import (
    AgentBuilder,
    AgentLoop,
    CancellationToken,
    ExecutionBudget,
    HookContext,
    InferenceRequest,
    InferenceResponse,
    StopReason,
    StopSignal,
    SubagentDefinition,
    SubagentPolicy,
    UseContextConfig,
    UseCooperativeCancellation,
    UseGuards,
    UseLlmConfig,
    UseSubagents,
)
from agentrig.drivers.provider import Delta
from agentrig.errors import ConfigurationError
from agentrig.events import AgentStepCompleted
from agentrig.fakes import (
    CallSpec,
    FakeClock,
    ScriptedLLM,
    ScriptedTool,
    SeededIds,
    ToolReply,
    Turn,
)
from agentrig.harness.scenarios.model import (
    AgentSpec,
    BudgetSpec,
    HookSpec,
    ModelReply,
    Scenario,
    ToolSpec,
    UsageSpec,
)
from agentrig.state import FinishReason

HOOK_SOURCE = "scenario-hook"


def to_turn(reply: ModelReply) -> Turn:
    """A scenario model reply as a fake LLM turn."""
    if reply.fault is not None:
        # agentrig's own runtime has no wire to break: a fault is a provider error.
        message = f"scripted fault: {reply.fault.describe()}"
        return Turn(error=message, retryable=reply.fault.retryable, latency=reply.latency)
    finish = FinishReason.CONTENT_FILTER if reply.refuse is not None else None
    if reply.finish_reason:
        finish = FinishReason(reply.finish_reason)
    return Turn(
        text=reply.say or reply.refuse or "",
        calls=tuple(CallSpec(c.name, dict(c.args), c.id) for c in reply.tool_calls),
        usage=(reply.usage or UsageSpec()).to_usage(cost=reply.cost or 0.0),
        finish_reason=finish,
        latency=reply.latency,
        error=reply.error,
        retryable=reply.retryable,
        reasoning=reply.think_text,
        redacted_reasoning=reply.think_redacted,
    )


def to_budget(spec: BudgetSpec | None) -> ExecutionBudget:
    """A scenario budget as an ``ExecutionBudget`` (whose limits it names alike)."""
    return ExecutionBudget() if spec is None else ExecutionBudget(**dict(spec))


def repeats(replies: tuple[ModelReply, ...]) -> bool:
    """Whether the last of ``replies`` answers every call after it (``repeat: true``)."""
    return bool(replies) and replies[-1].repeat


class TurnScript:
    """The main model: plays the current turn's replies; the runner swaps scripts per turn."""

    def __init__(self, clock: FakeClock, chunking: str | None = None) -> None:
        self.clock = clock
        self.chunking = chunking or "whole"
        self.current = ScriptedLLM([], clock=clock, name="model")

    def start_turn(self, number: int, replies: tuple[ModelReply, ...]) -> None:
        """Load the replies of turn ``number`` (1-based); a last reply with ``repeat: true``
        answers every call after it too."""
        self.current = ScriptedLLM(
            [to_turn(r) for r in replies],
            clock=self.clock,
            name=f"turn {number}",
            chunking=self.chunking,
            repeat_last=repeats(replies),
        )

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Answer with the current turn's next reply."""
        return self.current.infer(request)

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        """Answer with the current turn's next reply, in the async path."""
        return await self.current.ainfer(request)

    def infer_stream(self, request: InferenceRequest) -> Generator[Delta, None, InferenceResponse]:
        """Answer with the current turn's next reply, in pieces (runs through ``stream``)."""
        return (yield from self.current.infer_stream(request))


@dataclass
class ScenarioAgent:
    """A built agent and the fakes the runner inspects."""

    loop: AgentLoop
    clock: FakeClock
    ids: SeededIds
    script: TurnScript
    tools: dict[str, ScriptedTool]
    subagent_scripts: dict[str, ScriptedLLM]
    cancellation: CancellationToken
    budget: ExecutionBudget
    cancel_after: list[int | None] = field(default_factory=lambda: [None])
    detach: list[Callable[[], None]] = field(default_factory=list)
    """Unsubscribers of the listeners the harness put on the event bus; ``close()`` calls them."""

    def close(self) -> None:
        """Take the harness's listeners off the event bus (it may be a user builder's bus)."""
        while self.detach:
            self.detach.pop()()


def build_agent(
    scenario: Scenario, *, seed: int = 0, base: AgentBuilder | None = None
) -> ScenarioAgent:
    """The agent a scenario describes, on a fake clock with seeded ids.

    ``base`` is an agent built in Python (its tools, hooks and capabilities); the scenario adds
    its scripted model, budget, hooks, the scripted tools ``base`` lacks and those marked
    ``scripted: true`` (the others are ``base``'s own tools, the ones under test; the runner
    checks with :func:`~agentrig.harness.scenarios.drift.tool_drift` that they match). Its
    driver is replaced. ``base`` itself is left unchanged, so one builder serves many scenarios.
    """
    builder = AgentBuilder.base() if base is None else _copy_of(base)
    spec = scenario.agent
    clock, ids = FakeClock(), SeededIds(seed)
    script = TurnScript(clock, spec.stream)
    own = set(builder.tools().names())
    tools = {
        name: scripted_tool(name, tool_spec, clock)
        for name, tool_spec in spec.tools.items()
        if tool_spec.scripted or name not in own
    }
    subagent_scripts = {
        name: ScriptedLLM(
            [to_turn(r) for r in sub.model],
            clock=clock,
            name=f"subagent {name}",
            repeat_last=repeats(sub.model),
        )
        for name, sub in spec.subagents.items()
    }
    token = CancellationToken()
    budget = to_budget(spec.budget)
    builder = (
        builder.with_clock(clock)
        .with_ids(ids)
        .with_separated_tool_trace(spec.trace_mode == "separated")
        .with_tools(list(tools.values()))
        .with_capability(UseLlmConfig(script, max_retries=spec.max_retries or 1))
        .with_capability(UseContextConfig(spec.prompt_text))
        .with_capability(UseGuards(budget, finish_reasons=spec.finish_reasons))
        .with_capability(UseCooperativeCancellation(token))
    )
    if spec.subagents:
        builder.with_capability(_subagents(spec, subagent_scripts))
    for hook in spec.hooks:
        builder.add_hook(_hook(hook), hook.on, hook.priority, f"scenario:{hook.action}")
    agent = ScenarioAgent(
        builder.build(), clock, ids, script, tools, subagent_scripts, token, budget
    )
    agent.detach.append(agent.loop.events.subscribe(AgentStepCompleted, _canceller(agent)))
    return agent


def _copy_of(base: object) -> AgentBuilder:
    """A copy of a user's builder that the scenario can add to without changing the original."""
    if not isinstance(base, AgentBuilder):
        raise ConfigurationError(f"builder: expected an AgentBuilder, got {_wrong_builder(base)}")
    return base.copy()


def _wrong_builder(value: object) -> str:
    if isinstance(value, AgentLoop):
        return "an AgentLoop: pass the AgentBuilder, not the AgentLoop that build() made"
    if callable(value):
        return f"{value!r}: pass the builder itself, not a function that makes one"
    return f"{type(value).__name__} {value!r}"


def _canceller(agent: ScenarioAgent) -> Callable[[AgentStepCompleted], None]:
    def cancel_when_due(event: AgentStepCompleted) -> None:
        due = agent.cancel_after[0]
        if event.parent_agent_id is None and due is not None and event.step_number >= due:
            agent.cancellation.cancel(f"cancelled after step {event.step_number}")

    return cancel_when_due


def scripted_tool(name: str, spec: ToolSpec, clock: FakeClock) -> ScriptedTool:
    """The scripted tool a scenario's ``agent.tools.<name>`` describes, on ``clock``."""
    replies = [
        ToolReply(returns=r.return_, raises=r.raise_, stop=r.stop, when=r.when, latency=r.latency)
        for r in spec.replies
    ]
    return ScriptedTool(
        name, replies, params=spec.params, description=spec.description, mode=spec.mode, clock=clock
    )


def _subagents(spec: AgentSpec, scripts: dict[str, ScriptedLLM]) -> UseSubagents:
    definitions = [
        SubagentDefinition(
            name=name,
            description=sub.description,
            system_prompt=sub.system_prompt,
            tools=sub.tools,
            deny=sub.deny,
            budget=to_budget(sub.budget),
            provider=scripts[name],
        )
        for name, sub in spec.subagents.items()
    ]
    policy = (
        SubagentPolicy(max_depth=spec.subagent_policy.max_depth) if spec.subagent_policy else None
    )
    return UseSubagents(definitions, policy)


def _hook(spec: HookSpec) -> Callable[[HookContext], HookContext | None]:
    def hook(context: HookContext) -> HookContext | None:
        if not _applies(spec, context):
            return None
        return _act(spec, context)

    return hook


def _applies(spec: HookSpec, context: HookContext) -> bool:
    if spec.at_step is not None and context.state.step_count() != spec.at_step:
        return False
    if spec.tool is None:
        return True
    call = context.tool_call or (
        context.tool_execution.tool_call if context.tool_execution else None
    )
    return call is not None and call.name == spec.tool


def _act(spec: HookSpec, context: HookContext) -> HookContext | None:
    message = spec.message or ""
    if spec.action == "block_tool":
        return context.block_tool_execution(message)
    if spec.action == "stop":
        reason = StopReason(spec.reason or "stop_requested")
        signal = StopSignal(reason=reason, message=message, source=HOOK_SOURCE)
        return context.with_state(context.state.with_stop_signal(signal))
    if spec.action == "request_continuation":
        return context.with_state(context.state.with_execution_continued())
    if spec.action == "raise":
        raise RuntimeError(message or f"scenario hook on {spec.on} raised")
    assert spec.key is not None
    return context.with_state(context.state.with_metadata(spec.key, spec.value))
