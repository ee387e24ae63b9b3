"""Tools: typed Python functions with validated arguments, and the ``ToolExecutor`` (D7).

A tool function declares typed parameters; its JSON Schema is derived from the signature and
arguments are validated by pydantic before the call. A parameter annotated ``ToolContext`` receives
the agent state and the tool call instead of a model argument.
"""

from __future__ import annotations

import copy
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, NoReturn, Union, get_args, get_origin, overload

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from agentrig import clock
from agentrig._frozen import fast_init
from agentrig._model import is_json_data, problems_of
from agentrig._tool_arguments import plain_arguments, plain_plan
from agentrig._tool_signature import (
    arguments_model,
    check_callable_kind,
    check_kind,
    check_name,
    is_async_callable,
    read_signature,
    tool_description,
    tool_label,
    tool_name,
)
from agentrig.errors import (
    AgentStop,
    ConfigurationError,
    EventListenerError,
    InvalidToolArgumentsError,
    StepInterrupted,
    ToolError,
    ToolNotFoundError,
)
from agentrig.events import (
    EventBus,
    ToolCallBlocked,
    ToolCallCompleted,
    ToolCallEvent,
    ToolCallStarted,
)
from agentrig.hooks import HookContext, HookStack, HookTrigger
from agentrig.messages import ToolCall
from agentrig.state import AgentState, ToolExecution, ToolExecutions, ToolSchema, Usage
from agentrig.state.usage import ZERO_USAGE


@fast_init
@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may know about the call: the agent state and the tool call itself."""

    state: AgentState
    tool_call: ToolCall


@fast_init
@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool result with extras: the text the model sees and usage the tool consumed."""

    value: Any
    content: str | None = None
    usage: Usage = ZERO_USAGE


