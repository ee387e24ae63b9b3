"""The cassette format: versioned, provider-neutral records of inference requests and answers.

A cassette holds what crossed the inference boundary, normalized so the same conversation is
equal across runs: roles, contents, tool calls and results, tool schemas, tool choice, response
format and LLM config. Message ids, times and metadata never reach a provider and are left out.
Each interaction holds the request and either the ``response`` or the ``error`` it got.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, Strict, model_validator

__all__ = [
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteMetadata",
    "Interaction",
    "RecordedError",
    "RecordedLlmConfig",
    "RecordedMessage",
    "RecordedRequest",
    "RecordedResponse",
    "RecordedTool",
    "RecordedToolCall",
    "RecordedUsage",
    "to_data",
]

CASSETTE_VERSION = 1
"""The cassette format version this agentrig reads and writes."""

Text = Annotated[str, Strict()]
Count = Annotated[int, Strict(), Field(ge=0)]
Flag = Annotated[bool, Strict()]
JsonObject = dict[str, JsonValue]
Role = Literal["system", "developer", "user", "assistant", "tool"]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]


class CassetteModel(BaseModel):
    """Base of the cassette models: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordedToolCall(CassetteModel):
    """A tool call the model requested."""

    id: Text
    name: Text
    arguments: JsonObject = Field(default_factory=dict)


class RecordedMessage(CassetteModel):
    """A message as the provider sees it; tool messages carry the call they answer."""

    role: Role
    content: Text = ""
    name: Text = ""
    tool_calls: tuple[RecordedToolCall, ...] = ()
    tool_call_id: Text | None = None
    tool_name: Text | None = None
    is_error: Flag = False


class RecordedTool(CassetteModel):
    """A tool schema offered to the model (``strict`` is written only when set)."""

    name: Text
    description: Text = ""
    parameters: JsonObject = Field(default_factory=dict)
    strict: Flag = False


class RecordedLlmConfig(CassetteModel):
    """Model settings sent with the request."""

    model: Text = ""
    provider: Text = ""
    temperature: float | None = None
    max_output_tokens: int | None = None
    options: JsonObject = Field(default_factory=dict)


class RecordedRequest(CassetteModel):
    """One normalized inference request."""

    messages: tuple[RecordedMessage, ...] = ()
    tools: tuple[RecordedTool, ...] = ()
    tool_choice: Text = "auto"
    response_format: JsonObject | None = None
    llm_config: RecordedLlmConfig | None = None
    options: JsonObject = Field(default_factory=dict)


class RecordedUsage(CassetteModel):
    """Tokens and cost of one answer."""

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    reasoning_tokens: Count = 0
    cost: Annotated[float, Field(ge=0)] = 0.0


class RecordedResponse(CassetteModel):
    """What the model answered."""

    content: Text = ""
    tool_calls: tuple[RecordedToolCall, ...] = ()
    usage: RecordedUsage = Field(default_factory=RecordedUsage)
    finish_reason: FinishReason | None = None
    reasoning_content: Text = ""
    model: Text = ""
    response_id: Text = ""
    provider_data: JsonObject = Field(default_factory=dict)


class RecordedError(CassetteModel):
    """A provider failure: the error's class name, message, retryability, HTTP status, provider
    name and, for a tool call the API refused, the model's failed generation."""

    type: Text = "ProviderError"
    message: Text
    retryable: Flag = False
    status_code: Annotated[int, Strict()] | None = None
    provider: Text = ""
    failed_generation: Text | None = None


class Interaction(CassetteModel):
    """One request and its outcome: exactly one of ``response`` or ``error``."""

    request: RecordedRequest
    response: RecordedResponse | None = None
    error: RecordedError | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Interaction:
        if (self.response is None) == (self.error is None):
            raise ValueError("an interaction has exactly one of: response, error")
        return self


class CassetteMetadata(CassetteModel):
    """Where a cassette came from. No timestamps: re-recording the same run changes nothing."""

    agentrig: Text = ""
    provider: Text = ""
    model: Text = ""
    recorded_with: Text = ""


class Cassette(CassetteModel):
    """A versioned list of interactions, in the order they were recorded (numbered from 1)."""

    version: Literal[1] = 1
    metadata: CassetteMetadata = Field(default_factory=CassetteMetadata)
    interactions: tuple[Interaction, ...] = ()

    def appended(self, *interactions: Interaction) -> Cassette:
        """A cassette with ``interactions`` added at the end."""
        return self.model_copy(update={"interactions": (*self.interactions, *interactions)})


def to_data(model: BaseModel) -> dict[str, Any]:
    """Plain data in field order, leaving out optional fields that hold their default."""
    data: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if not field.is_required() and value == field.get_default(call_default_factory=True):
            continue
        data[name] = _plain(value)
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return to_data(value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
