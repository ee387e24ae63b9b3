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

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
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
    Strict,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

from agentrig._model import json_equal
from agentrig.errors import InvalidInputError
from agentrig.harness.scenarios.calls import CALL_SHORTHAND_PATTERN, read_call, write_call
from agentrig.harness.scenarios.mixture import mixture_draw, pick_branch
from agentrig.harness.scenarios.price import Price, price_problem, price_schema
from agentrig.harness.scenarios.yaml_source import FieldPath, YamlSource, not_json_data
from agentrig.state import Usage

__all__ = [
    "AUTO_MODEL",
    "BUILDER_REFERENCE_PATTERN",
    "CALL_SHORTHAND_PATTERN",
    "IDENTIFIER_PATTERN",
    "INVARIANT_NAME_PATTERN",
    "SCENARIO_NAME_PATTERN",
    "SPAWN_SUBAGENT_TOOL",
    "AgentRoleSpec",
    "AgentSpec",
    "ArgsMatch",
    "BudgetSpec",
    "CancelAfterStep",
    "CostExpect",
    "Expectation",
    "FaultSpec",
    "FinishReasonName",
    "HookAction",
    "HookSpec",
    "HookTriggerName",
    "InvariantSelection",
    "MessageExpect",
    "MixtureBranch",
    "ModelReply",
    "ParamType",
    "PendingLocation",
    "RedactedThink",
    "RoleName",
    "RuledModel",
    "Scenario",
    "ScenarioModel",
    "ScenarioTurn",
    "SourceLocation",
    "Status",
    "StopReasonName",
    "SubagentPolicySpec",
    "SubagentSpec",
    "TextMatch",
    "TokenLogprob",
    "ToolCallSpec",
    "ToolCallsExpect",
    "ToolMode",
    "ToolReplySpec",
    "ToolResultExpect",
    "ToolSpec",
    "TraceModeName",
    "TrajectoryMode",
    "UsageExpect",
    "UsageSpec",
    "parse_call_shorthand",
]

