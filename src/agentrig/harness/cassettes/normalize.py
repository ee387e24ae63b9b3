"""Between the runtime's inference types and the cassette's normalized records."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

from agentrig.errors import ProviderError
from agentrig.harness.cassettes.errors import ReplayedProviderError
from agentrig.harness.cassettes.model import (
    CassetteModel,
    RecordedError,
    RecordedLlmConfig,
    RecordedMessage,
    RecordedRequest,
    RecordedResponse,
    RecordedTool,
    RecordedToolCall,
    RecordedUsage,
)
from agentrig.messages import Message, ToolCall
from agentrig.state import FinishReason, InferenceRequest, InferenceResponse, Usage

RecordT = TypeVar("RecordT", bound=CassetteModel)

__all__ = [
    "normalize_request",
    "record_error",
    "record_response",
    "record_usage",
    "to_response",
]


def normalize_request(request: InferenceRequest) -> RecordedRequest:
    """What the provider sees of ``request``: no message ids, times or metadata."""
    config = request.llm_config
    return RecordedRequest(
        messages=tuple(_message(message) for message in request.messages),
        tools=tuple(_kept(RecordedTool, tool) for tool in request.tools),
        tool_choice=request.tool_choice,
        response_format=dict(request.response_format) if request.response_format else None,
        llm_config=None if config is None else _kept(RecordedLlmConfig, config),
        options=dict(request.options),
    )


def _message(message: Message) -> RecordedMessage:
    result = message.tool_result
    return RecordedMessage(
        role=message.role.value,
        content=message.content,
        name=message.name,
        tool_calls=tuple(_call(call) for call in message.tool_calls),
        tool_call_id=result.call_id if result is not None else None,
        tool_name=result.tool_name if result is not None else None,
        is_error=result.is_error if result is not None else False,
    )


def _call(call: ToolCall, made_up: Collection[str] = ()) -> RecordedToolCall:
    if call.id in made_up:
        return _kept(RecordedToolCall, call, id="")
    return _kept(RecordedToolCall, call)


def record_response(
    response: InferenceResponse, *, made_up: Collection[str] = ()
) -> RecordedResponse:
    """The recorded form of ``response``; :func:`to_response` gives back an equal response.

    A tool call whose id is in ``made_up`` (the driver made it up: the API sent none) is
    recorded with the id ``""``, as the API sent it; :func:`to_response` makes one up again."""
    return RecordedResponse(
        content=response.content,
        tool_calls=tuple(_call(call, made_up) for call in response.tool_calls),
        usage=record_usage(response.usage),
        finish_reason=response.finish_reason.value if response.finish_reason else None,
        reasoning_content=response.reasoning_content,
        model=response.model,
        response_id=response.response_id,
        provider_data=dict(response.provider_data),
    )


def to_response(recorded: RecordedResponse) -> InferenceResponse:
    """The ``InferenceResponse`` a recorded response stands for. A tool call recorded without
    an id gets one from the run's id source, made up where the driver made it up live."""
    return InferenceResponse(
        content=recorded.content,
        tool_calls=tuple(
            ToolCall(id=call.id, name=call.name, arguments=dict(call.arguments))
            if call.id
            else ToolCall(name=call.name, arguments=dict(call.arguments))
            for call in recorded.tool_calls
        ),
        usage=Usage(**dict(recorded.usage)),
        finish_reason=FinishReason(recorded.finish_reason) if recorded.finish_reason else None,
        reasoning_content=recorded.reasoning_content,
        model=recorded.model,
        response_id=recorded.response_id,
        provider_data=dict(recorded.provider_data),
    )


def record_usage(usage: Usage) -> RecordedUsage:
    """The recorded form of ``usage``: token counts and cost."""
    return _kept(RecordedUsage, usage)


def record_error(error: ProviderError) -> RecordedError:
    """A provider failure as recorded: class name, message, retryability, HTTP status if any."""
    kind = getattr(error, "error_type", None)  # a replayed error keeps its original type
    name = kind if isinstance(kind, str) else type(error).__name__
    return _kept(RecordedError, error, type=name, message=str(error))


def replay_error(recorded: RecordedError) -> ReplayedProviderError:
    """The recorded failure as the error a replay raises, of a class named after the original."""
    fields = dict(recorded)
    return ReplayedProviderError(fields.pop("message"), error_type=fields.pop("type"), **fields)


def _kept(record: type[RecordT], source: object, **given: Any) -> RecordT:
    """A ``record`` of ``source``: each field not ``given`` is ``source``'s attribute of that
    name (a record keeps what it names of the runtime object, copied)."""
    kept = {name: getattr(source, name) for name in record.model_fields if name not in given}
    return record(**kept, **given)
