"""The scenario file format (``*.scenario.yaml``) as frozen pydantic models.

The models are declarative data: they describe an agent, its scripted model and tools, the user
turns and what to expect, and know nothing of the runtime that plays them. Every model rejects
unknown keys; cross-field rules (``call`` or ``calls``, one outcome per tool reply, ...) are
checked by the model that owns them and reported at the offending key.

Models loaded from a file remember where they were written: ``model.source`` is a
:class:`SourceLocation` (``None`` for models built in code). Locations take no part in equality.
Dump with ``model_dump(by_alias=True, exclude_unset=True)`` to get the file's shape back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    GetJsonSchemaHandler,
    PrivateAttr,
    Strict,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

from agentrig._model import json_equal
from agentrig.errors import InvalidInputError
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.yaml_source import FieldPath, YamlSource, load_yaml_text

__all__ = [
    "CALL_SHORTHAND_PATTERN",
    "IDENTIFIER_PATTERN",
    "INVARIANT_NAME_PATTERN",
    "SCENARIO_NAME_PATTERN",
    "SPAWN_SUBAGENT_TOOL",
    "AgentSpec",
    "ArgsMatch",
    "BudgetSpec",
    "CancelAfterStep",
    "CostExpect",
    "Expectation",
    "FinishReason",
    "HookAction",
    "HookSpec",
    "HookTrigger",
    "InvariantSelection",
    "MessageExpect",
    "ModelReply",
    "ParamType",
    "Role",
    "Scenario",
    "ScenarioModel",
    "SourceLocation",
    "Status",
    "StopReasonName",
    "SubagentPolicySpec",
    "SubagentSpec",
    "TextMatch",
    "ToolCallSpec",
    "ToolCallsExpect",
    "ToolMode",
    "ToolReply",
    "ToolSpec",
    "TraceMode",
    "TrajectoryMode",
    "Turn",
    "UsageExpect",
    "UsageSpec",
    "parse_call_shorthand",
]

SCENARIO_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
INVARIANT_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
CALL_SHORTHAND_PATTERN = r"^\s*[A-Za-z_][A-Za-z0-9_-]{0,63}\s*\(.*\)\s*$"
SPAWN_SUBAGENT_TOOL = "spawn_subagent"

Status = Literal["completed", "stopped", "failed"]
StopReasonName = Literal[
    "error",
    "stop_requested",
    "steps_limit",
    "token_limit",
    "time_limit",
    "retry_limit",
    "finish_reason",
    "user_requested",
    "completed",
    "unknown",
]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
TraceMode = Literal["separated", "inline"]
StreamMode = Literal["whole", "chars", "interleaved"]
HookTrigger = Literal[
    "before_execution",
    "before_step",
    "before_inference_request",
    "after_inference_response",
    "before_tool_use",
    "after_tool_use",
    "after_step",
    "on_stop",
    "after_execution",
    "on_error",
]
HookAction = Literal["block_tool", "stop", "request_continuation", "raise", "set_metadata"]
ToolMode = Literal["match", "sequence"]
TrajectoryMode = Literal["strict", "unordered", "subset", "superset"]
ArgsMatch = Literal["exact", "partial"]
Role = Literal["system", "user", "assistant", "tool"]
ParamType = Literal[
    "string",
    "string?",
    "integer",
    "integer?",
    "number",
    "number?",
    "boolean",
    "boolean?",
    "object",
    "object?",
    "array",
    "array?",
]

Text = Annotated[str, Strict()]
Count = Annotated[int, Strict(), Field(ge=0)]
Positive = Annotated[int, Strict(), Field(ge=1)]
NonNegative = Annotated[float, Strict(), Field(ge=0)]
Cost = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
_MAX_LATENCY = 1e9
"""Seconds (about 31 years): much more would overflow the fake clock's date."""


def _check_latency(value: float) -> float:
    if value > _MAX_LATENCY:
        raise PydanticCustomError("less_than_equal", "must be at most {le}", {"le": _MAX_LATENCY})
    return value