SCENARIO_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
INVARIANT_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
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
FinishReasonName = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
TraceModeName = Literal["separated", "inline"]
StreamMode = Literal["whole", "chars", "interleaved"]
WireChunking = Literal["events", "bytes", "utf8"]
HookTriggerName = Literal[
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
RoleName = Literal["system", "developer", "user", "assistant", "tool"]
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
Seed = Annotated[int, Strict()]
Weight = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
LogprobValue = Annotated[float, Strict(), Field(le=0, allow_inf_nan=False)]
ScenarioName = Annotated[str, Strict(), Field(pattern=SCENARIO_NAME_PATTERN)]
Identifier = Annotated[str, Strict(), Field(pattern=IDENTIFIER_PATTERN)]
InvariantName = Annotated[str, Strict(), Field(pattern=INVARIANT_NAME_PATTERN)]
BUILDER_REFERENCE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
BuilderReference = Annotated[str, Strict(), Field(pattern=BUILDER_REFERENCE_PATTERN)]
MODULE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
ModuleName = Annotated[str, Strict(), Field(pattern=MODULE_NAME_PATTERN)]

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


@dataclass(frozen=True, slots=True)
class PendingLocation:
    """Where a part of a scenario was written, found in its YAML source when first asked for:
    the value at ``path`` (or, with ``key``, the key of that entry, else the value)."""

    yaml: YamlSource
    path: FieldPath
    key: bool = False

    def resolve(self) -> SourceLocation | None:
        """The location, or None when the source has none for ``path``."""
        where = self.yaml.key_location(self.path) if self.key else None
        if where is None:
            where = self.yaml.location(() if self.key else self.path)
        return None if where is None else SourceLocation(self.yaml.path, *where)


class ScenarioModel(BaseModel):
    """Base of the format's models: frozen, unknown keys rejected, aware of its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Where it was written, in slots, not pydantic private attributes (whose per-instance dict
    # and set-up cost a fifth of validating a file): None for a model built in code; for a
    # loaded one, its file's YamlSource and its field path until first asked for, then the
    # SourceLocation. No model points at its scenario, so dropped scenarios are freed at once.
    __slots__ = ("_path", "_where")

    @property
    def source(self) -> SourceLocation | None:
        """Where this part was written, when it was loaded from a file."""
        where = getattr(self, "_where", None)
        if isinstance(where, YamlSource):
            where = PendingLocation(where, getattr(self, "_path", ())).resolve()
            object.__setattr__(self, "_where", where)
        elif isinstance(where, PendingLocation):
            where = where.resolve()
            object.__setattr__(self, "_where", where)
        return where

    def _bind_source(self, location: SourceLocation | PendingLocation | None) -> None:
        object.__setattr__(self, "_where", location)

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are equal; where each was written does not matter."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["_where"] = getattr(self, "_where", None)
        state["_path"] = getattr(self, "_path", None)
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        where, path = state.pop("_where", None), state.pop("_path", None)
        super().__setstate__(state)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_path", path)

    def __copy__(self) -> Self:
        copied = super().__copy__()
        object.__setattr__(copied, "_where", self.source)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        object.__setattr__(copied, "_where", self.source)
        return copied

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A model with rules that did not derive from RuledModel would never run them.
        if "_problems" in cls.__dict__ and not hasattr(cls, "_check_rules"):
            raise TypeError(f"{cls.__name__} has rules (_problems): derive it from RuledModel")


class RuledModel(ScenarioModel):
    """A scenario model with cross-field rules: ``_problems`` runs after its fields validate.

    Only these models pay for the after-validator that runs the rules (most models of a
    file, usage counts and calls among them, have none: a Python call each was an eighth of
    validating a file)."""

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


def given_schema(key: str) -> JsonDict:
    """JSON Schema: ``key`` is written, and not as null (the models read a null as left out)."""
    return {"required": [key], "properties": {key: {"not": {"type": "null"}}}}


def _one_of_required(*keys: str) -> dict[str, Any]:
    return {"oneOf": [{"required": [key]} for key in keys]}


def _check_json_data(value: Any) -> Any:
    problem = not_json_data(value)
    if problem is not None:
        raise PydanticCustomError("json_data", problem)
    return value


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
        return write_call(self.name, self.args)


def parse_call_shorthand(text: str) -> ToolCallSpec:
    """A call written as ``name(arg=value, ...)`` or ``name()`` (see
    :mod:`~agentrig.harness.scenarios.calls`); raises
    :class:`~agentrig.errors.InvalidInputError` naming what is wrong."""
    name, args = read_call(text)
    return ToolCallSpec(name=name, args=args)


def _coerce_call(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        name, args = read_call(value)  # validated as the call's own mapping is, no second pass
    except InvalidInputError as exc:
        raise PydanticCustomError("call_shorthand", exc.problems[0][1]) from None
    return {"name": name, "args": args}


CallField = Annotated[
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

    def to_usage(self, cost: float = 0.0) -> Usage:
        """These counts as agentrig's ``Usage``, with ``cost``."""
        return Usage(
            input_tokens=self.input,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
            reasoning_tokens=self.reasoning,
            cost=cost,
        )


_FAULT_KINDS = ("status", "cut_after", "malformed_at", "timeout")


class FaultSpec(RuledModel):
    """A failure the scenario endpoint plays for one request: exactly one of ``status``,
    ``cut_after``, ``malformed_at`` or ``timeout``.

    ``status`` answers with that HTTP error (with ``Retry-After`` when ``retry_after`` is
    given) and nothing else; ``cut_after`` and ``malformed_at`` stream the reply's ``say`` /
    ``call`` but cut the stream after that many events, or replace that event (1-based) with a
    malformed one; ``timeout`` answers nothing, until the client gives up at its own timeout.
    A run on agentrig's own runtime plays any fault as a provider error.
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": [key]} for key in _FAULT_KINDS]}
    )

    status: Annotated[int, Strict(), Field(ge=400, le=599)] | None = Field(
        default=None, description="Answer with this HTTP error status (400-599)."
    )
    retry_after: NonNegative | None = Field(
        default=None, description="With status: seconds sent in the Retry-After header."
    )
    message: Text | None = Field(
        default=None, description="With status: the error message of the provider's error body."
    )
    cut_after: Count | None = Field(
        default=None, description="Stream this many events of the reply, then drop the connection."
    )
    malformed_at: Positive | None = Field(
        default=None, description="Replace this event of the stream (1-based) with malformed JSON."
    )
    timeout: Annotated[bool, Strict(), Field(json_schema_extra={"const": True})] | None = Field(
        default=None,
        description="true: answer nothing; the client waits until its own timeout and gives up "
        "(over loopback the endpoint sees it disconnect; in process the client's timeout "
        "error is raised when its read timeout has passed).",
    )

    @property
    def retryable(self) -> bool:
        """Whether a well-behaved client retries this fault."""
        return self.status is None or self.status in (408, 409, 429) or self.status >= 500

    def describe(self) -> str:
        """A short account of the fault, for messages."""
        if self.status is not None:
            return f"HTTP {self.status}" + (f": {self.message}" if self.message else "")
        if self.cut_after is not None:
            return f"stream cut after {self.cut_after} events"
        if self.timeout:
            return "no answer until the client's timeout"
        return f"malformed stream event {self.malformed_at}"

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [k for k in _FAULT_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            yield (), "use exactly one of: " + ", ".join(_FAULT_KINDS)
        if self.timeout is False:
            yield ("timeout",), "timeout: false plays no fault: leave the fault out"
        if self.status is None:
            for key in ("retry_after", "message"):
                if getattr(self, key) is not None:
                    yield (key,), f"{key} only applies to a status fault"


class RedactedThink(RuledModel):
    """Reasoning the model did without any text the client sees: ``think: {redacted: true}``.

    Reasoning models often reason in the open only in part: the Responses API sends a reasoning
    item with an empty summary (and its encrypted content when asked), Anthropic a
    ``redacted_thinking`` block of opaque data. Such a reply reasoned all the same, and an agent
    must send its sealed reasoning back with its tool calls.
    """

    redacted: Flag = Field(
        description="true: the model reasoned, but its reasoning reaches the client only sealed "
        "(an Anthropic redacted_thinking block; a Responses reasoning item with an empty summary, "
        "with its encrypted content when the request includes reasoning.encrypted_content; "
        "nothing over Chat Completions).",
        json_schema_extra={"const": True},
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if not self.redacted:
            yield (
                ("redacted",),
                "only redacted: true is a form of think (the model reasoned but shows no text); "
                "write the reasoning text as think: TEXT, or leave think out",
            )


def _think_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "text"
    return "redacted" if isinstance(value, RedactedThink | dict) else None


ThinkField = Annotated[
    Annotated[Text, Tag("text")] | Annotated[RedactedThink, Tag("redacted")],
    Discriminator(
        _think_kind,
        custom_error_type="think",
        custom_error_message="expected the reasoning text, or {redacted: true} for reasoning "
        "that shows no text",
    ),
]


class TokenLogprob(ScenarioModel):
    """One token of a reply's ``say`` text with its log probability, and the likeliest tokens
    the model weighed in its place (``top``), as the OpenAI APIs report them when asked."""

    token: Text = Field(description="The token: the tokens of a reply, joined, spell its say.")
    logprob: LogprobValue = Field(
        description="The token's log probability (at most 0; the APIs use -9999.0 for "
        "a token that is very unlikely)."
    )
    top: dict[str, LogprobValue] = Field(
        default_factory=dict,
        description="The likeliest tokens at this position: token -> log probability (each at "
        "most 0). Sent most likely first, as many as the request asks for (top_logprobs).",
    )

    def ranked(self) -> tuple[tuple[str, float], ...]:
        """``top`` most likely first (ties keep the order written)."""
        return tuple(sorted(self.top.items(), key=lambda item: -item[1]))


_REPLY_KEYS = ("say", "call", "calls", "error", "refuse", "fault")

AUTO_MODEL = "auto"
"""``model: auto``: a turn's model that calls each offered tool with valid arguments, then
answers (see the endpoint's ``auto_model``)."""


class ModelReply(RuledModel):
    """One scripted reply of the model: text, tool calls, a refusal, a provider error, or a fault.

    A reply has at least one of ``say``, ``call``, ``calls``, ``refuse``, ``error`` or
    ``fault``; ``call`` and ``calls`` exclude each other; ``error`` excludes everything a
    response would carry, and so does a ``fault`` with a ``status``.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [{"required": [key]} for key in _REPLY_KEYS],
            "allOf": [
                {"not": {"required": ["call", "calls"]}},
                {"not": {"required": ["error", "say"]}},
                {"not": {"required": ["error", "call"]}},
                {"not": {"required": ["error", "calls"]}},
                {"not": {"required": ["error", "fault"]}},
                {"not": {"required": ["refuse", "say"]}},
                {"not": {"required": ["error", "logprobs"]}},
                {"anyOf": [{"not": {"required": ["logprobs"]}}, {"required": ["say"]}]},
            ],
        }
    )

    say: Text | None = Field(default=None, description="The text of the reply.")
    think: ThinkField | None = Field(
        default=None,
        description="The model's reasoning before this reply: its reasoning_content on "
        "agentrig's runtime (streamed first); over the wire, a thinking block (Anthropic), a "
        "reasoning item (Responses) or a reasoning_content field (Chat Completions). "
        "{redacted: true}: the model reasoned but shows no text (a redacted_thinking block, a "
        "reasoning item with an empty summary).",
    )
    call: CallField | None = Field(default=None, description="One tool call.")
    calls: Annotated[tuple[CallField, ...], Field(min_length=1)] | None = Field(
        default=None, description="Several tool calls in one reply."
    )
    refuse: Text | None = Field(
        default=None,
        description="The model refuses with this text (finish reason content_filter).",
    )
    error: Text | None = Field(
        default=None, description="The provider raises with this message instead of replying."
    )
    fault: FaultSpec | None = Field(
        default=None, description="A failure the scenario endpoint plays for this request."
    )
    retryable: Flag = Field(
        default=False, description="With error: whether another attempt may succeed."
    )
    usage: UsageSpec | None = Field(default=None, description="Token usage of this reply.")
    cost: Cost | None = Field(default=None, description="Cost of this reply.")
    finish_reason: FinishReasonName | None = Field(
        default=None, description="The finish reason; derived from the reply when absent."
    )
    latency: Latency = Field(
        default=0.0, description="Seconds the fake clock advances before the reply arrives."
    )
    chunk_latency: Latency = Field(
        default=0.0,
        description="Scenario endpoint: seconds between the chunks of this reply when it is "
        "streamed (a slow stream). A client whose read timeout is shorter gives up mid-stream "
        "(over loopback the endpoint sees it disconnect; in process its timeout error is "
        "raised): the reply is not counted as received, and the failure or transcript says so.",
    )
    repeat: Flag = Field(
        default=False,
        description="true: this reply, the last of its turn, answers every further request of "
        "the turn too (a judge or another stateless role asked again and again); it counts as "
        "used once it answered once, and the script never runs out.",
    )
    logprobs: Annotated[tuple[TokenLogprob, ...], Field(min_length=1)] | None = Field(
        default=None,
        description="The log probabilities of the tokens of say, which they spell: sent by the "
        "scenario endpoint to a request that asks for logprobs (Chat Completions: logprobs and "
        "top_logprobs; Responses: include message.output_text.logprobs). Anthropic's API and "
        "agentrig's own runtime have none and ignore them.",
    )

    @property
    def tool_calls(self) -> tuple[ToolCallSpec, ...]:
        """The calls of this reply, from ``call`` or ``calls``."""
        return (self.call,) if self.call is not None else self.calls or ()

    @property
    def think_text(self) -> str:
        """The reasoning text of ``think`` (empty when absent or redacted)."""
        return self.think if isinstance(self.think, str) else ""

    @property
    def think_redacted(self) -> bool:
        """Whether the model reasoned without text the client sees (``think: {redacted: true}``)."""
        return isinstance(self.think, RedactedThink) and self.think.redacted

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if all(getattr(self, key) is None for key in _REPLY_KEYS):
            yield (), "a reply needs at least one of: " + ", ".join(_REPLY_KEYS)
        if self.refuse is not None and self.say is not None:
            yield ("refuse",), "use either say or refuse, not both"
        if self.refuse == "":
            yield ("refuse",), "a refusal needs a text"
        yield from self._fault_problems()
        if self.call is not None and self.calls is not None:
            yield ("calls",), "use either call or calls, not both"
        if (
            self.say == ""
            and not self.tool_calls
            and self.fault is None
            and self.finish_reason is None
        ):
            yield (
                ("say",),
                "an empty reply has nothing to play: write some text or add a call (or a "
                "finish_reason: an answer of no text, which only the scenario endpoint plays)",
            )
        if self.error == "":
            yield ("error",), "an error reply needs a message"
        if self.think == "":
            yield (
                ("think",),
                "think needs the reasoning text, or {redacted: true} for reasoning that shows "
                "no text (or leave it out)",
            )
        yield from self._logprob_problems()
        if self.error is None:
            if self.retryable:
                yield ("retryable",), "retryable only applies to an error reply"
            return
        for key in (
            "logprobs",
            "say",
            "think",
            "call",
            "calls",
            "refuse",
            "fault",
            "usage",
            "cost",
            "finish_reason",
        ):
            if getattr(self, key) is not None:
                yield (key,), f"an error reply cannot have {key}: the provider raises instead"

    def _logprob_problems(self) -> Iterator[tuple[FieldPath, str]]:
        status_fault = self.fault is not None and self.fault.status is not None
        if self.logprobs is None or self.error is not None or status_fault:
            return  # the error's and the fault's own rules refuse them
        if self.say is None:
            yield ("logprobs",), "logprobs are those of the tokens of say: give the reply a say"
            return
        spelt = "".join(entry.token for entry in self.logprobs)
        if spelt != self.say:
            yield (
                ("logprobs",),
                f"the tokens spell {spelt!r}, not the say text {self.say!r}: the tokens of a "
                "reply, joined, are its text",
            )

    def _fault_problems(self) -> Iterator[tuple[FieldPath, str]]:
        fault = self.fault
        if fault is None or self.error is not None:
            return
        if fault.status is not None:
            keys = ("say", "call", "calls", "refuse", "usage", "cost", "finish_reason", "logprobs")
            for key in keys:
                if getattr(self, key) is not None:
                    problem = f"a status fault cannot have {key}: the answer is the HTTP error"
                    yield (key,), problem
        elif self.say is None and self.refuse is None and not self.tool_calls:
            yield ("fault",), "a stream fault streams the reply: give it say, call or calls"


def _repeat_problems(replies: tuple[ModelReply, ...]) -> Iterator[tuple[FieldPath, str]]:
    """``repeat`` on a reply other than the last of ``replies`` (paths relative to the list)."""
    for index, reply in enumerate(replies[:-1]):
        if reply.repeat:
            yield (
                (index, "repeat"),
                f"only the last reply may repeat: reply {index + 1} of {len(replies)} repeats, "
                "so the replies after it would never play",
            )


# --- tools ------------------------------------------------------------------------------------


class ToolReplySpec(RuledModel):
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


class ToolSpec(RuledModel):
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
    replies: Annotated[tuple[ToolReplySpec, ...], Field(min_length=1)] = Field(
        description="The scripted replies."
    )
    scripted: Flag = Field(
        default=False,
        description="Run against an agent built in Python: true plays this scripted tool even "
        "where the agent has its own tool of this name, or none; false (the default) uses the "
        "agent's own tool, and the run fails when it has none or its parameters differ from "
        "params. Played by the scenario endpoint: true leaves the tool out of the "
        "tools_as_declared check.",
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

    def _unknown_params(self, index: int, reply: ToolReplySpec) -> Iterator[tuple[FieldPath, str]]:
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


class SubagentSpec(RuledModel):
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

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        for path, message in _repeat_problems(self.model):
            yield ("model", *path), message


class SubagentPolicySpec(ScenarioModel):
    """Limits on spawning subagents."""

    max_depth: Positive = Field(default=3, description="How deep subagents may nest.")


class HookSpec(RuledModel):
    """A declarative hook the runner installs on the agent."""

    on: HookTriggerName = Field(description="The trigger the hook runs on.")
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


class AgentRoleSpec(ScenarioModel):
    """One of several agents that share a conversation (a triage agent that hands off to a
    refunds agent), for the scenario endpoint: the system prompt its requests are known by,
    and the tools of ``agent.tools`` it offers."""

    system_prompt: Text | TextMatch = Field(
        description="The agent's system prompt, or a rule it passes ({contains: ...}, "
        "{regex: ...}): a request whose prompt passes it is this agent's."
    )
    tools: tuple[Identifier, ...] = Field(
        default=(),
        description="The tools of agent.tools this agent offers, by name: tools_as_declared "
        "holds each of its requests to them.",
    )


class LatencyRange(RuledModel):
    """Seconds drawn uniformly between ``min`` and ``max``."""

    min: Latency = Field(default=0.0, description="The shortest wait, in seconds.")
    max: Latency = Field(description="The longest wait, in seconds.")

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.max < self.min:
            yield ("max",), f"must be at least min ({self.min:g})"


class NetworkSpec(RuledModel):
    """Seeded, probabilistic trouble on the scenario endpoint's wire, on top of the script: a
    share of the requests answered with a fault instead (the script waits for the retry), and a
    random wait before every answer. Each draw depends on the scenario, the session's key, the
    request's number and ``seed`` only: one key always meets the same trouble. agentrig's own
    runtime has no wire and ignores it."""

    fault_rate: Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=0.0, description="The share of requests answered with `fault` (0 to 1)."
    )
    fault: FaultSpec = Field(
        default_factory=lambda: FaultSpec(status=503),
        description="The fault those requests get: an HTTP error (default: status 503).",
    )
    latency: LatencyRange | None = Field(
        default=None,
        description="Seconds to wait before each answer, drawn between min and max (added to "
        "a reply's own latency).",
    )
    seed: Seed | None = Field(default=None, description="Another seed draws other trouble.")

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.fault.status is None:
            yield (
                ("fault",),
                "must be a status fault ({status: 503}): a drawn fault is an HTTP error",
            )


class AgentSpec(RuledModel):
    """The agent under test; every part is optional."""

    model_config = ConfigDict(
        json_schema_extra={"not": {"allOf": [given_schema("builder"), given_schema("adapter")]}}
    )

    builder: BuilderReference | None = Field(
        default=None,
        description="The agent under test, built in Python: 'package.module:function', a "
        "function taking no arguments that returns an AgentBuilder (or 'package.module:name' of "
        "an AgentBuilder). Its tools take the place of the scripted tools of the same name.",
    )
    adapter: BuilderReference | None = Field(
        default=None,
        description="Live scenarios: an agent built on anything, as 'package.module:function': "
        "a sync or async function taking the conversation so far (a list of {role, content}) "
        "and returning the agent's reply (a str, or {content, tool_calls, usage, cost}). In a "
        "scenario agentrig fuzz wrote: the fuzzed agent, a function taking the endpoint handle "
        "and the user's message, that agentrig fuzz --replay runs.",
    )
    price: Price | None = Field(
        default=None,
        description="Live scenarios with an adapter: USD per million tokens of the agent's model "
        "calls made through current_trial().http_client(), e.g. {input: 0.4, output: 1.6}; "
        "those calls are costed from their usage (and capped, budgeted and recorded).",
        json_schema_extra=price_schema,
    )
    system_prompt: Text | TextMatch = Field(
        default="",
        description="The system prompt. For the scenario endpoint it may instead be a rule the "
        "prompt an agent sends must pass ({contains: ...}, {regex: ...}, {equals: ...}): for a "
        "framework that adds text of its own to the prompt. agentrig's own runtime sets no "
        "system prompt from a rule.",
    )
    system_prompt_override: Flag = Field(
        default=False,
        description="Let system_prompt replace the system prompt of the agent's builder (without "
        "it, a scenario whose builder sets its own system prompt fails before it runs).",
    )
    model: Text | None = Field(
        default=None,
        description="The model name the agent asks for; the scenario endpoint checks each "
        "request names it.",
    )
    trace_mode: TraceModeName = Field(
        default="separated",
        description="separated: tool traces go to the execution buffer; inline: to messages.",
    )
    budget: BudgetSpec | None = Field(default=None, description="Execution limits.")
    finish_reasons: tuple[FinishReasonName, ...] = Field(
        default=(), description="Stop when the model returns one of these finish reasons."
    )
    max_retries: Positive | None = Field(default=None, description="Inference attempts per step.")
    tools: dict[Identifier, ToolSpec] = Field(
        default_factory=dict, description="Scripted tools by name.", json_schema_extra=_NO_KEYS
    )
    subagents: dict[Identifier, SubagentSpec] = Field(
        default_factory=dict, description="Subagents by name.", json_schema_extra=_NO_KEYS
    )
    agents: dict[Identifier, AgentRoleSpec] = Field(
        default_factory=dict,
        description="Scenario endpoint: several agents behind one conversation (a handoff), by "
        "name: each request is held to the agent whose system_prompt it sends, and to that "
        "agent's tools. Instead of system_prompt; agentrig's own runtime ignores it.",
        json_schema_extra=_NO_KEYS,
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
    wire_chunking: WireChunking = Field(
        default="events",
        description=(
            "How the scenario endpoint cuts a streamed answer's bytes into network chunks: "
            "events (one chunk per server-sent event), bytes (one byte per chunk) or utf8 "
            "(each multi-byte UTF-8 character cut after its first byte, so no chunk decodes "
            "on its own). Only the endpoint has bytes: agentrig's own runtime ignores it."
        ),
    )
    network: NetworkSpec | None = Field(
        default=None,
        description="The scenario endpoint's seeded, probabilistic faults and latency jitter "
        "(agentrig's own runtime ignores it).",
    )

    @property
    def prompt_text(self) -> str:
        """The system prompt agentrig's own runtime sets: ``system_prompt`` when it is a text,
        empty when it is a rule (which only the scenario endpoint checks)."""
        return self.system_prompt if isinstance(self.system_prompt, str) else ""

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.builder is not None and self.adapter is not None:
            yield ("adapter",), "use either builder or adapter, not both"
        price = price_problem(self.price)
        if price is not None:
            yield ("price",), price
        if self.price is not None and self.adapter is None:
            yield (
                ("price",),
                "price is the cost of an adapter's model calls: an agentrig builder's provider "
                "prices its own (PriceTable)",
            )
        if self.system_prompt_override and not self.prompt_text.strip():
            yield ("system_prompt_override",), "system_prompt_override needs a system_prompt"
        if self.subagents and SPAWN_SUBAGENT_TOOL in self.tools:
            yield ("tools", SPAWN_SUBAGENT_TOOL), "spawn_subagent comes with subagents: rename it"
        if self.subagent_policy is not None and not self.subagents:
            yield ("subagent_policy",), "subagent_policy needs subagents"
        if self.agents and self.system_prompt != "":
            yield ("agents",), "give each agent's system_prompt under agents, not system_prompt"
        for name, role in self.agents.items():
            for index, tool in enumerate(role.tools):
                if tool not in self.tools:
                    problem = f"unknown tool {tool!r}; agent.tools has: {', '.join(self.tools)}"
                    yield ("agents", name, "tools", index), problem
        known = [*self.tools, SPAWN_SUBAGENT_TOOL]
        for name, subagent in self.subagents.items():
            for key in ("tools", "deny"):
                for index, tool in enumerate(getattr(subagent, key) or ()):
                    if tool not in known:
                        problem = f"unknown tool {tool!r}; the agent has: {', '.join(known)}"
                        yield ("subagents", name, key, index), problem


# --- expectations -----------------------------------------------------------------------------


REGEX_TIMEOUT_S = 2.0
"""How long an expectation's ``regex`` may search one text before the check fails."""


_TEXT_CHECKS = ("equals", "contains", "regex", "empty")


class TextMatch(RuledModel):
    """A check on a text: exactly one of ``equals``, ``contains``, ``regex`` or ``empty``."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [given_schema(k) for k in _TEXT_CHECKS]}  # null: left out
    )

    equals: Text | None = Field(default=None, description="The exact text.")
    contains: Text | None = Field(default=None, description="A substring of the text.")
    regex: Text | None = Field(
        default=None,
        description="A regular expression found in the text (Python re syntax, as re.search); "
        f"a search that takes longer than {REGEX_TIMEOUT_S:g} s fails the check.",
    )
    empty: Flag | None = Field(
        default=None, description="true: the text is empty; false: it is not."
    )

    def matches(self, text: str) -> bool:
        """Whether ``text`` passes this check; ``TimeoutError`` when a ``regex`` search takes
        longer than :data:`REGEX_TIMEOUT_S`."""
        if self.equals is not None:
            return text == self.equals
        if self.contains is not None:
            return self.contains in text
        if self.regex is not None:
            # The regex module stops a search at a time limit: a pattern with nested repeats
            # such as (a+)+$ backtracks exponentially on a long text, and re cannot be stopped.
            # Imported here, as below: most suites write no regex, and the import is 15 ms.
            import regex

            return regex.search(self.regex, text, timeout=REGEX_TIMEOUT_S) is not None
        return (text == "") == bool(self.empty)

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [key for key in _TEXT_CHECKS if getattr(self, key) is not None]
        if len(given) != 1:
            yield (), "use exactly one of: equals, contains, regex, empty"
        if self.regex is not None:
            import regex

            try:
                regex.compile(self.regex)
            except regex.error as exc:
                yield ("regex",), f"invalid regular expression: {exc}"


DEFAULT_MAX_RETRIES = 3
"""The retry messages a turn allows when its ``retries:`` sets no ``max`` (pydantic-ai retries a
turn's output once by default: three leaves room for that, and fails an agent that loops)."""


class RetryRule(TextMatch):
    """``retries:`` as a mapping: the messages a rule matches retry the turn (besides the
    frameworks' own), at most ``max`` of them; either part may be left out."""

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [given_schema(k) for k in (*_TEXT_CHECKS, "max")]}
    )

    max: Count | None = Field(
        default=None,
        description=f"The most retry messages the turn allows (default {DEFAULT_MAX_RETRIES}).",
    )

    @property
    def has_rule(self) -> bool:
        """Whether a text rule is given (else only the frameworks' messages retry the turn)."""
        return any(getattr(self, key) is not None for key in _TEXT_CHECKS)

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.has_rule or self.max is None:
            yield from super()._problems()


def _text_as_equals(value: Any) -> Any:
    return {"equals": value} if isinstance(value, str) else value


TextMatchSpec = Annotated[
    TextMatch,
    BeforeValidator(_text_as_equals),
    _AlsoAccepts({"type": "string", "description": "The exact text."}),
]


class MessageExpect(RuledModel):
    """An expected message: its role, and optionally its exact content or a substring."""

    role: RoleName = Field(description="The message's role.")
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
    _AlsoAccepts({"enum": list(get_args(RoleName)), "description": "Just the role."}),
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
    calls: tuple[CallField, ...] = Field(description="The expected calls.")


class ToolResultExpect(RuledModel):
    """An expected tool result: of which tool, its text (exact or a substring), whether an error."""

    tool: Identifier | None = Field(default=None, description="The tool whose call it answers.")
    content: Text | None = Field(default=None, description="The exact text of the result.")
    contains: Text | None = Field(default=None, description="A substring of the result.")
    is_error: Flag | None = Field(
        default=None, description="Whether the result reports an error (when the API says so)."
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.content is not None and self.contains is not None:
            yield ("contains",), "use either content or contains, not both"


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


class CostExpect(RuledModel):
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
    model_calls: Count | None = Field(
        default=None, description="The number of model calls (answered requests) in the turn."
    )
    tool_results: tuple[ToolResultExpect, ...] | None = Field(
        default=None,
        description="The tool results returned to the model during the turn, in order.",
    )
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


class MixtureBranch(RuledModel):
    """One script a ``mixture:`` turn may play, with its weight (its share of the sessions)."""

    weight: Weight = Field(
        description="How often this branch plays, relative to the others (> 0; the weights of "
        "a mixture are normalised to sum to 1)."
    )
    label: Text | None = Field(
        default=None,
        description="A name for the branch, shown in the result (TurnResult.branch) and the "
        "transcript; unique in its mixture.",
    )
    model: Annotated[tuple[ModelReply, ...], Field(min_length=1)] = Field(
        description="The model's scripted replies when this branch plays, in order."
    )

    def name(self, index: int) -> str:
        """The label, or ``branch N`` (``index`` 0-based, N 1-based) when it has none."""
        return self.label if self.label is not None else f"branch {index + 1}"

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        for path, message in _repeat_problems(self.model):
            yield ("model", *path), message


def _script_kind(value: Any) -> str:
    return "auto" if isinstance(value, str) else "replies"


ScriptField = Annotated[
    Annotated[tuple[ModelReply, ...], Tag("replies")] | Annotated[Literal["auto"], Tag("auto")],
    Discriminator(_script_kind),
]
"""A turn's ``model``: its replies, or ``auto`` (errors are those of the form written)."""


class ScenarioTurn(RuledModel):
    """One user message, the model's scripted replies to it (``model``, or one of several
    scripts drawn per session from a ``mixture``), and what to expect."""

    model_config = ConfigDict(json_schema_extra={"not": {"required": ["model", "mixture"]}})

    user: Text = Field(description="The user's message.")
    cancel: Cancel | None = Field(
        default=None,
        description="Cancel cooperatively: before (the turn does nothing) or {after_step: N}.",
    )
    model: ScriptField = Field(
        default=(),
        description="The model's scripted replies during this turn, in order; or auto (only "
        "through the scenario endpoint): a model that reads the tools each request offers, "
        "calls each one in turn with valid arguments made from its JSON Schema (seeded by the "
        "turn's seed, else the scenario's name), then answers with text, for every further "
        "request too.",
    )
    mixture: Annotated[tuple[MixtureBranch, ...], Field(min_length=1)] | None = Field(
        default=None,
        description="Instead of model: several scripts with weights. Each session (each API key "
        "of the scenario endpoint; agentrig's runtime draws with the empty key) plays one, drawn "
        "from a SHA-256 of the scenario name, the session key, the turn number and the seed, so "
        "a key always plays the same branch and over many keys each branch's share converges "
        "to its weight.",
    )
    seed: Seed | None = Field(
        default=None,
        description="The seed of this turn's mixture draw (instead of the scenario's seed), or "
        "of the arguments model: auto makes.",
    )
    retries: Flag | Count | RetryRule | None = Field(
        default=None,
        description="Scenario endpoint: which user-role messages of the agent retry this turn "
        "instead of starting the next one, and how many may. Left out: the retry and feedback "
        "messages of the common frameworks (pydantic-ai's validation feedback, its <system> "
        "blocks, 'Please return text or call a tool.'); a number N: those, at most N; a rule "
        "({contains: ...}, {regex: ...}, with max: N or not): those, and the messages it "
        "matches; true: every user message but the next turn's user text; false: none, every "
        "user message starts a turn. Each retry is a model call the turn's script answers; "
        f"past the most allowed ({DEFAULT_MAX_RETRIES} unless a number or max: says), the "
        "request is answered HTTP 400 and the scenario fails naming this line.",
    )

    @property
    def max_retries(self) -> int | None:
        """The most retry messages this turn allows (None: ``retries: false``, none retry)."""
        rule = self.retries
        if rule is False:
            return None
        if type(rule) is int:
            return rule
        if isinstance(rule, RetryRule) and rule.max is not None:
            return rule.max
        return DEFAULT_MAX_RETRIES

    expect: Expectation = Field(
        default_factory=Expectation, description="What must hold after the turn."
    )

    def branch_shares(self) -> tuple[float, ...]:
        """The share of sessions each ``mixture`` branch is played in: its weight over their
        sum (empty without a mixture)."""
        weights = [branch.weight for branch in self.mixture or ()]
        total = math.fsum(weights)
        return tuple(weight / total for weight in weights)

    def branch_at(self, draw: float) -> int | None:
        """The index of the ``mixture`` branch a draw in [0, 1) picks; None without a mixture."""
        if self.mixture is None:
            return None
        return pick_branch([branch.weight for branch in self.mixture], draw)

    @property
    def is_auto(self) -> bool:
        """Whether the model is ``auto`` (it calls each offered tool, then answers)."""
        return self.model == AUTO_MODEL

    @property
    def replies(self) -> tuple[ModelReply, ...]:
        """The scripted replies of ``model`` (none for ``model: auto``)."""
        return () if isinstance(self.model, str) else self.model

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.cancel == "before" and self.model:
            yield ("model",), "cancel: before means the model is never called: remove the replies"
        for path, message in _repeat_problems(self.replies):
            yield ("model", *path), message
        if self.mixture is None:
            if self.seed is not None and not self.is_auto:
                yield ("seed",), "seed only applies to a turn with a mixture or model: auto"
            return
        if "model" in self.model_fields_set:
            yield ("mixture",), "use either model or mixture, not both"
        if self.cancel == "before":
            yield ("mixture",), "cancel: before means the model is never called: remove the mixture"
        if not math.isfinite(sum(branch.weight for branch in self.mixture)):
            yield ("mixture",), "the weights add up to more than a number holds: scale them down"
        seen: dict[str, int] = {}
        for index, branch in enumerate(self.mixture):
            if branch.label is None:
                continue
            if branch.label in seen:
                problem = f"label {branch.label!r} is already branch {seen[branch.label] + 1}'s"
                yield ("mixture", index, "label"), problem
            seen.setdefault(branch.label, index)


class InvariantSelection(RuledModel):
    """Which invariants run: all by default; ``only`` or ``exclude`` narrows them."""

    only: tuple[InvariantName, ...] | None = Field(
        default=None, description="Run only these invariants."
    )
    exclude: tuple[InvariantName, ...] | None = Field(
        default=None, description="Run all invariants but these."
    )
    plugins: tuple[ModuleName, ...] = Field(
        default=(),
        description="Modules to import before the scenario runs (dotted names, found on the "
        "Python path or in the current folder), which register the invariants it needs, as "
        "agentrig run --plugin does: the file then fails under a plain agentrig run too.",
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.only is not None and self.exclude is not None:
            yield ("exclude",), "use either only or exclude, not both"


def _live_model_half_built() -> bool:
    """Whether the live keys' module is being imported (it imported this one first)."""
    import sys

    live = sys.modules.get("agentrig.harness.scenarios.live_model")
    return live is not None and not hasattr(live, "UserSpec")


# The live keys are defined in their own module, which builds on the models above. When that
# module is imported first, it is half-built here: Scenario is then made without them, and the
# live module completes it as it ends (``live_model._complete_the_scenario_model``).
try:
    from agentrig.harness.scenarios.live_model import (
        JudgeSpec,
        TrialsSpec,
        UserSpec,
    )
except ImportError:
    if not _live_model_half_built():
        raise

_LIVE_KEYS = ("user", "judge", "trials")
_LIVE_AGENT: JsonDict = {
    "anyOf": [given_schema("builder"), given_schema("adapter")],
    "not": {"required": ["tools"], "properties": {"tools": {"minProperties": 1}}},
}
"""JSON Schema: a live scenario's agent has a builder or an adapter, and no scripted tools."""
_NO_TURNS = object()
"""Stands for the missing turns of a scenario that is not live, until the field rejects it."""


class Scenario(RuledModel):
    """A scenario: an agent, the user's turns, the model's scripted replies, expectations.

    A *live* scenario gives ``user``, ``judge`` and ``trials`` instead of ``turns``: a
    simulated user talks to the agent on a real model, and a verdict is drawn from repeated
    trials (see :mod:`agentrig.harness.live`).

    When loaded from a file, ``source`` points at the ``name:`` key and :meth:`locate` finds
    any field by its path in the file.
    """

    model_config = ConfigDict(
        title="Scenario",
        json_schema_extra={
            "oneOf": [
                {"required": ["turns"], "not": {"anyOf": [given_schema(k) for k in _LIVE_KEYS]}},
                {
                    "required": list(_LIVE_KEYS),
                    "allOf": [*(given_schema(k) for k in _LIVE_KEYS), {"required": ["agent"]}],
                    "properties": {"agent": _LIVE_AGENT},
                    "not": {"required": ["turns"]},
                },
            ]
        },
    )

    name: ScenarioName = Field(
        description="Unique in a suite: lowercase letters, digits, '.', '_' and '-'."
    )
    description: Text = Field(default="", description="What the scenario shows.")
    tags: tuple[Text, ...] = Field(default=(), description="Labels for selecting scenarios.")
    agent: AgentSpec = Field(default_factory=AgentSpec, description="The agent under test.")
    turns: tuple[ScenarioTurn, ...] = Field(
        default=(),
        description="The user turns, run in order against one agent state (a deterministic "
        "scenario; a live one has user, judge and trials instead).",
        json_schema_extra={"minItems": 1},
    )
    invariants: InvariantSelection = Field(
        default_factory=InvariantSelection, description="Which invariants to check."
    )
    seed: Seed | None = Field(
        default=None,
        description="The seed of the mixture draws of every turn that gives no seed of its own.",
    )
    user: UserSpec | None = Field(
        default=None, description="Live: the simulated user that talks to the agent."
    )
    judge: JudgeSpec | None = Field(default=None, description="Live: how each trial is judged.")
    trials: TrialsSpec | None = Field(
        default=None, description="Live: how many trials run and the requirement they decide."
    )

    __slots__ = ("_yaml",)  # the file it was loaded from (see ScenarioModel._where)

    @model_validator(mode="before")
    @classmethod
    def _mark_missing_turns(cls, data: Any) -> Any:
        # Reported as an error of the turns field, so that it comes with every other field's
        # errors (a rule of the whole model is checked only once every field is valid).
        live = isinstance(data, dict) and any(key in data for key in _LIVE_KEYS)
        if isinstance(data, dict) and not live and data.get("turns", ()) in ([], ()):
            return {**data, "turns": _NO_TURNS}
        return data

    @field_validator("turns", mode="before")
    @classmethod
    def _turns_given(cls, value: Any) -> Any:
        if value is _NO_TURNS:
            raise PydanticCustomError(
                "scenario_rule",
                "a scenario needs turns (or, for a live scenario, user, judge and trials)",
            )
        return value

    @property
    def is_live(self) -> bool:
        """Whether this is a live scenario (``user``, ``judge``, ``trials``), run by
        ``agentrig run --live`` instead of the scripted model."""
        return self.user is not None or self.judge is not None or self.trials is not None

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.seed is not None and all(turn.mixture is None for turn in self.turns):
            yield ("seed",), "seed only applies to a scenario with a mixture turn"
        if not self.is_live:
            if not self.turns:  # built in code: a file's missing turns fail the field itself
                yield (
                    ("turns",),
                    "a scenario needs turns (or, for a live scenario, user, judge and trials)",
                )
            return
        if "turns" in self.model_fields_set:
            yield ("turns",), "a live scenario (user, judge, trials) has no scripted turns"
        for key in _LIVE_KEYS:
            if getattr(self, key) is None:
                yield (
                    (key,),
                    f"a live scenario needs {key} (it has "
                    + ", ".join(k for k in _LIVE_KEYS if getattr(self, k) is not None)
                    + ")",
                )
        if self.agent.builder is None and self.agent.adapter is None:
            yield (
                ("agent",),
                "a live scenario needs the agent under test: agent.builder "
                "('package.module:function' returning an AgentBuilder) or agent.adapter "
                "('package.module:function' taking the conversation, returning the reply)",
            )
        if self.agent.tools:
            yield (
                ("agent", "tools"),
                "a live agent runs its own tools: scripted tools have no place in a live scenario",
            )

    def branch_for(self, turn: int, session_key: str) -> int | None:
        """The index of the ``mixture`` branch that turn ``turn`` (1-based) plays in the session
        of ``session_key`` (see :mod:`~agentrig.harness.scenarios.mixture`); None for a turn
        without a mixture."""
        spec = self.turns[turn - 1]
        if spec.mixture is None:
            return None
        seed = spec.seed if spec.seed is not None else self.seed
        return spec.branch_at(mixture_draw(self.name, session_key, turn, seed))

    def replies_for(self, turn: int, session_key: str) -> tuple[ModelReply, ...]:
        """The scripted replies of turn ``turn`` (1-based) in the session of ``session_key``:
        its ``model``, or the replies of the ``mixture`` branch the session plays."""
        spec = self.turns[turn - 1]
        if spec.mixture is None:
            return spec.replies
        branch = self.branch_for(turn, session_key)
        assert branch is not None
        return spec.mixture[branch].model

    def script_path(self, turn: int, session_key: str) -> FieldPath:
        """Where the replies ``replies_for`` gives were written: ``turns[i].model``, or
        ``turns[i].mixture[b].model``."""
        branch = self.branch_for(turn, session_key)
        if branch is None:
            return ("turns", turn - 1, "model")
        return ("turns", turn - 1, "mixture", branch, "model")

    def locate(self, path: FieldPath) -> SourceLocation | None:
        """Where the field at ``path`` (YAML keys and indices) was written, if known."""
        yaml: YamlSource | None = getattr(self, "_yaml", None)
        if yaml is None:
            return None
        where = yaml.location(path)
        return None if where is None else SourceLocation(yaml.path, *where)

    def nearest_location(self, path: FieldPath) -> str | None:
        """``file:line`` where ``path`` was written, else where its nearest written parent was,
        else the scenario's own location (None for a scenario built in code)."""
        for end in range(len(path), 0, -1):
            location = self.locate(path[:end])
            if location is not None:
                return str(location)
        return str(self.source) if self.source is not None else None

    def _bind_yaml(self, source: YamlSource) -> None:
        object.__setattr__(self, "_yaml", source)

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["_yaml"] = getattr(self, "_yaml", None)
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        yaml = state.pop("_yaml", None)
        super().__setstate__(state)
        object.__setattr__(self, "_yaml", yaml)

    def __copy__(self) -> Self:
        copied = super().__copy__()
        object.__setattr__(copied, "_yaml", getattr(self, "_yaml", None))
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        object.__setattr__(copied, "_yaml", getattr(self, "_yaml", None))
        return copied
