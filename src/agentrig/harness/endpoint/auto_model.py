"""``model: auto``: a turn's model that needs no script. It reads the tools each request offers,
calls them one by one with valid arguments made from their JSON Schemas (seeded, so a scenario
plays the same calls every time), then answers with text: a smoke test of any agent, the
fuzzer's generator with one fixed seed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from agentrig.harness.endpoint.schema_values import RandomChooser, closed_schema, value_of
from agentrig.harness.scenarios.model import ModelReply, ToolCallSpec
from agentrig.state import ToolSchema

__all__ = ["auto_reply", "valid_arguments"]

_TRIES = 20
"""Seeds tried for arguments the schema accepts (a pattern or a keyword the generator does not
know can make a value it refuses) before the last value is sent as it is."""


def valid_arguments(schema: dict[str, Any], seed: str) -> dict[str, Any]:
    """Arguments the tool's parameter ``schema`` accepts, the same for the same ``seed``."""
    closed = closed_schema(schema)
    try:
        validator: Draft202012Validator | None = Draft202012Validator(closed)
        Draft202012Validator.check_schema(closed)
    except SchemaError:
        validator = None
    value: Any = {}
    for attempt in range(_TRIES):
        value = value_of(closed, RandomChooser(f"{seed}#{attempt}"))
        if isinstance(value, dict) and (validator is None or validator.is_valid(value)):
            return value
    return value if isinstance(value, dict) else {}


def auto_reply(tools: Sequence[ToolSchema], index: int, seed: str) -> ModelReply:
    """The answer to request ``index`` (0-based) of the turn: a call of offered tool ``index``
    while there is one, then a text answer naming the tools called."""
    if index < len(tools):
        tool = tools[index]
        arguments = valid_arguments(tool.parameters, f"{seed}/{tool.name}")
        return ModelReply(call=ToolCallSpec(name=tool.name, args=arguments))
    if not tools:
        return ModelReply(say="Hello from model: auto (no tools were offered).")
    return ModelReply(say=f"Done: called {', '.join(tool.name for tool in tools)}.")
