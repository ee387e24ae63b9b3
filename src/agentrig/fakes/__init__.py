"""Test doubles: scripted and function LLMs, scripted tools, a fake clock and seeded ids."""

from agentrig.fakes.clock import FakeClock, SeededIds
from agentrig.fakes.errors import (
    InvalidScriptError,
    ScriptError,
    ScriptExhaustedError,
    UnexpectedToolCallError,
    UnusedTurnsError,
)
from agentrig.fakes.llm import (
    REASONING_SEAL_KEY,
    CallSpec,
    Chunking,
    FunctionLLM,
    LlmCall,
    ScriptedLLM,
    Turn,
    call,
    calls,
    fail,
    reply,
)
from agentrig.fakes.tool import ReplyMode, ScriptedTool, ScriptedToolError, ToolReply

__all__ = [
    "REASONING_SEAL_KEY",
    "CallSpec",
    "Chunking",
    "FakeClock",
    "FunctionLLM",
    "InvalidScriptError",
    "LlmCall",
    "ReplyMode",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedLLM",
    "ScriptedTool",
    "ScriptedToolError",
    "SeededIds",
    "ToolReply",
    "Turn",
    "UnexpectedToolCallError",
    "UnusedTurnsError",
    "call",
    "calls",
    "fail",
    "reply",
]
