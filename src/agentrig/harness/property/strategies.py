"""Hypothesis strategies for agentrig's data.

Every strategy is a plain function with keyword-only, validated arguments (a bad argument raises
:class:`~agentrig.errors.InvalidInputError` when the strategy is built, not when it draws)::

    from hypothesis import given
    from agentrig.harness.property import strategies as ars

    @given(script=ars.scripts(tools={"lookup": {"query": "string"}}), budget=ars.budgets())
    def test_my_agent(script, budget): ...

Tools are described the way ``ScriptedTool`` and scenario files declare them: a mapping of tool
name to parameters, each a JSON type (``"string"``, ``"integer?"`` for an optional one...), or a
strategy that draws the parameter's values (``{"refund": {"order_id": st.sampled_from(["A100",
"B200"])}}``; such a parameter is always passed). Drawn values shrink towards simple cases: no
budget limit, text answers, valid arguments.

Importing this module registers strategies for agentrig's types with
``st.register_type_strategy``, so ``st.from_type(Message)`` and ``st.builds(...)`` work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from agentrig import (
    AgentState,
    ExecutionBudget,
    FinishReason,
    Message,
    Role,
    StopReason,
    StopSignal,
    ToolCall,
    ToolResult,
    Usage,
)
from agentrig.clock import format_uuid4
from agentrig.errors import InvalidInputError
from agentrig.fakes import CallSpec, Turn
from agentrig.fakes.clock import DEFAULT_START
from agentrig.harness.cassettes import (
    Cassette,
    CassetteMetadata,
    Interaction,
    RecordedError,
    RecordedLlmConfig,
    RecordedMessage,
    RecordedRequest,
    RecordedResponse,
    RecordedTool,
    RecordedToolCall,
    record_usage,
)
from agentrig.harness.checks.invariant import invariant_names
from agentrig.harness.property.play import play
from agentrig.harness.scenarios.model import (
    AgentSpec,
    CancelAfterStep,
    CostExpect,
    Expectation,
    InvariantSelection,
    MessageExpect,
    ModelReply,
    Scenario,
    ScenarioTurn,
    TextMatch,
    ToolCallsExpect,
    ToolCallSpec,
    ToolReplySpec,
    ToolSpec,
    TraceModeName,
    UsageExpect,
)
from agentrig.harness.scenarios.writer import budget_spec, reply_from_turn

__all__ = [
    "DEFAULT_TOOLS",
    "DEFAULT_TOOL_SPECS",
    "JSON_TYPES",
    "ParamKind",
    "ToolParams",
    "agent_states",
    "budgets",
    "call_specs",
    "cassettes",
    "identifiers",
    "ids",
    "interactions",
    "json_values",
    "llm_turns",
    "messages",
    "model_replies",
    "params_of",
    "params_of_schema",
    "scenarios",
    "scripts",
    "stop_signals",
    "texts",
    "tool_calls",
    "tool_specs",
    "usages",
]

ParamKind = str | SearchStrategy[Any]
"""A parameter: its JSON type (a trailing ``?`` marks an optional one), or a strategy drawing its
values."""
ToolParams = Mapping[str, Mapping[str, ParamKind]]
"""Tool name -> parameter name -> JSON type or strategy of values."""

JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array")
TurnKind = Literal["text", "tool_calls", "error"]
Outcome = Literal["return", "raise", "stop"]
T = TypeVar("T")

DEFAULT_TOOL_SPECS: dict[str, ToolSpec] = {
    "lookup": ToolSpec(
        description="Looks something up.",
        params={"query": "string", "limit": "integer?"},
        replies=(
            ToolReplySpec.model_validate({"when": {"limit": 0}, "raise": "limit must be positive"}),
            ToolReplySpec.model_validate({"return": {"hits": 1}}),
        ),
    ),
    "explode": ToolSpec(
        description="Always fails.", replies=(ToolReplySpec.model_validate({"raise": "boom"}),)
    ),
    "halt": ToolSpec(
        description="Stops the agent.",
        params={"why": "string?"},
        replies=(ToolReplySpec.model_validate({"stop": "halted by the tool"}),),
    ),
}
"""Three scripted tools: ``lookup`` (returns, or raises for ``limit=0``), ``explode`` (raises)
and ``halt`` (raises ``AgentStop``)."""

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def params_of(tools: Mapping[str, ToolSpec]) -> dict[str, dict[str, str]]:
    """The parameters of scenario tool specs, in the shape strategies take."""
    return {name: dict(spec.params) for name, spec in tools.items()}


def params_of_schema(schema: Mapping[str, Any]) -> dict[str, str]:
    """A tool's JSON Schema (``Tool.parameters()``) in the shape strategies take: each
    property's JSON type (``"integer"``; ``"integer?"`` when not required). A property that
    names no single JSON type (a union, a reference) is drawn as any JSON value's type, a
    string: calls the tool may refuse, which exercise its argument checks."""
    properties = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    params: dict[str, str] = {}
    for name, prop in (properties if isinstance(properties, dict) else {}).items():
        kinds = _schema_types(prop)
        kind = kinds[0] if len(kinds) == 1 and kinds[0] in JSON_TYPES else "string"
        params[str(name)] = kind if name in needed else f"{kind}?"
    return params


def _schema_types(prop: Any) -> list[str]:
    """The JSON types a property names, ``null`` left out (``int | None`` is an integer)."""
    if not isinstance(prop, dict):
        return []
    kind = prop.get("type")
    if isinstance(kind, str):
        return [] if kind == "null" else [kind]
    branches = prop.get("anyOf")
    if isinstance(branches, list):
        return [k for branch in branches for k in _schema_types(branch)]
    return []


DEFAULT_TOOLS: dict[str, dict[str, str]] = params_of(DEFAULT_TOOL_SPECS)
"""The parameters of :data:`DEFAULT_TOOL_SPECS`."""


# --- validation -------------------------------------------------------------------------------


def _fail(argument: str, reason: str) -> InvalidInputError:
    return InvalidInputError(f"strategy argument {argument!r}", [("", reason)])


def _int(name: str, value: object, *, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise _fail(name, f"expected an integer >= {low}, got {value!r}")
    return value


_MAX_NUMBER = 1e11
"""Largest bound in seconds or cost: a deadline this far after ``FakeClock``'s start still fits
in a ``datetime`` (about 3,000 years)."""


def _number(name: str, value: object) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    number = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not math.isfinite(number) or not 0 <= number <= _MAX_NUMBER:
        raise _fail(name, f"expected a finite number >= 0, at most {_MAX_NUMBER:g}, got {value!r}")
    return number


def _sizes(min_name: str, low: int, max_name: str, high: int) -> None:
    _int(min_name, low)
    _int(max_name, high)
    if high < low:
        raise _fail(max_name, f"{max_name}={high} is smaller than {min_name}={low}")


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, f"expected True or False, got {value!r}")
    return value


def _listed(name: str, values: Sequence[T]) -> tuple[T, ...]:
    """``values`` as a tuple; a bare string (a sequence of letters) is refused."""
    if isinstance(values, str):
        raise _fail(name, f"expected a list of values, got one string; write {name}=[{values!r}]")
    return tuple(values)


def _choices(name: str, values: Sequence[T], valid: Sequence[T]) -> tuple[T, ...]:
    chosen = _listed(name, values)
    wrong = [value for value in chosen if value not in valid]
    if not chosen or wrong:
        options = ", ".join(str(option) for option in valid)
        raise _fail(name, f"expected a non-empty selection of: {options}; got {chosen!r}")
    return chosen


E = TypeVar("E", bound=StrEnum)


def _members(name: str, values: Sequence[E | str], enum: type[E]) -> tuple[E, ...]:
    """``values`` as members of ``enum``; an unknown value lists the valid ones."""
    chosen: list[E] = []
    for value in _listed(name, values):
        try:
            chosen.append(enum(value))
        except ValueError:
            valid = ", ".join(member.value for member in enum)
            raise _fail(name, f"{value!r} is not one of: {valid}") from None
    if not chosen:
        raise _fail(name, "expected at least one value")
    return tuple(chosen)


def _tools(value: object) -> dict[str, dict[str, ParamKind]]:
    if not isinstance(value, Mapping):
        raise _fail("tools", f"expected a mapping of tool name to parameters, got {value!r}")
    tools: dict[str, dict[str, ParamKind]] = {}
    for name, params in value.items():
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise _fail("tools", f"{name!r} is not a tool name (letters, digits, '_', '-')")
        if not isinstance(params, Mapping):
            raise _fail("tools", f"parameters of {name!r} must be a mapping, got {params!r}")
        for param, kind in params.items():
            if isinstance(kind, SearchStrategy):
                continue
            if not isinstance(kind, str) or kind.rstrip("?") not in JSON_TYPES:
                valid = ", ".join(JSON_TYPES)
                raise _fail(
                    "tools",
                    f"{name}.{param}: type {kind!r} is not one of {valid}, nor a strategy of "
                    "values",
                )
        tools[name] = dict(params)
    return tools


# --- scalars ----------------------------------------------------------------------------------


def texts(*, min_size: int = 0, max_size: int = 20) -> SearchStrategy[str]:
    """Unicode text a UTF-8 file can hold (no surrogates); shrinks towards ``""`` and ASCII."""
    _sizes("min_size", min_size, "max_size", max_size)
    return st.text(st.characters(codec="utf-8"), min_size=min_size, max_size=max_size)


def identifiers(*, max_size: int = 12) -> SearchStrategy[str]:
    """Names valid for tools and parameters: ``[a-z_][a-z0-9_]*``."""
    _int("max_size", max_size, low=1)
    return st.from_regex(rf"[a-z_][a-z0-9_]{{0,{max_size - 1}}}", fullmatch=True)


def ids() -> SearchStrategy[str]:
    """UUID-shaped ids, like the ones ``SeededIds`` and ``UuidIds`` produce."""
    return st.integers(min_value=0, max_value=2**128 - 1).map(format_uuid4)


def _scalars() -> SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(max_size=12),
    )


def json_values(*, max_leaves: int = 6) -> SearchStrategy[Any]:
    """JSON data: None, booleans, integers, finite floats, text, lists and string-keyed dicts."""
    _int("max_leaves", max_leaves, low=1)
    return st.recursive(
        _scalars(),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(texts(max_size=8), children, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def _json_objects(max_size: int = 3) -> SearchStrategy[dict[str, Any]]:
    return st.dictionaries(texts(max_size=8), json_values(max_leaves=3), max_size=max_size)


_MOMENTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


# --- messages and tool calls ------------------------------------------------------------------


def tool_calls(*, names: Sequence[str] | None = None) -> SearchStrategy[ToolCall]:
    """``ToolCall``s with drawn ids, a name from ``names`` (default: any identifier) and JSON
    arguments."""
    name_strategy = identifiers() if names is None else st.sampled_from(_names(names))
    return st.builds(ToolCall, id=ids(), name=name_strategy, arguments=_json_objects())


def _names(names: Sequence[str]) -> tuple[str, ...]:
    chosen = _listed("names", names)
    if not chosen or not all(isinstance(n, str) and _IDENTIFIER.match(n) for n in chosen):
        raise _fail("names", f"expected a non-empty sequence of tool names, got {names!r}")
    return chosen


def messages(*, roles: Sequence[Role | str] = tuple(Role)) -> SearchStrategy[Message]:
    """``Message``s of the given roles: assistants may request tool calls, tool messages carry a
    ``ToolResult``; ids, times and metadata are drawn too."""
    return st.one_of(*(_message_of(role) for role in _members("roles", roles, Role)))


def _message_of(role: Role) -> SearchStrategy[Message]:
    base: dict[str, SearchStrategy[Any]] = {
        "role": st.just(role),
        "content": texts(),
        "metadata": st.dictionaries(texts(max_size=8), _scalars(), max_size=2),
        "id": ids(),
        "created_at": _MOMENTS,
    }
    if role is Role.ASSISTANT:
        base["tool_calls"] = st.lists(tool_calls(), max_size=2).map(tuple)
    if role is Role.TOOL:
        return st.builds(_tool_message, result=_tool_results(), **base)
    return st.builds(Message, **base)


def _tool_message(result: ToolResult, **fields: Any) -> Message:
    fields["content"] = result.content
    return Message(tool_result=result, **fields)


def _tool_results() -> SearchStrategy[ToolResult]:
    return st.builds(
        ToolResult, content=texts(), call_id=ids(), tool_name=identifiers(), is_error=st.booleans()
    )


def stop_signals(
    *, reasons: Sequence[StopReason | str] = tuple(StopReason)
) -> SearchStrategy[StopSignal]:
    """``StopSignal``s with one of ``reasons``, a message, a source and JSON context."""
    return st.builds(
        StopSignal,
        reason=st.sampled_from(_members("reasons", reasons, StopReason)),
        message=texts(),
        context=_json_objects(max_size=2),
        source=st.none() | texts(min_size=1, max_size=12),
    )


def usages(
    *, max_tokens: int = 400, max_cost: float = 0.5, cache: bool = True
) -> SearchStrategy[Usage]:
    """``Usage`` with up to ``max_tokens`` per counter and a cost in steps of 0.0001."""
    _int("max_tokens", max_tokens)
    top = round(_number("max_cost", max_cost) * 10_000)
    count = st.integers(min_value=0, max_value=max_tokens)
    extra = count if _flag("cache", cache) else st.just(0)
    return st.builds(
        Usage,
        input_tokens=count,
        output_tokens=count,
        cache_read_tokens=extra,
        cache_write_tokens=extra,
        reasoning_tokens=extra,
        cost=st.integers(min_value=0, max_value=top).map(lambda n: n / 10_000),
    )


def budgets(
    *,
    max_steps: int | None = 6,
    max_tokens: int | None = 1500,
    max_seconds: float | None = 8.0,
    max_cost: float | None = 1.0,
    deadline_within: float | None = 8.0,
) -> SearchStrategy[ExecutionBudget]:
    """``ExecutionBudget``s where each limit is absent or drawn up to the given bound.

    Pass ``None`` to never set a limit; ``deadline_within`` bounds a deadline in seconds after
    ``FakeClock``'s start. Shrinks towards an unlimited budget.
    """
    limits: dict[str, SearchStrategy[Any]] = {}
    if max_steps is not None:
        limits["max_steps"] = _optional(st.integers(0, _int("max_steps", max_steps)))
    if max_tokens is not None:
        limits["max_tokens"] = _optional(st.integers(0, _int("max_tokens", max_tokens)))
    if max_seconds is not None:
        limits["max_seconds"] = _optional(_tenths(_number("max_seconds", max_seconds)))
    if max_cost is not None:
        limits["max_cost"] = _optional(_tenths(_number("max_cost", max_cost)))
    if deadline_within is not None:
        seconds = _tenths(_number("deadline_within", deadline_within))
        limits["deadline"] = _optional(seconds.map(lambda s: DEFAULT_START + timedelta(seconds=s)))
    return st.fixed_dictionaries(limits).map(lambda given: ExecutionBudget(**given))


def _optional(strategy: SearchStrategy[T]) -> SearchStrategy[T | None]:
    return st.none() | strategy


def _or_zero(strategy: SearchStrategy[T], zero: T) -> SearchStrategy[T]:
    """``zero`` or a drawn value: shrinking drops the whole value in one step."""
    return st.just(zero) | strategy


def _tenths(top: float) -> SearchStrategy[float]:
    return st.integers(min_value=0, max_value=math.floor(top * 10)).map(lambda n: n / 10)


# --- tool arguments and scripted turns --------------------------------------------------------


_VALUES: dict[str, SearchStrategy[Any]] = {
    "string": texts(max_size=12),
    "integer": st.integers(min_value=-1000, max_value=1000),
    "number": st.integers(-1000, 1000) | st.floats(-1e6, 1e6, allow_nan=False),
    "boolean": st.booleans(),
    "object": st.dictionaries(texts(max_size=6), _scalars(), max_size=2),
    "array": st.lists(_scalars(), max_size=3),
}


def _optional_param(kind: ParamKind) -> bool:
    return isinstance(kind, str) and kind.endswith("?")


def _values(kind: ParamKind) -> SearchStrategy[Any]:
    """The values of a parameter: drawn by its strategy, or any of its JSON type."""
    return kind if isinstance(kind, SearchStrategy) else _VALUES[kind.rstrip("?")]


def _valid_arguments(params: Mapping[str, ParamKind]) -> SearchStrategy[dict[str, Any]]:
    required = {n: _values(k) for n, k in params.items() if not _optional_param(k)}
    optional = {n: _values(k) for n, k in params.items() if _optional_param(k)}
    return st.fixed_dictionaries(required, optional=optional)


_FLOATS = st.floats(min_value=-1e6, max_value=1e6)
_WRONG: dict[str, SearchStrategy[Any]] = {
    kind: st.one_of(
        *(
            _FLOATS if other == "number" else _VALUES[other]
            for other in JSON_TYPES
            if other != kind and not (kind == "number" and other == "integer")
        )
    )
    for kind in JSON_TYPES
}
"""Values that never have the JSON type ``kind``."""


def _json_type(value: object) -> str | None:
    """The JSON type of a drawn value (None for null or a value that is not JSON)."""
    for kind, python in (
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("object", dict),
        ("array", list | tuple),
    ):
        if isinstance(value, python):
            return kind
    return None


def _wrong_values(kind: ParamKind) -> SearchStrategy[Any]:
    """Values of another JSON type than the parameter's (for a strategy: than the value it
    draws)."""
    if isinstance(kind, str):
        return _WRONG[kind.rstrip("?")]
    return kind.flatmap(lambda value: _WRONG.get(_json_type(value) or "", _VALUES["string"]))


def _invalid_arguments(params: Mapping[str, ParamKind]) -> SearchStrategy[dict[str, Any]]:
    """Arguments with one problem: a required one missing, one of a wrong type, or an extra one."""
    valid = _valid_arguments(params)
    required = sorted(name for name, kind in params.items() if not _optional_param(kind))
    extra = st.tuples(identifiers().filter(lambda name: name not in params), _scalars())
    problems = [
        *(valid.map(_without(name)) for name in required),
        *(
            st.tuples(valid, _wrong_values(kind)).map(_with_value(name))
            for name, kind in sorted(params.items())
        ),
        st.tuples(valid, extra).map(lambda pair: {**pair[0], pair[1][0]: pair[1][1]}),
    ]
    return st.one_of(*problems)


def _without(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda arguments: {key: value for key, value in arguments.items() if key != name}


def _with_value(name: str) -> Callable[[tuple[dict[str, Any], Any]], dict[str, Any]]:
    return lambda pair: {**pair[0], name: pair[1]}


def call_specs(
    *,
    tools: ToolParams = DEFAULT_TOOLS,
    invalid_arguments: bool = False,
    unknown_tools: bool = False,
) -> SearchStrategy[CallSpec]:
    """Scripted tool calls (``fakes.CallSpec``) to the given tools with valid arguments; with
    ``invalid_arguments`` also missing, mistyped or unexpected ones (for tools that declare
    parameters); with ``unknown_tools`` also calls to tools that do not exist."""
    known = _tools(tools)
    options = [_calls(known, _valid_arguments)] if known else []
    if _flag("invalid_arguments", invalid_arguments) and any(known.values()):
        options.append(_calls({n: p for n, p in known.items() if p}, _invalid_arguments))
    if _flag("unknown_tools", unknown_tools):
        names = identifiers().filter(lambda name: name not in known)
        options.append(st.builds(CallSpec, name=names, arguments=_json_objects(max_size=2)))
    if not options:
        raise _fail("tools", "no tool to call: pass tools, or unknown_tools=True")
    return st.one_of(*options)


def _calls(
    tools: dict[str, dict[str, ParamKind]],
    arguments: Callable[[Mapping[str, ParamKind]], SearchStrategy[dict[str, Any]]],
) -> SearchStrategy[CallSpec]:
    return st.one_of(
        *(
            st.builds(CallSpec, name=st.just(name), arguments=arguments(params))
            for name, params in sorted(tools.items())
        )
    )


def llm_turns(
    *,
    tools: ToolParams = DEFAULT_TOOLS,
    kinds: Sequence[TurnKind] = ("text", "tool_calls", "error"),
    max_calls: int = 2,
    invalid_arguments: bool = True,
    unknown_tools: bool = False,
    usage: bool = True,
    max_latency: float = 0.0,
    finish_reasons: bool = True,
) -> SearchStrategy[Turn]:
    """One scripted model answer (``fakes.Turn``): text, tool calls (with text or not), or a
    provider error. Usage, cost, latency (needs a ``FakeClock``) and finish reasons are drawn."""
    chosen = _choices("kinds", kinds, ("text", "tool_calls", "error"))
    calls = (
        call_specs(tools=tools, invalid_arguments=invalid_arguments, unknown_tools=unknown_tools)
        if "tool_calls" in chosen
        else st.nothing()
    )
    options = _TurnOptions(
        calls=calls,
        max_calls=_int("max_calls", max_calls, low=1),
        usage=_or_zero(usages(), Usage()) if _flag("usage", usage) else st.just(Usage()),
        latency=_or_zero(_tenths(_number("max_latency", max_latency)), 0.0),
        finish=_optional(st.sampled_from(tuple(FinishReason)))
        if _flag("finish_reasons", finish_reasons)
        else st.none(),
    )
    return st.one_of(*(options.turn(kind) for kind in chosen))


@dataclass(frozen=True)
class _TurnOptions:
    """The parts every kind of turn draws from."""

    calls: SearchStrategy[CallSpec]
    max_calls: int
    usage: SearchStrategy[Usage]
    latency: SearchStrategy[float]
    finish: SearchStrategy[FinishReason | None]

    def turn(self, kind: str) -> SearchStrategy[Turn]:
        """Turns of one kind: ``error``, ``text`` or ``tool_calls``."""
        if kind == "error":
            return st.builds(
                Turn, error=texts(min_size=1), retryable=st.booleans(), latency=self.latency
            )
        if kind == "text":
            text = texts(min_size=1)
            calls: SearchStrategy[tuple[CallSpec, ...]] = st.just(())
        else:
            text = texts()
            calls = st.lists(self.calls, min_size=1, max_size=self.max_calls).map(tuple)
        return st.builds(
            Turn,
            text=text,
            calls=calls,
            usage=self.usage,
            finish_reason=self.finish,
            latency=self.latency,
        )


def scripts(
    *,
    tools: ToolParams = DEFAULT_TOOLS,
    min_steps: int = 0,
    max_steps: int = 4,
    errors: bool = True,
    max_calls: int = 2,
    invalid_arguments: bool = True,
    unknown_tools: bool = False,
    max_latency: float = 0.0,
) -> SearchStrategy[list[Turn]]:
    """A whole script: ``min_steps`` to ``max_steps`` tool-call turns (and, with ``errors``,
    provider errors), then a final text answer. Play it with ``ScriptedLLM(script)``."""
    _sizes("min_steps", min_steps, "max_steps", max_steps)
    common: dict[str, Any] = {
        "tools": tools,
        "max_calls": max_calls,
        "invalid_arguments": invalid_arguments,
        "unknown_tools": unknown_tools,
        "max_latency": max_latency,
    }
    kinds: tuple[TurnKind, ...] = (
        ("tool_calls", "error") if _flag("errors", errors) else ("tool_calls",)
    )
    middle = (
        st.lists(llm_turns(kinds=kinds, **common), min_size=min_steps, max_size=max_steps)
        if max_steps
        else st.just([])
    )
    final = llm_turns(kinds=("text",), **common)
    return st.tuples(middle, final).map(lambda parts: [*parts[0], parts[1]])


# --- scenarios --------------------------------------------------------------------------------


def model_replies(
    *, tools: ToolParams = DEFAULT_TOOLS, **turn_options: Any
) -> SearchStrategy[ModelReply]:
    """Scenario model replies: :func:`llm_turns` written the way a scenario file holds them."""
    return llm_turns(tools=tools, **turn_options).map(reply_from_turn)


def tool_specs(
    *, outcomes: Sequence[Outcome] = ("return", "raise", "stop"), max_params: int = 3
) -> SearchStrategy[ToolSpec]:
    """Scenario tool specs: parameters, and replies in ``match`` mode (``when`` conditions, then
    maybe a catch-all) or ``sequence`` mode, each returning, raising or stopping."""
    chosen = _choices("outcomes", outcomes, ("return", "raise", "stop"))
    _int("max_params", max_params)
    params = st.dictionaries(
        identifiers(max_size=8), st.sampled_from(_PARAM_TYPES), max_size=max_params
    )
    return params.flatmap(lambda p: _tool_spec(p, chosen))


_PARAM_TYPES = tuple(kind + suffix for kind in JSON_TYPES for suffix in ("", "?"))


@st.composite
def _tool_spec(draw: st.DrawFn, params: dict[str, str], outcomes: tuple[Outcome, ...]) -> ToolSpec:
    reply = st.sampled_from(outcomes).flatmap(_reply_fields)
    mode = draw(st.sampled_from(("match", "sequence")))
    if mode == "sequence":
        replies = draw(st.lists(reply, min_size=1, max_size=3))
    else:
        keys = st.sampled_from(sorted(params)) if params else identifiers(max_size=6)
        when = st.dictionaries(keys, _scalars(), min_size=1, max_size=2)
        conditional = draw(st.lists(st.tuples(when, reply), max_size=2))
        replies = [{**fields, "when": condition} for condition, fields in conditional]
        if not replies or draw(st.booleans()):
            replies.append(draw(reply))
    return ToolSpec(
        description=draw(texts(max_size=16)),
        params=params,
        mode=mode,
        replies=tuple(ToolReplySpec.model_validate(fields) for fields in replies),
    )


def _reply_fields(outcome: Outcome) -> SearchStrategy[dict[str, Any]]:
    value = json_values(max_leaves=3) if outcome == "return" else texts(min_size=1, max_size=16)
    latency = _tenths(1.0)
    return st.fixed_dictionaries({outcome: value}, optional={"latency": latency})


def scenarios(
    *,
    max_turns: int = 2,
    max_steps: int = 3,
    tools: Mapping[str, ToolSpec] | None = None,
    outcomes: Sequence[Outcome] = ("return", "raise", "stop"),
    expectations: bool = False,
    trace_modes: Sequence[TraceModeName] = ("separated", "inline"),
) -> SearchStrategy[Scenario]:
    """Complete scenarios: an agent (prompt, trace mode, budget, scripted tools), one to
    ``max_turns`` user turns with scripted model replies, and an invariant selection.

    ``tools`` fixes the agent's tools (default: drawn, with replies among ``outcomes``). With
    ``expectations``, turns also get drawn ``expect:`` sections (which will rarely hold: use
    them for serialization, not for runs).
    """
    _sizes("max_turns", 1, "max_turns", max_turns)
    _int("max_steps", max_steps)
    modes = _choices("trace_modes", trace_modes, ("separated", "inline"))
    expect = _flag("expectations", expectations)
    drawn = tool_specs(outcomes=outcomes)  # checks ``outcomes`` even when ``tools`` fixes them
    fixed = None if tools is None else _tool_specs(tools)
    drawn_tools = (
        st.just(fixed)
        if fixed is not None
        else st.dictionaries(identifiers(max_size=10), drawn, max_size=3)
    )
    return drawn_tools.flatmap(lambda specs: _scenario(specs, max_turns, max_steps, modes, expect))


def _tool_specs(tools: object) -> dict[str, ToolSpec]:
    if not isinstance(tools, Mapping) or not all(
        isinstance(name, str) and _IDENTIFIER.match(name) and isinstance(spec, ToolSpec)
        for name, spec in tools.items()
    ):
        raise _fail("tools", f"expected a mapping of tool name to ToolSpec, got {tools!r}")
    return dict(tools)


@st.composite
def _scenario(
    draw: st.DrawFn,
    tools: dict[str, ToolSpec],
    max_turns: int,
    max_steps: int,
    modes: tuple[str, ...],
    expectations: bool,
) -> Scenario:
    params = params_of(tools)
    agent = AgentSpec(
        system_prompt=draw(texts(max_size=30)),
        trace_mode=draw(st.sampled_from(modes)),
        budget=draw(_optional(budgets().map(budget_spec))),
        tools=tools,
    )
    turn = _turn(params, max_steps, expectations)
    return Scenario(
        name=draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True)),
        description=draw(texts(max_size=30)),
        tags=tuple(draw(st.lists(texts(min_size=1, max_size=8), max_size=2))),
        agent=agent,
        turns=tuple(draw(st.lists(turn, min_size=1, max_size=max_turns))),
        invariants=draw(_invariant_selections()),
    )


@st.composite
def _turn(
    draw: st.DrawFn, params: dict[str, dict[str, str]], max_steps: int, expectations: bool
) -> ScenarioTurn:
    cancel = draw(st.sampled_from((None, "after_step", "before")))
    script = [] if cancel == "before" else draw(_script(params, max_steps))
    fields: dict[str, Any] = {
        "user": draw(texts()),
        "model": tuple(reply_from_turn(turn) for turn in script),
    }
    if cancel == "before":
        fields["cancel"] = "before"
    elif cancel == "after_step":
        fields["cancel"] = CancelAfterStep(after_step=draw(st.integers(1, max(1, len(script)))))
    if expectations:
        fields["expect"] = draw(_expectations(sorted(params)))
    return ScenarioTurn(**fields)


def _script(params: dict[str, dict[str, str]], max_steps: int) -> SearchStrategy[list[Turn]]:
    if not params:
        return llm_turns(kinds=("text", "error"), tools={}).map(lambda turn: [turn])
    return scripts(tools=params, max_steps=max_steps, max_latency=1.0)


@st.composite
def _expectations(draw: st.DrawFn, tool_names: list[str]) -> Expectation:
    fields: dict[str, SearchStrategy[Any]] = {
        "status": st.sampled_from(("completed", "stopped", "failed")),
        "stop_reason": st.sampled_from(tuple(reason.value for reason in StopReason)),
        "steps": st.integers(0, 5),
        "final_response": _text_matches(),
        "messages": st.lists(_message_expects(), max_size=3).map(tuple),
        "usage": st.builds(
            UsageExpect, input=_optional(st.integers(0, 50)), total=st.integers(0, 99)
        ),
        "cost": st.builds(CostExpect, max=_tenths(1.0)),
        "errors": st.lists(texts(min_size=1, max_size=10), max_size=2).map(tuple),
    }
    if tool_names:
        calls = st.builds(ToolCallSpec, name=st.sampled_from(tool_names), args=_json_objects(2))
        fields["tool_calls"] = st.builds(
            ToolCallsExpect,
            mode=st.sampled_from(("strict", "unordered", "subset", "superset")),
            args=st.sampled_from(("exact", "partial")),
            calls=st.lists(calls, max_size=2).map(tuple),
        )
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=4))
    return Expectation(**{key: draw(fields[key]) for key in chosen})


def _text_matches() -> SearchStrategy[TextMatch]:
    key = st.sampled_from(("equals", "contains", "regex", "empty"))
    return key.flatmap(
        lambda k: st.builds(
            TextMatch,
            **{k: st.booleans() if k == "empty" else texts(max_size=8).filter(_compiles)},
        )
    )


def _compiles(text: str) -> bool:
    try:
        re.compile(text)
    except re.error:
        return False
    return True


def _message_expects() -> SearchStrategy[MessageExpect]:
    role = st.sampled_from(("system", "user", "assistant", "tool"))
    return st.builds(MessageExpect, role=role, contains=_optional(texts(min_size=1, max_size=8)))


def _invariant_selections() -> SearchStrategy[InvariantSelection]:
    names = st.lists(st.sampled_from(invariant_names()), unique=True, max_size=3).map(tuple)
    return st.one_of(
        st.just(InvariantSelection()),
        st.builds(InvariantSelection, only=names),
        st.builds(InvariantSelection, exclude=names),
    )


# --- states the loop produces -----------------------------------------------------------------


def agent_states(
    *,
    tools: Mapping[str, ToolSpec] = DEFAULT_TOOL_SPECS,
    max_turns: int = 2,
    max_steps: int = 3,
    trace_modes: Sequence[TraceModeName] = ("separated", "inline"),
) -> SearchStrategy[AgentState]:
    """States the real loop produces: a scripted agent with ``tools`` and a drawn budget runs one
    to ``max_turns`` user turns; one of the states it yields is drawn."""
    specs = _tool_specs(tools)
    _sizes("max_turns", 1, "max_turns", max_turns)
    _int("max_steps", max_steps)
    modes = _choices("trace_modes", trace_modes, ("separated", "inline"))
    return _states(specs, max_turns, max_steps, modes)


@st.composite
def _states(
    draw: st.DrawFn,
    tools: dict[str, ToolSpec],
    max_turns: int,
    max_steps: int,
    modes: tuple[str, ...],
) -> AgentState:
    agent = AgentSpec(
        trace_mode=draw(st.sampled_from(modes)),
        budget=budget_spec(draw(budgets())),
        tools=tools,
    )
    script = scripts(tools=params_of(tools), max_steps=max_steps, max_latency=1.0)
    turns = draw(st.lists(st.tuples(texts(), script), min_size=1, max_size=max_turns))
    playback = play(agent=agent, turns=turns)
    return draw(st.sampled_from(playback.all_states()))


# --- cassettes -------------------------------------------------------------------------------


def interactions(*, max_messages: int = 4, errors: bool = True) -> SearchStrategy[Interaction]:
    """Recorded ``Interaction``s: a normalized request of up to ``max_messages`` messages (tool
    calls, tool results, tool schemas, LLM config) and a response, or with ``errors`` sometimes a
    recorded provider error."""
    _int("max_messages", max_messages)
    outcomes = [
        st.builds(
            Interaction, request=_recorded_requests(max_messages), response=_recorded_responses()
        )
    ]
    if _flag("errors", errors):
        outcomes.append(
            st.builds(
                Interaction, request=_recorded_requests(max_messages), error=_recorded_errors()
            )
        )
    return st.one_of(*outcomes)


def cassettes(*, max_interactions: int = 4, max_messages: int = 4) -> SearchStrategy[Cassette]:
    """Version-1 ``Cassette``s with metadata and up to ``max_interactions`` interactions."""
    _int("max_interactions", max_interactions)
    metadata = st.builds(
        CassetteMetadata, agentrig=texts(), provider=texts(), model=texts(), recorded_with=texts()
    )
    items = st.lists(interactions(max_messages=max_messages), max_size=max_interactions)
    return st.builds(Cassette, metadata=metadata, interactions=items.map(tuple))


def _recorded_calls() -> SearchStrategy[tuple[RecordedToolCall, ...]]:
    call = st.builds(RecordedToolCall, id=ids(), name=identifiers(), arguments=_json_objects())
    return st.lists(call, max_size=2).map(tuple)


def _recorded_messages() -> SearchStrategy[RecordedMessage]:
    plain = st.builds(
        RecordedMessage,
        role=st.sampled_from(["system", "developer", "user"]),
        content=texts(),
        name=st.just("") | identifiers(),
    )
    assistant = st.builds(
        RecordedMessage, role=st.just("assistant"), content=texts(), tool_calls=_recorded_calls()
    )
    tool = st.builds(
        RecordedMessage,
        role=st.just("tool"),
        content=texts(),
        tool_call_id=ids(),
        tool_name=identifiers(),
        is_error=st.booleans(),
    )
    return st.one_of(plain, assistant, tool)


def _recorded_requests(max_messages: int) -> SearchStrategy[RecordedRequest]:
    tool = st.builds(
        RecordedTool, name=identifiers(), description=texts(), parameters=_json_objects()
    )
    config = st.builds(
        RecordedLlmConfig,
        model=texts(max_size=12),
        provider=texts(max_size=8),
        temperature=_optional(st.floats(min_value=0, max_value=2)),
        max_output_tokens=_optional(st.integers(min_value=1, max_value=100_000)),
        options=_json_objects(max_size=2),
    )
    return st.builds(
        RecordedRequest,
        messages=st.lists(_recorded_messages(), max_size=max_messages).map(tuple),
        tools=st.lists(tool, max_size=2).map(tuple),
        tool_choice=st.sampled_from(["auto", "none", "required"]),
        response_format=_optional(_json_objects(max_size=2)),
        llm_config=_optional(config),
        options=_json_objects(max_size=2),
    )


def _recorded_responses() -> SearchStrategy[RecordedResponse]:
    return st.builds(
        RecordedResponse,
        content=texts(),
        tool_calls=_recorded_calls(),
        usage=usages().map(record_usage),
        finish_reason=_optional(st.sampled_from([reason.value for reason in FinishReason])),
        reasoning_content=texts(max_size=8),
        model=texts(max_size=8),
        response_id=texts(max_size=8),
        provider_data=_json_objects(max_size=2),
    )


def _recorded_errors() -> SearchStrategy[RecordedError]:
    return st.builds(
        RecordedError,
        type=identifiers(),
        message=texts(),
        retryable=st.booleans(),
        status_code=_optional(st.integers(min_value=100, max_value=599)),
        provider=st.sampled_from(["", "openai", "anthropic"]),
    )


# --- type registration ------------------------------------------------------------------------


def _register() -> None:
    for kind, strategy in (
        (Message, messages()),
        (ToolCall, tool_calls()),
        (ToolResult, _tool_results()),
        (Usage, usages()),
        (ExecutionBudget, budgets()),
        (StopSignal, stop_signals()),
        (CallSpec, call_specs()),
        (Turn, llm_turns()),
        (ModelReply, model_replies()),
        (ToolSpec, tool_specs()),
        (Scenario, scenarios()),
        (AgentState, agent_states()),
        (Interaction, interactions()),
        (Cassette, cassettes()),
    ):
        st.register_type_strategy(kind, strategy)


_register()
