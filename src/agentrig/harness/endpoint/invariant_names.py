"""The names of the scenario endpoint's invariants, apart from their checks (which need the
``endpoint`` extra): a scenario file may name them in ``invariants:`` whichever player runs it,
and ``agentrig validate`` and agentrig's runtime must know them without importing the checks."""

from __future__ import annotations

WIRE_INVARIANT_NAMES = (
    "tool_results_answer_calls",
    "history_grows",
    "tools_offered",
    "answer_allowed",
    "reasoning_sent_back",
    "tools_as_declared",
    "model_named",
    "system_prompt_sent",
    "user_turn_sent",
)
"""The per-request checks (``invariants.WIRE_INVARIANTS``), in the order they run."""

SCRIPT_NOT_EXCEEDED = "script_not_exceeded"
"""No request after its turn's script is used up: checked by the session itself."""

TOOL_RESULTS_AS_SCRIPTED = "tool_results_as_scripted"
"""The tool results the agent sends are what ``agent.tools`` script: checked by the session
when its result is asked for."""

ENDPOINT_INVARIANT_NAMES = (*WIRE_INVARIANT_NAMES, SCRIPT_NOT_EXCEEDED, TOOL_RESULTS_AS_SCRIPTED)
"""Every invariant the endpoint checks."""