Latency = Annotated[
    float, Strict(), Field(ge=0, allow_inf_nan=False), AfterValidator(_check_latency)
]
Flag = Annotated[bool, Strict()]
ScenarioName = Annotated[str, Strict(), Field(pattern=SCENARIO_NAME_PATTERN)]
Identifier = Annotated[str, Strict(), Field(pattern=IDENTIFIER_PATTERN)]
InvariantName = Annotated[str, Strict(), Field(pattern=INVARIANT_NAME_PATTERN)]

_TOOL_TRIGGERS = ("before_tool_use", "after_tool_use")
_NO_KEYS: JsonDict = {"additionalProperties": False}


@dataclass(frozen=True)
class SourceLocation:
    """Where a part of a scenario was written; ``str()`` gives ``path:line``."""

    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class ScenarioModel(BaseModel):
    """Base of the format's models: frozen, unknown keys rejected, aware of its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    _source: SourceLocation | None = PrivateAttr(default=None)

    @property
    def source(self) -> SourceLocation | None:
        """Where this part was written, when it was loaded from a file."""
        return self._source

    def _bind_source(self, location: SourceLocation) -> None:
        self._source = location

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are equal; where each was written does not matter."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    @model_validator(mode="after")
    def _check_rules(self) -> Self:
        problems = [_rule_error(path, message) for path, message in self._problems()]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        """Cross-field rules, as (field path relative to this model, message) pairs."""
        return iter(())


def _rule_error(path: FieldPath, message: str) -> InitErrorDetails:
    return {"type": PydanticCustomError("scenario_rule", message), "loc": path, "input": None}


class _AlsoAccepts:
    """JSON Schema marker: the value may also be written in a short form (a string, a number)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"anyOf": [dict(self.schema), handler(core_schema)]}


def _one_of_required(*keys: str) -> dict[str, Any]:
    return {"oneOf": [{"required": [key]} for key in keys]}


def _check_json_data(value: Any) -> Any:
    problem = _not_json(value)
    if problem is not None:
        raise PydanticCustomError("json_data", problem)
    return value


def _not_json(value: Any, at: str = "") -> str | None:
    """Why ``value`` is not JSON data (the runtime accepts nothing else), or None."""
    where = f"at {at}: " if at else ""
    # Non-finite floats pass: the shorthand renders them, and the runtime reports them itself.
    if value is None or isinstance(value, str | int | float):
        return None
    if isinstance(value, list | tuple):
        found = (_not_json(item, f"{at}[{index}]") for index, item in enumerate(value))
        return next((problem for problem in found if problem is not None), None)
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        found = (_not_json(item, f"{at}.{key}" if at else key) for key, item in value.items())
        return next((problem for problem in found if problem is not None), None)
    if isinstance(value, date):
        what = f"the {type(value).__name__} {value.isoformat()} is"
        return f"{where}{what} not JSON data: quote it to make it text"
    what = "bytes are" if isinstance(value, bytes) else f"a {type(value).__name__} is"
    return f"{where}{what} not JSON data: use text, numbers, booleans, null, lists and mappings"


JsonData = Annotated[Any, AfterValidator(_check_json_data)]
"""A YAML value that is JSON-shaped: no dates, sets or bytes (YAML reads those too)."""


# --- tool calls and the call shorthand --------------------------------------------------------


class ToolCallSpec(ScenarioModel):
    """One tool call: the shorthand ``name(arg=value, ...)`` or a mapping."""

    name: Identifier = Field(description="The name of the tool to call.")
    args: dict[str, JsonData] = Field(
        default_factory=dict, description="Arguments by name; any YAML values."
    )
    id: Text | None = Field(
        default=None, description="The call id; the runner generates one when absent."
    )

    def shorthand(self) -> str:
        """This call as ``name(arg=value, ...)`` (without the id), for messages."""
        args = ", ".join(f"{key}={_render(value)}" for key, value in self.args.items())
        return f"{self.name}({args})"


_CALL = re.compile(r"\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]{0,63})\s*\((?P<args>.*)\)\s*", re.DOTALL)
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(
    r"""(?<![^\s=,\[{:(])(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')"""  # a quoted scalar
    r"""|[()\[\]{},]|[^()\[\]{},"']+|["']""",
    re.DOTALL,
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\- ]*[A-Za-z0-9_]|[A-Za-z_]")


