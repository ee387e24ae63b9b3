"""Capabilities: packaged features that install hooks, tools, compilers and drivers."""

from agentrig.capabilities.cancellation import (
    CancellationSource,
    CancellationToken,
    UseCooperativeCancellation,
)
from agentrig.capabilities.context_config import UseContextConfig
from agentrig.capabilities.guards import UseGuards
from agentrig.capabilities.llm_config import UseLlmConfig
from agentrig.capabilities.subagents import (
    SpawnSubagentTool,
    SubagentDefinition,
    SubagentPolicy,
    SubagentProvider,
    Subagents,
    UseSubagents,
)
from agentrig.capabilities.token_budget import UseTokenBudgetContext

__all__ = [
    "CancellationSource",
    "CancellationToken",
    "SpawnSubagentTool",
    "SubagentDefinition",
    "SubagentPolicy",
    "SubagentProvider",
    "Subagents",
    "UseContextConfig",
    "UseCooperativeCancellation",
    "UseGuards",
    "UseLlmConfig",
    "UseSubagents",
    "UseTokenBudgetContext",
]
