"""Fuzz any agent: hypothesis plays the model to an agent built on any framework, through the
scenario endpoint, and shrinks what breaks it to a scenario file that replays it.

Strategies are built from the tools the agent offers in its first request; one example is one
endpoint session; the properties are the endpoint's wire invariants, a few ready-made ones and
the user's own assertions (see docs/fuzz-any-agent.md)."""

from agentrig.errors import MissingDependencyError

try:
    import hypothesis  # noqa: F401
except ImportError:
    raise MissingDependencyError("hypothesis", "fuzz") from None

from agentrig.harness.fuzz.behaviours import (
    ALL_ARGUMENTS,
    ALL_FAULTS,
    ALL_REPLIES,
    DEFAULT_ARGUMENTS,
    DEFAULT_FAULTS,
    LIVE_DEFAULT_FAULTS,
    ArgumentKind,
    Behaviours,
    FaultKind,
    ReplyKind,
    default_faults,
)
from agentrig.harness.fuzz.engine import DEFAULT_FOLDER, Fuzzer, FuzzReport, fuzz, replay
from agentrig.harness.fuzz.failure import FuzzFailure
from agentrig.harness.fuzz.offer import Offer
from agentrig.harness.fuzz.properties import (
    AnswersEveryToolCall,
    NeverRepeats,
    Property,
    RaisesOnly,
    SideEffects,
    TerminatesWithin,
    UserCheck,
    WireInvariants,
    answers_every_tool_call,
    never_repeats,
    raises_only,
    terminates_within,
)
from agentrig.harness.fuzz.run import AgentRun
from agentrig.harness.fuzz.strategies import model_replies, model_scripts, texts, tool_calls
from agentrig.harness.fuzz.target import AgentFunction, CommandFailed

__all__ = [
    "ALL_ARGUMENTS",
    "ALL_FAULTS",
    "ALL_REPLIES",
    "DEFAULT_ARGUMENTS",
    "DEFAULT_FAULTS",
    "DEFAULT_FOLDER",
    "LIVE_DEFAULT_FAULTS",
    "AgentFunction",
    "AgentRun",
    "AnswersEveryToolCall",
    "ArgumentKind",
    "Behaviours",
    "CommandFailed",
    "FaultKind",
    "FuzzFailure",
    "FuzzReport",
    "Fuzzer",
    "NeverRepeats",
    "Offer",
    "Property",
    "RaisesOnly",
    "ReplyKind",
    "SideEffects",
    "TerminatesWithin",
    "UserCheck",
    "WireInvariants",
    "answers_every_tool_call",
    "default_faults",
    "fuzz",
    "model_replies",
    "model_scripts",
    "never_repeats",
    "raises_only",
    "replay",
    "terminates_within",
    "texts",
    "tool_calls",
]