def parse_call_shorthand(text: str) -> ToolCallSpec:
    """Parse ``name(arg=value, ...)`` or ``name()``; each value is read as a YAML flow value.

    ``city=Paris`` gives ``"Paris"``, ``n=3`` gives ``3``, ``tags=[a, b]`` a list; quote a
    string that holds commas or brackets: ``q="a, b"``. Raises
    :class:`~agentrig.errors.InvalidInputError` naming what is wrong.
    """
    match = _CALL.fullmatch(text)
    if match is None:
        raise _shorthand_error(text, _shape_problem(text))
    args: dict[str, Any] = {}
    for part in _split_args(match["args"], text):
        name, value = _parse_arg(part, text)
        if name in args:
            raise _shorthand_error(text, f"argument {name!r} is given twice")
        problem = _not_json(value)
        if problem is not None:
            raise _shorthand_error(text, f"argument {name!r}: {problem}")
        args[name] = value
    return ToolCallSpec(name=match["name"], args=args)


def _shape_problem(text: str) -> str:
    if "(" in text and not text.rstrip().endswith(")"):
        return "it must end with ')'"
    return "write name(arg=value, ...) or name()"


def _split_args(body: str, text: str) -> list[str]:
    """Split at top-level commas, keeping quoted strings and brackets whole."""
    if not body.strip():
        return []
    parts, current, depth = [], "", 0
    for token in (match.group() for match in _TOKEN.finditer(body)):
        depth += (token in _OPEN) - (token in _CLOSE)
        if depth < 0:
            raise _shorthand_error(text, f"unbalanced {token!r}")
        if token == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += token
    if depth:
        raise _shorthand_error(text, "a bracket is not closed")
    return [*parts, current]


def _parse_arg(part: str, text: str) -> tuple[str, Any]:
    name, equals, value = (piece.strip() for piece in part.partition("="))
    if not name and not equals:
        raise _shorthand_error(text, "empty argument (a stray comma?)")
    if not equals:
        raise _shorthand_error(text, f"argument {name!r} has no name: write name=value")
    if not _ARG_NAME.fullmatch(name):
        raise _shorthand_error(text, f"{name!r} is not a valid argument name")
    if not value:
        raise _shorthand_error(
            text, f"argument {name!r} has no value: write {name}=null or {name}=''"
        )
    return name, _parse_value(value, text)


def _parse_value(value: str, text: str) -> Any:
    """Read a value as YAML in flow context; a plain scalar with colons (a URL) also works."""
    try:
        items = load_yaml_text(f"[{value}]").data
    except ScenarioFileError as exc:
        scalar = _plain_scalar(value)
        if scalar is not None:
            return scalar
        raise _shorthand_error(text, f"cannot read the value {value!r}: {exc.reason}") from None
    if len(items) != 1:
        raise _shorthand_error(text, f"{value!r} is more than one value: quote it")
    return items[0]


def _plain_scalar(value: str) -> str | int | float | None:
    """The value read as one block-context scalar, or None when it is not one."""
    if "#" in value:
        return None
    try:
        parsed = load_yaml_text(value).data
    except ScenarioFileError:
        return None
    return parsed if isinstance(parsed, str | int | float) else None


def _shorthand_error(text: str, reason: str) -> InvalidInputError:
    return InvalidInputError("call shorthand", [("", f"malformed call {text!r}: {reason}")])


def _render(value: Any) -> str:
    """A YAML flow rendering of a value that the shorthand parser reads back."""
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and _parse_value(value, value) == value
        return value if plain else json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_render(str(k))}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_render(item) for item in value) + "]"
    if isinstance(value, float) and not isinstance(value, bool):
        return _render_float(value)
    return json.dumps(value, default=str)


def _render_float(value: float) -> str:
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text


