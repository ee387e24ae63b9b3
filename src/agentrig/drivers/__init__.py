"""Drivers and the inference provider seam (D9)."""

from agentrig.drivers.base import Driver, StepRuntime
from agentrig.drivers.provider import InferenceProvider
from agentrig.drivers.tool_calling import ToolCallingDriver

__all__ = ["Driver", "InferenceProvider", "StepRuntime", "ToolCallingDriver"]