class Tool(ABC):
    """Something the model can call. Subclasses define ``parameters()`` and ``invoke()``."""

    name: str
    description: str
    strict: bool = False
    """Ask the API to hold the model's arguments to the schema exactly (``ToolSchema.strict``)."""

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments."""

    @abstractmethod
    def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Run the tool. Raise ``InvalidToolArgumentsError`` for bad arguments."""

    async def ainvoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Run the tool in the async path. By default ``invoke`` runs in a worker thread, with
        the context variables (the runtime's clock and ids) copied; async tools override this."""
        import asyncio  # imported where used: the sync path runs without it

        return await asyncio.to_thread(self.invoke, arguments, context)

    def schema(self) -> ToolSchema:
        """The tool as the model sees it."""
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=self.parameters(),
            strict=self.strict,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionTool(Tool):
    """A tool made from a typed Python function, ``def`` or ``async def``.

    An ``async def`` tool is awaited on the event loop in the async path; in the sync path it
    runs to completion on a private event loop.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(function):
            raise ConfigurationError(
                f"cannot make a tool of {function!r}: it is not callable; "
                "pass a function (or decorate one with @tool)"
            )
        self.function = function
        self.name = name or tool_name(function)
        self.description = description if description is not None else tool_description(function)
        self.strict = strict
        self._context_param, self._model, schema = _arguments_model(function, self.name)
        self.explicit_parameters = (
            None if parameters is None else _explicit_schema(parameters, self._model, self.name)
        )
        """The schema given as ``parameters``, sent instead of the derived one; or None."""
        self._parameters = (
            _clean_schema(schema)
            if self.explicit_parameters is None
            else copy.deepcopy(self.explicit_parameters)
        )
        self._schema: ToolSchema | None = None
        self._validate = self._model.__pydantic_validator__.validate_python
        self._plan = plain_plan(self._model)
        self.is_async = is_async_callable(function)

    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments: the explicit ``parameters`` given, else the one derived
        from the function signature."""
        return self._parameters

    def schema(self) -> ToolSchema:
        """The tool as the model sees it (built once; again only if the name, description or
        strictness was changed)."""
        cached = self._schema
        if (
            cached is None
            or cached.name != self.name
            or cached.description != self.description
            or cached.strict != self.strict
        ):
            cached = self._schema = super().schema()
        return cached

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Validate ``arguments`` and call the function (an async one on a private event loop)."""
        result = self.function(**self._kwargs(arguments, context))
        if self.is_async:
            # Imported here: ``_effects`` imports the drivers, whose base imports this module.
            from agentrig._effects import run_coroutine

            return run_coroutine(result, f"tool '{self.name}'")
        return result

    async def ainvoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Await an async function; run a sync one in a worker thread (context variables kept)."""
        if not self.is_async:
            return await super().ainvoke(arguments, context)
        return await self.function(**self._kwargs(arguments, context))

    def _kwargs(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        kwargs = None if self._plan is None else plain_arguments(self._plan, arguments)
        if kwargs is None:
            kwargs = self._validated(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = context
        return kwargs

    def _validated(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        try:
            parsed = self._validate(arguments if type(arguments) is dict else dict(arguments))
        except ValidationError as error:
            raise InvalidToolArgumentsError(self.name, problems_of(error)) from None
        return parsed.__dict__.copy()  # type: ignore[no-any-return]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


@overload
def tool(function: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
    parameters: Mapping[str, Any] | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function into a tool: ``@tool`` or ``@tool(name=..., description=...,
    strict=..., parameters=...)`` (``strict``: see ``ToolSchema.strict``).

    ``description`` replaces the docstring (``""`` sends none). ``parameters`` is a JSON Schema
    sent to the model exactly as given, instead of the one derived from the signature (to
    declare a tool as another client recorded it); its properties must be the function's
    parameters, and arguments are still validated by the function's types."""
    if function is not None:
        return FunctionTool(function)
    return lambda fn: FunctionTool(
        fn, name=name, description=description, strict=strict, parameters=parameters
    )


def _explicit_schema(
    parameters: Mapping[str, Any], model: type[BaseModel], name: str
) -> dict[str, Any]:
    """``parameters`` as a plain dict, checked to describe the arguments ``model`` validates:
    an object schema whose properties are the function's parameters, every required one
    included. ``ConfigurationError`` names what does not fit."""
    label = f"tool {name!r}"
    if not isinstance(parameters, Mapping):
        raise ConfigurationError(
            f"{label}: parameters must be a JSON Schema object (a dict), got "
            f"{type(parameters).__name__}"
        )
    schema = copy.deepcopy(dict(parameters))
    if not is_json_data(schema):
        raise ConfigurationError(
            f"{label}: parameters must be JSON data (text keys, finite numbers, lists, dicts)"
        )
    if schema.get("type", "object") != "object":
        raise ConfigurationError(
            f"{label}: parameters must describe an object (type: object), got type "
            f"{schema.get('type')!r}"
        )
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ConfigurationError(f"{label}: parameters' properties must be a mapping")
    fields = model.model_fields
    signature = f"{name}({', '.join(fields)})"
    unknown = [key for key in properties if key not in fields]
    if unknown:
        raise ConfigurationError(
            f"{label}: parameters describe {', '.join(map(repr, unknown))}, which "
            f"{signature} does not take"
        )
    missing = [
        key for key, field in fields.items() if field.is_required() and key not in properties
    ]
    if missing:
        raise ConfigurationError(
            f"{label}: parameters leave out {', '.join(map(repr, missing))}, which "
            f"{signature} needs"
        )
    return schema


def _arguments_model(
    function: Callable[..., Any], name: str
) -> tuple[str | None, type[BaseModel], dict[str, Any]]:
    """The ``ToolContext`` parameter, the arguments model and its JSON Schema.

    Raises ``ConfigurationError`` for a signature the model could not call through.
    """
    label = tool_label(function, name)
    check_callable_kind(function, label)
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for param in read_signature(function, label).parameters.values():
        check_kind(param, label)
        if _is_context(param.annotation):
            context_param = param.name
            continue
        check_name(param.name, label)
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model, schema = arguments_model(name, label, fields)
    return context_param, model, schema


def _is_context(annotation: Any) -> bool:
    """True for ``ToolContext``, ``ToolContext | None`` and ``Annotated[ToolContext, ...]``."""
    if annotation is ToolContext:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_context(get_args(annotation)[0])
    if origin in (Union, UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        return len(args) == 1 and _is_context(args[0])
    return False


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


ToolsSpec = Iterable[Tool | Callable[..., Any]] | Mapping[str, Any]
"""Tools as a list of typed functions and ``Tool`` objects, or a mapping of names to them."""


def _named_tool(name: str, item: Any) -> Tool:
    """``item`` as a tool called ``name``: a function (a lambda too) becomes a ``FunctionTool``
    of that name, a ``Tool`` of another name a renamed copy.

    Raises ``ConfigurationError`` for a name that is not a non-empty string, or a value that is
    neither a function nor a ``Tool``.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"tool names must be non-empty strings, got {name!r} (for {item!r})"
        )
    if isinstance(item, FunctionTool):
        if item.name == name:
            return item
        return FunctionTool(
            item.function,
            name=name,
            description=item.description,
            strict=item.strict,
            parameters=item.explicit_parameters,
        )
    if isinstance(item, Tool):
        if item.name == name:
            return item
        renamed = copy.copy(item)
        renamed.name = name
        return renamed
    if not callable(item):
        raise ConfigurationError(
            f"tool {name!r}: {item!r} is not a tool: pass a typed function or a Tool object"
        )
    return FunctionTool(item, name=name)


class Tools:
    """An immutable set of tools keyed by name; a later tool with the same name wins.

    Built from a list of typed functions and ``Tool`` objects (named by the function or the
    tool), or from a mapping of names to them (``Tools({"add": lambda a, b: a + b})``).
    """

    __slots__ = ("_schemas", "_tools")

    def __init__(self, tools: ToolsSpec = ()) -> None:
        self._schemas: tuple[ToolSchema, ...] | None = None
        self._tools: dict[str, Tool] = {}
        if isinstance(tools, Mapping):
            tools = [_named_tool(name, item) for name, item in tools.items()]
        for item in tools:
            resolved = item if isinstance(item, Tool) else FunctionTool(item)
            self._tools[resolved.name] = resolved

    def with_tools(self, *tools: Tool | Callable[..., Any]) -> Tools:
        """A set with ``tools`` added."""
        return Tools((*self._tools.values(), *tools))

    def merged(self, other: Tools) -> Tools:
        """A set with every tool of ``other`` added."""
        return self.with_tools(*other)

    def without(self, *names: str) -> Tools:
        """A set without the named tools."""
        return Tools(t for n, t in self._tools.items() if n not in names)

    def only(self, names: Iterable[str]) -> Tools:
        """A set with only the named tools."""
        wanted = set(names)
        return Tools(t for n, t in self._tools.items() if n in wanted)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """Tool names, in registration order."""
        return tuple(self._tools)

    def schemas(self) -> tuple[ToolSchema, ...]:
        """Every tool as the model sees it (computed once: tool sets are immutable)."""
        if self._schemas is None:
            self._schemas = tuple(t.schema() for t in self._tools.values())
        return self._schemas

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Tools({list(self._tools)!r})"


def format_tool_value(value: Any) -> str:
    """The text the model sees for a tool's return value."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int or kind is float:
        return str(value)
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _NUMBERS):
        return str(value)
    if isinstance(value, BaseModel):
        try:
            return value.model_dump_json()
        except (PydanticSerializationError, ValueError):
            return str(value)
    data = _jsonable(value)
    return str(value) if data is _NOT_JSON else json.dumps(data, ensure_ascii=False)


_NUMBERS = (int, float)


# Hot-path enum constants: see "Enum members on the hot path" in docs/architecture.md.
_BEFORE_TOOL_USE = HookTrigger.BEFORE_TOOL_USE
_AFTER_TOOL_USE = HookTrigger.AFTER_TOOL_USE


class ToolExecutor:
    """Runs the tool calls of a step. Failures become failed executions the model sees; the loop
    goes on. ``AgentStop`` raised by a tool is re-raised: it stops the execution.

    ``execute`` (the sync path) runs the calls one after another, each with its hooks:
    ``before_tool_use``, the call, ``after_tool_use``. ``aexecute`` (the async path) runs them
    concurrently and keeps the hooks in a fixed order: every call's ``before_tool_use`` hooks (and
    ``ToolCallStarted``) in call order, then the calls together, then every call's
    ``ToolCallCompleted`` and ``after_tool_use`` hooks in call order. Both record the results in
    call order, and the same ones: a call the sync path would not have run (after a stop or a
    failed hook) is recorded as not run in the async path too, even if it ran there.
    """

    def __init__(
        self, tools: Tools, hooks: HookStack | None = None, events: EventBus | None = None
    ):
        self.tools = tools
        self.hooks = hooks or HookStack()
        self.events = events or EventBus()

    def execute(
        self, calls: Iterable[ToolCall], state: AgentState, step_number: int
    ) -> tuple[ToolExecutions, AgentState]:
        """Execute ``calls`` one by one; returns the executions and the state as hooks left it.

        ``AgentStop`` from a tool or a tool hook is re-raised with ``tool_executions`` attached:
        the calls that ran, the one it stopped (``stopped``), and the later ones, which did not
        run (``stopped`` too), so every call the model made has a result.
        """
        calls = calls if type(calls) is tuple else tuple(calls)
        executions: list[ToolExecution] = []
        for index, call in enumerate(calls):
            try:
                execution, state = self._execute_one(call, state, step_number)
            except BaseException as error:
                raise self._cut_short(error, calls, index, executions, hook_ran=True)  # noqa: B904
            executions.append(execution)
        return ToolExecutions(executions), state

    async def aexecute(
        self, calls: Iterable[ToolCall], state: AgentState, step_number: int
    ) -> tuple[ToolExecutions, AgentState]:
        """Execute ``calls`` concurrently (see the class); the same results as ``execute``."""
        calls = calls if type(calls) is tuple else tuple(calls)
        prepared: list[tuple[ToolCall, AgentState, ToolExecution | None]] = []
        hook_error: BaseException | None = None
        for call in calls:
            try:
                call, state, blocked = self._before(call, state, step_number)
            except BaseException as error:  # the calls before it still run, as in ``execute``
                hook_error = error
                break
            prepared.append((call, state, blocked))
        ran = iter(await self._arun_all([(c, s) for c, s, blocked in prepared if blocked is None]))
        executions: list[ToolExecution] = []
        for index, (call, _, blocked) in enumerate(prepared):
            if blocked is not None:
                executions.append(blocked)
                continue
            outcome = next(ran)
            try:
                if isinstance(outcome, BaseException) and not isinstance(outcome, AgentStop):
                    raise outcome
                done = outcome.record() if isinstance(outcome, _Ran) else outcome
                execution, state = self._after(call, state, step_number, done)
            except BaseException as error:
                raise self._cut_short(error, calls, index, executions, hook_ran=True)  # noqa: B904
            executions.append(execution)
        if hook_error is not None:
            index = len(prepared)
            raise self._cut_short(hook_error, calls, index, executions, hook_ran=False)
        return ToolExecutions(executions), state

    async def _arun_all(
        self, calls: list[tuple[ToolCall, AgentState]]
    ) -> list[_Ran | BaseException]:
        """Run the calls (each with the state its hooks left) together; a call's ``AgentStop``
        or escaping error is its outcome. A single call runs without a task of its own."""
        if len(calls) == 1:
            call, state = calls[0]
            try:
                return [await self._arun(call, state)]
            except Exception as error:
                return [error]
        import asyncio

        return await asyncio.gather(
            *(self._arun(call, state) for call, state in calls), return_exceptions=True
        )

    def _cut_short(
        self,
        error: BaseException,
        calls: tuple[ToolCall, ...],
        index: int,
        executions: list[ToolExecution],
        *,
        hook_ran: bool,
    ) -> BaseException:
        """The error to raise when call ``index`` ended the step's tool use, with the results of
        every call attached: those recorded so far, then call ``index``'s and the later ones'.

        ``hook_ran``: an error that is not a stop came from an ``after_tool_use`` hook (the call
        ran, ``StepInterrupted`` carries its result) rather than from a ``before_tool_use`` hook.
        """
        if isinstance(error, AgentStop):
            message = error.stop_message or "stop requested"
            executions.extend(not_run(calls[index : index + 1], f"Execution stopped: {message}"))
            executions.extend(not_run(calls[index + 1 :], NOT_RUN_STOPPED))
            error.tool_executions = ToolExecutions(executions)
            return error
        if isinstance(error, StepInterrupted) and hook_ran:  # the call ran: keep its result
            executions.extend(error.tool_executions or ())
            executions.extend(not_run(calls[index + 1 :], NOT_RUN_HOOK_FAILED))
            error.tool_executions = ToolExecutions(executions)
            return error
        if isinstance(error, EventListenerError) or not isinstance(error, Exception):
            return error
        # a before_tool_use hook failed: the call did not run
        executions.extend(not_run(calls[index:], NOT_RUN_HOOK_FAILED))
        interrupted = StepInterrupted(error, tool_executions=ToolExecutions(executions))
        interrupted.__cause__ = error
        return interrupted

    def _execute_one(
        self, call: ToolCall, state: AgentState, step_number: int
    ) -> tuple[ToolExecution, AgentState]:
        by_trigger = self.hooks.by_trigger
        if not (
            self.events.listened or by_trigger[_BEFORE_TOOL_USE] or by_trigger[_AFTER_TOOL_USE]
        ):  # no tool hook, no listener: ``_before`` and ``_after`` would find nothing to do
            return self._run(call, state), state
        call, state, blocked = self._before(call, state, step_number)
        if blocked is not None:
            return blocked, state
        try:
            execution = self._run(call, state)
        except AgentStop as stop:
            self._completed(state, step_number, call, f"stopped: {stop}", type(stop).__name__)
            raise
        return self._after(call, state, step_number, execution)

    def _before(
        self, call: ToolCall, state: AgentState, step_number: int
    ) -> tuple[ToolCall, AgentState, ToolExecution | None]:
        """The ``before_tool_use`` hooks and ``ToolCallStarted``: the call and state they left,
        and the blocked execution to record when they blocked the call (then it does not run)."""
        hooks = self.hooks
        if hooks.by_trigger[_BEFORE_TOOL_USE]:
            context = hooks.intercept(HookContext(_BEFORE_TOOL_USE, state, tool_call=call))
            state, call = context.state, context.tool_call or call
            if context.blocks_the_call():
                return call, state, self._blocked(context, call, step_number)
        if self.events.listened:
            fields = {"args": call.arguments, "tool_call_id": call.id}
            self._tell(ToolCallStarted, state, step_number, call, **fields)
        return call, state, None

    def _after(
        self,
        call: ToolCall,
        state: AgentState,
        step_number: int,
        outcome: ToolExecution | AgentStop,
    ) -> tuple[ToolExecution, AgentState]:
        """``ToolCallCompleted`` and the ``after_tool_use`` hooks for a call that ran (or the
        stop it raised, re-raised)."""
        if isinstance(outcome, AgentStop):
            self._completed(state, step_number, call, f"stopped: {outcome}", type(outcome).__name__)
            raise outcome
        execution = outcome
        if self.events.listened:
            self._completed(state, step_number, call, execution.error, execution.error_type)
        if self.hooks.by_trigger[_AFTER_TOOL_USE]:
            try:
                context = self.hooks.intercept(
                    HookContext(_AFTER_TOOL_USE, state, tool_execution=execution)
                )
            except (AgentStop, EventListenerError):
                raise
            except Exception as error:  # the call ran: keep its result
                raise StepInterrupted(
                    error, tool_executions=ToolExecutions((execution,))
                ) from error
            state, execution = context.state, context.tool_execution or execution
        return execution, state

    def _completed(
        self,
        state: AgentState,
        step_number: int,
        call: ToolCall,
        error: str | None,
        error_type: str | None,
    ) -> None:
        fields = {
            "tool_call_id": call.id,
            "success": error is None,
            "error": error,
            "error_type": error_type,
        }
        self._tell(ToolCallCompleted, state, step_number, call, **fields)

    def _tell(
        self,
        event_type: type[ToolCallEvent],
        state: AgentState,
        step_number: int,
        call: ToolCall,
        **fields: Any,
    ) -> None:
        """Dispatch an ``event_type`` about ``call`` (with ``fields``) when anyone listens for
        it. The hot callers read ``events.listened`` first: unheard, no fields are built."""
        events = self.events
        if events.wants(event_type):
            events.dispatch(event_type.of(state, step_number=step_number, tool=call.name, **fields))

    def _blocked(self, context: HookContext, call: ToolCall, step_number: int) -> ToolExecution:
        execution = context.tool_execution
        if execution is None or not execution.has_error:
            # An error a hook added with ``with_error`` is the reason the call does not run.
            reason = "; ".join(error.message for error in context.errors if error.message)
            execution = context.with_tool_call(call).block_tool_execution(reason).tool_execution
        assert execution is not None
        fields = {"args": call.arguments, "reason": execution.error_message()}
        self._tell(ToolCallBlocked, context.state, step_number, call, **fields)
        return execution

    def _run(self, call: ToolCall, state: AgentState) -> ToolExecution:
        started = clock.now()
        try:
            tool = self.tools.get(call.name)
            if tool is None:
                raise ToolNotFoundError(call.name, list(self.tools.names()))
            result = tool.invoke(call.arguments, ToolContext(state, call))
            # Inside the try: a value that cannot even be recorded fails the call, not the step.
            return _success(call, result, started)
        except (AgentStop, EventListenerError):  # a stop request; a broken listener (a subagent's)
            raise
        except Exception as error:
            return _failure(call, error, started)

    async def _arun(self, call: ToolCall, state: AgentState) -> _Ran:
        """Run one call of the async path. The record is made later, in call order, so the
        records (and the ids they draw) come in the same order as in the sync path."""
        started = clock.now()
        try:
            tool = self.tools.get(call.name)
            if tool is None:
                raise ToolNotFoundError(call.name, list(self.tools.names()))
            result = await tool.ainvoke(call.arguments, ToolContext(state, call))
        except (AgentStop, EventListenerError):
            raise
        except Exception as error:
            return _Ran(call, None, error, started, clock.now())
        return _Ran(call, result, None, started, clock.now())


@dataclass(frozen=True, slots=True)
class _Ran:
    """What one call of the async path gave: its result or its error, and its times."""

    call: ToolCall
    result: Any
    error: Exception | None
    started: Any
    completed: Any

    def record(self) -> ToolExecution:
        if self.error is not None:
            return _failure(self.call, self.error, self.started, self.completed)
        try:  # a value that cannot even be recorded fails the call, not the step
            return _success(self.call, self.result, self.started, self.completed)
        except Exception as error:
            return _failure(self.call, error, self.started, self.completed)


def _success(call: ToolCall, result: Any, started: Any, completed: Any = None) -> ToolExecution:
    if isinstance(result, ToolOutput):
        raw, content, usage = result.value, result.content, result.usage
    else:
        raw, content, usage = result, None, ZERO_USAGE
    if type(raw) not in _JSON_SCALARS and inspect.isawaitable(raw):
        _unawaited(call, raw)
    if type(raw) not in _JSON_SCALARS and isinstance(raw, Iterator):
        raw = list(raw)  # read once: the stored value and the model's text both come from it
    value = _json_value(raw)
    if content is None:
        content = format_tool_value(raw)
    # The value is checked JSON data already; validate only what a tool handed over unchecked.
    trusted = type(content) is str and type(usage) is Usage and type(call) is ToolCall
    execution: ToolExecution = ToolExecution._builders[trusted](
        tool_call=call,
        value=value,
        content=content,
        usage=usage,
        started_at=started,
        completed_at=completed or clock.now(),
    )
    return execution


def _unawaited(call: ToolCall, value: Any) -> NoReturn:
    """A plain tool handed back an awaitable (an async function called without ``await``): its
    text would reach the model as a value, so the call fails instead."""
    if inspect.iscoroutine(value):
        value.close()  # never to run: no "was never awaited" warning later
    raise ToolError(
        f"tool '{call.name}' returned a {type(value).__name__} instead of a value: it called an "
        "async function without awaiting it. Make the tool 'async def' and await the call."
    )


_JSON_SCALARS = frozenset({str, int, bool, type(None)})


def _json_value(value: Any) -> Any:
    """The value as JSON data for the state; what JSON cannot hold (NaN, bytes that are not
    UTF-8, objects) is kept as the text the model saw."""
    if type(value) in _JSON_SCALARS:
        return value
    data = _jsonable(value)
    return data if data is not _NOT_JSON and is_json_data(data) else format_tool_value(value)


_NOT_JSON = object()


def _jsonable(value: Any) -> Any:
    """``to_jsonable_python(value)``, or ``_NOT_JSON`` when it cannot convert the value."""
    try:
        return to_jsonable_python(value)
    except (PydanticSerializationError, ValueError):  # ValueError: bytes not UTF-8, a cycle
        return _NOT_JSON


NOT_RUN_STOPPED = "Not executed: the execution was stopped before this call."
NOT_RUN_HOOK_FAILED = "Not executed: a hook failed before this call."


def not_run(calls: Sequence[ToolCall], content: str) -> ToolExecutions:
    """A result for each call saying, in ``content``, why it did not run (marked ``stopped``)."""
    now = clock.now()
    return ToolExecutions(
        ToolExecution(
            tool_call=call, content=content, stopped=True, started_at=now, completed_at=now
        )
        for call in calls
    )


def _failure(
    call: ToolCall, error: Exception, started: Any, completed: Any = None
) -> ToolExecution:
    message = str(error) or type(error).__name__
    usage = getattr(error, "usage", None)
    return ToolExecution(
        tool_call=call,
        content=f"Error in tool call: {message}",
        error=message,
        error_type=type(error).__name__,
        usage=usage if isinstance(usage, Usage) else ZERO_USAGE,
        started_at=started,
        completed_at=completed or clock.now(),
    )