def _coerce_call(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return parse_call_shorthand(value)
    except InvalidInputError as exc:
        raise PydanticCustomError("call_shorthand", exc.problems[0][1]) from None


CallSpec = Annotated[
    ToolCallSpec,
    BeforeValidator(_coerce_call),
    _AlsoAccepts(
        {
            "type": "string",
            "pattern": CALL_SHORTHAND_PATTERN,
            "description": "A call in shorthand: name(arg=value, ...) or name().",
        }
    ),
]


# --- the scripted model -----------------------------------------------------------------------


class UsageSpec(ScenarioModel):
    """Token usage a scripted reply reports."""

    input: Count = Field(default=0, description="Input (prompt) tokens.")
    output: Count = Field(default=0, description="Output (completion) tokens.")
    cache_read: Count = Field(default=0, description="Input tokens read from a cache.")
    cache_write: Count = Field(default=0, description="Input tokens written to a cache.")
    reasoning: Count = Field(default=0, description="Reasoning tokens.")


class ModelReply(ScenarioModel):
    """One scripted reply of the model: text, tool calls, or a provider error.

    A reply has at least one of ``say``, ``call``, ``calls`` or ``error``; ``call`` and ``calls``
    exclude each other; ``error`` excludes everything a response would carry.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [{"required": [key]} for key in ("say", "call", "calls", "error")],
            "allOf": [
                {"not": {"required": ["call", "calls"]}},
                {"not": {"required": ["error", "say"]}},
                {"not": {"required": ["error", "call"]}},
                {"not": {"required": ["error", "calls"]}},
            ],
        }
    )

    say: Text | None = Field(default=None, description="The text of the reply.")
    call: CallSpec | None = Field(default=None, description="One tool call.")
    calls: Annotated[tuple[CallSpec, ...], Field(min_length=1)] | None = Field(
        default=None, description="Several tool calls in one reply."
    )
    error: Text | None = Field(
        default=None, description="The provider raises with this message instead of replying."
    )
    retryable: Flag = Field(
        default=False, description="With error: whether another attempt may succeed."
    )
    usage: UsageSpec | None = Field(default=None, description="Token usage of this reply.")
    cost: Cost | None = Field(default=None, description="Cost of this reply.")
    finish_reason: FinishReason | None = Field(
        default=None, description="The finish reason; derived from the reply when absent."
    )
    latency: Latency = Field(
        default=0.0, description="Seconds the fake clock advances before the reply arrives."
    )

    @property
    def tool_calls(self) -> tuple[ToolCallSpec, ...]:
        """The calls of this reply, from ``call`` or ``calls``."""
        return (self.call,) if self.call is not None else self.calls or ()

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if all(getattr(self, key) is None for key in ("say", "call", "calls", "error")):
            yield (), "a reply needs at least one of: say, call, calls, error"
        if self.call is not None and self.calls is not None:
            yield ("calls",), "use either call or calls, not both"
        if self.say == "" and not self.tool_calls:
            yield ("say",), "an empty reply has nothing to play: write some text or add a call"
        if self.error == "":
            yield ("error",), "an error reply needs a message"
        if self.error is None:
            if self.retryable:
                yield ("retryable",), "retryable only applies to an error reply"
            return
        for key in ("say", "call", "calls", "usage", "cost", "finish_reason"):
            if getattr(self, key) is not None:
                yield (key,), f"an error reply cannot have {key}: the provider raises instead"


# --- tools ------------------------------------------------------------------------------------


class ToolReply(ScenarioModel):
    """One scripted outcome of a tool: exactly one of ``return``, ``raise`` or ``stop``."""

    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        json_schema_extra=_one_of_required("return", "raise", "stop"),
    )

    when: dict[str, JsonData] | None = Field(
        default=None,
        description="Arguments the call must have (a partial match); absent matches any call.",
    )
    return_: Any = Field(
        default=None, alias="return", description="The value the tool returns (any YAML value)."
    )
    raise_: Text | None = Field(
        default=None, alias="raise", description="The tool raises an error with this message."
    )
    stop: Text | None = Field(
        default=None, description="The tool raises AgentStop with this message."
    )
    latency: Latency = Field(
        default=0.0, description="Seconds the fake clock advances while the tool runs."
    )

    @property
    def outcome(self) -> Literal["return", "raise", "stop"]:
        """Which of ``return``, ``raise`` or ``stop`` this reply scripts."""
        if self.raise_ is not None:
            return "raise"
        return "stop" if self.stop is not None else "return"

    def matches(self, args: Mapping[str, Any]) -> bool:
        """Whether a call with ``args`` selects this reply (every ``when`` item is in ``args``)."""
        when = self.when or {}
        return all(key in args and json_equal(value, args[key]) for key, value in when.items())

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [
            key
            for key, present in (
                ("return", "return_" in self.model_fields_set),
                ("raise", self.raise_ is not None),
                ("stop", self.stop is not None),
            )
            if present
        ]
        if not given:
            yield (), "a tool reply needs one of: return, raise, stop"
        for key in given[1:]:
            yield (key,), f"a tool reply has only one of return, raise or stop ({given[0]} is set)"


class ToolSpec(ScenarioModel):
    """A scripted tool: its signature and the replies it gives."""

    description: Text = Field(default="", description="What the tool does, as the model sees it.")
    params: dict[Identifier, ParamType] = Field(
        default_factory=dict,
        description="Parameter name -> JSON type; a trailing '?' marks an optional parameter.",
        json_schema_extra=_NO_KEYS,
    )
    mode: ToolMode = Field(
        default="match",
        description="match: the first reply whose `when` matches, reusable. "
        "sequence: the replies in order, one per call.",
    )
    replies: Annotated[tuple[ToolReply, ...], Field(min_length=1)] = Field(
        description="The scripted replies."
    )

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments, built from ``params``."""
        kinds = {name: kind.rstrip("?") for name, kind in self.params.items()}
        required = [name for name, kind in self.params.items() if not kind.endswith("?")]
        properties = {name: {"type": kind} for name, kind in kinds.items()}
        return {"type": "object", "properties": properties, "required": required}

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        catch_all: int | None = None
        for index, reply in enumerate(self.replies):
            if self.mode == "sequence" and reply.when is not None:
                yield ("replies", index, "when"), "when only applies to mode: match"
            if self.mode == "match" and catch_all is not None:
                yield ("replies", index), f"unreachable: reply {catch_all + 1} has no when"
            if reply.when is None and catch_all is None:
                catch_all = index
            yield from self._unknown_params(index, reply)

    def _unknown_params(self, index: int, reply: ToolReply) -> Iterator[tuple[FieldPath, str]]:
        for key in (reply.when or {}) if self.params else ():
            if key not in self.params:
                names = ", ".join(self.params)
                yield ("replies", index, "when", key), f"{key!r} is not a parameter ({names})"


# --- the agent --------------------------------------------------------------------------------


def _check_deadline(value: Any) -> Any:
    if isinstance(value, str | datetime):
        return value
    raise PydanticCustomError(
        "deadline", "expected an ISO-8601 date-time with a timezone, such as 2026-01-01T00:05:00Z"
    )


class BudgetSpec(ScenarioModel):
    """Execution limits; an absent limit is unlimited."""

    max_steps: Count | None = Field(default=None, description="Steps per execution.")
    max_tokens: Count | None = Field(default=None, description="Total tokens per execution.")
    max_seconds: NonNegative | None = Field(
        default=None, description="Seconds per execution, on the fake clock."
    )
    max_cost: NonNegative | None = Field(default=None, description="Cost per execution.")
    deadline: Annotated[AwareDatetime, BeforeValidator(_check_deadline)] | None = Field(
        default=None, description="An ISO-8601 date-time with a timezone, on the fake clock."
    )


class SubagentSpec(ScenarioModel):
    """A subagent the agent can spawn with ``spawn_subagent``."""

    description: Text = Field(default="", description="What the subagent is for.")
    system_prompt: Text = Field(default="", description="The subagent's system prompt.")
    tools: tuple[Identifier, ...] | None = Field(
        default=None,
        description="Parent tools the subagent may use (may include spawn_subagent); "
        "absent means all of them.",
    )
    deny: tuple[Identifier, ...] = Field(default=(), description="Parent tools it may not use.")
    budget: BudgetSpec | None = Field(default=None, description="The subagent's own budget.")
    model: tuple[ModelReply, ...] = Field(
        default=(),
        description="The subagent's scripted model, consumed across all of its spawns.",
    )


class SubagentPolicySpec(ScenarioModel):
    """Limits on spawning subagents."""

    max_depth: Positive = Field(default=3, description="How deep subagents may nest.")


class HookSpec(ScenarioModel):
    """A declarative hook the runner installs on the agent."""

    on: HookTrigger = Field(description="The trigger the hook runs on.")
    priority: Annotated[int, Strict()] = Field(
        default=0, description="Higher priorities run first."
    )
    action: HookAction = Field(description="What the hook does.")
    tool: Identifier | None = Field(
        default=None, description="Only for calls of this tool (tool triggers); absent = any."
    )
    message: Text | None = Field(
        default=None, description="The message of the block, stop or raised error."
    )
    at_step: Count | None = Field(default=None, description="Only when the step count equals this.")
    reason: StopReasonName | None = Field(
        default=None, description="For action stop: the stop reason (default stop_requested)."
    )
    key: Text | None = Field(default=None, description="For action set_metadata: the key.")
    value: JsonData = Field(default=None, description="For action set_metadata: the value.")

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.action == "block_tool" and self.on != "before_tool_use":
            yield ("on",), "action block_tool needs on: before_tool_use"
        if self.tool is not None and self.on not in _TOOL_TRIGGERS:
            yield ("tool",), "tool only applies to on: before_tool_use or after_tool_use"
        if self.reason is not None and self.action != "stop":
            yield ("reason",), "reason only applies to action: stop"
        if self.action == "set_metadata" and self.key is None:
            yield (), "action set_metadata needs a key (and a value)"
        for key in ("key", "value"):
            if self.action != "set_metadata" and key in self.model_fields_set:
                yield (key,), f"{key} only applies to action: set_metadata"


class AgentSpec(ScenarioModel):
    """The agent under test; every part is optional."""

    system_prompt: Text = Field(default="", description="The system prompt.")
    trace_mode: TraceMode = Field(
        default="separated",
        description="separated: tool traces go to the execution buffer; inline: to messages.",
    )
    budget: BudgetSpec | None = Field(default=None, description="Execution limits.")
    finish_reasons: tuple[FinishReason, ...] = Field(
        default=(), description="Stop when the model returns one of these finish reasons."
    )
    max_retries: Positive | None = Field(default=None, description="Inference attempts per step.")
    tools: dict[Identifier, ToolSpec] = Field(
        default_factory=dict, description="Scripted tools by name.", json_schema_extra=_NO_KEYS
    )
    subagents: dict[Identifier, SubagentSpec] = Field(
        default_factory=dict, description="Subagents by name.", json_schema_extra=_NO_KEYS
    )
    subagent_policy: SubagentPolicySpec | None = Field(
        default=None, description="Limits on spawning subagents."
    )
    hooks: tuple[HookSpec, ...] = Field(default=(), description="Hooks to install.")
    stream: StreamMode | None = Field(
        default=None,
        description=(
            "Run each turn through AgentLoop.stream, the model's answers handed out in pieces: "
            "whole, chars (one character at a time, JSON arguments cut anywhere) or interleaved "
            "(parallel calls' pieces alternating). The harness checks that the pieces rebuild "
            "each answer and that the run ends in the states of the plain run."
        ),
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.subagents and SPAWN_SUBAGENT_TOOL in self.tools:
            yield ("tools", SPAWN_SUBAGENT_TOOL), "spawn_subagent comes with subagents: rename it"
        if self.subagent_policy is not None and not self.subagents:
            yield ("subagent_policy",), "subagent_policy needs subagents"
        known = [*self.tools, SPAWN_SUBAGENT_TOOL]
        for name, subagent in self.subagents.items():
            for key in ("tools", "deny"):
                for index, tool in enumerate(getattr(subagent, key) or ()):
                    if tool not in known:
                        problem = f"unknown tool {tool!r}; the agent has: {', '.join(known)}"
                        yield ("subagents", name, key, index), problem


# --- expectations -----------------------------------------------------------------------------


class TextMatch(ScenarioModel):
    """A check on a text: exactly one of ``equals``, ``contains``, ``regex`` or ``empty``."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    equals: Text | None = Field(default=None, description="The exact text.")
    contains: Text | None = Field(default=None, description="A substring of the text.")
    regex: Text | None = Field(
        default=None, description="A regular expression found in the text (re.search)."
    )
    empty: Flag | None = Field(
        default=None, description="true: the text is empty; false: it is not."
    )

    def matches(self, text: str) -> bool:
        """Whether ``text`` passes this check."""
        if self.equals is not None:
            return text == self.equals
        if self.contains is not None:
            return self.contains in text
        if self.regex is not None:
            return re.search(self.regex, text) is not None
        return (text == "") == bool(self.empty)

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [
            key
            for key in ("equals", "contains", "regex", "empty")
            if getattr(self, key) is not None
        ]
        if len(given) != 1:
            yield (), "use exactly one of: equals, contains, regex, empty"
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                yield ("regex",), f"invalid regular expression: {exc}"


def _text_as_equals(value: Any) -> Any:
    return {"equals": value} if isinstance(value, str) else value


TextMatchSpec = Annotated[
    TextMatch,
    BeforeValidator(_text_as_equals),
    _AlsoAccepts({"type": "string", "description": "The exact text."}),
]


class MessageExpect(ScenarioModel):
    """An expected message: its role, and optionally its exact content or a substring."""

    role: Role = Field(description="The message's role.")
    content: Text | None = Field(default=None, description="The exact content.")
    contains: Text | None = Field(default=None, description="A substring of the content.")

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.content is not None and self.contains is not None:
            yield ("contains",), "use either content or contains, not both"


def _role_as_message(value: Any) -> Any:
    return {"role": value} if isinstance(value, str) else value


MessageSpec = Annotated[
    MessageExpect,
    BeforeValidator(_role_as_message),
    _AlsoAccepts({"enum": list(get_args(Role)), "description": "Just the role."}),
]


class ToolCallsExpect(ScenarioModel):
    """The expected tool-call trajectory of the execution."""

    mode: TrajectoryMode = Field(
        default="strict",
        description="strict: these calls in this order; unordered: these calls in any order; "
        "subset: the actual calls are among these; superset: these are among the actual calls.",
    )
    args: ArgsMatch = Field(
        default="exact", description="exact: arguments equal; partial: the given ones match."
    )
    calls: tuple[CallSpec, ...] = Field(description="The expected calls.")


class UsageExpect(ScenarioModel):
    """Expected token usage of the execution; only the given counts are checked."""

    input: Count | None = Field(default=None, description="Input tokens.")
    output: Count | None = Field(default=None, description="Output tokens.")
    cache_read: Count | None = Field(default=None, description="Cache-read tokens.")
    cache_write: Count | None = Field(default=None, description="Cache-write tokens.")
    reasoning: Count | None = Field(default=None, description="Reasoning tokens.")
    total: Count | None = Field(
        default=None,
        description="The total: input + output tokens (cache and reasoning are not added).",
    )


class CostExpect(ScenarioModel):
    """Expected cost: exactly one of ``equals`` (within 1e-9) or ``max``."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    equals: NonNegative | None = Field(default=None, description="The cost, within 1e-9.")
    max: NonNegative | None = Field(default=None, description="The highest acceptable cost.")

    def matches(self, cost: float) -> bool:
        """Whether ``cost`` meets this expectation."""
        if self.equals is not None:
            return abs(cost - self.equals) <= 1e-9
        return self.max is None or cost <= self.max + 1e-9

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if (self.equals is None) == (self.max is None):
            yield (), "use exactly one of: equals, max"


def _number_as_equals(value: Any) -> Any:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return {"equals": value} if is_number else value


CostSpec = Annotated[
    CostExpect,
    BeforeValidator(_number_as_equals),
    _AlsoAccepts({"type": "number", "minimum": 0, "description": "The exact cost."}),
]


class Expectation(ScenarioModel):
    """What must hold after a turn; every check is optional."""

    status: Status | None = Field(default=None, description="The execution's status.")
    stop_reason: StopReasonName | None = Field(
        default=None, description="The reason the execution stopped."
    )
    final_response: TextMatchSpec | None = Field(
        default=None, description="The final response: exact text, or one check."
    )
    steps: Count | None = Field(default=None, description="The number of steps.")
    tool_calls: ToolCallsExpect | None = Field(
        default=None, description="The tool calls made during the turn."
    )
    messages: tuple[MessageSpec, ...] | None = Field(
        default=None, description="The `messages` section after the turn, in order."
    )
    sections: dict[str, tuple[MessageSpec, ...]] | None = Field(
        default=None, description="Any named section after the turn, in order."
    )
    usage: UsageExpect | None = Field(default=None, description="Token usage of the execution.")
    cost: CostSpec | None = Field(
        default=None, description="Cost of the execution: exact, or {max: ...}."
    )
    errors: tuple[Text, ...] | None = Field(
        default=None, description="Substrings each found in some recorded error message."
    )


# --- turns and the scenario -------------------------------------------------------------------


class CancelAfterStep(ScenarioModel):
    """Cancel the execution cooperatively once this many steps have run."""

    after_step: Positive = Field(description="The step after which to cancel.")


def _cancel_kind(value: Any) -> str | None:
    if isinstance(value, CancelAfterStep | dict):
        return "after_step"
    return "before" if value == "before" else None


Cancel = Annotated[
    Annotated[Literal["before"], Tag("before")] | Annotated[CancelAfterStep, Tag("after_step")],
    Discriminator(
        _cancel_kind,
        custom_error_type="cancel",
        custom_error_message="expected 'before' or a mapping {after_step: N}",
    ),
]


class Turn(ScenarioModel):
    """One user message, the model's scripted replies to it, and what to expect."""

    user: Text = Field(description="The user's message.")
    cancel: Cancel | None = Field(
        default=None,
        description="Cancel cooperatively: before (the turn does nothing) or {after_step: N}.",
    )
    model: tuple[ModelReply, ...] = Field(
        default=(), description="The model's scripted replies during this turn, in order."
    )
    expect: Expectation = Field(
        default_factory=Expectation, description="What must hold after the turn."
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.cancel == "before" and self.model:
            yield ("model",), "cancel: before means the model is never called: remove the replies"


class InvariantSelection(ScenarioModel):
    """Which invariants run: all by default; ``only`` or ``exclude`` narrows them."""

    only: tuple[InvariantName, ...] | None = Field(
        default=None, description="Run only these invariants."
    )
    exclude: tuple[InvariantName, ...] | None = Field(
        default=None, description="Run all invariants but these."
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.only is not None and self.exclude is not None:
            yield ("exclude",), "use either only or exclude, not both"


class Scenario(ScenarioModel):
    """A scenario: an agent, the user's turns, the model's scripted replies, expectations.

    When loaded from a file, ``source`` points at the ``name:`` key and :meth:`locate` finds
    any field by its path in the file.
    """

    model_config = ConfigDict(title="Scenario")

    name: ScenarioName = Field(
        description="Unique in a suite: lowercase letters, digits, '.', '_' and '-'."
    )
    description: Text = Field(default="", description="What the scenario shows.")
    tags: tuple[Text, ...] = Field(default=(), description="Labels for selecting scenarios.")
    agent: AgentSpec = Field(default_factory=AgentSpec, description="The agent under test.")
    turns: Annotated[tuple[Turn, ...], Field(min_length=1)] = Field(
        description="The user turns, run in order against one agent state."
    )
    invariants: InvariantSelection = Field(
        default_factory=InvariantSelection, description="Which invariants to check."
    )

    _yaml: YamlSource | None = PrivateAttr(default=None)

    def locate(self, path: FieldPath) -> SourceLocation | None:
        """Where the field at ``path`` (YAML keys and indices) was written, if known."""
        if self._yaml is None:
            return None
        where = self._yaml.location(path)
        return None if where is None else SourceLocation(self._yaml.path, *where)

    def _bind_yaml(self, source: YamlSource) -> None:
        self._yaml = source
