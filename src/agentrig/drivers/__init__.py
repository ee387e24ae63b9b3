"""Drivers and the inference provider seam (D9).

The real providers are imported on first use (``from agentrig.drivers import OpenAIProvider``),
so ``import agentrig.drivers`` loads no SDK.
"""

from typing import TYPE_CHECKING, Any

from agentrig.drivers.base import Driver, StepRuntime
from agentrig.drivers.network import RealCallPolicy, use_real_call_policy
from agentrig.drivers.pricing import ModelPrice, PriceTable
from agentrig.drivers.provider import (
    AsyncInferenceProvider,
    Delta,
    InferenceProvider,
    StreamingProvider,
)
from agentrig.drivers.tool_calling import ToolCallingDriver

if TYPE_CHECKING:
    from agentrig.drivers.anthropic import AnthropicProvider
    from agentrig.drivers.openai import OpenAIProvider
    from agentrig.drivers.openai_responses import OpenAIResponsesProvider

__all__ = [
    "AnthropicProvider",
    "AsyncInferenceProvider",
    "Delta",
    "Driver",
    "InferenceProvider",
    "ModelPrice",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "PriceTable",
    "RealCallPolicy",
    "StepRuntime",
    "StreamingProvider",
    "ToolCallingDriver",
    "use_real_call_policy",
]

_LAZY = {
    "OpenAIProvider": "agentrig.drivers.openai",
    "OpenAIResponsesProvider": "agentrig.drivers.openai_responses",
    "AnthropicProvider": "agentrig.drivers.anthropic",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentrig.drivers' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
