"""``UseSubagents``: the ``spawn_subagent(subagent, prompt)`` tool (D8, seed 001 test case 4).

Each child runs its own loop with its own state, execution buffer and budget. The parent sees
only the child's final text as the tool result; the child's usage is added to the parent step's
usage; child events reach the parent's bus and carry ``parent_agent_id``. A child checks the
parent's cancellation sources (``UseCooperativeCancellation``) at its own checkpoints too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentrig.budget import ExecutionBudget
from agentrig.caller import AgentIdentity, current_agent, running_as
from agentrig.capabilities.cancellation import CancellationSource, UseCooperativeCancellation
from agentrig.capabilities.guards import UseGuards
from agentrig.drivers.base import Driver
from agentrig.drivers.provider import InferenceProvider
from agentrig.errors import (
    ConfigurationError,
    InvalidToolArgumentsError,
    SubagentDepthExceededError,
    SubagentFailedError,
    SubagentNotFoundError,
)
from agentrig.events import SubagentCompleted, SubagentSpawning
from agentrig.state import AgentState, ExecutionStatus, LlmConfig
from agentrig.tools import Tool, ToolContext, ToolOutput, Tools

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder, AgentCapability, BuildContext
    from agentrig.loop import AgentLoop

SPAWN_TOOL = "spawn_subagent"


@dataclass(frozen=True)
class SubagentDefinition:
    """A subagent: its prompt, which parent tools it may use, its budget and model settings.

    ``tools=None`` means all parent tools (``spawn_subagent`` included, one level deeper);
    ``deny`` removes tools from that set. ``provider`` replaces the parent's inference provider.
    """

    name: str
    description: str = ""
    system_prompt: str = ""
    tools: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    budget: ExecutionBudget = field(default_factory=ExecutionBudget)
    llm_config: LlmConfig | None = None
    provider: InferenceProvider | None = None


@runtime_checkable
class SubagentProvider(Protocol):
    """Looks up subagent definitions by name."""

    def get(self, name: str) -> SubagentDefinition:
        """The definition; raise ``SubagentNotFoundError`` when unknown."""
        ...

    def names(self) -> tuple[str, ...]:
        """Every subagent name."""
        ...


class Subagents:
    """A fixed set of subagent definitions."""

    def __init__(self, definitions: Iterable[SubagentDefinition] = ()) -> None:
        self._definitions: dict[str, SubagentDefinition] = {}
        for definition in definitions:
            if definition.name in self._definitions:
                raise ConfigurationError(
                    f"subagent {definition.name!r} is defined twice: give each subagent "
                    "its own name"
                )
            self._definitions[definition.name] = definition

    def get(self, name: str) -> SubagentDefinition:
        """The definition called ``name``."""
        definition = self._definitions.get(name)
        if definition is None:
            raise SubagentNotFoundError(name, list(self._definitions))
        return definition

    def names(self) -> tuple[str, ...]:
        """Every subagent name."""
        return tuple(self._definitions)


@dataclass(frozen=True)
class SubagentPolicy:
    """How deep subagents may nest: a root agent is depth 0; its children are depth 1."""

    max_depth: int = 3

    def __post_init__(self) -> None:
        if self.max_depth < 0:
            raise ConfigurationError(f"SubagentPolicy max_depth must be >= 0, got {self.max_depth}")


class SpawnSubagentTool(Tool):
    """Runs a named subagent on a prompt and returns its final text; the child also stops when
    one of ``cancellation`` is cancelled."""

    name = SPAWN_TOOL

    def __init__(
        self,
        provider: SubagentProvider,
        policy: SubagentPolicy,
        build: BuildContext,
        depth: int = 0,
        *,
        cancellation: tuple[CancellationSource, ...] = (),
    ) -> None:
        self.provider = provider
        self.policy = policy
        self.build = build
        self.depth = depth
        self.cancellation = cancellation
        listing = "\n".join(_describe(provider.get(name)) for name in provider.names())
        self.description = "Delegate a task to a subagent. Available subagents:\n" + listing

    def parameters(self) -> dict[str, Any]:
        """``subagent`` (one of the names) and ``prompt``."""
        return {
            "type": "object",
            "properties": {
                "subagent": {"type": "string", "enum": list(self.provider.names())},
                "prompt": {"type": "string"},
            },
            "required": ["subagent", "prompt"],
            "additionalProperties": False,
        }

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        """Spawn the child, run it to the end and return its final text."""
        name, child, state, identity = self._spawn(arguments, context)
        with running_as(identity):
            final = child.execute(state)
        return self._completed(name, final, context)

    async def ainvoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        """``invoke`` in the async path: the child runs its own async loop on this event loop
        (not in a worker thread), so children spawned together take their turns in call
        order and draw the same ids on every run."""
        name, child, state, identity = self._spawn(arguments, context)
        with running_as(identity):
            final = await child.aexecute(state)
        return self._completed(name, final, context)

    def _spawn(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> tuple[str, AgentLoop, AgentState, AgentIdentity]:
        """Check the arguments, build the child and announce it: the child's name, loop, first
        state and identity."""
        name, prompt = _parse_arguments(arguments)
        if self.depth >= self.policy.max_depth:
            raise SubagentDepthExceededError(name, self.policy.max_depth)
        definition = self.provider.get(name)
        child = self._child_loop(definition)  # before announcing: building it may fail
        events = self.build.events
        if events.wants(SubagentSpawning):
            events.dispatch(
                SubagentSpawning.of(
                    context.state,
                    subagent_name=name,
                    prompt=prompt,
                    depth=self.depth + 1,
                    max_depth=self.policy.max_depth,
                    tool_call_id=context.tool_call.id,
                )
            )
        # The depth is this tool's (its agent's plus one); the path, the running agent's.
        identity = replace(current_agent().child(name), depth=self.depth + 1)
        return name, child, self._child_state(definition, prompt, context), identity

    def _completed(self, name: str, final: AgentState, context: ToolContext) -> ToolOutput:
        events = self.build.events
        if events.wants(SubagentCompleted):
            events.dispatch(
                SubagentCompleted.of(
                    context.state,
                    subagent_name=name,
                    subagent_id=final.agent_id,
                    status=final.status(),
                    steps=final.step_count(),
                    usage=final.usage(),
                    tool_call_id=context.tool_call.id,
                )
            )
        return _result(name, final)

    def _child_loop(self, definition: SubagentDefinition) -> AgentLoop:
        from agentrig.builder import AgentBuilder

        driver: Driver = self.build.driver
        if definition.provider is not None:
            with_provider = getattr(driver, "with_provider", None)
            if not callable(with_provider):
                raise ConfigurationError(
                    f"subagent '{definition.name}' has its own provider, but the parent driver "
                    f"{type(driver).__name__} cannot take one"
                )
            driver = with_provider(definition.provider)
        builder = (
            AgentBuilder.base()
            .with_driver(driver)
            .with_tools(self._child_tools(definition))
            .with_events(self.build.events)
            .with_clock(self.build.clock)
            .with_ids(self.build.ids)
            .with_separated_tool_trace(self.build.trace_mode.value == "separated")
        )
        if not definition.budget.is_empty():
            builder.with_capability(UseGuards(definition.budget))
        for source in self.cancellation:
            builder.with_capability(UseCooperativeCancellation(source))
        if self._child_may_spawn(definition):
            builder.add_tool_factory(
                lambda build: SpawnSubagentTool(
                    self.provider,
                    self.policy,
                    build,
                    self.depth + 1,
                    cancellation=self.cancellation,
                )
            )
        return builder.build()

    def _child_tools(self, definition: SubagentDefinition) -> Tools:
        tools = self.build.tools.without(SPAWN_TOOL)
        if definition.tools is not None:
            tools = tools.only(definition.tools)
        return tools.without(*definition.deny)

    def _child_may_spawn(self, definition: SubagentDefinition) -> bool:
        allowed = definition.tools is None or SPAWN_TOOL in definition.tools
        return allowed and SPAWN_TOOL not in definition.deny

    def _child_state(
        self, definition: SubagentDefinition, prompt: str, context: ToolContext
    ) -> AgentState:
        parent = context.state
        state = AgentState(
            parent_agent_id=parent.agent_id,
            llm_config=definition.llm_config or parent.llm_config,
        )
        return state.with_system_prompt(definition.system_prompt).with_user_message(prompt)


def _parse_arguments(arguments: Mapping[str, Any]) -> tuple[str, str]:
    problems = [
        (key, "required string")
        for key in ("subagent", "prompt")
        if not isinstance(arguments.get(key), str)
    ]
    extra = sorted(set(arguments) - {"subagent", "prompt"})
    problems.extend((key, "unexpected argument") for key in extra)
    if problems:
        raise InvalidToolArgumentsError(SPAWN_TOOL, problems)
    return str(arguments["subagent"]), str(arguments["prompt"])


def _result(name: str, final: AgentState) -> ToolOutput:
    if final.status() is ExecutionStatus.FAILED:
        errors = "; ".join(error.message for error in final.errors()) or "unknown error"
        error = SubagentFailedError(f"Subagent '{name}' failed: {errors}")
        error.usage = final.usage()  # type: ignore[attr-defined]
        raise error
    text = final.final_response().to_text()
    if not text:
        signal = final.stop_signal()
        text = f"[subagent '{name}' stopped without a final response: {signal}]"
    value = {
        "subagent": name,
        "agent_id": final.agent_id,
        "status": str(final.status()),
        "stop_reason": str(final.last_stop_reason()),
        "steps": final.step_count(),
        "response": text,
    }
    return ToolOutput(value=value, content=text, usage=final.usage())


def _check_tool_names(definition: SubagentDefinition, tools: Tools) -> None:
    """Refuse a tool name in ``tools`` or ``deny`` that the parent does not have (a typo there
    would silently give the child no tool, or a tool it was meant not to have)."""
    known = {*tools.names(), SPAWN_TOOL}
    for field_name, names in (("tools", definition.tools or ()), ("deny", definition.deny)):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigurationError(
                f"subagent {definition.name!r} names unknown tools in {field_name}: "
                f"{', '.join(map(repr, unknown))}; the agent's tools are: "
                f"{', '.join(sorted(known))}"
            )


def _describe(definition: SubagentDefinition) -> str:
    tools = "all parent tools" if definition.tools is None else ", ".join(definition.tools)
    return f"- {definition.name}: {definition.description} (tools: {tools})"


class UseSubagents:
    """Add ``spawn_subagent`` for the given subagents, nesting up to ``policy.max_depth``."""

    def __init__(
        self,
        subagents: SubagentProvider | Iterable[SubagentDefinition],
        policy: SubagentPolicy | None = None,
    ) -> None:
        self.provider = (
            subagents if isinstance(subagents, SubagentProvider) else Subagents(subagents)
        )
        self.policy = policy or SubagentPolicy()

    def install(self, builder: AgentBuilder) -> None:
        """Add the spawn tool as a deferred tool (it sees the tools collected before it)."""
        if any(isinstance(installed, UseSubagents) for installed in builder.capabilities()):
            raise ConfigurationError(
                "UseSubagents is installed twice; the second would replace the first's "
                "spawn_subagent tool: pass every definition to one UseSubagents([...])"
            )
        # Read at build time, when every capability is installed (cancellation may come later).
        builder.add_tool_factory(lambda build: self._spawn_tool(build, builder.capabilities()))

    def _spawn_tool(
        self, build: BuildContext, installed: tuple[AgentCapability, ...]
    ) -> SpawnSubagentTool:
        for name in self.provider.names():
            _check_tool_names(self.provider.get(name), build.tools)
        sources = tuple(
            capability.source
            for capability in installed
            if isinstance(capability, UseCooperativeCancellation)
        )
        return SpawnSubagentTool(self.provider, self.policy, build, cancellation=sources)

    def __repr__(self) -> str:
        return f"UseSubagents({list(self.provider.names())!r}, {self.policy!r})"
