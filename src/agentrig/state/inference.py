"""What the model answered, and per-agent LLM configuration."""

from __future__ import annotations

from pydantic import Field

from agentrig._model import JsonObject, Serializable
from agentrig.messages import Messages, ToolCall
from agentrig.state.status import FinishReason
from agentrig.state.usage import ZERO_USAGE, Usage


class InferenceResponse(Serializable):
    """One model answer: text, requested tool calls, usage and finish reason."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = ZERO_USAGE
    finish_reason: FinishReason | None = None
    reasoning_content: str = ""
    model: str = ""
    response_id: str = ""
    provider_data: JsonObject = Field(default_factory=dict)

    def has_tool_calls(self) -> bool:
        """True when the model requested at least one tool call."""
        return bool(self.tool_calls)


class LlmConfig(Serializable):
    """Per-agent model settings; a state's config overrides the driver's default.

    ``tool_choice`` is sent with every request that offers tools: ``auto`` (the model decides,
    the APIs' default, so nothing is sent), ``none`` (no tool call), ``required`` (at least one
    call) or a tool's name (a call of that tool). Each real provider spells it its own way.
    """

    model: str = ""
    provider: str = ""
    temperature: float | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=1)
    tool_choice: str = Field(default="auto", min_length=1)
    options: JsonObject = Field(default_factory=dict)


class ToolSchema(Serializable):
    """A tool as the model sees it: name, description and JSON Schema of its parameters.

    ``strict`` asks the API to hold the model's arguments to the schema exactly (OpenAI's strict
    function calling, which needs every property required and ``additionalProperties: false``).
    Anthropic's Messages API has no such flag: there it is not sent.
    """

    name: str
    description: str = ""
    parameters: JsonObject = Field(default_factory=dict)
    strict: bool = False


class InferenceRequest(Serializable):
    """One request to an inference provider: the compiled messages (system prompt first), tools,
    response format and LLM config."""

    messages: Messages = Field(default_factory=Messages)
    tools: tuple[ToolSchema, ...] = ()
    tool_choice: str = Field(default="auto", min_length=1)
    response_format: JsonObject | None = None
    llm_config: LlmConfig | None = None
    options: JsonObject = Field(default_factory=dict)
